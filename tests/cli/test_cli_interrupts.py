"""Ctrl-C and SIGTERM at the edges (issue 15, item 6), with real processes and
real signals: during the imports, during the Numba compile, and when the
interrupt is swallowed inside a ctypes callback (as llvmlite does while
compiling).  Each must end the process within about a second, with one line
on stderr, exit status 128 + signal and no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from filetools import partial_with_frames
from particles_cli.interrupts import CLEAN_STOP

from particles.io import read_summary

pytestmark = pytest.mark.processes

ARGS = "--n 16 --d 3 --beta 1 --T 2 --dt 0.01 --seed 1 --integrator euler".split()
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def stop(proc: subprocess.Popen, sig: int) -> tuple[float, int, str]:
    """Send ``sig``; return the seconds until the process ended, its status, its stderr
    (its stdout is kept as ``proc.out``)."""
    sent = time.monotonic()
    proc.send_signal(sig)
    try:
        proc.out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.out, err = proc.communicate()
    return time.monotonic() - sent, proc.returncode, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert lines[0].startswith("Interrupted: "), err
    return lines[0]


def simulate(out) -> subprocess.Popen:
    # an empty kernel cache of its own: the run compiles (a warm cache would
    # leave no compile to interrupt)
    env = {**ENV, "NUMBA_CACHE_DIR": str(Path(out).parent / "empty-numba-cache")}
    return subprocess.Popen(
        [sys.executable, "-m", "particles_cli", "simulate", *ARGS, "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


@pytest.mark.parametrize(("sig", "delay"), [(signal.SIGINT, 0.5), (signal.SIGTERM, 0.5),
                                            (signal.SIGTERM, 0.8)])
def test_signal_during_imports(tmp_path, sig, delay):
    out = tmp_path / "o.h5"
    proc = simulate(out)
    # the interpreter is up; NumPy, Numba, h5py are being imported, or (on a fast
    # machine) the options are being checked: the line said "any output file
    # holds..." there, naming no file (CI, issue 38)
    time.sleep(delay)
    assert proc.poll() is None
    elapsed, status, err = stop(proc, sig)
    assert status == 128 + sig, err
    # on a fast machine the command may already have named its output (its
    # line then says that file was not written): either line is the truth
    line = one_line(err)
    assert "nothing written" in line or f"{out} not written" in line, line
    assert elapsed < 2.0
    assert not out.exists()


def test_sigint_during_compile(tmp_path):
    out = tmp_path / "o.h5"
    proc = simulate(out)
    deadline = time.monotonic() + 180
    # the hidden temporary file appears just before the first kernels compile
    while not any(p.name.endswith(".partial") for p in tmp_path.iterdir()):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.3)
    elapsed, status, err = stop(proc, signal.SIGINT)
    assert status == 130, err
    assert f"{out} not written" in one_line(err)
    assert elapsed < 6.0  # CLEAN_STOP bounds it; a lost interrupt ends in GRACE


SWALLOWING = textwrap.dedent("""
    import ctypes, sys, time
    from particles_cli import interrupts
    interrupts.install()
    libc = ctypes.CDLL(None)
    CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

    def compare(a, b):  # the signal lands here, inside C: ctypes swallows the interrupt
        time.sleep(0.001)
        return 0

    callback, items = CMP(compare), (ctypes.c_int * 200)()
    print("ready", flush=True)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        try:
            libc.qsort(items, 200, ctypes.sizeof(ctypes.c_int), callback)
        except KeyboardInterrupt:  # lost anyway: the work goes on
            pass
    print("finished", flush=True)
""")


def test_interrupt_swallowed_in_a_ctypes_callback():
    proc = subprocess.Popen([sys.executable, "-c", SWALLOWING], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    elapsed, status, err = stop(proc, signal.SIGINT)
    assert status == 130, err
    one_line(err)
    assert elapsed < 2.0
    assert "finished" not in proc.out


def test_forced_stop_line_names_the_temporary_file_holding_the_frames(tmp_path):
    """A run ended at once before its first promotion: its frames are in its
    temporary file (which --resume adopts), and the line says so, not "no
    frame was saved"."""
    from particles_cli.interrupts import describe_output

    out = tmp_path / "run.h5"
    describe = describe_output(out)
    assert describe().startswith("no frame was saved")
    temp = tmp_path / f".run.h5.{os.getpid()}@somehost.0123abcd.partial"
    temp.write_bytes(b"frames")
    line = describe()
    assert temp.name in line and "--resume --out" in line and "no frame was saved" not in line
    other = tmp_path / f".run.h5.{os.getpid() + 1}@somehost.0123abcd.partial"
    temp.rename(other)  # another process's temporary file is not this run's
    assert describe().startswith("no frame was saved")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_in_the_exit_window_is_one_line(sig):
    """Issue 25 item 6: a signal after the command had finished, while the
    interpreter exits, killed the process with a traceback and no line.  It is
    held: one line, exit status 128 + signal."""
    code = textwrap.dedent(f"""
        import os, sys
        exit = sys.exit
        def late(code=0):  # the signal arrives while click exits
            os.kill(os.getpid(), {int(sig)})
            exit(code)
        sys.exit = late
        from particles_cli.__main__ import main
        sys.argv = ["particles", "info", "--cache"]
        main()
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=ENV, timeout=120)
    assert proc.returncode == 128 + sig
    assert "cache" in proc.stdout  # the command's output is whole
    assert "had finished" in one_line(proc.stderr)


def test_ctrl_c_inside_one_long_compiled_call_stops_within_seconds(tmp_path):
    """Issue 25 item 4: a step of 300 000 tokens on one thread lasts minutes, in one
    compiled call that held the GIL: Ctrl-C was ignored (and the watchdog thread,
    waiting for the GIL, could not end the process).  The runners release the GIL:
    the watchdog ends the process within its CLEAN_STOP seconds, with one line
    naming the file that holds frame 0."""
    env = {**ENV, "NUMBA_NUM_THREADS": "1"}  # the serial runner: no parallel region
    common = ["--d", "3", "--beta", "1", "--T", "0.01", "--dt", "0.01", "--integrator",
              "euler", "--positions", "none", "--observables", "order", "--seed", "1",
              "--summation", "direct"]  # the direct sums: the step lasts minutes
    warm = subprocess.run([sys.executable, "-m", "particles_cli", "simulate", "--n", "8",
                           *common, "--out", str(tmp_path / "warm.h5")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert warm.returncode == 0, warm.stderr  # the same runner, compiled and cached
    out = tmp_path / "big.h5"
    proc = subprocess.Popen([sys.executable, "-m", "particles_cli", "simulate", "--n",
                             "300000", *common, "--out", str(out), "--no-size-check"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    partial_with_frames(tmp_path, proc)  # frame 0 is on disk
    time.sleep(1.0)  # the first step runs (for minutes)
    assert proc.poll() is None
    seconds, status, err = stop(proc, signal.SIGINT)
    # the watchdog sees the main thread has not moved and ends it after GRACE
    # seconds (issue 38 item 4: it waited for CLEAN_STOP, 5 s)
    assert status == 130 and seconds < CLEAN_STOP, (seconds, err)
    assert ".partial" in one_line(err) and "--resume" in err


def test_signals_just_after_the_summary_line_never_kill_without_a_line(tmp_path):
    """Issue 38 item 4: a signal in the ~0.2 s after the summary line killed the
    process by the signal with no line (5 of 5): the interpreter's teardown had
    put back the default action.  Now each ends with status 0 (the process had
    gone) or 128 + signal and the one line saying the output is complete."""
    outcomes = []
    # the process now ends about 30 ms after its summary line: later signals find it gone
    for k, delay in enumerate((0.0, 0.002, 0.005, 0.01, 0.02)):
        out = tmp_path / f"o{k}.h5"
        proc = subprocess.Popen(
            [sys.executable, "-m", "particles_cli", "simulate", "--n", "8", *ARGS[2:],
             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=ENV)
        lines = [proc.stdout.readline(), proc.stdout.readline()]  # the path, the summary
        assert "frames to t=" in lines[1], (lines, proc.communicate())
        time.sleep(delay)
        try:
            proc.send_signal(signal.SIGINT)
        except ProcessLookupError:
            pass
        _, err = proc.communicate(timeout=60)
        outcomes.append(proc.returncode)
        assert proc.returncode in (0, 130), (delay, proc.returncode, err)
        assert "Traceback" not in err
        if proc.returncode == 130:
            # after the command returned, or while it still reports: either way the line
            # says the output is complete
            line = one_line(err.split("eta ?")[-1])
            assert "had finished" in line or "is complete; it holds" in line, line
        assert read_summary(out).complete
