"""Multi-head attention: heads summed before the projection."""

from __future__ import annotations

import numpy as np
import pytest

from particles.config import SimulationConfig
from particles.fields import KERNELS
from particles.models import build_field


def _evaluate(field, X, parallel=False):
    out = np.empty_like(X)
    field_fn = field.parallel if parallel else field.serial
    field_fn(X, field.params, out, np.empty(field.workspace(2 if parallel else 1)))
    return out


@pytest.mark.parametrize("kernel,kw", [("edp", {}), ("rbf", {"tau": 0.7}), ("l2", {"tau": 1.0})])
@pytest.mark.parametrize("d", [3, 6, 30])
def test_identical_heads_equal_single_head_with_scaled_v(kernel, kw, d):
    rng = np.random.default_rng(d)
    n, H = 12, 3
    V = rng.normal(size=(d, d))
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    multi = build_field(SimulationConfig(n=n, d=d, beta=1.5, kernel=kernel, V=V, heads=H, **kw))
    single = build_field(SimulationConfig(n=n, d=d, beta=1.5, kernel=kernel, V=H * V, **kw))
    want = _evaluate(single, X)
    for parallel in (False, True):
        np.testing.assert_allclose(_evaluate(multi, X, parallel), want, rtol=0,
                                   atol=1e-13 * np.abs(want).max())


def test_random_heads_are_independent_and_match_reference():
    n, d = 10, 4
    cfg = SimulationConfig(n=n, d=d, beta=1.0, heads=2, weights="gaussian", seed=2)
    field = build_field(cfg)
    Qs = field.params[KERNELS["edp"].slots["Q"]]
    assert Qs.shape == (2, d, d)
    assert not np.array_equal(Qs[0], Qs[1])
    X = np.random.default_rng(1).normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_allclose(_evaluate(field, X), field.reference(X), rtol=0, atol=1e-13)


@pytest.mark.parallel
def test_multihead_runs_in_a_batch():
    from particles.engine import simulate

    kw = dict(n=6, d=3, beta=1.0, T=0.2, dt=0.05, save_every=2, seed=4, heads=2,
              weights="gaussian", batch=2)
    traj = simulate(**kw)
    assert traj.positions.shape == (3, 2, 6, 3)
    assert np.all(np.isfinite(traj.positions))
