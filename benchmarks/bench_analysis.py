"""Seconds of ``particles analyze`` on large S^2 files, and of each of its parts.

Writes a synthetic trajectory of ``--frames`` frames of n tokens on S^2 (no
integrator: uniform tokens contracting onto 20 centres as ``exp(-t)``, two
pairs of centres merging in the last quarter, t from 1e-2 to 30), then prints

* per frame and part (one early, uniform-like frame and one late, clustered
  one): the cluster labels (components at eps 0.05), the scalars (energy,
  minimum, ...), the inner-product histogram; ``before`` the same with the
  pair loops (the cells, the large-system observables and the pair
  subsample switched off: n^2 pairs; skipped above ``--before-max``);
* the whole ``analyze_file`` (reading, tracking, writing the sidecar) of the
  file; ``before`` estimated from the per-frame parts times the frames.

``--crossover`` prints instead the milliseconds of the cluster labels of one
system by cells (:mod:`particles.analysis.cells`) and by the pair loop, for
d = 2 .. 16 and n = 250 .. 4000, uniform and clustered tokens: the rule
``use_cells`` (n >= 1000, d <= 8) is read from it.

Usage::

    python benchmarks/bench_analysis.py                      # n = 1e4 and 1e5, 100 frames
    python benchmarks/bench_analysis.py --n 100000 --frames 20
    python benchmarks/bench_analysis.py --crossover
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from particles.analysis import ClusterDetector, Scalars, _pairs, analyze_file, cells, large
from particles.analysis.histograms import pair_histogram
from particles.config import SimulationConfig
from particles.engine import Frame
from particles.io import TrajectoryWriter

BETA = 9.0


def positions(n: int, frames: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Times (frames,) and unit tokens (frames, n, 3)."""
    rng = np.random.default_rng(seed)
    times = np.concatenate([[0.0], np.geomspace(1e-2, 30.0, frames - 1)])
    centres = rng.standard_normal((20, 3))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    which = rng.integers(0, 20, n)
    u = rng.standard_normal((n, 3))
    x = np.empty((frames, n, 3))
    for f, t in enumerate(times):
        c = centres.copy()
        if f >= 3 * frames // 4:
            c[1], c[3] = c[0], c[2]
        y = c[which] * (1.0 - np.exp(-t)) + np.exp(-t) * u
        x[f] = y / np.linalg.norm(y, axis=1, keepdims=True)
    return times, x


def write(path: Path, times: np.ndarray, x: np.ndarray) -> Path:
    n = x.shape[1]
    config = SimulationConfig(n=n, d=3, beta=BETA, T=float(times[-1]), save_times=tuple(times),
                              seed=0)
    w = TrajectoryWriter.create(path, config)
    for f, t in enumerate(times):
        w.append(Frame(f, f, float(t), x[f][None], {"energy": np.zeros(1)}))
    w.close(complete=True)
    return path


@contextlib.contextmanager
def pair_loops() -> Iterator[None]:
    """Every part on its n^2 pair loop (the code before the cells)."""
    saved = cells.CELLS_MIN_N, large.LARGE_N, _pairs.PAIR_SAMPLE
    cells.CELLS_MIN_N = large.LARGE_N = _pairs.PAIR_SAMPLE = 10**12
    try:
        yield
    finally:
        cells.CELLS_MIN_N, large.LARGE_N, _pairs.PAIR_SAMPLE = saved


def parts(x: np.ndarray) -> dict[str, float]:
    """Seconds of each part on one frame x (n, 3)."""
    out = {}
    for name, fn in (("clusters", lambda: ClusterDetector(0.05).compute(x)),
                     ("scalars", lambda: Scalars(BETA).compute(x)),
                     ("histogram", lambda: pair_histogram(x[None], 50))):
        t = time.perf_counter()
        fn()
        out[name] = time.perf_counter() - t
    return out


def crossover(repeats: int = 5) -> None:
    """Cells against the pair loop for one system (module docstring)."""
    from particles.analysis.components import _components_batch

    rng = np.random.default_rng(1)
    cos_eps = float(np.cos(0.05))

    def best(fn) -> float:
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return min(times)

    print(f"{'d':>3} {'n':>5} {'tokens':>9} {'cells ms':>9} {'pairs ms':>9}")
    for d in (2, 3, 4, 8, 16):
        for n in (250, 500, 1000, 2000, 4000):
            for kind in ("uniform", "clustered"):
                if kind == "uniform":
                    x = rng.standard_normal((n, d))
                else:
                    c = rng.standard_normal((10, d))
                    x = c[rng.integers(0, 10, n)] + 0.01 * rng.standard_normal((n, d))
                x /= np.linalg.norm(x, axis=1, keepdims=True)
                labels = np.empty((1, n), dtype=np.int64)
                counts = np.empty(1, dtype=np.int64)
                a = best(lambda x=x: cells.cell_labels(x, cos_eps))
                b = best(lambda x=x, labels=labels, counts=counts: _components_batch(
                    x[None], cos_eps, labels, counts))
                print(f"{d:>3} {n:>5} {kind:>9} {a * 1e3:>9.2f} {b * 1e3:>9.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--before-max", type=int, default=100_000,
                    help="largest n timed on the pair loops")
    ap.add_argument("--crossover", action="store_true",
                    help="cells against the pair loop for small n (the rule use_cells)")
    args = ap.parse_args()
    if args.crossover:
        crossover()
        return
    warm = positions(large.LARGE_N, 4)[1][-1]
    parts(warm)  # load the compiled kernels once
    with pair_loops():
        parts(warm)
    print(f"{'n':>7} {'frame':>6} {'part':>10} {'before s':>9} {'after s':>8}")
    totals = {}
    for n in args.n:
        times, x = positions(n, args.frames)
        before_sum = 0.0
        for f in (1, args.frames - 1):
            after = parts(x[f])
            before = {}
            if n <= args.before_max:
                with pair_loops():
                    before = parts(x[f])
            for name, sec in after.items():
                b = before.get(name, np.nan)
                print(f"{n:>7} {f:>6} {name:>10} {b:>9.3f} {sec:>8.3f}")
            before_sum += sum(before.values()) / 2 if before else np.nan
        with tempfile.TemporaryDirectory() as tmp:
            path = write(Path(tmp) / "run.h5", times, x)
            t = time.perf_counter()
            analyze_file(path)
            totals[n] = (before_sum * args.frames, time.perf_counter() - t)
    print()
    print(f"{'n':>7} {'frames':>6} {'analyze before s (est.)':>24} {'after s':>8}")
    for n, (b, a) in totals.items():
        print(f"{n:>7} {args.frames:>6} {b:>24.1f} {a:>8.1f}")


if __name__ == "__main__":
    main()
