"""Accuracy and range contract of the vectorised exponential."""

from __future__ import annotations

import math

import numpy as np
import pytest

from particles._numba import jit
from particles.fastexp import EXP_HI, EXP_LO, exp_finite, exp_row, exp_scalar

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
