"""The energy of the kernel that ran: :class:`EnergyDefinition` and its compiled sums.

The ``pairwise`` observer records the energy of the default dynamics (edp
kernel, ``Q = K = I``).  Other single-head kernels and symmetric ``Q^T K``
record the energy of the kernel that ran, ``1/(2 c N^2) sum_ij m_i m_j
kappa(Q x_i, K x_j)`` (:func:`energy_definition`, :func:`kernel_energy`),
each kernel's pointwise ``log kappa`` and scale declared on its registry
entry (:attr:`particles.fields.kernels.Kernel.energy_kappa`,
:attr:`~particles.fields.kernels.Kernel.energy_scale`); where no energy of the
dynamics is defined (Kuramoto, several heads, Sinkhorn, random weights,
non-symmetric ``Q^T K``) the default is recorded and, in a file, the
``definition`` attribute of the energy observables says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from particles._numba import kernel_key, specialize
from particles.fields.kernels import KERNELS, Kernel, log_kernel_reference
from particles.fields.weights import draw_layer, is_random
from particles.protocols import RunSpec

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


def energy_definition(config: RunSpec) -> EnergyDefinition:
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
    config : RunSpec
        A validated run (its configuration).
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
                    f"{energy_scale(kernel, param):g} (energy_normalized: e^-L "
                    f"(1/N^2) sum, L = {L:.6g})"))


def energy_scale(kernel: Kernel, param: float) -> float:
    """The scale ``c`` of a kernel's energy ``1/(2 c N^2) sum m m kappa`` (1 without one)."""
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
    a, c = kernel.energy_scale, energy_scale(kernel, definition.param)
    fn = _kernel_sums_of(kernel)
    energy = np.empty(X.shape[0])
    norm = np.empty(X.shape[0])
    sums = np.empty(2)
    for b in range(X.shape[0]):
        q = np.ascontiguousarray(X[b] @ definition.Q.T)
        k = np.ascontiguousarray(X[b] @ definition.K.T)
        fn(q, k, m, definition.param, definition.log_bound, sums)
        norm[b] = sums[0] / (N * N)
        energy[b] = energy_value(norm[b], sums[1] / (N * N), c, a, definition.log_bound)
    return {"energy": energy, "energy_normalized": norm}


def energy_value(norm: float, linear: float, c: float, a: float | None, L: float) -> float:
    """The energy from ``energy_normalized`` (``e^L norm / (2 c)``, inf past exp's
    range), or its ``c = 0`` limit from the linear sum."""
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
    a, c = kernel.energy_scale, energy_scale(kernel, definition.param)
    return {"energy": energy_value(norm, linear, c, a, definition.log_bound),
            "energy_normalized": norm}
