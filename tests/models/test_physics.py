"""Identities and exact solutions from DESIGN.md section 2."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from particles import simulate
from particles.fields.attention import attention_reference
from particles.observables import compute_observables, observables_reference
from particles.observables.pairwise import _circle_beta0, _insertion_points


def _pairs(positions):
    """Off-diagonal inner products per frame: (frames, n(n-1)/2)."""
    n = positions.shape[-2]
    G = np.einsum("fid,fjd->fij", positions, positions)
    iu = np.triu_indices(n, 1)
    return G[:, iu[0], iu[1]]


def _rho_sa(n, beta):
    return lambda _t, r: 2 * (1 - r) * ((n - 1) * r + 1) / (np.exp(beta * (1 - r)) + n - 1)


def _rho_usa(n, beta):
    return lambda _t, r: (2 / n) * np.exp(beta * r) * (1 - r) * ((n - 1) * r + 1)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["sa", "usa"])
@pytest.mark.parametrize("beta", [0.0, 1.0, 4.0])
@pytest.mark.parametrize("n,d,summation", [(4, 6, "direct"), (3, 3, "spectral")])
def test_equiangular_solution(model, beta, n, d, summation):
    T = 3.0
    dt = 0.001 if model == "usa" and beta > 2 else 0.005  # USA speeds grow like e^beta
    traj = simulate(n, d, beta, model=model, init="orthogonal", integrator="rk4", dt=dt,
                    T=T, save_times=np.linspace(0, T, 11), seed=7, summation=summation)
    rho = _pairs(traj.positions)
    # all pairs share one inner product at every frame ...
    assert np.abs(rho - rho[:, :1]).max() < 1e-13
    # ... which solves the scalar ODE of DESIGN.md
    rhs = (_rho_sa if model == "sa" else _rho_usa)(n, beta)
    sol = solve_ivp(rhs, (0, T), [0.0], t_eval=traj.times, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(rho[:, 0], sol.y[0], rtol=0, atol=1e-10)
    if beta == 0.0:
        e = np.exp(2 * traj.times)
        np.testing.assert_allclose(rho[:, 0], (e - 1) / (e + n - 1), rtol=0, atol=1e-10)


def _euler_rho_step(rho, n, beta, h, model):
    """One Transformer layer from an equiangular configuration with inner product rho."""
    if model == "sa":
        Z = np.exp(beta) + (n - 1) * np.exp(beta * rho)
        a, b = np.exp(beta) / Z, np.exp(beta * rho) / Z
    else:
        a, b = np.exp(beta) / n, np.exp(beta * rho) / n
    # u_i = al x_i + ga sum_{j != i} x_j
    al, ga = 1 + h * a, h * b
    uu = al**2 + 2 * al * ga * (n - 1) * rho + ga**2 * ((n - 1) + (n - 1) * (n - 2) * rho)
    uv = (al**2 * rho + 2 * al * ga * (1 + (n - 2) * rho)
          + ga**2 * ((n - 2) + ((n - 1) ** 2 - (n - 2)) * rho))
    return uv / uu


@pytest.mark.slow
@pytest.mark.parametrize("model", ["sa", "usa"])
def test_euler_layer_matches_exact_recursion(model):
    n, d, beta, h = 5, 5, 2.0, 0.05
    traj = simulate(n, d, beta, model=model, init="orthogonal", integrator="euler", dt=h,
                    T=3.0, save_every=1, seed=11)
    rho = _pairs(traj.positions)
    expected = [0.0]
    for _ in range(traj.frames - 1):
        expected.append(_euler_rho_step(expected[-1], n, beta, h, model))
    np.testing.assert_allclose(rho, np.array(expected)[:, None] * np.ones_like(rho),
                               rtol=0, atol=2e-15 * traj.frames)


def _velocity(X, beta, model, V=None):
    Y = attention_reference(X, beta=beta, normalized=model == "sa", V=V)
    return Y - np.einsum("id,id->i", X, Y)[:, None] * X


@pytest.mark.slow
@pytest.mark.parametrize("model", ["sa", "usa"])
@pytest.mark.parametrize("summation", ["direct", "spectral"])
def test_energy_dissipation_formula(model, summation):
    """dE/dt along the simulated flow equals the dissipation of DESIGN.md."""
    n, d, beta, dt = 12, 3, 1.5, 1e-3
    traj = simulate(n, d, beta, model=model, integrator="rk4", dt=dt, save_every=1,
                    T=0.5, seed=5, summation=summation)
    E = traj.observables["energy"]
    k = traj.frames // 2
    dEdt = (E[k + 1] - E[k - 1]) / (2 * dt)  # central difference, O(dt^2)
    X = traj.positions[k]
    v = _velocity(X, beta, model)
    if model == "usa":
        expected = (v**2).sum() / n
    else:
        Z = np.exp(beta * X @ X.T).sum(axis=1)
        expected = (Z * (v**2).sum(axis=1)).sum() / n**2
    assert expected > 0
    assert abs(dEdt - expected) < 1e-5 * expected


@pytest.mark.slow
@pytest.mark.parametrize("model,V,sign", [("sa", None, 1), ("usa", None, 1),
                                          ("sa", "minus_identity", -1),
                                          ("usa", "minus_identity", -1)])
@pytest.mark.parametrize("summation", ["direct", "spectral"])
def test_energy_is_monotone(model, V, sign, summation):
    traj = simulate(24, 3, 2.0, model=model, V=V, integrator="rk4", dt=0.01, T=4.0,
                    save_every=5, seed=2, summation=summation)
    dE = np.diff(traj.observables["energy"])
    assert np.all(sign * dE >= -1e-13), dE.min()
    assert sign * (traj.observables["energy"][-1] - traj.observables["energy"][0]) > 0


@pytest.mark.parametrize("integrator", ["euler", "rk4", "geodesic", "dopri5"])
def test_fixed_points_stay(integrator):
    x = np.array([0.0, 0.6, 0.8])
    for X0 in (np.tile(x, (6, 1)), np.stack([x, -x])):
        traj = simulate(X0.shape[0], 3, 3.0, integrator=integrator, x0=X0, T=2.0, dt=0.1,
                        save_every=5)
        assert np.abs(traj.positions - X0).max() < 1e-14


def test_beta_zero_circle_observables_match_the_pair_loop():
    """At beta = 0 on the circle the observables take O(n log n) (sorted
    angles for the minimum); they must equal the O(n^2) reference, including
    exact antipodes, ties, the seam at angle pi and clustered states."""
    rng = np.random.default_rng(4)
    cases = {
        "uniform": rng.uniform(-np.pi, np.pi, 700),
        "antipodal_pair": np.array([0.3, 0.3 + np.pi, 1.0, 1.2]),
        "seam": np.array([np.pi, -np.pi + 1e-12, 0.0, 1e-9, -1e-9]),
        "two_clusters": np.concatenate([rng.normal(0.2, 1e-3, 300), rng.normal(2.9, 1e-3, 300)]),
        "equispaced": np.linspace(0, 2 * np.pi, 11, endpoint=False),
        "one_point": np.array([0.5]),
        "coincident": np.full(6, -2.0),
    }
    for name, theta in cases.items():
        X = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
        m = rng.uniform(0.5, 2, theta.size)
        ref = observables_reference(X, 0.0, m)
        for B in (1, 3):
            Xb = np.ascontiguousarray(np.broadcast_to(X, (B, *X.shape)))
            # the public entry (sorted angles from CIRCLE_MIN_N tokens on) and
            # the sorted-angle path itself at every size
            for got in (compute_observables(Xb, 0.0, m, nthreads=2), _circle_beta0(Xb, m)):
                for key, value in ref.items():
                    np.testing.assert_allclose(got[key], value, rtol=1e-12, atol=1e-14,
                                               err_msg=f"{key} {name} B={B}")
        # at beta = 0: E_0 = r^2 / 2, and the normalised energy is its beta -> 0 limit, 1
        np.testing.assert_allclose(2 * ref["energy"], ref["order_parameter"] ** 2, rtol=1e-12)
        assert ref["energy_normalized"] == pytest.approx(1.0, rel=1e-14)


def test_rowwise_insertion_points_equal_searchsorted():
    rng = np.random.default_rng(6)
    for B, n in [(1, 1), (1, 5), (4, 100), (50, 7)]:
        ts = np.sort(rng.uniform(-3, 3, (B, n)), axis=1)
        target = rng.uniform(-3, 3, (B, n))
        if n > 2:
            ts[:, 1] = ts[:, 2]  # ties among the sorted values
            target[:, 0] = ts[:, 2]  # and between a target and them
        want = np.stack([np.searchsorted(ts[b], target[b], side="right") for b in range(B)])
        np.testing.assert_array_equal(_insertion_points(ts, target), want)


def test_observables_match_reference():
    rng = np.random.default_rng(9)
    for n, d, beta in [(1, 3, 1.0), (9, 2, 0.0), (40, 5, 3.0), (600, 3, 20.0), (30, 3, 800.0)]:
        X = rng.normal(size=(2, n, d))
        X /= np.linalg.norm(X, axis=-1, keepdims=True)
        m = rng.uniform(0.5, 2, n)
        for B in (1, 2):
            got = compute_observables(np.ascontiguousarray(X[:B]), beta, m, nthreads=2)
            for b in range(B):
                ref = observables_reference(X[b], beta, m)
                for name, value in ref.items():
                    np.testing.assert_allclose(got[name][b], value, rtol=1e-12, atol=1e-14,
                                               err_msg=f"{name} n={n} beta={beta}")
