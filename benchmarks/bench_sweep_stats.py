"""Seconds per frame-system of the sweep's statistics (``frame_statistics``).

One frame of a sweep task is reduced to per-system statistics by
:func:`particles.observables.pairs.frame_statistics`: close pairs at several
thresholds, the cluster count of the components detector and the energy,
one compiled pass over the pairs.  This prints, for the papers' ensembles
``(systems, n, d) = (2048, 32, 2)``, ``(2048, 32, 3)`` and a large-n case
``(64, 2000, 3)``, the seconds per frame-system on three kinds of frames:

* ``uniform``: independent uniform tokens (few close pairs, n clusters);
* ``clustered``: 1 to 4 tight clusters (almost every pair of a cluster
  linked), what most frames of a sweep look like after the first layers;
* ``mixed``: half and half,

and the exp bound for the case: ``pairs / E`` seconds per frame-system,
with ``E`` the rate of the kernels' vectorised exp (:func:`particles.fastexp.exp_row`,
one thread, measured in the same run on an L1-resident row), i.e. what the
energy's one exponential per pair costs alone.  ``x bound`` is the time over
that bound (1.0 = nothing but the exponentials).

Times are the best of ``--repeats`` calls on the whole batch, ``--threads``
Numba threads (default 1: the per-thread cost).

Usage::

    python benchmarks/bench_sweep_stats.py
    python benchmarks/bench_sweep_stats.py --threads 2 --repeats 20
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from particles.fastexp import exp_row
from particles.observables.pairs import frame_statistics
from particles.sweep.grid import DEFAULT_DELTAS

CASES = [(2048, 32, 2), (2048, 32, 3), (64, 2000, 3)]
EPS = 0.05
BETA = 2.0


def frames(B: int, n: int, d: int, kind: str, seed: int = 0) -> np.ndarray:
    """(B, n, d) unit vectors: 'uniform', 'clustered' or 'mixed' (half each)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, n, d))
    start = {"uniform": B, "clustered": 0, "mixed": B // 2}[kind]
    for b in range(start, B):
        k = int(rng.integers(1, 5))
        centres = rng.standard_normal((k, d))
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
        spread = EPS / 10 * rng.random()
        x[b] = centres[rng.integers(0, k, n)] + rng.standard_normal((n, d)) * spread
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return np.ascontiguousarray(x)


def exp_rate(repeats: int) -> float:
    """Exponentials per second of exp_row, one thread, on a 4096-element row."""
    row = np.random.default_rng(1).uniform(-18.0, 0.0, 4096)
    buf = row.copy()
    exp_row(row, buf)
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(50):
            exp_row(row, buf)
        best = min(best, time.perf_counter() - t)
    return 50 * row.size / best


def seconds_per_system(x: np.ndarray, repeats: int) -> float:
    deltas = np.asarray(DEFAULT_DELTAS)
    masses = np.ones(x.shape[1])
    frame_statistics(x, deltas, EPS, BETA, masses)  # compile or load
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        frame_statistics(x, deltas, EPS, BETA, masses)
        best = min(best, time.perf_counter() - t)
    return best / x.shape[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    numba.set_num_threads(args.threads)
    rate = exp_rate(args.repeats)
    print(f"exp rate E = {rate / 1e9:.2f} G/s (one thread); statistics on {args.threads} thread(s)")
    print(f"{'systems':>7} {'n':>5} {'d':>2} {'frames':>9} {'s/frame-system':>15} "
          f"{'exp bound':>10} {'x bound':>8}")
    for B, n, d in CASES:
        bound = n * (n - 1) / 2 / rate / args.threads
        for kind in ("uniform", "clustered", "mixed"):
            s = seconds_per_system(frames(B, n, d, kind), args.repeats)
            print(f"{B:7d} {n:5d} {d:2d} {kind:>9} {s:15.3e} {bound:10.3e} {s / bound:8.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
