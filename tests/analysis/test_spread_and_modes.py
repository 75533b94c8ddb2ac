"""Spread states, the mass-weighted count and the Fourier mode (issue 28, item 2):
a uniform state on the circle is spread (stored as 0 clusters, not 1) by the
one rule every consumer reads, and the two large-n diagnostics match a direct
count."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from clitools import invoke, ok
from scipy.sparse.csgraph import connected_components
from synthetic import write_file

import particles
from particles.analysis import ClusterDetector, analyze, count_clusters
from particles.analysis.clusters import mass_counts
from particles.analysis.modes import fourier_modes
from particles.io.analysis import analysis_path

EPS = 0.05


def direct(x: np.ndarray, eps: float = EPS) -> tuple[int, np.ndarray]:
    """Clusters of one system (n, d) counted with SciPy: 0 (spread) when two
    tokens of one component are more than 90 degrees apart; and the labels."""
    g = x @ x.T
    k, labels = connected_components(g > np.cos(eps), directed=False)
    same = labels[:, None] == labels[None, :]
    return (0 if np.any(same & (g < 0)) else int(k)), labels


def direct_mass_count(x: np.ndarray, masses: np.ndarray, fraction: float) -> int:
    k, labels = direct(x)
    if k == 0:
        return 0
    held = np.array([masses[labels == c].sum() for c in np.unique(labels)])
    return int(np.sum(held >= fraction * masses.sum() - 1e-12))


def direct_mode(x: np.ndarray, masses: np.ndarray, max_mode: int) -> tuple[int, float]:
    theta = np.arctan2(x[:, 1], x[:, 0])
    c = [abs(np.sum(masses * np.exp(1j * k * theta)) / masses.sum())
         for k in range(1, max_mode + 1)]
    return int(np.argmax(c)) + 1, float(max(c))


def circle(theta: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)


@pytest.fixture(scope="module")
def uniform_run():
    """The issue's `sweep --beta 9 --d 2 --n 1000 --T 1 --dt 0.1 --integrator
    euler --save-every 5` as a run of two systems."""
    return particles.simulate(1000, 2, 9.0, integrator="euler", dt=0.1, T=1.0, save_every=5,
                              batch=2, seed=1)


def test_a_uniform_state_is_spread_and_stored_as_0_clusters(uniform_run, tmp_path):
    traj = uniform_run
    res = analyze(traj)
    counts = np.array([[direct(x)[0] for x in frame] for frame in traj.positions])
    assert np.all(counts[0] == 0)  # 1000 tokens round the circle: one chain, no cluster
    np.testing.assert_array_equal(res.counts, counts)
    np.testing.assert_array_equal(res.spread, counts == 0)
    # every detector reads the one rule
    det = ClusterDetector(EPS).compute(traj.positions)
    np.testing.assert_array_equal(det.num_clusters, counts)
    np.testing.assert_array_equal(det.spread, counts == 0)
    np.testing.assert_array_equal(count_clusters(traj.positions[0], EPS), counts[0])
    assert all(np.isnan(ts.formation_time) for ts in res.timescales)  # spread is no formation
    # the file stores the spread frames as 0 clusters, with the two diagnostics
    path = tmp_path / "b.h5"
    write_file(path, traj)
    ok(invoke("analyze", path))
    with h5py.File(analysis_path(path), "r") as f:
        np.testing.assert_array_equal(f["analysis/cluster_count"][()], counts)
        assert f["analysis/fourier/mode"].shape == counts.shape
        assert int(f["analysis/mass_count"][0].max()) == 0


def test_mass_weighted_count_matches_a_direct_count():
    rng = np.random.default_rng(3)
    n = 100
    sizes = [40, 30, 20, 5, 3, 1, 1]  # three big clusters, two small ones, stragglers
    centres = rng.uniform(0, 2 * np.pi, len(sizes))
    theta = np.concatenate([c + 1e-3 * rng.standard_normal(s) for c, s in zip(centres, sizes,
                                                                                 strict=True)])
    x = circle(theta)[None]
    masses = rng.uniform(0.5, 2.0, n)
    labels, counts = ClusterDetector(EPS).compute(x).labels, count_clusters(x, EPS)
    for fraction, m in ((0.05, np.ones(n)), (0.01, np.ones(n)), (0.2, masses), (0.04, masses)):
        got = mass_counts(labels, counts, m, fraction)
        assert got.tolist() == [direct_mass_count(x[0], m, fraction)]
    assert mass_counts(labels, counts, None, 0.05).tolist() == [4]  # 40, 30, 20 and 5 of 100
    # spread: no clusters at all, whatever their mass
    ring = circle(np.linspace(0, 2 * np.pi, 400, endpoint=False))[None]
    assert mass_counts(ClusterDetector(EPS).compute(ring).labels, count_clusters(ring, EPS),
                       None, 0.01).tolist() == [0]


def test_fourier_mode_matches_a_direct_sum():
    rng = np.random.default_rng(4)
    # four equal clusters equally spaced: mode 4 (not its multiples), modulus about 1
    theta = (np.arange(200) % 4) * np.pi / 2 + 1e-3 * rng.standard_normal(200) + 0.3
    mode, modulus = fourier_modes(circle(theta))
    assert int(mode) == 4 and modulus == pytest.approx(1.0, abs=1e-5)
    # one point: |c_k| = 1 for every k, mode 1
    assert int(fourier_modes(circle(np.full(7, 0.4)))[0]) == 1
    # random systems, weighted, against the direct sum
    # uniform systems, and systems gathered round k = 1 .. 5 equally spaced centres
    k = rng.integers(1, 6, (30, 1))
    gathered = 2 * np.pi * rng.integers(0, 5, (30, 50)) / k + 0.3 * rng.standard_normal((30, 50))
    x = circle(np.where(np.arange(30)[:, None] % 2, gathered, rng.uniform(0, 2 * np.pi, (30, 50))))
    masses = rng.uniform(0.5, 2.0, 50)
    mode, modulus = fourier_modes(x, 12, masses)
    for s in range(30):
        k, c = direct_mode(x[s], masses, 12)
        assert int(mode[s]) == k and modulus[s] == pytest.approx(c, rel=1e-12)
    # modes up to n only: n tokens show at most n clusters
    assert fourier_modes(circle(rng.uniform(0, 2 * np.pi, (5, 3))), 64)[0].max() <= 3


def test_analyze_prints_spread_the_mass_count_and_the_mode(uniform_run, tmp_path):
    traj = uniform_run
    path = tmp_path / "u.h5"
    write_file(path, traj)
    result = invoke("analyze", path, "--mass-fraction", "0.2", "--max-mode", "8")
    ok(result)
    out = result.output
    assert "mode k" in out and ">=20%" in out
    assert "spread" in out
