"""Spectral summation of zonal attention kernels on S^1 and S^2 (``summation="spectral"``).

When the kernel sees tokens only through ``<x_i, x_j>`` (:func:`zonal_profile`:
``edp`` with ``Q^T K = c I``, ``c >= 0``; ``rbf`` with ``Q = K = I``, since
``exp(-tau |x - y|^2) = e^{-2 tau} exp(2 tau <x, y>)`` on the sphere), every
attention sum is a convolution on the sphere with the profile
``f(t) = exp(b (t - 1))``, ``b = beta c`` (or ``2 tau``), scaled so that
``f(1) = 1``:

* **circle** (d = 2): ``f(cos a) = sum_k a_k e^{i k a}``, ``a_k = I_|k|(b) e^{-b}``
  (scaled modified Bessel functions, :func:`scipy.special.ive`: no overflow at
  ``b = 700`` or ``1e4``).  With tokens as unit complex numbers ``z_j`` and the
  moments ``S_k = sum_j m_j z_j^k`` (``S_{-k} = conj(S_k)``),

      D_i = sum_j m_j f(<x_i, x_j>)     = sum_k a_k z_i^k conj(S_k),
      N_i = sum_j m_j f(<x_i, x_j>) z_j = sum_k a_k z_i^k S_{1-k},

  ``O(n K)`` per evaluation in one compiled loop that keeps :data:`TOKENS`
  tokens side by side (vectorised; :func:`circle_sums_reference` is its
  NumPy twin).
* **S^2** (d = 3): ``f(t) = sum_l (2l + 1) i_l(b) e^{-b} P_l(t)`` (Funk-Hecke;
  ``i_l`` the modified spherical Bessel function) and ``P_l(<x, y>) = 4 pi /
  (2l + 1) sum_m Y_lm(x) Y_lm(y)^*``: ``D_i`` is an adjoint
  spherical-harmonic transform of the masses at the token positions, a
  multiplication by ``4 pi i_l(b) e^{-b}`` per degree, and a synthesis back at
  the positions (``ducc0.sht.experimental``'s ``adjoint_synthesis_general`` /
  ``synthesis_general``): ``O(n + L^2 log L)``.  ``N_i`` needs no transform of
  its own: ``f' = b f``, so its tangential part is ``grad D / b`` (a gradient
  synthesis of the same coefficients) and its radial part ``R_i = <x_i, N_i>``
  the sum of the zonal profile ``t f(t)`` (per degree ``4 pi i_l'(b) e^{-b}``):
  one adjoint transform and three syntheses (:func:`sphere_transforms`; four
  pairs before), ``N_i = G_i + R_i x_i``.

Then SA gives ``y_i = V N_i / D_i`` and USA ``y_i = V N_i e^{b + log g - c} / N``
(``g`` the kernel's constant factor, ``c`` the USA shift, ``N`` the total mass).

**Truncation** (:func:`truncation`; S^2 :func:`sphere_truncation`, which
bounds the radial and tangential series too).  The coefficients are positive and sum to
``f(1) = 1``; ``D_i >= m_i`` (the token's own term), and ``|z_i^k| = |P_l| <= 1``,
so cutting the series after ``K`` (or ``L``) terms moves ``D_i`` and ``N_i`` by
at most ``tail * N`` and every ``y_i`` by at most ``2 tail N / m_i`` in the
scale of ``|y| <= ||V||`` (SA; USA by ``tail`` in its own scale).  ``K`` is the
least with ``tail <= tol min(m) / (2 N)``: a bound, not an estimate.

**Rounding.**  The series sums terms as large as ``N`` into a ``D_i`` that can
be as small as ``m_i`` (a token far from all others at large ``b``): the
rounding error relative to ``y_i`` is about ``RHO C / D_i``, ``C`` the sum of
the terms' sizes (the circle: ``a_0 N + 2 sum_k a_k |S_k|``; S^2: ``N``, the
scale of the transforms' error).  Rows where ``RHO C / D_i > tol`` are summed
directly (``O(n)`` each): exact to the tolerance everywhere, at the direct
cost only for isolated tokens (in a clustered state ``D_i`` is about the mass
of the token's cluster).  ``RHO`` is measured (tests in
``tests/fields/test_spectral.py`` run random, clustered and near-antipodal
configurations from ``b = 0.1`` to 700 at ``tol = 1e-12``).

**Off the sphere.**  The series are exact for unit tokens; integrators whose
stages leave the sphere (rk4, heun, dopri5 evaluate the field at ambient
points ``x + h k``) see another extension of the field there than the
direct sums' ``exp(beta <x_i, x_j>)`` of non-unit vectors (the circle's
moments carry ``|z|^k``; S^2 sees only the directions: ``N_i`` sums the
unit ``x_j``).  Both
extend the same field on the sphere, so the two trajectories agree to the
integrator's own error (rk4: 2.6e-7 at dt = 0.1 and 1.6e-8 at dt = 0.05
over t = 20, n = 48, beta = 4, the h^4 ratio), not to ``tol``; the Euler
layer and the geodesic integrator evaluate on the sphere and agree to
round-off (5e-15 and 9e-15 there).
"""

from __future__ import annotations

import itertools
import math
from functools import cache

import numpy as np
from scipy import special

from particles._numba import jit, objmode, prange, specialize
from particles.fields import costs as cost
from particles.fields.base import DriftSet
from particles.protocols import RunSpec

#: tokens per block of the circle's moments: fixed, so that the moments are
#: summed in the same order (the same bits) by one thread or many.
BLOCK = 1024
#: tokens the circle's loops keep side by side, vectorised across them (32 ran
#: 1.1x faster than 16, 64 or 128 on an AVX-512 host: 4 vectors of 8).
TOKENS = 32
#: rounding error of a summed series relative to the sum of its terms' sizes
#: (see the module docstring; measured errors stay 10-50x below it).
RHO = 64 * np.finfo(np.float64).eps
#: the most accurate setting of the S^2 transforms (ducc0 refuses less than 2e-13).
DUCC_EPS_MIN = 2.1e-13


# ------------------------------------------------------------ eligibility
def zonal_profile(config: RunSpec, Q: np.ndarray, K: np.ndarray) -> tuple[float, float] | str:
    """``(b, log g)`` with ``kappa(Q x, K y) = g e^b f(<x, y>)`` on the sphere,
    or why the kernel is not zonal there (a phrase completing "the spectral summation ...").

    Parameters
    ----------
    config : RunSpec
        Its kernel and parameter.
    Q, K : ndarray, shape (d, d)
        One head's matrices.
    """
    d = config.d
    eye = np.eye(d)
    if config.kernel == "edp":
        G = np.asarray(Q).T @ np.asarray(K)
        c = float(G[0, 0])
        if not np.allclose(G, c * eye, rtol=0.0, atol=1e-14 * max(1.0, abs(c))) or c < 0:
            return "needs Q^T K a non-negative multiple of the identity"
        return float(config.beta) * c, 0.0
    if config.kernel == "rbf":
        if not (np.all(Q == eye) and np.all(K == eye)):
            return "needs Q = K = I for kernel 'rbf'"
        return 2.0 * float(config.tau), -2.0 * float(config.tau)
    return (f"serves the kernels 'edp' and 'rbf' only: {config.kernel!r} is not "
            "exp(b <x, y>) on the sphere")


def refusal(config: RunSpec) -> str | None:
    """Why the spectral summation cannot serve a run (a phrase), or None.

    Needs ``d`` in (2, 3), model ``sa`` or ``usa`` with softmax weights, one
    head, fixed ``Q, K`` (not drawn) with a zonal kernel (:func:`zonal_profile`),
    and one draw of the weights for every system (the parameter tuple has no
    batch axis); ``V`` (drawn too), masses, noise, ensembles and every
    integrator are served.
    """
    from particles.fields.weights import QK_WEIGHTS

    if config.d not in (2, 3):
        return f"works on the circle and S^2 only, d = 2 or 3, not d = {config.d}"
    if config.model not in ("sa", "usa"):
        return f"serves models 'sa' and 'usa' only, not {config.model!r}"
    if config.normalization != "softmax":
        return f"serves softmax weights only, not normalization {config.normalization!r}"
    if config.heads != 1:
        return f"serves one head, not {config.heads}"
    if config.weight_draws != "shared":
        return "needs one draw of the weights for all systems, not weight_draws 'independent'"
    qk = QK_WEIGHTS[config.weights]
    if qk.random:
        return f"needs fixed Q, K: weights {config.weights!r} draws them"
    Q, K = qk.draw(None, config.d, config.matrix("Q"), config.matrix("K"))
    d = config.d
    why = zonal_profile(config, np.reshape(Q, (-1, d, d))[0], np.reshape(K, (-1, d, d))[0])
    if isinstance(why, str):
        return why
    return _batch_refusal(config)


def _batch_refusal(config: RunSpec) -> str | None:
    """Why a batch on S^2 is not served (a phrase), or None: where :func:`costs`
    puts the transforms above the direct sums.  Below that size a system's
    transforms are mostly Python and ducc0's set-up, which hold the
    interpreter, so a batch's systems run them one after another (n = 64:
    about 100x the direct sums' time, which run on every thread)."""
    if config.d != 3 or (config.batch or 1) == 1:
        return None
    direct, spec = costs(config.n, 3, degree(config))
    if spec <= direct:
        return None
    L = degree(config)
    least = config.n
    while costs(least, 3, L)[1] > costs(least, 3, L)[0]:
        least = int(least * 1.05) + 1
    least = int(float(f"{least:.2g}"))
    return (f"of a batch on S^2 would be {spec / direct:.0f}x slower than the direct sums at "
            f"n = {config.n} (its transforms hold the interpreter there; it pays from "
            f"n of about {least})")


# ------------------------------------------------------------ coefficients
def coefficients(b: float, d: int, count: int) -> np.ndarray:
    """The first ``count`` weights of the profile: ``a_k`` (d = 2: ``f(cos a) =
    a_0 + 2 sum_k a_k cos(k a)``) or ``(2l + 1) i_l(b) e^{-b}`` (d = 3); each
    family sums (with the circle's ``a_k`` counted twice for ``k > 0``) to 1."""
    k = np.arange(count, dtype=np.float64)
    if b == 0.0:
        return (k == 0).astype(np.float64)
    if d == 2:
        return special.ive(k, b)
    return (2 * k + 1) * np.sqrt(np.pi / (2 * b)) * special.ive(k + 0.5, b)


@cache
def truncation(b: float, d: int, tol: float, mass_ratio: float) -> tuple[int, float]:
    """``(K, tail)``: the least degree whose omitted weights sum to at most
    ``tol / (2 mass_ratio)`` (``mass_ratio = N / min(m)``; see the module
    docstring), and that sum.

    Parameters
    ----------
    b : float
        The profile's exponent (>= 0).
    d : int
        2 or 3.
    tol : float
        Relative tolerance on each drift evaluation.
    mass_ratio : float
        Total mass over the smallest token mass (n for equal masses).
    """
    bound = tol / (2.0 * mass_ratio)
    # the weights fall off like exp(-k^2 / (2 b)) beyond sqrt(b): this covers tol >= 1e-300
    count = int(60 + 40 * math.sqrt(b) + 2 * math.log(max(mass_ratio, 1.0)))
    w = coefficients(b, d, count)
    if d == 2:
        w = np.concatenate([w[:1], 2 * w[1:]])  # a_k and a_-k
    tails = np.cumsum(w[::-1])[::-1]  # tails[k] = sum of the weights from k on
    over = np.nonzero(tails <= bound)[0]
    K = int(over[0]) - 1 if over.size else count - 1
    K = max(K, 1)
    return K, float(tails[K + 1]) if K + 1 < count else 0.0


def profile(config: RunSpec, Q: np.ndarray, K: np.ndarray) -> tuple[float, float]:
    """:func:`zonal_profile` of a run the spectral summation serves."""
    prof = zonal_profile(config, Q, K)
    if isinstance(prof, str):
        raise ValueError(f"summation='spectral' {prof}")
    return prof


def degree(config: RunSpec) -> int:
    """The truncation degree (K on the circle, L on S^2) of a run's first layer."""
    from particles.fields.weights import draw_layer

    Q, K, _ = draw_layer(config, 0)
    b, _ = profile(config, Q[0], K[0])
    if config.masses is None:
        ratio = float(config.n)  # equal masses: no array (auto sizes n = 1e12 runs)
    else:
        m = config.mass_array()
        ratio = float(m.sum() / m.min())
    if config.d == 3:
        return sphere_truncation(b, float(config.tol), ratio)
    return truncation(b, 2, float(config.tol), ratio)[0]


# ------------------------------------------------------------ the circle
# C901: a compiled kernel, one loop nest kept whole so that its bits and speed stay as measured
def _circle_spectral(X, p, out, ws):  # noqa: C901
    """Attention output ``out`` (n, 2) of tokens ``X`` (n, 2) by trigonometric moments.

    ``p = (V, m, a, b, normalized, factor, inv_mass, v_identity, tol)`` with
    ``a`` the weights ``a_0..a_K``; ``ws`` float64 scratch of
    :func:`circle_workspace` floats (independent of the threads).

    Both passes keep :data:`TOKENS` tokens side by side, so that the loops
    over them vectorise (each token's powers ``z^k`` are a serial recurrence):
    the moments in per-lane partial sums combined in a fixed order at the end
    of each block, the series of every token in order of ``k`` as one token
    alone would sum it.
    """
    V, m, a, b, normalized, factor, inv_mass, v_identity, tol = p
    n = X.shape[0]
    K = a.shape[0] - 1
    nm = K + 2  # moments S_0 .. S_{K+1}
    nb = (n + BLOCK - 1) // BLOCK
    width = 2 * nm
    for blk in prange(nb):
        acc_r = np.zeros((nm, TOKENS))
        acc_i = np.zeros((nm, TOKENS))
        zr = np.empty(TOKENS)
        zi = np.empty(TOKENS)
        pr = np.empty(TOKENS)
        pi = np.empty(TOKENS)
        hi = min(n, (blk + 1) * BLOCK)
        for g in range(blk * BLOCK, hi, TOKENS):
            cnt = min(TOKENS, hi - g)
            _lanes(X, g, cnt, zr, zi)
            for t in range(TOKENS):  # lanes past the end carry mass 0
                pr[t] = m[g + t] if t < cnt else 0.0
                pi[t] = 0.0
            for k in range(nm):
                ar = acc_r[k]
                ai = acc_i[k]
                for t in range(TOKENS):
                    ar[t] += pr[t]
                    ai[t] += pi[t]
                    qr = pr[t] * zr[t] - pi[t] * zi[t]
                    pi[t] = pr[t] * zi[t] + pi[t] * zr[t]
                    pr[t] = qr
        off = width * blk
        for k in range(nm):  # the lanes in order: the same bits for any threads
            sr = 0.0
            si = 0.0
            for t in range(TOKENS):
                sr += acc_r[k, t]
                si += acc_i[k, t]
            ws[off + 2 * k] = sr
            ws[off + 2 * k + 1] = si
    tot = width * nb
    for k in range(width):
        s = 0.0
        for blk in range(nb):  # in block order: the same bits for any threads
            s += ws[width * blk + k]
        ws[tot + k] = s
    S = ws[tot:tot + width]
    M = S[0]
    C = a[0] * M  # the sum of the series' term sizes (rounding, module docstring)
    for k in range(1, K + 1):
        C += 2.0 * a[k] * math.sqrt(S[2 * k] ** 2 + S[2 * k + 1] ** 2)
    for blk in prange(nb):
        zr = np.empty(TOKENS)
        zi = np.empty(TOKENS)
        wr = np.empty(TOKENS)
        wi = np.empty(TOKENS)
        Dv = np.empty(TOKENS)
        Nrv = np.empty(TOKENS)
        Niv = np.empty(TOKENS)
        hi = min(n, (blk + 1) * BLOCK)
        for g in range(blk * BLOCK, hi, TOKENS):
            cnt = min(TOKENS, hi - g)
            _lanes(X, g, cnt, zr, zi)
            for t in range(TOKENS):
                wr[t] = 1.0
                wi[t] = 0.0
                Dv[t] = a[0] * M
                Nrv[t] = a[0] * S[2]
                Niv[t] = a[0] * S[3]
            for k in range(1, K + 1):
                ak = a[k]
                ur = S[2 * k]
                ui = S[2 * k + 1]
                sr = S[2 * k - 2]
                si = S[2 * k - 1]
                tr = S[2 * k + 2]
                ti = S[2 * k + 3]
                for t in range(TOKENS):
                    vr = wr[t] * zr[t] - wi[t] * zi[t]  # z^k
                    vi = wr[t] * zi[t] + wi[t] * zr[t]
                    wr[t] = vr
                    wi[t] = vi
                    # D += 2 a_k Re(w conj(S_k))
                    Dv[t] += 2.0 * ak * (vr * ur + vi * ui)
                    # N += a_k (w conj(S_{k-1}) + conj(w) S_{k+1})
                    Nrv[t] += ak * ((vr * sr + vi * si) + (vr * tr + vi * ti))
                    Niv[t] += ak * ((vi * sr - vr * si) + (vr * ti - vi * tr))
            for t in range(cnt):
                i = g + t
                D = Dv[t]
                Nr = Nrv[t]
                Ni = Niv[t]
                if not RHO * C <= tol * D:
                    D, Nr, Ni = _direct_row(X, m, b, i)
                if normalized:
                    y0 = Nr / D
                    y1 = Ni / D
                else:
                    y0 = Nr * factor * inv_mass
                    y1 = Ni * factor * inv_mass
                if v_identity:
                    out[i, 0] = y0
                    out[i, 1] = y1
                else:
                    out[i, 0] = V[0, 0] * y0 + V[0, 1] * y1
                    out[i, 1] = V[1, 0] * y0 + V[1, 1] * y1


@jit
def _lanes(X, g, cnt, zr, zi):
    """Tokens ``g .. g + cnt`` of X (n, 2) into the lanes ``zr, zi`` (:data:`TOKENS`,);
    the lanes past ``cnt`` repeat token ``g``."""
    for t in range(TOKENS):
        j = g + t if t < cnt else g
        zr[t] = X[j, 0]
        zi[t] = X[j, 1]


@jit
def _direct_row(X, m, b, i):
    """``(D_i, N_i)`` of the circle summed directly (rows the series cannot resolve)."""
    D = 0.0
    Nr = 0.0
    Ni = 0.0
    for j in range(X.shape[0]):
        w = m[j] * math.exp(b * (X[i, 0] * X[j, 0] + X[i, 1] * X[j, 1] - 1.0))
        D += w
        Nr += w * X[j, 0]
        Ni += w * X[j, 1]
    return D, Nr, Ni


circle_serial = specialize(_circle_spectral, "serial", cache=True)
circle_parallel = specialize(_circle_spectral, "parallel", parallel=True, cache=True)


def circle_workspace(n: int, K: int) -> int:
    """Scratch floats of the circle's drift: the moments per block and their sum."""
    return 2 * (K + 2) * ((n + BLOCK - 1) // BLOCK + 1)


def circle_sums_reference(X: np.ndarray, m: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(D, N, C)``: the circle's series in plain NumPy (twin of the compiled drift).

    Parameters
    ----------
    X : ndarray, shape (n, 2)
    m : ndarray, shape (n,)
    a : ndarray, shape (K + 1,)

    Returns
    -------
    D : ndarray, shape (n,)
    N : ndarray, shape (n, 2)
    C : float
        The sum of the series' term sizes.
    """
    K = a.shape[0] - 1
    z = X[:, 0] + 1j * X[:, 1]
    k = np.arange(K + 2)
    S = (m[None, :] * z[None, :] ** k[:, None]).sum(axis=1)
    w = z[:, None] ** k[None, 1:K + 1]  # (n, K)
    D = a[0] * S[0].real + 2.0 * (a[1:] * (w * np.conj(S[1:K + 1])).real).sum(axis=1)
    N = a[0] * S[1] + (a[1:] * (w * np.conj(S[:K]) + np.conj(w) * S[2:K + 2])).sum(axis=1)
    C = a[0] * S[0].real + 2.0 * float((a[1:] * np.abs(S[1:K + 1])).sum())
    return D, np.stack([N.real, N.imag], axis=1), C


# ------------------------------------------------------------ S^2
@cache
def _alm_degrees(L: int) -> np.ndarray:
    """The degree ``l`` of every coefficient in ducc0's (m-major) a_lm layout."""
    return np.concatenate([np.arange(mm, L + 1) for mm in range(L + 1)])


def locations(X: np.ndarray) -> np.ndarray:
    """``(colatitude, longitude)`` (n, 2) of tokens X (n, 3), as ducc0 takes them
    (the colatitude by ``arctan2``: accurate at the poles).  NumPy, not a
    compiled loop: its ``arctan2`` and ``hypot`` are vectorised (1.3x faster
    than a Numba loop of libm calls at n = 1e6 on an AVX-512 host)."""
    loc = np.empty((X.shape[0], 2))
    np.arctan2(np.hypot(X[:, 0], X[:, 1]), X[:, 2], out=loc[:, 0])
    phi = np.arctan2(X[:, 1], X[:, 0])
    phi += np.where(phi < 0.0, 2 * np.pi, 0.0)  # the bits of ``% (2 pi)``, -0 to +0 too
    loc[:, 1] = phi
    return loc


def direct_rows(X: np.ndarray, m: np.ndarray, b: float, rows: np.ndarray, D: np.ndarray,
                N: np.ndarray) -> None:
    """Sum the rows ``rows`` of ``D`` (n,) and ``N`` (n, d) directly, in place:
    the tokens the series cannot resolve (blocks of 256 rows, never n x n)."""
    for lo in range(0, rows.size, 256):
        block = rows[lo:lo + 256]
        W = m[None, :] * np.exp(b * (X[block] @ X.T - 1.0))
        D[block] = W.sum(axis=1)
        N[block] = W @ X


def sphere_factors(b: float, count: int) -> np.ndarray:
    """Per-degree factors (3, count) of the S^2 sums from the masses' transform:
    ``D`` (``4 pi i_l(b) e^{-b}``), the radial part ``R = <x, N>`` (the profile
    ``t f(t)``: ``4 pi i_l'(b) e^{-b}``) and the tangential part of ``N``
    (``grad D / b``: ``4 pi i_l(b) e^{-b} / b``, gradients of ``Y_lm``).

    ``i_l' = (l i_{l-1} + (l + 1) i_{l+1}) / (2l + 1)`` (all terms positive),
    and below ``b = 1`` ``i_l / b = (i_{l-1} - i_{l+1}) / (2l + 1)`` (no
    division by a small ``b``; exact at ``b = 0``).
    """
    ell = np.arange(count, dtype=np.float64)
    e = np.zeros(count + 1)  # e^{-b} i_l(b), l = 0..count
    if b == 0.0:
        e[0] = 1.0
    else:
        e[:] = np.sqrt(np.pi / (2 * b)) * special.ive(np.arange(count + 1) + 0.5, b)
    lower = np.concatenate([[0.0], e[:count - 1]])  # e_{l-1} (its l = 0 factor is 0)
    upper = e[1:]
    out = np.empty((3, count))
    out[0] = e[:count]
    out[1] = (ell * lower + (ell + 1) * upper) / (2 * ell + 1)
    out[2] = e[:count] / b if b >= 1.0 else (lower - upper) / (2 * ell + 1)
    out[2, 0] = 0.0  # Y_00 has no gradient
    return 4 * np.pi * out


@cache
def sphere_truncation(b: float, tol: float, mass_ratio: float) -> int:
    """The degree ``L`` of the S^2 transforms: the least whose omitted terms
    move ``D_i`` by at most ``tol N / (2 mass_ratio)`` and the vector ``N_i``
    (radial plus tangential part) by at most as much.

    Each degree's worst case per unit mass: ``D`` ``(2l + 1) i_l e^{-b}``
    (``|P_l| <= 1``), ``R`` ``(2l + 1) i_l' e^{-b}``, the tangential part
    ``(2l + 1) i_l e^{-b} sqrt(l (l + 1)) / b`` (``|P_l^1| <= sqrt(l (l + 1))``).
    Usually one degree above :func:`truncation`'s.
    """
    bound = tol / (2.0 * mass_ratio)
    count = int(60 + 40 * math.sqrt(b) + 2 * math.log(max(mass_ratio, 1.0)))
    fac = sphere_factors(b, count) * (2 * np.arange(count) + 1) / (4 * np.pi)
    fac[2] *= np.sqrt(np.arange(count) * (np.arange(count) + 1.0))

    def tails(w):
        return np.cumsum(w[::-1])[::-1]  # tails[k] = sum of w from k on

    ok = (tails(fac[0]) <= bound) & (tails(fac[1]) + tails(fac[2]) <= bound)
    over = np.nonzero(ok)[0]
    return max(int(over[0]) - 1 if over.size else count - 1, 1)


#: ``(pid, pool)``: the threads that run the S^2 transforms side by side (made
#: on first use in each process: a forked child has none of its parent's threads).
_POOL: tuple = (None, None)


def _pool():
    global _POOL
    import os

    if _POOL[0] != os.getpid():
        from concurrent.futures import ThreadPoolExecutor

        _POOL = (os.getpid(), ThreadPoolExecutor(max_workers=3,
                                                 thread_name_prefix="particles-sht"))
    return _POOL[1]


def _run(jobs, nthreads: int) -> list:
    """Results of ``jobs`` (callables), side by side on the pool when ``nthreads > 1``."""
    if nthreads > 1:
        return list(_pool().map(lambda job: job(), jobs))
    return [job() for job in jobs]


def sphere_transforms(loc: np.ndarray, m: np.ndarray, factors: np.ndarray, eps: float,
                      nthreads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(D, R, G)``: the sums ``D`` (n,), the radial part ``R = <x, N>`` (n,)
    and the tangential part ``G`` (2, n) of ``N`` (its ``theta``, ``phi``
    components) at the tokens' locations ``loc`` (n, 2), masses m (n,).

    One adjoint transform of the masses, then three syntheses of it scaled
    per degree by ``factors`` (3, L + 1) (:func:`sphere_factors`; the
    tangential part as the gradient of a scalar, ducc0's ``DERIV1``).  Each
    transform runs on one thread (ducc0's threads sum in an order that
    depends on their number); with ``nthreads > 1`` the syntheses run side
    by side (ducc0 releases the interpreter): the same bits.
    """
    import ducc0

    sht = ducc0.sht.experimental
    L = factors.shape[1] - 1
    kw = dict(lmax=L, loc=loc, epsilon=eps, nthreads=1)
    alm = sht.adjoint_synthesis_general(spin=0, map=np.ascontiguousarray(m)[None], **kw)
    scaled = alm * factors[:, _alm_degrees(L)]  # (3, nalm)
    G, D, R = _run([  # the gradient (two maps) first: it takes the longest
        lambda: sht.synthesis_general(alm=scaled[2:], spin=1, mode="DERIV1", **kw),
        lambda: sht.synthesis_general(alm=scaled[:1], spin=0, **kw)[0],
        lambda: sht.synthesis_general(alm=scaled[1:2], spin=0, **kw)[0]], nthreads)
    return D, R, G


def assemble(X: np.ndarray, loc: np.ndarray, R: np.ndarray, G: np.ndarray) -> np.ndarray:
    """``N = G_theta e_theta + G_phi e_phi + R x`` (n, 3) at the directions of
    X (n, 3) (``loc`` their :func:`locations`), ``R`` (n,), ``G`` (2, n); the
    NumPy twin of :func:`finish_kernel`'s sums."""
    q = X[:, 0] * X[:, 0] + X[:, 1] * X[:, 1]
    rho = np.sqrt(q)
    inv_r = 1.0 / np.sqrt(q + X[:, 2] * X[:, 2])
    pole = rho == 0.0
    inv_rho = 1.0 / np.where(pole, 1.0, rho)
    # the longitude's cosine and sine; on the axis those of the longitude ducc0 saw
    cp = np.where(pole, np.cos(loc[:, 1]), X[:, 0] * inv_rho)
    sp = np.where(pole, np.sin(loc[:, 1]), X[:, 1] * inv_rho)
    ct = X[:, 2] * inv_r
    st = rho * inv_r
    g0 = G[0]
    g1 = G[1]
    N = np.empty_like(X)
    N[:, 0] = (g0 * ct) * cp - g1 * sp + (R * st) * cp
    N[:, 1] = (g0 * ct) * sp + g1 * cp + (R * st) * sp
    N[:, 2] = R * ct - g0 * st
    return N


def _finish(X, loc, D, R, G, V, normalized, scale, v_identity, out):
    """Attention output ``out`` (n, 3) from the transforms' ``D, R, G``
    (:func:`assemble`, then ``V N / D`` or ``V N scale``), compiled."""
    for i in range(X.shape[0]):
        x0 = X[i, 0]
        x1 = X[i, 1]
        x2 = X[i, 2]
        q = x0 * x0 + x1 * x1
        rho = math.sqrt(q)
        inv_r = 1.0 / math.sqrt(q + x2 * x2)
        if rho == 0.0:
            cp = math.cos(loc[i, 1])
            sp = math.sin(loc[i, 1])
        else:
            inv_rho = 1.0 / rho
            cp = x0 * inv_rho
            sp = x1 * inv_rho
        ct = x2 * inv_r
        st = rho * inv_r
        g0 = G[0, i]
        g1 = G[1, i]
        ri = R[i]
        n0 = (g0 * ct) * cp - g1 * sp + (ri * st) * cp
        n1 = (g0 * ct) * sp + g1 * cp + (ri * st) * sp
        n2 = ri * ct - g0 * st
        w = 1.0 / D[i] if normalized else scale
        y0 = n0 * w
        y1 = n1 * w
        y2 = n2 * w
        if v_identity:
            out[i, 0] = y0
            out[i, 1] = y1
            out[i, 2] = y2
        else:
            for k in range(3):
                out[i, k] = V[k, 0] * y0 + V[k, 1] * y1 + V[k, 2] * y2


finish_kernel = specialize(_finish, "cached", cache=True, nogil=True)


def sphere_sums(X: np.ndarray, m: np.ndarray, factors: np.ndarray,
                eps: float) -> tuple[np.ndarray, np.ndarray]:
    """``(D, N)`` (n,) and (n, 3) of tokens X (n, 3) with masses m (n,) by
    :func:`sphere_transforms`, in NumPy (the twin of the compiled drift)."""
    loc = locations(X)
    D, R, G = sphere_transforms(loc, m, factors, eps)
    return D, assemble(X, loc, R, G)


def _chunks(n: int, nthreads: int) -> list[tuple[int, int]]:
    """``nthreads`` contiguous row ranges covering ``range(n)``."""
    edges = [n * k // max(1, nthreads) for k in range(max(1, nthreads) + 1)]
    return list(itertools.pairwise(edges))


def _host_threads() -> int:
    """Threads for one system's transforms: the package's (Numba's) setting on
    the main thread; one inside a batch's parallel region, whose threads run
    the systems side by side."""
    import threading

    import numba

    return numba.get_num_threads() if threading.current_thread() is threading.main_thread() else 1


def _sphere_host(X, p, out):
    """The S^2 drift in Python (ducc0), called from compiled code (``objmode``)."""
    V, m, c, b, normalized, factor, inv_mass, v_identity, tol = p
    n = X.shape[0]
    threads = _host_threads()
    parts = _chunks(n, threads)  # rows: each computed alone, the same bits for any split
    locs = _run([lambda lo=lo, hi=hi: locations(X[lo:hi]) for lo, hi in parts], threads)
    loc = locs[0] if len(locs) == 1 else np.concatenate(locs)
    D, R, G = sphere_transforms(loc, m, c, max(DUCC_EPS_MIN, tol / 10.0), threads)
    scale = factor * inv_mass
    _run([lambda lo=lo, hi=hi: finish_kernel(X[lo:hi], loc[lo:hi], D[lo:hi], R[lo:hi],
                                             G[:, lo:hi], V, normalized, scale, v_identity,
                                             out[lo:hi]) for lo, hi in parts], threads)
    rows = np.nonzero(~(RHO * float(m.sum()) <= tol * D))[0]
    if rows.size:  # the series cannot resolve these rows: sum them directly
        Dr = np.empty(n)
        Nr = np.empty((n, 3))
        direct_rows(X, m, b, rows, Dr, Nr)
        y = Nr[rows] / Dr[rows, None] if normalized else Nr[rows] * scale
        out[rows] = y if v_identity else y @ V.T


@jit
def sphere_drift(X, p, out, ws):
    """Attention output ``out`` (n, 3) of tokens ``X`` (n, 3) on S^2 by
    spherical-harmonic transforms (``p`` as the circle's, with ``c`` the
    per-degree factors (3, L + 1) of :func:`sphere_factors`); one drift for
    every layout."""
    with objmode():
        _sphere_host(X, p, out)


# ------------------------------------------------------------ the field
def drifts(config: RunSpec) -> DriftSet:
    """The spectral drift pair of a run it serves (d = 2 or 3)."""
    n, K = config.n, degree(config)
    if config.d == 2:
        return DriftSet(circle_serial, circle_parallel, lambda nchunks: circle_workspace(n, K),
                        f"spectral_circle_K{K}")
    return DriftSet(sphere_drift, sphere_drift, lambda nchunks: 1, f"spectral_s2_L{K}")


def params(config: RunSpec, Q: np.ndarray, K: np.ndarray, V: np.ndarray,
           v_identity: bool, normalized: bool, usa_shift: float) -> tuple:
    """The spectral drift's parameter tuple for one head's ``Q, K, V`` (d, d)."""
    b, log_g = profile(config, Q, K)
    m = np.ascontiguousarray(config.mass_array(), dtype=np.float64)
    M = float(m.sum())
    if config.d == 3:
        w = sphere_factors(b, sphere_truncation(b, float(config.tol), M / float(m.min())) + 1)
    else:
        w = coefficients(b, 2, truncation(b, 2, float(config.tol), M / float(m.min()))[0] + 1)
    factor = math.exp(b + log_g - usa_shift)
    return (np.ascontiguousarray(V, dtype=np.float64), m, np.ascontiguousarray(w), float(b),
            bool(normalized), factor, 1.0 / M, bool(v_identity), float(config.tol))


def spectral_reference(config: RunSpec, X: np.ndarray, Q: np.ndarray, K: np.ndarray,
                       V: np.ndarray, normalized: bool, usa_shift: float) -> np.ndarray:
    """The spectral attention output (n, d) in NumPy, the drifts' twin: the
    circle's series (:func:`circle_sums_reference`) or the S^2 transforms
    (:func:`sphere_sums`); rows the series cannot resolve summed directly."""
    p = params(config, Q, K, V, bool(np.all(V == np.eye(config.d))), normalized, usa_shift)
    Vm, m, w, b, _, factor, inv_mass, _, tol = p
    X = np.asarray(X, dtype=np.float64)
    if config.d == 3:
        D, N = sphere_sums(X, m, w, max(DUCC_EPS_MIN, tol / 10.0))
        C = float(m.sum())
    else:
        D, N, C = circle_sums_reference(X, m, w)
    direct_rows(X, m, b, np.nonzero(~(RHO * C <= tol * D))[0], D, N)
    y = N * (1.0 / D)[:, None] if normalized else N * (factor * inv_mass)
    return y @ Vm.T


# ------------------------------------------------------------ the choice
#: ``auto`` picks the series only where :func:`costs` predicts it this many
#: times faster: the measured ratio moved by up to 1.4x between two runs of
#: the bench on one host (1.1-1.25x near the crossover), and a choice that
#: flips on noise would give a run other bits from one version to the next.
AUTO_GAIN = 1.5
#: ... and only from this many tokens: below, the direct sums take
#: milliseconds anyway (at most 1.1 ms per evaluation at n = 1024), and every
#: smaller run keeps the bits of the direct sums it had when ``direct`` was
#: the default.
AUTO_MIN_N = 1024


def costs(n: int, d: int, K: int) -> tuple[float, float]:
    """``(direct, spectral)`` estimated seconds of one drift evaluation of one
    system (:mod:`particles.fields.costs`)."""
    return cost.direct(n, d), cost.series(n, d, K)


def choose(config: RunSpec) -> str:
    """``"spectral"`` or ``"direct"`` for a run the spectral summation serves
    (``summation="auto"``): the series from :data:`AUTO_MIN_N` tokens where
    :func:`costs` predicts it :data:`AUTO_GAIN` times faster than the direct
    sums (S^2 transforms of a batch run one system at a time, holding the
    interpreter, so a batch's threads count for direct only)."""
    if config.n < AUTO_MIN_N:
        return "direct"  # decided before any import: checking a config loads no compiler
    direct, spec = costs(config.n, config.d, degree(config))
    if config.d == 3 and (config.batch or 1) > 1:
        import numba

        spec *= numba.get_num_threads()
    return "spectral" if AUTO_GAIN * spec <= direct else "direct"


# ------------------------------------------------------------ the energy
def pair_sum(X: np.ndarray, m: np.ndarray, b: float, tol: float) -> float:
    """``F = sum_ij m_i m_j f(<x_i, x_j>)`` through the same series, O(n K).

    The circle: ``a_0 S_0^2 + 2 sum_k a_k |S_k|^2``; S^2: ``sum_l 4 pi i_l(b)
    e^{-b} sum_m |a_lm|^2`` of the masses' adjoint transform (``m > 0`` twice:
    the map is real).  Every term is non-negative, so the truncation (the
    tail below ``tol min(m) / (2 N)`` of ``F <= N^2``) is a relative bound.

    Parameters
    ----------
    X : ndarray, shape (n, d), d = 2 or 3
    m : ndarray, shape (n,)
    b : float
        The profile's exponent.
    tol : float
    """
    d = X.shape[1]
    M = float(m.sum())
    deg, _ = truncation(b, d, tol, M / float(m.min()))
    w = coefficients(b, d, deg + 1)
    if d == 2:
        z = X[:, 0] + 1j * X[:, 1]
        power = m.astype(np.complex128)
        F = w[0] * M * M
        for k in range(1, deg + 1):
            power = power * z  # m_j z_j^k, one pass per degree (O(n) memory)
            F += 2.0 * w[k] * abs(power.sum()) ** 2
        return float(F)
    import ducc0

    alm = ducc0.sht.experimental.adjoint_synthesis_general(
        lmax=deg, spin=0, map=np.ascontiguousarray(m, dtype=np.float64)[None], loc=locations(X),
        epsilon=max(DUCC_EPS_MIN, tol / 10.0), nthreads=1)[0]
    ls = _alm_degrees(deg)
    twice = np.where(np.arange(ls.size) > deg, 2.0, 1.0)  # entries past m = 0
    c = 4 * np.pi * w / (2 * np.arange(deg + 1) + 1)
    return float((c[ls] * twice * np.abs(alm) ** 2).sum())
