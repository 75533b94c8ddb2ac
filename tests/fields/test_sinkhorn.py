"""Sinkhorn (doubly stochastic) attention."""

from __future__ import annotations

import numpy as np
import pytest

from particles.config import SimulationConfig
from particles.fields.sinkhorn import sinkhorn_reference
from particles.models import build_field


def _tokens(n, d, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _evaluate(field, X, parallel=False):
    out = np.empty_like(X)
    fn = field.parallel if parallel else field.serial
    fn(X, field.params, out, np.empty(field.workspace(2 if parallel else 1)))
    return out


def test_rows_and_columns_sum_to_one():
    X = _tokens(15, 3)
    tol = 1e-10
    _, A = sinkhorn_reference(X, beta=3.0, iters=1000, tol=tol)
    np.testing.assert_allclose(A.sum(1), 1.0, rtol=0, atol=1e-13)
    np.testing.assert_allclose(A.sum(0), 1.0, rtol=0, atol=tol)


@pytest.mark.parametrize("d", [3, 7])
def test_compiled_matches_reference(d):
    X = _tokens(20, d, seed=d)
    rng = np.random.default_rng(d)
    kw = dict(Q=rng.normal(size=(d, d)) / np.sqrt(d), V=rng.normal(size=(d, d)))
    cfg = SimulationConfig(n=20, d=d, beta=2.0, normalization="sinkhorn", sinkhorn_iters=200,
                           sinkhorn_tol=1e-11, **kw)
    field = build_field(cfg)
    ref = sinkhorn_reference(X, beta=2.0, iters=200, tol=1e-11, Q=cfg.matrix("Q"),
                             V=cfg.matrix("V"))[0]
    for parallel in (False, True):
        np.testing.assert_allclose(_evaluate(field, X, parallel), ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("d", [3, 7, 30])
def test_one_iteration_is_sa(d):
    X = _tokens(25, d, seed=1)
    sa = build_field(SimulationConfig(n=25, d=d, beta=5.0))
    sk = build_field(SimulationConfig(n=25, d=d, beta=5.0, normalization="sinkhorn",
                                      sinkhorn_iters=1))
    np.testing.assert_allclose(_evaluate(sk, X), _evaluate(sa, X), rtol=0, atol=1e-14)
    ref = sinkhorn_reference(X, beta=5.0, iters=1, tol=1e-9)[0]
    np.testing.assert_allclose(ref, sa.reference(X), rtol=0, atol=1e-14)


def test_sinkhorn_is_validated():
    for kw, field in ((dict(model="usa"), "normalization"), (dict(kernel="rbf"), "normalization"),
                      (dict(masses=[1.0, 2.0, 1.0]), "masses"),
                      (dict(sinkhorn_iters=0), "sinkhorn_iters"),
                      (dict(sinkhorn_tol=0.0), "sinkhorn_tol")):
        with pytest.raises(ValueError, match=rf"^{field} must be"):
            SimulationConfig(n=3, d=3, beta=1.0, normalization="sinkhorn", **kw)
