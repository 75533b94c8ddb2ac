"""Accuracy and range contract of the vectorised exponentials (float64, float32)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba.core import types as nbtypes

from particles import fastexp
from particles._numba import fma, jit
from particles.fastexp import (
    EXP_HI,
    EXP_HI32,
    EXP_LO,
    EXP_LO32,
    exp_finite,
    exp_finite32,
    exp_row,
    exp_row32,
    exp_scalar,
    exp_scalar32,
)

# Bound on |fast - numpy.exp| / numpy.exp in the normal range (about 2 ulp;
# measured: 2.2e-16, i.e. one ulp of a result just above a power of two).
REL_TOL = 4e-16


def _exp(x):
    out = np.empty_like(x)
    exp_row(x, out)
    return out


def _rel_err(x):
    y = _exp(x)
    ref = np.exp(x)
    return np.abs(y - ref) / ref


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(20240611)


def test_dense_grid_normal_range():
    x = np.linspace(EXP_LO, EXP_HI, 1_000_001)
    assert _rel_err(x).max() <= REL_TOL


def test_random_points(rng):
    x = np.concatenate(
        [
            rng.uniform(EXP_LO, EXP_HI, 500_000),
            rng.uniform(-40.0, 1.0, 500_000),  # softmax scores after the max shift
            rng.uniform(-1e-3, 1e-3, 100_000),  # near zero: no cancellation trouble
        ]
    )
    assert _rel_err(x).max() <= REL_TOL


def test_range_ends_exact():
    # Last normal and first flushed inputs at both ends.
    assert np.isfinite(_exp(np.array([EXP_HI]))[0])
    assert _rel_err(np.array([EXP_HI, EXP_LO]))[:].max() <= REL_TOL
    big = np.array([np.nextafter(EXP_HI, np.inf), 709.79, 710.0, 1e300, np.inf])
    assert np.all(_exp(big) == np.inf)
    small = np.array([np.nextafter(EXP_LO, -np.inf), -708.4, -745.2, -1e300, -np.inf])
    y = _exp(small)
    assert np.all(y == 0.0) and not np.signbit(y).any()


def test_full_grid_contract():
    # Dense grid over [-745, 710]: accurate where normal, exact 0 below the
    # cutoff (never subnormal), inf above.
    x = np.linspace(-745.0, 710.0, 1_500_001)
    y = _exp(x)
    lo, hi = x < EXP_LO, x > EXP_HI
    mid = ~(lo | hi)
    assert np.all(y[lo] == 0.0)
    assert np.all(y[hi] == np.inf)
    ref = np.exp(x[mid])
    assert np.max(np.abs(y[mid] - ref) / ref) <= REL_TOL
    assert np.all(y[mid] >= np.finfo(np.float64).tiny)


def test_exp_zero_is_one():
    assert _exp(np.array([0.0, -0.0])).tolist() == [1.0, 1.0]
    assert exp_scalar(0.0) == 1.0


def test_nan_propagates():
    x = np.array([np.nan, 0.0, -np.nan, -1000.0, np.nan, 1000.0, np.nan, 1.0, np.nan])
    y = _exp(x)
    nan = np.isnan(x)
    assert np.array_equal(np.isnan(y), nan)  # NaN not clamped to 0 or inf
    assert y[~nan].tolist() == [1.0, 0.0, np.inf, math.e]
    assert math.isnan(exp_scalar(np.nan))
    # in place as well (that path has its own loop)
    z = x.copy()
    exp_row(z, z)
    assert np.array_equal(z, y, equal_nan=True)


def test_in_place(rng):
    x = rng.uniform(-50.0, 5.0, 1003)  # odd length: exercises the loop tail
    expected = _exp(x)
    z = x.copy()
    exp_row(z, z)
    assert np.array_equal(z, expected)
    # a row view of a 2-D array, as the simulator uses it
    m = np.tile(x, (3, 1))
    exp_row(m[1], m[1])
    assert np.array_equal(m[1], expected)
    assert np.array_equal(m[0], x) and np.array_equal(m[2], x)


def test_monotone_fine_grid():
    y = _exp(np.linspace(-40.0, 10.0, 1_000_001))
    assert np.all(np.diff(y) > 0)


def test_monotone_across_reduction_steps():
    # Consecutive doubles around x = (k + 1/2) ln 2, where the reduction
    # switches from k to k+1 and r jumps from +ln2/2 to -ln2/2.
    blocks = []
    for k in range(-1021, 1024, 31):
        c = (k + 0.5) * math.log(2.0)
        blocks.append(c + np.arange(-300, 300) * abs(np.spacing(c)))
    y = _exp(np.concatenate(blocks)).reshape(len(blocks), -1)
    assert np.all(np.diff(y, axis=1) >= 0)


@jit
def _loop_scalar(x, out):
    # Compiled with the package's default flags (including "reassoc"), as a simulator
    # kernel would be: calling exp_scalar from it must not lose accuracy.
    for i in range(x.shape[0]):
        out[i] = exp_scalar(x[i])


def test_scalar_matches_row(rng):
    x = np.concatenate([rng.uniform(-745.0, 710.0, 20_000), [np.nan, np.inf, -np.inf, 0.0]])
    y = _exp(x)
    z = np.empty_like(x)
    _loop_scalar(x, z)
    assert np.array_equal(y, z, equal_nan=True)
    for v in x[::997]:
        assert np.array_equal(exp_scalar(v), y[x == v][0], equal_nan=True)


@jit
def _loop_finite(x, out):
    for i in range(x.shape[0]):
        out[i] = exp_finite(x[i])


def test_finite_exp_is_the_exact_exp_up_to_exp_hi(rng):
    """exp_finite (no clamps, no NaN select) gives exp_scalar's bits on finite
    x <= EXP_HI: the whole normal range, and 0.0 below EXP_LO however far
    (where its unclamped exponent arithmetic wraps)."""
    x = np.concatenate([rng.uniform(-745.0, EXP_HI, 50_000), rng.uniform(-1e-9, 1e-9, 1000),
                        -10.0 ** rng.uniform(3, 300, 1000),
                        [EXP_HI, EXP_LO, np.nextafter(EXP_LO, -1), -1e12, -1e308, 0.0]])
    exact, finite = _exp(x), np.empty_like(x)
    _loop_finite(x, finite)
    assert np.array_equal(exact, finite)
    assert np.all(finite[x < EXP_LO] == 0.0)


# -- accuracy in ulps -------------------------------------------------------------------


def _ulps_mpmath(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """|y - exp(x)| in ulps of the exact value's float64 neighbourhood (mpmath, 120 bits)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.prec = 120
    out = np.empty(x.size)
    for i, (xi, yi) in enumerate(zip(x.tolist(), y.tolist(), strict=True)):
        e = mp.exp(xi)
        out[i] = float(abs(mp.mpf(yi) - e) / mp.mpf(float(np.spacing(float(e)))))
    return out


def _coefficients(prefix: str) -> list[float]:
    k, out = 2, []
    while hasattr(fastexp, f"_{prefix}{k}"):
        out.append(float(getattr(fastexp, f"_{prefix}{k}")))
        k += 1
    return out


@pytest.mark.parametrize(("prefix", "bound"), [("C", 4.7e-18), ("F", 3.6e-9)])
def test_polynomial_is_the_minimax_one(prefix, bound):
    """1 + r + c2 r^2 + ... approximates exp(r) on |r| <= 1.001 ln(2)/2 within the
    bound the module states (float64: 0.04 ulp of 1; float32: 0.06), in exact
    arithmetic: a coefficient changed or mistyped breaks it."""
    mp = pytest.importorskip("mpmath")
    mp.mp.prec = 200
    c = [mp.mpf(v) for v in _coefficients(prefix)]
    assert len(c) == (10 if prefix == "C" else 5)
    a = mp.log(2) / 2 * mp.mpf("1.001")
    worst = mp.mpf(0)
    for j in range(2001):
        r = -a + 2 * a * j / 2000
        p = 1 + r + sum(ck * r ** (k + 2) for k, ck in enumerate(c))
        worst = max(worst, abs(p - mp.exp(r)))
    assert worst <= bound


def test_within_one_ulp_of_mpmath(rng):
    """float64: at most one ulp from the exact exponential (measured 0.86 on 1e7
    points, benchmarks/bench_exp.py --accuracy), on the whole range, the softmax
    range, near 0 and at the range ends."""
    x = np.concatenate([rng.uniform(EXP_LO, EXP_HI, 6000), rng.uniform(-40.0, 1.0, 3000),
                        rng.uniform(-1e-3, 1e-3, 500), 10.0 ** rng.uniform(-300, -1, 300),
                        [EXP_LO, EXP_HI, np.nextafter(EXP_HI, 0), 1.0, -1.0, 0.5]])
    assert _ulps_mpmath(_exp(x), x).max() <= 1.0


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63, reason="long double is double here")
def test_within_one_ulp_on_a_dense_grid():
    # the long double exponential is exact to 2**-63: ample to count float64 ulps
    x = np.linspace(EXP_LO, EXP_HI, 2_000_001)
    ref = np.exp(x.astype(np.longdouble))
    err = np.abs(_exp(x).astype(np.longdouble) - ref) / np.spacing(ref.astype(np.float64))
    assert float(err.max()) <= 1.0


# -- float32 ----------------------------------------------------------------------------


def _exp32(x):
    out = np.empty_like(x)
    exp_row32(x, out)
    return out


def _ulp_diff32(a, b):
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


def test_float32_within_one_ulp_of_the_rounded_float64_exp():
    # every 61st float32 of the range (about 3.5e7 values, all binades)
    hi = int(EXP_HI32.view(np.int32))
    lo = int((-EXP_LO32).view(np.int32))
    bits = np.concatenate([np.arange(0, hi + 1, 61, dtype=np.uint32),
                           np.arange(0, lo + 1, 61, dtype=np.uint32) | np.uint32(0x80000000),
                           np.array([hi, lo | 0x80000000], dtype=np.uint32)])
    x = bits.view(np.float32)
    y = _exp32(x)
    assert y.dtype == np.float32
    ref = np.exp(x.astype(np.float64)).astype(np.float32)
    assert _ulp_diff32(y, ref).max() <= 1


def test_float32_range_contract():
    big = np.array([np.nextafter(EXP_HI32, np.float32(np.inf)), 89.0, 1e30, np.inf],
                   dtype=np.float32)
    assert np.all(_exp32(big) == np.inf)
    small = np.array([np.nextafter(EXP_LO32, np.float32(-np.inf)), -87.34, -100.0, -1e30,
                      -np.inf], dtype=np.float32)
    y = _exp32(small)
    assert np.all(y == 0.0) and not np.signbit(y).any()
    ends = _exp32(np.array([EXP_LO32, EXP_HI32], dtype=np.float32))
    assert ends[0] >= np.finfo(np.float32).tiny  # normal, not flushed
    assert np.isfinite(ends[1])  # the largest float32 whose exponential is finite
    assert _ulp_diff32(ends, np.exp(np.array([EXP_LO32, EXP_HI32], np.float64)).astype(np.float32)
                       ).max() <= 1
    x = np.array([np.nan, 0.0, -0.0, 1.0, np.nan, 1e-45, -1e-45], dtype=np.float32)
    y = _exp32(x)
    assert np.array_equal(np.isnan(y), np.isnan(x))
    assert y[1:4].tolist() == [1.0, 1.0, float(np.float32(math.e))]
    assert y[5:].tolist() == [1.0, 1.0]


def test_float32_scalar_finite_row_and_in_place_agree(rng):
    x = np.concatenate([rng.uniform(-100.0, 90.0, 20_001), [np.nan, np.inf, -np.inf, 0.0]]
                       ).astype(np.float32)
    y = _exp32(x)
    z = x.copy()
    exp_row32(z, z)
    assert np.array_equal(y, z, equal_nan=True)
    s = np.empty_like(x)
    _loop_scalar32(x, s)
    assert np.array_equal(y, s, equal_nan=True)
    fin = x[np.isfinite(x) & (x <= EXP_HI32)]
    f = np.empty_like(fin)
    _loop_finite32(fin, f)
    assert np.array_equal(f, _exp32(fin))


def test_float32_monotone():
    y = _exp32(np.linspace(-87.0, 88.0, 1_000_001, dtype=np.float32))
    assert np.all(np.diff(y) >= 0)


def test_float32_kernel_computes_in_float32():
    """No float64 arithmetic in the compiled float32 exponential: a float literal
    among its constants would convert every lane to double (half the lanes)."""
    x = np.zeros(16, np.float32)
    exp_row32(x, x.copy())
    ir = exp_row32.inspect_llvm(exp_row32.signatures[0])
    assert "fpext" not in ir and "llvm.fma.f64" not in ir and " double " not in ir
    assert "llvm.fma" in ir


@jit
def _loop_scalar32(x, out):
    for i in range(x.shape[0]):
        out[i] = exp_scalar32(x[i])


@jit
def _loop_finite32(x, out):
    for i in range(x.shape[0]):
        out[i] = exp_finite32(x[i])


@jit
def _fma_of(a, b, c):
    return fma(a, b, c)


def test_fma_rounds_once_in_float32_when_every_argument_is_float32():
    a = np.float32(1 + 2.0 ** -12)
    exact = np.float32(2.0 ** -11 + 2.0 ** -24)  # a*a - 1, a float32; a*a is not
    assert np.float32(a * a) - np.float32(1) != exact
    y = _fma_of(a, a, np.float32(-1))
    assert y == exact
    assert _fma_of.nopython_signatures[-1].return_type == nbtypes.float32
    _fma_of(a, a, -1.0)  # a float64 argument: computed and returned in float64
    assert _fma_of.nopython_signatures[-1].return_type == nbtypes.float64
