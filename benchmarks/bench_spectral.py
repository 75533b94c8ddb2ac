"""Seconds per drift evaluation: direct against spectral summation, and the
spectral sums against their implementation before issue 40, side by side.

Every case evaluates the compiled field of one system on one thread (the
drift the runners call), best of three process CPU times (robust to other
jobs on the host) after a warm-up call; ratios of columns are measured in one
run on one machine.  "before" is :mod:`benchmarks.spectral_before` (the
circle's serial recurrence per token; S^2 by four pairs of transforms).
Direct sums too slow to run (``--direct-max`` pairs) are extrapolated from the
largest measured one by ``n^2`` and marked ``~``.  Then the direct/spectral
crossover per dimension (the least n where the spectral drift is the
faster), S^2 at n = 1e6 on two threads (wall clock: the syntheses side by
side), and Euler steps at the mean-field scale (n = 1e6, the host's
threads: the runner's steps, a run's set-up apart) in a child process, with
its peak memory.

Usage::

    python benchmarks/bench_spectral.py          # the tables (a few minutes)
    python benchmarks/bench_spectral.py --quick  # small sizes
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

import numba
import numpy as np

from particles.config import SimulationConfig
from particles.fields import spectral
from particles.machine import vector_width
from particles.models import build_field

try:
    from benchmarks import spectral_before
except ModuleNotFoundError:  # run as a script: this directory is on the path
    import spectral_before

CASES = [  # (d, beta, n)
    (2, 1.0, 16384), (2, 10.0, 16384), (2, 10.0, 262144), (2, 10.0, 1_000_000),
    (3, 5.0, 32768), (3, 5.0, 65536), (3, 5.0, 1_000_000),
]
QUICK = [(2, 10.0, 4096), (3, 5.0, 8192)]
CROSSOVER = [32, 64, 128, 256, 512, 768, 1024, 1536, 2048, 4096]


def seconds(drift, X: np.ndarray, reps: int = 3, clock=time.process_time) -> float:
    """Best of ``reps`` timed calls ``drift(X, out)`` at X (n, d), after a warm-up."""
    out = np.empty_like(X)
    drift(X, out)  # compile or load, warm up
    best = np.inf
    for _ in range(reps):
        t = clock()
        drift(X, out)
        best = min(best, clock() - t)
    return best


def serial(field):
    """``drift(X, out)``: a field's serial drift with its own scratch."""
    ws = np.empty(field.workspace(1))
    return lambda X, out: field.serial(X, field.params, out, ws)


def before(field, d: int):
    """``drift(X, out)``: the same field's sums as they were before issue 40."""
    p = field.params
    if d == 3:
        return lambda X, out: spectral_before.sphere_before(X, p, out)
    ws = np.empty(field.workspace(1))
    return lambda X, out: spectral_before.circle_before(X, p, out, ws)


def tokens(rng, n: int, d: int) -> np.ndarray:
    X = rng.normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


STEP = """
import resource, time, numpy as np
from particles.config import SimulationConfig
from particles.engine import integrate
from particles.models import build_problem
from particles.runs.initial import initial_tokens

def problem(n):
    config = SimulationConfig(n=n, d={d}, beta={beta}, integrator="euler", dt=0.1, seed=1,
                              positions="none", observables=("order",), summation="spectral")
    return build_problem(config, initial_tokens(config, None))

grid = np.array([0.0, 0.5])  # five steps
for _ in integrate(problem(2000), "euler", grid, None, dt=0.1): pass  # compile or load
run = problem({n})
best = np.inf
for _ in range(3):
    t = time.perf_counter()
    for _ in integrate(run, "euler", grid, None, dt=0.1): pass
    best = min(best, time.perf_counter() - t)
print(best / 5, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
"""


def step_row(d: int, beta: float, n: int) -> str:
    """Seconds per Euler step (wall clock, the host's threads; best of three
    five-step integrations of one problem, its set-up apart) and peak GiB."""
    out = subprocess.run([sys.executable, "-c", STEP.format(d=d, beta=beta, n=n)],
                         capture_output=True, text=True, check=True).stdout.split()
    step, peak = float(out[0]), float(out[1])
    return (f"| {d} | {beta:g} | {n} | Euler step ({numba.config.NUMBA_NUM_THREADS} threads) "
            f"| | | {step:.3f} | | peak {peak:.2f} GiB |")


def crossover(d: int, beta: float, rng) -> str:
    """The least n of :data:`CROSSOVER` where the spectral drift beats the direct one."""
    cells = []
    first = None
    for n in CROSSOVER:
        X = tokens(rng, n, d)
        t_dir = seconds(serial(build_field(SimulationConfig(n=n, d=d, beta=beta,
                                                            summation="direct"))), X, reps=5)
        t_spec = seconds(serial(build_field(SimulationConfig(n=n, d=d, beta=beta,
                                                             summation="spectral"))), X, reps=5)
        cells.append(f"{n}: {t_dir / t_spec:.2g}")
        if first is None and t_spec < t_dir:
            first = n
    where = f"n = {first}" if first else f"beyond n = {CROSSOVER[-1]}"
    return (f"d = {d}, beta = {beta:g}: spectral faster from {where}, the cost model "
            f"predicts n = {predicted(d, beta)}, auto picks it from n = "
            f"{predicted(d, beta, auto=True)} (direct / spectral: {', '.join(cells)})")


def predicted(d: int, beta: float, auto: bool = False) -> int:
    """The least n where :func:`particles.fields.spectral.costs` puts the series
    below the direct sums (``auto``: where ``summation="auto"`` picks it)."""
    n = 16
    while True:
        config = SimulationConfig(n=n, d=d, beta=beta, summation="auto" if auto else "spectral")
        if auto and config.summation == "spectral":
            return n
        direct, spec = spectral.costs(n, d, spectral.degree(config))
        if not auto and spec < direct:
            return n
        n += 16


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--direct-max", type=float, default=5.0e9,
                        help="largest n^2 timed directly (beyond: extrapolated)")
    args = parser.parse_args()
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    print(f"CPU vector width {vector_width()} bits; one thread, process CPU seconds, "
          "best of 3 evaluations\n")
    print("| d | beta | n | degree | direct s | before s | spectral s | before / spectral "
          "| direct / spectral |")
    print("|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    measured: dict[int, tuple[int, float]] = {}
    for d, beta, n in QUICK if args.quick else CASES:
        X = tokens(rng, n, d)
        config = SimulationConfig(n=n, d=d, beta=beta, summation="spectral")
        spec = build_field(config)
        t_spec = seconds(serial(spec), X)
        t_before = seconds(before(spec, d), X)
        if float(n) ** 2 <= args.direct_max:
            t_dir = seconds(serial(build_field(SimulationConfig(n=n, d=d, beta=beta,
                                                                summation="direct"))), X, reps=1)
            measured[d] = (n, t_dir)
            shown = f"{t_dir:.4g}"
        else:
            n0, t0 = measured[d]
            t_dir = t0 * (n / n0) ** 2
            shown = f"~{t_dir:.4g}"
        degree = ("K" if d == 2 else "L") + str(spectral.degree(config))
        print(f"| {d} | {beta:g} | {n} | {degree} | {shown} | {t_before:.4g} | {t_spec:.4g} "
              f"| {t_before / t_spec:.2f}x | {t_dir / t_spec:.0f}x |")
    print()
    for d, beta in ((2, 1.0), (2, 10.0), (3, 5.0)):
        print(crossover(d, beta, rng))
    if not args.quick and threads > 1:
        n = 1_000_000
        X = tokens(rng, n, 3)
        spec = build_field(SimulationConfig(n=n, d=3, beta=5.0, summation="spectral"))
        one = seconds(serial(spec), X, clock=time.perf_counter)
        numba.set_num_threads(2)
        two = seconds(serial(spec), X, clock=time.perf_counter)
        old = seconds(before(spec, 3), X, clock=time.perf_counter)
        numba.set_num_threads(1)
        print(f"\nS^2 n = 1e6, wall clock: one thread {one:.3f} s, two threads {two:.3f} s "
              f"(before: {old:.3f} s, one thread always): before / two threads "
              f"{old / two:.2f}x")
    if not args.quick:
        print()
        for d, beta in ((2, 10.0), (3, 5.0)):
            print(step_row(d, beta, 1_000_000))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"\n(peak memory of this process {peak:.2f} GiB)")


if __name__ == "__main__":
    main()
