"""Observers: what is recorded at every save point, chosen per run.

:data:`OBSERVERS` maps a name to an :class:`Observer` (its cost class, the
datasets it produces and its compute function); a configuration's
``observables`` (``simulate(..., observables=[...])``, ``--observables``)
chooses them, and :func:`default_observers` picks them when not given.

``pairwise`` is the fused set of today's files, computed by one compiled
pass over token pairs (:func:`compute_observables`).  For tokens ``x_i``
with masses ``m_i`` (``N = sum m_i``):

* ``energy``: ``E_beta = 1/(2 beta N^2) sum_ij m_i m_j exp(beta <x_i, x_j>)``
  (DESIGN.md section 2); at ``beta = 0`` its limit up to constants,
  ``E_0 = 1/(2 N^2) sum_ij m_i m_j <x_i, x_j>``.  Overflows to ``inf`` for
  beta above ~709; ``energy_normalized`` stays finite.
* ``energy_normalized``: ``2 beta e^{-beta} E_beta = (1/N^2) sum_ij m_i m_j
  exp(beta (<x_i, x_j> - 1))`` in ``(0, 1]``, 1 when all tokens coincide;
  at ``beta = 0`` the formula gives 1 for every state (its limit as beta
  decreases to 0, so (beta, t) diagrams stay continuous; ``order_parameter``
  carries the information there).
* ``order_parameter``: ``|| sum_i m_i x_i || / N``.
* ``min_inner_product``, ``mean_inner_product``: over unordered token pairs
  ``i < j`` (unweighted; 1 for a single token).

This is the energy of the default dynamics (edp kernel, ``Q = K = I``).
Other single-head kernels and symmetric ``Q^T K`` record the energy of the
kernel that ran, ``1/(2 c N^2) sum_ij m_i m_j kappa(Q x_i, K x_j)``
(:class:`EnergyDefinition`, :func:`kernel_energy`); where no energy of the
dynamics is defined (Kuramoto, several heads, Sinkhorn, random weights,
non-symmetric ``Q^T K``) the default is recorded and, in a file, the
``definition`` attribute of the energy observables says so.

Cost of ``pairwise``: O(n^2 d) per system, streamed over pairs, except at
``beta = 0`` on the circle (``d = 2``, the Kuramoto default) with ``n >=
CIRCLE_MIN_N``: there every observable is a function of ``sum_i m_i x_i``
except the minimum, the inner product of the most nearly antipodal pair,
found by sorting angles; O(n log n).

``order`` gives ``order_parameter`` and ``mean_inner_product`` alone, in
O(n d) (both are functions of ``sum_i m_i x_i`` and ``sum_i x_i``): the
default for large runs, where an O(n^2) pass at every frame would cost as
much as the dynamics (see :func:`default_observers`).

Adaptive integrators also record ``accepted_steps`` and ``rejected_steps``
(the engine's step counters, not an observer of the state).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from particles._numba import cached, jit, kernel_key, prange, specialize
from particles.fastexp import exp_row
from particles.fields.kernels import KERNELS, Kernel, log_kernel_reference
from particles.fields.weights import draw_layer, is_random

#: from this many tokens on, beta = 0 observables on the circle use sorted
#: angles (NumPy, O(n log n)) instead of the compiled pair loop (measured:
#: 4x slower at n = 32, 237x faster at n = 100000).
CIRCLE_MIN_N = 128

#: row chunks of the pair sums of one large system (n >= 512), summed in chunk
#: order: a fixed number, so the bits do not depend on the thread count.
PAIR_CHUNKS = 16

#: names, in storage order, of the observables computed here.
NAMES = (
    "energy",
    "energy_normalized",
    "order_parameter",
    "min_inner_product",
    "mean_inner_product",
)


def _pair_sums(X, beta, m, nchunks, out):
    """Fill out[0:3] = (sum_ij m_i m_j exp(beta(<x_i,x_j> - 1)),
    sum_ij m_i m_j <x_i, x_j>, min_{i<j} <x_i, x_j>) for X (n, d)."""
    n, d = X.shape
    XT = np.empty((d, n))
    for i in range(n):
        for a in range(d):
            XT[a, i] = X[i, a]
    partial = np.empty((nchunks, 3))
    for c in prange(nchunks):
        buf = np.empty(n)
        e_acc = 0.0
        g_acc = 0.0
        mn = np.inf
        for i in range(c, n, nchunks):
            row = buf[i + 1:n]
            for j in range(row.shape[0]):
                row[j] = 0.0
            for a in range(d):
                xa = X[i, a]
                col = XT[a, i + 1:n]
                for j in range(row.shape[0]):
                    row[j] += xa * col[j]
            mrow = m[i + 1:n]
            g = 0.0
            for j in range(row.shape[0]):
                g += mrow[j] * row[j]
                mn = min(mn, row[j])
                row[j] = beta * (row[j] - 1.0)
            exp_row(row, row)
            e = 0.0
            for j in range(row.shape[0]):
                e += mrow[j] * row[j]
            sii = 0.0
            for a in range(d):
                sii += X[i, a] * X[i, a]
            # diagonal term once, off-diagonal pairs twice (symmetry)
            e_acc += m[i] * (m[i] * np.exp(beta * (sii - 1.0)) + 2.0 * e)
            g_acc += m[i] * (m[i] * sii + 2.0 * g)
        partial[c, 0] = e_acc
        partial[c, 1] = g_acc
        partial[c, 2] = mn
    # chunk partials combined in chunk order (loops: array reductions cost
    # seconds of compile time per process)
    out[0] = 0.0
    out[1] = 0.0
    out[2] = np.inf
    for c in range(nchunks):
        out[0] += partial[c, 0]
        out[1] += partial[c, 1]
        out[2] = min(out[2], partial[c, 2])


_pairs_serial = specialize(_pair_sums, "serial")
_pairs_parallel = specialize(_pair_sums, "parallel", parallel=True)


@jit
def _one_system(X, beta, m, out):
    """Observables of one system X (n, d) into out, serially."""
    sums = np.empty(3)
    _pairs_serial(X, beta, m, 1, sums)
    _finish(X, beta, m, sums, out)


@cached(parallel=True)
def _batch_observables(Xb, beta, m, out):
    for b in prange(Xb.shape[0]):
        _one_system(Xb[b], beta, m, out[b])


@cached()
def _small_observables(X, beta, m, out):
    # one small system: no parallel region (nor its compile time)
    _one_system(X, beta, m, out)


@jit
def _linear_sums(X, m):
    """``(|sum_i x_i|^2, sum_i |x_i|^2, |sum_i m_i x_i|^2)`` of X (n, d): the
    O(n) parts of the observables (``|sum x|^2 - sum |x|^2 = 2 sum_{i<j} <x_i, x_j>``)."""
    n, d = X.shape
    r2 = 0.0
    sq = 0.0
    w2 = 0.0
    for a in range(d):
        s = 0.0
        w = 0.0
        for i in range(n):
            s += X[i, a]
            w += m[i] * X[i, a]
            sq += X[i, a] * X[i, a]
        r2 += s * s
        w2 += w * w
    return r2, sq, w2


@jit
def _finish(X, beta, m, sums, out):
    """Turn the pair sums of X (n, d) into the observables, in NAMES order."""
    n = X.shape[0]
    N = 0.0
    for i in range(n):
        N += m[i]
    en = sums[0] / (N * N)
    if beta > 0.0:
        energy = np.exp(beta) * en / (2.0 * beta) if beta < 709.0 else np.inf
    else:
        energy = sums[1] / (2.0 * N * N)
    r2, sq, w2 = _linear_sums(X, m)
    out[0] = energy
    out[1] = en
    out[2] = np.sqrt(w2) / N
    out[3] = sums[2] if n > 1 else 1.0
    out[4] = (r2 - sq) / (n * (n - 1.0)) if n > 1 else 1.0


@cached()
def _single_observables(X, beta, m, out, nchunks):
    sums = np.empty(3)
    _pairs_parallel(X, beta, m, nchunks, sums)
    _finish(X, beta, m, sums, out)


def compute_observables(Xb: np.ndarray, beta: float, masses: np.ndarray,
                        *, nthreads: int = 1) -> dict[str, np.ndarray]:
    """Observables of a stack of systems.

    Parameters
    ----------
    Xb : ndarray, shape (batch, n, d)
        Tokens of each system.
    beta : float
        Inverse temperature of the energy.
    masses : ndarray, shape (n,)
        Token masses.
    nthreads : int
        Threads available (unused: single large systems split their rows
        into :data:`PAIR_CHUNKS` chunks whatever the thread count, so the
        sums, and their bits, do not depend on it).

    Returns
    -------
    dict of str to ndarray, shape (batch,)
        One entry per name in :data:`NAMES`.
    """
    B, n, d = Xb.shape
    m = np.ascontiguousarray(masses, dtype=np.float64)
    if beta == 0.0 and d == 2 and n >= CIRCLE_MIN_N:
        return _circle_beta0(np.asarray(Xb, dtype=np.float64), m)
    out = np.empty((B, len(NAMES)))
    if B == 1 and n >= 512:
        _single_observables(Xb[0], float(beta), m, out[0], PAIR_CHUNKS)
    elif B == 1:
        _small_observables(Xb[0], float(beta), m, out[0])
    else:
        _batch_observables(Xb, float(beta), m, out)
    return {name: out[:, k].copy() for k, name in enumerate(NAMES)}


def _circle_beta0(Xb: np.ndarray, m: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`compute_observables` at beta = 0 for Xb (batch, n, 2), O(n log n).

    ``sum_ij m_i m_j <x_i, x_j> = |sum_i m_i x_i|^2``, and the smallest inner
    product belongs to the pair farthest apart in angle: the partner farthest
    from token i is the one nearest in angle to the antipode of x_i, a
    neighbour of its insertion point in the sorted angles.  All systems go
    through the same vectorised sorts (NumPy: nothing to compile, no Python
    loop over systems).
    """
    B, n, _ = Xb.shape
    N = m.sum()
    w = np.einsum("i,bia->ba", m, Xb)
    energy = np.einsum("ba,ba->b", w, w) / (2.0 * N * N)
    s = Xb.sum(axis=1)
    pair_sum = np.einsum("ba,ba->b", s, s) - np.einsum("bia,bia->b", Xb, Xb)
    if n == 1:
        mn = np.ones(B)
        mean = np.ones(B)
    else:
        mean = pair_sum / (n * (n - 1.0))
        theta = np.arctan2(Xb[..., 1], Xb[..., 0])
        order = np.argsort(theta, axis=1, kind="stable")
        ts = np.take_along_axis(theta, order, axis=1)
        target = ts + np.pi
        target = np.where(target > np.pi, target - 2.0 * np.pi, target)
        k = _insertion_points(ts, target)
        i = order
        mn = np.full(B, np.inf)
        for c in range(-2, 2):
            j = np.take_along_axis(order, (k + c) % n, axis=1)
            ip = (np.take_along_axis(Xb[..., 0], i, 1) * np.take_along_axis(Xb[..., 0], j, 1)
                  + np.take_along_axis(Xb[..., 1], i, 1) * np.take_along_axis(Xb[..., 1], j, 1))
            mn = np.minimum(mn, np.where(i != j, ip, np.inf).min(axis=1))
    return {
        "energy": energy,
        "energy_normalized": np.ones(B),
        "order_parameter": np.sqrt(2.0 * energy),
        "min_inner_product": mn,
        "mean_inner_product": mean,
    }


def _insertion_points(ts: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Row-wise ``searchsorted(ts[b], target[b], side="right")`` for (B, n)
    arrays, exact and without a Python loop over rows: one stable sort of
    each row's sorted values followed by its targets, counting the sorted
    values placed before each target."""
    B, n = ts.shape
    both = np.concatenate([ts, target], axis=1)
    order = np.argsort(both, axis=1, kind="stable")
    before = np.cumsum(order < n, axis=1)
    k = np.empty((B, n), dtype=np.int64)
    rows, pos = np.nonzero(order >= n)
    k[rows, order[rows, pos] - n] = before[rows, pos]
    return k


def observables_reference(X: np.ndarray, beta: float,
                          masses: np.ndarray | None = None) -> dict[str, float]:
    """Plain NumPy twin of :func:`compute_observables` for one system X (n, d)."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    m = np.ones(n) if masses is None else np.asarray(masses, dtype=np.float64)
    N = m.sum()
    G = X @ X.T
    mm = np.outer(m, m)
    en = float((mm * np.exp(beta * (G - 1.0))).sum() / N**2)
    if beta > 0:
        energy = float(np.exp(beta) * en / (2 * beta)) if beta < 709 else np.inf
    else:
        energy = float((mm * G).sum() / (2 * N**2))
    iu = np.triu_indices(n, 1)
    return {
        "energy": energy,
        "energy_normalized": en,
        "order_parameter": float(np.linalg.norm(m @ X) / N),
        "min_inner_product": float(G[iu].min()) if n > 1 else 1.0,
        "mean_inner_product": float(G[iu].mean()) if n > 1 else 1.0,
    }


# ------------------------------------------------------------- observers
@cached(parallel=True)
def _order_sums(Xb, m, order, mean_ip):
    """Per system b of Xb (B, n, d): ``order[b] = |sum_i m_i x_i| / N`` and
    ``mean_ip[b] = (|sum_i x_i|^2 - sum_i |x_i|^2) / (n (n - 1))`` (1 for n = 1),
    the numbers of the pairwise pass (:func:`_finish`), bit for bit."""
    B, n = Xb.shape[0], Xb.shape[1]
    N = 0.0
    for i in range(n):
        N += m[i]
    for b in prange(B):
        r2, sq, w2 = _linear_sums(Xb[b], m)
        order[b] = np.sqrt(w2) / N
        mean_ip[b] = (r2 - sq) / (n * (n - 1.0)) if n > 1 else 1.0


def order_observables(Xb: np.ndarray, beta: float, masses: np.ndarray,
                      *, nthreads: int = 1) -> dict[str, np.ndarray]:
    """``order_parameter`` and ``mean_inner_product`` of a stack of systems, O(n d),
    in one compiled pass parallel over systems.

    Parameters
    ----------
    Xb : ndarray, shape (batch, n, d)
    beta : float
        Unused (the common observer signature).
    masses : ndarray, shape (n,)
    nthreads : int
        Unused.

    Returns
    -------
    dict of str to ndarray, shape (batch,)
        The same numbers as :func:`compute_observables` gives them.
    """
    X = np.ascontiguousarray(Xb, dtype=np.float64)
    m = np.ascontiguousarray(masses, dtype=np.float64)
    order = np.empty(X.shape[0])
    mean_ip = np.empty(X.shape[0])
    _order_sums(X, m, order, mean_ip)
    return {"order_parameter": order, "mean_inner_product": mean_ip}


@dataclass(frozen=True)
class Observer:
    """A registered observer, evaluated at every save point.

    Attributes
    ----------
    name, description : str
    cost : str
        Cost class of one evaluation per system: ``"O(n)"`` or ``"O(n^2)"``.
    datasets : tuple of str
        Names of the values it produces (one per system and frame), in
        storage order.
    compute : callable
        ``compute(Xb, beta, masses, *, nthreads) -> {name: (batch,) array}``
        for ``Xb`` of shape (batch, n, d); at least :attr:`datasets`.
    """

    name: str
    description: str
    cost: str
    datasets: tuple[str, ...]
    compute: Callable[..., dict[str, np.ndarray]]

    def __str__(self) -> str:
        return self.description


#: name -> observer; the single source of truth for ``observables=``.
OBSERVERS: dict[str, Observer] = {o.name: o for o in (
    Observer("pairwise", "energy, normalised energy, order parameter, min and mean inner "
             "product, by one pass over pairs (O(n log n) on the circle at beta = 0)",
             "O(n^2)", NAMES, compute_observables),
    Observer("order", "order parameter and mean inner product (from the token sums)",
             "O(n)", ("order_parameter", "mean_inner_product"), order_observables),
)}

#: the pairwise set is recorded by default up to this many tokens (beyond,
#: one O(n^2) pass per frame costs as much as many steps of an O(n) field).
PAIRWISE_DEFAULT_MAX_N = 4096


def default_observers(n: int, d: int, beta: float) -> tuple[str, ...]:
    """The observers of a run that does not choose them.

    ``("pairwise",)`` when ``n <= PAIRWISE_DEFAULT_MAX_N``, or on the circle
    at ``beta = 0`` (``d = 2``, where the pairwise set costs O(n log n));
    ``("order",)`` (O(n)) otherwise.  Ask for ``pairwise`` to record the
    energy of a larger run.
    """
    if n <= PAIRWISE_DEFAULT_MAX_N or (d == 2 and beta == 0.0):
        return ("pairwise",)
    return ("order",)


def observe(names: Sequence[str], Xb: np.ndarray, beta: float, masses: np.ndarray,
            *, nthreads: int = 1, energy: EnergyDefinition | None = None
            ) -> dict[str, np.ndarray]:
    """The values of the chosen observers for a stack of systems.

    Parameters
    ----------
    names : sequence of str
        Keys of :data:`OBSERVERS`.
    Xb : ndarray, shape (batch, n, d)
    beta : float
        Inverse temperature of the energy.
    masses : ndarray, shape (n,)
    nthreads : int
        Threads available (unused: single large systems split their rows
        into :data:`PAIR_CHUNKS` chunks whatever the thread count, so the
        sums, and their bits, do not depend on it).
    energy : EnergyDefinition, optional
        What ``energy`` and ``energy_normalized`` measure (None or a default
        definition: exp(beta <x_i, x_j>), see :func:`energy_definition`).

    Returns
    -------
    dict of str to ndarray, shape (batch,)
        Every dataset of the chosen observers, and only those, in registry
        order.  A dataset produced by two chosen observers is computed once,
        by the first in registry order (so the result does not depend on the
        order of ``names``); an observer whose datasets are all produced by an
        earlier one is not evaluated.
    """
    chosen = set(names)
    out: dict[str, np.ndarray] = {}
    for name, obs in OBSERVERS.items():
        if name not in chosen or all(k in out for k in obs.datasets):
            continue
        values = obs.compute(Xb, beta, masses, nthreads=nthreads)
        for k in obs.datasets:
            out.setdefault(k, values[k])
    if energy is not None and not energy.default and "energy" in out:
        out.update(kernel_energy(Xb, masses, energy))
    return out


# ------------------------------------------------- the energy of the kernel that ran
logkappa = None  # bound per kernel by specialize


def _kernel_sums(q, k, m, param, shift, out):
    """``out[0] = sum_ij m_i m_j exp(logkappa(q_i, k_j, param) - shift)`` and
    ``out[1] = sum_ij m_i m_j logkappa(q_i, k_j, 1)`` for q, k (n, d): the
    energy of the kernel that ran (:func:`kernel_energy`)."""
    n = q.shape[0]
    e = 0.0
    g = 0.0
    for i in range(n):
        ei = 0.0
        gi = 0.0
        for j in range(n):
            ei += m[j] * np.exp(logkappa(q[i], k[j], param) - shift)
            gi += m[j] * logkappa(q[i], k[j], 1.0)
        e += m[i] * ei
        g += m[i] * gi
    out[0] = e
    out[1] = g


@cache
def _kernel_sums_of(kernel: Kernel):
    """The compiled energy sums of a registry entry (its declared ``energy_kappa``),
    made once per entry: an entry registered at any time has its energy."""
    kappa = kernel.energy_kappa
    return specialize(_kernel_sums, f"energy_{kernel.name}_{kernel_key(kappa)}", cache=True,
                      logkappa=kappa)


@dataclass(frozen=True)
class EnergyDefinition:
    """What the ``energy`` and ``energy_normalized`` observables of a run measure.

    For tokens ``x_i`` with masses ``m_i`` (``N = sum m_i``), queries ``q_i =
    Q x_i`` and keys ``k_i = K x_i``, the energy of a kernel ``kappa`` with
    parameter ``p`` is

        E = 1/(2 c N^2) sum_ij m_i m_j kappa(q_i, k_j),
        energy_normalized = (1/N^2) sum_ij m_i m_j kappa(q_i, k_j) e^{-L},

    ``c = beta`` (edp, intersection), ``2 tau`` (rbf) or 1 (l2, quadratic),
    ``L`` the kernel's bound on ``log kappa`` over unit tokens
    (:attr:`particles.fields.kernels.Kernel.log_bound`; ``beta`` for edp with
    ``Q = K = I``), so ``energy = e^L energy_normalized / (2 c)``.  With
    ``c = 0`` the energy is its limit up to constants, ``1/(2 N^2) sum_ij m_i
    m_j log kappa(q_i, k_j)|_{p=1} / a`` (edp: ``1/(2 N^2) sum <q_i, k_j>``).
    For edp with ``Q = K = I`` this is DESIGN.md's ``E_beta``.

    Attributes
    ----------
    kernel : str or None
        The kernel whose energy is recorded; None for the default, ``exp(beta
        <x_i, x_j>)`` with the plain inner product (computed by the fused pass
        of :func:`compute_observables`).
    param : float
        The kernel's parameter.
    Q, K : ndarray, shape (d, d), or None
        The query and key matrices (None for the default).
    log_bound : float
        ``L`` above.
    own : bool
        Whether the recorded energy is that of the dynamics that ran (False:
        the default is recorded although another kernel, Q, K, several heads,
        Sinkhorn or random weights ran; see :attr:`definition`).
    definition : str
        What is recorded, in words: stored as the ``definition`` attribute of
        the ``energy`` and ``energy_normalized`` observables of a file unless
        the run is a default (edp, Q = K = I, one head, softmax) one.
    """

    kernel: str | None = None
    param: float = 0.0
    Q: np.ndarray | None = None
    K: np.ndarray | None = None
    log_bound: float = 0.0
    own: bool = True
    definition: str = ""

    @property
    def default(self) -> bool:
        """Whether the default (plain inner product, exp) energy is recorded."""
        return self.kernel is None


#: what the default energy is, in words.
DEFAULT_ENERGY = ("1/(2 beta N^2) sum_ij m_i m_j exp(beta <x_i, x_j>), plain inner product "
                  "(Q = K = I, kernel 'edp')")


def energy_definition(config) -> EnergyDefinition:
    """The :class:`EnergyDefinition` of a validated configuration.

    The energy of the kernel that ran for ``sa`` and ``usa`` with one head,
    fixed (not drawn) Q and K with a symmetric ``Q^T K``, and softmax
    normalisation (USA included); otherwise the default exp(beta <x_i, x_j>)
    energy with the plain inner product, the reason named in
    :attr:`EnergyDefinition.definition` (no energy of the dynamics is
    defined: Kuramoto, several heads, Sinkhorn, random weights, or a
    non-symmetric ``Q^T K``, whose dynamics is no gradient flow).

    Parameters
    ----------
    config : SimulationConfig
    """
    if config.model not in ("sa", "usa"):
        return EnergyDefinition(definition="")
    why = None
    if config.heads > 1:
        why = f"{config.heads} heads"
    elif config.normalization != "softmax":
        why = f"normalization {config.normalization!r}"
    elif is_random(config):
        why = "random weights"
    elif KERNELS[config.kernel].energy_kappa is None:
        why = "its registry entry declares no pointwise log kappa"
    if why is None:
        Q, K, _ = draw_layer(config, 0)
        Q, K = np.asarray(Q[0], dtype=np.float64), np.asarray(K[0], dtype=np.float64)
        eye = np.eye(config.d)
        if config.kernel == "edp" and np.all(Q == eye) and np.all(K == eye):
            return EnergyDefinition(definition="")
        A = Q.T @ K
        if not np.allclose(A, A.T, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(A).max())):
            why = "Q^T K is not symmetric"
    if why is not None:
        return EnergyDefinition(
            own=False, definition=f"{DEFAULT_ENERGY}; not the energy of the dynamics that "
            f"ran (kernel {config.kernel!r}, {why}: none is defined)")
    kernel = KERNELS[config.kernel]
    param = float(getattr(config, kernel.parameter))
    nq, nk = float(np.linalg.norm(Q, 2)), float(np.linalg.norm(K, 2))
    L = float(kernel.log_bound(param, nq, nk, float(np.linalg.norm(A, 2)), config.d))
    return EnergyDefinition(
        kernel=config.kernel, param=param, Q=np.ascontiguousarray(Q),
        K=np.ascontiguousarray(K), log_bound=L,
        definition=(f"1/(2 c N^2) sum_ij m_i m_j kappa(Q x_i, K x_j), kappa = "
                    f"{kernel.formula}, {kernel.parameter} = {param:g}, c = "
                    f"{_energy_scale(kernel, param):g} (energy_normalized: e^-L "
                    f"(1/N^2) sum, L = {L:.6g})"))


def _energy_scale(kernel: Kernel, param: float) -> float:
    a = kernel.energy_scale
    return 1.0 if a is None else a * param


def kernel_energy(Xb: np.ndarray, masses: np.ndarray,
                  definition: EnergyDefinition) -> dict[str, np.ndarray]:
    """``energy`` and ``energy_normalized`` of the kernel that ran, compiled.

    Parameters
    ----------
    Xb : ndarray, shape (batch, n, d)
    masses : ndarray, shape (n,)
    definition : EnergyDefinition
        A non-default one (:func:`energy_definition`).

    Returns
    -------
    dict of str to ndarray, shape (batch,)
    """
    X = np.asarray(Xb, dtype=np.float64)
    m = np.ascontiguousarray(masses, dtype=np.float64)
    N = m.sum()
    kernel = KERNELS[definition.kernel]
    a, c = kernel.energy_scale, _energy_scale(kernel, definition.param)
    fn = _kernel_sums_of(kernel)
    energy = np.empty(X.shape[0])
    norm = np.empty(X.shape[0])
    sums = np.empty(2)
    for b in range(X.shape[0]):
        q = np.ascontiguousarray(X[b] @ definition.Q.T)
        k = np.ascontiguousarray(X[b] @ definition.K.T)
        fn(q, k, m, definition.param, definition.log_bound, sums)
        norm[b] = sums[0] / (N * N)
        energy[b] = _energy_value(norm[b], sums[1] / (N * N), c, a, definition.log_bound)
    return {"energy": energy, "energy_normalized": norm}


def _energy_value(norm: float, linear: float, c: float, a: float | None, L: float) -> float:
    if c > 0.0:
        return float(np.exp(L) * norm / (2.0 * c)) if L < 709.0 else np.inf
    return linear / (2.0 * (a or 1.0))


def kernel_energy_reference(X: np.ndarray, masses: np.ndarray | None,
                            definition: EnergyDefinition) -> dict[str, float]:
    """Plain NumPy twin of :func:`kernel_energy` for one system X (n, d), on the
    kernel registry's NumPy log-kernel."""
    X = np.asarray(X, dtype=np.float64)
    m = np.ones(X.shape[0]) if masses is None else np.asarray(masses, dtype=np.float64)
    N = m.sum()
    q, k = X @ definition.Q.T, X @ definition.K.T
    mm = np.outer(m, m)
    kern = definition.kernel
    kernel = KERNELS[kern]
    norm = float((mm * np.exp(log_kernel_reference(kern, q, k, definition.param)
                              - definition.log_bound)).sum() / N**2)
    linear = float((mm * log_kernel_reference(kern, q, k, 1.0)).sum() / N**2)
    a, c = kernel.energy_scale, _energy_scale(kernel, definition.param)
    return {"energy": _energy_value(norm, linear, c, a, definition.log_bound),
            "energy_normalized": norm}
