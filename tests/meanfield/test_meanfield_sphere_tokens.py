"""Tokens and densities on S^2 (issue 42 item 1): caps and mixtures of caps against their
closed form, the kernel density estimate of tokens, tokens drawn from a density by
rejection under a certified bound, and the sessions that use them
(``particles meanfield --d 3 --init particles:file=RUN``, ``simulate --d 3 --init
density:FILE``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from clitools import invoke, ok
from ducc0.sht import experimental as sht

from particles.config import SimulationConfig
from particles.errors import RunInterrupted
from particles.io import load, load_density
from particles.meanfield.sliced import sliced_w1_density
from particles.meanfield.sphere import SphereSpace
from particles.meanfield.sphere_config import SphereFieldConfig
from particles.meanfield.sphere_solver import solve_sphere_frames
from particles.meanfield.sphere_tokens import (
    cap_coefficients,
    default_bandwidth,
    density_bound,
    density_power,
    grid_coefficients,
    kde_coefficients,
    sample_sphere_density,
    uniform_directions,
)
from particles.meanfield.zonal import bessel_ratios
from particles.runs import run_meanfield_to_file, run_to_file
from particles.runs.initial import initial_tokens
from particles.seeds import init_rng
from particles.sphere import von_mises_fisher

L = 24
SPACE = SphereSpace(SphereFieldConfig(d=3, lmax=L, init="uniform"))


def grid_points(space: SphereSpace) -> np.ndarray:
    th, ph = np.meshgrid(space.theta, space.phi, indexing="ij")
    return np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], axis=-1)


def cap(x: np.ndarray, c: np.ndarray, kappa: float) -> np.ndarray:
    """The closed form exp(kappa <x, c>) / i_0(kappa) (unit mass for sigma)."""
    return np.exp(kappa * (x @ c)) * kappa / math.sinh(kappa)


def test_caps_are_their_closed_form():
    """One cap and a weighted mixture, synthesised from cap_coefficients, against
    the closed form on the grid (degree 24 keeps kappa = 4's tail below 1e-14)."""
    rng = np.random.default_rng(3)
    c = uniform_directions(3, rng)
    x = grid_points(SPACE)
    f = SPACE.synthesise(cap_coefficients(c[:1], 4.0, L))
    np.testing.assert_allclose(f, cap(x, c[0], 4.0), atol=1e-12)
    w = np.array([0.5, 0.3, 0.2])
    f = SPACE.synthesise(cap_coefficients(c, 4.0, L, weights=2 * w))
    np.testing.assert_allclose(f, sum(wk * cap(x, ck, 4.0) for wk, ck in zip(w, c, strict=True)),
                               atol=1e-12)
    assert SPACE.mass(f) == pytest.approx(1.0, abs=1e-13)
    # the KDE is the mixture of caps of kappa = 1 / h^2 about the tokens
    np.testing.assert_array_equal(kde_coefficients(c, L, 0.5),
                                  cap_coefficients(c, 4.0, L))
    assert default_bandwidth(L) == pytest.approx(2 * math.pi / L)
    with pytest.raises(ValueError, match="bandwidth"):
        kde_coefficients(c, L, 0.01)


def test_kde_of_cap_tokens_has_the_smoothed_caps_coefficients():
    """E[KDE] of i.i.d. tokens of a cap (kappa) with kernel kappa_h is the cap
    smoothed: its degree-l part is the cap's times (i_l / i_0)(kappa_h)."""
    n, kappa, h = 40_000, 3.0, 0.3
    mu = np.array([0.0, 0.6, 0.8])
    x = von_mises_fisher(n, 3, mu=mu, kappa=kappa, rng=np.random.default_rng(5))
    got = kde_coefficients(x, L, h)
    expected = cap_coefficients(mu[None], kappa, L) * bessel_ratios(
        0.5, 1 / h**2, L)[np.concatenate([np.arange(m, L + 1) for m in range(L + 1)])]
    # sampling error of a_lm: 4 pi ratio_l sqrt(E |Y_lm|^2 / n) <= sqrt(4 pi / n)
    assert np.abs(got - expected).max() < 4 * math.sqrt(4 * math.pi / n)
    assert np.abs(got - expected).max() > 1e-4  # tokens, not the density


def test_grid_coefficients_on_any_ring_length():
    a = cap_coefficients(uniform_directions(2, np.random.default_rng(1)), 2.0, L)
    for nphi in (2 * L + 1, 3 * L + 2, SPACE.nphi):  # 3 lmax + 2: the grid before 5-smooth
        f = sht.synthesis_2d(alm=a[None], spin=0, lmax=L, geometry="GL", ntheta=L + 1,
                             nphi=nphi, nthreads=1)[0]
        np.testing.assert_allclose(grid_coefficients(f, L), a, atol=1e-13)
    with pytest.raises(ValueError, match="grid"):
        grid_coefficients(f[:L], L)


def test_the_bound_is_above_the_maximum_and_near_it():
    """Caps whose maximum is known (at a centre) and a perturbed density whose
    maximum a fine grid finds; the bound is within its 4/3 margin."""
    c = uniform_directions(1, np.random.default_rng(2))
    bound = density_bound(cap_coefficients(c, 6.0, L), L)
    top = 12.0 / (1 - math.exp(-12.0))  # kappa e^kappa / sinh(kappa)
    assert top <= bound <= 4 / 3 * top * (1 + 1e-9)
    rho = SPACE.initial(SphereFieldConfig(d=3, lmax=L, init="perturbed:eps=0.2", seed=4))
    a = grid_coefficients(rho, L)
    top = sht.synthesis_2d(alm=a[None], spin=0, lmax=L, geometry="GL", ntheta=8 * L,
                           nphi=16 * L, nthreads=1)[0].max()  # a finer grid than the bound's
    assert rho.max() < top <= density_bound(a, L) <= 4 / 3 * top * 1.001
    with pytest.raises(ValueError, match="not a probability density"):
        density_bound(grid_coefficients(rho - 1.0, L), L)


def test_drawn_tokens_follow_the_density():
    """Tokens of a two-cap mixture: their sliced W1 to it is that of exact vMF
    draws (n^{-1/2}), and their mean the mixture's; the same seed draws the same."""
    n, kappa = 20_000, 5.0
    c = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    rho = SPACE.synthesise(cap_coefficients(c, kappa, L))
    x = sample_sphere_density(rho, L, n, np.random.default_rng(7))
    assert x.shape == (n, 3)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-14)
    grid = SPACE.theta, SPACE.phi, SPACE.cell[:, 0], L
    rng = np.random.default_rng(8)
    exact = np.concatenate([von_mises_fisher(n // 2, 3, mu=ck, kappa=kappa, rng=rng)
                            for ck in c])
    drawn, reference = sliced_w1_density(x, rho, *grid), sliced_w1_density(exact, rho, *grid)
    assert drawn < 1.5 * reference and reference < 0.01
    mean = c.mean(0) * (1 / math.tanh(kappa) - 1 / kappa)  # E x of a vMF cap: A(kappa) mu
    assert np.abs(x.mean(0) - mean).max() < 4 / math.sqrt(n)
    assert np.abs(x.mean(0) - np.array([0.5, 0, 0.5])).max() > 0.05  # the caps' A(kappa)
    again = sample_sphere_density(rho, L, n // 3, np.random.default_rng(7))
    np.testing.assert_array_equal(again, x[: n // 3])  # a prefix of the longer draw


def test_the_power_of_a_density_and_of_its_tokens():
    """Q_l of a cap is (i_l / i_0)^2; tokens drawn from a density have Q_l near the
    density's plus 1/n (particles.analysis.harmonics.normalized_power)."""
    from particles.analysis.harmonics import normalized_power

    c = np.array([[0.6, 0.0, 0.8]])
    rho = SPACE.synthesise(cap_coefficients(c, 3.0, L))
    np.testing.assert_allclose(density_power(rho, L), bessel_ratios(0.5, 3.0, L) ** 2,
                               atol=1e-14)
    rho = SPACE.synthesise(cap_coefficients(uniform_directions(4, np.random.default_rng(4)),
                                            5.0, L))
    n = 20_000
    x = sample_sphere_density(rho, L, n, np.random.default_rng(6))
    q, tokens = density_power(rho, 8), normalized_power(x, 8)
    assert np.abs(tokens - (q + 1 / n))[1:].max() < 4 * np.sqrt(q[1:].max() / n)


def test_the_caps_init():
    config = SphereFieldConfig(d=3, lmax=L, init="caps:count=3,kappa=8", seed=11)
    f = SPACE.initial(config)
    centres = uniform_directions(3, init_rng(11))
    np.testing.assert_allclose(f, SPACE.synthesise(cap_coefficients(centres, 8.0, L)),
                               atol=1e-13)
    x = grid_points(SPACE)
    for ck in centres:  # a local maximum near each centre
        near = x @ ck > math.cos(0.3)
        assert f[near].max() > 0.9 * 8.0 / 3
    with pytest.raises(ValueError, match="raise lmax"):
        SPACE.initial(SphereFieldConfig(d=3, lmax=L, init="caps:kappa=400"))
    for spec, axis, fragment in (("caps:count=0", False, "count"), ("caps", True, r"S\^2 only"),
                                 ("particles:file=x.h5", True, r"S\^2 only"),
                                 ("particles", False, "file=PATH")):
        with pytest.raises(ValueError, match=fragment):
            SphereFieldConfig(d=3, lmax=L, init=spec, axisymmetric=axis)


@pytest.fixture(scope="module")
def s2_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("s2") / "run.h5"
    config = SimulationConfig(n=400, d=3, beta=2.0, init="vmf:2", seed=5, batch=2, T=0.1,
                              dt=0.05, save_every=2, integrator="euler")
    run_to_file(config, path)
    return path


def test_a_solve_starts_from_a_runs_kde_and_resumes(s2_run, tmp_path):
    out = tmp_path / "field.h5"
    config = SphereFieldConfig(d=3, lmax=16, beta=2.0, T=0.2, save_every=0.1,
                               init=f"particles:file={s2_run}")
    calls = []
    with pytest.raises(RunInterrupted):  # after its first solved frame
        run_meanfield_to_file(config, out, should_stop=lambda: calls.append(1) or len(calls) >= 2)
    run_meanfield_to_file(None, out, resume=True)
    stored = load_density(out)
    h = 2 * math.pi / 16
    assert stored.config.init == f"particles:file={s2_run},bandwidth={h!r}"
    x = load(s2_run).positions[0].reshape(-1, 3)
    space = SphereSpace(config)
    np.testing.assert_allclose(stored.rho[0], space.synthesise(kde_coefficients(x, 16, h)),
                               atol=1e-13)
    frames = list(solve_sphere_frames(stored.config, rho0=stored.rho[0]))
    np.testing.assert_array_equal(stored.rho, np.array([f.rho for f in frames]))


def test_tokens_drawn_from_an_s2_density_file(tmp_path):
    field = tmp_path / "caps.h5"
    run_meanfield_to_file(SphereFieldConfig(d=3, lmax=16, beta=2.0, T=0.1, model="sa",
                                            init="caps:count=2,kappa=3", seed=3), field)
    config = SimulationConfig(n=300, d=3, beta=2.0, init=f"density:{field}", seed=4, batch=2)
    x = initial_tokens(config)
    drawn = sample_sphere_density(load_density(field).rho[0], 16, 600, init_rng(4))
    np.testing.assert_array_equal(x, drawn.reshape(2, 300, 3))
    r = invoke("simulate", "--n", 300, "--d", 3, "--beta", 2, "--T", 0.1, "--dt", 0.05,
               "--integrator", "euler", "--init", f"density:{field}", "--seed", 4,
               "--out", tmp_path / "run.h5")
    ok(r)
    np.testing.assert_array_equal(load(tmp_path / "run.h5").positions[0], x[0])
    r = invoke("simulate", "--n", 30, "--d", 2, "--beta", 2, "--T", 0.1,
               "--init", f"density:{field}", "--out", tmp_path / "bad.h5")
    assert r.exit_code != 0 and "S^2" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "bad.h5").exists()
