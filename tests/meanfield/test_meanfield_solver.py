"""The spectral mean-field solver (particles.meanfield.solver) against the linear
theory, the conservation laws and the gradient-flow identity (issue 13)."""

import json
import math

import numpy as np
import pytest
from scipy import integrate

from particles.errors import IntegrationError
from particles.meanfield import (
    DensityFrame,
    MeanFieldConfig,
    SolverState,
    critical_diffusion,
    dissipation,
    energy,
    free_energy,
    growth_rate,
    initial_density,
    solve,
    velocity,
)


def _mode_amplitude(rho, k):
    return np.abs(np.fft.rfft(rho, axis=-1)[..., k])


def _fitted_rate(result, k):
    return np.polyfit(result.times, np.log(_mode_amplitude(result.rho, k)), 1)[0]


# ------------------------------------------------------------------- spectral pieces


@pytest.mark.parametrize("model", ["usa", "sa", "kuramoto"])
def test_velocity_matches_quadrature(model):
    beta, c = 3.0, 1.7
    M = 64
    rho = initial_density(MeanFieldConfig(modes=M, init="vonmises:kappa=1.5,mu=0.4"))
    theta = 2 * np.pi * np.arange(M) / M
    u = theta[None, :] - theta[:, None]  # phi - theta
    w = np.exp(beta * np.cos(u))
    h = 2 * np.pi / M  # trapezoid: spectrally exact for this smooth integrand
    if model == "kuramoto":
        expected = c * h * (np.sin(u) * rho).sum(1)
    else:
        expected = h * (w * np.sin(u) * rho).sum(1)
        if model == "sa":
            expected /= h * (w * rho).sum(1)
    got = velocity(rho, beta, model, coupling=c)
    assert np.allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_time_changed_velocity():
    rho = initial_density(MeanFieldConfig(modes=32, init="perturbed:eps=0.3", seed=5))
    plain = velocity(rho, 7.0, "usa")
    scaled = velocity(rho, 7.0, "usa", usa_scale="n_exp_beta")
    assert np.allclose(scaled, np.exp(-7.0) * plain, rtol=1e-13, atol=1e-16)


def test_energy_matches_quadrature_and_particles():
    M, beta = 64, 2.5
    rho = initial_density(MeanFieldConfig(modes=M, init="vonmises:kappa=2"))
    theta = 2 * np.pi * np.arange(M) / M
    h = 2 * np.pi / M
    u = theta[None, :] - theta[:, None]
    direct = h * h * (np.exp(beta * np.cos(u)) * rho[:, None] * rho[None, :]).sum() / (2 * beta)
    assert energy(rho, beta, "usa") == pytest.approx(direct, rel=1e-12)
    assert energy(rho, beta, "sa") == energy(rho, beta, "usa")
    # uniform density: E = I_0(beta) / (2 beta)
    uni = np.full(M, 1 / (2 * np.pi))
    from scipy.special import iv
    assert energy(uni, beta) == pytest.approx(iv(0, beta) / (2 * beta), rel=1e-13)
    # beta = 0 and Kuramoto: r^2 / 2 and c r^2 / 2
    r = abs(h * (rho * np.exp(1j * theta)).sum())
    assert energy(rho, 0.0) == pytest.approx(r * r / 2, rel=1e-12)
    assert energy(rho, 0.0, "kuramoto", coupling=3.0) == pytest.approx(1.5 * r * r, rel=1e-12)


# ------------------------------------------------------------------- linear growth


_RATE_CASES = [
    ("usa", 2.0, 0.0, 2),
    ("usa", 9.0, 0.0, 4),
    ("usa", 2.0, 0.2, 2),
    ("sa", 3.0, 0.0, 3),
    ("sa", 3.0, 0.05, 1),
    ("kuramoto", 0.0, 0.0, 1),
    ("kuramoto", 0.0, 0.1, 1),
    ("kuramoto", 0.0, 0.1, 2),
]


@pytest.mark.parametrize(("model", "beta", "D", "k"), _RATE_CASES)
def test_linear_growth_rate(model, beta, D, k):
    lam = float(growth_rate(k, beta, model, D, coupling=2.0))
    T = 2.0 / abs(lam)
    cfg = MeanFieldConfig(model=model, beta=beta, D=D, coupling=2.0, modes=32, T=T,
                          save_every=T / 10, init=f"modes:k={k},eps=1e-7",
                          rtol=1e-10, atol=1e-16)
    fitted = _fitted_rate(solve(cfg), k)
    assert fitted == pytest.approx(lam, rel=1e-3)


def test_linear_growth_rate_time_change():
    # usa_scale="n_exp_beta": the drift rate is e^{-beta} k^2 I_k(beta) / beta, diffusion unscaled
    beta, D, k = 9.0, 0.001, 4
    lam = float(growth_rate(k, beta, "usa") * np.exp(-beta) - D * k * k)
    T = 2.0 / lam
    cfg = MeanFieldConfig(model="usa", beta=beta, D=D, usa_scale="n_exp_beta", modes=32, T=T,
                          save_every=T / 10, init=f"modes:k={k},eps=1e-7", rtol=1e-10,
                          atol=1e-16)
    assert _fitted_rate(solve(cfg), k) == pytest.approx(lam, rel=1e-3)
    # far beyond e^beta overflow the time-changed USA still runs
    big = MeanFieldConfig(model="usa", beta=900.0, usa_scale="n_exp_beta", modes=16, T=0.1,
                          init="modes:k=1,eps=1e-3")
    res = solve(big)
    assert np.all(np.isfinite(res.rho)) and np.isinf(res.energy[0])


@pytest.mark.parametrize("model", ["usa", "sa"])
def test_diffusion_threshold(model):
    beta = 1.5
    Dc = critical_diffusion(beta, model)
    amps = {}
    for side, D in (("above", 1.02 * Dc), ("below", 0.98 * Dc)):
        T = 50 / Dc
        cfg = MeanFieldConfig(model=model, beta=beta, D=D, modes=16, T=T,
                              init="modes:k=1,eps=1e-4", rtol=1e-9, atol=1e-14)
        res = solve(cfg)
        amps[side] = _mode_amplitude(res.rho[-1], 1) / _mode_amplitude(res.rho[0], 1)
    assert amps["above"] < 0.5  # decays like exp(-0.02 * 50) ~ 0.37
    assert amps["below"] > 2.0  # grows like exp(+0.02 * 50) ~ 2.7


# ------------------------------------------------------------------- conservation


@pytest.fixture(scope="module")
def clustering():
    """USA from a perturbed uniform density through cluster formation, with diffusion."""
    cfg = MeanFieldConfig(model="usa", beta=4.0, D=0.2, modes=128, T=1.5, save_every=0.005,
                          init="perturbed:eps=0.05", seed=3, rtol=1e-9, atol=1e-12)
    return cfg, solve(cfg)


def test_mass_to_round_off(clustering):
    _, res = clustering
    assert res.steps > 200
    assert np.abs(res.mass - 1.0).max() < 1e-13
    # the k = 0 coefficient is untouched by a step: only the FFT round trip rounds it
    assert res.rho.max() > 5 * res.rho[0].max()  # clusters did form


def test_energy_monotone_and_free_energy_identity(clustering):
    cfg, res = clustering
    F = np.array([free_energy(r, cfg.beta, cfg.model, cfg.D) for r in res.rho])
    assert np.all(np.diff(F) < 0)
    assert np.all(res.dissipation > 0)
    # dF/dt = -dissipation: integrate the recorded dissipation over the frames (Simpson)
    lost = integrate.simpson(res.dissipation, x=res.times)
    assert F[0] - F[-1] == pytest.approx(lost, rel=1e-5)  # quadrature error 3e-6
    # and pointwise by a centred difference
    dF = (F[2:] - F[:-2]) / (res.times[2:] - res.times[:-2])
    scale = res.dissipation.max()
    assert np.abs(dF + res.dissipation[1:-1]).max() < 2e-2 * scale


def test_free_energy_identity_time_change():
    # log(rho) must be resolved too (the discrete identity differentiates it): few modes
    beta, D = 6.0, 5e-3
    cfg = MeanFieldConfig(model="usa", beta=beta, D=D, usa_scale="n_exp_beta", modes=64, T=30.0,
                          save_every=0.1, init="perturbed:eps=0.2,kmax=6", seed=2, rtol=1e-10,
                          atol=1e-13)
    res = solve(cfg)
    F = np.array([free_energy(r, beta, "usa", D, usa_scale="n_exp_beta") for r in res.rho])
    assert np.all(np.diff(F) < 0) and res.rho[-1].max() > 1.5 * res.rho[0].max()
    assert F[0] - F[-1] == pytest.approx(integrate.simpson(res.dissipation, x=res.times),
                                         rel=1e-8)
    # the scaled free energy is e^{-beta} times the plain one's interaction part
    rho = res.rho[-1]
    assert free_energy(rho, beta, "usa", 0.0, usa_scale="n_exp_beta") == pytest.approx(
        np.exp(-beta) * free_energy(rho, beta, "usa"), rel=1e-13)


@pytest.mark.parametrize("model", ["usa", "sa"])
def test_energy_increases_without_diffusion(model):
    cfg = MeanFieldConfig(model=model, beta=2.0, modes=64, T=1.0, save_every=0.05,
                          init="perturbed:eps=0.2", seed=1)
    res = solve(cfg)
    assert np.all(np.diff(res.energy) > 0)
    assert np.all(res.dissipation >= 0)
    # dE/dt = dissipation (for SA: int rho Z v^2)
    gained = integrate.simpson(res.dissipation, x=res.times)
    assert res.energy[-1] - res.energy[0] == pytest.approx(gained, rel=1e-4)


# ------------------------------------------------------------------- frames, resume


def test_frames_and_resume_bit_identical():
    cfg = MeanFieldConfig(model="usa", beta=3.0, D=0.05, modes=64, T=0.6, save_every=0.1,
                          init="perturbed:eps=0.1", seed=7)
    seen = []
    full = solve(cfg, on_frame=seen.append)
    assert [f.time for f in seen] == pytest.approx(list(np.linspace(0, 0.6, 7)))
    assert all(isinstance(f, DensityFrame) for f in seen)
    assert full.times[0] == 0.0 and full.times[-1] == 0.6
    assert full.rho.shape == (7, 64) and full.theta.shape == (64,)
    mid = seen[3].state
    assert isinstance(mid, SolverState) and mid.t == pytest.approx(0.3)
    # a state that went through JSON (as a file would store it) resumes identically
    state = SolverState(t=mid.t, rho=np.array(json.loads(json.dumps(mid.rho.tolist()))),
                        dt=mid.dt, steps=mid.steps, rejected=mid.rejected)
    rest = []
    resumed = solve(cfg, state=state, on_frame=rest.append)
    assert [f.time for f in rest] == [f.time for f in seen[4:]]
    assert np.array_equal(resumed.rho, full.rho[4:])
    assert (resumed.steps, resumed.rejected) == (full.steps, full.rejected)
    assert np.array_equal(resumed.energy, full.energy[4:])


def test_save_times_and_initial_frame():
    cfg = MeanFieldConfig(model="sa", beta=1.0, modes=16, T=1.0, save_times=(0.25, 1.0),
                          init="modes:k=1,eps=0.01")
    res = solve(cfg)
    assert list(res.times) == [0.0, 0.25, 1.0]
    assert np.array_equal(res.rho[0], initial_density(cfg))
    assert res.mass[0] == pytest.approx(1.0, abs=1e-15)


def test_config_round_trip_json():
    cfg = MeanFieldConfig(model="kuramoto", beta=0.0, D=0.1, modes=32, T=2.0,
                          save_times=(0.5, 1.0, 2.0), coupling=2.5, init="vonmises:kappa=2",
                          seed=11, rtol=1e-7)
    again = MeanFieldConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again == cfg
    assert MeanFieldConfig.from_dict(json.loads(cfg.to_json())) == cfg


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"model": "softmax"}, "model must be one of"),
    ({"beta": -1.0}, "beta must be >= 0"),
    ({"beta": float("nan")}, "beta must be finite"),
    ({"beta": 800.0}, "beta must be <= 700"),
    ({"usa_scale": "exp"}, "usa_scale must be one of"),
    ({"D": -0.1}, "D must be >= 0"),
    ({"modes": 7}, "modes must be an even integer"),
    ({"modes": 64.0}, "modes must be an integer"),
    ({"T": 0.0}, "T must be > 0"),
    ({"save_every": 0.1, "save_times": (0.5,)}, "exclusive"),
    ({"save_every": 2.0}, "save_every must be <= T"),
    ({"save_times": (0.5, 0.2)}, "save_times must increase"),
    ({"init": "gaussian"}, "init must be one of"),
    ({"init": "modes:k=2,foo=1"}, "unknown parameter"),
    ({"init": "vonmises:kappa=x"}, "kappa must be a number"),
    ({"seed": -1}, "seed must be"),
    ({"integrator": "rk4"}, "integrator must be one of"),
    ({"rtol": 0.0}, "rtol must be > 0"),
    ({"positivity": "maybe"}, "positivity must be one of"),
])
def test_bad_config_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        MeanFieldConfig(**{"T": 1.0, **kwargs})
    assert "\n" not in str(info.value)


def test_from_dict_unknown_key_and_bad_init_amplitude():
    with pytest.raises(ValueError, match="unknown mean-field config keys: n"):
        MeanFieldConfig.from_dict({"n": 3})
    with pytest.raises(ValueError, match="not a positive density"):
        initial_density(MeanFieldConfig(init="modes:k=1,eps=2"))


def test_positivity_loss_is_reported():
    # D = 0 collapse on a coarse grid: the spectral density undershoots
    base = dict(model="usa", beta=6.0, modes=32, T=0.2, save_every=0.04,
                init="modes:k=2,eps=0.1", max_steps=20_000)
    with pytest.raises(IntegrationError, match="lost positivity"):
        solve(MeanFieldConfig(positivity="raise", **base))
    with pytest.warns(RuntimeWarning, match="lost positivity"):
        res = solve(MeanFieldConfig(positivity="warn", **base))
    assert res.min_density.min() < 0


def test_max_steps():
    cfg = MeanFieldConfig(model="usa", beta=2.0, modes=16, T=10.0, init="perturbed:eps=0.1",
                          max_steps=5)
    with pytest.raises(IntegrationError, match="max_steps"):
        solve(cfg)


def test_dissipation_nan_without_positivity():
    rho = np.full(16, 1 / (2 * np.pi))
    rho[3] = -0.01
    assert math.isnan(dissipation(rho, 1.0, "usa", D=0.1))
    assert dissipation(rho, 1.0, "usa", D=0.0) == dissipation(rho, 1.0, "usa")
