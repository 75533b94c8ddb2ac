"""The local backend's worker processes (issue 14, performance): the same file as
in-process tasks, a killed worker replaced and its task rerun, task errors raised,
Ctrl-C stops the workers and --resume finishes the file, the per-sweep choice."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import sweep_workers
from clitools import invoke, usage_error
from test_sweep import ARGS, SPEC, assert_same, contents, stoppable_sweep, wait_for_systems

from particles.sweep import LocalBackend, run_sweep
from particles.sweep.backends import PROCESS_MIN_SECONDS, local_cores
from particles.sweep.processes import map_processes

pytestmark = pytest.mark.processes


def test_worker_processes_give_the_in_process_file(tmp_path):
    here, there = tmp_path / "here.h5", tmp_path / "there.h5"
    run_sweep(SPEC, here, chunk=2)
    with LocalBackend(processes=2) as backend:
        result = run_sweep(SPEC, there, chunk=2, backend=backend)
    assert result.complete and result.tasks_run == 10
    assert_same(contents(there), contents(here))


def test_results_come_from_two_processes_in_any_order():
    out = dict(map_processes(sweep_workers.square, range(12), processes=2))
    assert {k: v[0] for k, v in out.items()} == {k: k * k for k in range(12)}
    assert len({pid for _, pid in out.values()} - {os.getpid()}) == 2


def test_a_killed_worker_is_replaced_and_its_task_rerun(tmp_path):
    marker = str(tmp_path / "died")
    items = [(marker, x) for x in range(8)]
    out = dict(map_processes(sweep_workers.die_once, items, processes=2))
    assert Path(marker).exists()  # a worker did die
    assert out == {(marker, x): x * x for x in range(8)}


def test_a_pool_broken_again_and_again_is_replaced_each_time(tmp_path):
    """Issue 25 item 3: a pool found broken while tasks were submitted gave a
    BrokenProcessPool traceback; it is replaced wherever that is seen."""
    items = [(str(tmp_path), x) for x in range(12)]
    out = dict(map_processes(sweep_workers.die_often, items, processes=2))
    assert out == {(str(tmp_path), x): x * x for x in range(12)}
    assert len(list(tmp_path.glob("died-*"))) == 3


def test_workers_that_keep_dying_end_the_sweep_in_one_error():
    from particles.errors import WorkersLost

    with pytest.raises(WorkersLost, match="died 4 times"):
        list(map_processes(sweep_workers.always_die, range(4), processes=2))


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_workers_end_when_the_driver_is_killed(tmp_path):
    """Issue 25 item 3: SIGKILL of the driver left both workers running (holding
    its stdout: a caller waiting for the output hung).  Issue 38 item 5: and
    multiprocessing's resource tracker said "There appear to be 5 leaked
    semaphore objects" on its stderr."""
    _, out, cmd = stoppable_sweep(tmp_path, 150, "--processes", "2")
    mark = f"PARTICLES_TEST_MARK={uuid.uuid4().hex}"
    env = {**os.environ, mark.split("=")[0]: mark.split("=")[1]}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, env=env)
    try:
        wait_for_systems(proc, out, 4)
        assert len(_workers_alive(mark)) >= 3  # the driver and its workers
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=30)  # returns once no process holds its pipes
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 10
    while _workers_alive(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _workers_alive(mark) == []
    assert "leaked" not in err, err


def test_a_task_error_is_raised():
    with pytest.raises(ValueError, match="task 5 failed"):
        list(map_processes(sweep_workers.fail_on_five, range(10), processes=2))


def test_processes_are_picked_per_sweep():
    auto = LocalBackend(processes=None)
    assert auto.workers == 1
    auto.fit(PROCESS_MIN_SECONDS, 100)
    assert auto.workers == local_cores()
    auto.fit(PROCESS_MIN_SECONDS / 2, 100)
    assert auto.workers == 1
    auto.fit(1e6, 1)
    assert auto.workers == 1
    given = LocalBackend(processes=3)
    given.fit(0.0, 1)
    assert given.workers == 3
    with pytest.raises(ValueError, match="processes must be a positive integer"):
        LocalBackend(processes=0)


def test_cli_processes_and_a_scheduler_exclude_each_other(tmp_path):
    result = invoke("sweep", *ARGS, "--out", tmp_path / "s.h5", "--processes", "2",
                    "--scheduler", "tcp://127.0.0.1:9")
    usage_error(result, "--processes")
    assert not (tmp_path / "s.h5").exists()


def _workers_alive(mark: str) -> list[int]:
    """Pids of live processes whose environment carries ``mark``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if mark.encode() in (entry / "environ").read_bytes():
                state = (entry / "stat").read_text().split()[2]
                if state != "Z":
                    pids.append(int(entry.name))
        except OSError:
            continue
    return pids


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_ctrl_c_stops_the_workers_and_resume_finishes_the_file(tmp_path):
    """A real `particles sweep --processes 2` interrupted with SIGINT: exit 130,
    no worker left running, and --resume gives the uninterrupted file."""
    ref, out, cmd = stoppable_sweep(tmp_path, 150, "--processes", "2")
    mark = f"PARTICLES_TEST_MARK={uuid.uuid4().hex}"
    env = {**os.environ, mark.split("=")[0]: mark.split("=")[1]}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, env=env)
    try:
        done = wait_for_systems(proc, out, 4)
        assert proc.poll() is None, f"the sweep ended before it was stopped ({done} done)"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Interrupted" in err and "Traceback" not in err and "leaked" not in err
    deadline = time.monotonic() + 10
    while _workers_alive(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _workers_alive(mark) == []
    result = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert_same(contents(out), contents(ref))


def test_processes_with_a_scheduler_in_the_environment_are_refused(monkeypatch):
    from particles.sweep import make_backend

    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:9")
    with pytest.raises(ValueError, match="for the local backend"):
        make_backend(processes=2)
