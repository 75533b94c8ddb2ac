"""Branch-free, vectorisable float64 exponential for the softmax hot loop.

``np.exp`` and ``math.exp`` inside Numba both call a scalar libm routine, so a
loop over a row of attention scores cannot be SIMD-vectorised.  The kernels
here evaluate ``exp`` with plain arithmetic that LLVM turns into packed
instructions (AVX2/AVX-512), at full float64 accuracy:

1. ``k = rint(x / ln 2)`` and Cody–Waite reduction
   ``r = x - k*ln2_hi - k*ln2_lo`` with ``|r| <= ln(2)/2``;
2. ``exp(r)`` by its degree-13 Taylor polynomial (Estrin inside, Horner for
   the last two steps; truncation error below 6e-18 relative on
   ``|r| <= ln(2)/2``);
3. multiplication by ``2**k`` by adding ``k << 52`` to the bit pattern of the
   polynomial value (an integer add on the exponent field).

Every step is straight-line code; the range ends and NaN are fixed up with
selects (``a if cond else b``), which LLVM lowers to blend instructions.

Range behaviour (documented contract, see the tests):

* ``x < EXP_LO`` (= -708.39, including ``-inf``) gives exactly ``0.0``.  True
  values there are below ~1.0064 * 2**-1022, so the result is flushed rather
  than returned as a subnormal; for a softmax weight this is irrelevant.
* ``x > EXP_HI`` (= 709.782712893384, the largest double whose exponential is
  finite, including ``+inf``) gives ``+inf``.
* NaN gives NaN.
* Otherwise the relative error against ``numpy.exp`` is below 4e-16.
"""

from __future__ import annotations

import numpy as np

from particles._numba import FASTMATH, jit

__all__ = ["EXP_HI", "EXP_LO", "exp_row", "exp_scalar"]

#: inputs below this give exactly 0.0 (flush instead of subnormal results).
EXP_LO = -708.39
#: inputs above this give +inf; exp(EXP_HI) is the largest finite result.
EXP_HI = 709.782712893384

# 1 / ln 2, rounded to double.
_LOG2E = 1.4426950408889634
# ln 2 split Cody–Waite style (fdlibm constants): _LN2_HI has its low 21 bits
# zero, so k * _LN2_HI is exact for |k| < 2**21 and x - k*_LN2_HI loses nothing.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
# 1.5 * 2**52: adding it to an integral double with |k| < 2**51 places k
# (two's complement) in the low mantissa bits, a vectorisable float->int.
_SHIFT = 6755399441055744.0
_INF = np.inf
_NAN = np.nan

# The package flags minus "reassoc": with it LLVM may fold
# k*_LN2_HI + k*_LN2_LO into k*(_LN2_HI + _LN2_LO), which throws away the
# Cody–Waite split (measured: 2e-14 relative error near |x| = 700).  There is
# no reduction here, so nothing is lost for vectorisation.  Still no
# nnan/ninf, so the range and NaN selects survive.
_FM = set(FASTMATH) - {"reassoc"}

# Taylor coefficients 1/n!, n = 2..13, as float64 literals.
_C2 = 0.5
_C3 = 0.16666666666666666
_C4 = 0.041666666666666664
_C5 = 0.008333333333333333
_C6 = 0.001388888888888889
_C7 = 0.0001984126984126984
_C8 = 2.48015873015873e-05
_C9 = 2.7557319223985893e-06
_C10 = 2.755731922398589e-07
_C11 = 2.505210838544172e-08
_C12 = 2.08767569878681e-09
_C13 = 1.6059043836821613e-10


@jit(fastmath=_FM)
def exp_scalar(x):
    """Exponential of one float64, branch-free.

    Parameters
    ----------
    x : float
        Argument (scalar float64).

    Returns
    -------
    float
        ``exp(x)``: exactly ``0.0`` for ``x < EXP_LO``, ``+inf`` for
        ``x > EXP_HI``, NaN for NaN, otherwise within 4e-16 relative of
        ``numpy.exp(x)``.

    Notes
    -----
    Same code as the body of :func:`exp_row`.  Deliberately not
    ``inline="always"``: Numba-level inlining would recompile the body with
    the caller's fast-math flags (``reassoc`` breaks the range reduction),
    whereas LLVM's own inlining, which still happens, keeps these flags on
    each instruction, so loops calling it from other kernels still
    vectorise.
    """
    # Clamp first so k stays in [-1022, 1024] and the exponent add below
    # cannot wrap; written as selects (not min/max) and NaN goes to EXP_LO
    # here, its result is replaced at the end.
    xc = x if x > EXP_LO else EXP_LO
    xc = xc if xc < EXP_HI else EXP_HI
    kf = np.rint(xc * _LOG2E)  # llvm.rint -> vroundpd, unlike int()/floor tricks
    # Cody–Waite: the hi product is exact, so r carries only the lo rounding.
    r = (xc - kf * _LN2_HI) - kf * _LN2_LO
    # exp(r) = 1 + r*(1 + r*t(r)), t = sum_{n>=2} r**(n-2)/n!.  t by Estrin
    # (independent pairs, shorter dependency chain than 13 chained FMAs: ~10%
    # faster); the last two steps stay Horner because their roundings set the
    # accuracy (max 0.9 ulp from the correctly rounded value).
    r2 = r * r
    r4 = r2 * r2
    a = (_C2 + _C3 * r) + r2 * (_C4 + _C5 * r)
    b = (_C6 + _C7 * r) + r2 * (_C8 + _C9 * r)
    c = (_C10 + _C11 * r) + r2 * (_C12 + _C13 * r)
    t = a + r4 * (b + r4 * c)
    p = 1.0 + r * (1.0 + r * t)
    # Numba only allows .view on values built by np.<dtype>(...), hence the
    # wrappers (no-ops after compilation).
    # k << 52 straight from the shifted double's bits: the shift discards the
    # exponent field and the 2**51 offset, leaving k in the exponent position.
    # (Using (t + S) - S for kf instead is unsafe: "reassoc" may fold it.)
    kbits = np.float64(kf + _SHIFT).view(np.int64) << 52
    # p is in [0.70, 1.42]: k = -1022 only occurs with p >= 1 (EXP_LO is above
    # ln(2**-1022)), and k = 1024 only with p < 1 (EXP_HI < 1024 ln 2), so the
    # biased exponent stays in [1, 2046]: always a normal finite double.
    y = np.int64(np.float64(p).view(np.int64) + kbits).view(np.float64)
    y = 0.0 if x < EXP_LO else y
    y = _INF if x > EXP_HI else y
    # NaN in, NaN out.  A NaN constant rather than `x`: in the in-place loop
    # "store x back where x is NaN" is a no-op store, which LLVM turns into a
    # masked store (vmaskmovpd), microcoded and slow on AMD.
    return y if x == x else _NAN


@jit(fastmath=_FM)
def exp_row(x, out):
    """Elementwise exponential of a row, vectorised.

    Parameters
    ----------
    x : ndarray of float64, shape (m,)
        Arguments.
    out : ndarray of float64, shape (m,)
        Receives ``exp(x)``; may be the same array as ``x`` (in place).

    Notes
    -----
    Serial (no ``prange``) so it can be called per row from parallel
    kernels.  Accuracy and range behaviour are those of :func:`exp_scalar`:
    ``0.0`` below ``EXP_LO``, ``+inf`` above ``EXP_HI``, NaN for NaN,
    relative error below 4e-16 elsewhere.
    """
    # Same buffer: a one-array loop.  With two arrays LLVM guards the vector
    # loop by a runtime overlap check; identical pointers fail it and fall
    # back to the scalar loop (measured 4x slower), although element i only
    # ever reads x[i] before writing out[i].
    if x.ctypes.data == out.ctypes.data and x.strides[0] == out.strides[0]:
        _exp_inplace(out)
    else:
        for i in range(x.shape[0]):
            out[i] = exp_scalar(x[i])


@jit(fastmath=_FM)
def _exp_inplace(a):
    """Overwrite ``a`` (float64, shape (m,)) with ``exp(a)``."""
    for i in range(a.shape[0]):
        a[i] = exp_scalar(a[i])
