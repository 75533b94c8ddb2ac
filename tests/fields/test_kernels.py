"""Attention kernels (rbf, l2, quadratic, intersection) against their NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

from particles.config import SimulationConfig
from particles.engine import simulate
from particles.fields import BLAS_MIN_D, KERNELS
from particles.fields.kernels import kernel_attention_reference
from particles.models import build_field


def _tokens(rng, n, d):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _evaluate(field, X, parallel):
    out = np.empty_like(X)
    ws = np.empty(field.workspace(2 if parallel else 1))
    (field.parallel if parallel else field.serial)(X, field.params, out, ws)
    return out


_PARAMS = {"edp": {"beta": 2.0}, "rbf": {"tau": 0.8}, "l2": {"tau": 1.5},
           "intersection": {"beta": 3.0}, "quadratic": {"gamma": 0.4}}


def test_registry_covers_design_table():
    assert set(KERNELS) == {"edp", "rbf", "l2", "intersection", "quadratic"}


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("d", [3, 5, BLAS_MIN_D])
@pytest.mark.parametrize("model", ["sa", "usa"])
def test_kernel_matches_direct_reference(kernel, d, model):
    rng = np.random.default_rng(d)
    n = 17
    X = _tokens(rng, n, d)
    kw = dict(_PARAMS[kernel])
    beta = kw.pop("beta", 1.0)
    cfg = SimulationConfig(n=n, d=d, beta=beta, model=model, kernel=kernel,
                           Q=rng.normal(size=(d, d)) / np.sqrt(d),
                           K=rng.normal(size=(d, d)) / np.sqrt(d),
                           V=rng.normal(size=(d, d)), masses=rng.uniform(0.5, 2, n), **kw)
    field = build_field(cfg)
    # the oracle is the kernel's own formula, not the transformed edp path
    param = {"edp": beta, "intersection": beta}.get(kernel) or next(iter(kw.values()))
    ref = kernel_attention_reference(X, kernel, param, normalized=model == "sa",
                                     Q=cfg.matrix("Q"), K=cfg.matrix("K"), V=cfg.matrix("V"),
                                     masses=cfg.mass_array())
    for parallel in (False, True):
        np.testing.assert_allclose(_evaluate(field, X, parallel), ref, rtol=0,
                                   atol=1e-13 * np.abs(ref).max())


def test_rbf_reference_is_formula():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 4))
    W = np.exp(-0.3 * ((X[:, None] - X[None]) ** 2).sum(-1))
    np.testing.assert_allclose(kernel_attention_reference(X, "rbf", 0.3),
                               W @ X / W.sum(1, keepdims=True), rtol=1e-13)
    W = 0.3 * np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    np.testing.assert_allclose(kernel_attention_reference(X, "l2", 0.3, normalized=False),
                               W @ X / 6, rtol=1e-13)


def test_rbf_equals_edp_on_the_sphere_at_every_step():
    """exp(beta<x,y>) = e^beta exp(-(beta/2)|x-y|^2) on the sphere: SA cannot tell."""
    common = dict(n=24, d=3, beta=4.0, T=2.0, dt=0.01, save_every=20, seed=5)
    edp = simulate(**common)
    rbf = simulate(**common, kernel="rbf", tau=2.0)
    # the drifts agree to round-off on every state the run visits ...
    f_edp, f_rbf = build_field(edp.config), build_field(rbf.config)
    for X in edp.positions:
        np.testing.assert_allclose(_evaluate(f_rbf, X, False), _evaluate(f_edp, X, False),
                                   rtol=0, atol=2e-15)
    # ... so the trajectories differ only by accumulated round-off (200 rk4 steps)
    np.testing.assert_allclose(rbf.positions, edp.positions, rtol=0, atol=1e-10)


@pytest.mark.parametrize("kernel,kw", [("l2", {"tau": 1.0}), ("quadratic", {"gamma": 0.0})])
@pytest.mark.parametrize("model", ["sa", "usa"])
def test_zero_weight_rows_do_not_move(kernel, kw, model):
    """A row of zero weights has no softmax: documented y_i = 0."""
    d, n = 3, 5
    x = np.array([0.0, 0.6, 0.8])
    extra = {}
    if kernel == "l2":
        X = np.tile(x, (n, 1))  # every key equals every query: |q - k| = 0
    else:
        X = _tokens(np.random.default_rng(2), n, d)
        extra = {"K": np.zeros((d, d))}  # <q, k> + gamma = 0 everywhere
    field = build_field(SimulationConfig(n=n, d=d, beta=1.0, model=model, kernel=kernel,
                                         **kw, **extra))
    for parallel in (False, True):
        got = _evaluate(field, X, parallel)
        assert np.all(np.isfinite(got))
        assert np.all(got == 0.0)
    np.testing.assert_array_equal(field.reference(X), 0.0)


def test_kernel_parameters_are_validated():
    with pytest.raises(ValueError, match=r"^tau must be"):
        SimulationConfig(n=3, d=3, beta=1.0, tau=2.0)
    with pytest.raises(ValueError, match=r"^gamma must be"):
        SimulationConfig(n=3, d=3, beta=1.0, kernel="rbf", gamma=2.0)
    with pytest.raises(ValueError, match=r"^tau must be"):
        SimulationConfig(n=3, d=3, beta=1.0, kernel="rbf", tau=-1.0)
    with pytest.raises(ValueError, match=r"^usa_scale must be"):
        SimulationConfig(n=3, d=3, beta=1.0, kernel="l2", model="usa", usa_scale="n_exp_beta")
    with pytest.raises(ValueError, match=r"^beta must be"):
        SimulationConfig(n=3, d=3, beta=1.0, kernel="rbf", model="usa", tau=500.0)
    cfg = SimulationConfig(n=3, d=3, beta=1.0, kernel="quadratic", gamma=-0.5)
    assert SimulationConfig.from_json(cfg.to_json()) == cfg
    old = cfg.to_dict()
    for key in ("tau", "gamma", "weights", "value_weights", "heads", "normalization",
                "sinkhorn_iters", "sinkhorn_tol", "layer_time"):
        old.pop(key)
    assert SimulationConfig.from_dict({**old, "kernel": "edp"}).heads == 1
