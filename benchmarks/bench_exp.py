"""Exponentials per second on one core (G exp/s), float64 and float32, side by side.

Contenders, each timed in the same run on one thread (thread CPU time, so a
busy shared machine costs rounds, not accuracy of the ratios):

* ``particles``: :func:`particles.fastexp.exp_row` and :func:`~particles.fastexp.exp_row32`;
* ``particles (old)``: the exponential they replaced (Cody–Waite, degree-13
  Taylor polynomial by Estrin), a copy kept here, compiled with the same flags;
* ``numpy.exp`` (one call on the whole array);
* ``torch.exp`` (Sleef), one thread, when ``import torch`` works (else a line says so).

The arrays hold 2**16 arguments uniform in [-20, 0] (softmax scores; the
particles exponentials are branch-free, so the values do not matter to them)
and stay in the L2 cache.  Each round times every contender once; the table
gives the best round.

``--accuracy`` adds the errors: float64 in ulps of the exact value on 1e7
points over the whole range (the long double exponential as reference where
it has a 64-bit mantissa, itself checked against mpmath on the worst points
and 2e4 others; else mpmath on 2e5 points), and float32 on every float32 of
the normal range against the float64 exponential rounded to float32.

Usage::

    python benchmarks/bench_exp.py              # rates (about a minute)
    python benchmarks/bench_exp.py --rounds 9   # on a busy host
    python benchmarks/bench_exp.py --accuracy   # and the errors (a few minutes)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from particles._numba import FASTMATH, compile_target, fma, jit, kernel_vector_bits
from particles.fastexp import EXP_HI, EXP_HI32, EXP_LO, EXP_LO32, exp_row, exp_row32
from particles.machine import vector_width

SIZE = 1 << 16

# -- the exponential before issue 40 (a copy, for comparison) --------------------
_OLD_LOG2E = 1.4426950408889634
_OLD_LN2_HI = 6.93147180369123816490e-01
_OLD_LN2_LO = 1.90821492927058770002e-10
_OLD_SHIFT = 6755399441055744.0
_OLD_C = (0.5, 0.16666666666666666, 0.041666666666666664, 0.008333333333333333,
          0.001388888888888889, 0.0001984126984126984, 2.48015873015873e-05,
          2.7557319223985893e-06, 2.755731922398589e-07, 2.505210838544172e-08,
          2.08767569878681e-09, 1.6059043836821613e-10)
(_O2, _O3, _O4, _O5, _O6, _O7, _O8, _O9, _O10, _O11, _O12, _O13) = _OLD_C


@jit(fastmath=FASTMATH)
def _old_exp_scalar(x):
    xc = x if x > EXP_LO else EXP_LO
    xc = xc if xc < EXP_HI else EXP_HI
    kf = np.rint(xc * _OLD_LOG2E)
    r = fma(-kf, _OLD_LN2_LO, fma(-kf, _OLD_LN2_HI, xc))
    r2 = r * r
    r4 = r2 * r2
    a = fma(r2, fma(_O5, r, _O4), fma(_O3, r, _O2))
    b = fma(r2, fma(_O9, r, _O8), fma(_O7, r, _O6))
    c = fma(r2, fma(_O13, r, _O12), fma(_O11, r, _O10))
    t = fma(r4, fma(r4, c, b), a)
    p = fma(r, fma(r, t, 1.0), 1.0)
    kbits = np.float64(kf + _OLD_SHIFT).view(np.int64) << 52
    y = np.int64(np.float64(p).view(np.int64) + kbits).view(np.float64)
    y = 0.0 if x < EXP_LO else y
    y = np.inf if x > EXP_HI else y
    return y if x == x else np.nan


@jit(fastmath=FASTMATH)
def old_exp_row(x, out):
    """The replaced exponential of a row (float64, shape (m,))."""
    for i in range(x.shape[0]):
        out[i] = _old_exp_scalar(x[i])


# -- contenders ---------------------------------------------------------------------

def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def contenders(torch) -> list[tuple[str, str, object]]:
    """(name, dtype, fn(x, out)) for every exponential measured."""
    rows = [("particles", "float64", exp_row), ("particles", "float32", exp_row32),
            ("particles (old)", "float64", old_exp_row),
            ("numpy.exp", "float64", lambda x, out: np.exp(x, out=out)),
            ("numpy.exp", "float32", lambda x, out: np.exp(x, out=out))]
    if torch is not None:
        def torch_exp(x, out):
            torch.exp(torch.from_numpy(x), out=torch.from_numpy(out))

        rows += [("torch.exp", "float64", torch_exp), ("torch.exp", "float32", torch_exp)]
    return rows


def _rate(fn, x: np.ndarray, out: np.ndarray, min_time: float = 0.05) -> float:
    """Exponentials per thread-CPU-second of ``fn(x, out)``, over at least ``min_time``."""
    reps, t0 = 0, time.thread_time()
    while True:
        fn(x, out)
        reps += 1
        dt = time.thread_time() - t0
        if dt >= min_time:
            return reps * x.size / dt


def rates(rows, rounds: int) -> dict[tuple[str, str], float]:
    """Best rate of every contender over ``rounds`` rounds."""
    base = np.random.default_rng(0).uniform(-20.0, 0.0, SIZE)
    arrays = {dt: (base.astype(dt), np.empty(SIZE, dt)) for dt in ("float64", "float32")}
    for _, dt, fn in rows:  # warm-up: compilation, page faults
        fn(*arrays[dt])
    best: dict[tuple[str, str], float] = {}
    for _ in range(rounds):
        for name, dt, fn in rows:
            r = _rate(fn, *arrays[dt])
            best[name, dt] = max(best.get((name, dt), 0.0), r)
    return best


# -- accuracy -------------------------------------------------------------------------

def _ulps_mp(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """|y - exp(x)| / ulp(exp(x)) in mpmath (120 bits), ulp of the float64 result."""
    import mpmath as mp

    mp.mp.prec = 120
    out = np.empty(x.size)
    for i, (xi, yi) in enumerate(zip(x.tolist(), y.tolist(), strict=True)):
        e = mp.exp(xi)
        out[i] = float(abs(mp.mpf(yi) - e) / mp.mpf(float(np.spacing(float(e)))))
    return out


def accuracy64(rows) -> None:
    rng = np.random.default_rng(5)
    x = np.concatenate([np.linspace(EXP_LO, EXP_HI, 4_000_001),
                        rng.uniform(EXP_LO, EXP_HI, 3_000_000),
                        rng.uniform(-40.0, 1.0, 2_000_000),  # softmax scores
                        rng.uniform(-1.0, 1.0, 1_000_000)])
    extended = np.finfo(np.longdouble).nmant >= 63
    if not extended:  # long double is double here: mpmath on fewer points
        x = rng.choice(x, 200_000, replace=False)
    print(f"float64: max error in ulps of exp(x), {x.size:.0e} points in "
          f"[{EXP_LO}, {EXP_HI}] (reference: "
          f"{'long double, checked against mpmath' if extended else 'mpmath'})")
    if extended:
        ref = np.exp(x.astype(np.longdouble))
        ulp = np.spacing(ref.astype(np.float64)).astype(np.longdouble)
    for name, dt, fn in rows:
        if dt != "float64":
            continue
        y = np.empty_like(x)
        fn(x, y)
        if extended:
            err = (np.abs(y.astype(np.longdouble) - ref) / ulp).astype(np.float64)
            check = np.concatenate([np.argsort(err)[-100:], rng.integers(0, x.size, 20_000)])
            mp_err = _ulps_mp(y[check], x[check])
            note = f"(mpmath on {check.size}: max {mp_err.max():.4f}, " \
                   f"long double off by {np.abs(mp_err - err[check]).max():.1e})"
            worst = max(err.max(), mp_err.max())
        else:
            err = _ulps_mp(y, x)
            worst, note = err.max(), ""
        print(f"  {name:<16} {worst:.4f} ulp at x = {x[err.argmax()]!r} {note}")


def _float32_chunks(chunk: int):
    """Every float32 in [EXP_LO32, EXP_HI32] (zeros and subnormals included), in
    arrays of at most ``chunk``: bit patterns 0 up to EXP_HI32's, and the
    negatives' magnitudes 0 up to EXP_LO32's with the sign bit set."""
    for top, sign in ((int(EXP_HI32.view(np.int32)), 0),
                      (int((-EXP_LO32).view(np.int32)), 0x80000000)):
        for start in range(0, top + 1, chunk):
            bits = np.arange(start, min(start + chunk, top + 1), dtype=np.uint32) | sign
            yield bits.view(np.float32)


def accuracy32(rows, chunk: int = 1 << 23) -> None:
    print("float32: every float32 x in [EXP_LO32, EXP_HI32]: largest difference from the "
          "float64 exp rounded to float32 (ulps), share differing, and the largest error "
          "against the long double exp (ulps of float32, every 64th x)")
    for name, dt, fn in rows:
        if dt != "float32":
            continue
        worst, differ, count, true_worst = 0, 0, 0, 0.0
        for x in _float32_chunks(chunk):
            y = np.empty_like(x)
            fn(x, y)
            ref = np.exp(x.astype(np.float64)).astype(np.float32)
            d = np.abs(y.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
            worst = max(worst, int(d.max()))
            differ += int(np.count_nonzero(d))
            count += x.size
            xs, ys = x[::64], y[::64]
            true = np.exp(xs.astype(np.longdouble))
            u = np.spacing(true.astype(np.float32)).astype(np.longdouble)
            true_worst = max(true_worst, float((np.abs(ys - true) / u).max()))
        print(f"  {name:<16} {worst} ulp, {differ / count:.2%} of {count:.3g} differ; "
              f"{true_worst:.4f} ulp from exp(x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds (the best is reported)")
    parser.add_argument("--accuracy", action="store_true", help="also measure the errors")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    torch = _torch()
    rows = contenders(torch)
    target = compile_target()
    print(f"CPU {target['cpu']}: vector width {vector_width()} bits; the kernels use "
          f"{kernel_vector_bits()}-bit vectors (features: {target['choice']}); one thread, "
          f"{SIZE} arguments, best of {args.rounds} rounds")
    if torch is None:
        print("torch.exp: skipped (import torch failed)")
    best = rates(rows, args.rounds)
    old = best["particles (old)", "float64"]
    print()
    header = f"{'exponential':<18} {'dtype':<8} {'G exp/s':>8} {'vs old float64':>15}"
    print(header)
    print("-" * len(header))
    for name, dt, _ in rows:
        r = best[name, dt]
        print(f"{name:<18} {dt:<8} {r / 1e9:>8.2f} {r / old:>14.2f}x")
    if args.accuracy:
        print()
        accuracy64(rows)
        accuracy32(rows)


if __name__ == "__main__":
    main()
