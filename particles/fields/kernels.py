"""Attention kernels other than ``edp``: rbf (on the edp kernels) and pair kernels.

With ``q_i = Q x_i``, ``k_j = K x_j``, ``v_j = V x_j`` and masses ``m_j``, a
kernel ``kappa(q, k) >= 0`` replaces ``exp(beta <q, k>)`` (DESIGN.md section
1, after Wright and Gonzalez, "Transformers are deep infinite-dimensional
non-Mercer binary kernel machines", 2021):

    y_i = sum_j m_j kappa(q_i, k_j) v_j / Z_i,
    SA:  Z_i = sum_j m_j kappa(q_i, k_j),     USA:  Z_i = sum_j m_j.

* ``rbf``, ``kappa = exp(-tau ||q - k||^2)``.  Since
  ``-tau ||q - k||^2 = 2 tau <q, k> - tau |k|^2 - tau |q|^2``, it is the edp
  kernel with ``beta = 2 tau``, a per-key offset ``-tau |k_j|^2`` added to
  ``log m_j`` and, for USA only, a per-query factor ``exp(-tau |q_i|^2)``
  (it cancels in SA).  The fast edp kernels run unchanged on these
  transformed parameters.
* ``l2`` (``tau ||q - k||``), ``quadratic`` (``(<q, k> + gamma)^2``) and
  ``intersection`` (``exp(sum_l min(beta q_l, beta k_l))``) go through one
  generic streamed pair loop written against ``logkappa(q, k, param)``
  (``log kappa``; ``-inf`` for a zero weight), bound per kernel by
  :func:`particles._numba.specialize`.  Each row is shifted by its exact
  maximum before the exponential, so no weight overflows.

**Rows of zero weight.**  ``l2`` and ``quadratic`` can give a query zero
weight on every key (``l2``: all keys equal to the query, e.g. all tokens
coincide; ``quadratic``: ``<q_i, k_j> = -gamma`` for all j).  Softmax is then
undefined; we set ``y_i = 0``: the token does not move (for SA and USA
alike; for USA it is the limit anyway).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from particles._numba import jit, kernel_key, prange, specialize, view2d
from particles.errors import invalid
from particles.fastexp import exp_scalar
from particles.fields import attention
from particles.fields.base import DriftSet
from particles.protocols import RunSpec

#: from this dimension on, the attention kernels multiply row blocks with BLAS.
#: Measured (one thread, float64, these machines): BLAS blocks beat the direct
#: tiles from d = 5 (1.2-1.4x at n = 32..1024, 1.5-2x from d = 8); the
#: specialised d = 2, 3 tiles win below (0.84x), d = 4 is even.
BLAS_MIN_D = 5

#: above this exponent e^x overflows float64: the largest USA log-weight allowed.
MAX_LOG_WEIGHT = 700.0


# ------------------------------------------------------------ references
def log_kernel_reference(kernel: str, q: np.ndarray, k: np.ndarray, param: float) -> np.ndarray:
    """``log kappa(q_i, k_j)`` for all pairs, plain NumPy.

    Parameters
    ----------
    kernel : str
        A key of :data:`KERNELS`.
    q, k : ndarray, shape (n, d)
        Queries and keys.
    param : float
        The kernel's parameter (:attr:`Kernel.parameter`): beta (edp,
        intersection), tau (rbf, l2) or gamma (quadratic).

    Returns
    -------
    ndarray, shape (n, n)
        ``-inf`` where the weight is zero.
    """
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    with np.errstate(divide="ignore"):
        return KERNELS[kernel].log_reference(q, k, param)


def _pair_sq(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    return ((q[:, None, :] - k[None, :, :]) ** 2).sum(-1)


def kernel_attention_reference(
    X: np.ndarray,
    kernel: str,
    param: float,
    *,
    normalized: bool = True,
    Q: np.ndarray | None = None,
    K: np.ndarray | None = None,
    V: np.ndarray | None = None,
    masses: np.ndarray | None = None,
) -> np.ndarray:
    """Attention output with any kernel, plain NumPy (n x n matrices).

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Tokens.
    kernel : str
        A key of :data:`KERNELS`.
    param : float
        The kernel's parameter (:attr:`Kernel.parameter`).
    normalized : bool
        SA (divide by the row sum) or USA (divide by the total mass).
    Q, K, V : ndarray, shape (d, d), optional
        Identity when None.
    masses : ndarray, shape (n,), optional
        Ones when None.

    Returns
    -------
    Y : ndarray, shape (n, d)
        Rows of zero total weight give ``y_i = 0``.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    q, k, v = attention.project_qkv(X, Q, K, V)
    m = np.ones(n) if masses is None else np.asarray(masses, dtype=np.float64)
    S = log_kernel_reference(kernel, q, k, param) + np.log(m)[None, :]
    M = S.max(axis=1, keepdims=True)
    dead = ~np.isfinite(M[:, 0])
    M[dead] = 0.0
    W = np.exp(S - M)
    if normalized:
        Z = W.sum(axis=1, keepdims=True)
        Z[dead] = 1.0
        return (W @ v) / Z
    return (W @ v) * (np.exp(M) / m.sum())


# ------------------------------------------------------------------- rbf
core = None  # bound by _rbf_drift: the edp drift
def _rbf(X, p, out, ws):
    """rbf attention by the bound edp ``core``: see the module docstring.

    ``p = (Q, K, V, logm, tau, normalized, qk_identity, v_identity, inv_mass)``;
    ``ws`` holds ``2 n`` floats, then the core's scratch.
    """
    Q, K, V, logm, tau, normalized, qk_identity, v_identity, inv_mass = p
    n, d = X.shape
    offset = ws[0:n]
    qfactor = ws[n:2 * n]
    for i in range(n):
        kk = 0.0
        qq = 0.0
        for a in range(d):
            if qk_identity:
                ka = X[i, a]
                qa = X[i, a]
            else:
                ka = 0.0
                qa = 0.0
                for b in range(d):
                    ka += K[a, b] * X[i, b]
                    qa += Q[a, b] * X[i, b]
            kk += ka * ka
            qq += qa * qa
        offset[i] = logm[i] - tau * kk
        qfactor[i] = np.exp(-tau * qq)
    core(X, (Q, K, V, offset, 2.0 * tau, normalized, 0.0, qk_identity, v_identity, inv_mass),
         out, ws[2 * n:])
    if not normalized:
        for i in range(n):
            f = qfactor[i]
            for a in range(d):
                out[i, a] *= f


def _rbf_drift(edp_drift, key: str):
    return specialize(_rbf, key, cache=True, core=edp_drift)


rbf_direct_serial = _rbf_drift(attention.attention_direct_serial, "direct_serial")
rbf_direct_parallel = _rbf_drift(attention.attention_direct_parallel, "direct_parallel")
rbf_blas_serial = _rbf_drift(attention.attention_blas_serial, "blas_serial")
rbf_blas_parallel = _rbf_drift(attention.attention_blas_parallel, "blas_parallel")


# ------------------------------------------------------------ pair kernels
logkappa = None  # bound per kernel in PAIR_DRIFTS
@jit
def _log_edp(q, k, beta):
    s = 0.0
    for a in range(q.shape[0]):
        s += q[a] * k[a]
    return beta * s


@jit
def _log_rbf(q, k, tau):
    s = 0.0
    for a in range(q.shape[0]):
        t = q[a] - k[a]
        s += t * t
    return -tau * s


@jit
def _log_l2(q, k, tau):
    s = 0.0
    for a in range(q.shape[0]):
        t = q[a] - k[a]
        s += t * t
    # log(tau |q - k|) = log tau + log(s) / 2; -inf at q = k (zero weight)
    return np.log(tau) + 0.5 * np.log(s)


@jit
def _log_quadratic(q, k, gamma):
    s = gamma
    for a in range(q.shape[0]):
        s += q[a] * k[a]
    return 2.0 * np.log(np.abs(s))


@jit
def _log_intersection(q, k, beta):
    s = 0.0
    for a in range(q.shape[0]):
        s += min(beta * q[a], beta * k[a])
    return s


@jit
def _rows_times(X, M, identity, out):
    """``out[i] = M x_i`` (rows), or a copy of X when ``identity``."""
    n, d = X.shape
    for i in range(n):
        for a in range(d):
            if identity:
                out[i, a] = X[i, a]
            else:
                s = 0.0
                for b in range(d):
                    s += M[a, b] * X[i, b]
                out[i, a] = s


def _pair_attention(X, p, out, ws):
    """Generic streamed pair loop over ``logkappa`` (bound per kernel).

    ``p = (Q, K, V, logm, param, normalized, qk_identity, v_identity, inv_mass)``;
    ``ws`` holds ``3 n d + nchunks * n`` floats.  Rows of zero weight give 0.
    """
    Q, K, V, logm, param, normalized, qk_identity, v_identity, inv_mass = p
    n, d = X.shape
    nd = n * d
    qs = view2d(ws[0:nd], n, d)
    ks = view2d(ws[nd:2 * nd], n, d)
    vs = view2d(ws[2 * nd:3 * nd], n, d)
    _rows_times(X, Q, qk_identity, qs)
    _rows_times(X, K, qk_identity, ks)
    _rows_times(X, V, v_identity, vs)
    nchunks = (ws.shape[0] - 3 * nd) // n
    for c in prange(nchunks):
        buf = ws[3 * nd + c * n:3 * nd + (c + 1) * n]
        for i in range(c, n, nchunks):
            qi = qs[i]
            m = -np.inf
            for j in range(n):
                s = logkappa(qi, ks[j], param) + logm[j]
                buf[j] = s
                m = max(m, s)
            if m == -np.inf:
                # every weight is zero: no defined softmax, the token stays put
                for a in range(d):
                    out[i, a] = 0.0
                continue
            Z = 0.0
            for a in range(d):
                out[i, a] = 0.0
            for j in range(n):
                w = exp_scalar(buf[j] - m)
                Z += w
                for a in range(d):
                    out[i, a] += w * vs[j, a]
            f = 1.0 / Z if normalized else np.exp(m) * inv_mass
            for a in range(d):
                out[i, a] *= f


def pair_workspace_size(n: int, d: int, nchunks: int) -> int:
    """Scratch length of the generic pair drift."""
    return 3 * n * d + nchunks * n


# --------------------------------------------------------------- registry
#: the entries of an attention drift's parameter tuple (:meth:`Kernel.params`)
#: in order, by name (:attr:`Kernel.slots`).
PARAM_SLOTS = ("Q", "K", "V", "log_masses", "param", "normalized", "usa_shift", "qk_identity",
               "v_identity", "inv_mass")


@dataclass(frozen=True, eq=False)
class Kernel:
    """A registered attention kernel ``kappa(q, k) >= 0`` and its behaviour.

    Adding a kernel is one :class:`Kernel` plus one line in :data:`KERNELS`:
    a pointwise jitted ``logkappa`` is lifted to the SA and USA drifts by the
    generic streamed pair loop; validation, bounds and references follow
    from the entry.

    Attributes
    ----------
    name : str
        Registry key (``kernel=`` of the configuration, ``--kernel``).
    formula : str
        ``kappa(q, k)`` in words (help texts).
    parameter : str
        The configuration field holding the kernel's parameter (``"beta"``,
        ``"tau"`` or ``"gamma"``).
    log_reference : callable
        ``log_reference(q, k, param) -> L``: plain NumPy ``log kappa`` of all
        pairs, ``q`` (n, d), ``k`` (m, d), ``L`` (n, m), ``-inf`` for a zero
        weight.
    log_bound : callable
        ``log_bound(param, nq, nk, qk, d) -> float``: an upper bound on
        ``log kappa(Q x, K y)`` over unit tokens ``x, y``, given the spectral
        norms ``nq = ||Q||``, ``nk = ||K||`` and ``qk = ||Q^T K||`` (the
        largest USA weight is ``exp`` of it; see :func:`check_usa_range`).
    logkappa : numba dispatcher, optional
        ``logkappa(q, k, param) -> float`` for one pair, ``q, k`` of shape
        (d,): the generic pair loop's kernel.  Needed unless ``drifts`` is given.
    drifts : callable, optional
        ``drifts(n, d) -> DriftSet`` (or the tuple ``(serial, parallel,
        workspace, name)``): a kernel's own fast single-head drifts (edp, rbf)
        instead of the pair loop.
    time_change : bool
        Whether the kernel's drift takes the USA shift ``c`` (so that
        ``usa_scale="n_exp_beta"`` is allowed): the edp kernel only.
    reference : callable, optional
        ``reference(X, param, *, normalized, usa_shift, Q, K, V, masses) -> Y``,
        a kernel's own NumPy attention output (default: the generic
        :func:`kernel_attention_reference` over ``log_reference``).
    energy_log : numba dispatcher, optional
        ``logkappa(q, k, param)`` the interaction energy sums
        (:func:`particles.observables.kernel_energy`); default :attr:`logkappa`.
    energy_scale : float, optional
        ``a`` for a kernel whose log is linear in its parameter: the energy's
        scale is then ``c = a * param`` and its ``c -> 0`` limit is defined
        (edp 1, rbf 2, intersection 1); None: ``c = 1``.
    """

    name: str
    formula: str
    parameter: str
    log_reference: Callable[[np.ndarray, np.ndarray, float], np.ndarray]
    log_bound: Callable[[float, float, float, float, int], float]
    logkappa: Callable | None = None
    drifts: Callable[[int, int], tuple] | None = None
    time_change: bool = False
    reference: Callable[..., np.ndarray] | None = None
    energy_log: Callable | None = None
    energy_scale: float | None = None

    def __post_init__(self) -> None:
        if self.logkappa is None and self.drifts is None:
            raise ValueError(f"kernel {self.name!r} needs a pointwise logkappa or its own drifts")

    def __str__(self) -> str:
        return self.formula

    @property
    def energy_kappa(self) -> Callable | None:
        """The jitted ``logkappa(q, k, param)`` of the kernel's energy (None: none declared)."""
        return self.energy_log if self.energy_log is not None else self.logkappa

    @cached_property
    def pair_drifts(self) -> tuple[Callable, Callable]:
        """(serial, parallel) generic pair drifts over :attr:`logkappa` (compiled on first call)."""
        # keyed by the logkappa's code too (kernel_key): a kernel registered under
        # a name another definition had is never served that one's cached code
        return tuple(specialize(_pair_attention,
                                f"{self.name}_{'parallel' if parallel else 'serial'}_"
                                f"{kernel_key(self.logkappa)}",
                                parallel=parallel, cache=True, logkappa=self.logkappa)
                     for parallel in (False, True))

    def single_head(self, n: int, d: int) -> DriftSet:
        """The single-head softmax/USA drift pair (a kernel's own ``drifts`` may return
        a plain ``(serial, parallel, workspace, name)`` tuple: no BLAS)."""
        if self.drifts is not None:
            return DriftSet(*self.drifts(n, d))
        serial, parallel = self.pair_drifts
        return DriftSet(serial, parallel, (lambda c: pair_workspace_size(n, d, c)),
                        f"pair_{self.name}")

    @property
    def slots(self) -> dict[str, int]:
        """Position of each named entry of :meth:`params`' tuple (:data:`PARAM_SLOTS`;
        no ``usa_shift`` without the time change), for Python readers: the
        compiled drifts read the tuple by position."""
        names = [s for s in PARAM_SLOTS if self.time_change or s != "usa_shift"]
        return {name: i for i, name in enumerate(names)}

    def params(self, Q: np.ndarray, K: np.ndarray, V: np.ndarray, logm: np.ndarray,
               param: float, normalized: bool, usa_shift: float, qk_identity: bool,
               v_identity: bool, inv_mass: float) -> tuple:
        """The drift's parameter tuple (the USA shift only for ``time_change`` kernels)."""
        if self.time_change:
            return (Q, K, V, logm, param, normalized, usa_shift, qk_identity, v_identity,
                    inv_mass)
        return (Q, K, V, logm, param, normalized, qk_identity, v_identity, inv_mass)

    def attention_reference(self, X: np.ndarray, param: float, *, normalized: bool,
                            usa_shift: float = 0.0, Q: np.ndarray | None = None,
                            K: np.ndarray | None = None, V: np.ndarray | None = None,
                            masses: np.ndarray | None = None) -> np.ndarray:
        """Plain NumPy attention output ``Y`` (n, d) of one head for tokens ``X`` (n, d)."""
        if self.reference is not None:
            return self.reference(X, param, normalized=normalized, usa_shift=usa_shift,
                                  Q=Q, K=K, V=V, masses=masses)
        return kernel_attention_reference(X, self.name, param, normalized=normalized,
                                          Q=Q, K=K, V=V, masses=masses)

    def check(self, spec: RunSpec) -> None:
        """Refuse a parameter this kernel does not use (``tau``, ``gamma`` not 1.0:
        it would silently run another model) and the e^-beta time change of a
        kernel without it (fields ``tau``, ``gamma``, ``usa_scale``)."""
        for name in ("tau", "gamma"):
            if getattr(spec, name) != 1.0 and self.parameter != name:
                users = [repr(k) for k, v in KERNELS.items() if v.parameter == name]
                raise invalid(name, f"1.0 (the default) unless kernel is {' or '.join(users)} "
                              f"(kernel={self.name!r})", getattr(spec, name))
        if USA_SCALES[spec.usa_scale].time_change and not self.time_change:
            owners = " or ".join(repr(k) for k, v in KERNELS.items() if v.time_change)
            raise invalid("usa_scale", f"'n' for kernel={self.name!r} (the e^-beta time "
                          f"change belongs to the {owners} kernel)", spec.usa_scale)

    def overflow_hint(self, usa_scale: str) -> str:
        """How to bring a too large USA weight back into range."""
        if self.time_change and usa_scale == "n":
            return "use usa_scale='n_exp_beta'"
        if self.time_change:
            return "scale Q or K down"
        return f"lower {self.parameter} or scale Q or K down"


def _edp_drifts(n: int, d: int) -> tuple:
    blas = d >= BLAS_MIN_D

    def ws(c: int) -> int:
        return attention.workspace_size(n, d, c, blas)

    if blas:
        return DriftSet(attention.attention_blas_serial, attention.attention_blas_parallel, ws,
                        "blas", blas=True)
    return DriftSet(*attention.direct_kernels(d), ws, "direct")


def _rbf_drifts(n: int, d: int) -> tuple:
    blas = d >= BLAS_MIN_D
    ser, par = ((rbf_blas_serial, rbf_blas_parallel) if blas
                else (rbf_direct_serial, rbf_direct_parallel))
    return DriftSet(ser, par, (lambda c: 2 * n + attention.workspace_size(n, d, c, blas)),
                    "rbf_blas" if blas else "rbf_direct", blas=blas)


def _edp_reference(X, param, *, normalized, usa_shift, Q, K, V, masses):
    return attention.attention_reference(X, beta=param, normalized=normalized,
                                         usa_shift=usa_shift, Q=Q, K=K, V=V, masses=masses)


def _floor_log(x: float) -> float:
    return float(np.log(max(x, 1e-300)))


#: name -> attention kernel kappa(q, k); DESIGN.md section 1.  The single
#: source of truth for ``kernel=`` (API, CLI, validation, bounds, references).
KERNELS: dict[str, Kernel] = {k.name: k for k in (
    Kernel("edp", "exp(beta <q, k>)", "beta",
           lambda q, k, b: b * (q @ k.T),
           lambda b, nq, nk, qk, d: b * qk,
           drifts=_edp_drifts, time_change=True, reference=_edp_reference,
           energy_log=_log_edp, energy_scale=1.0),
    # the edp core scales by exp(2 tau |q| |k|) before the exp(-tau |q|^2) factor
    Kernel("rbf", "exp(-tau ||q - k||^2)", "tau",
           lambda q, k, t: -t * _pair_sq(q, k),
           lambda t, nq, nk, qk, d: 2.0 * t * nq * nk,
           drifts=_rbf_drifts, energy_log=_log_rbf, energy_scale=2.0),
    Kernel("l2", "tau ||q - k||", "tau",
           lambda q, k, t: np.log(t * np.sqrt(_pair_sq(q, k))),
           lambda t, nq, nk, qk, d: _floor_log(t * (nq + nk)),
           logkappa=_log_l2),
    # sum_l min(b q_l, b k_l) <= b (|q|_1 + |k|_1) / 2 <= b sqrt(d) max(|q|, |k|)
    Kernel("intersection", "exp(sum_l min(beta q_l, beta k_l))", "beta",
           lambda q, k, b: np.minimum(b * q[:, None, :], b * k[None, :, :]).sum(-1),
           lambda b, nq, nk, qk, d: b * np.sqrt(d) * max(nq, nk),
           logkappa=_log_intersection, energy_scale=1.0),
    Kernel("quadratic", "(<q, k> + gamma)^2", "gamma",
           lambda q, k, g: 2.0 * np.log(np.abs(q @ k.T + g)),
           lambda g, nq, nk, qk, d: 2.0 * _floor_log(nq * nk + abs(g)),
           logkappa=_log_quadratic),
)}


@dataclass(frozen=True)
class UsaScale:
    """A USA normalisation ``e^{-c} / n``; ``c = beta`` for the time change, else 0."""

    name: str
    description: str
    time_change: bool

    def shift(self, beta: float) -> float:
        """The shift ``c`` of the log-weights."""
        return float(beta) if self.time_change else 0.0


#: USA normalisations (``usa_scale=``).
USA_SCALES: dict[str, UsaScale] = {s.name: s for s in (
    UsaScale("n", "weights divided by n", False),
    UsaScale("n_exp_beta", "weights divided by n e^beta (a time change; edp kernel)", True),
)}
