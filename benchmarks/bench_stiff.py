"""Plateaus: the stiff integrator ``sdirk4`` against dopri5 on the second time scale.

Circle, SA, n tokens from a uniform start (seed 1), default summation and
collapse, log-spaced save times; process CPU-seconds with one thread
(``NUMBA_NUM_THREADS=1`` is set before Numba loads: robust to a busy machine).
Three ways to the same plateau, each after a warm-up that compiles its
kernels:

* ``dopri5`` alone, rtol 1e-6, stopped by a CPU budget (``--budget``
  seconds, through ``max_wall``): the time it reached;
* ``sdirk4`` alone, rtol 1e-6, to ``T``;
* ``dopri5`` while clusters form (to ``--switch``), then ``sdirk4`` from that
  frame to ``T`` (what ``--resume --integrator sdirk4`` does to a file);
* ``auto``, rtol 1e-6, to ``T``: the same hybrid with the switch chosen by the
  run (:mod:`particles.integrators.auto`; it runs after the rows above,
  which compiled its kernels: the same drift and layout).

The table gives CPU seconds, the time reached, accepted steps, cluster
counts (eps 0.05) and distinct positions at the end (equal: every cluster
collapsed to one point), and the speed-up in time reached per CPU-second.

Usage::

    python benchmarks/bench_stiff.py                       # n 1000, beta 12 and 16
    python benchmarks/bench_stiff.py --n 300 --betas 9 12 --T 1e6
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import time

import numpy as np

from particles import simulate
from particles.events import cluster_counts
from particles.machine import vector_width


def timed(n: int, beta: float, T: float, x0=None, **kw) -> dict:
    """One run after a warm-up with the same kernels: CPU seconds, time reached,
    accepted steps, clusters and distinct positions at its last frame."""
    common = dict(seed=1, observables=("order",), **kw)
    simulate(n, 2, beta, T=2.0, save_times="log:0.1:2:3", x0=x0, **common)
    t0 = time.process_time()
    tr = simulate(n, 2, beta, T=T, save_times=f"log:0.1:{T:g}:{4 * int(np.log10(T)) + 4}",
                  x0=x0, **common)
    cpu = time.process_time() - t0
    last = tr.positions[-1].reshape(n, 2)
    return dict(cpu=cpu, reached=float(tr.times[-1]),
                steps=int(np.asarray(tr.observables["accepted_steps"]).ravel()[-1]),
                clusters=int(cluster_counts(last[None])[0]),
                distinct=len(np.unique(last, axis=0)), last=last, switch=tr.switch_time)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--betas", type=float, nargs="+", default=[12.0, 16.0])
    parser.add_argument("--T", type=float, default=1e7)
    parser.add_argument("--switch", type=float, default=100.0)
    parser.add_argument("--budget", type=float, default=120.0)
    args = parser.parse_args()
    print(f"CPU vector width {vector_width()} bits; one thread, process CPU-seconds; circle, "
          f"SA, n {args.n}, rtol 1e-6, uniform start, seed 1\n")
    print("| beta | run | CPU s | t reached | accepted steps | clusters | distinct points |")
    print("|---|---|---|---|---|---|---|")
    for beta in args.betas:
        rows = {"dopri5 (budget)": timed(args.n, beta, args.T, integrator="dopri5",
                                         max_wall=args.budget),
                "sdirk4": timed(args.n, beta, args.T, integrator="sdirk4")}
        first = timed(args.n, beta, args.switch, integrator="dopri5")
        then = timed(args.n, beta, args.T, x0=first["last"], integrator="sdirk4")
        hybrid = f"dopri5 to {args.switch:g}, then sdirk4"
        rows[hybrid] = dict(
            then, cpu=first["cpu"] + then["cpu"], reached=args.switch + then["reached"],
            steps=first["steps"] + then["steps"])
        chosen = timed(args.n, beta, args.T, integrator="auto")
        switch = "never" if chosen["switch"] is None else f"t = {chosen['switch']:.3g}"
        rows[f"auto (switched at {switch})"] = chosen
        for name, r in rows.items():
            print(f"| {beta:g} | {name} | {r['cpu']:.1f} | {r['reached']:.3g} | {r['steps']} | "
                  f"{r['clusters']} | {r['distinct']} |")
        base = rows["dopri5 (budget)"]
        for name, r in list(rows.items())[1:]:
            gain = (r["reached"] / r["cpu"]) / (base["reached"] / base["cpu"])
            print(f"|  | {name}: time reached per CPU-second / dopri5's | {gain:.1f}x |||||")
        print(f"|  | auto: CPU seconds / the manual hybrid's | "
              f"{chosen['cpu'] / rows[hybrid]['cpu']:.2f} |||||")


if __name__ == "__main__":
    main()
