"""Particles against the mean-field theory on the circle (issue 13, validation).

- Deterministic particles: equispaced tokens plus a small mode-k perturbation grow
  at the linear rate ``growth_rate(k, beta, model)`` (USA and SA, angle form and the
  embedded d = 2 form).
- Noisy particles (``noise=sigma``, ``D = sigma^2 / 2``): the uniform state is
  stable above ``critical_noise`` (the mode-1 amplitude stays at the ``1/sqrt(n)``
  level predicted by linear fluctuation theory) and unstable below (it grows to O(1)).
- Particles against the PDE (:func:`particles.meanfield.solve`) in exact circle W1:
  quantile tokens stay at ``W1 = pi / (2 n)`` from the PDE density over time (USA
  and SA), i.i.d. tokens at ``~ n^{-1/2}`` (log-log slope about -1/2; the same
  pipeline as figures/meanfield_w1.py, whose ``--quick`` mode runs here); noisy
  particles follow the PDE with ``D = sigma^2 / 2`` (and not ``sigma^2``).
"""

import functools
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import particles
from particles.circle import simulate_angles
from particles.meanfield import MeanFieldConfig, critical_noise, growth_rate, solve
from particles.meanfield.wasserstein import quantile_angles, sample_density, w1_circle_density

TWO_PI = 2 * np.pi


def perturbed_tokens(n, k, eps):
    """Angles of n tokens whose density is ``(1 + eps cos(k theta)) / (2 pi)`` to O(eps^2).

    Equispaced labels ``phi_j`` moved by the inverse of the perturbed distribution:
    ``theta = phi - (eps/k) sin(k phi)``.
    """
    phi = TWO_PI * np.arange(n) / n
    return phi - (eps / k) * np.sin(k * phi)


def mode_amplitude(theta, k):
    """``|mean_j exp(i k theta_j)|`` along the last axis (``eps/2`` at t = 0)."""
    return np.abs(np.exp(1j * k * theta).mean(axis=-1))


def measured_rate(times, amplitude):
    """Slope of ``log amplitude`` against time (least squares)."""
    return np.polyfit(times, np.log(amplitude), 1)[0]


@pytest.mark.parametrize("model", ["usa", "sa"])
def test_mode_growth_rate_angle_form(model):
    n, beta, eps = 256, 2.0, 1e-4
    for k in (1, 2, 3):
        lam = float(growth_rate(k, beta, model))
        T = round(np.log(100.0) / lam, 1)  # the amplitude grows a hundredfold: still linear
        tr = simulate_angles(perturbed_tokens(n, k, eps), model=model, beta=beta,
                             integrator="rk4", dt=0.01, T=T, save_every=10)
        a = mode_amplitude(tr.theta, k)
        assert a[0] == pytest.approx(eps / 2, rel=1e-6)
        assert a[-1] > 50 * a[0]
        # the issue asks for a few percent; equispaced tokens are a spectrally
        # accurate quadrature, so the particle rate matches to far better than that
        assert measured_rate(tr.times, a) == pytest.approx(lam, rel=1e-3)


def test_mode_growth_rate_embedded_form():
    """The same through particles.simulate on S^1 in R^2 (USA, the fastest mode at beta = 2)."""
    n, beta, eps, k = 128, 2.0, 1e-4, 2
    lam = float(growth_rate(k, beta, "usa"))
    theta0 = perturbed_tokens(n, k, eps)
    x0 = np.stack([np.cos(theta0), np.sin(theta0)], axis=1)
    tr = particles.simulate(n, 2, beta, model="usa", integrator="rk4", x0=x0, dt=0.01,
                            T=round(np.log(100.0) / lam, 1), save_every=10, seed=1)
    X = tr.positions
    a = mode_amplitude(np.arctan2(X[..., 1], X[..., 0]), k)
    assert a[-1] > 50 * a[0]
    assert measured_rate(tr.times, a) == pytest.approx(lam, rel=1e-3)


def _noisy_mode_one(model, beta, n, sigma, batch, T, seed):
    """Mode-1 amplitudes r = |mean_i x_i|, shape (frames, batch), from equispaced tokens."""
    phi = TWO_PI * np.arange(n) / n
    x0 = np.broadcast_to(np.stack([np.cos(phi), np.sin(phi)], axis=1), (batch, n, 2)).copy()
    tr = particles.simulate(n, 2, beta, model=model, x0=x0, batch=batch, noise=sigma,
                            dt=0.04, T=T, save_every=25, seed=seed)
    return tr.times, np.linalg.norm(tr.positions.mean(axis=-2), axis=-1)


@pytest.mark.parametrize("model", ["usa", pytest.param("sa", marks=pytest.mark.slow)])
def test_noise_threshold(model):
    """Above sigma_c: n E r^2 = D / (D - D_c) (stationary Ornstein-Uhlenbeck mode);
    below: r grows at rate D_c - D to an O(1) cluster."""
    beta, n = 1.0, 200
    sc = critical_noise(beta, model)
    # above: the stationary level of the linearised fluctuations, 1.8 at sigma = 1.5 sigma_c
    # (1 without interaction); this estimate from ~90 independent samples has a
    # spread of about 10% (1.5 to 2.1 over seeds with 32 systems)
    times, r = _noisy_mode_one(model, beta, n, 1.5 * sc, batch=16, T=14.0, seed=21)
    late = r[times >= 4.0]
    level = n * np.mean(late**2)
    assert level == pytest.approx(1.0 / (1.0 - 1.5**-2), rel=0.33)
    assert np.max(late) < 6.0 / np.sqrt(n)
    # below: every system leaves the noise level and clusters
    D, Dc = 0.5 * (0.5 * sc) ** 2, 0.5 * sc**2
    T = round(5.0 / (Dc - D), 0)  # e^5 times the noise level, then saturation
    times, r = _noisy_mode_one(model, beta, n, 0.5 * sc, batch=4, T=T, seed=12)
    assert np.all(r[-1] > 0.5)
    assert np.all(r[-1] > 10.0 / np.sqrt(n))


def test_noisy_particles_follow_the_pde_with_diffusion():
    """A spreading cluster with noise sigma: each system's empirical measure is at
    W1 ~ n^{-1/2} from the PDE with D = sigma^2 / 2; pooling the independent systems
    averages the noise out and leaves the propagation-of-chaos bias, small at n = 400,
    while the PDE with D = sigma^2 is far."""
    beta, sigma = 1.0, 0.8
    pdes = {D: solve(MeanFieldConfig(model="usa", beta=beta, D=D, modes=512, T=2.0,
                                     save_every=1.0, init="vonmises:kappa=4"))
            for D in (sigma**2 / 2, sigma**2)}
    rho0 = pdes[sigma**2 / 2].rho[0]
    rng = np.random.default_rng(0)
    ns, per_system = (25, 100, 400), []
    for n, B in zip(ns, (32, 16, 16), strict=True):
        theta0 = np.array([sample_density(rho0, n, rng) for _ in range(B)])
        x0 = np.stack([np.cos(theta0), np.sin(theta0)], axis=-1)
        tr = particles.simulate(n, 2, beta, model="usa", x0=x0, batch=B, noise=sigma, dt=0.04,
                                T=2.0, save_every=25, seed=3)
        theta = np.arctan2(tr.positions[..., 1], tr.positions[..., 0])  # (frames, B, n)
        right, wrong = pdes[sigma**2 / 2].rho, pdes[sigma**2].rho
        per_system.append([np.mean([w1_circle_density(theta[f, b], right[f]) for b in range(B)])
                           for f in range(3)])
    per_system = np.array(per_system)
    for f in (1, 2):
        slope = np.polyfit(np.log(ns), np.log(per_system[:, f]), 1)[0]
        assert -0.75 < slope < -0.3
        pooled = theta[f].ravel()  # 16 systems of n = 400
        assert w1_circle_density(pooled, right[f]) < 0.03
        assert w1_circle_density(pooled, wrong[f]) > 0.2


@functools.cache
def _figure_module():
    """figures/meanfield_w1.py as a module (registered: it defines a dataclass)."""
    path = Path(__file__).resolve().parents[2] / "figures" / "meanfield_w1.py"
    spec = importlib.util.spec_from_file_location("meanfield_w1_figure", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("model", ["usa", "sa"])
def test_quantile_tokens_track_the_pde(model):
    """Deterministic quantile tokens of rho0 stay quantiles of the PDE density rho(t):
    W1 stays pi/(2n) (its value at t = 0) while the density sharpens into clusters
    (USA: the peak grows twentyfold; 2048 cells keep the cells finer than the token
    spacing there, which the pi/(2n) law needs)."""
    beta, n = 2.0, 1000
    pde = solve(MeanFieldConfig(model=model, beta=beta, modes=2048, T=1.5, save_every=0.5,
                                init="modes:k=2,eps=0.5"))
    assert pde.rho[-1].max() > 1.5 * pde.rho[0].max()
    # serial kernels: the ones the other tests here compiled already
    tr = simulate_angles(quantile_angles(pde.rho[0], n), model=model, beta=beta,
                         integrator="rk4", dt=0.05, T=1.5, save_times=pde.times, parallel=False)
    w1 = np.array([w1_circle_density(tr.theta[f], pde.rho[f]) for f in range(pde.times.size)])
    assert w1 == pytest.approx(np.pi / (2 * n), rel=1e-3)
    # a wrong model moves the tokens far from the density
    other = simulate_angles(tr.theta[0], model="sa" if model == "usa" else "usa", beta=beta,
                            integrator="rk4", dt=0.05, T=1.5, save_times=pde.times,
                            parallel=False)
    assert w1_circle_density(other.theta[-1], pde.rho[-1]) > 10 * np.pi / (2 * n)


def test_w1_of_iid_tokens_shrinks_like_one_over_sqrt_n():
    exp = _figure_module().w1_experiment(ns=(25, 100, 400), draws=(16, 16, 16), modes=512,
                                         T=1.0, save_every=0.5)
    assert exp.mean.shape == (3, 3)
    assert np.all(np.diff(exp.mean, axis=0) < 0)  # smaller at every time for larger n
    for frame in (None, 0, -1):
        assert -0.7 < exp.slope(frame) < -0.3


def test_figure_quick(tmp_path, capsys):
    out = tmp_path / "w1.png"
    assert _figure_module().main(["--quick", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "slope of log W1 against log n" in capsys.readouterr().out


@pytest.mark.slow
def test_like_with_like_starts_keep_particles_near_the_mean_field(tmp_path):
    """Issue 28 item 6, the README example (smaller): noisy USA particles at beta = 3,
    where the uniform state is unstable, stay close in W1 to a solve started from
    their own first frame, and particles drawn from a density file to its solve;
    against an independent start they drift far apart."""
    from particles.config import SimulationConfig
    from particles.io import load, load_density
    from particles.plotting.density import w1_against_density
    from particles.runs import run_meanfield_to_file, run_to_file

    common = dict(n=400, d=2, beta=3.0, model="usa", noise=0.316, T=8.0, dt=0.01,
                  save_every=50, seed=1)
    field = dict(model="usa", beta=3.0, D=0.05, modes=256, T=8.0, save_every=0.5)
    run_to_file(SimulationConfig(**common), tmp_path / "run.h5")
    run_meanfield_to_file(MeanFieldConfig(**field, init=f"particles:file={tmp_path / 'run.h5'}"),
                          tmp_path / "from_run.h5")
    run_meanfield_to_file(MeanFieldConfig(**field, init="modes:k=2,eps=0.3"),
                          tmp_path / "field.h5")
    run_to_file(SimulationConfig(**common, init=f"density:{tmp_path / 'field.h5'}"),
                tmp_path / "from_field.h5")
    run_meanfield_to_file(MeanFieldConfig(**field), tmp_path / "independent.h5")

    def worst(run: str, density: str) -> float:
        return float(w1_against_density(load(tmp_path / run),
                                        load_density(tmp_path / density)).w1.max())

    like = worst("run.h5", "from_run.h5"), worst("from_field.h5", "field.h5")
    unlike = worst("run.h5", "independent.h5")
    assert max(like) < 0.3 and unlike > 0.6, (like, unlike)  # measured 0.10, 0.22; 0.93
