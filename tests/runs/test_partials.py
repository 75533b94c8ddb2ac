"""The edges of a run's life: killed before its first promotion (the hidden
temporary file is adopted by ``--resume`` or cleaned by the next run),
signals during the close and after the last frame (the message and the
exit status match the file), and two ``--overwrite`` runs on one path (the
loser knows it lost)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from filetools import partial_with_frames, partials
from particles_cli.main import cli

from particles.config import SimulationConfig
from particles.errors import OutputReplacedError, StalePartialWarning
from particles.io import load, read_summary
from particles.io.h5md import GroupWriter, TrajectoryWriter
from particles.runs import run_to_file
from particles.runs.session import (
    foreign_partials,
    host_name,
    remove_stale_partials,
    stale_partials,
)

pytestmark = pytest.mark.processes

CONFIG = SimulationConfig(n=32, d=3, beta=1.0, integrator="euler", dt=0.01, T=4.0,
                          save_every=1, seed=3)
ARGS = "--n 32 --d 3 --beta 1 --integrator euler --dt 0.01 --T 4 --save-every 1 --seed 3"
FRAMES = len(CONFIG.output_times())


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("ref") / "ref.h5"
    run_to_file(CONFIG, path)
    return load(path)


def kill_before_promotion(directory: Path) -> Path:
    """Start ``simulate`` and SIGKILL it once its temporary file holds frame 0
    (while it compiles, before the target exists); returns the temporary file.

    The run gets an empty kernel cache of its own, so that it compiles (with a
    warm cache it would finish and promote its file at once)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": tempfile.mkdtemp(prefix="empty-cache-")}
    p = subprocess.Popen(
        [sys.executable, "-m", "particles_cli", "simulate", *ARGS.split(), "--out", "run.h5"],
        cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    try:
        found = partial_with_frames(directory, p)
    finally:
        p.kill()
        p.wait()
    assert not (directory / "run.h5").exists()
    return found


def test_resume_adopts_the_partial_of_a_run_killed_before_promotion(tmp_path, reference):
    temp = kill_before_promotion(tmp_path)
    assert [p for p, _ in stale_partials(tmp_path / "run.h5")] == [temp]
    result = CliRunner().invoke(cli, ["simulate", "--resume", "--out", str(tmp_path / "run.h5")])
    assert result.exit_code == 0, result.output
    assert "(complete)" in result.stdout
    assert partials(tmp_path) == []
    done = load(tmp_path / "run.h5")
    assert done.complete
    np.testing.assert_array_equal(done.positions, reference.positions)


def test_a_new_run_removes_stale_partials_and_says_so(tmp_path):
    temp = kill_before_promotion(tmp_path)
    out = tmp_path / "run.h5"
    result = CliRunner().invoke(cli, ["simulate", *ARGS.split(), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"Warning: removed {temp}" in result.stderr
    assert partials(tmp_path) == [] and read_summary(out).complete


def test_partials_of_live_runs_are_not_stale(tmp_path):
    target = tmp_path / "x.h5"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    live = tmp_path / f".x.h5.{os.getpid()}@{host_name()}.0000aaaa.partial"
    dead = tmp_path / f".x.h5.{gone.pid}@{host_name()}.0000bbbb.partial"
    for path in (live, dead):
        with h5py.File(path, "w"):
            pass
    assert [p for p, _ in stale_partials(target)] == [dead]
    with pytest.warns(StalePartialWarning, match="did not finish"):
        assert remove_stale_partials(target) == [dead]
    assert live.exists() and not dead.exists()


def test_partials_of_other_hosts_are_never_removed_and_resume_names_them(tmp_path):
    """On a cluster's shared file system a process id means nothing on another
    node: such a temporary file is kept, and --resume says whose it is."""
    target = tmp_path / "x.h5"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    other = "node-" + ("b" if host_name() != "node-b" else "c")
    foreign = tmp_path / f".x.h5.{gone.pid}@{other}.0000cccc.partial"
    with h5py.File(foreign, "w"):
        pass
    assert stale_partials(target) == []
    assert foreign_partials(target) == [(foreign, f"process {gone.pid} on {other}")]
    assert remove_stale_partials(target) == [] and foreign.exists()
    result = CliRunner().invoke(cli, ["simulate", "--resume", "--out", str(target)])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    line = " ".join(result.output.split())
    assert f"process {gone.pid} on {other}" in line and "rename the file to x.h5" in line
    assert foreign.exists()


# ---------------------------------------------------------------- signals at the edges
def signal_on_calls(triggers):
    """A profile hook sending this process SIGINT when a given function is called.

    A real signal at a precise point of the real code path.

    ``triggers``: list of (code object, predicate(frame locals) -> bool); each
    fires once, in order.
    """
    pending = list(triggers)

    def hook(frame, event, arg):
        if event == "call" and pending and frame.f_code is pending[0][0]:
            if pending[0][1](frame.f_locals):
                pending.pop(0)
                try:
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.01)  # the handler runs here
                except KeyboardInterrupt:
                    # raised inside this hook (which would end profiling): dropped
                    # like one swallowed inside llvmlite; the run's poll stops it
                    pass

    return hook, pending


def invoke_with_signals(out: Path, triggers):
    hook, pending = signal_on_calls(triggers)
    sys.setprofile(hook)
    try:
        result = CliRunner().invoke(cli, ["simulate", *ARGS.split(), "--out", str(out)])
    finally:
        sys.setprofile(None)
    assert not pending, "a signal was not sent"
    assert "Traceback" not in result.output and "Aborted" not in result.output, result.output
    return result


def interrupted_line(result) -> str:
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("Interrupted")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_sigint_while_the_complete_file_is_closed_says_complete(tmp_path, reference):
    out = tmp_path / "run.h5"
    close = TrajectoryWriter.close.__code__
    result = invoke_with_signals(out, [(close, lambda v: v.get("complete") is True)])
    assert result.exit_code == 130, result.output
    line = interrupted_line(result)
    assert "is complete" in line and "not written" not in line
    assert read_summary(out).complete
    np.testing.assert_array_equal(load(out).positions, reference.positions)


def test_second_sigint_during_the_clean_stop_keeps_the_frames(tmp_path, reference):
    out = tmp_path / "run.h5"
    append = GroupWriter.append.__code__
    close = TrajectoryWriter.close.__code__
    result = invoke_with_signals(out, [
        (append, lambda v: v["frame"].index == 50),  # mid-run
        (close, lambda v: v.get("complete") is False),  # while the stop closes the file
    ])
    assert result.exit_code == 130, result.output
    line = interrupted_line(result)
    kept = load(out)
    assert not kept.complete and f"holds {kept.frames} of {FRAMES} frames" in line
    np.testing.assert_array_equal(kept.positions, reference.positions[:kept.frames])
    assert partials(tmp_path) == []


def test_sigint_while_the_summary_is_printed(tmp_path):
    from particles_cli.simulate import summary_line

    out = tmp_path / "run.h5"
    result = invoke_with_signals(out, [(summary_line.__code__, lambda v: True)])
    assert result.exit_code == 130, result.output
    assert "is complete" in interrupted_line(result) and read_summary(out).complete


# ---------------------------------------------------------------- two --overwrite runs
def test_the_overwrite_run_whose_file_was_replaced_knows_it_lost(tmp_path):
    out, other = tmp_path / "run.h5", tmp_path / "b.h5"
    run_to_file(CONFIG.replace(T=1.0), other)  # "run B"'s file
    run_to_file(CONFIG.replace(seed=9), out)  # an old file, replaced by both
    winner = hashlib.sha256(other.read_bytes()).hexdigest()
    calls = []

    def b_promotes_now() -> bool:  # run B renames its file over the target, mid-run
        calls.append(1)
        if len(calls) == 20:
            os.replace(other, out)
        return False

    with pytest.raises(OutputReplacedError, match="replaced by another run"):
        # flushed every frame: this run's file took the target's name at frame 1
        run_to_file(CONFIG, out, overwrite=True, should_stop=b_promotes_now, flush_interval=0)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == winner
    assert partials(tmp_path) == []
