"""Tidy tables (issue 11, item 8): ``Trajectory.to_xarray()`` and
``AnalysisResult.to_dataframe()``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from synthetic import collapsing

from particles.analysis import analyze


def test_to_xarray_labels_every_axis_and_keeps_the_config():
    traj = collapsing(3, batch=2)
    ds = traj.to_xarray()
    assert ds["position"].dims == ("time", "system", "token", "coordinate")
    np.testing.assert_array_equal(ds["position"].values, traj.positions)
    np.testing.assert_array_equal(ds["time"].values, traj.times)
    np.testing.assert_array_equal(ds["step"].values, traj.steps)
    assert json.loads(ds.attrs["config"])["n"] == 12 and ds.attrs["beta"] == 10.0
    assert ds.attrs["model"] == "sa" and ds.attrs["complete"] == 1
    one = collapsing(2).to_xarray()
    assert one["position"].dims == ("time", "token", "coordinate")
    # observables become variables on (time[, system])
    t = collapsing(2)
    obs = type(t)(t.times, t.steps, t.positions, {"energy": np.arange(t.frames, dtype=float)},
                  t.config)
    assert obs.to_xarray()["energy"].dims == ("time",)


def test_analysis_to_dataframe_gives_tidy_tables():
    traj = collapsing(3, batch=2)
    a = analyze(traj)
    merges = a.to_dataframe("merges")
    rows = sum(len(ev.absorbed) for ev in a.merges)
    assert len(merges) == rows
    assert list(merges.columns) == ["system", "frame", "time", "into", "absorbed", "size_into",
                                    "size_absorbed", "phase"]
    assert set(merges["phase"]) == {"fast", "slow"}
    ts = a.to_dataframe("timescales")
    assert ts["formation_time"].tolist() == [10.0, 10.0] and len(ts) == 2
    pl = a.to_dataframe("plateaus")
    assert len(pl) == len(a.plateaus) and pl["censored"].dtype == bool
    frames = a.to_dataframe("frames")
    assert len(frames) == traj.frames * 2
    np.testing.assert_array_equal(frames["cluster_count"], a.counts.reshape(-1))
    assert "energy_normalized" in frames.columns
    with pytest.raises(ValueError, match="table"):
        a.to_dataframe("nope")
