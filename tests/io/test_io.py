"""H5MD trajectory files: layout (checked with pyh5md and plain h5py), round
trips, resume, safe replacement, and clear errors for files we cannot read."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pyh5md
import pytest
from filetools import digest, partials

import particles.runs.run as run_module
from particles.config import SimulationConfig
from particles.engine import IntegrationError, run
from particles.io import (
    SCHEMA_VERSION,
    OutputPathError,
    RunFailed,
    RunInterrupted,
    TrajectoryFileError,
    load,
    read_summary,
)
from particles.runs import run_to_file

# small runs; euler is the cheapest integrator to compile
CONFIG = SimulationConfig(
    n=8, d=3, beta=1.0, integrator="euler", dt=0.01, T=0.3, save_every=5, seed=7
)


def assert_same(traj, ref) -> None:
    """Bit-identical trajectories."""
    np.testing.assert_array_equal(traj.times, ref.times)
    np.testing.assert_array_equal(traj.steps, ref.steps)
    np.testing.assert_array_equal(traj.positions, ref.positions)
    assert traj.observables.keys() == ref.observables.keys()
    for k in ref.observables:
        np.testing.assert_array_equal(traj.observables[k], ref.observables[k])
    assert traj.config == ref.config


@pytest.fixture(scope="module")
def reference():
    """The uninterrupted in-memory run of CONFIG."""
    return run(CONFIG)


@pytest.fixture(scope="module")
def written(tmp_path_factory, reference):
    """CONFIG written to a file once (read-only for the tests)."""
    path = tmp_path_factory.mktemp("written") / "run.h5"
    run_to_file(CONFIG, path)
    return path


def interrupt_after(monkeypatch, frames: int, exc=KeyboardInterrupt) -> None:
    """Make the next run raise ``exc`` once ``frames`` frames have been yielded."""
    real = run_module.iter_frames

    def interrupted(*args, **kwargs):
        for i, frame in enumerate(real(*args, **kwargs)):
            if i == frames:
                raise exc
            yield frame

    monkeypatch.setattr(run_module, "iter_frames", interrupted)


# ------------------------------------------------------------ round trips
def test_load_equals_in_memory_run(written, reference):
    traj = load(written)
    assert_same(traj, reference)
    assert traj.complete
    assert traj.positions.shape == (len(CONFIG.output_times()), 8, 3)


def test_run_to_file_returns_summary(tmp_path, reference):
    summary = run_to_file(CONFIG, tmp_path / "a.h5")
    assert summary.path == tmp_path / "a.h5"
    assert summary.complete and summary.frames == summary.frames_expected == reference.frames
    assert summary.time == pytest.approx(CONFIG.T)
    np.testing.assert_array_equal(summary.final, reference.final)
    assert summary.final_observables["energy"] == reference.observables["energy"][-1]
    assert summary.cluster_count() >= 1
    assert partials(tmp_path) == []


def test_ensemble_layout(tmp_path):
    config = CONFIG.replace(batch=2)
    path = tmp_path / "ens.h5"
    run_to_file(config, path)
    frames = len(config.output_times())
    with h5py.File(path, "r") as f:
        assert f["particles/tokens/position/value"].shape == (frames, 2, 8, 3)
        for name in f["observables"]:
            assert f["observables"][name]["value"].shape == (frames, 2)
    traj = load(path)
    assert traj.batch == 2 and traj.positions.shape == (frames, 2, 8, 3)
    assert_same(traj, run(config))


def test_batch_of_one_keeps_the_batch_axis(tmp_path):
    config = CONFIG.replace(batch=1, T=0.1)
    run_to_file(config, tmp_path / "b1.h5")
    assert load(tmp_path / "b1.h5").positions.shape[1:] == (1, 8, 3)


def test_given_positions(tmp_path):
    x0 = np.random.default_rng(0).normal(size=(8, 3))
    summary = run_to_file(CONFIG.replace(T=0.1), tmp_path / "x0.h5", x0=x0)
    traj = load(summary.path)
    assert traj.config.init == "array"
    np.testing.assert_allclose(traj.positions[0], x0 / np.linalg.norm(x0, axis=1, keepdims=True))


def test_bad_x0_fails_before_any_file(tmp_path):
    with pytest.raises(ValueError, match="x0 must have shape"):
        run_to_file(CONFIG, tmp_path / "x.h5", x0=np.ones((3, 3)))
    assert list(tmp_path.iterdir()) == []


def test_unresolved_seed_is_recorded(tmp_path):
    summary = run_to_file(CONFIG.replace(seed=None, T=0.1), tmp_path / "s.h5")
    assert summary.config.seed is not None
    with h5py.File(summary.path, "r") as f:
        assert f["parameters"].attrs["seed"] == str(summary.config.seed)


# ----------------------------------------------------------------- layout
def test_h5md_layout_read_by_pyh5md(written):
    frames = len(CONFIG.output_times())
    with pyh5md.File(written, "r") as f:
        assert list(f["h5md"].attrs["version"]) == [1, 1]
        assert f["h5md/author"].attrs["name"]
        assert f["h5md/creator"].attrs["name"] == "particles"
        assert f["h5md/creator"].attrs["version"]
        tokens = f["particles/tokens"]
        box = tokens["box"]
        assert box.attrs["dimension"] == 3
        assert [b.decode() if isinstance(b, bytes) else b for b in box.attrs["boundary"]] == [
            "none"
        ] * 3
        position = pyh5md.element(tokens, "position")
        assert position.element_type == "TimeElement"
        assert position.value.shape == (frames, 8, 3)
        assert position.step.shape == position.time.shape == (frames,)
        np.testing.assert_allclose(position.time[:], CONFIG.output_times())
        for name in f["observables"]:
            element = pyh5md.element(f["observables"], name)
            assert element.element_type == "TimeElement"
            assert element.value.shape == (frames,)
            np.testing.assert_array_equal(element.step[:], position.step[:])


def test_observables_share_step_and_time(written):
    with h5py.File(written, "r") as f:
        pos = f["particles/tokens/position"]
        assert set(f["observables"]) >= {"energy", "order_parameter"}
        for name in f["observables"]:
            for key in ("step", "time"):
                # hard links: the very same HDF5 object
                assert f["observables"][name][key].id == pos[key].id
        assert pos["value"].dtype == np.float64 and pos["step"].dtype == np.int64
        assert pos["value"].maxshape == (None, 8, 3) and pos["value"].chunks is not None


def test_parameters_group(written):
    import numba

    with h5py.File(written, "r") as f:
        params = f["parameters"]
        assert params.attrs["particles_schema"] == SCHEMA_VERSION == 1
        assert params.attrs["complete"] == 1
        assert SimulationConfig.from_json(params.attrs["config"]) == CONFIG
        assert json.loads(params.attrs["config"])["seed"] == 7
        assert params.attrs["seed"] == "7"
        versions = dict(params["versions"].attrs)
        assert versions["numpy"] == np.__version__
        assert versions["numba"] == numba.__version__
        assert versions["h5py"] == h5py.__version__
        assert {"particles", "hdf5", "python"} <= set(versions)


# ---------------------------------------------------- never clobber a file
def test_existing_file_is_not_overwritten(tmp_path):
    path = tmp_path / "keep.h5"
    path.write_bytes(b"precious")
    with pytest.raises(OutputPathError, match="exists"):
        run_to_file(CONFIG, path)
    assert path.read_bytes() == b"precious"
    assert partials(tmp_path) == []


def test_overwrite_replaces(tmp_path, reference):
    path = tmp_path / "old.h5"
    path.write_bytes(b"old")
    run_to_file(CONFIG, path, overwrite=True)
    assert_same(load(path), reference)


@pytest.mark.parametrize("kind", ["interrupt", "error"])
def test_failure_before_first_frames_keeps_old_file(tmp_path, monkeypatch, written, kind):
    path = tmp_path / "old.h5"
    path.write_bytes(written.read_bytes())
    before = digest(path)
    if kind == "interrupt":
        interrupt_after(monkeypatch, 1)
        with pytest.raises(RunInterrupted) as info:
            run_to_file(CONFIG, path, overwrite=True)
    else:
        with pytest.raises(RunFailed) as info:
            run_to_file(CONFIG.replace(max_steps=3), path, overwrite=True)
    assert info.value.summary is None
    assert digest(path) == before
    assert partials(tmp_path) == []


@pytest.mark.parametrize("directory", ["missing", "is_dir"])
def test_bad_output_paths(tmp_path, directory):
    path = tmp_path / "nowhere" / "x.h5" if directory == "missing" else tmp_path
    with pytest.raises(OutputPathError):
        run_to_file(CONFIG, path)


# ------------------------------------------------- failures keep the file
def test_integration_error_keeps_incomplete_file(tmp_path):
    path = tmp_path / "fail.h5"
    with pytest.raises(IntegrationError, match="max_steps") as info:
        run_to_file(CONFIG.replace(max_steps=12), path)  # frames 0, 1, 2 fit
    assert isinstance(info.value, RunFailed)
    summary = info.value.summary
    assert summary is not None and not summary.complete and summary.frames == 3
    traj = load(path)
    assert not traj.complete and traj.frames == 3
    with h5py.File(path, "r") as f:
        assert f["parameters"].attrs["complete"] == 0


def test_error_in_first_chunk_keeps_initial_frame_when_nothing_existed(tmp_path):
    path = tmp_path / "first.h5"
    with pytest.raises(RunFailed) as info:
        run_to_file(CONFIG.replace(max_steps=3), path)
    assert info.value.summary.frames == 1
    assert load(path).frames == 1
    assert partials(tmp_path) == []


# ----------------------------------------------------------------- resume
@pytest.mark.parametrize("stop", [1, 2, 4])
@pytest.mark.parametrize("flush_interval", [0.0, 1.0])
def test_interrupt_then_resume_is_bit_identical(
    tmp_path, monkeypatch, reference, stop, flush_interval
):
    path = tmp_path / "r.h5"
    interrupt_after(monkeypatch, stop)
    with pytest.raises(RunInterrupted) as info:
        run_to_file(CONFIG, path, flush_interval=flush_interval)
    assert isinstance(info.value, KeyboardInterrupt)
    summary = info.value.summary
    assert summary.frames == stop and not summary.complete
    assert not load(path).complete
    monkeypatch.undo()
    resumed = run_to_file(None, path, resume=True)
    assert resumed.complete and resumed.frames == reference.frames
    np.testing.assert_array_equal(resumed.final, reference.final)
    assert_same(load(path), reference)


def test_should_stop_stops_like_ctrl_c(tmp_path, reference):
    path = tmp_path / "s.h5"
    polls = []

    def should_stop() -> bool:
        polls.append(1)
        return len(polls) >= 3

    with pytest.raises(RunInterrupted) as info:
        run_to_file(CONFIG, path, should_stop=should_stop)
    assert info.value.summary.frames == 3 and not load(path).complete
    run_to_file(None, path, resume=True)
    assert_same(load(path), reference)


def test_resume_adaptive_is_bit_identical(tmp_path, monkeypatch):
    config = CONFIG.replace(integrator="dopri5", dt=0.05, save_every=1, T=0.3)
    ref = run(config)
    path = tmp_path / "a.h5"
    interrupt_after(monkeypatch, 3)
    with pytest.raises(RunInterrupted):
        run_to_file(config, path)
    monkeypatch.undo()
    run_to_file(config, path, resume=True)  # the same config may be given
    traj = load(path)
    np.testing.assert_array_equal(traj.positions, ref.positions)
    np.testing.assert_array_equal(traj.times, ref.times)


def test_reader_and_resume_cut_a_half_written_frame(written, tmp_path, reference):
    path = tmp_path / "killed.h5"
    path.write_bytes(written.read_bytes())
    with h5py.File(path, "r+") as f:  # as if killed after value, before step
        f["parameters"].attrs["complete"] = 0
        f["particles/tokens/position/step"].resize(4, axis=0)
        f["particles/tokens/position/time"].resize(5, axis=0)
        f["observables/energy/value"].resize(6, axis=0)
    traj = load(path)
    assert traj.frames == 4 and not traj.complete
    assert traj.positions.shape[0] == traj.times.shape[0] == traj.steps.shape[0] == 4
    assert all(v.shape[0] == 4 for v in traj.observables.values())
    run_to_file(None, path, resume=True)
    assert_same(load(path), reference)


def test_resume_of_complete_file_changes_nothing(written, tmp_path):
    path = tmp_path / "done.h5"
    path.write_bytes(written.read_bytes())
    before = digest(path)
    summary = run_to_file(None, path, resume=True)
    assert summary.complete
    assert digest(path) == before


def test_resume_errors(written, tmp_path):
    with pytest.raises(OutputPathError, match="nothing to resume"):
        run_to_file(None, tmp_path / "missing.h5", resume=True)
    with pytest.raises(OutputPathError, match="exclude"):
        run_to_file(None, written, resume=True, overwrite=True)
    with pytest.raises(ValueError, match="x0"):
        run_to_file(None, written, resume=True, x0=np.ones((8, 3)))
    with pytest.raises(ValueError, match="beta"):
        run_to_file(CONFIG.replace(beta=2.0), written, resume=True)
    shifted = tmp_path / "shifted.h5"
    shifted.write_bytes(written.read_bytes())
    with h5py.File(shifted, "r+") as f:
        f["parameters"].attrs["complete"] = 0
        f["particles/tokens/position/time"][2] += 1e-9
        for name in ("step", "time", "value"):
            f[f"particles/tokens/position/{name}"].resize(3, axis=0)
    with pytest.raises(TrajectoryFileError, match="times do not match"):
        run_to_file(None, shifted, resume=True)
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    with pytest.raises(TrajectoryFileError):
        run_to_file(None, junk, resume=True)
    with pytest.raises(ValueError, match="config is required"):
        run_to_file(None, tmp_path / "new.h5")


# ---------------------------------------------------------- broken files
def _h5(path: Path, build) -> Path:
    with h5py.File(path, "w") as f:
        build(f)
    return path


def _copy_and_edit(written: Path, path: Path, edit) -> Path:
    path.write_bytes(written.read_bytes())
    with h5py.File(path, "r+") as f:
        edit(f)
    return path


def _pyh5md_file(path: Path) -> Path:
    with pyh5md.File(path, "w", author="someone", creator="other") as f:
        tokens = f.particles_group("atoms")
        tokens.create_box(dimension=3, boundary=["none"] * 3)
        pos = pyh5md.element(tokens, "position", store="time", shape=(4, 3), dtype=float, time=True)
        pos.append(np.zeros((4, 3)), 0, 0.0)
    return path


def _set_attr(name, value):
    return lambda f: f["parameters"].attrs.__setitem__(name, value)


def _truncated(written: Path, path: Path) -> Path:
    data = written.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _no_frames(f):
    for name in ("particles/tokens/position/step",):
        f[name].resize(0, axis=0)


BROKEN = {
    "missing": (lambda w, p: p, "no such file"),
    "directory": (lambda w, p: (p.mkdir(), p)[1], "directory"),
    "text": (lambda w, p: (p.write_text("hello\n"), p)[1], "not an HDF5 file"),
    "empty": (lambda w, p: (p.write_bytes(b""), p)[1], "not an HDF5 file"),
    "plain_hdf5": (
        lambda w, p: _h5(p, lambda f: f.create_dataset("x", data=[1])),
        "not a particles trajectory",
    ),
    "other_h5md": (lambda w, p: _pyh5md_file(p), "not a particles trajectory"),
    "newer_schema": (
        lambda w, p: _copy_and_edit(w, p, _set_attr("particles_schema", 2)),
        "newer particles",
    ),
    "bad_schema": (
        lambda w, p: _copy_and_edit(w, p, _set_attr("particles_schema", "x")),
        "invalid particles_schema",
    ),
    "bad_config": (
        lambda w, p: _copy_and_edit(w, p, _set_attr("config", '{"n": 0}')),
        "configuration",
    ),
    "config_not_json": (
        lambda w, p: _copy_and_edit(w, p, _set_attr("config", "{")),
        "configuration",
    ),
    "wrong_shape": (
        lambda w, p: _copy_and_edit(w, p, _set_attr("config", CONFIG.replace(n=9).to_json())),
        "do not match",
    ),
    "no_positions": (
        lambda w, p: _copy_and_edit(
            w, p, lambda f: f.__delitem__("particles/tokens/position/value")
        ),
        "position",
    ),
    "no_frames": (lambda w, p: _copy_and_edit(w, p, _no_frames), "no frames"),
    "truncated": (_truncated, "truncated or damaged"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_unreadable_files_give_one_line_errors(written, tmp_path, case):
    make, message = BROKEN[case]
    path = make(written, tmp_path / f"{case}.h5")
    for reader in (load, read_summary):
        with pytest.raises(TrajectoryFileError) as info:
            reader(path)
        text = str(info.value)
        assert isinstance(info.value, ValueError)
        assert "\n" not in text and message in text and str(path) in text


def test_load_leaves_no_file_open(written, tmp_path):
    def open_files() -> int:
        return len(h5py.h5f.get_obj_ids(types=h5py.h5f.OBJ_FILE))

    before = open_files()
    load(written)
    read_summary(written)
    with pytest.raises(TrajectoryFileError):
        load(_copy_and_edit(written, tmp_path / "new.h5", _set_attr("particles_schema", 9)))
    assert open_files() == before
    # nothing holds a lock either: a copy read by load can be opened for writing
    copy = tmp_path / "copy.h5"
    copy.write_bytes(written.read_bytes())
    load(copy)
    with h5py.File(copy, "r+"):
        pass
