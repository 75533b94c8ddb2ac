"""The papers' d = 2 phase-diagram sweep, locally and through a local Dask cluster.

Workload (issue 14): n = 32 tokens on the circle, 2048 systems per beta, 90
values of beta in [0.1, 9], T = 30, dt = 0.1, the Euler (Transformer-layer)
integrator, statistics every 2 layers: 184 320 systems of 300 layers each.

Prints one table:

* ``local``: ``particles sweep ...`` in a fresh process (compile included),
  the local backend as the command picks it (for this workload: one worker
  process per core, one Numba thread each);
* ``dask``: the same sweep through a scheduler and two ``dask worker
  --nthreads 1`` processes started here on 127.0.0.1 (fresh workers, so
  their compiles are included; the cluster's start-up is shown apart),
  driven in this process so the per-task statistics of
  :class:`particles.sweep.backends.dask.DaskBackend` are available;
* the per-task overhead of the Dask backend: the wall time per task of a map
  of trivial tasks over both workers (throughput), and the round trip of one
  trivial task at a time (latency).

The machine's load average is printed first: on a shared machine the times
scale with it.

Usage::

    python benchmarks/bench_sweep.py                 # the full workload (minutes)
    python benchmarks/bench_sweep.py --quick         # 9 betas x 256 systems
    python benchmarks/bench_sweep.py --skip-dask     # local only
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DASK = str(Path(sys.executable).with_name("dask"))
PARTICLES = str(Path(sys.executable).with_name("particles"))


def sweep_args(betas: int, runs: int, seed: int = 1) -> list[str]:
    """``particles sweep`` options of the workload (without --out)."""
    return ["--n", "32", "--d", "2", "--beta", f"0.1:9:{betas}", "--runs", str(runs),
            "--T", "30", "--dt", "0.1", "--integrator", "euler", "--save-every", "2",
            "--seed", str(seed)]


class Cluster:
    """A scheduler and ``workers`` one-thread workers on 127.0.0.1, in their own process groups."""

    def __init__(self, root: Path, workers: int = 2) -> None:
        self.file = root / "scheduler.json"
        self.log = open(root / "dask.log", "wb")
        self.procs: list[subprocess.Popen] = []
        t0 = time.perf_counter()
        self._spawn(root, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                    "--scheduler-file", str(self.file))
        while not self.file.exists():
            time.sleep(0.1)
        for k in range(workers):
            self._spawn(root, "worker", "--scheduler-file", str(self.file), "--nthreads", "1",
                        "--host", "127.0.0.1", "--no-dashboard", "--name", f"w{k}",
                        "--local-directory", str(root / f"w{k}"))
        from distributed import Client

        with Client(scheduler_file=str(self.file), timeout=120) as client:
            client.wait_for_workers(workers, timeout=300)
        self.startup = time.perf_counter() - t0

    def _spawn(self, root: Path, *args: str) -> None:
        self.procs.append(subprocess.Popen([DASK, *args], stdout=self.log,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           start_new_session=True, cwd=root))

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in self.procs:
            proc.wait()
        self.log.close()


def run_local(root: Path, betas: int, runs: int) -> float:
    """Wall seconds of ``particles sweep`` in a fresh process (compile included)."""
    t0 = time.perf_counter()
    proc = subprocess.run([PARTICLES, "sweep", *sweep_args(betas, runs), "--out",
                           str(root / "local.h5")], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"local sweep failed: {proc.stderr.strip()[-500:]}")
    return wall


def run_dask(root: Path, cluster: Cluster, betas: int, runs: int) -> dict[str, float]:
    """The sweep through ``cluster``, driven here: wall and per-task statistics."""
    from particles.sweep import SweepSpec, run_sweep
    from particles.sweep.backends.dask import DaskBackend
    from particles.sweep.grid import parse_value

    args = sweep_args(betas, runs)
    values = {args[i][2:].replace("-", "_"): args[i + 1] for i in range(0, len(args), 2)}
    runs_, seed = int(values.pop("runs")), int(values.pop("seed"))
    spec = SweepSpec.from_values({k: parse_value(k, v) for k, v in values.items()},
                                 runs=runs_, seed=seed)
    with DaskBackend(scheduler_file=cluster.file) as backend:
        t0 = time.perf_counter()
        result = run_sweep(spec, root / "dask.h5", backend=backend)
        wall = time.perf_counter() - t0
        stats = backend.stats
    compile_ = {}
    for s in stats:
        compile_[s.worker] = compile_.get(s.worker, 0.0) + s.compile_seconds
    return {"wall": wall, "tasks": result.tasks_run, "busy": sum(s.seconds for s in stats),
            "compile": max(compile_.values(), default=0.0)}


def task_overhead(cluster: Cluster, tasks: int = 400, sequential: int = 50) -> tuple[float, float]:
    """(seconds per trivial task over both workers, round trip of one trivial task)."""
    from particles.sweep.backends.dask import DaskBackend

    with DaskBackend(scheduler_file=cluster.file) as backend:
        list(backend.map_unordered(abs, range(-4, 0)))  # workers import numba once
        t0 = time.perf_counter()
        done = sum(1 for _ in backend.map_unordered(abs, range(tasks)))
        per_task = (time.perf_counter() - t0) / done
        t0 = time.perf_counter()
        for i in range(sequential):
            list(backend.map_unordered(abs, [i]))
        latency = (time.perf_counter() - t0) / sequential
    return per_task, latency


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="9 betas x 256 systems")
    parser.add_argument("--betas", type=int, default=90)
    parser.add_argument("--runs", type=int, default=2048)
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--skip-dask", action="store_true")
    opts = parser.parse_args()
    betas, runs = (9, 256) if opts.quick else (opts.betas, opts.runs)
    systems = betas * runs
    print(f"workload: n=32 d=2 euler dt=0.1 T=30 save every 2 steps, {betas} betas in "
          f"[0.1, 9] x {runs} systems = {systems} systems x 300 layers")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} "
          "(1 min) at the start")
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if not opts.skip_local:
            wall = run_local(root, betas, runs)
            rows.append(("local (all cores), compile included", f"{wall:8.1f} s"))
            rows.append(("  systems per second", f"{systems / wall:8.0f}"))
        if not opts.skip_dask:
            cluster = Cluster(root)
            try:
                rows.append(("dask: cluster start-up (not counted)", f"{cluster.startup:8.1f} s"))
                d = run_dask(root, cluster, betas, runs)
                rows.append(("dask: 2 x 1-thread workers, compile included",
                             f"{d['wall']:8.1f} s"))
                rows.append((f"  tasks; worker busy time ({int(d['tasks'])} tasks)",
                             f"{d['busy']:8.1f} s"))
                rows.append(("  compile on the slowest worker", f"{d['compile']:8.1f} s"))
                per_task, latency = task_overhead(cluster)
                rows.append(("dask: per trivial task, 2 workers (throughput)",
                             f"{1e3 * per_task:8.2f} ms"))
                rows.append(("dask: one trivial task round trip (latency)",
                             f"{1e3 * latency:8.2f} ms"))
            finally:
                cluster.stop()
    width = max(len(k) for k, _ in rows)
    print()
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
