"""Real processes and real signals: SIGKILL leaves a readable file; SIGINT
stops cleanly (exit 130) and ``--resume`` then finishes the run bit-identically
to an uninterrupted one."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from particles_cli.main import cli

import particles
from particles.config import SimulationConfig
from particles.engine import run
from particles.io import TrajectoryFileError, load, read_summary
from particles.runs.initial import initial_tokens

pytestmark = pytest.mark.processes

# Long enough (several seconds after the kernels are compiled or loaded from the
# disk cache) that the signal, sent once the first timed flush (1 s) shows two
# frames, lands mid-run; short enough to finish in-process after --resume.
CONFIG = SimulationConfig(
    n=400, d=3, beta=1.0, integrator="euler", dt=0.01, T=120.0, save_every=5, seed=5
)
ARGS = "--n 400 --d 3 --beta 1 --integrator euler --dt 0.01 --T 120 --save-every 5 --seed 5".split()

#: seconds to wait for a child's first frames (a fresh process compiles for 10-30 s).
STARTUP_TIMEOUT = 180


def source_digest() -> str:
    """Hash of the package sources: bit-identity needs the same code in every process."""
    digest = hashlib.sha256()
    for path in sorted(Path(particles.__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


#: the sources this process imported (and compiled its kernels from).
SOURCES = source_digest()


def frames_in(path) -> int:
    """Frames in a file another process may be writing (0 while there is none)."""
    try:
        return read_summary(path).frames
    except TrajectoryFileError:
        return 0


@pytest.fixture(scope="module")
def signalled(tmp_path_factory):
    """Start two runs together (their compiles overlap) and send each its signal
    as soon as its file holds two frames.  Returns signal -> (path, stdout, stderr, rc)."""
    directory = tmp_path_factory.mktemp("signals")
    paths = {signal.SIGKILL: directory / "killed.h5", signal.SIGINT: directory / "interrupted.h5"}
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs = {
        sig: subprocess.Popen(
            [sys.executable, "-m", "particles_cli", "simulate", *ARGS, "--out", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for sig, path in paths.items()
    }
    try:
        pending = set(procs)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while pending:
            for sig in list(pending):
                if procs[sig].poll() is not None:
                    pytest.fail(f"run ended before {sig.name}: {procs[sig].stderr.read()}")
                if frames_in(paths[sig]) >= 2:
                    procs[sig].send_signal(sig)
                    pending.discard(sig)
            if time.monotonic() > deadline:
                pytest.fail(f"no frames within {STARTUP_TIMEOUT} s")
            time.sleep(0.05)
        results = {
            sig: (paths[sig], *procs[sig].communicate(timeout=120), procs[sig].returncode)
            for sig in procs
        }
        return results
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_sigkill_leaves_a_readable_file(signalled):
    path, _, _, rc = signalled[signal.SIGKILL]
    assert rc == -signal.SIGKILL
    with h5py.File(path, "r") as f:  # any HDF5 reader opens it; lengths agree
        pos = f["particles/tokens/position"]
        frames = pos["step"].shape[0]
        assert frames >= 2
        assert pos["time"].shape[0] == pos["value"].shape[0] == frames
        assert all(g["value"].shape[0] == frames for g in f["observables"].values())
        assert f["parameters"].attrs["complete"] == 0
    traj = load(path)
    assert traj.frames == frames and not traj.complete
    np.testing.assert_array_equal(traj.times, CONFIG.output_times()[:frames])
    np.testing.assert_array_equal(traj.positions[0], initial_tokens(CONFIG)[0])
    assert np.all(np.isfinite(traj.positions))
    result = CliRunner().invoke(cli, ["info", str(path)])
    assert result.exit_code == 0, result.output
    assert f"incomplete ({frames} of {len(CONFIG.output_times())} frames" in result.stdout
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".partial")]


def test_sigint_then_resume_equals_uninterrupted_run(signalled):
    path, stdout, stderr, rc = signalled[signal.SIGINT]
    assert rc == 130, stderr
    assert "Interrupted" in stderr and "--resume" in stderr
    assert stdout.splitlines()[0] == str(path)
    stopped = read_summary(path)
    assert not stopped.complete and 2 <= stopped.frames < stopped.frames_expected
    result = CliRunner().invoke(cli, ["simulate", "--resume", "--out", str(path)])
    assert result.exit_code == 0, result.output
    resumed = load(path)
    assert resumed.complete
    reference = run(CONFIG)
    if source_digest() != SOURCES:  # only while someone edits the package meanwhile
        pytest.skip("package sources changed during the session: processes ran different code")
    np.testing.assert_array_equal(resumed.final, reference.final)  # bit-identical
    np.testing.assert_array_equal(resumed.positions, reference.positions)
    np.testing.assert_array_equal(resumed.steps, reference.steps)
