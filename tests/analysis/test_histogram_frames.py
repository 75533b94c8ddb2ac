"""Per-frame histograms (issue 11, item 11): ``InnerProductHistogram`` over
the frames of a run; a frame axis is never pooled silently."""

from __future__ import annotations

import numpy as np
import pytest
from synthetic import collapsing

from particles.analysis import InnerProductHistogram, pair_histogram


def test_histogram_of_a_trajectory_is_one_histogram_per_frame():
    traj = collapsing(3, batch=2)
    h = InnerProductHistogram(10).compute(traj)
    assert h.counts.shape == (traj.frames, 10) and h.per_frame
    n = traj.n
    np.testing.assert_array_equal(h.num_pairs, np.full(traj.frames, 2 * n * (n - 1) // 2))
    ref = pair_histogram(traj.positions.reshape(-1, n, 3), 10).reshape(traj.frames, 2, 10)
    np.testing.assert_array_equal(h.counts, ref.sum(axis=1))
    np.testing.assert_allclose((h.density * np.diff(h.bin_edges)).sum(axis=1), 1.0)
    np.testing.assert_array_equal(h.times, traj.times)
    # the same from an array, when the frame axis is said explicitly
    arr = InnerProductHistogram(10).compute(traj.positions, frames=True)
    np.testing.assert_array_equal(arr.counts, h.counts)
    # accumulation per frame
    acc = InnerProductHistogram(10).compute(traj).compute(traj, reset=False)
    np.testing.assert_array_equal(acc.counts, 2 * h.counts)


def test_histogram_refuses_to_pool_a_frame_axis_silently():
    x = collapsing(3, batch=2).positions  # (frames, batch, n, d)
    with pytest.raises(ValueError, match="frame"):
        InnerProductHistogram(10).compute(x)
    with pytest.raises(ValueError, match="frames"):
        InnerProductHistogram(10).compute(x[0, 0], frames=True)
    h = InnerProductHistogram(10).compute(x[0])  # (systems, n, d): pooled, as documented
    assert h.counts.shape == (10,) and h.num_systems == 2
    with pytest.raises(ValueError, match="accumulate"):
        h.compute(x, reset=False, frames=True)
