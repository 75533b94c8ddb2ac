"""A sweep's ensemble statistics against a direct count of clusters per system
(issue 28, items 1 and 2): the stored positions of every system are counted
here with SciPy and NumPy, and the time scales, the first-merge risk set and
the spread states of the sweep file must follow from those counts."""

from __future__ import annotations

import h5py
import numpy as np
from clitools import invoke, ok
from scipy.sparse.csgraph import connected_components

from particles.analysis.merges import find_plateaus, find_timescales
from particles.sweep import load

EPS = 0.05


def direct_count(x: np.ndarray, eps: float = EPS) -> int:
    """Clusters of one system (n, d): the eps-linked components, or 0 (spread)
    when two tokens of one component are more than 90 degrees apart."""
    g = x @ x.T
    k, labels = connected_components(g > np.cos(eps), directed=False)
    same = labels[:, None] == labels[None, :]
    return 0 if np.any(same & (g < 0)) else int(k)


def first_merge_quantile(durations: list[float], q: float) -> float:
    """Quantile of first-merge times censored only at the end (NaN: not seen):
    the first event time at which the fraction of merged systems reaches q."""
    events = np.sort([t for t in durations if np.isfinite(t)])
    for m, t in enumerate(events, start=1):
        if m / len(durations) >= q - 1e-12:
            return float(t)
    return np.inf


def test_systems_that_formed_one_cluster_leave_the_first_merge_risk_set(tmp_path):
    """The issue's `sweep --beta 2:8:7 --n 32 --runs 64 --T 1e5` made small: at
    beta = 2 every system forms one cluster, which cannot merge; it is counted
    as such, not as censored at T, and the first-merge quantiles come from the
    systems that formed two or more."""
    out = tmp_path / "m.h5"
    ok(invoke("sweep", "--beta", "2,8", "--d", "2", "--n", "8", "--runs", "8",
              "--integrator", "dopri5", "--rtol", "1e-6", "--T", "1e3",
              "--save-times", "log:0.01:1e3:30", "--seed", "3", "--positions",
              "--processes", "1", "--out", out))
    ds = load(out)
    with h5py.File(out, "r") as f:
        positions = f["sweep/systems/positions"][()]  # (points, runs, F, n, d)
    times = ds.time.values
    seen_one = seen_risk = 0
    for p, beta in enumerate(ds.beta.values):
        counts = np.array([[direct_count(x) for x in system] for system in positions[p]])
        stored = ds.sel(beta=beta)
        with h5py.File(out, "r") as f:
            assert np.array_equal(f["sweep/systems/cluster_count"][p], counts)
        scales = [find_timescales(find_plateaus(times, c)) for c in counts]
        one = sum(ts.clusters_formed == 1 for ts in scales)
        risk = [ts.first_merge_time for ts in scales if ts.clusters_formed >= 2]
        assert int(stored.first_merge_one_cluster) == one
        assert int(stored.first_merge_censored) == sum(np.isnan(t) for t in risk)
        expected = [first_merge_quantile(risk, q) if risk else np.nan
                    for q in ds["quantile"].values]
        np.testing.assert_array_equal(stored.first_merge_time.values, expected)
        seen_one += one
        seen_risk += len(risk)
    # both cases are exercised: systems that formed one cluster, and systems at risk
    assert seen_one > 0 and seen_risk > 0
    result = invoke("info", out)
    ok(result)
    assert "formed one cluster" in result.output


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


def test_a_spectral_sweep_gives_the_direct_sweep_statistics(tmp_path):
    """summation is a sweep option: the same systems summed spectrally give the
    same cluster counts at every save time and, with the Euler layer (which
    evaluates on the sphere, where the series are exact), positions to round-off."""
    runs = {}
    for summation in ("direct", "spectral"):
        out = tmp_path / f"{summation}.h5"
        ok(invoke("sweep", "--beta", "4,9", "--d", "2", "--n", "48", "--runs", "3", "--T", "20",
                  "--dt", "0.1", "--integrator", "euler", "--save-every", "50", "--seed", "5",
                  "--summation", summation, "--positions", "--processes", "1", "--out", out))
        with h5py.File(out, "r") as f:
            runs[summation] = (f["sweep/systems/positions"][()],
                               f["sweep/systems/cluster_count"][()])
    np.testing.assert_allclose(runs["spectral"][0], runs["direct"][0], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(runs["spectral"][1], runs["direct"][1])
