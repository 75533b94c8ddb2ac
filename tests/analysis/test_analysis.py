"""Analysis objects on constructed configurations with known answers, and
every compiled kernel against its NumPy twin."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from particles.analysis import (
    METHODS,
    ClusterDetector,
    InnerProductHistogram,
    MergeAnalysis,
    MergeTree,
    NotComputedError,
    Scalars,
    analyze,
    component_labels,
    count_clusters,
    find_plateaus,
    find_timescales,
    read_analysis,
    span_dimension,
    track_labels,
    write_analysis,
)
from particles.analysis._pairs import pair_counts, pair_counts_reference
from particles.analysis.clusters import canonical_labels
from particles.analysis.components import component_labels_reference
from particles.analysis.histograms import pair_histogram, pair_histogram_reference
from particles.analysis.scalars import close_pair_fraction, close_pair_fraction_reference
from particles.analysis.tracking import match_frame
from particles.config import SimulationConfig
from particles.observables import observables_reference
from particles.sphere import angles_to_circle, normalize, uniform
from particles.trajectory import Trajectory


def tight_clusters(centers: np.ndarray, sizes, spread: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Tokens in tight clusters around unit ``centers`` (k, d), shuffled.

    Returns the tokens (n, d) and the true cluster index of each token.
    """
    truth = np.repeat(np.arange(len(sizes)), sizes)
    rng.shuffle(truth)
    x = normalize(centers[truth] + spread * rng.normal(size=(truth.size, centers.shape[1])))
    return x, truth


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(canonical_labels(a)[0], canonical_labels(b)[0])


CENTERS3 = normalize(np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [-1.0, -1.0, 0.2]]))
SIZES3 = (5, 3, 7, 2)


# ------------------------------------------------------------------ clusters


@pytest.mark.parametrize("method", list(METHODS))
def test_tight_clusters_at_known_centres(method):
    rng = np.random.default_rng(0)
    x, truth = tight_clusters(CENTERS3, SIZES3, 1e-5, rng)
    det = ClusterDetector(0.05 if method != "gap" else None, method=method).compute(x)
    assert det.num_clusters == 4
    assert same_partition(det.labels, truth)
    # clusters are numbered by their first token: map to the true index
    true_of = np.array([truth[np.flatnonzero(det.labels == k)[0]] for k in range(4)])
    np.testing.assert_array_equal(det.sizes, np.array(SIZES3)[true_of])
    np.testing.assert_allclose(det.centers, CENTERS3[true_of], atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(det.centers, axis=1), 1.0)


def test_clusters_across_the_circle_seam():
    # angles on both sides of 0 = 2 pi form one cluster; another at pi
    theta = np.array([2 * np.pi - 0.01, 0.004, np.pi, 0.012, 2 * np.pi - 0.02, np.pi + 0.01])
    x = angles_to_circle(theta)
    det = ClusterDetector(0.05).compute(x)
    np.testing.assert_array_equal(det.labels, [0, 0, 1, 0, 0, 1])
    np.testing.assert_array_equal(det.sizes, [4, 2])
    # the centre of the seam cluster is its circular mean, near angle 0, not pi
    mean_angle = np.angle(np.exp(1j * theta[[0, 1, 3, 4]]).mean())
    np.testing.assert_allclose(det.centers[0], [np.cos(mean_angle), np.sin(mean_angle)], atol=1e-12)
    for method in ("single_linkage", "gap"):
        other = ClusterDetector(0.05 if method != "gap" else None, method=method).compute(x)
        assert same_partition(other.labels, det.labels)


def test_detector_on_an_ensemble_pads_sizes_and_centres():
    rng = np.random.default_rng(1)
    a, _ = tight_clusters(CENTERS3, SIZES3, 1e-4, rng)  # 4 clusters
    b, _ = tight_clusters(CENTERS3[:2], (9, 8), 1e-4, rng)  # 2 clusters
    det = ClusterDetector().compute(np.stack([a, b]))
    np.testing.assert_array_equal(det.num_clusters, [4, 2])
    assert det.labels.shape == (2, 17)
    assert det.sizes.shape == (2, 4) and det.centers.shape == (2, 4, 3)
    np.testing.assert_array_equal(det.sizes.sum(axis=1), [17, 17])
    np.testing.assert_array_equal(det.sizes[1, 2:], 0)
    assert np.all(np.isnan(det.centers[1, 2:]))
    # any leading axes: (frames, batch, n, d)
    det4 = ClusterDetector().compute(np.stack([a, b])[None].repeat(3, axis=0))
    assert det4.labels.shape == (3, 2, 17) and det4.num_clusters.shape == (3, 2)


@pytest.mark.parametrize("seed", range(4))
def test_components_equal_single_linkage_and_the_numpy_twin(seed):
    rng = np.random.default_rng(seed)
    x = uniform(40, 2 + seed, rng=rng)
    eps = 0.6
    lab = component_labels(x, eps)[0]
    np.testing.assert_array_equal(lab, component_labels_reference(x, eps))
    assert same_partition(ClusterDetector(eps, "single_linkage").compute(x).labels, lab)


def test_results_raise_until_computed_and_settings_are_checked():
    det = ClusterDetector()
    with pytest.raises(NotComputedError, match=r"compute\(\.\.\.\) first"):
        det.labels  # noqa: B018 - the access is the test
    assert not hasattr(MergeAnalysis(), "counts")
    assert not hasattr(InnerProductHistogram(), "counts")
    assert not hasattr(Scalars(1.0), "energy")
    with pytest.raises(ValueError, match="eps"):
        ClusterDetector(0.0)
    with pytest.raises(ValueError, match="method"):
        ClusterDetector(0.1, method="kmeans")
    with pytest.raises(ValueError, match="min_decades"):
        MergeAnalysis(min_decades=0)
    with pytest.raises(ValueError, match="bins"):
        InnerProductHistogram(0)
    with pytest.raises(ValueError, match="shape"):
        ClusterDetector().compute(np.ones(3))
    assert ClusterDetector().compute(np.array([[1.0, 0.0]])).num_clusters == 1
    assert count_clusters(np.array([[1.0, 0.0], [0.0, 1.0]])) == 2


def test_gap_method_finds_a_single_tight_cluster():
    rng = np.random.default_rng(2)
    x, _ = tight_clusters(CENTERS3[:1], (12,), 1e-6, rng)
    assert ClusterDetector(None, method="gap").compute(x).num_clusters == 1


# ------------------------------------------------------------------ tracking

# three clusters on the circle: A (4 tokens), B (2), C (3); B merges into A
# at t = 100, then C into A+B at t = 1e4.
_TOKENS = np.array([0, 0, 2, 1, 0, 2, 1, 0, 2])  # cluster of each token (A=0, B=1, C=2)


def scripted_merge_frames() -> tuple[np.ndarray, np.ndarray]:
    """Positions (frames, 9, 2) and times of the scripted merge."""
    rng = np.random.default_rng(3)
    jitter = 1e-4 * rng.normal(size=(6, 9))
    place = [(0.0, 1.0, 3.0)] * 3 + [(0.0, 0.0, 3.0)] * 2 + [(0.0, 0.0, 0.0)]
    theta = np.array([[place[f][c] for c in _TOKENS] for f in range(6)]) + jitter
    return angles_to_circle(theta), np.array([0.0, 1.0, 10.0, 100.0, 1000.0, 1e4])


def test_scripted_merge_keeps_the_larger_cluster_id():
    x, t = scripted_merge_frames()
    ma = MergeAnalysis(0.05).compute(x, t)
    np.testing.assert_array_equal(ma.counts, [3, 3, 3, 2, 2, 1])
    ids = ma.labels
    a_id, b_id, c_id = ids[0, 0], ids[0, 3], ids[0, 2]
    assert len({a_id, b_id, c_id}) == 3
    for f in range(6):  # A's tokens keep A's id throughout
        assert np.all(ids[f, _TOKENS == 0] == a_id)
    assert np.all(ids[-1] == a_id)
    m1, m2 = ma.merges
    assert (m1.frame, m1.time, m1.into, m1.absorbed, m1.sizes) == (3, 100.0, a_id, (b_id,), (4, 2))
    assert (m2.frame, m2.time, m2.into, m2.absorbed, m2.sizes) == (5, 1e4, a_id, (c_id,), (6, 3))
    assert m2.size_after == 9
    assert ma.splits == []
    tree = ma.trees
    assert isinstance(tree, MergeTree)
    np.testing.assert_array_equal(tree.roots, [a_id])
    np.testing.assert_array_equal(tree.children(a_id), [b_id, c_id])
    assert tree.death[b_id] == 100.0 and tree.parent[c_id] == a_id
    assert tree.size_at_death[a_id] == 9
    assert "merged at t=1e+04" in tree.to_text()


def test_equal_sizes_keep_the_older_id_and_matching_ignores_raw_numbering():
    prev = np.array([5, 5, 2, 2, 7])
    # raw labels of the next frame number the same clusters differently
    ids, merges, splits, nxt = match_frame(prev, np.array([1, 1, 0, 0, 2]), 8)
    np.testing.assert_array_equal(ids, prev)
    assert merges == [] and splits == [] and nxt == 8
    # clusters 5 and 2 (both of size 2) merge: the older id, 2, survives
    ids, merges, _, _ = match_frame(prev, np.array([0, 0, 0, 0, 1]), 8)
    np.testing.assert_array_equal(ids, [2, 2, 2, 2, 7])
    assert merges == [(2, (5,), (2, 2))]


def test_split_gets_a_fresh_id():
    raw = np.array([[0, 0, 0, 0, 1], [0, 0, 1, 1, 2]])
    tr = track_labels(raw, np.array([0.0, 1.0]))
    np.testing.assert_array_equal(tr.ids[1], [0, 0, 2, 2, 1])
    (s,) = tr.splits
    assert (s.parent, s.child, s.size, s.time) == (0, 2, 2, 1.0)


# ------------------------------------------------------------------ time scales


def test_plateaus_and_time_scales_of_a_staircase():
    t = np.array([0.0, 0.1, 1.0, 2.0, 5.0, 30.0, 100.0, 400.0, 3000.0, 10000.0])
    c = np.array([20, 20, 9, 6, 4, 4, 4, 3, 2, 2])
    pl = find_plateaus(t, c, min_decades=1.0, time_unit=1.0)
    assert [p.count for p in pl] == [20, 9, 6, 4, 3, 2]
    # lengths run from the first to the last frame of a plateau, measured from
    # the time unit: t = 0 .. 0.1 is -1 decade
    first = pl[0]
    assert (first.start, first.end, first.log_length, first.long_lived) == (0.0, 1.0, -1.0, False)
    four = pl[3]
    assert (four.start, four.end, four.start_frame, four.end_frame) == (5.0, 400.0, 4, 7)
    assert four.log_length == pytest.approx(np.log10(20)) and four.long_lived
    assert pl[4].log_length == 0.0 and not pl[4].long_lived  # seen in one frame only
    # the last plateau is censored (3000 -> end 1e4, 0.52 decades seen)
    assert pl[-1].censored and not pl[-1].long_lived and not any(p.censored for p in pl[:-1])
    ts = find_timescales(pl)
    assert ts.formation_time == 5.0 and ts.first_merge_time == 400.0
    assert ts.clusters_formed == 4
    assert ts.slow_merge_times == (400.0, 3000.0)
    assert ts.separation == pytest.approx(np.log10(80))
    # stricter: two decades; the longest plateau (5 .. 100) has 1.3
    none = find_timescales(find_plateaus(t, c, min_decades=2.0))
    assert np.isnan(none.formation_time) and none.clusters_formed == 0


def test_merge_analysis_of_an_ensemble():
    x, t = scripted_merge_frames()
    still = np.repeat(x[:1], 6, axis=0)  # a second system that never merges
    ma = MergeAnalysis(0.05).compute(np.stack([x, still], axis=1), t)
    assert ma.counts.shape == (6, 2) and ma.labels.shape == (6, 2, 9)
    np.testing.assert_array_equal(ma.counts[:, 1], 3)
    assert {ev.system for ev in ma.merges} == {0}
    # system 0: 3 clusters seen from 0 to 10 (1 decade from the time unit) -> formed at 0
    np.testing.assert_array_equal(ma.formation_time, [0.0, 0.0])
    assert ma.first_merge_time[0] == 100.0 and np.isnan(ma.first_merge_time[1])
    assert ma.timescales[0].slow_merge_times == (100.0, 1e4)
    assert len(ma.trees) == 2 and len(ma.timescales) == 2


def test_merge_analysis_checks_its_input():
    x, t = scripted_merge_frames()
    with pytest.raises(ValueError, match="times are required"):
        MergeAnalysis().compute(x)
    with pytest.raises(ValueError, match="increasing"):
        MergeAnalysis().compute(x, t[::-1])
    with pytest.raises(ValueError, match="shape"):
        MergeAnalysis().compute(x, t[:2])


# ------------------------------------------------------------------ histograms


@pytest.mark.parametrize("d", [2, 3, 16])
def test_pair_kernel_equals_its_numpy_twin(d):
    rng = np.random.default_rng(d)
    x = uniform(37, d, rng=rng, batch=3)
    for bins, rng_, thr in [(50, (-1.0, 1.0), 0.9), (7, (-0.3, 0.6), -0.2)]:
        hist, close = pair_counts(x, bins, rng_, thr)
        ref_hist, ref_close = pair_counts_reference(x, bins, rng_, thr)
        np.testing.assert_array_equal(hist, ref_hist)
        np.testing.assert_array_equal(close, ref_close)
    np.testing.assert_array_equal(pair_histogram(x, 20), pair_histogram_reference(x, 20))
    np.testing.assert_allclose(close_pair_fraction(x, 0.5), close_pair_fraction_reference(x, 0.5))


def test_histogram_counts_every_pair_once_per_system_and_accumulates():
    rng = np.random.default_rng(4)
    n = 23
    xs = uniform(n, 3, rng=rng, batch=4)
    h = InnerProductHistogram(30).compute(xs)
    assert h.num_pairs == 4 * n * (n - 1) // 2 and h.num_systems == 4
    np.testing.assert_allclose((h.density * np.diff(h.bin_edges)).sum(), 1.0)
    acc = InnerProductHistogram(30)
    for x in xs:
        acc.compute(x, reset=False)
    np.testing.assert_array_equal(acc.counts, h.counts)
    acc.compute(xs[0])  # reset=True by default
    assert acc.num_pairs == n * (n - 1) // 2
    assert h.bin_centers.shape == (30,) and h.bin_edges[0] == -1.0


def test_histogram_of_tight_and_antipodal_clusters():
    # 5 identical tokens at e1, 3 at -e1: 10 + 3 pairs at <,> = 1 (rounding may
    # give 1 + 1e-16: the edge tolerance keeps them), 15 pairs at -1
    x = np.array([[1.0, 0.0, 0.0]] * 5 + [[-1.0, 0.0, 0.0]] * 3)
    h = InnerProductHistogram(4).compute(x)
    np.testing.assert_array_equal(h.counts, [15, 0, 0, 13])
    # a narrower range drops the pairs outside it
    np.testing.assert_array_equal(
        InnerProductHistogram(2, range=(0.0, 1.0)).compute(x).counts, [0, 13]
    )


# ------------------------------------------------------------------ scalars


def test_span_dimension_uses_the_second_moment_matrix():
    rng = np.random.default_rng(5)
    plane = np.zeros((30, 6))
    plane[:, :2] = uniform(30, 2, rng=rng)
    assert span_dimension(plane) == 2
    assert span_dimension(np.eye(8)[:3]) == 3  # orthonormal tokens, n < d
    x, _ = tight_clusters(CENTERS3[:1], (10,), 1e-5, rng)
    assert span_dimension(x) == 1
    assert span_dimension(x, tol=1e-12) == 3
    np.testing.assert_array_equal(span_dimension(np.stack([plane, plane[:, ::-1]])), [2, 2])


def test_scalars_against_observables_and_cluster_sizes():
    rng = np.random.default_rng(6)
    x, _ = tight_clusters(CENTERS3[:3], (6, 3, 1), 1e-6, rng)  # orthogonal centres
    beta = 50.0
    sc = Scalars(beta, delta=1e-3).compute(x)
    ref = observables_reference(x, beta)
    for name in (
        "energy",
        "energy_normalized",
        "order_parameter",
        "min_inner_product",
        "mean_inner_product",
    ):
        assert getattr(sc, name) == pytest.approx(ref[name], rel=1e-10), name
    # far-apart point clusters: normalised energy = sum of squared size fractions
    assert sc.energy_normalized == pytest.approx(0.36 + 0.09 + 0.01, rel=1e-6)
    assert sc.close_pair_fraction == pytest.approx((15 + 3) / 45)
    assert sc.span_dimension == 3
    stack = Scalars(beta).compute(np.stack([x, x])[None].repeat(2, axis=0))
    assert stack.energy.shape == (2, 2) and stack.span_dimension.dtype == np.int64
    assert set(stack.as_dict()) == set(Scalars.NAMES)


# ------------------------------------------------------------------ whole runs and files


def scripted_trajectory() -> Trajectory:
    x, t = scripted_merge_frames()
    config = SimulationConfig(n=9, d=2, beta=20.0, T=1e4, save_times=tuple(t), seed=0)
    obs = {"energy_normalized": np.zeros(6)}
    return Trajectory(times=t, steps=np.arange(6), positions=x, observables=obs, config=config)


def test_analyze_write_read_round_trip(tmp_path):
    res = analyze(scripted_trajectory(), bins=10)
    np.testing.assert_array_equal(res.counts, [3, 3, 3, 2, 2, 1])
    assert res.histograms.shape == (6, 10)
    np.testing.assert_array_equal(res.histograms.sum(axis=1), 36)
    assert res.scalars["energy_normalized"][-1] == pytest.approx(1.0, abs=1e-4)
    text = res.summary()
    assert "formation time 0 (3 clusters); first merge 100\n" in text
    assert "sizes 6 + 3 = 9" in text
    path = tmp_path / "a.h5"
    h5py.File(path, "w").close()
    write_analysis(path, res)
    write_analysis(path, res)  # a rerun replaces the results
    with h5py.File(path, "r") as f:  # issue 15: the trajectory is never written
        assert list(f) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.analysis.h5", "a.h5"]
    with h5py.File(tmp_path / "a.analysis.h5", "r") as f:
        # the shared header (a file kind of its own) and no temporary group left
        assert list(f) == ["analysis", "h5md", "parameters"]
        assert f["parameters"].attrs["kind"] == "analysis"
        g = f["analysis"]
        assert g.attrs["method"] == "components" and g.attrs["batch"] == 0
        np.testing.assert_array_equal(g["merges/absorbed"][()].size, 2)
    back = read_analysis(path)
    np.testing.assert_array_equal(back.counts, res.counts)
    np.testing.assert_array_equal(back.labels, res.labels)
    np.testing.assert_array_equal(back.histograms, res.histograms)
    assert back.merges == res.merges and back.plateaus == res.plateaus
    assert back.timescales == res.timescales and back.settings == res.settings
    with pytest.raises(KeyError, match="particles analyze"):
        path2 = tmp_path / "empty.h5"
        h5py.File(path2, "w").close()
        read_analysis(path2)
