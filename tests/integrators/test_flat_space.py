"""The flat space: the angle form runs on the sphere's integrators and runners.

Flat RK4 and DOPRI5 reach their declared orders on a linear system with an
exact solution; flat DOPRI5 reuses its last stage (FSAL) and measures errors
against ``atol + rtol``; ``simulate_angles`` is exactly the shared runner on
the angle drift; sphere-only integrators refuse the flat space.
"""

from __future__ import annotations

import numpy as np
import pytest
from kerneltools import linear_rows
from scipy.linalg import expm

from particles.circle import ANGLE_INTEGRATORS, AngleTrajectory, simulate_angles
from particles.fields.angle import angle_drift, angle_params, angle_workspace
from particles.integrators import INTEGRATORS, steppers
from particles.integrators.driver import (
    STATUS_OK,
    adaptive_runner,
    compiled_step,
    fixed_runner,
)
from particles.integrators.noise import NO_KEY, no_keys

STEPS = {"rk4": [0.2, 0.1, 0.05, 0.025], "dopri5": [0.2, 0.1, 0.05, 0.025],
         "sdirk4": [0.2, 0.1, 0.05, 0.025]}


# the steppers (auto chooses among them at save points and has no step of its own)
@pytest.mark.parametrize("name", sorted(set(ANGLE_INTEGRATORS) & set(steppers())))
def test_flat_orders_on_linear_system(name):
    rng = np.random.default_rng(0)
    d, n, T = 3, 4, 1.0
    A = rng.normal(size=(d, d))  # not skew: the state leaves every sphere
    X0 = rng.normal(size=(n, d))
    exact = X0 @ expm(T * A).T
    step = compiled_step(name, linear_rows, "flat")
    errors = []
    for h in STEPS[name]:
        X = X0.copy()
        S = np.empty((INTEGRATORS[name].stages, n, d))
        p = (A, np.zeros(1))
        for k in range(round(T / h)):
            step(X, k * h, h, p, np.empty(1), S, NO_KEY, k)
        errors.append(np.abs(X - exact).max())
    order = np.polyfit(np.log(STEPS[name]), np.log(errors), 1)[0]
    assert abs(order - INTEGRATORS[name].order) < 0.35, (name, order, errors)


def test_flat_dopri5_fsal_and_tolerance():
    rng = np.random.default_rng(1)
    d, n, T = 2, 3, 2.0
    A = rng.normal(size=(d, d))
    X0 = 10.0 * rng.normal(size=(n, d))  # large coordinates: the flat norm ignores |x|
    exact = X0 @ expm(T * A).T
    errs = []
    for tol in (1e-6, 1e-9):
        calls = np.zeros(1)
        X = X0.copy()[None]
        stats = np.zeros((1, 3), dtype=np.int64)
        hs = np.full(1, 0.1)
        run = adaptive_runner("dopri5", linear_rows, "serial", space="flat")
        run(X, 0.0, T, hs, (A, calls), 1, tol, tol, 10**6, stats, no_keys(1))
        assert stats[0, 2] == STATUS_OK
        attempts = stats[0, 0] + stats[0, 1]
        # first same as last: six evaluations per attempt plus the first stage
        assert calls[0] == 6 * attempts + 1
        errs.append(np.abs(X[0] - exact).max())
        assert hs[0] > 0  # the proposed next step comes back
    assert errs[0] < 1e-3 and errs[1] < 1e-6 and errs[1] < errs[0]
    # on the sphere there is no reuse: seven evaluations per attempt
    calls = np.zeros(1)
    Xs = X0 / np.linalg.norm(X0, axis=1, keepdims=True)
    stats = np.zeros((1, 3), dtype=np.int64)
    adaptive_runner("dopri5", linear_rows, "serial")(
        Xs[None].copy(), 0.0, T, np.full(1, 0.1), (A - A.T, calls), 1, 1e-6, 1e-6, 10**6,
        stats, no_keys(1))
    assert calls[0] == 7 * (stats[0, 0] + stats[0, 1])


@pytest.mark.parametrize("name", ["euler", "geodesic"])
def test_sphere_only_integrators_refuse_flat(name):
    assert "flat" not in INTEGRATORS[name].spaces
    with pytest.raises(ValueError, match="sphere"):
        compiled_step(name, linear_rows, "flat")


@pytest.mark.parametrize("model", ["kuramoto", "sa", "usa"])
def test_simulate_angles_is_the_shared_runner(model):
    rng = np.random.default_rng(2)
    n = 25
    theta0 = rng.uniform(0.0, 2.0 * np.pi, n)
    omega = rng.normal(size=n)
    traj = simulate_angles(theta0, model=model, beta=1.5, coupling=0.8, omega=omega,
                           dt=0.01, T=0.2, save_every=5, parallel=False)
    X = theta0.reshape(1, n, 1).copy()
    run = fixed_runner("rk4", angle_drift(model, False), "serial", space="flat")
    p = angle_params(n, 1.5, 0.8, omega, "n", None)
    for k in range(4):
        t0, t1 = traj.times[k], traj.times[k + 1]
        run(X, t0, 5, (t1 - t0) / 5, p, angle_workspace(n), no_keys(1), 5 * k)
        np.testing.assert_array_equal(traj.theta[k + 1], X[0, :, 0])
    np.testing.assert_array_equal(traj.steps, [0, 5, 10, 15, 20])


def test_angle_trajectory_is_built_from_the_engine_result():
    theta0 = np.array([0.0, 0.5, 2.0])
    traj = simulate_angles(theta0, integrator="dopri5", T=1.0, save_every=10, dt=0.05)
    assert isinstance(traj, AngleTrajectory)
    assert traj.steps[0] == 0 and np.all(np.diff(traj.steps) >= 0) and traj.steps[-1] > 0
    assert traj.theta.shape == (traj.frames, 3) and traj.theta.flags.c_contiguous
