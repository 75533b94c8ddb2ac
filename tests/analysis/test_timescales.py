"""The compiled time scales of many cluster-count series against their NumPy twin,
the plateaus of each series (:mod:`particles.analysis.merges`)."""

from __future__ import annotations

import numpy as np

from particles.analysis.merges import find_plateaus, find_timescales, timescales


def test_timescales_of_many_series_match_find_timescales_of_each():
    rng = np.random.default_rng(0)
    times = np.concatenate([[0.0], np.logspace(-2, 3, 40)])
    counts = np.maximum(1, 6 - np.cumsum(rng.random((50, 41)) < 0.08, axis=1))
    counts[:5] = counts[:5, :1]  # constant series: censored at once
    counts[5:15, :25] = 0  # spread for decades: no formation (issue 28)
    counts[15:18] = 0  # spread to the end
    form, merge = timescales(times, counts)
    assert np.isnan(form[15:18]).all() and np.isfinite(form[5:15]).any()
    for b in range(counts.shape[0]):
        ts = find_timescales(find_plateaus(times, counts[b]))
        np.testing.assert_equal([form[b], merge[b]], [ts.formation_time, ts.first_merge_time])
    empty = timescales(times[:0], counts[:, :0])
    assert np.isnan(empty).all() and empty[0].shape == (50,)
