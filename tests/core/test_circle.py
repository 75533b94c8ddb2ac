"""Angle-form solvers on the circle and the circle analysis.

Kernels against their NumPy twins; the angle form against the embedded d = 2
simulation and against scipy's solve_ivp; integrator orders; analysis of
phases, order parameter and frequency locking on exactly known data.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from particles import StepSizeWarning, simulate
from particles.analysis.circle import (
    FrequencyLocking,
    order_parameter,
    order_parameter_from_positions,
    phases,
    unwrap_phases,
)
from particles.circle import (
    ANGLE_MODELS,
    AngleTrajectory,
    angle_velocity,
    angle_velocity_reference,
    simulate_angles,
)
from particles.engine import IntegrationError
from particles.sphere import angles_to_circle


def _wrap(a):
    """Angle differences folded into (-pi, pi]."""
    return np.angle(np.exp(1j * np.asarray(a)))


def _angles(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.0, 2.0 * np.pi, n)


# ------------------------------------------------------------------- kernels
@pytest.mark.parametrize("model", list(ANGLE_MODELS))
@pytest.mark.parametrize("weighted", [False, True])
def test_kernels_match_reference(model, weighted):
    rng = np.random.default_rng(1)
    for n in (1, 7, 300):
        theta = rng.uniform(-20.0, 20.0, n)  # any branch: the kernels only use cos, sin
        omega = rng.normal(size=n)
        masses = rng.uniform(0.2, 3.0, n) if weighted else None
        for beta, usa_scale in ((0.0, "n"), (1.5, "n"), (30.0, "n"), (300.0, "n_exp_beta")):
            kw = dict(model=model, beta=beta, coupling=-0.7, omega=omega, usa_scale=usa_scale,
                      masses=masses)
            want = angle_velocity_reference(theta, **kw)
            for parallel in (False, True):
                got = angle_velocity(theta, parallel=parallel, **kw)
                # USA weights reach exp(beta - shift): round-off in sin(theta_j - theta_i)
                # (e.g. the j = i term, ~1e-17 instead of 0) is amplified by it
                scale = math.exp(beta) if model == "usa" and usa_scale == "n" else 1.0
                np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13 * scale * (1 + beta),
                                           err_msg=f"n={n} beta={beta} parallel={parallel}")


def test_sa_kernel_survives_extreme_masses_and_beta():
    # masses spanning 1e-250..1: the shift beta + max log m is far above some
    # rows' maxima, which the exact-maximum fallback must catch
    theta = np.array([0.0, 0.1, 3.0, 3.1])
    masses = np.array([1e-250, 1e-250, 1.0, 1.0])
    got = angle_velocity(theta, model="sa", beta=1e3, masses=masses)
    want = angle_velocity_reference(theta, model="sa", beta=1e3, masses=masses)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-300)


def test_beta_zero_models_coincide():
    theta = _angles(2, 50)
    v = [angle_velocity(theta, model=m, beta=0.0) for m in ANGLE_MODELS]
    np.testing.assert_allclose(v[0], v[1], atol=1e-14)
    np.testing.assert_allclose(v[0], v[2], atol=1e-14)


def test_angle_velocity_is_tangent_component_of_embedded_drift():
    # dtheta_i/dt = <e_theta_i, P_{x_i} y_i> for the embedded SA drift
    from particles.fields.attention import attention_reference

    theta = _angles(3, 30)
    X = angles_to_circle(theta)
    Y = attention_reference(X, beta=2.0, normalized=True)
    e_theta = np.stack((-X[:, 1], X[:, 0]), axis=1)
    np.testing.assert_allclose(angle_velocity(theta, model="sa", beta=2.0),
                               np.einsum("ij,ij->i", e_theta, Y), atol=1e-13)


def test_large_kuramoto_step_is_fast():
    n = 100_000
    theta = _angles(4, n)
    omega = np.random.default_rng(5).normal(size=n)
    # compile outside the timing (600 >= 512 picks the same serial/parallel kernel)
    simulate_angles(theta[:600], omega=omega[:600], coupling=2.0, dt=0.01, T=0.01)
    t = time.perf_counter()
    traj = simulate_angles(theta, omega=omega, coupling=2.0, dt=0.01, T=0.1, save_every=10)
    elapsed = time.perf_counter() - t
    assert traj.theta.shape == (2, n) and np.all(np.isfinite(traj.theta))
    # 10 RK4 steps = 40 O(n) evaluations; an O(n^2) kernel would take minutes
    assert elapsed < 5.0, elapsed
    v = angle_velocity(theta, omega=omega, coupling=2.0)
    r = order_parameter(theta)
    np.testing.assert_allclose(v, omega + 2.0 * r.r * np.sin(r.psi - theta), atol=1e-12)


# -------------------------------------------------- angle form vs the others
def _solve_ivp(theta0, times, **kw):
    sol = solve_ivp(lambda t, y: angle_velocity_reference(y, **kw), (0.0, times[-1]), theta0,
                    method="DOP853", t_eval=times, rtol=1e-12, atol=1e-12)
    assert sol.success
    return sol.y.T


@pytest.mark.parametrize(
    "model,beta,scale",
    [("sa", 3.0, "n"), ("usa", 2.0, "n"), ("usa", 4.0, "n_exp_beta"), ("kuramoto", 0.0, "n")],
)
def test_angle_form_matches_embedded_and_solve_ivp(model, beta, scale):
    n, T = 12, 3.0
    theta0 = _angles(6, n)
    times = np.linspace(0.0, T, 7)
    kw = dict(model=model, beta=beta, usa_scale=scale)
    if model == "kuramoto":
        kw.update(coupling=1.7, omega=np.random.default_rng(7).normal(size=n))
    exact = _solve_ivp(theta0, times, **kw)
    for integrator, dt, tol in (("rk4", 0.005, 1e-7), ("dopri5", 0.01, 1e-7)):
        ang = simulate_angles(theta0, integrator=integrator, dt=dt, T=T, save_times=times,
                              rtol=1e-10, atol=1e-12, **kw)
        np.testing.assert_allclose(ang.theta, exact, atol=tol, err_msg=integrator)
        emb = simulate(n, 2, x0=angles_to_circle(theta0), integrator=integrator, dt=dt,
                       T=T, save_times=times, rtol=1e-10, atol=1e-12, seed=0, **kw)
        # the embedded form knows the angles only modulo 2 pi
        err = _wrap(phases(emb.positions) - exact)
        assert np.abs(err).max() < tol, (integrator, np.abs(err).max())


def test_generalized_coupling_with_omega_matches_solve_ivp():
    # dtheta_i/dt = omega_i + (c/n) sum_j exp(beta cos) sin: USA with frequencies
    n, T = 10, 2.0
    theta0 = _angles(8, n)
    times = np.linspace(0.0, T, 5)
    kw = dict(model="usa", beta=1.5, coupling=0.6, omega=np.linspace(-1, 1, n),
              masses=np.linspace(0.5, 2.0, n))
    ang = simulate_angles(theta0, integrator="dopri5", dt=0.01, T=T, save_times=times,
                          rtol=1e-11, atol=1e-13, **kw)
    np.testing.assert_allclose(ang.theta, _solve_ivp(theta0, times, **kw), atol=1e-8)


@pytest.mark.parametrize("integrator,order", [("rk4", 4), ("dopri5", 5)])
def test_declared_order(integrator, order):
    theta0 = _angles(9, 8)
    kw = dict(model="sa", beta=2.0, coupling=1.3, omega=np.linspace(-0.5, 0.5, 8))
    exact = _solve_ivp(theta0, np.array([0.0, 2.0]), **kw)[-1]
    errs = []
    hs = (0.2, 0.1, 0.05)
    for h in hs:
        if integrator == "rk4":
            traj = simulate_angles(theta0, dt=h, T=2.0, save_times=[2.0], **kw)
        else:
            # huge tolerances accept every step and a save point every h cuts
            # each one to exactly h: fixed steps
            traj = simulate_angles(theta0, integrator="dopri5", dt=h, T=2.0,
                                   save_times=h * np.arange(1, round(2.0 / h) + 1),
                                   rtol=0.5, atol=1e6, **kw)
            assert traj.steps[-1] == round(2.0 / h) and traj.rejected[-1] == 0
        errs.append(np.abs(traj.final - exact).max())
    slope = np.polyfit(np.log(hs), np.log(errs), 1)[0]
    assert slope > order - 0.4, (errs, slope)


def test_dopri5_error_tracks_tolerance_and_counts_steps():
    theta0 = _angles(10, 16)
    kw = dict(model="usa", beta=3.0, coupling=1.0)
    exact = _solve_ivp(theta0, np.array([0.0, 4.0]), **kw)[-1]
    loose = simulate_angles(theta0, integrator="dopri5", T=4.0, save_every=100, rtol=1e-4,
                            atol=1e-6, **kw)
    tight = simulate_angles(theta0, integrator="dopri5", T=4.0, save_every=100, rtol=1e-9,
                            atol=1e-11, **kw)
    assert np.abs(tight.final - exact).max() < 1e-7
    assert np.abs(tight.final - exact).max() < np.abs(loose.final - exact).max()
    assert tight.steps[-1] > loose.steps[-1] > 0
    assert np.all(np.diff(tight.steps) >= 0) and tight.rejected.dtype == np.int64


def test_two_oscillators_exact_solution():
    # equal frequencies: the difference phi obeys phi' = -c sin(phi), so
    # tan(phi/2) = tan(phi0/2) e^{-c t}; the mean phase turns at omega
    c, w, phi0 = 1.3, 0.8, 2.5
    times = np.linspace(0.0, 3.0, 7)
    traj = simulate_angles(np.array([0.0, phi0]), coupling=c, omega=[w, w], dt=0.002, T=3.0,
                           save_times=times)
    phi = 2.0 * np.arctan(np.tan(phi0 / 2) * np.exp(-c * times))
    np.testing.assert_allclose(traj.theta[:, 1] - traj.theta[:, 0], phi, atol=1e-11)
    np.testing.assert_allclose(traj.theta.mean(axis=1), phi0 / 2 + w * times, atol=1e-11)


def test_named_frequencies_are_seeded_and_shared_with_embedded_form():
    n = 40
    theta0 = _angles(11, n)
    a = simulate_angles(theta0, omega="gaussian:0.5:1.0", seed=3, T=0.1, dt=0.01)
    b = simulate_angles(theta0, omega="gaussian:0.5:1.0", seed=3, T=0.1, dt=0.01)
    c = simulate_angles(theta0, omega="gaussian:0.5:1.0", seed=4, T=0.1, dt=0.01)
    np.testing.assert_array_equal(a.omega, b.omega)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert not np.array_equal(a.omega, c.omega) and a.seed == 3
    from particles.config import SimulationConfig
    from particles.fields.kuramoto import natural_frequencies

    cfg = SimulationConfig(n=n, d=2, beta=0.0, model="kuramoto", omega="gaussian:0.5:1.0",
                           seed=3)
    np.testing.assert_array_equal(natural_frequencies(cfg), a.omega)
    fresh = simulate_angles(theta0, omega="uniform:1", T=0.1, dt=0.01)
    assert isinstance(fresh.seed, int)


def test_angle_trajectory_views():
    theta0 = np.array([0.0, 3.0, -2.0])
    traj = simulate_angles(theta0, omega=[7.0, 7.0, 7.0], coupling=0.0, dt=0.01, T=2.0,
                           save_every=20)
    assert isinstance(traj, AngleTrajectory) and traj.frames == 11 and traj.n == 3
    assert "kuramoto" in repr(traj)
    # no coupling: free rotation, continuous phases (several turns)
    np.testing.assert_allclose(traj.theta, theta0 + 7.0 * traj.times[:, None], atol=1e-12)
    assert np.all((traj.wrapped >= 0) & (traj.wrapped < 2 * np.pi))
    np.testing.assert_allclose(traj.positions, angles_to_circle(traj.theta))
    np.testing.assert_array_equal(traj.steps, 20 * np.arange(11))
    op = traj.order_parameter()
    assert op.r.shape == (11,)
    np.testing.assert_allclose(op.r, op.r[0], atol=1e-12)


# ------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(model="transformer"), "model must be one of 'sa', 'usa', 'kuramoto'"),
        (dict(integrator="euler"), "integrator must be one of 'rk4', 'dopri5'"),
        (dict(usa_scale="sqrt"), "usa_scale must be one of"),
        (dict(beta=-1.0), "beta must be"),
        (dict(model="usa", beta=800.0), "usa_scale='n_exp_beta'"),
        (dict(omega="lorentzian:-1"), "omega must be a distribution with a finite width >= 0"),
        (dict(omega="cauchy:1"), "omega must be 'NAME:WIDTH'"),
        (dict(omega="gaussian"), "omega must be 'NAME:WIDTH'"),
        (dict(omega="gaussian:x"), "omega must be 'NAME:WIDTH'"),
        (dict(omega=[1.0, 2.0]), "omega must be 4 finite numbers"),
        (dict(omega=[1.0, 2.0, np.nan, 0.0]), "omega must be 4 finite numbers"),
        (dict(coupling=math.inf), "coupling must be a finite number"),
        (dict(masses=[1.0, 1.0, 0.0, 1.0]), "masses must be"),
        (dict(dt=0.0), "dt must be"),
        (dict(save_times=[0.0, 20.0]), "save_times must be"),
        (dict(seed=-2), "seed must be"),
    ],
)
def test_invalid_arguments_raise_named_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_angles(np.zeros(4), T=1.0, **kwargs)


@pytest.mark.parametrize("theta0", [np.zeros((2, 3)), np.array([]), np.array([0.0, np.inf])])
def test_invalid_initial_phases(theta0):
    with pytest.raises(ValueError, match="theta0 must"):
        simulate_angles(theta0, T=1.0)


def test_step_size_warning_and_failures():
    with pytest.warns(StepSizeWarning, match="dt"):
        simulate_angles(np.zeros(3), omega=[0.0, 0.0, 100.0], dt=0.01, T=0.01)
    with pytest.raises(IntegrationError, match="max_steps"):
        simulate_angles(_angles(12, 5), integrator="dopri5", T=10.0, max_steps=3,
                        model="usa", beta=1.0)
    with pytest.raises(IntegrationError, match="max_steps"):
        simulate_angles(_angles(12, 5), T=1.0, dt=0.01, max_steps=50)


# --------------------------------------------------------------- analysis
def test_unwrap_and_phases_recover_continuous_angles():
    t = np.linspace(0.0, 10.0, 201)
    theta = np.stack((3.0 * t, -2.0 * t + 1.0, 0.5 * np.sin(t)), axis=1)  # (frames, 3)
    np.testing.assert_allclose(unwrap_phases(np.mod(theta, 2 * np.pi)),
                               theta + 2 * np.pi * np.round((np.mod(theta[0], 2 * np.pi)
                                                             - theta[0]) / (2 * np.pi)),
                               atol=1e-12)
    got = phases(angles_to_circle(theta))
    np.testing.assert_allclose(got - got[0], theta - theta[0], atol=1e-12)
    batched = phases(angles_to_circle(theta)[:, None])  # (frames, batch=1, n, 2)
    assert batched.shape == (201, 1, 3)
    with pytest.raises(ValueError, match="positions must have shape"):
        phases(np.zeros((3, 4)))


def test_order_parameter_matches_simulate_observable():
    traj = simulate(64, 2, 1.0, model="sa", T=2.0, dt=0.05, save_every=10, seed=1)
    op = order_parameter_from_positions(traj.positions)
    np.testing.assert_allclose(op.r, traj.observables["order_parameter"], rtol=1e-12)
    op2 = order_parameter(phases(traj.positions))
    np.testing.assert_allclose(op2.r, op.r, atol=1e-13)
    np.testing.assert_allclose(_wrap(op2.psi - op.psi), 0.0, atol=1e-12)
    np.testing.assert_allclose(op.z, np.exp(1j * phases(traj.positions)).mean(axis=1),
                               atol=1e-13)


def test_order_parameter_known_values():
    op = order_parameter(np.array([0.3, 0.3, 0.3]))
    assert op.r == pytest.approx(1.0) and op.psi == pytest.approx(0.3)
    op = order_parameter(2 * np.pi * np.arange(5) / 5)
    assert op.r == pytest.approx(0.0, abs=1e-14)
    # weights: two antipodal points, masses 3 and 1 -> r = 1/2 towards the heavy one
    op = order_parameter(np.array([1.0, 1.0 + np.pi]), masses=[3.0, 1.0])
    assert op.r == pytest.approx(0.5) and op.psi == pytest.approx(1.0)
    with pytest.raises(ValueError, match="masses must be 2"):
        order_parameter(np.array([1.0, 2.0]), masses=[1.0])


def test_frequency_locking_on_known_phases():
    t = np.linspace(0.0, 20.0, 401)
    # 6 oscillators locked at 0.7 (with a bounded wobble), 3 drifting
    locked = 0.7 * t[:, None] + 0.2 * np.sin(3 * t)[:, None] + np.arange(6)
    drift = np.array([-1.0, 2.0, 2.5]) * t[:, None]
    theta = np.concatenate((locked, drift), axis=1)
    lock = FrequencyLocking(0.05)
    with pytest.raises(AttributeError, match="call compute"):
        _ = lock.locked
    assert not hasattr(lock, "frequencies")
    lock.compute(t, theta)
    np.testing.assert_array_equal(lock.locked, [True] * 6 + [False] * 3)
    assert lock.common_frequency == pytest.approx(0.7, abs=0.02)
    assert lock.locked_fraction == pytest.approx(6 / 9)
    assert lock.window == (10.0, 20.0)
    np.testing.assert_allclose(lock.frequencies[6:], [-1.0, 2.0, 2.5])
    whole = FrequencyLocking(0.05, t_start=0.0, t_end=20.0).compute(t, theta)
    assert whole.window == (0.0, 20.0)
    with pytest.raises(ValueError, match="tol must be"):
        FrequencyLocking(0.0)
    with pytest.raises(ValueError, match="at least two frames"):
        FrequencyLocking(0.1, t_start=30.0).compute(t, theta)
    with pytest.raises(ValueError, match="must match"):
        FrequencyLocking(0.1).compute(t, theta[:-1])
