"""Ensembles as first-class results (issue 11, item 5): cluster-count
distributions per frame, censored quantiles of the two time scales,
Kaplan-Meier survival P(T_merge > t), stored in /analysis/ensemble, printed by
``particles analyze`` and drawn as median and quantile bands."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from clitools import invoke, ok
from synthetic import collapsing, write_file

from particles.analysis import analyze
from particles.analysis.ensemble import ensemble_stats, kaplan_meier
from particles.analysis.merges import find_plateaus, find_timescales
from particles.io.analysis import analysis_path
from particles.plotting import make_figure, save_plot


def km_reference(durations, observed, t):
    """Textbook product-limit estimator, evaluated at one time."""
    s = 1.0
    for u in sorted(set(np.asarray(durations)[np.asarray(observed)])):
        if u > t:
            break
        risk = sum(1 for d in durations if d >= u)
        dead = sum(1 for d, e in zip(durations, observed, strict=True) if e and d == u)
        s *= 1 - dead / risk
    return s


def test_kaplan_meier_matches_the_product_limit_formula_with_censoring():
    rng = np.random.default_rng(1)
    d = np.round(rng.exponential(3.0, size=40), 1)
    e = rng.random(40) < 0.7  # censored anywhere, not only at the end
    km = kaplan_meier(d, e)
    for t in (0.0, 0.5, 1.0, 2.0, 3.3, 5.0, 8.0):
        if km.censored and t > km.censor_time:
            continue
        assert km.at(t) == pytest.approx(km_reference(d, e, t), abs=1e-14)
    assert km.censored == int((~e).sum()) and km.systems == 40
    # a quantile is the first time at which 1 - S reaches the level
    q = km.quantile([0.5])[0]
    assert 1 - km.at(q) >= 0.5 - 1e-12 and 1 - km.at(np.nextafter(q, -1)) < 0.5


def test_censored_quantiles_say_beyond_the_run():
    # 4 systems: formations at 1, 1, 2 and never; merges at 2 and 5 (= the end)
    times = np.array([0.0, 1.0, 2.0, 5.0])
    counts = np.array([[5, 5, 5, 5], [3, 3, 2, 2], [2, 3, 2, 1], [1, 2, 2, 1]])
    st = ensemble_stats(times, counts, [1, 1, 2, np.nan], [2, 5, np.nan, np.nan])
    np.testing.assert_array_equal(st.count_values, [1, 2, 3, 5])
    np.testing.assert_array_equal(st.count_systems[2], [1, 2, 1, 0])
    np.testing.assert_array_equal(st.count_systems.sum(axis=1), 4)
    assert st.count_quantiles[1].tolist() == [2, 2, 2, 3, 3]  # integer medians
    np.testing.assert_array_equal(st.formation_quantiles[:4], [1, 1, 1, 2])
    assert np.isnan(st.formation_quantiles[4])  # 95 %: one system never formed
    assert st.not_formed == 1 and st.first_merge.systems == 3 and st.first_merge.censored == 1
    np.testing.assert_allclose(st.first_merge.at([0, 2, 5]), [1, 2 / 3, 1 / 3])
    text = st.table()
    assert "censored 1 of 4 (not formed)" in text
    assert "censored 1 of 3 (formed 2+ clusters, no merge); 1 not formed: left out" in text
    assert "> 5" in text and "P(T_merge > t)" in text


def test_a_system_that_formed_one_cluster_is_not_at_risk_of_a_first_merge():
    """Issue 28, item 1: one cluster cannot merge; it leaves the risk set (its
    own count) instead of being censored at the end."""
    times = np.array([0.0, 1.0, 10.0, 100.0, 1000.0])
    counts = np.array([[5, 1, 1, 1, 1],    # one cluster from t = 1: nothing to merge
                       [5, 3, 3, 3, 2],    # three clusters, a merge at 1000
                       [5, 2, 2, 2, 2],    # two clusters, no merge: censored
                       [5, 4, 3, 2, 1]])   # the count never rests: not formed
    scales = [find_timescales(find_plateaus(times, c)) for c in counts]
    assert [ts.clusters_formed for ts in scales] == [1, 3, 2, 0]
    form = [ts.formation_time for ts in scales]
    merge = [ts.first_merge_time for ts in scales]
    for given in (None, [ts.clusters_formed for ts in scales]):  # read from the counts, or given
        st = ensemble_stats(times, counts.T, form, merge, clusters_formed=given)
        assert (st.one_cluster, st.not_formed) == (1, 1)
        assert (st.first_merge.systems, st.first_merge.censored) == (2, 1)
        np.testing.assert_array_equal(st.first_merge_quantiles, [1000, 1000, 1000, np.nan,
                                                                 np.nan])
    assert "1 formed one cluster and 1 not formed: left out" in st.table()
    # all formed one cluster: nobody at risk, the quantiles are undefined, not "> T"
    st = ensemble_stats(times, np.ones((5, 3), int), [1.0] * 3, [np.nan] * 3)
    assert st.first_merge.systems == 0 and st.one_cluster == 3
    first = next(line for line in st.table().splitlines() if line.startswith("first merge"))
    assert "> 1000" not in first and "3 formed one cluster" in first


def test_analyze_leaves_one_cluster_systems_out_of_the_first_merge_risk_set(tmp_path):
    """The issue's `sweep --beta 2 --n 32 --runs 64 --T 1e5` made small, as an
    ensemble run analysed by `analyze`: the stored risk set against the time
    scales of a direct count of every system's clusters."""
    from scipy.sparse.csgraph import connected_components

    from particles.io import load

    path = tmp_path / "m.h5"
    ok(invoke("simulate", "--beta", "2", "--d", "2", "--n", "8", "--batch", "8",
              "--integrator", "dopri5", "--rtol", "1e-6", "--T", "1e3",
              "--save-times", "log:0.01:1e3:30", "--seed", "3", "--out", path))
    result = invoke("analyze", path)
    ok(result)
    traj = load(path)

    def count(x):
        g = x @ x.T
        k, labels = connected_components(g > np.cos(0.05), directed=False)
        return 0 if np.any((labels[:, None] == labels[None, :]) & (g < 0)) else k

    counts = np.array([[count(x) for x in frame] for frame in traj.positions])  # (F, batch)
    scales = [find_timescales(find_plateaus(traj.times, counts[:, b])) for b in range(8)]
    one = sum(ts.clusters_formed == 1 for ts in scales)
    risk = [ts for ts in scales if ts.clusters_formed >= 2]
    assert one > 0  # at beta = 2 systems gather into one cluster
    with h5py.File(analysis_path(path), "r") as f:
        g = f["analysis/ensemble"]
        assert int(g["first_merge/one_cluster"][()]) == one
        assert int(g["first_merge/systems"][()]) == len(risk)
        assert int(g["first_merge/censored"][()]) == sum(np.isnan(ts.first_merge_time)
                                                          for ts in risk)
    assert f"{one} formed one cluster" in result.output


@pytest.fixture(scope="module")
def ensemble():
    traj = collapsing(3, batch=5)
    return traj, analyze(traj)


def test_analyze_prints_the_distribution_quantiles_and_survival(ensemble, tmp_path):
    traj, _ = ensemble
    path = write_file(tmp_path / "ens.h5", traj)
    result = invoke("analyze", path)
    ok(result)
    out = result.output
    assert "systems by count" in out and "3:5" in out  # five systems with 3 clusters
    assert "time-scale quantiles over 5 systems" in out
    assert "censored 0 of 5 (not formed)" in out
    assert "P(T_merge > t)" in out
    with h5py.File(analysis_path(path), "r") as f:  # the sidecar file
        g = f["analysis/ensemble"]
        np.testing.assert_array_equal(g["count_systems"][()].sum(axis=1), 5)
        np.testing.assert_allclose(g["levels"][()], [0.05, 0.25, 0.5, 0.75, 0.95])
        np.testing.assert_allclose(g["formation_quantiles"][()], 10.0)
        np.testing.assert_allclose(g["first_merge/survival"][()], [0.0])
        assert int(g["first_merge/censored"][()]) == 0


def test_ensemble_clusters_figure_draws_bands_not_every_system(ensemble, tmp_path):
    traj, analysis = ensemble
    fig = make_figure(traj, "clusters", analysis=analysis, system=1)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "median of 5 systems" in labels and "25-75 %" in labels and "5-95 %" in labels
    assert "system 1" in labels
    # median and the marked member, not one staircase per system
    assert len([ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]) == 2
    out = save_plot(traj, "clusters", tmp_path / "c.png", analysis=analysis, dpi=40)
    assert out.stat().st_size > 1000


def test_ensemble_median_formation_counts_the_systems_that_never_formed(tmp_path):
    # three systems: only one forms (a long plateau); the median formation is
    # beyond the run, not the formation time of that one system
    traj = collapsing(3, batch=3)
    x = traj.positions.copy()
    rng = np.random.default_rng(5)
    from particles.sphere import normalize

    x[:, 1:] = normalize(rng.normal(size=(traj.frames, 2, traj.n, 3)))
    for f in range(traj.frames):  # f + 1 tokens at one point: the count changes every frame
        x[f, 1:, : f + 1] = x[f, 1:, :1]
    spread = type(traj)(traj.times, traj.steps, x, {}, traj.config)
    a = analyze(spread)
    assert np.isnan(a.timescales[1].formation_time) and np.isnan(a.timescales[2].formation_time)
    fig = make_figure(spread, "clusters", analysis=a)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "median formation > 1000 (2 of 3 not formed)" in labels
    assert not any(lab.startswith("median formation t=") for lab in labels)
