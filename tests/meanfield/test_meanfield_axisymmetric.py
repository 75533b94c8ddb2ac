"""The axisymmetric mean-field solver on S^{d-1} (particles.meanfield.axisymmetric) and the
zonal theory (particles.meanfield.zonal) against Funk-Hecke, Gegenbauer and Bessel
(issue 42, items 2 and 3)."""

import math

import numpy as np
import pytest
from scipy import special

from particles.errors import ConfigError
from particles.meanfield import growth_rate
from particles.meanfield.solver import SolverState
from particles.meanfield.sphere_config import SphereFieldConfig
from particles.meanfield.sphere_solver import make_space, solve_sphere_frames
from particles.meanfield.zonal import (
    bessel_ratios,
    critical_diffusion_sphere,
    funk_hecke,
    gauss_nodes,
    gegenbauer,
    growth_rate_sphere,
    laplace_eigenvalues,
    uniform_mean,
)


def _config(**kw):
    base = dict(d=3, lmax=8, axisymmetric=True, beta=5.0, init="uniform", T=1.0)
    base.update(kw)
    return SphereFieldConfig(**base)


def solver_rates(config, ells, eps=1e-6):
    """Growth rates of degrees ``ells`` measured by two solves from ``1 +- eps sum_l q_l``
    (the difference cancels every even-order nonlinear term), shape (len(ells),)."""
    space = make_space(config)
    out = []
    for sign in (1.0, -1.0):
        a = np.zeros(config.lmax + 1)
        a[0] = 1.0
        a[ells] = sign * eps
        start = SolverState(t=0.0, rho=space.synthesise(a), dt=config.T / 8)
        last = list(solve_sphere_frames(config, state=start, space=space))[-1]
        out.append(space.analyse(last.rho))
    return np.log((out[0] - out[1])[ells] / (2 * eps)) / config.T


# ---------------------------------------------------------------- zonal theory


@pytest.mark.parametrize("nu", [0.5, 7.0, 63.0])
@pytest.mark.parametrize("beta", [0.3, 5.0, 9.0, 60.0])
def test_bessel_ratios_match_scipy(nu, beta):
    ref = special.ive(nu + np.arange(13), beta) / special.ive(nu, beta)
    np.testing.assert_allclose(bessel_ratios(nu, beta, 12), ref, rtol=1e-12, atol=0)


def test_uniform_mean_is_the_mean_of_the_kernel():
    for beta in (0.1, 5.0, 300.0):  # S^2: E exp(beta t) = sinh(beta) / beta
        assert uniform_mean(0.5, beta) == pytest.approx(beta - math.log(2 * beta)
                                                        + math.log1p(-math.exp(-2 * beta)),
                                                        rel=1e-13)
    nu, beta = 7.0, 9.0  # Gamma(nu + 1) (2 / beta)^nu I_nu(beta)
    ref = special.gammaln(nu + 1) + nu * math.log(2 / beta) + math.log(special.iv(nu, beta))
    assert uniform_mean(nu, beta) == pytest.approx(ref, rel=1e-13)


@pytest.mark.parametrize("d", [3, 16, 128])
def test_gegenbauer_basis_and_funk_hecke_by_quadrature(d):
    t, w = gauss_nodes(d, 60)
    q, dq = gegenbauer(d, 20, t)
    assert np.abs((q * w) @ q.T - np.eye(21)).max() < 1e-12
    # the Laplace-Beltrami eigenvalues from the weak form E[(1 - t^2) q_l' q_k']
    lap = (dq * w * (1 - t * t)) @ dq.T
    assert np.abs(lap - np.diag(laplace_eigenvalues(d, 20))).max() < 1e-12 * 20 * (20 + d)
    # Funk-Hecke: E[exp(beta t) q_l(t)] = mu_l q_l(1), by a quadrature exact to round-off
    beta = 5.0
    q1 = gegenbauer(d, 6, np.ones(1))[0][:, 0]
    quad = (q[:7] * w * np.exp(beta * t)).sum(1) / q1
    np.testing.assert_allclose(quad, funk_hecke(d, beta, 6), rtol=1e-9)


def test_d2_rates_are_the_circle_rates():
    k = np.arange(1, 9)
    for model in ("usa", "sa"):
        np.testing.assert_allclose(growth_rate_sphere(k, 2, 5.0, model, D=0.1),
                                   growth_rate(k, 5.0, model, D=0.1), rtol=1e-12)


def test_critical_diffusion_is_the_l1_drift():
    Dc = critical_diffusion_sphere(3, 5.0, "sa")
    # S^2: l(l+1) i_l(beta) / (beta i_0(beta)) - D l(l+1); i_1 / i_0 = coth - 1/beta
    assert Dc == pytest.approx((1 / math.tanh(5.0) - 1 / 5.0) / 5.0, rel=1e-13)
    rates = growth_rate_sphere(np.arange(1, 30), 3, 5.0, "sa", D=Dc * (1 + 1e-9))
    assert rates.max() < 0 < growth_rate_sphere(1, 3, 5.0, "sa", D=Dc * (1 - 1e-9))


# ---------------------------------------------------------------- the solver


@pytest.mark.parametrize("d", [3, 16, 128])
@pytest.mark.parametrize("model", ["usa", "sa"])
def test_growth_rates_match_funk_hecke(d, model):
    """Every degree l = 1..8 at beta = 1, 5, 9 to 1e-6 (relative above rate 1)."""
    ells = np.arange(1, 9)
    for beta in (1.0, 5.0, 9.0):
        theory = growth_rate_sphere(ells, d, beta, model)
        config = _config(d=d, model=model, beta=beta, T=1.0 / np.abs(theory).max(),
                         rtol=1e-13, atol=1e-16)
        got = solver_rates(config, ells)
        err = np.abs(got - theory) / np.maximum(1.0, np.abs(theory))
        assert err.max() < 1e-6, (beta, err)


def test_diffusion_threshold_in_the_solver():
    """Above D_c every degree decays, below it l = 1 grows, at the theory's rates."""
    Dc = critical_diffusion_sphere(16, 5.0, "usa")
    ells = np.arange(1, 6)
    for D in (0.9 * Dc, 1.1 * Dc):
        theory = growth_rate_sphere(ells, 16, 5.0, "usa", D=D)
        config = _config(d=16, D=D, lmax=6, T=1.0 / np.abs(theory).max(), rtol=1e-13,
                         atol=1e-16)
        got = solver_rates(config, ells)
        assert np.abs(got - theory).max() < 1e-6 * max(1.0, np.abs(theory).max())
        assert (got[0] > 0) == (D < Dc) and got[1:].max() < 0


def test_mass_exact_and_usa_free_energy_decreases_with_its_dissipation():
    for D in (0.0, 0.05):
        config = _config(d=16, lmax=24, beta=2.0, D=D, T=1.0, save_every=0.025,
                         init="vonmises:kappa=2")
        space = make_space(config)
        frames = list(solve_sphere_frames(config, space=space))
        mass = np.array([f.mass for f in frames])
        assert np.abs(mass - 1).max() < 1e-13
        F = np.array([space.free_energy(f.rho) for f in frames])
        diss = np.array([f.dissipation for f in frames])
        assert np.all(np.diff(F) <= 1e-14 * np.abs(F).max()) and diss.min() >= 0
        assert F[0] - F[-1] > 1e-3  # the flow did something (0.08 and 0.0023)
        # dF/dt = -dissipation: F(t) - F(0) against -int diss (Simpson on 41 frames)
        h = 0.025
        integral = h / 3 * (diss[0] + diss[-1] + 4 * diss[1:-1:2].sum() + 2 * diss[2:-1:2].sum())
        assert F[-1] - F[0] == pytest.approx(-integral, rel=1e-4)


def test_resume_continues_bit_for_bit():
    config = _config(d=5, lmax=16, beta=9.0, model="sa", T=1.0, save_every=0.25,
                     init="vonmises:kappa=2", D=0.01)
    frames = list(solve_sphere_frames(config))
    again = list(solve_sphere_frames(config, state=frames[2].state))
    assert [f.time for f in again] == [0.75, 1.0]
    assert np.array_equal(again[-1].rho, frames[-1].rho)
    assert again[-1].state.steps == frames[-1].state.steps


def test_dimension_1024():
    config = _config(d=1024, lmax=32, beta=9.0, T=1.0, init="modes:l=2,eps=0.1")
    frames = list(solve_sphere_frames(config))
    assert abs(frames[-1].mass - 1) < 1e-13
    assert np.all(np.isfinite(frames[-1].rho))
    assert frames[-1].energy > frames[0].energy  # USA climbs its energy


@pytest.mark.parametrize("d", [3, 128, 1024])
def test_default_perturbation_stays_within_eps_in_any_dimension(d):
    config = _config(d=d, lmax=32, init="perturbed:eps=0.01", seed=5)
    f = make_space(config).initial(config)
    # |P_l| <= 1: at most eps sum_l |a_l| / 4, about 3 eps (the orthonormal q_l gave
    # about 1e5 eps at d = 128, and a negative density)
    assert 0 < np.abs(f - 1).max() < 0.05


@pytest.mark.parametrize(("kw", "field"), [
    (dict(d=2), "d"), (dict(d=5, axisymmetric=False), "d"), (dict(lmax=2), "lmax"),
    (dict(model="kuramoto"), "model"), (dict(init="modes:l=2,m=1"), "init"),
    (dict(init="vonmises:theta=1"), "init"), (dict(init="modes:l=99"), "init"),
    (dict(beta=-1.0), "beta"), (dict(T=0.0), "T"),
])
def test_bad_configs_name_their_field(kw, field):
    with pytest.raises(ConfigError) as info:
        _config(**kw)
    assert info.value.field == field
