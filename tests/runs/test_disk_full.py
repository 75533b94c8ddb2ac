"""A full disk, for real: write failures stop the run at once with one line,
the file keeps every frame written before (bit-identical), is never marked
complete when it is not, and ``--resume`` finishes it once there is room;
``analyze`` never touches the trajectory's bytes.

Two ways to fill the disk: a child process with a file size limit
(``RLIMIT_FSIZE``, SIGXFSZ ignored, so the write that crosses it fails with
EFBIG; needs no privileges), and a small tmpfs (only when running as root).
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from filetools import digest, partials
from particles_cli.main import cli

from particles.config import SimulationConfig
from particles.io import load, read_summary
from particles.io.analysis import analysis_path
from particles.runs import run_to_file

pytestmark = pytest.mark.processes

#: 401 frames of 32 tokens in 3-D: about 330 KB of positions.
CONFIG = SimulationConfig(n=32, d=3, beta=1.0, integrator="euler", dt=0.01, T=4.0,
                          save_every=1, seed=3)
ARGS = "--n 32 --d 3 --beta 1 --integrator euler --dt 0.01 --T 4 --save-every 1 --seed 3"

#: a file size limit that holds the header and some frames, not all.
LIMIT = 200_000


def limited(limit: int):
    def preexec() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return preexec


def particles(*args, cwd: Path, limit: int | None = None) -> subprocess.CompletedProcess:
    """``particles ARGS`` in a child process (optionally under a file size limit)."""
    return subprocess.run(
        [sys.executable, "-m", "particles_cli", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=600,
        preexec_fn=limited(limit) if limit else None,
    )


def one_error_line(p: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit status 1, exactly one ``Error:`` line on stderr, no traceback."""
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("Error")]
    assert len(lines) == 1, p.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run, in this process."""
    path = tmp_path_factory.mktemp("ref") / "ref.h5"
    run_to_file(CONFIG, path)
    return load(path)


def check_kept_then_resume(path: Path, reference) -> None:
    """The kept frames are the reference's, marked incomplete; resume finishes it."""
    kept = load(path)
    k = kept.positions.shape[0]
    assert 1 <= k < reference.positions.shape[0]
    assert not kept.complete and not read_summary(path).complete
    np.testing.assert_array_equal(kept.positions, reference.positions[:k])
    np.testing.assert_array_equal(kept.times, reference.times[:k])
    result = run_to_file(None, path, resume=True)
    assert result.complete
    done = load(path)
    np.testing.assert_array_equal(done.positions, reference.positions)
    for name, v in reference.observables.items():
        np.testing.assert_array_equal(done.observables[name], v)


def test_file_size_limit_mid_run_stops_at_once_and_resumes(tmp_path, reference):
    path = tmp_path / "run.h5"
    p = particles("simulate", *ARGS.split(), "--no-size-check", "--out", path.name,
                  cwd=tmp_path, limit=LIMIT)
    line = one_error_line(p, "run.h5", "free space is needed", "marked incomplete", "--resume")
    assert "File too large" in line
    assert partials(tmp_path) == []
    frames = read_summary(path).frames
    # --resume with no room at all: stops before changing a frame, one line
    p = particles("simulate", "--resume", "--no-size-check", "--out", path.name,
                  cwd=tmp_path, limit=path.stat().st_size)
    one_error_line(p, "run.h5", "free space is needed")
    s = read_summary(path)
    assert not s.complete and s.frames == frames
    # once there is room, --resume finishes it bit for bit
    check_kept_then_resume(path, reference)


def test_file_size_limit_is_refused_before_any_work(tmp_path):
    """The estimate knows the file size limit (ulimit -f) as well as the free space."""
    p = particles("simulate", *ARGS.split(), "--out", "run.h5", cwd=tmp_path, limit=LIMIT)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "ulimit -f" in p.stderr and "--no-size-check" in p.stderr
    assert list(tmp_path.iterdir()) == []


def test_full_at_start_is_one_line_and_leaves_nothing(tmp_path):
    p = particles("simulate", *ARGS.split(), "--no-size-check", "--out", "run.h5",
                  cwd=tmp_path, limit=2048)
    one_error_line(p, "run.h5", "nothing was kept")
    assert sorted(os.listdir(tmp_path)) == []


def test_analyze_with_no_room_leaves_the_trajectory_untouched(tmp_path, reference):
    path = tmp_path / "run.h5"
    run_to_file(CONFIG, path)
    before = digest(path)
    p = particles("analyze", path.name, cwd=tmp_path, limit=8192)
    one_error_line(p, "run.analysis.h5", "run.h5 is unchanged")
    assert digest(path) == before
    assert not analysis_path(path).exists() and partials(tmp_path) == []
    np.testing.assert_array_equal(load(path).positions, reference.positions)


def test_analyze_writes_a_sidecar_and_never_the_trajectory(tmp_path):
    from particles.analysis import read_analysis

    path = tmp_path / "run.h5"
    run_to_file(CONFIG, path)
    before = digest(path)
    result = CliRunner().invoke(cli, ["analyze", str(path)])
    assert result.exit_code == 0, result.output
    assert digest(path) == before
    sidecar = tmp_path / "run.analysis.h5"
    assert sidecar.is_file() and f"results stored in {sidecar}" in result.output
    assert read_analysis(path).times.shape == (len(CONFIG.output_times()),)
    # an old file holding /analysis inside the trajectory stays readable
    import h5py

    old = tmp_path / "old.h5"
    shutil.copy(path, old)
    with h5py.File(sidecar, "r") as src, h5py.File(old, "a") as dst:
        src.copy("analysis", dst)
    np.testing.assert_array_equal(read_analysis(old).counts, read_analysis(path).counts)


#: the in-process CLI run of the Ctrl-C test, in a fresh interpreter whose SIGINT
#: raises KeyboardInterrupt as in a terminal: a suite started in the background
#: (``cmd &`` in a script) inherits SIGINT ignored, and Python then installs no
#: KeyboardInterrupt handler, so the signal would vanish (exit 0, not 130).
CTRL_C_SCRIPT = """
import json, os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from click.testing import CliRunner
from particles_cli.main import cli
import particles.analysis.report as report
import particles.io.analysis as io_analysis

path, where = sys.argv[1], sys.argv[2]
code = {"compute": report.analyze, "rename": io_analysis._read_group}[where].__code__
fired = []

def hook(frame, event, arg):
    if event == "call" and frame.f_code is code:
        sys.setprofile(None)
        fired.append(1)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the KeyboardInterrupt is raised here, in the call

sys.setprofile(hook)
try:
    result = CliRunner().invoke(cli, ["analyze", path])
finally:
    sys.setprofile(None)
print(json.dumps({"code": result.exit_code, "stderr": result.stderr, "fired": len(fired)}))
"""


@pytest.mark.parametrize("where", ["compute", "rename"])
def test_ctrl_c_during_analyze_leaves_the_file_as_it_was(tmp_path, where):
    """A real SIGINT to the process running the CLI, sent when ``analyze``
    starts computing, or when the results file is written and not yet renamed."""
    import json

    path = tmp_path / "run.h5"
    run_to_file(CONFIG, path)
    before = digest(path)
    p = subprocess.run([sys.executable, "-c", CTRL_C_SCRIPT, str(path), where],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout.strip().splitlines()[-1])
    assert result["fired"] == 1
    assert result["code"] == 130, result
    assert "Traceback" not in result["stderr"]
    lines = result["stderr"].strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Interrupted:") and "unchanged" in lines[0]
    assert digest(path) == before
    assert not analysis_path(path).exists() and partials(tmp_path) == []


# ---------------------------------------------------------------- tmpfs (root only)
@pytest.fixture
def tmpfs(tmp_path):
    """A 256 KiB tmpfs, or skip when it cannot be mounted (not root)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if p.returncode:
        pytest.skip(f"cannot mount a tmpfs: {p.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_tmpfs_full_mid_run_then_resume_elsewhere(tmpfs, tmp_path, reference):
    p = particles("simulate", *ARGS.split(), "--no-size-check", "--out", "run.h5", cwd=tmpfs)
    one_error_line(p, "run.h5", "No space left on device", "free space is needed")
    assert partials(tmpfs) == []
    moved = tmp_path / "run.h5"
    shutil.copy(tmpfs / "run.h5", moved)  # "once there is room"
    check_kept_then_resume(moved, reference)


def test_tmpfs_too_small_is_refused_before_any_work(tmpfs):
    """Without --no-size-check the estimate refuses a run the disk cannot hold."""
    p = particles("simulate", *ARGS.split(), "--out", "run.h5", cwd=tmpfs)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "free" in p.stderr and "--no-size-check" in p.stderr
    assert list(tmpfs.iterdir()) == []


def test_tmpfs_analyze_on_a_full_disk_keeps_the_trajectory(tmpfs):
    small = CONFIG.replace(T=0.5)
    path = tmpfs / "run.h5"
    run_to_file(small, path)
    before = digest(path)
    filler = tmpfs / "filler"
    with open(filler, "wb") as f:  # leave about 4 KiB free
        free = os.statvfs(tmpfs).f_bavail * os.statvfs(tmpfs).f_frsize
        f.write(b"\0" * max(0, free - 4096))
    p = particles("analyze", path.name, cwd=tmpfs)
    one_error_line(p, "run.analysis.h5", "No space left on device")
    assert digest(path) == before and partials(tmpfs) == []
    filler.unlink()
    assert not analysis_path(path).exists()
    np.testing.assert_array_equal(load(path).positions[-1], read_summary(path).final)


#: a sweep whose tasks write into chunks (about 1 MiB) larger than one task's rows
SWEEP = ("sweep --beta 1,2,3 --d 2 --n 8 --runs 512 --T 30 --dt 0.1 --integrator euler "
         "--save-every 2 --chunk 64 --seed 9 --processes 1 --no-size-check").split()


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory) -> Path:
    """The sweep of :data:`SWEEP`, uninterrupted."""
    done = tmp_path_factory.mktemp("sweep")
    assert particles(*SWEEP, "--out", "s.h5", cwd=done).returncode == 0
    return done


@pytest.mark.parametrize("fraction", [0.45, 0.8])
def test_a_full_disk_during_a_sweep_is_one_line_and_resume_finishes(tmp_path, finished_sweep,
                                                                    fraction):
    """A file size limit mid-sweep used to segfault after pages of h5py tracebacks
    and leave an unreadable file: HDF5 allocates a whole chunk at its first
    write, more than the task's rows that were reserved.  At several limits the
    file opens, holds whole tasks, and resumes into the uninterrupted results."""
    done = finished_sweep
    size = (done / "s.h5").stat().st_size
    p = particles(*SWEEP, "--out", "s.h5", cwd=tmp_path, limit=int(size * fraction))
    line = one_error_line(p, "s.h5", "systems, marked incomplete", "free space is needed",
                          "--resume")
    kept = tmp_path / "s.h5"
    needed = float(line.split("about ")[1].split(" MiB")[0]) * 2**20
    assert needed >= 0.8 * (size - kept.stat().st_size)  # the whole sweep's, not one task's
    info = particles("info", "s.h5", cwd=tmp_path)
    assert info.returncode == 0 and "incomplete" in info.stdout, info.stderr
    resumed = particles(*SWEEP, "--out", "s.h5", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0 and "complete" in resumed.stdout, resumed.stderr
    with h5py.File(done / "s.h5", "r") as a, h5py.File(kept, "r") as b:
        for name, ds in a["sweep/systems"].items():
            assert np.array_equal(ds[()], b["sweep/systems"][name][()], equal_nan=True), name


def test_a_sweep_that_cannot_write_its_first_task_keeps_nothing(tmp_path, finished_sweep):
    """Below the first task's chunks nothing can be kept: the line says so and
    no file (nor a temporary one) is left."""
    size = (finished_sweep / "s.h5").stat().st_size
    p = particles(*SWEEP, "--out", "s.h5", cwd=tmp_path, limit=size // 10)
    line = one_error_line(p, "s.h5", "nothing was kept", "free space is needed")
    assert "--resume" not in line
    assert list(tmp_path.iterdir()) == []

