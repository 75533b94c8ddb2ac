"""Branch-free, vectorisable float64 exponential for the softmax hot loop, and
sums with explicit lanes (:func:`lane_total`, :func:`lane_dots4`).

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

from particles._numba import FASTMATH, fma, jit

__all__ = ["EXP_HI", "EXP_LO", "LANES", "exp_finite", "exp_row", "exp_scalar", "lane_dots4",
           "lane_total"]

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

# The package's flags: none (strict IEEE, see particles._numba), so LLVM can
# neither fold k*_LN2_HI + k*_LN2_LO into k*(_LN2_HI + _LN2_LO) (which throws
# away the Cody–Waite split) nor change any rounding; the multiply-adds are
# explicit fused ones (`fma`, one rounding each).  Still no nnan/ninf, so the
# range and NaN selects survive.
_FM = FASTMATH

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
def _exp_clamped(xc):
    """``exp(xc)`` for ``EXP_LO <= xc <= EXP_HI`` (the body shared by
    :func:`exp_scalar` and :func:`exp_finite`; inlined into their loops).
    Outside that range its exponent arithmetic wraps: callers clamp first or
    discard the result."""
    kf = np.rint(xc * _LOG2E)  # llvm.rint -> vroundpd, unlike int()/floor tricks
    # Cody–Waite: the hi product is exact, so r carries only the lo rounding
    # (and the first fused multiply-add rounds exactly as the product and the
    # subtraction did: one instruction fewer, the same bits).
    r = fma(-kf, _LN2_LO, fma(-kf, _LN2_HI, xc))
    # exp(r) = 1 + r*(1 + r*t(r)), t = sum_{n>=2} r**(n-2)/n!.  t by Estrin
    # (independent pairs, shorter dependency chain than 13 chained FMAs: ~10%
    # faster); the last two steps stay Horner because their roundings set the
    # accuracy (max 0.9 ulp from the correctly rounded value).
    r2 = r * r
    r4 = r2 * r2
    a = fma(r2, fma(_C5, r, _C4), fma(_C3, r, _C2))
    b = fma(r2, fma(_C9, r, _C8), fma(_C7, r, _C6))
    c = fma(r2, fma(_C13, r, _C12), fma(_C11, r, _C10))
    t = fma(r4, fma(r4, c, b), a)
    p = fma(r, fma(r, t, 1.0), 1.0)
    # Numba only allows .view on values built by np.<dtype>(...), hence the
    # wrappers (no-ops after compilation).
    # k << 52 straight from the shifted double's bits: the shift discards the
    # exponent field and the 2**51 offset, leaving k in the exponent position.
    # (Using (t + S) - S for kf instead is unsafe: "reassoc" may fold it.)
    kbits = np.float64(kf + _SHIFT).view(np.int64) << 52
    # p is in [0.70, 1.42]: k = -1022 only occurs with p >= 1 (EXP_LO is above
    # ln(2**-1022)), and k = 1024 only with p < 1 (EXP_HI < 1024 ln 2), so the
    # biased exponent stays in [1, 2046]: always a normal finite double.
    return np.int64(np.float64(p).view(np.int64) + kbits).view(np.float64)


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
    Same code as the body of :func:`exp_row`.  Straight-line strict-IEEE
    code with explicit FMAs: the same bits wherever LLVM inlines it, scalar
    or vectorised (see :mod:`particles._numba`).
    """
    # Clamp first so k stays in [-1022, 1024] and the exponent add below
    # cannot wrap; written as selects (not min/max) and NaN goes to EXP_LO
    # here, its result is replaced at the end.
    xc = x if x > EXP_LO else EXP_LO
    xc = xc if xc < EXP_HI else EXP_HI
    y = _exp_clamped(xc)
    y = 0.0 if x < EXP_LO else y
    y = _INF if x > EXP_HI else y
    # NaN in, NaN out.  A NaN constant rather than `x`: in the in-place loop
    # "store x back where x is NaN" is a no-op store, which LLVM turns into a
    # masked store (vmaskmovpd), microcoded and slow on AMD.
    return y if x == x else _NAN


@jit(fastmath=_FM)
def exp_finite(x):
    """:func:`exp_scalar` for finite arguments at most :data:`EXP_HI`: the same
    bits there, without the clamps and the NaN select.

    For the attention tiles, whose callers have checked that every score is
    finite and far below ``EXP_HI`` (``particles.fields.attention``'s
    ``fast`` flag).  Below ``EXP_LO`` the exponent arithmetic of the unclamped
    core wraps, and the select returns ``0.0`` instead; a NaN or infinite
    argument may come out as a finite number (never pass one).  Without the
    two clamps and the upper and NaN selects: about six compare and blend
    operations fewer than :func:`exp_scalar`, of about 35.
    """
    y = _exp_clamped(x)
    return 0.0 if x < EXP_LO else y


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


#: explicit partial sums kept by the lane reductions below.
LANES = 8


# -- reductions with explicit lanes ---------------------------------------------
# Each keeps LANES (8) independent partial sums per output in registers (plain
# scalars: eight independent dependency chains the CPU overlaps), adds the
# n % 8 tail elements into one more scalar in order, and combines lanes by
# a fixed balanced tree, then the tail.  Without fast-math flags LLVM
# may not reorder any of it, so the bits are those of this source.


@jit
def lane_total(w, n):
    """``sum_{j < n} w[j]`` (w float64, shape (>= n,)), in the lane order."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    nb = n - n % 8
    for j in range(0, nb, 8):
        s0 += w[j]
        s1 += w[j + 1]
        s2 += w[j + 2]
        s3 += w[j + 3]
        s4 += w[j + 4]
        s5 += w[j + 5]
        s6 += w[j + 6]
        s7 += w[j + 7]
    r = 0.0
    for j in range(nb, n):
        r += w[j]
    return (((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))) + r


@jit
def lane_dots4(w, x, y, u, v, n):
    """``(sum w x, sum w y, sum w u, sum w v)`` over ``j < n`` (shape (>= n,) each)."""
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = 0.0
    c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = 0.0
    e0 = e1 = e2 = e3 = e4 = e5 = e6 = e7 = 0.0
    nb = n - n % 8
    for j in range(0, nb, 8):
        w0, w1, w2, w3 = w[j], w[j + 1], w[j + 2], w[j + 3]
        w4, w5, w6, w7 = w[j + 4], w[j + 5], w[j + 6], w[j + 7]
        a0 = fma(w0, x[j], a0)
        a1 = fma(w1, x[j + 1], a1)
        a2 = fma(w2, x[j + 2], a2)
        a3 = fma(w3, x[j + 3], a3)
        a4 = fma(w4, x[j + 4], a4)
        a5 = fma(w5, x[j + 5], a5)
        a6 = fma(w6, x[j + 6], a6)
        a7 = fma(w7, x[j + 7], a7)
        b0 = fma(w0, y[j], b0)
        b1 = fma(w1, y[j + 1], b1)
        b2 = fma(w2, y[j + 2], b2)
        b3 = fma(w3, y[j + 3], b3)
        b4 = fma(w4, y[j + 4], b4)
        b5 = fma(w5, y[j + 5], b5)
        b6 = fma(w6, y[j + 6], b6)
        b7 = fma(w7, y[j + 7], b7)
        c0 = fma(w0, u[j], c0)
        c1 = fma(w1, u[j + 1], c1)
        c2 = fma(w2, u[j + 2], c2)
        c3 = fma(w3, u[j + 3], c3)
        c4 = fma(w4, u[j + 4], c4)
        c5 = fma(w5, u[j + 5], c5)
        c6 = fma(w6, u[j + 6], c6)
        c7 = fma(w7, u[j + 7], c7)
        e0 = fma(w0, v[j], e0)
        e1 = fma(w1, v[j + 1], e1)
        e2 = fma(w2, v[j + 2], e2)
        e3 = fma(w3, v[j + 3], e3)
        e4 = fma(w4, v[j + 4], e4)
        e5 = fma(w5, v[j + 5], e5)
        e6 = fma(w6, v[j + 6], e6)
        e7 = fma(w7, v[j + 7], e7)
    ra = rb = rc = re_ = 0.0
    for j in range(nb, n):
        ra = fma(w[j], x[j], ra)
        rb = fma(w[j], y[j], rb)
        rc = fma(w[j], u[j], rc)
        re_ = fma(w[j], v[j], re_)
    return ((((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))) + ra,
            (((b0 + b1) + (b2 + b3)) + ((b4 + b5) + (b6 + b7))) + rb,
            (((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7))) + rc,
            (((e0 + e1) + (e2 + e3)) + ((e4 + e5) + (e6 + e7))) + re_)

