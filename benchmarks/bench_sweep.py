"""The d = 2 phase-diagram sweep of issue 14, timed (not a test).

n = 32 tokens on the circle, ``--runs`` systems per beta (2048), ``--points``
values of beta in [0.1, 9] (90), T = 30, dt = 0.1, the Euler (Transformer
layer) integrator, statistics every 2 steps (151 save times): the papers'
phase diagram of the fraction of close pairs.  Prints the wall time, compile
included (a fresh process), and the time per grid point after the first.

    python benchmarks/bench_sweep.py [--points 90] [--runs 2048] [--scheduler tcp://...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=90)
    parser.add_argument("--runs", type=int, default=2048)
    parser.add_argument("--scheduler", default=None)
    parser.add_argument("--chunk", type=int, default=None)
    args = parser.parse_args()
    t0 = time.perf_counter()
    from particles.sweep import SweepSpec, make_backend, run_sweep

    betas = tuple(float(b) for b in np.linspace(0.1, 9.0, 90)[: args.points])
    spec = SweepSpec(base=dict(n=32, d=2, integrator="euler", dt=0.1, T=30.0, save_every=2),
                     axes=(("beta", betas),), runs=args.runs, seed=1)
    backend = make_backend(scheduler=args.scheduler)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "phase.h5"
        result = run_sweep(spec, out, backend=backend, chunk=args.chunk)
        size = out.stat().st_size
    backend.close()
    wall = time.perf_counter() - t0
    print(f"{spec.points} points x {spec.runs} systems, {len(spec.times)} save times: "
          f"{wall:.1f} s wall (compile included), {result.tasks_run} tasks, "
          f"file {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
