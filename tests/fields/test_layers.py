"""Layers: random weights redrawn every layer_time, shared by a batch or drawn per system."""

from __future__ import annotations

import numpy as np
import pytest

from particles.config import SimulationConfig
from particles.engine import ROWS_PARALLEL_MIN_N, layer_segments, simulate
from particles.fields import attention_reference_of, select_qkv
from particles.fields.kuramoto import KURAMOTO_SLOTS
from particles.fields.weights import draw_layer, draw_weights
from particles.models import build_field


def test_segments_split_at_layer_boundaries():
    assert layer_segments(0.0, 1.0, None) == [(0.0, 1.0, 0)]
    assert layer_segments(0.0, 1.0, 0.4) == [(0.0, 0.4, 0), (0.4, 0.8, 1), (0.8, 1.0, 2)]
    assert layer_segments(0.8, 1.2, 0.4) == [(0.8, 1.2, 2)]


def test_layers_equal_runs_chained_by_hand():
    """Two layers of time 0.5 = a run with layer-0 weights, then one with layer-1 weights."""
    kw = dict(n=6, d=3, beta=1.0, dt=0.05, seed=7, weights="gaussian", value_weights="wwt")
    layered = simulate(**kw, T=1.0, save_every=10, layer_time=0.5)
    assert layered.config.layer_time == 0.5
    first = simulate(**kw, T=0.5, save_every=10)
    np.testing.assert_array_equal(layered.positions[1], first.positions[-1])
    # a plain run of the same length keeps layer 0 and so differs after t = 0.5
    plain = simulate(**kw, T=1.0, save_every=10)
    np.testing.assert_array_equal(plain.positions[1], first.positions[-1])
    assert not np.allclose(layered.positions[2], plain.positions[2])


def test_layer_time_needs_random_weights():
    with pytest.raises(ValueError, match=r"^layer_time must be"):
        SimulationConfig(n=4, d=3, beta=1.0, layer_time=1.0)
    with pytest.raises(ValueError, match=r"^layer_time must be"):
        SimulationConfig(n=4, d=3, beta=1.0, weights="goe", layer_time=0.0)


def _given(Q, K, V) -> dict:
    """Configuration fields that fix one system's single-head weights."""
    return dict(Q=Q[0], K=K[0], V=V[0])


@pytest.mark.parallel
@pytest.mark.parametrize("integrator", ["rk4", "dopri5"])
def test_independent_draws_equal_single_runs_with_those_weights(integrator):
    """System b of an independent batch = a single run with system b's draw as
    given weights, layer after layer (to round-off: the per-system runner is a
    separate compilation, whose reassociated sums may round differently)."""
    kw = dict(n=7, d=3, beta=2.0, dt=0.05, integrator=integrator)
    batch = simulate(**kw, T=1.0, save_every=10, batch=3, seed=11, weights="gaussian",
                     value_weights="wwt", layer_time=0.5, weight_draws="independent")
    assert batch.config.weight_draws == "independent"
    cfg = batch.config
    for b in range(3):
        x = batch.positions[0, b]
        for layer, t1 in enumerate([1, 2]):
            single = simulate(**kw, T=0.5, save_every=10, x0=x,
                              **_given(*draw_weights(cfg, layer, b)))
            np.testing.assert_allclose(single.positions[-1], batch.positions[t1, b],
                                       rtol=0, atol=1e-14)
            x = batch.positions[t1, b]


def test_independent_systems_differ_and_shared_ones_do_not():
    x0 = np.random.default_rng(1).normal(size=(6, 3))
    kw = dict(n=6, d=3, beta=1.0, dt=0.05, T=0.5, save_every=10, seed=3, batch=2,
              x0=np.stack([x0, x0]), weights="goe", value_weights="identity")
    shared = simulate(**kw)
    np.testing.assert_array_equal(shared.positions[:, 0], shared.positions[:, 1])
    independent = simulate(**kw, weight_draws="independent")
    assert not np.allclose(independent.positions[-1, 0], independent.positions[-1, 1])
    # the seed alone fixes every system's weights
    again = simulate(**kw, weight_draws="independent")
    np.testing.assert_array_equal(again.positions, independent.positions)


@pytest.mark.parametrize("extra", [
    dict(weights="gaussian", value_weights="wwt"),
    dict(weights="goe", value_weights="minus_qk", heads=2),
    dict(weights="gaussian", value_weights="qk", kernel="rbf", tau=0.7),
    dict(weights="gaussian", value_weights="identity", normalization="sinkhorn"),
    dict(weights="gaussian", value_weights="wwt", model="usa", heads=3, d=30),
])
def test_selected_parameters_give_each_systems_field(extra):
    """The compiled drift with select_qkv(p, b) equals the NumPy field of system b."""
    cfg = SimulationConfig(**{"n": 9, "d": 4, "beta": 1.5, "seed": 5, "batch": 3,
                              "weight_draws": "independent", **extra})
    field = build_field(cfg)
    assert field.select is select_qkv
    X = np.random.default_rng(2).normal(size=(cfg.n, cfg.d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    Qs, Ks, Vs = draw_layer(cfg, 0)
    assert Qs.shape == (3, cfg.heads, cfg.d, cfg.d)
    for b in range(3):
        out = np.empty_like(X)
        field.serial(X, select_qkv(field.params, b), out, np.empty(field.workspace(1)))
        want = attention_reference_of(cfg, X, Qs[b], Ks[b], Vs[b], cfg.mass_array(),
                                      cfg.model == "sa")
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
        for got, drawn in zip((Qs[b], Ks[b], Vs[b]), draw_weights(cfg, 0, b), strict=True):
            np.testing.assert_array_equal(got, drawn)
    assert not np.array_equal(Qs[0], Qs[1]) or not np.array_equal(Vs[0], Vs[1])


@pytest.mark.parallel
def test_independent_draws_in_the_row_parallel_layout():
    """One large system with its own draw (rows in parallel) = the same system
    run with that draw given."""
    n = ROWS_PARALLEL_MIN_N
    x0 = np.random.default_rng(0).normal(size=(n, 3))
    kw = dict(n=n, d=3, beta=1.0, x0=x0, T=0.02, dt=0.01, save_every=1, integrator="euler")
    own = simulate(**kw, seed=2, weights="gaussian", weight_draws="independent")
    given = simulate(**kw, **_given(*draw_weights(own.config, 0, 0)))
    np.testing.assert_allclose(own.positions, given.positions, rtol=0, atol=1e-15)


def test_weight_draws_is_validated():
    with pytest.raises(ValueError, match=r"^weight_draws must be one of"):
        SimulationConfig(n=4, d=3, beta=1.0, weights="goe", weight_draws="per_head")
    with pytest.raises(ValueError, match=r"^weight_draws must be 'shared'"):
        SimulationConfig(n=4, d=3, beta=1.0, weight_draws="independent")
    with pytest.raises(ValueError, match=r"^weight_draws must be 'shared'"):
        SimulationConfig(n=4, d=2, beta=0.0, model="kuramoto", weight_draws="independent")
    # V = +-Q^T K of given Q and K is fixed: nothing to draw per system or per layer
    for vw in ("qk", "minus_qk"):
        with pytest.raises(ValueError, match=r"^weight_draws must be 'shared'"):
            SimulationConfig(n=4, d=3, beta=1.0, value_weights=vw, weight_draws="independent")
        with pytest.raises(ValueError, match=r"^layer_time must be"):
            SimulationConfig(n=4, d=3, beta=1.0, value_weights=vw, layer_time=0.5)
    cfg = SimulationConfig(n=4, d=3, beta=1.0, value_weights="wwt", weight_draws="independent")
    assert SimulationConfig.from_json(cfg.to_json()) == cfg
    old = cfg.to_dict()
    old.pop("weight_draws")  # files written before the field existed
    assert SimulationConfig.from_dict(old).weight_draws == "shared"


def test_shared_draw_differs_from_every_systems_own():
    cfg = SimulationConfig(n=4, d=3, beta=1.0, weights="gaussian", seed=9, batch=2)
    Q, _, _ = draw_weights(cfg)
    Q0, _, _ = draw_weights(cfg, 0, 0)
    Q1, _, _ = draw_weights(cfg, 0, 1)
    assert not np.array_equal(Q, Q0) and not np.array_equal(Q0, Q1)
    np.testing.assert_array_equal(draw_layer(cfg)[0], Q)


def test_kuramoto_systems_draw_their_own_frequencies():
    """weight_draws="independent" with an omega distribution: system b runs
    with its own frequencies, reproducible from the seed."""
    from particles.fields.kuramoto import (
        natural_frequencies,
        resolve_frequencies,
        speed_bound,
        system_frequencies,
    )

    x0 = np.random.default_rng(3).normal(size=(12, 2))
    kw = dict(n=12, d=2, beta=0.0, model="kuramoto", coupling=1.5, T=2.0, dt=0.01,
              save_every=50, seed=8, integrator="rk4")
    batch = simulate(**kw, batch=3, x0=np.stack([x0] * 3), omega="gaussian:1.0",
                     weight_draws="independent")
    omegas = system_frequencies(batch.config)
    assert omegas.shape == (3, 12) and not np.allclose(omegas[0], omegas[1])
    for b in range(3):
        np.testing.assert_array_equal(
            omegas[b], resolve_frequencies("gaussian:1.0", 12, seed=8, system=b))
        np.testing.assert_array_equal(omegas[b], natural_frequencies(batch.config, b))
        single = simulate(**kw, x0=x0, omega=tuple(omegas[b]))
        np.testing.assert_allclose(single.positions, batch.positions[:, b], rtol=0, atol=1e-13)
    assert speed_bound(batch.config) == 1.5 + np.abs(omegas).max()
    # a single system with its own draw runs with system 0's frequencies
    one = SimulationConfig(**{k: v for k, v in kw.items() if k != "integrator"},
                           omega="gaussian:1.0", weight_draws="independent")
    np.testing.assert_array_equal(natural_frequencies(one), omegas[0])
    np.testing.assert_array_equal(build_field(one).params[KURAMOTO_SLOTS["omega"]][0], omegas[0])
    shared = simulate(**kw, batch=2, x0=np.stack([x0] * 2), omega="gaussian:1.0")
    np.testing.assert_array_equal(shared.positions[:, 0], shared.positions[:, 1])
    with pytest.raises(ValueError, match=r"^weight_draws must be 'shared'"):
        SimulationConfig(n=4, d=2, beta=0.0, model="kuramoto", omega=(0.1, 0.2, 0.3, 0.4),
                         weight_draws="independent")


def test_multihead_and_rbf_blas_paths_get_single_threaded_blas():
    """Numba threads running BLAS blocks must not meet a multi-threaded BLAS
    (the guard matched the plain "blas" path only)."""
    from contextlib import nullcontext

    from particles.engine import blas_guard

    for extra in (dict(heads=2), dict(kernel="rbf"), dict()):
        field = build_field(SimulationConfig(n=8, d=30, beta=1.0, **extra))
        assert "blas" in field.name
        assert not isinstance(blas_guard(field, "rows"), nullcontext)
        assert isinstance(blas_guard(field, "serial"), nullcontext)
