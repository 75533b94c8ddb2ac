"""Seconds per drift evaluation, direct against spectral summation, side by side.

Every case evaluates the compiled field of one system on one thread (the
drift the runners call), best of three, after a warm-up call; ratios of the
two columns are measured in one run on one machine.  Direct sums too slow to
run (``--direct-max`` pairs) are extrapolated from the largest measured one
by ``n^2`` and marked ``~``.  The last rows time whole Euler steps at the
mean-field scale (n = 1e6, ``positions="none"``) in a child process, with its
peak memory.

Usage::

    python benchmarks/bench_spectral.py          # the table (a few minutes)
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

CASES = [  # (d, beta, n)
    (2, 1.0, 16384), (2, 10.0, 16384), (2, 10.0, 1_000_000),
    (3, 5.0, 32768), (3, 5.0, 65536), (3, 5.0, 1_000_000),
]
QUICK = [(2, 10.0, 4096), (3, 5.0, 8192)]


def seconds(field, X: np.ndarray, reps: int = 3) -> float:
    """Best of ``reps`` timed evaluations of a field's serial drift at X (n, d)."""
    out = np.empty_like(X)
    ws = np.empty(field.workspace(1))
    field.serial(X, field.params, out, ws)  # compile or load, warm up
    best = np.inf
    for _ in range(reps):
        t = time.perf_counter()
        field.serial(X, field.params, out, ws)
        best = min(best, time.perf_counter() - t)
    return best


STEP = """
import resource, time, numpy as np
from particles import simulate
kw = dict(integrator="euler", dt=0.1, positions="none", observables=("order",), seed=1,
          summation="spectral")
simulate(2000, {d}, {beta}, T=0.1, **kw)  # compile or load
t = time.perf_counter()
simulate({n}, {d}, {beta}, T=0.2, **kw)  # two steps
print((time.perf_counter() - t) / 2, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
"""


def step_row(d: int, beta: float, n: int) -> str:
    """Seconds per Euler step (two steps of a run, start-up included) and peak GiB."""
    out = subprocess.run([sys.executable, "-c", STEP.format(d=d, beta=beta, n=n)],
                         capture_output=True, text=True, check=True).stdout.split()
    step, peak = float(out[0]), float(out[1])
    return f"| {d} | {beta:g} | {n} | Euler step (run) | | {step:.3f} | peak {peak:.2f} GiB |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--direct-max", type=float, default=5.0e9,
                        help="largest n^2 timed directly (beyond: extrapolated)")
    args = parser.parse_args()
    numba.set_num_threads(1)
    print(f"CPU vector width {vector_width()} bits; one thread; best of 3 evaluations\n")
    print("| d | beta | n | degree | direct s | spectral s | direct / spectral |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    measured: dict[int, tuple[int, float]] = {}
    for d, beta, n in QUICK if args.quick else CASES:
        X = rng.normal(size=(n, d))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        config = SimulationConfig(n=n, d=d, beta=beta, summation="spectral")
        spec = build_field(config)
        t_spec = seconds(spec, X)
        if float(n) ** 2 <= args.direct_max:
            t_dir = seconds(build_field(SimulationConfig(n=n, d=d, beta=beta)), X, reps=1)
            measured[d] = (n, t_dir)
            shown = f"{t_dir:.4g}"
        else:
            n0, t0 = measured[d]
            t_dir = t0 * (n / n0) ** 2
            shown = f"~{t_dir:.4g}"
        degree = ("K" if d == 2 else "L") + str(spectral.degree(config))
        print(f"| {d} | {beta:g} | {n} | {degree} | {shown} | {t_spec:.4g} "
              f"| {t_dir / t_spec:.0f}x |")
    if not args.quick:
        for d, beta in ((2, 10.0), (3, 5.0)):
            print(step_row(d, beta, 1_000_000))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"\n(peak memory of this process {peak:.2f} GiB)")


if __name__ == "__main__":
    main()
