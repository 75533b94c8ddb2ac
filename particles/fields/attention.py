"""Self-attention fields SA and USA with the exponential (``edp``) kernel.

For tokens ``x_i`` (rows of ``X``, shape ``(n, d)``), queries ``q_i = Q x_i``,
keys ``k_j = K x_j``, values ``v_j = V x_j`` and token masses ``m_j > 0``, the
kernels here compute the *attention output*

    y_i = sum_j A_ij v_j,
    SA:  A_ij = m_j exp(beta <q_i, k_j>) / sum_k m_k exp(beta <q_i, k_k>),
    USA: A_ij = m_j exp(beta <q_i, k_j> - c) / N,   N = sum_j m_j,

with ``c = 0`` (``usa_scale="n"``) or ``c = beta`` (``usa_scale="n_exp_beta"``).
The dynamics is ``dx_i/dt = P_{x_i}(y_i)``; the Euler layer uses ``y`` itself
(``x_i <- normalize(x_i + h y_i)``), which is why fields return ``y`` and the
integrators project.  Reference: Geshkovski, Letrouit, Polyanskiy, Rigollet,
"A mathematical perspective on Transformers" (2023), eqs. (SA) and (USA).

Numerics.  Scores ``s_ij = beta <q_i, k_j> + log m_j`` are shifted by an upper
bound ``M_i >= max_j s_ij`` (Cauchy-Schwarz, ``|q_i| max_j |k_j| + max log m``;
exactly ``beta`` on the sphere with ``Q = K = I``) before the exponential, so
every weight lies in ``(0, 1]`` and results are finite and exact for beta up
to 1e4; a row whose bound is too loose (weights summing below 1e-100,
possible for general Q, K) is recomputed with its true maximum.  The known
bound lets scores and exponentials run in one pass, no max pass first.
USA multiplies back by ``exp(M_i - c) / N``; with ``usa_scale="n"`` that
factor is ``~e^beta`` and overflows above beta ~ 709, which configuration
validation rejects (use ``usa_scale="n_exp_beta"``).

Two compiled paths compute the same thing and are both checked against
:func:`attention_reference`:

* *direct* (small ``d``): a streamed row of ``n`` scores per query, with the
  vectorised polynomial exp (scores and exp in one pass), then the weighted
  sums with explicit lanes, bit for bit however the kernel was compiled
  (see :mod:`particles._numba`); nothing of size ``n x n`` is held.  Rows
  go in tiles of ``TILE`` consecutive queries; a system of at most ``TILE``
  tokens (ensembles) is one tile.
* *blas* (large ``d``): blocks of ``B`` query rows, scores ``B x n`` by a BLAS
  product, exp fused in cache, then a second BLAS product with the values.

Both split rows over ``nchunks`` static chunks (threads), each with its own
scratch, so results do not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np

from particles._numba import fma, jit, prange, specialize, view2d
from particles.fastexp import exp_finite, exp_scalar, lane_dots4, lane_total

#: rows per BLAS block (:func:`blas_block`): at least BLOCK_MIN, at most BLOCK.
BLOCK_MIN = 16
BLOCK = 128
#: keys and values (``2 n d`` floats) up to this size stay in a 1 MiB L2 beside
#: a small block's scores, so blocks of BLOCK_MIN rows (re-reading them from L2
#: costs little next to the exp pass);
KV_CACHED = 98304
#: beyond it, blocks as large as this many scores allow (K and V come from
#: further out for every block: fewer, larger blocks).
BLOCK_SCORES = 1 << 19
#: query rows per tile of the direct path: the tile's queries and sums
#: (``(2 d + 2) TILE`` floats) stay in L1.
TILE = 128
#: the tiles compute their rows in multiples of this many lanes (one AVX-512
#: vector of float64, two of AVX2): a tile of T rows runs ``tile_lanes(T)``,
#: the extra lanes repeating its first row and discarded.  The rows left over
#: by the vector loop would otherwise run one scalar exp each per key: n = 31
#: took 1.6x the time of n = 32, n = 15 2.3x that of n = 16 (d = 3).
TILE_LANES = 8
#: the tiles pad from this many rows left over; one or two left over run as
#: fast in scalar code as a padded vector (n = 33: 0.89x padded).
PAD_FROM = 3


@jit
def tile_lanes(T):
    """Lanes a tile of T rows computes: T, or T rounded up to a multiple of
    TILE_LANES when T >= TILE_LANES leaves at least PAD_FROM rows over."""
    r = T % TILE_LANES
    if T < TILE_LANES or r < PAD_FROM:
        return T
    return T + TILE_LANES - r


def project_qkv(X: np.ndarray, Q: np.ndarray | None, K: np.ndarray | None,
                V: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries ``Q x_i``, keys ``K x_j`` and values ``V x_j`` of tokens X (n, d),
    each (n, d); a matrix given as None is the identity (plain NumPy, for references)."""
    return tuple(X if M is None else X @ np.asarray(M, dtype=np.float64).T for M in (Q, K, V))


def attention_reference(
    X: np.ndarray,
    *,
    beta: float,
    normalized: bool = True,
    usa_shift: float = 0.0,
    Q: np.ndarray | None = None,
    K: np.ndarray | None = None,
    V: np.ndarray | None = None,
    masses: np.ndarray | None = None,
) -> np.ndarray:
    """Plain NumPy attention output, the oracle for the compiled kernels.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Tokens (need not be exactly unit norm).
    beta : float
        Inverse temperature.
    normalized : bool
        True for SA (row-stochastic A), False for USA (divide by total mass).
    usa_shift : float
        The constant ``c`` subtracted in the USA exponent (0 or beta).
    Q, K, V : ndarray, shape (d, d), optional
        Query, key and value matrices (identity when None).
    masses : ndarray, shape (n,), optional
        Token masses (ones when None).

    Returns
    -------
    Y : ndarray, shape (n, d)
        ``y_i = sum_j A_ij V x_j``.
    """
    X = np.asarray(X, dtype=np.float64)
    q, k, v = project_qkv(X, Q, K, V)
    m = np.ones(X.shape[0]) if masses is None else np.asarray(masses, dtype=np.float64)
    S = beta * (q @ k.T) + np.log(m)[None, :]
    M = S.max(axis=1, keepdims=True)
    W = np.exp(S - M)
    if normalized:
        return (W @ v) / W.sum(axis=1, keepdims=True)
    return (W @ v) * (np.exp(M - usa_shift) / m.sum())


@jit
def prepare_scores(X, Q, K, V, beta, qk_identity, v_identity, qs, kT, vT):
    """Scaled queries ``beta Q x_i`` into qs (n, d); keys ``K x_j`` and values
    ``V x_j`` transposed into kT, vT (d, n), so row loops run over contiguous j.
    (:func:`_prepare_T` writing through the transposed view of qs.)"""
    _prepare_T(X, Q, K, V, beta, qk_identity, v_identity, qs.T, kT, vT)


@jit
def _bounds(qs, kT, logm, qbound):
    """Upper bounds ``|q_i| max_j |k_j| + max_j log m_j`` of each row's scores.

    Cauchy-Schwarz makes them safe shifts (no exp overflows); on the sphere
    with ``Q = K = I`` and equal masses they equal the row maximum ``beta``.
    (:func:`_bounds_T` on the transposed view of qs (n, d).)
    """
    _bounds_T(qs.T, kT, logm, qbound)


@jit
def _prepare_T(X, Q, K, V, beta, qk_identity, v_identity, qT, kT, vT):
    """Scaled queries ``beta Q x_i`` into qT (d, n), keys ``K x_j`` and values
    ``V x_j`` into kT, vT (d, n): the layout the tiles read."""
    n, d = X.shape
    # (both paths take Q = K = V = I through _setup_identity_template)
    for i in range(n):
        for a in range(d):
            if qk_identity:
                qa = X[i, a]
                ka = X[i, a]
            else:
                qa = 0.0
                ka = 0.0
                for b in range(d):
                    qa += Q[a, b] * X[i, b]
                    ka += K[a, b] * X[i, b]
            qT[a, i] = beta * qa
            kT[a, i] = ka
            if v_identity:
                vT[a, i] = X[i, a]
            else:
                va = 0.0
                for b in range(d):
                    va += V[a, b] * X[i, b]
                vT[a, i] = va


@jit
def _max4(x, n, init):
    """``max(init, x[0], ..., x[n - 1])`` of a non-NaN row in four lanes (max is
    exact, so the order does not change the result; a chained max is one
    compare a cycle, and LLVM vectorises no max reduction without nnan)."""
    m0 = init
    m1 = init
    m2 = init
    m3 = init
    nb = n - n % 4
    for j in range(0, nb, 4):
        x0, x1, x2, x3 = x[j], x[j + 1], x[j + 2], x[j + 3]
        m0 = x0 if x0 > m0 else m0
        m1 = x1 if x1 > m1 else m1
        m2 = x2 if x2 > m2 else m2
        m3 = x3 if x3 > m3 else m3
    for j in range(nb, n):
        xj = x[j]
        m0 = xj if xj > m0 else m0
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    return m2 if m2 > m0 else m0


@jit
def _bounds_T(qT, kT, logm, qbound):
    """The shifts of :func:`_bounds` from transposed queries ``qT`` (d, n)."""
    d, n = qT.shape
    # |k_j|^2 and |q_i|^2 accumulated coordinate by coordinate (the same sums,
    # in the same order, as a loop over a per row), so the rows vectorise;
    # qbound holds the key norms first
    for j in range(n):
        qbound[j] = 0.0
    for a in range(d):
        ka = kT[a]
        for j in range(n):
            qbound[j] += ka[j] * ka[j]
    # (a NaN key is skipped by the max; its token's query is NaN too, and so
    # its shift: the system leaves the fast tiles, see _system_flags)
    kmax = np.sqrt(_max4(qbound, n, 0.0))
    lmax = _max4(logm, n, -np.inf)
    for i in range(n):
        qbound[i] = 0.0
    for a in range(d):
        qa = qT[a]
        for i in range(n):
            qbound[i] += qa[i] * qa[i]
    for i in range(n):
        qbound[i] = np.sqrt(qbound[i]) * kmax + lmax


def _setup_identity_template(X, beta, logm, qT, kT, kn, bound):
    """:func:`_prepare_T` and :func:`_bounds_T` for ``Q = K = V = I`` in one pass
    over X (n, d): ``kT = X^T`` (it serves as the values too), ``qT = beta X^T``,
    the key norms into ``kn`` (n,) (scratch), the row shifts into ``bound``.
    The same operations in the same order as those two (``0.0 + x_0^2`` is
    ``x_0^2``), so the same bits, in one loop over the rows instead of twelve
    short ones.  Returns :func:`_system_flags` of the system."""
    n, d = X.shape
    if DIM == 2 or (DIM == 0 and d == 2):
        k0, k1, q0, q1 = kT[0], kT[1], qT[0], qT[1]
        for i in range(n):
            x0, x1 = X[i, 0], X[i, 1]
            k0[i] = x0
            k1[i] = x1
            a0, a1 = beta * x0, beta * x1
            q0[i] = a0
            q1[i] = a1
            kn[i] = x0 * x0 + x1 * x1
            bound[i] = a0 * a0 + a1 * a1
    elif DIM == 3 or (DIM == 0 and d == 3):
        k0, k1, k2, q0, q1, q2 = kT[0], kT[1], kT[2], qT[0], qT[1], qT[2]
        for i in range(n):
            x0, x1, x2 = X[i, 0], X[i, 1], X[i, 2]
            k0[i] = x0
            k1[i] = x1
            k2[i] = x2
            a0, a1, a2 = beta * x0, beta * x1, beta * x2
            q0[i] = a0
            q1[i] = a1
            q2[i] = a2
            kn[i] = (x0 * x0 + x1 * x1) + x2 * x2
            bound[i] = (a0 * a0 + a1 * a1) + a2 * a2
    else:
        for i in range(n):
            kn[i] = 0.0
            bound[i] = 0.0
        for a in range(d):
            ka, qa = kT[a], qT[a]
            for i in range(n):
                x = X[i, a]
                ka[i] = x
                y = beta * x
                qa[i] = y
                kn[i] += x * x
                bound[i] += y * y
    kmax = np.sqrt(_max4(kn, n, 0.0))
    lmax = _max4(logm, n, -np.inf)
    for i in range(n):
        bound[i] = np.sqrt(bound[i]) * kmax + lmax
    return _system_flags(bound, logm)


#: a row whose weights sum below this had a shift far above its true maximum
#: (``Z >= exp(max_j s_ij - M_i)``), so its weights lost range: it is recomputed
#: with the exact maximum.  The test keeps the max out of the fused loop, where
#: a NaN-aware max reduction would stop LLVM from vectorising.
_TINY_Z = 1e-100


@jit
def _row_general(i, qs, kT, vT, logm, m, buf, acc):
    """Weights of query row i shifted by m, for any d: scores by d vectorised
    passes over j, one exp pass, then the value sums four at a time with
    explicit lanes (:func:`~particles._numba.lane_dots4`).

    Writes ``acc[a] = sum_j w_j v_j[a]`` with ``w_j = exp(s_ij - m)`` and
    returns ``Z = sum_j w_j``.  ``buf`` (n,) is scratch.
    """
    n = kT.shape[1]
    d = qs.shape[1]
    for j in range(n):
        buf[j] = logm[j] - m
    for a in range(d):
        qa = qs[i, a]
        kr = kT[a]
        for j in range(n):
            buf[j] = fma(qa, kr[j], buf[j])
    for j in range(n):
        buf[j] = exp_scalar(buf[j])
    Z = lane_total(buf, n)
    for a0 in range(0, d, 4):
        # a group of four value rows (the last group repeats its last row)
        a1, a2, a3 = min(a0 + 1, d - 1), min(a0 + 2, d - 1), min(a0 + 3, d - 1)
        t0, t1, t2, t3 = lane_dots4(buf, vT[a0], vT[a1], vT[a2], vT[a3], n)
        acc[a0] = t0
        acc[a1] = t1
        acc[a2] = t2
        acc[a3] = t3
    return Z


@jit
def _shifts(logm, mt, c, T, j):
    """``c[k] = log m_j - mt[k]`` for the T rows of a tile: the start of their
    scores against key j (taken once per tile when the masses are uniform,
    once per key otherwise: one loop of the tile either way, so one inlined
    exp: each inlined copy costs about a second of compile)."""
    lj = logm[j]
    for k in range(T):
        c[k] = lj - mt[k]


@jit
def _tile_d2(kT, vT, logm, qT, mt, acc, c, T, uniform):
    """Attention sums of a tile of T query rows for d = 2, vectorised over the rows.

    ``qT`` (2, >= T) holds the tile's scaled queries, ``mt`` (>= T,) their
    shifts; ``acc`` (3, >= T) receives ``Z_k = sum_j w_kj`` and
    ``sum_j w_kj v_j`` with ``w_kj = exp(s_kj - mt[k])``.  Each sum runs over
    j in order (no reassociation); the vector lanes are independent rows, so
    the bits are those of a scalar loop (see :mod:`particles._numba`).
    The scores start from ``c[k] = log m_j - mt[k]`` (``c`` (>= T,) scratch,
    :func:`_shifts`); with ``uniform`` (all log-masses equal) they are
    taken once, not per key (the same numbers: the same bits, one operation
    fewer per pair).  The scores must be finite and safe for
    :func:`~particles.fastexp.exp_finite` (``fast``).
    """
    n = kT.shape[1]
    q0, q1 = qT[0], qT[1]
    Z, A0, A1 = acc[0], acc[1], acc[2]
    for k in range(T):
        Z[k] = 0.0
        A0[k] = 0.0
        A1[k] = 0.0
    _shifts(logm, mt, c, T, 0)
    for j in range(n):
        k0, k1 = kT[0, j], kT[1, j]
        v0, v1 = vT[0, j], vT[1, j]
        if not uniform:
            _shifts(logm, mt, c, T, j)
        for k in range(T):
            w = exp_finite(fma(q1[k], k1, fma(q0[k], k0, c[k])))
            Z[k] += w
            A0[k] = fma(w, v0, A0[k])
            A1[k] = fma(w, v1, A1[k])


@jit
def _tile_d3(kT, vT, logm, qT, mt, acc, c, T, uniform):
    """As :func:`_tile_d2` for d = 3 (``qT`` (3, >= T), ``acc`` (4, >= T))."""
    n = kT.shape[1]
    q0, q1, q2 = qT[0], qT[1], qT[2]
    Z, A0, A1, A2 = acc[0], acc[1], acc[2], acc[3]
    for k in range(T):
        Z[k] = 0.0
        A0[k] = 0.0
        A1[k] = 0.0
        A2[k] = 0.0
    _shifts(logm, mt, c, T, 0)
    for j in range(n):
        k0, k1, k2 = kT[0, j], kT[1, j], kT[2, j]
        v0, v1, v2 = vT[0, j], vT[1, j], vT[2, j]
        if not uniform:
            _shifts(logm, mt, c, T, j)
        for k in range(T):
            w = exp_finite(fma(q2[k], k2, fma(q1[k], k1, fma(q0[k], k0, c[k]))))
            Z[k] += w
            A0[k] = fma(w, v0, A0[k])
            A1[k] = fma(w, v1, A1[k])
            A2[k] = fma(w, v2, A2[k])


@jit
def _tile_general(kT, vT, logm, qT, mt, acc, sc, T):
    """As :func:`_tile_d2` for any d: ``qT`` (d, >= T), ``acc`` (d + 1, >= T);
    per key j one pass over the tile per dimension for the scores (into
    ``sc``, (>= T,)), one exp pass, one pass per dimension for the sums."""
    n = kT.shape[1]
    d = kT.shape[0]
    for r in range(d + 1):
        ar = acc[r]
        for k in range(T):
            ar[k] = 0.0
    Z = acc[0]
    for j in range(n):
        lj = logm[j]
        for k in range(T):
            sc[k] = lj - mt[k]
        for a in range(d):
            qa = qT[a]
            ka = kT[a, j]
            for k in range(T):
                sc[k] = fma(qa[k], ka, sc[k])
        for k in range(T):
            w = exp_finite(sc[k])
            sc[k] = w
            Z[k] += w
        for a in range(d):
            ar = acc[a + 1]
            va = vT[a, j]
            for k in range(T):
                ar[k] = fma(sc[k], va, ar[k])


#: shifts and log-masses below this size keep every shifted score finite and
#: far below EXP_HI (its rounding is at most ~(d + 2) 2^-52 (3 SAFE_SHIFT) < 1
#: for any direct-path d), so the tiles may use exp_finite (the bits of
#: exp_scalar there, without its clamps and NaN select).  A NaN or infinite
#: token has a NaN or infinite query (finite Q times it), hence shift: its
#: system fails the test, and none of its scores reaches that exp.
SAFE_SHIFT = 1e12


@jit
def _system_flags(bound, logm):
    """``(fast, uniform)`` of a system: ``fast`` when every row shift and
    log-mass is within +-SAFE_SHIFT (NaN: no), ``uniform`` when all its
    log-masses are equal (the tiles then take them once)."""
    ok = True
    for i in range(bound.shape[0]):
        ok &= abs(bound[i]) <= SAFE_SHIFT
    l0 = logm[0]
    uniform = True
    for j in range(logm.shape[0]):
        lj = logm[j]
        ok &= abs(lj) <= SAFE_SHIFT
        uniform &= lj == l0
    return ok, uniform


#: the d a direct kernel is compiled for: 2 or 3, or 0 for any d (bound per
#: specialisation of the tile and the identity set-up, :func:`direct_kernels`;
#: the other d's branches are then not compiled at all: a d = 2 kernel
#: compiles in 0.75 of the time).
DIM = 0


def _tile_template(kT, vT, logm, qT, mt, sums, buf, T, fast, uniform):
    """The attention sums of a tile of T rows (:func:`_tile_d2`), by the tile of
    its d.  The tiles take :func:`~particles.fastexp.exp_finite`; in a system
    whose scores could be unsafe for it (``fast`` False, :func:`_system_flags`:
    absurd weights or token norms, NaN or infinite tokens) the tile only marks
    its rows (``Z = 0``),
    and :func:`_finish_tile` computes each with its exact maximum and the
    exact exp (other bits, chosen by the data alone; one call site of the
    row kernel, not two: each inlined copy costs about a second of compile)."""
    d = kT.shape[0]
    if DIM != 0 and d != DIM:
        raise ValueError("attention kernel compiled for another d")
    if not fast:
        for k in range(T):
            sums[0, k] = 0.0
    elif DIM == 2 or (DIM == 0 and d == 2):
        _tile_d2(kT, vT, logm, qT, mt, sums, buf, T, uniform)
    elif DIM == 3 or (DIM == 0 and d == 3):
        _tile_d3(kT, vT, logm, qT, mt, sums, buf, T, uniform)
    else:
        _tile_general(kT, vT, logm, qT, mt, sums, buf, T)


_TILES = {dim: specialize(_tile_template, f"d{dim}", DIM=dim) for dim in (0, 2, 3)}
_tile = _TILES[0]
_SETUPS = {dim: specialize(_setup_identity_template, f"d{dim}", DIM=dim) for dim in (0, 2, 3)}
_setup_identity_T = _SETUPS[0]


@jit
def _row_max(i, qs, kT, logm):
    """Exact maximum of the scores of query row i (the rare slow path)."""
    n = kT.shape[1]
    d = qs.shape[1]
    smax = -np.inf
    for j in range(n):
        sc = logm[j]
        for a in range(d):
            sc += qs[i, a] * kT[a, j]
        smax = max(smax, sc)
    return smax


@jit
def _exp_row_shifted(Sr, logm, m):
    """``Sr[j] <- exp(Sr[j] + log m_j - m)`` in place; returns the sum (lanes)."""
    n = Sr.shape[0]
    for j in range(n):
        Sr[j] = exp_scalar(Sr[j] + (logm[j] - m))
    return lane_total(Sr, n)


@jit
def _row_factor(Z, m, normalized, usa_shift, inv_mass):
    """Factor turning ``sum_j w_j v_j`` (weights shifted by m) into ``y_i``."""
    if normalized:
        return 1.0 / Z
    return np.exp(m - usa_shift) * inv_mass


@jit
def _setup(X, p, ws):
    """Carve the shared head of the scratch ``ws`` and fill it for X (n, d).

    Returns views ``qs`` (n, d) = beta Q x, ``kT``, ``vT`` (d, n; the same
    array as ``kT`` when ``Q = K = V = I``) and the row shift bounds (n,),
    the first ``3 n d + n`` entries of ``ws``.
    """
    Q, K, V, logm, beta = p[0], p[1], p[2], p[3], p[4]
    qk_identity, v_identity = p[7], p[8]
    n, d = X.shape
    nd = n * d
    qs = view2d(ws[0:nd], n, d)
    kT = view2d(ws[nd:2 * nd], d, n)
    bound = ws[3 * nd:3 * nd + n]
    if qk_identity and v_identity:
        vT = kT  # the keys are the values; the values' scratch holds the key norms
        _setup_identity_T(X, beta, logm, qs.T, kT, ws[2 * nd:2 * nd + n], bound)
    else:
        vT = view2d(ws[2 * nd:3 * nd], d, n)
        prepare_scores(X, Q, K, V, beta, qk_identity, v_identity, qs, kT, vT)
        _bounds(qs, kT, logm, bound)
    return qs, kT, vT, bound


def _attention_direct(X, p, out, ws):
    """Attention output of one system, streamed (small d): rows in tiles of at
    most :data:`TILE` consecutive rows, each tile's sums vectorised over its rows.

    Queries and keys are prepared transposed, (d, n), the layout the tiles
    read; chunks (threads) take the tiles round robin, and copy each tile's
    queries and shifts into their own scratch (a unit-stride copy of
    ``(d + 1) T`` floats: about 2% of an n = 32 step, while tiles read in
    place from the shared arrays ran up to 1.25x slower, depending on where
    the chunk's sums fell relative to them), padded to :func:`tile_lanes`
    rows.  A system of at most ``TILE`` tokens (ensembles) is one tile,
    read in place (1-4% faster than its copy) when it needs no padding.
    With ``Q = K = V = I`` one pass over X prepares it all
    (:func:`_setup_identity_template`).  One call site of the tile and of
    the row factors, so the compiled code holds them once.

    ``ws`` is float64 scratch of length :func:`workspace_size` (``blas=False``);
    ``out`` (n, d) receives ``y``.
    """
    Q, K, V, logm, beta = p[0], p[1], p[2], p[3], p[4]
    normalized, usa_shift, qk_identity, v_identity, inv_mass = p[5], p[6], p[7], p[8], p[9]
    n, d = X.shape
    nd = n * d
    qT = view2d(ws[0:nd], d, n)
    kT = view2d(ws[nd:2 * nd], d, n)
    bound = ws[3 * nd:3 * nd + n]
    base = 3 * nd + n
    tile = min(TILE, n)
    lanes = tile_lanes(tile)  # a chunk's scratch holds a padded tile
    nb = max(n, lanes)  # its row buffer (and the tile's score starts)
    per = nb + d + (2 * d + 2) * lanes  # (workspace_size counts the same)
    ntiles = (n + tile - 1) // tile
    nchunks = min((ws.shape[0] - base) // per, ntiles)
    inplace = ntiles == 1 and lanes == n
    if qk_identity and v_identity:
        vT = kT  # the keys are the values
        fast, uniform = _setup_identity_T(X, beta, logm, qT, kT, ws[base:base + n], bound)
    else:
        vT = view2d(ws[2 * nd:3 * nd], d, n)
        _prepare_T(X, Q, K, V, beta, qk_identity, v_identity, qT, kT, vT)
        _bounds_T(qT, kT, logm, bound)
        fast, uniform = _system_flags(bound, logm)  # once per call, not per tile
    for c in prange(nchunks):
        off = base + c * per
        buf = ws[off:off + nb]
        acc = ws[off + nb:off + nb + d]
        q0 = off + nb + d
        qt = view2d(ws[q0:q0 + d * lanes], d, lanes)
        mt = ws[q0 + d * lanes:q0 + (d + 1) * lanes]
        sums = view2d(ws[q0 + (d + 1) * lanes:off + per], d + 1, lanes)
        for t in range(c, ntiles, nchunks):
            i0 = t * tile
            T = min(tile, n - i0)
            L = tile_lanes(T)
            if inplace:
                # one tile (ensembles) with no padding: its queries and
                # shifts are the whole arrays, read where they are
                qt, mt = qT, bound
            else:
                _copy_tile(qT, bound, i0, T, L, qt, mt)
            # (the L - T padding rows' sums are computed and never read)
            _tile(kT, vT, logm, qt, mt, sums, buf, L, fast, uniform)
            _finish_tile(qT, kT, vT, logm, bound, sums, buf, acc, out, i0, T,
                         normalized, usa_shift, inv_mass)


@jit
def _copy_tile(qT, bound, i0, T, L, qt, mt):
    """The tile's T queries and shifts into the chunk's own scratch, and
    copies of its first row into lanes T .. L - 1 (scores as safe as the
    tile's own, whose sums are discarded)."""
    d = qT.shape[0]
    for a in range(d):
        src = qT[a][i0:i0 + T]
        dst = qt[a]
        for k in range(T):
            dst[k] = src[k]
        for k in range(T, L):
            dst[k] = src[0]
    src = bound[i0:i0 + T]
    for k in range(T):
        mt[k] = src[k]
    for k in range(T, L):
        mt[k] = src[0]


@jit
def _finish_tile(qT, kT, vT, logm, bound, sums, buf, acc, out, i0, T, normalized,
                 usa_shift, inv_mass):
    """``out`` rows ``i0 .. i0 + T - 1`` from their tile's sums: the row factors
    of :func:`_row_factor` in one vectorised pass (written over the rows'
    shifts in ``bound``, which no other tile reads), or row by row where some
    row's weights underflowed (``Z < _TINY_Z``) and is recomputed with its
    exact maximum."""
    d = kT.shape[0]
    Z = sums[0]
    tiny = False
    for k in range(T):
        tiny |= Z[k] < _TINY_Z
    if tiny:
        qs = qT.T
        for k in range(T):
            i = i0 + k
            m = bound[i]
            Zk = Z[k]
            if Zk < _TINY_Z:
                m = _row_max(i, qs, kT, logm)
                Zk = _row_general(i, qs, kT, vT, logm, m, buf, acc)
                for a in range(d):
                    sums[a + 1, k] = acc[a]
            f = _row_factor(Zk, m, normalized, usa_shift, inv_mass)
            for a in range(d):
                out[i, a] = sums[a + 1, k] * f
        return
    # unit-stride views: an index i0 + k takes Numba's negative-index wrap,
    # which turns the vector loads and stores into gathers and scatters
    f = bound[i0:i0 + T]
    rows = out[i0:i0 + T]
    if normalized:
        for k in range(T):
            f[k] = 1.0 / Z[k]
    else:
        for k in range(T):
            f[k] = np.exp(f[k] - usa_shift) * inv_mass
    for a in range(d):
        sa = sums[a + 1]
        for k in range(T):
            rows[k, a] = sa[k] * f[k]


@jit
def blas_block(n, d):
    """Query rows per block of the BLAS path for a system of n tokens in d
    dimensions (measured on a 1 MiB-L2 machine: at n = 1024, d = 16, blocks
    of 16 rows take 0.8 of the time of 64; at n = 4096, d = 64, 128 rows take
    0.94 of it).  The BLAS products round differently for other block shapes,
    so this is a function of (n, d) alone, never of the threads."""
    if 2 * n * d <= KV_CACHED:
        return BLOCK_MIN
    return max(BLOCK_MIN, min(BLOCK, BLOCK_SCORES // n))


def _attention_blas(X, p, out, ws):
    """Attention output of one system in row blocks with BLAS products (large d).

    ``ws`` is float64 scratch of length ``3 n d + n + nchunks * B * (n + d)``,
    ``B = blas_block(n, d)``.  BLAS must be single-threaded when ``parallel``
    (see simulate).
    """
    logm, normalized, usa_shift, inv_mass = p[3], p[5], p[6], p[9]
    n, d = X.shape
    qs, kT, vT, bound = _setup(X, p, ws)
    base = 3 * n * d + n
    block = blas_block(n, d)
    per = block * (n + d)
    nchunks = (ws.shape[0] - base) // per
    vx = vT.T  # (n, d) view for the second product
    nblocks = (n + block - 1) // block
    for c in prange(nchunks):
        off = base + c * per
        for blk in range(c, nblocks, nchunks):
            i0 = blk * block
            i1 = min(n, i0 + block)
            rows = i1 - i0
            S = view2d(ws[off:off + rows * n], rows, n)
            Yb = view2d(ws[off + block * n:off + block * n + rows * d], rows, d)
            np.dot(qs[i0:i1], kT, S)
            for r in range(rows):
                Sr = S[r]
                m = bound[i0 + r]
                Z = _exp_row_shifted(Sr, logm, m)
                if Z < _TINY_Z:
                    # loose bound: recompute the scores, shift by the true max
                    np.dot(qs[i0 + r], kT, Sr)
                    m = _row_max(i0 + r, qs, kT, logm)
                    Z = _exp_row_shifted(Sr, logm, m)
                bound[i0 + r] = _row_factor(Z, m, normalized, usa_shift, inv_mass)
            np.dot(S, vx, Yb)
            for r in range(rows):
                f = bound[i0 + r]
                for a in range(d):
                    out[i0 + r, a] = Yb[r, a] * f




_DIRECT = {dim: (specialize(_attention_direct, f"serial_d{dim}", cache=True, _tile=tile,
                           _setup_identity_T=_SETUPS[dim]),
                specialize(_attention_direct, f"parallel_d{dim}", parallel=True, cache=True,
                           _tile=tile, _setup_identity_T=_SETUPS[dim]))
           for dim, tile in _TILES.items()}
#: the direct kernels for any d (serial over rows, and parallel)
attention_direct_serial, attention_direct_parallel = _DIRECT[0]


def direct_kernels(d: int) -> tuple:
    """``(serial, parallel)`` direct attention kernels compiled for dimension
    d (2 and 3 have their own, which compile only their tile; the same
    numbers as the kernels for any d)."""
    return _DIRECT.get(d, _DIRECT[0])


attention_blas_serial = specialize(_attention_blas, "serial", cache=True)
attention_blas_parallel = specialize(_attention_blas, "parallel", parallel=True, cache=True)


def workspace_size(n: int, d: int, nchunks: int, blas: bool) -> int:
    """Length of the float64 scratch array the kernels need.

    Parameters
    ----------
    n, d : int
        System size.
    nchunks : int
        Number of static row chunks (1 for serial, threads for parallel).
    blas : bool
        Whether the BLAS (blocked) path is used.
    """
    if blas:
        return 3 * n * d + n + nchunks * blas_block.py_func(n, d) * (n + d)
    lanes = tile_lanes.py_func(min(TILE, n))
    return 3 * n * d + n + nchunks * (max(n, lanes) + d + (2 * d + 2) * lanes)
