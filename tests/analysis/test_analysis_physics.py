"""Metastability on the circle: clusters form fast, then merge slowly.

SA with n = 32 tokens, beta = 9, d = 2, from uniform tokens (DESIGN.md
section 2): the tokens gather into a few clusters by t ~ 10, and these
persist for times of order exp(c beta) before merging.  Six systems, saved
at logarithmically spaced times up to T = 1e4; dopri5 takes large steps on
the plateaus, so the whole run costs a few seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

import particles
from particles.analysis import MergeAnalysis, analyze

pytestmark = pytest.mark.slow  # a long physics validation (README: Tests)

SAVE_TIMES = np.concatenate([[0.0], np.logspace(-1, 4, 51)])


@pytest.fixture(scope="module")
def metastable_run():
    return particles.simulate(
        32,
        2,
        9.0,
        integrator="dopri5",
        rtol=1e-4,
        atol=1e-7,
        T=1e4,
        save_times=SAVE_TIMES,
        seed=1,
        batch=6,
    )


def test_formation_is_much_faster_than_the_first_merge(metastable_run):
    ma = MergeAnalysis(eps=0.05, min_decades=1.0).compute(metastable_run)
    formation, first_merge = ma.formation_time, ma.first_merge_time
    assert np.all(np.isfinite(formation))
    # fast scale: clusters form by t ~ 10 (median), several of them
    assert np.median(formation) < 50
    assert all(ts.clusters_formed >= 2 for ts in ma.timescales)
    # slow scale: most systems merge again, long after formation
    merged = np.isfinite(first_merge)
    assert merged.sum() >= 3
    assert np.all(first_merge[merged] >= 10 * formation[merged])
    assert np.all(first_merge[merged] > 100)
    # the count only ever drops, and ends at 2 or 3 clusters
    assert np.all(np.diff(ma.counts, axis=0) <= 0)
    assert np.all((ma.counts[-1] >= 2) & (ma.counts[-1] <= 3))
    # the slow merges are the merge events after the formation time
    for ts in ma.timescales:
        slow = [
            ev.time for ev in ma.merges if ev.system == ts.system and ev.time > ts.formation_time
        ]
        assert tuple(sorted(set(slow))) == ts.slow_merge_times


def test_energy_staircase_rises_at_each_slow_merge(metastable_run):
    res = analyze(metastable_run)
    e = res.scalars["energy_normalized"]  # (frames, batch)
    # SA increases the energy (up to the loose tolerance of the run)
    assert np.all(np.diff(e, axis=0) > -1e-6)
    for ts in res.timescales:
        for t in ts.slow_merge_times:
            f = int(np.searchsorted(res.times, t))
            # a merge of two clusters is a visible step of the staircase
            assert e[f, ts.system] - e[f - 1, ts.system] > 0.05
