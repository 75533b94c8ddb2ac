"""Seconds per Transformer-layer step: particles against the scripts researchers write.

The contenders, timed side by side in one process on the same tokens:

* **numpy**: the papers' style of code (batched matmul for the scores, softmax
  with the max shift, a second matmul, residual update, layer normalisation),
  float64;
* **SDPA f64 / f32**: the same layer as a five-line torch script around
  ``torch.nn.functional.scaled_dot_product_attention`` (``scale=beta``), in
  float64 and in float32 (skipped with a line when torch is not installed);
* **particles**: the Euler layer (``integrator="euler"``) through its compiled
  runners, float64.

Each case is timed twice: on **one thread** in process CPU-seconds (robust
to other load on the host) and on **two threads** in wall-clock seconds
(what a user waits for). Numba, torch and BLAS are limited to the same
number of threads.

Reference rates are measured in the same run: the float64 GEMM rate F and
the best float64 exp rate E* on one thread (ours, numpy's and, when present,
torch's: the CPU's best exp, not only ours). The bound is
``pairs * (4 d / F + 1 / E*)`` seconds per step on one thread (two
n x n x d products and one exp per pair), halved for two threads; "of bound"
is bound / particles' time (1.0 = at the machine's limit).

Shared hosts slow down in phases, so the cases are timed in ``--rounds``
rounds and each contender's best round is reported (the median of
particles' rounds beside it).

Usage::

    python benchmarks/bench_step.py            # full table, 3 rounds (several minutes)
    python benchmarks/bench_step.py --rounds 5 # more rounds on a busy host
    python benchmarks/bench_step.py --quick    # the two small cases, 1 round
    python benchmarks/bench_step.py --memory   # peak RSS of one n=100000, d=3 step
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from particles._numba import compile_target, kernel_vector_bits
from particles.config import SimulationConfig
from particles.engine import blas_guard, execution_plan
from particles.fastexp import exp_row
from particles.integrators.driver import fixed_runner
from particles.integrators.noise import no_keys
from particles.machine import vector_width
from particles.models import build_field

try:  # an optional contender: the table says when it is missing
    import torch
    import torch.nn.functional as torch_functional
except ImportError:  # pragma: no cover - depends on the host
    torch = None

CASES = [
    # (label, n, d, batch)
    ("ensemble", 32, 3, 1024),
    ("circle", 64, 2, None),
    ("medium", 1024, 16, None),
    ("large d", 4096, 64, None),
    ("large n", 16384, 3, None),
]

#: (threads, clock name, clock): one thread in process CPU-seconds, two in wall-clock.
MODES = [(1, "CPU s", time.process_time), (2, "wall s", time.perf_counter)]


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


def torch_layer(X, beta: float, h: float):
    """The same layer as a researcher's torch script: X a tensor of shape (batch, n, d)."""
    Y = X + h * torch_functional.scaled_dot_product_attention(X, X, X, scale=beta)
    return Y / torch.linalg.vector_norm(Y, dim=-1, keepdim=True)


@contextlib.contextmanager
def threads(k: int) -> Iterator[None]:
    """Numba, torch and BLAS limited to ``k`` threads."""
    before = numba.get_num_threads(), (torch.get_num_threads() if torch else None)
    numba.set_num_threads(min(k, numba.config.NUMBA_NUM_THREADS))
    if torch:
        torch.set_num_threads(k)
    try:
        with threadpool_limits(limits=k):
            yield
    finally:
        numba.set_num_threads(before[0])
        if torch:
            torch.set_num_threads(before[1])


def _time(fn: Callable[[], object], clock: Callable[[], float] = time.perf_counter,
          min_time: float = 1.0, max_reps: int = 1000) -> float:
    """Best-of-3 ``clock`` seconds per call, each trial running at least ``min_time``."""
    fn()  # warm-up (compilation, page faults)
    best = np.inf
    for _ in range(3):
        reps, t0 = 0, clock()
        while True:
            fn()
            reps += 1
            dt = clock() - t0
            if dt >= min_time / 3 or reps >= max_reps:
                break
        best = min(best, dt / reps)
    return best


def _tokens(n: int, d: int, batch: int | None) -> np.ndarray:
    X = np.random.default_rng(0).normal(size=(batch or 1, n, d))
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def particles_step(n: int, d: int, batch: int | None, beta: float, h: float
                   ) -> tuple[Callable[[], object], int, str]:
    """``(call, steps per call, path)`` of the compiled Euler runner under the
    current thread count (the layout follows it)."""
    steps = max(1, int(2e7 // ((batch or 1) * n * n)))
    config = SimulationConfig(n=n, d=d, beta=beta, integrator="euler", dt=h, batch=batch,
                              summation="direct")  # the direct sums, at every n
    field = build_field(config)
    layout, drift, wsize = execution_plan(config, field)
    run = fixed_runner("euler", drift, layout)
    X = _tokens(n, d, batch)

    def go():
        with blas_guard(field, layout):
            run(X, 0.0, steps, h, field.params, wsize, no_keys(X.shape[0]), 0)

    return go, steps, f"{field.name}/{layout}"


def contenders(n: int, d: int, batch: int | None, beta: float, h: float
               ) -> dict[str, tuple[Callable[[], object], int]]:
    """Name -> ``(call, steps per call)`` of the baselines."""
    X = _tokens(n, d, batch)
    out = {"numpy": ((lambda: numpy_layer(X, beta, h)), 1)}
    if torch is not None:
        for name, dtype in (("SDPA f64", torch.float64), ("SDPA f32", torch.float32)):
            T = torch.from_numpy(X).to(dtype)
            out[name] = ((lambda T=T: torch_layer(T, beta, h)), 1)
    return out


def gemm_rate(clock: Callable[[], float]) -> float:
    """Measured float64 GEMM rate under the current thread limit (FLOP/s), 2048^3."""
    a = np.random.default_rng(0).normal(size=(2048, 2048))
    return 2 * 2048**3 / _time(lambda: a @ a, clock)


def exp_rates(clock: Callable[[], float]) -> dict[str, float]:
    """float64 exp/s of every exp at hand on one thread, on an array in L2."""
    a = np.random.default_rng(0).uniform(-20.0, 0.0, size=1 << 16)
    out = np.empty_like(a)
    rates = {"particles": a.size / _time(lambda: exp_row(a, out), clock),
             "numpy": a.size / _time(lambda: np.exp(a, out=out), clock)}
    if torch is not None:
        t, o = torch.from_numpy(a), torch.empty(a.size, dtype=torch.float64)
        rates["torch"] = a.size / _time(lambda: torch.exp(t, out=o), clock)
    return rates


def roofline(n: int, d: int, batch: int | None, flops: float, exps: float) -> float:
    """Seconds per step at the machine's limits: ``pairs * (4 d / F + 1 / E)``
    (two n x n x d products and one exp per pair)."""
    pairs = (batch or 1) * n * n
    return pairs * (4 * d / flops + 1 / exps)


def memory_case(n: int = 100_000, d: int = 3) -> None:
    """Advance n tokens in d dimensions by one step; print the peak RSS."""
    config = SimulationConfig(n=n, d=d, beta=1.0, integrator="euler", dt=0.01,
                              summation="direct")
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


def measure(cases: list, beta: float, h: float, rounds: int) -> dict:
    """Every contender of every case in every mode, best of ``rounds`` rounds."""
    found: dict = {"F": {}, "E": {}, "t": {}, "ours": {}, "path": {}}
    for r in range(rounds):
        for k, _, clock in MODES:
            with threads(k):
                F = gemm_rate(clock)
                found["F"][k] = max(found["F"].get(k, 0.0), F)
                if k == 1:
                    for name, rate in exp_rates(clock).items():
                        found["E"][name] = max(found["E"].get(name, 0.0), rate)
                for label, n, d, batch in cases:
                    go, steps, found["path"][label, k] = particles_step(n, d, batch, beta, h)
                    found["ours"].setdefault((label, k), []).append(_time(go, clock) / steps)
                    for name, (call, per) in contenders(n, d, batch, beta, h).items():
                        t = _time(call, clock) / per
                        key = (label, k, name)
                        found["t"][key] = min(found["t"].get(key, np.inf), t)
        print(f"round {r + 1} of {rounds} done", file=sys.stderr)
    return found


def print_tables(cases: list, found: dict) -> None:
    E = max(found["E"].values())
    best = max(found["E"], key=found["E"].get)
    print("float64 exp on one thread: "
          + ", ".join(f"{name} {rate / 1e9:.2f} G/s" for name, rate in found["E"].items())
          + f"; E* = {E / 1e9:.2f} G/s ({best})")
    names = ["numpy"] + (["SDPA f64", "SDPA f32"] if torch is not None else [])
    if torch is None:
        print("torch is not installed: the SDPA contenders are skipped")
    for k, unit, _ in MODES:
        F = found["F"][k]
        print(f"\n{k} thread(s), {unit} per step; float64 GEMM F = {F / 1e9:.1f} GFLOP/s; "
              f"bound = pairs * (4 d / F + 1 / ({k} E*))")
        header = (f"{'case':<9} {'n':>6} {'d':>3} {'batch':>5} {'path':>14} "
                  + "".join(f"{name:>10}" for name in names)
                  + f" {'particles':>10} {'median':>9} {'bound':>10} {'of bound':>8} "
                  + "".join(f"{'x ' + name:>11}" for name in names[1:] or names))
        print(header)
        print("-" * len(header))
        for label, n, d, batch in cases:
            ours = found["ours"][label, k]
            t, med = min(ours), float(np.median(ours))
            bound = roofline(n, d, batch, F, k * E)
            times = [found["t"][label, k, name] for name in names]
            print(f"{label:<9} {n:>6} {d:>3} {batch or '-':>5} {found['path'][label, k]:>14} "
                  + "".join(f"{x:>10.3e}" for x in times)
                  + f" {t:>10.3e} {med:>9.3e} {bound:>10.3e} {bound / t:>8.2f} "
                  + "".join(f"{x / t:>10.2f}x" for x in (times[1:] or times)))
    print("\n'x NAME' = NAME's time / particles' time (above 1: particles is faster)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the two small cases, 1 round")
    parser.add_argument("--memory", action="store_true", help="n=100000 peak-memory case")
    parser.add_argument("--beta", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds over all cases (default 3; 1 with --quick)")
    args = parser.parse_args()
    if args.memory:
        # a fresh process, so the peak RSS belongs to this case alone
        subprocess.run([sys.executable, "-c",
                        "from benchmarks.bench_step import memory_case; memory_case()"],
                       check=True)
        return
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    if rounds < 1:
        parser.error("--rounds must be at least 1")
    cases = CASES[:2] if args.quick else CASES
    target = compile_target()
    print(f"CPU {target['cpu']}: vector width {vector_width()} bits, kernels compiled to "
          f"{kernel_vector_bits()}-bit vectors (features: {target['choice']})")
    print(f"numba threading layer {numba.config.THREADING_LAYER}, torch "
          f"{torch.__version__ if torch else 'absent'}, beta={args.beta}, particles in "
          f"float64, {rounds} round(s)")
    print_tables(cases, measure(cases, args.beta, 0.01, rounds))


if __name__ == "__main__":
    main()
