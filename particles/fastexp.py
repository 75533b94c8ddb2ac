"""Branch-free, vectorisable exponentials (float64 and float32) for the softmax
hot loop, and sums with explicit lanes (:func:`lane_total`, :func:`lane_dots4`).

``np.exp`` and ``math.exp`` inside Numba both call a scalar libm routine, so a
loop over a row of attention scores cannot be SIMD-vectorised.  The kernels
here evaluate ``exp`` with plain arithmetic that LLVM turns into packed
instructions (AVX2/AVX-512), to within one ulp:

1. ``z = fma(x, 1/ln 2, 1.5 * 2**52)``: adding the shift rounds ``x / ln 2`` to
   the nearest integer ``k`` and leaves ``k`` in the low bits of ``z`` (one
   instruction: no ``rint``, no float-to-integer conversion);
2. Cody–Waite reduction ``r = x - k*ln2_hi - k*ln2_lo``, ``|r| <= ln(2)/2``
   (``k*ln2_hi`` and the first subtraction are exact);
3. ``exp(r) = 1 + r(1 + r(c2 + r(c3 + ... + r c11)))``, a degree-11 minimax
   polynomial (its error below 4.7e-18 on the interval, 0.04 ulp of 1; the
   coefficients are checked against mpmath by the tests), Horner all the way;
4. multiplication by ``2**k`` by adding ``k << 52`` to the bit pattern of the
   polynomial's value (an integer add on the exponent field).

Why no table.  Libraries that reduce further with a ``2**(j/N)`` table (glibc,
ARM's optimized-routines, SVML) need a gather in a vectorised loop: measured on
an AVX-512 core (Zen 4) a gather of 8 doubles costs as much as the whole
table-free evaluation saves (N = 256 with a degree-4 polynomial ran at 0.85x
of this one; N = 4 or 2 looked up by selects at 0.96x and 1.0x, and 0.8x
with AVX2 code), and the table-free form is fastest with AVX2 as well.  The
evaluation is bound by its 14 multiply-adds per vector (see
``benchmarks/bench_exp.py``).

Every step is straight-line code; the range ends and NaN are fixed up with
selects (``a if cond else b``), which LLVM lowers to blend instructions.

float64 range behaviour (documented contract, see the tests):

* ``x < EXP_LO`` (= -708.39, including ``-inf``) gives exactly ``0.0``.  True
  values there are below ~1.0064 * 2**-1022, so the result is flushed rather
  than returned as a subnormal; for a softmax weight this is irrelevant.
* ``x > EXP_HI`` (= 709.782712893384, the largest double whose exponential is
  finite, including ``+inf``) gives ``+inf``.
* NaN gives NaN.
* Otherwise the error is below one ulp (0.865 ulp at most on 1e7 points
  against mpmath, the replaced Taylor version 0.890;
  ``benchmarks/bench_exp.py --accuracy``).

The float32 functions (:func:`exp_scalar32`, :func:`exp_finite32`,
:func:`exp_row32`) are the same method in float32 arithmetic throughout (a
degree-6 polynomial; float32 constants, since a float literal would turn the
whole evaluation into float64): ``0.0`` below :data:`EXP_LO32` (-87.33),
``+inf`` above :data:`EXP_HI32` (88.72283, the largest float32 whose
exponential is a finite float32), NaN for NaN, and otherwise within one ulp
of the float64 exponential rounded to float32.
"""

from __future__ import annotations

import numpy as np

from particles._numba import FASTMATH, fma, jit

__all__ = ["EXP_HI", "EXP_HI32", "EXP_LO", "EXP_LO32", "LANES", "exp_finite", "exp_finite32",
           "exp_row", "exp_row32", "exp_scalar", "exp_scalar32", "lane_dots4", "lane_total"]

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
# 1.5 * 2**52: in [2**52, 2**53) doubles are the integers, so z = x/ln2 + _SHIFT
# is rounded to one, and its low 52 bits hold 2**51 + k (two's complement k).
_SHIFT = 6755399441055744.0
_INF = np.inf

# The package's flags: none (strict IEEE, see particles._numba), so LLVM can
# neither fold (z - _SHIFT) nor the Cody–Waite pair k*_LN2_HI + k*_LN2_LO, nor
# change any rounding; the multiply-adds are explicit fused ones (`fma`, one
# rounding each).  Still no nnan/ninf, so the range and NaN selects survive.
_FM = FASTMATH

# Minimax coefficients of (expm1(r) - r) / r**2 ~ c2 + c3 r + ... + c11 r**9 on
# |r| <= 1.001 ln(2)/2 (Lawson's iteration with residuals in 200-bit mpmath,
# coefficients rounded to double; tests/core/test_fastexp.py checks the error).
_C2 = 0.5000000000000013
_C3 = 0.16666666666666685
_C4 = 0.04166666666651065
_C5 = 0.008333333333316192
_C6 = 0.0013888888948140666
_C7 = 0.00019841269898232815
_C8 = 2.4801488859101368e-05
_C9 = 2.7557233186138298e-06
_C10 = 2.7631647037968626e-07
_C11 = 2.5112575199224827e-08


@jit(fastmath=_FM)
def _exp_core(x):
    """``exp(x)`` for ``EXP_LO <= x <= EXP_HI`` (the body shared by
    :func:`exp_scalar` and :func:`exp_finite`; inlined into their loops).
    Elsewhere its exponent arithmetic wraps: callers replace the result."""
    z = fma(x, _LOG2E, _SHIFT)
    kf = z - _SHIFT  # k, exactly
    # Cody–Waite: the hi product is exact, so r carries only the lo rounding.
    r = fma(-kf, _LN2_LO, fma(-kf, _LN2_HI, x))
    # Horner, longest chain first; the last two steps, 1 + r(1 + r t), set the
    # accuracy (their roundings, not the polynomial's 0.04 ulp).
    p = fma(r, _C11, _C10)
    p = fma(r, p, _C9)
    p = fma(r, p, _C8)
    p = fma(r, p, _C7)
    p = fma(r, p, _C6)
    p = fma(r, p, _C5)
    p = fma(r, p, _C4)
    p = fma(r, p, _C3)
    p = fma(r, p, _C2)
    p = fma(r, fma(r, p, 1.0), 1.0)
    # Numba only allows .view on values built by np.<dtype>(...), hence the
    # wrappers (no-ops after compilation).  k << 52 straight from z's bits: the
    # shift drops the exponent field and the 2**51 offset.
    kbits = np.float64(z).view(np.int64) << 52
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
        ``x > EXP_HI``, NaN for NaN, otherwise within one ulp (0.865 ulp
        measured) of the exact value.

    Notes
    -----
    Same code as the body of :func:`exp_row`.  Straight-line strict-IEEE
    code with explicit FMAs: the same bits wherever LLVM inlines it, scalar
    or vectorised, at any vector width (see :mod:`particles._numba`).
    """
    # Outside [EXP_LO, EXP_HI] (and for NaN, inf) the core's exponent add
    # wraps: the selects replace whatever it gave, so no clamp is needed.
    y = _exp_core(x)
    y = 0.0 if x < EXP_LO else y
    # Above EXP_HI and NaN in one select: x + inf is +inf there, NaN for NaN
    # (an unordered compare; two compares and blends fewer than a select each,
    # 7% faster).  Not `x` itself for NaN: in the in-place loop "store x back"
    # is a no-op store, which LLVM turns into a masked store (vmaskmovpd),
    # microcoded and slow on AMD.
    return y if x <= EXP_HI else x + _INF


@jit(fastmath=_FM)
def exp_finite(x):
    """:func:`exp_scalar` for finite arguments at most :data:`EXP_HI`: the same
    bits there, without the upper and NaN selects.

    For the attention tiles, whose callers have checked that every score is
    finite and far below ``EXP_HI`` (``particles.fields.attention``'s
    ``fast`` flag).  Below ``EXP_LO`` the exponent arithmetic of the core
    wraps, and the select returns ``0.0`` instead; a NaN or infinite
    argument may come out as a finite number (never pass one).
    """
    y = _exp_core(x)
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
    within one ulp elsewhere.
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


# -- float32 ---------------------------------------------------------------------
# Every constant is a float32 value: a Python float is a float64 in Numba and
# would promote the whole evaluation (and `fma` computes in float32 only when
# all three arguments are float32).

#: float32 inputs below this give exactly 0.0 (exp(EXP_LO32) is 1.0065 times
#: the smallest normal float32).
EXP_LO32 = np.float32(-87.33)
#: float32 inputs above this give +inf: the largest float32 whose exponential
#: is a finite float32 (0x1.62e42ep+6, just below ln of the largest float32).
EXP_HI32 = np.float32(88.72283172607422)

_LOG2E32 = np.float32(1.442695)  # 0x1.715476p+0
# ln 2 = _LN2_HI32 + _LN2_LO32 to 5.5e-14: the hi part has 15 significant bits,
# so k * _LN2_HI32 is exact for |k| < 2**9 (here |k| <= 150).
_LN2_HI32 = np.float32(0.69314575)  # 0x1.62e4p-1
_LN2_LO32 = np.float32(1.4286068e-06)  # 0x1.7f7d1cp-20
_SHIFT32 = np.float32(12582912.0)  # 1.5 * 2**23
_ZERO32 = np.float32(0.0)
_ONE32 = np.float32(1.0)
_INF32 = np.float32(np.inf)
_EXPONENT_SHIFT32 = np.int32(23)

# Minimax, as for float64 (coefficients rounded to float32; error below 3.6e-9
# on |r| <= 1.001 ln(2)/2, 0.06 ulp of 1).
_F2 = np.float32(0.5)
_F3 = np.float32(0.1666652411222458)
_F4 = np.float32(0.041666459292173386)
_F5 = np.float32(0.008368456736207008)
_F6 = np.float32(0.0013934399466961622)


@jit(fastmath=_FM)
def _exp_core32(x):
    """:func:`_exp_core` in float32 (``EXP_LO32 <= x <= EXP_HI32``)."""
    z = fma(x, _LOG2E32, _SHIFT32)
    kf = z - _SHIFT32
    r = fma(-kf, _LN2_LO32, fma(-kf, _LN2_HI32, x))
    p = fma(r, _F6, _F5)
    p = fma(r, p, _F4)
    p = fma(r, p, _F3)
    p = fma(r, p, _F2)
    p = fma(r, fma(r, p, _ONE32), _ONE32)
    # as in float64: k = -126 only with p >= 1, k = 128 only with p < 1
    kbits = np.float32(z).view(np.int32) << _EXPONENT_SHIFT32
    return np.int32(np.float32(p).view(np.int32) + kbits).view(np.float32)


@jit(fastmath=_FM)
def exp_scalar32(x):
    """Exponential of one float32, branch-free, in float32 arithmetic.

    Parameters
    ----------
    x : numpy.float32
        Argument.

    Returns
    -------
    numpy.float32
        ``exp(x)``: exactly ``0.0`` for ``x < EXP_LO32``, ``+inf`` for
        ``x > EXP_HI32``, NaN for NaN, otherwise within one ulp of the float64
        exponential rounded to float32.
    """
    y = _exp_core32(x)
    y = _ZERO32 if x < EXP_LO32 else y
    return y if x <= EXP_HI32 else x + _INF32


@jit(fastmath=_FM)
def exp_finite32(x):
    """:func:`exp_scalar32` for finite float32 arguments at most
    :data:`EXP_HI32` (the same bits there; see :func:`exp_finite`)."""
    y = _exp_core32(x)
    return _ZERO32 if x < EXP_LO32 else y


@jit(fastmath=_FM)
def exp_row32(x, out):
    """Elementwise float32 exponential of a row, vectorised.

    Parameters
    ----------
    x : ndarray of float32, shape (m,)
        Arguments.
    out : ndarray of float32, shape (m,)
        Receives ``exp(x)``; may be the same array as ``x`` (in place).

    Notes
    -----
    Accuracy and range behaviour are those of :func:`exp_scalar32`.
    """
    if x.ctypes.data == out.ctypes.data and x.strides[0] == out.strides[0]:
        _exp_inplace32(out)
    else:
        for i in range(x.shape[0]):
            out[i] = exp_scalar32(x[i])


@jit(fastmath=_FM)
def _exp_inplace32(a):
    """Overwrite ``a`` (float32, shape (m,)) with ``exp(a)``."""
    for i in range(a.shape[0]):
        a[i] = exp_scalar32(a[i])


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

