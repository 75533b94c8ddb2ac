"""A trajectory's segments (``/segments``, :mod:`particles.io.segments`): written
when a file is reopened with other integration settings, folded when one has no
frame of its own, read back by ``read_summary``, ``read_segments`` and ``info``."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from clitools import invoke, ok
from filetools import digest

from particles.config import SimulationConfig
from particles.io import TrajectoryFileError, read_summary
from particles.io.h5md import TrajectoryWriter, read_segments
from particles.trajectory import Frame

CONFIG = SimulationConfig(n=4, d=3, beta=1.0, integrator="euler", dt=0.1, save_every=1,
                          T=0.5, seed=0)


def written(path, config: SimulationConfig = CONFIG, frames: int = 3):
    """A file of ``frames`` frames of random unit vectors, incomplete (no integrator)."""
    writer = TrajectoryWriter.create(path, config)
    times = config.output_times()
    for k in range(frames):
        x = np.random.default_rng(k).normal(size=(1, config.n, config.d))
        x /= np.linalg.norm(x, axis=-1, keepdims=True)
        r = np.linalg.norm(x.mean(axis=1), axis=-1)
        writer.append(Frame(k, k, float(times[k]), x, {"order_parameter": r}))
    writer.close(complete=False)
    return path


def reopened(path, config: SimulationConfig, frames: int = 0):
    """Reopen ``path`` going on with ``config``, append ``frames`` frames, close it."""
    writer = TrajectoryWriter.reopen(path, config=config)
    start = writer.frames
    times = config.output_times()
    for k in range(start, start + frames):
        x = np.tile(np.eye(config.d)[:1], (1, config.n, 1))
        obs = {"order_parameter": np.ones(1)}
        if config.integrator == "dopri5":
            obs |= {"accepted_steps": np.full(1, 2.0 * k), "rejected_steps": np.zeros(1)}
        writer.append(Frame(k, k, float(times[k]), x, obs))
    writer.close(complete=False)


def test_a_file_never_changed_has_no_segments(tmp_path):
    path = written(tmp_path / "r.h5")
    reopened(path, CONFIG.replace(T=0.8), frames=1)  # an extension: no segment
    reopened(path, CONFIG.replace(T=0.8, max_wall=5.0), frames=1)  # a stop: none
    assert read_segments(path) == () and read_summary(path).segments == ()
    with h5py.File(path) as f:
        assert "segments" not in f


def test_a_change_is_one_row_and_the_stored_configuration(tmp_path):
    path = written(tmp_path / "r.h5")
    reopened(path, CONFIG.replace(rtol=1e-8, atol=1e-12), frames=2)
    (seg,) = read_segments(path)
    assert (seg.frame, seg.time) == (2, pytest.approx(0.2))
    assert seg.changes == {"rtol": (1e-6, 1e-8), "atol": (1e-9, 1e-12)}
    assert seg.written.endswith("+00:00")
    assert read_summary(path).config.rtol == 1e-8
    with h5py.File(path) as f:
        assert {k: f["segments"][k].dtype.kind for k in f["segments"]} == {
            "frame": "i", "time": "f", "changes": "O", "written": "O"}
    reopened(path, CONFIG.replace(rtol=1e-8, atol=1e-12), frames=1)  # the same: none
    reopened(path, CONFIG, frames=0)  # the original again: another row
    first, second = read_segments(path)
    assert first == seg
    assert second.frame == 5 and second.changes == {"rtol": (1e-8, 1e-6),
                                                    "atol": (1e-12, 1e-9)}


def test_a_segment_without_a_frame_is_folded_into_the_next(tmp_path):
    path = written(tmp_path / "r.h5")
    reopened(path, CONFIG.replace(rtol=1e-8))  # killed before its first frame
    (pending,) = read_summary(path).segments
    assert pending.frame == 2
    lines = invoke("info", path)
    ok(lines)
    assert "  1  no frame of its own yet (from t = 0.2, " in lines.output
    reopened(path, CONFIG.replace(rtol=1e-8, collapse_tol=0.0))
    (folded,) = read_segments(path)
    assert folded.changes == {"rtol": (1e-6, 1e-8), "collapse_tol": (CONFIG.collapse_tol, 0.0)}
    reopened(path, CONFIG)  # the changes cancel: as if never changed
    assert read_segments(path) == () and read_summary(path).config == CONFIG
    with h5py.File(path) as f:
        assert "segments" not in f


@pytest.mark.parametrize("positions", ["all", "final"])
def test_a_switch_to_adaptive_steps_adds_their_counts(tmp_path, positions):
    path = written(tmp_path / "r.h5", CONFIG.replace(positions=positions))
    adaptive = CONFIG.replace(integrator="dopri5", positions=positions)
    reopened(path, adaptive, frames=2)
    summary = read_summary(path)
    assert summary.frames == 5 and "accepted_steps" in summary.observables
    assert summary.time == pytest.approx(0.4)
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["observables/accepted_steps/value"][:],
                                      [0, 0, 0, 6, 8])
        np.testing.assert_array_equal(f["observables/rejected_steps/value"][:], np.zeros(5))
        clock = f["observables/order_parameter"]  # the counts share the frames' clock
        assert f["observables/accepted_steps/time"] == clock["time"]
        assert f["observables/accepted_steps/step"] == clock["step"]


def test_a_damaged_segments_group_is_refused_in_one_line(tmp_path):
    path = written(tmp_path / "r.h5")
    reopened(path, CONFIG.replace(rtol=1e-8), frames=1)
    before = digest(path)
    with h5py.File(path, "r+") as f:
        del f["segments/written"]
    with pytest.raises(TrajectoryFileError, match="/segments is not four datasets"):
        read_summary(path)
    with h5py.File(path, "r+") as f:
        f["segments"].create_dataset("written", data=np.array(["x"], dtype=object),
                                     dtype=h5py.string_dtype(), maxshape=(None,))
        f["segments/changes"][0] = "not json"
    with pytest.raises(TrajectoryFileError, match="row 0 does not hold the changes"):
        read_segments(path)
    assert digest(path) != before
