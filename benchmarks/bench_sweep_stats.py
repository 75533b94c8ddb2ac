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

``--merges`` adds the row of located merges (issue 41's acceptance item): a
sweep of one grid point, 64 systems of n = 256 tokens on the circle at
beta = 9 (SA, dopri5, a log save grid of 10 times per decade to T = 1e4),
with ``merge_events``, one run; it prints the Kaplan-Meier first-merge
quantiles from the located merges beside those from the save grid (the
frame-based per-system times the same file stores), the save grid's bracket
``(t_{e-1}, t_e]`` of each frame-based quantile and whether the located one
lies in it, their ratios, and the wall time (``--baseline``: also the same
sweep without merge events, and the ratio of the two times).  ``--quick``
makes it small (16 systems of n = 64) to check the script.

Usage::

    python benchmarks/bench_sweep_stats.py
    python benchmarks/bench_sweep_stats.py --threads 2 --repeats 20
    python benchmarks/bench_sweep_stats.py --merges --baseline
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

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


def merges_row(*, quick: bool, baseline: bool) -> None:
    """The located-merges row (see the module docstring)."""
    from particles.analysis.ensemble import ensemble_stats
    from particles.io.sweep import read_contents
    from particles.sweep import SweepSpec, load, run_sweep

    n, runs = (64, 16) if quick else (256, 64)
    spec = SweepSpec(base=dict(n=n, d=2, integrator="dopri5", T=1e4,
                               save_times="log:0.01:1e4:60"),
                     axes=(("beta", (9.0,)),), runs=runs, seed=1, merge_events=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "merges.h5"
        t0 = time.perf_counter()
        run_sweep(spec, path)
        seconds = time.perf_counter() - t0
        plain = None
        if baseline:
            t0 = time.perf_counter()
            run_sweep(spec.replace(merge_events=False), Path(tmp) / "plain.h5")
            plain = time.perf_counter() - t0
        ds = load(path)
        data = read_contents(path)
    times = ds.time.values
    systems = data["systems"]
    counts = systems["cluster_count"][0]
    grid = ensemble_stats(times, counts.T, systems["formation_time"][0],
                          systems["first_merge_time"][0], levels=ds["quantile"].values)
    located = ds.first_merge_time.values[0]
    print(f"\nlocated merges: {runs} systems, n = {n}, circle, beta = 9, dopri5, T = 1e4, "
          f"{len(times)} save times; {data['merges']['time'].size} merges located; "
          f"first merge over {grid.first_merge.systems} systems at risk, "
          f"{grid.first_merge.censored} censored at T")
    print(f"{'quantile':>8} {'located':>10} {'save grid':>10} {'bracket':>21} {'inside':>6} "
          f"{'ratio':>6}")
    for q, a, b in zip(ds["quantile"].values, located, grid.first_merge_quantiles, strict=True):
        if not np.isfinite(b):
            print(f"{q:8.2f} {a:10.4g} {'> T':>10}")
            continue
        e = int(np.searchsorted(times, b))
        lo = times[e - 1]
        inside = "yes" if lo < a <= b else "NO"
        print(f"{q:8.2f} {a:10.4g} {b:10.4g} ({lo:9.4g}, {b:9.4g}] {inside:>6} {a / b:6.3f}")
    line = f"wall {seconds:.1f} s with merge events"
    if plain is not None:
        line += f", {plain:.1f} s without ({seconds / plain:.2f}x)"
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--merges", action="store_true",
                        help="only the row of located merges (a sweep with merge events)")
    parser.add_argument("--baseline", action="store_true",
                        help="with --merges: also time the sweep without merge events")
    parser.add_argument("--quick", action="store_true",
                        help="with --merges: 16 systems of n = 64 (checks the script)")
    args = parser.parse_args()
    if args.merges:
        merges_row(quick=args.quick, baseline=args.baseline)
        return
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
