"""A sweep's ensemble statistics against a direct count of clusters per system
(issue 28, item 2): the stored positions of every system are counted here
with SciPy and NumPy, and the spread states of the sweep file must follow
from those counts."""

from __future__ import annotations

import h5py
import numpy as np
from clitools import invoke, ok
from scipy.sparse.csgraph import connected_components

from particles.sweep import load

EPS = 0.05


def direct_count(x: np.ndarray, eps: float = EPS) -> int:
    """Clusters of one system (n, d): the eps-linked components, or 0 (spread)
    when two tokens of one component are more than 90 degrees apart."""
    g = x @ x.T
    k, labels = connected_components(g > np.cos(eps), directed=False)
    same = labels[:, None] == labels[None, :]
    return 0 if np.any(same & (g < 0)) else int(k)


def test_a_uniform_state_is_spread_not_one_cluster(tmp_path):
    """The issue's `sweep --beta 9 --n 1000 --T 1`: 1000 tokens round the
    circle are one eps-linked component spanning it, which is no cluster;
    stored as spread (0 clusters), so neither a single cluster at t = 0 nor a
    mean of 1 cluster."""
    out = tmp_path / "b.h5"
    ok(invoke("sweep", "--beta", "9", "--d", "2", "--n", "1000", "--runs", "2", "--T", "1",
              "--dt", "0.1", "--integrator", "euler", "--save-every", "5", "--seed", "1",
              "--positions", "--processes", "1", "--out", out))
    ds = load(out)
    with h5py.File(out, "r") as f:
        positions = f["sweep/systems/positions"][0]
        stored = f["sweep/systems/cluster_count"][0]
    counts = np.array([[direct_count(x) for x in system] for system in positions])
    assert np.all(counts[:, 0] == 0)  # both starts are spread
    assert np.array_equal(stored, counts)
    first_one = [ds.time.values[c == 1][0] if np.any(c == 1) else np.inf for c in counts]
    np.testing.assert_array_equal(ds.single_cluster_time.values.ravel(), first_one)
    spread = (counts == 0).mean(axis=0)
    np.testing.assert_array_equal(ds.spread_fraction.values.ravel(), spread)
    clustered = [c[c > 0] for c in counts.T]
    mean = [c.mean() if c.size else np.nan for c in clustered]
    np.testing.assert_array_equal(ds.cluster_mean.values.ravel(), mean)
    # the fractions of systems by count and the spread ones make up the ensemble
    total = ds.cluster_distribution.sum("clusters").values.ravel() + spread
    np.testing.assert_allclose(total, 1.0)
