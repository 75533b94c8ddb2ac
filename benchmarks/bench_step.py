"""Seconds per Transformer-layer step: particles vs a plain NumPy baseline.

The baseline is the papers' style of code: batched matmul for the scores,
softmax with the max shift, a second matmul, residual update and layer
normalisation, all in NumPy (float64).  particles runs the same Euler layer
(``integrator="euler"``) through its compiled runners.  Both are timed side by
side in one process; the table prints seconds per step and the speed-up.

Usage::

    python benchmarks/bench_step.py            # full table, 3 rounds (a few minutes)
    python benchmarks/bench_step.py --rounds 5 # more rounds on a busy host
    python benchmarks/bench_step.py --quick    # small sizes only
    python benchmarks/bench_step.py --memory   # peak RSS of one n=100000, d=3 step

Reference numbers for the machine are measured in the same run: the float64
GEMM rate F and the rate E of the kernels' vectorised exp (one thread's rate
times the threads); the
table's roofline column is the bound ``pairs * (4 d / F + 1 / E)`` seconds
per step (two n x n x d products and one exp per pair) and the fraction of it
reached (1.0 = at the machine's limit).

Shared hosts slow down in phases that last seconds to minutes, and they slow
the many-branched step code more than the one-loop reference kernels.  So the
cases are timed in ``--rounds`` rounds, each round measuring F, E and every
case once, so that one case's trials lie tens of seconds apart, not back to back: the
table gives each case's best time with the best F and E of all rounds (the
machine's limit as measured: the smallest bound, so the strictest fraction),
and the median over rounds beside it.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

import numba
import numpy as np

from particles._numba import compile_target, kernel_vector_bits
from particles.config import SimulationConfig
from particles.engine import _blas_guard, execution_plan
from particles.fastexp import exp_row
from particles.integrators.driver import fixed_runner
from particles.integrators.noise import no_keys
from particles.machine import vector_width
from particles.models import build_field

CASES = [
    # (label, n, d, batch)
    ("ensemble", 32, 3, 1024),
    ("circle", 64, 2, None),
    ("medium", 1024, 16, None),
    ("large d", 4096, 64, None),
    ("large n", 16384, 3, None),
]


def numpy_layer(X: np.ndarray, beta: float, h: float, Q: np.ndarray | None = None,
                K: np.ndarray | None = None, V: np.ndarray | None = None) -> np.ndarray:
    """One Transformer layer in NumPy; X of shape (batch, n, d), optional
    per-system weights Q, K, V of shape (batch, d, d) (identity when None)."""
    q, k, v = (X if M is None else X @ M.transpose(0, 2, 1) for M in (Q, K, V))
    S = beta * (q @ k.transpose(0, 2, 1))
    S -= S.max(axis=-1, keepdims=True)
    A = np.exp(S)
    A /= A.sum(axis=-1, keepdims=True)
    X = X + h * (A @ v)
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def _time(fn, min_time: float = 1.0, max_reps: int = 1000) -> float:
    """Best-of-3 seconds per call, each trial running at least ``min_time``."""
    fn()  # warm-up (compilation, page faults)
    best = np.inf
    for _ in range(3):
        reps, t0 = 0, time.perf_counter()
        while True:
            fn()
            reps += 1
            dt = time.perf_counter() - t0
            if dt >= min_time / 3 or reps >= max_reps:
                break
        best = min(best, dt / reps)
    return best


def particles_step_time(n: int, d: int, batch: int | None, beta: float, h: float,
                        steps: int) -> tuple[float, str]:
    """Seconds per Euler step through the compiled runner, and the path taken."""
    config = SimulationConfig(n=n, d=d, beta=beta, integrator="euler", dt=h, batch=batch)
    field = build_field(config)
    layout, drift, wsize = execution_plan(config, field)
    run = fixed_runner("euler", drift, layout)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(batch or 1, n, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)

    def go():
        with _blas_guard(field, layout):
            run(X, 0.0, steps, h, field.params, wsize, no_keys(X.shape[0]), 0)

    return _time(go) / steps, f"{field.name}/{layout}"


def numpy_step_time(n: int, d: int, batch: int | None, beta: float, h: float) -> float:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(batch or 1, n, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    return _time(lambda: numpy_layer(X, beta, h))


def gemm_rate() -> float:
    """Measured float64 GEMM rate of this machine (FLOP/s), 2048^3."""
    a = np.random.default_rng(0).normal(size=(2048, 2048))
    t = _time(lambda: a @ a)
    return 2 * 2048**3 / t


def exp_rate() -> float:
    """Rate of the kernels' vectorised float64 exp (exp/s): one thread's measured
    rate times the Numba threads (the bound assumes perfect scaling; a
    parallel measurement on a loaded machine measures the load instead)."""
    a = np.random.default_rng(0).uniform(-20.0, 0.0, size=1 << 16)  # in L2
    out = np.empty_like(a)
    return a.size * numba.get_num_threads() / _time(lambda: exp_row(a, out))


def roofline(n: int, d: int, batch: int | None, flops: float, exps: float) -> float:
    """Seconds per step at the machine's limits: ``pairs * (4 d / F + 1 / E)``
    (two n x n x d products and one exp per pair)."""
    pairs = (batch or 1) * n * n
    return pairs * (4 * d / flops + 1 / exps)


def memory_case(n: int = 100_000, d: int = 3) -> None:
    """Advance n tokens in d dimensions by one step; print the peak RSS."""
    config = SimulationConfig(n=n, d=d, beta=1.0, integrator="euler", dt=0.01)
    field = build_field(config)
    layout, drift, wsize = execution_plan(config, field)
    run = fixed_runner("euler", drift, layout)
    X = np.random.default_rng(0).normal(size=(1, n, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    t0 = time.perf_counter()
    run(X, 0.0, 1, 0.01, field.params, wsize, no_keys(1), 0)
    t1 = time.perf_counter()
    run(X, 0.0, 1, 0.01, field.params, wsize, no_keys(1), 0)
    t2 = time.perf_counter()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"n={n} d={d}: first step (with compile) {t1 - t0:.1f} s, step {t2 - t1:.2f} s, "
          f"peak RSS {peak_mb:.0f} MB (state {X.nbytes / 2**20:.1f} MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small cases only")
    parser.add_argument("--memory", action="store_true", help="n=100000 peak-memory case")
    parser.add_argument("--beta", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds over all cases (best and median reported)")
    args = parser.parse_args()
    if args.memory:
        # a fresh process, so the peak RSS belongs to this case alone
        subprocess.run([sys.executable, "-c",
                        "from benchmarks.bench_step import memory_case; memory_case()"],
                       check=True)
        return
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    cases = CASES[:2] if args.quick else CASES
    h = 0.01
    target = compile_target()
    print(f"CPU {target['cpu']}: vector width {vector_width()} bits, kernels compiled to "
          f"{kernel_vector_bits()}-bit vectors (features: {target['choice']})")
    print(f"numba threads: {numba.get_num_threads()}, threading layer: "
          f"{numba.config.THREADING_LAYER}, beta={args.beta}, float64, "
          f"{args.rounds} round(s)")
    flops, exps = [], []
    ours: dict[str, list[float]] = {label: [] for label, *_ in cases}
    numpy_s, paths = {}, {}
    for r in range(args.rounds):
        flops.append(gemm_rate())
        exps.append(exp_rate())
        for label, n, d, batch in cases:
            steps = max(1, int(2e7 // ((batch or 1) * n * n)))
            t, paths[label] = particles_step_time(n, d, batch, args.beta, h, steps)
            ours[label].append(t)
            if r == 0:  # the baseline is for the speed-up only
                numpy_s[label] = numpy_step_time(n, d, batch, args.beta, h)
        print(f"round {r + 1}: F {flops[-1] / 1e9:.1f} GFLOP/s, E {exps[-1] / 1e9:.2f} G/s",
              file=sys.stderr)
    rate, erate = max(flops), max(exps)
    print(f"float64 GEMM rate F: {rate / 1e9:.1f} GFLOP/s; vectorised exp rate E: "
          f"{erate / 1e9:.2f} G/s (best of the rounds; per round F "
          f"{min(flops) / 1e9:.1f}-{max(flops) / 1e9:.1f}, E "
          f"{min(exps) / 1e9:.2f}-{max(exps) / 1e9:.2f})")
    print("bound = pairs * (4 d / F + 1 / E); 'of bound' = bound / particles s/step "
          "(best round; median round beside it); 'of F' = GFLOP/s / F")
    print()
    header = (f"{'case':<10} {'n':>6} {'d':>4} {'batch':>6} {'path':>14} "
              f"{'numpy s/step':>13} {'particles s/step':>17} {'speed-up':>9} {'GFLOP/s':>8} "
              f"{'of F':>5} {'bound s/step':>13} {'of bound':>9} {'median':>7}")
    print(header)
    print("-" * len(header))
    for label, n, d, batch in cases:
        pairs = (batch or 1) * n * n
        t_ours = min(ours[label])
        t_med = float(np.median(ours[label]))
        t_np = numpy_s[label]
        gflops = 4 * d * pairs / t_ours / 1e9  # two n x n x d products per step
        bound = roofline(n, d, batch, rate, erate)
        print(f"{label:<10} {n:>6} {d:>4} {batch or '-':>6} {paths[label]:>14} {t_np:>13.3e} "
              f"{t_ours:>17.3e} {t_np / t_ours:>8.1f}x {gflops:>8.1f} "
              f"{gflops * 1e9 / rate:>5.2f} {bound:>13.3e} "
              f"{bound / t_ours:>9.2f} {bound / t_med:>7.2f}")


if __name__ == "__main__":
    main()
