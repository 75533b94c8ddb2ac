"""Layers: random weights redrawn every layer_time (shared across the batch)."""

from __future__ import annotations

import numpy as np
import pytest

from particles.config import SimulationConfig
from particles.simulate import _layer_segments, simulate


def test_segments_split_at_layer_boundaries():
    assert _layer_segments(0.0, 1.0, None) == [(0.0, 1.0, 0)]
    assert _layer_segments(0.0, 1.0, 0.4) == [(0.0, 0.4, 0), (0.4, 0.8, 1), (0.8, 1.0, 2)]
    assert _layer_segments(0.8, 1.2, 0.4) == [(0.8, 1.2, 2)]


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
