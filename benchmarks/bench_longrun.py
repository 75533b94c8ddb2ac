"""The second time scale: a metastable run to T = 1e4 and 1e6, direct against fast paths.

Circle, SA, beta = 9, n = 1000 tokens from a uniform start, dopri5 at rtol
1e-8, 100 log-spaced save times: the direct method (``summation="direct"``,
``collapse_tol=0``) and the fast paths (``summation="spectral"``, named: the
default ``auto`` sums directly below n = 1024, and collapsed clusters, the
default) side by side in one run,
each after a warm-up run that compiles (or loads) its kernels (the fast
paths: the better of two whole runs, since the runners on the collapsed
groups compile during the first).  The table
gives wall seconds, steps, the cluster counts of every save time compared,
and the times at which the count drops (merges, at the resolution of the save
grid) compared; then the fast run to T = 1e6.  Last, both T = 1e4 runs again
with ``merge_events=True``: the merges located by bisection to the step
tolerance (:mod:`particles.events`), compared time by time, and what
locating them costs.

Usage::

    python benchmarks/bench_longrun.py          # about four minutes
    python benchmarks/bench_longrun.py --n 300  # a smaller system
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from particles import simulate
from particles.analysis.clusters import detect
from particles.machine import vector_width


def run(n: int, T: float, frames: int, *, twice: bool = False, **kw):
    """A timed run and its cluster counts, after a short warm-up with the same
    kernels; with ``twice`` the better of two whole runs (the runners on the
    collapsed groups, another layout, compile during the first)."""
    common = dict(integrator="dopri5", rtol=1e-8, seed=1, observables=("order",), **kw)
    simulate(n, 2, 9.0, T=1.0, save_times="log:0.01:1:3", **common)
    wall = float("inf")
    for _ in range(2 if twice else 1):
        t = time.perf_counter()
        tr = simulate(n, 2, 9.0, T=T, save_times=f"log:0.01:{T:g}:{frames}", **common)
        wall = min(wall, time.perf_counter() - t)
    counts = detect(tr.positions, eps=0.05)[1]
    return wall, int(tr.observables["accepted_steps"][-1]), tr.times, counts, tr.merge_events


def located_slow(merges, final: int) -> np.ndarray:
    """Times of the located merges once at most ``final + 10`` clusters remain."""
    return np.array([m.time for m in merges if m.before <= final + 10])


def drops(times: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Save times at which the cluster count fell (after the clusters formed)."""
    formed = int(np.argmax(counts <= counts[-1] + 10))
    idx = np.flatnonzero(np.diff(counts[formed:]) < 0) + formed + 1
    return times[idx]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--frames", type=int, default=100)
    args = parser.parse_args()
    print(f"CPU vector width {vector_width()} bits; circle, SA, beta 9, n {args.n}, "
          f"dopri5 rtol 1e-8, {args.frames} log-spaced frames\n")
    slow = run(args.n, 1e4, args.frames, summation="direct", collapse_tol=0.0)
    fast = run(args.n, 1e4, args.frames, twice=True, summation="spectral")
    print("| run | T | wall s | accepted steps | final clusters |")
    print("|---|---|---|---|---|")
    for name, r in (("direct", slow), ("spectral + collapsed", fast)):
        print(f"| {name} | 1e4 | {r[0]:.2f} | {r[1]} | {r[3][-1]} |")
    longer = run(args.n, 1e6, int(args.frames * 1.5), summation="spectral")
    print(f"| spectral + collapsed | 1e6 | {longer[0]:.2f} | {longer[1]} | {longer[3][-1]} |")
    same = np.array_equal(slow[3], fast[3])
    a, b = drops(slow[2], slow[3]), drops(fast[2], fast[3])
    print(f"\nspeed-up at T = 1e4: {slow[0] / fast[0]:.0f}x; cluster counts equal at every "
          f"save time: {same}")
    if a.size == b.size:
        worst = np.max(np.abs(a - b) / a) if a.size else 0.0
        print(f"merge times (save-grid resolution): {a.size} in both, largest relative "
              f"difference {worst:.2%}")
    else:
        print(f"merge times: {a.size} direct, {b.size} fast: {a} vs {b}")
    slow_ev = run(args.n, 1e4, args.frames, summation="direct", collapse_tol=0.0,
                  merge_events=True)
    fast_ev = run(args.n, 1e4, args.frames, twice=True, summation="spectral", merge_events=True)
    a = located_slow(slow_ev[4], int(slow[3][-1]))
    b = located_slow(fast_ev[4], int(fast[3][-1]))
    print(f"\nwith merge events: direct {slow_ev[0]:.2f} s ({slow_ev[0] / slow[0]:.2f}x without), "
          f"fast {fast_ev[0]:.2f} s ({fast_ev[0] / fast[0]:.2f}x without); "
          f"{len(slow_ev[4])} and {len(fast_ev[4])} merges located")
    if a.size == b.size and a.size:
        print(f"located merges after formation: {a.size} in both, at t = "
              f"{', '.join(f'{t:.4g}' for t in a)}; largest relative difference "
              f"{np.max(np.abs(a - b) / a):.2e}")
    else:
        print(f"located merges after formation: {a.size} direct, {b.size} fast: {a} vs {b}")


if __name__ == "__main__":
    main()
