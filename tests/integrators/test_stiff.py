"""The stiff integrator ``sdirk4``: its compiled attempt against a NumPy twin with an
exact Newton solve, steps unbounded by a stiff linear system, and the plateau of a
metastable circle run, where its clusters contract to round-off and collapse."""

from __future__ import annotations

import numpy as np
import pytest
from kerneltools import linear_rows
from scipy.linalg import expm

from particles import simulate
from particles.config import SimulationConfig
from particles.events import cluster_counts
from particles.integrators import sdirk4
from particles.integrators.driver import STATUS_OK, adaptive_runner
from particles.integrators.noise import NO_KEY, no_keys
from particles.integrators.tableaux import SDIRK4
from particles.models import build_field


def twin_attempt(f, X, h, rtol, atol, sphere=True):
    """NumPy twin of ``sdirk4``'s attempt: every stage solved by Newton with a dense
    central-difference Jacobian to round-off.  Returns (candidate, err)."""
    A, E, g = SDIRK4.a_matrix(), np.array(SDIRK4.e), SDIRK4.gamma
    shape, N = X.shape, X.size
    k = np.zeros((SDIRK4.stages, N))
    x = X.ravel()

    def F(y):
        return f(y.reshape(shape)).ravel()

    for s in range(SDIRK4.stages):
        Z = x + h * (A[s, :s] @ k[:s])
        Y = Z.copy()
        for _ in range(20):
            J = np.empty((N, N))
            for j in range(N):
                e = np.zeros(N)
                e[j] = 1e-6
                J[:, j] = (F(Y + e) - F(Y - e)) / 2e-6
            D = np.linalg.solve(np.eye(N) - h * g * J, Z + h * g * F(Y) - Y)
            Y += D
            if np.abs(D).max() < 1e-15:
                break
        k[s] = (Y - Z) / (h * g)
    err = h * (E @ k)
    sc = atol + rtol * np.maximum(np.abs(x), np.abs(Y)) if sphere else atol + rtol
    out = Y.reshape(shape)
    if sphere:
        out = out / np.linalg.norm(out, axis=1, keepdims=True)
    return out, np.sqrt(np.mean((err / sc) ** 2))


@pytest.mark.parametrize("h", [0.3, 3.0])  # 3: far beyond the error bound
def test_compiled_attempt_equals_numpy_twin(h):
    rng = np.random.default_rng(4)
    n, d, beta = 5, 3, 3.0
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    field = build_field(SimulationConfig(n=n, d=d, beta=beta))

    def tangent(Y):
        V = field.reference(Y)
        return V - np.einsum("id,id->i", Y, V)[:, None] * Y

    attempt = sdirk4.make_attempt(field.serial)
    S = np.empty((sdirk4.STAGES, n, d))
    rtol = atol = 1e-10
    err = attempt(X, 0.0, h, field.params, np.empty(field.workspace(1)), S, rtol, atol,
                  NO_KEY, 0)
    want, want_err = twin_attempt(tangent, X, h, rtol, atol)
    np.testing.assert_allclose(S[-1], want, rtol=0, atol=1e-11)
    assert err == pytest.approx(want_err, rel=1e-3)
    assert np.allclose(np.linalg.norm(S[-1], axis=1), 1, atol=1e-15)


def test_steps_on_a_stiff_linear_system_are_set_by_accuracy_not_stability():
    # eigenvalues -1e4 (a fast transient) and -0.1 (the slow motion) in the flat space
    P = np.array([[1.0, 0.3], [0.2, 1.0]])
    A = P @ np.diag([-1e4, -0.1]) @ np.linalg.inv(P)
    X0 = np.array([[1.0, -0.5], [0.3, 0.8]])
    T = 20.0
    exact = X0 @ expm(T * A).T
    calls = np.zeros(1)
    X = X0.copy()[None]
    stats = np.zeros((1, 3), dtype=np.int64)
    run = adaptive_runner("sdirk4", linear_rows, "serial", space="flat")
    run(X, 0.0, T, np.full(1, 1e-5), (A, calls), 1, 1e-7, 1e-9, 10**6, stats, no_keys(1))
    assert stats[0, 2] == STATUS_OK
    assert np.abs(X[0] - exact).max() < 1e-6
    # an explicit method needs T |lambda_max| / 3 ~ 7e4 steps; this one a few dozen
    assert stats[0, 0] < 150, stats
    assert calls[0] < 60 * (stats[0, 0] + stats[0, 1])


def test_a_metastable_plateau_collapses_to_its_clusters_in_few_steps():
    # circle, SA, beta 9: clusters form by t ~ 30, then sit on plateaus
    times = np.concatenate([[0.0], np.geomspace(1, 1e4, 9)])
    kw = dict(T=1e4, save_times=times, seed=1, dt=0.1)
    stiff = simulate(32, 2, 9.0, integrator="sdirk4", **kw)
    ref = simulate(32, 2, 9.0, integrator="dopri5", rtol=1e-10, atol=1e-12, **kw)
    counts = [cluster_counts(X.reshape(1, 32, 2))[0] for X in stiff.positions]
    assert counts == [cluster_counts(X.reshape(1, 32, 2))[0] for X in ref.positions]
    assert 1 <= counts[-1] < 6
    # the tokens of each cluster coincide (the exact collapse engaged)
    assert len(np.unique(stiff.positions[-1].reshape(32, 2), axis=0)) == counts[-1]
    acc = np.asarray(stiff.observables["accepted_steps"]).ravel()
    # from t = 1e3 on: a decade of plateau in a handful of steps (dopri5: ~3 per unit time)
    assert acc[-1] - acc[-3] < 60, acc
