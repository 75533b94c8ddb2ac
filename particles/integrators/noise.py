"""Counter-based Gaussian noise for the steppers: Philox-4x64-10 and Box-Muller.

A stochastic stepper never holds a random state.  The normal number it
needs for component ``a`` of row ``i`` at step ``counter`` of a system is a
pure function of

    (key, counter, i, a, stream)

where ``key`` (two 64-bit words, :func:`particles.seeds.noise_key`) is
derived from the root seed and the system's index, ``counter`` is the
global step counter (steps since t = 0, so a resumed run continues the same
stream) and ``stream`` tells apart several draws of one step (a scheme
with two Brownian increments per step uses streams 0 and 1).  Results
therefore never depend on the thread count, on the layout or on how an
ensemble is split into tasks.

Bits: the block cipher Philox-4x64 with 10 rounds (Salmon, Moraes, Dror,
Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011), the
generator of ``numpy.random.Philox``: the counter ``(counter, i, a // 4,
stream)`` and the key give four 64-bit words.  Each word ``w`` becomes a
uniform ``u = ((w >> 11) + 1) 2^-53`` in (0, 1], and the pairs
``(u0, u1)``, ``(u2, u3)`` give four standard normals by Box-Muller,
``sqrt(-2 log u0) (cos 2 pi u1, sin 2 pi u1)``; component ``a`` is the
``a % 4``-th of them.

:func:`philox_reference` and :func:`normals_reference` are the NumPy twins of
the compiled :func:`philox4x64` and :func:`fill_normals`.
"""

from __future__ import annotations

import numpy as np

from particles._numba import jit, specialize

# Philox-4x64 multipliers and Weyl key increments (Random123, philox.h).
_M0 = np.uint64(0xD2E7470EE14C6C93)
_M1 = np.uint64(0xCA5A826395121157)
_W0 = np.uint64(0x9E3779B97F4A7C15)
_W1 = np.uint64(0xBB67AE8584CAA73B)
_LO32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_S11 = np.uint64(11)
_ONE = np.uint64(1)
_TWO = np.uint64(2)
_THREE = np.uint64(3)
_FOUR = np.uint64(4)
#: 2^-53: the spacing of the uniforms.
_ULP = 2.0 ** -53
_TWO_PI = 2.0 * np.pi

#: rounds of the Philox cipher (10: the Crush-resistant default).
ROUNDS = 10


@jit
def _mulhi(a, b):
    """High 64 bits of the 128-bit product of two uint64 (from 32-bit halves)."""
    a0 = a & _LO32
    a1 = a >> _S32
    b0 = b & _LO32
    b1 = b >> _S32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    p11 = a1 * b1
    mid = (p00 >> _S32) + (p01 & _LO32) + (p10 & _LO32)
    return p11 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32)


@jit
def philox4x64(c0, c1, c2, c3, k0, k1):
    """The Philox-4x64-10 block of counter ``(c0, c1, c2, c3)`` and key ``(k0, k1)``.

    All arguments and the four returned words are uint64.
    """
    for r in range(ROUNDS):
        if r > 0:
            k0 = k0 + _W0
            k1 = k1 + _W1
        hi0 = _mulhi(_M0, c0)
        lo0 = _M0 * c0
        hi1 = _mulhi(_M1, c2)
        lo1 = _M1 * c2
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


@jit
def _uniform(w):
    """The uniform in (0, 1] of a 64-bit word: its top 53 bits, plus one ulp."""
    return np.float64((w >> _S11) + _ONE) * _ULP


@jit
def normals4(key, counter, row, block, stream):
    """Four standard normals of counter ``(counter, row, block, stream)``.

    Parameters
    ----------
    key : ndarray of uint64, shape (2,)
        The system's noise key.
    counter, row, block, stream : int
        Non-negative; ``block`` is the component index divided by 4.
    """
    w0, w1, w2, w3 = philox4x64(np.uint64(counter), np.uint64(row), np.uint64(block),
                                np.uint64(stream), key[0], key[1])
    r0 = np.sqrt(-2.0 * np.log(_uniform(w0)))
    a0 = _TWO_PI * _uniform(w1)
    r1 = np.sqrt(-2.0 * np.log(_uniform(w2)))
    a1 = _TWO_PI * _uniform(w3)
    return r0 * np.cos(a0), r0 * np.sin(a0), r1 * np.cos(a1), r1 * np.sin(a1)


@jit
def fill_normals(key, counter, stream, out):
    """Standard normals of step ``counter`` into ``out`` (n, d), one per component.

    ``out[i, a]`` depends only on ``(key, counter, i, a, stream)`` (see the
    module docstring); rows may be filled in any order or on any thread.
    """
    n, d = out.shape
    nb = (d + 3) // 4
    for i in range(n):
        for b in range(nb):
            z0, z1, z2, z3 = normals4(key, counter, i, b, stream)
            a = 4 * b
            out[i, a] = z0
            if a + 1 < d:
                out[i, a + 1] = z1
            if a + 2 < d:
                out[i, a + 2] = z2
            if a + 3 < d:
                out[i, a + 3] = z3


# ---------------------------------------------------------------- NumPy twins
def _mulhi_np(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m = np.uint64(0xFFFFFFFF)
    s = np.uint64(32)
    a0, a1, b0, b1 = a & m, a >> s, b & m, b >> s
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s) + (p01 & m) + (p10 & m)
    return p11 + (p01 >> s) + (p10 >> s) + (mid >> s)


def philox_reference(counters: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Philox-4x64-10 in NumPy, vectorised over counters.

    Parameters
    ----------
    counters : array_like of uint64, shape (..., 4)
    key : array_like of uint64, shape (2,)

    Returns
    -------
    ndarray of uint64, shape (..., 4)
    """
    c = np.array(counters, dtype=np.uint64)
    c0, c1, c2, c3 = (c[..., j] for j in range(4))
    k0, k1 = (np.uint64(k) for k in np.asarray(key, dtype=np.uint64))
    with np.errstate(over="ignore"):
        for r in range(ROUNDS):
            if r > 0:
                k0 = np.uint64(k0 + _W0)
                k1 = np.uint64(k1 + _W1)
            hi0, lo0 = _mulhi_np(_M0, c0), _M0 * c0
            hi1, lo1 = _mulhi_np(_M1, c2), _M1 * c2
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return np.stack([c0, c1, c2, c3], axis=-1)


def normals_reference(key: np.ndarray, counter: int, stream: int, n: int, d: int) -> np.ndarray:
    """NumPy twin of :func:`fill_normals`: the normals of step ``counter``, shape (n, d)."""
    nb = (d + 3) // 4
    i, b = np.meshgrid(np.arange(n), np.arange(nb), indexing="ij")
    ctr = np.stack([np.full_like(i, counter), i, b, np.full_like(i, stream)], axis=-1)
    w = philox_reference(ctr.astype(np.uint64), key)
    u = ((w >> np.uint64(11)) + np.uint64(1)).astype(np.float64) * _ULP
    r0 = np.sqrt(-2.0 * np.log(u[..., 0]))
    r1 = np.sqrt(-2.0 * np.log(u[..., 2]))
    a0 = _TWO_PI * u[..., 1]
    a1 = _TWO_PI * u[..., 3]
    z = np.stack([r0 * np.cos(a0), r0 * np.sin(a0), r1 * np.cos(a1), r1 * np.sin(a1)], axis=-1)
    return z.reshape(n, 4 * nb)[:, :d]


#: the key of deterministic runs (no noise is drawn; the steppers ignore it).
NO_KEY = np.zeros(2, dtype=np.uint64)


def no_keys(batch: int) -> np.ndarray:
    """Keys of ``batch`` systems that draw no noise, shape (batch, 2) uint64."""
    return np.zeros((batch, 2), dtype=np.uint64)


@jit
def brownian_increment(key, counter, sigma, h, out):
    """``sigma`` times the Brownian increment of step ``counter`` over a step ``h``:
    ``out = sigma sqrt(h) xi`` with ``xi`` the normals of :func:`fill_normals`
    (stream 0), shape (n, d)."""
    fill_normals(key, counter, 0, out)
    c = sigma * np.sqrt(h)
    n, d = out.shape
    for i in range(n):
        for a in range(d):
            out[i, a] *= c


# ------------------------------------------------- the step of a stochastic integrator
advance = None  # bound per scheme by make_noisy_step


def _noisy_step(X, t, h, p, ws, S, key, counter):
    """One stochastic step: the Brownian increment of step ``counter`` (scaled
    by ``sigma = p[-1]``) into the last scratch slot, then the scheme's
    ``advance`` with the drift's parameters ``p[:-1]``."""
    dW = S[S.shape[0] - 1]
    brownian_increment(key, counter, p[-1], h, dW)
    advance(X, t, h, p[:-1], ws, S, dW)


def make_noisy_step(name: str, increment_step):
    """Compile ``step(X, t, h, p, ws, S, key, counter)`` around a scheme's
    ``advance(X, t, h, p, ws, S, dW)`` (driven by a given increment, whose
    slot is the last of ``S``); ``p[-1]`` is the noise amplitude sigma."""
    return specialize(_noisy_step, name, cache=True, advance=increment_step)

