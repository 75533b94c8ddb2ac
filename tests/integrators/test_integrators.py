"""Measured convergence orders match the declared ones; adaptive control works."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from particles import simulate
from particles._numba import jit
from particles.config import SimulationConfig
from particles.integrators import INTEGRATORS, steppers
from particles.integrators.driver import STATUS_OK, adaptive_runner, compiled_step
from particles.integrators.noise import NO_KEY, no_keys
from particles.models import build_field


@jit
def linear_drift(X, p, out, ws):
    """y_i = A x_i with A skew-symmetric: a rotation, tangent, exact solution expm(tA)."""
    A = p[0]
    n, d = X.shape
    for i in range(n):
        for a in range(d):
            s = 0.0
            for b in range(d):
                s += A[a, b] * X[i, b]
            out[i, a] = s


def _skew(d, rng):
    G = rng.normal(size=(d, d))
    return G - G.T


def _order(errors, hs):
    slope = np.polyfit(np.log(hs), np.log(errors), 1)[0]
    return slope


#: per integrator: step sizes where the error is well above round-off, below instability
STEPS = {
    "euler": [0.02, 0.01, 0.005, 0.0025],
    "geodesic": [0.04, 0.02, 0.01, 0.005],
    "rk4": [0.2, 0.1, 0.05, 0.025],
    "dopri5": [0.1, 0.05, 0.025, 0.0125],
    "sdirk4": [0.2, 0.1, 0.05, 0.025],
    # the stochastic steppers with noise 0: their deterministic orders
    "em": [0.02, 0.01, 0.005, 0.0025],
    "heun": [0.04, 0.02, 0.01, 0.005],
}


def _fixed_steps(integrator, drift, X0, p, h, T):
    # the compiled step driven from Python: cheaper to compile than a runner
    X = X0.copy()
    n, d = X.shape
    step = compiled_step(integrator, drift)
    S = np.empty((INTEGRATORS[integrator].stages, n, d))
    ws = np.empty(64 + 4 * n * d)
    nsteps = round(T / h)
    if INTEGRATORS[integrator].stochastic:
        p = (*p, 0.0)  # sigma = 0, the last parameter of a stochastic stepper
    for _ in range(nsteps):
        step(X, 0.0, T / nsteps, p, ws, S, NO_KEY, 0)
    return X


# the steppers: an integrator with phases (auto) runs theirs, each measured here
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(steppers()))
def test_order_linear_skew_field(name):
    rng = np.random.default_rng(0)
    d, n, T = 4, 3, 1.0
    A = 0.5 * _skew(d, rng)
    X0 = rng.normal(size=(n, d))
    X0 /= np.linalg.norm(X0, axis=1, keepdims=True)
    exact = X0 @ expm(T * A).T
    hs = STEPS[name]
    errors = [np.abs(_fixed_steps(name, linear_drift, X0, (A,), h, T) - exact).max() for h in hs]
    order = _order(errors, hs)
    declared = INTEGRATORS[name].order
    assert abs(order - declared) < 0.3, (name, order, errors)


def _sa_reference(X0, beta, T):
    n, d = X0.shape
    field = build_field(SimulationConfig(n=n, d=d, beta=beta))

    def rhs(_t, y):
        X = y.reshape(n, d)
        Y = field.reference(X)
        return (Y - np.einsum("id,id->i", X, Y)[:, None] * X).ravel()

    sol = solve_ivp(rhs, (0, T), X0.ravel(), method="DOP853", rtol=1e-13, atol=1e-15)
    return sol.y[:, -1].reshape(n, d), field


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(steppers()))
def test_order_small_sa_system(name):
    rng = np.random.default_rng(1)
    n, d, beta, T = 5, 3, 2.0, 1.0
    X0 = rng.normal(size=(n, d))
    X0 /= np.linalg.norm(X0, axis=1, keepdims=True)
    exact, field = _sa_reference(X0, beta, T)
    hs = STEPS[name]
    errors = [
        np.abs(_fixed_steps(name, field.serial, X0, field.params, h, T) - exact).max()
        for h in hs
    ]
    order = _order(errors, hs)
    assert abs(order - INTEGRATORS[name].order) < 0.35, (name, order, errors)


def test_adaptive_meets_tolerance_and_scales():
    rng = np.random.default_rng(2)
    n, d, beta, T = 6, 3, 3.0, 2.0
    X0 = rng.normal(size=(n, d))
    X0 /= np.linalg.norm(X0, axis=1, keepdims=True)
    exact, field = _sa_reference(X0, beta, T)
    run = adaptive_runner("dopri5", field.serial, "batch")
    errs, steps = [], []
    for tol in (1e-5, 1e-8, 1e-11):
        X = X0.copy()[None]
        stats = np.zeros((1, 3), dtype=np.int64)
        run(X, 0.0, T, np.full(1, 0.1), field.params, field.workspace(1), tol, tol, 10**6,
            stats, no_keys(1))
        assert stats[0, 2] == STATUS_OK
        errs.append(np.abs(X[0] - exact).max())
        steps.append(stats[0, 0])
        assert np.allclose(np.linalg.norm(X[0], axis=1), 1, atol=1e-14)
    assert errs[0] < 1e-3 and errs[1] < 1e-6 and errs[2] < 1e-9, errs
    assert errs[0] > errs[1] > errs[2]
    assert steps[0] < steps[1] < steps[2]


def test_adaptive_reports_max_steps():
    with pytest.raises(Exception, match="max_steps"):
        simulate(8, 3, 1.0, integrator="dopri5", T=5.0, rtol=1e-12, atol=1e-12,
                 max_steps=5, seed=0)


@pytest.mark.parametrize("name", sorted(INTEGRATORS))
def test_norms_stay_one(name):
    traj = simulate(30, 4, 5.0, integrator=name, T=3.0, dt=0.05, save_every=10, seed=3,
                    rtol=1e-6, atol=1e-9)
    norms = np.linalg.norm(traj.positions, axis=-1)
    assert np.abs(norms - 1).max() < 1e-12
