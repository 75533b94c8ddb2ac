"""Random weight ensembles (seeded) and the repulsive flow to the regular simplex."""

from __future__ import annotations

import numpy as np
import pytest

from particles.config import SimulationConfig
from particles.engine import simulate
from particles.fields.weights import QK_WEIGHTS, V_WEIGHTS, draw_weights
from particles.models import build_field


def _cfg(**kw):
    return SimulationConfig(**{"n": 6, "d": 4, "beta": 1.0, "seed": 3, **kw})


def test_draws_follow_the_seed_and_formulas():
    d = 4
    Q, K, V = draw_weights(_cfg(weights="gaussian", value_weights="wwt"))
    Q2, _, V2 = draw_weights(_cfg(weights="gaussian", value_weights="wwt"))
    np.testing.assert_array_equal(Q, Q2)
    np.testing.assert_array_equal(V, V2)
    assert not np.array_equal(Q, draw_weights(_cfg(seed=4, weights="gaussian"))[0])
    assert not np.array_equal(Q, draw_weights(_cfg(weights="gaussian"), layer=1)[0])
    # V = W W^T / sqrt(d) is symmetric positive semi-definite
    np.testing.assert_allclose(V[0], V[0].T)
    assert np.linalg.eigvalsh(V[0]).min() > -1e-12
    Q, K, V = draw_weights(_cfg(weights="goe", value_weights="minus_qk"))
    np.testing.assert_array_equal(Q[0], np.eye(d))
    np.testing.assert_allclose(K[0], K[0].T)
    np.testing.assert_allclose(V[0], -K[0])
    Q, K, V = draw_weights(_cfg(weights="gaussian", value_weights="qk"))
    np.testing.assert_allclose(V[0], Q[0].T @ K[0])
    assert not np.allclose(V[0], V[0].T)  # non-symmetric Q^T K: non-Mercer


@pytest.mark.parametrize("weights", list(QK_WEIGHTS))
@pytest.mark.parametrize("value_weights", list(V_WEIGHTS))
def test_random_weights_field_matches_reference(weights, value_weights):
    cfg = _cfg(weights=weights, value_weights=value_weights)
    field = build_field(cfg)
    X = np.random.default_rng(0).normal(size=(6, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    out = np.empty_like(X)
    field.serial(X, field.params, out, np.empty(field.workspace(1)))
    np.testing.assert_allclose(out, field.reference(X), rtol=0, atol=1e-13)


def test_weights_need_a_seed_and_conflict_with_given_matrices():
    with pytest.raises(ValueError, match="seed must be resolved"):
        build_field(SimulationConfig(n=4, d=3, beta=1.0, weights="goe"))
    with pytest.raises(ValueError, match=r"^weights must be"):
        SimulationConfig(n=4, d=3, beta=1.0, weights="goe", K="minus_identity")
    with pytest.raises(ValueError, match=r"^value_weights must be"):
        SimulationConfig(n=4, d=3, beta=1.0, value_weights="wwt", V="minus_identity")


def test_simulation_with_random_weights_is_reproducible():
    kw = dict(n=8, d=3, beta=1.0, T=0.5, dt=0.05, save_every=5, seed=11, weights="gaussian",
              value_weights="wwt")
    a, b = simulate(**kw), simulate(**kw)
    np.testing.assert_array_equal(a.positions, b.positions)
    assert a.config.weights == "gaussian"


@pytest.mark.parametrize("n,d", [(3, 2), (4, 3), (5, 4)])
def test_repulsive_flow_reaches_the_regular_simplex(n, d):
    """V = -I from random starts, n <= d + 1: all inner products -> -1/(n-1)."""
    traj = simulate(n=n, d=d, beta=1.0, V="minus_identity", T=150.0, dt=0.1,
                    save_every=1500, seed=n, integrator="rk4")
    X = traj.positions[-1]
    G = X @ X.T
    off = G[~np.eye(n, dtype=bool)]
    np.testing.assert_allclose(off, -1.0 / (n - 1), atol=1e-6)
