"""The circle's angle form: drifts on phases, on the same contract as the sphere's.

On S^1 every model of DESIGN.md section 1 is an ODE for the angles
``theta_i``; with natural frequencies ``omega_i`` and a coupling ``c`` the
angle form is the generalized Kuramoto model

    dtheta_i/dt = omega_i + c (1/N) sum_j m_j h_i(theta_j - theta_i)

(``N = sum_j m_j``, masses 1 by default) with

* ``kuramoto``: ``h(u) = sin(u)`` (Kuramoto 1984), O(n) per evaluation
  through the order parameter: ``(1/N) sum_j m_j sin(theta_j - theta_i) =
  Im(z e^{-i theta_i})``, ``z = (1/N) sum_j m_j e^{i theta_j}``;
* ``usa``: ``h(u) = exp(beta cos u - s) sin u`` with ``s = 0``
  (``usa_scale="n"``) or ``s = beta`` (``usa_scale="n_exp_beta"``);
* ``sa``: the same weights normalised by the row sum,
  ``sum_j m_j e^{beta cos} sin / sum_j m_j e^{beta cos}`` (instead of ``N``).

The state is a *flat* space: phases as an array of shape (n, 1) (one
coordinate per row), so the drifts ``drift(X, p, out, ws)`` run on the same
integrators and runners as the sphere's (``space="flat"``: no projection,
no normalisation).  The SA/USA kernels stream pairs (O(n^2) time, O(n)
memory: no n x n matrix), with the vectorised exp and the softmax shift
``beta + max log m`` (exact row maximum on the circle, where
``cos(theta_j - theta_i) <= 1`` with equality at j = i).

Also here: :func:`angle_field`, a model's angle form as a
:class:`~particles.fields.base.CompiledField` on the phases, and the NumPy
oracle :func:`angle_velocity_reference`.  (The order parameter of phases is
the observers', :mod:`particles.observables.order`.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from particles._numba import jit, prange, specialize
from particles.fastexp import exp_scalar
from particles.fields.base import CompiledField
from particles.fields.kuramoto import BLOCK, block_total

__all__ = [
    "ANGLE_MODELS",
    "ANGLE_SLOTS",
    "angle_drift",
    "angle_field",
    "angle_params",
    "angle_speed_bound",
    "angle_velocity_reference",
    "angle_workspace",
]

@dataclass(frozen=True)
class AngleModel:
    """A model of the angle form (its coupling function ``h``).

    Attributes
    ----------
    name, description : str
    pairwise : bool
        Attention weights ``exp(beta cos)`` over every pair (O(n^2)); else the
        Kuramoto ``h = sin``, O(n) through the order parameter.
    normalized : bool
        Weights normalised by their row sum (SA); else divided by ``N`` (and
        shifted by ``s``, USA).
    """

    name: str
    description: str
    pairwise: bool = True
    normalized: bool = False

    def __str__(self) -> str:
        return self.description

    def largest_weight(self, beta: float, usa_scale: str) -> float:
        """The largest weight of a pair, relative to an average weight of 1:
        ``e^{beta - s}`` for unnormalised attention, 1 otherwise."""
        if self.pairwise and not self.normalized:
            return math.exp(beta - (beta if usa_scale == "n_exp_beta" else 0.0))
        return 1.0

    def drift(self, parallel: bool) -> Callable:
        """The compiled drift ``drift(X, p, out, ws)`` (X, out of shape (n, 1))."""
        return _DRIFTS[(self.name, bool(parallel))]

    def velocity(self, th: np.ndarray, m: np.ndarray, beta: float, usa_scale: str
                 ) -> np.ndarray:
        """Plain NumPy ``(1/N) sum_j m_j h_i(theta_j - theta_i)`` (n x n matrices)."""
        D = th[None, :] - th[:, None]  # D[i, j] = theta_j - theta_i
        if not self.pairwise:
            return (np.sin(D) @ m) / m.sum()
        S = beta * np.cos(D) + np.log(m)[None, :]
        M = S.max(axis=1)
        W = np.exp(S - M[:, None])
        A = (W * np.sin(D)).sum(axis=1)
        if self.normalized:
            return A / W.sum(axis=1)
        shift = beta if usa_scale == "n_exp_beta" else 0.0
        return A * np.exp(M - shift) / m.sum()


#: models of the angle form: name -> model (its coupling function h).
ANGLE_MODELS: dict[str, AngleModel] = {m.name: m for m in (
    AngleModel("sa", "h = exp(beta cos) sin, normalised by sum_j m_j exp(beta cos)",
               normalized=True),
    AngleModel("usa", "h = exp(beta cos - s) sin / N, s = 0 or beta (usa_scale)"),
    AngleModel("kuramoto", "h = sin / N, O(n) via the order parameter", pairwise=False),
)}

#: a row whose weights sum below this had a shift far above its true maximum
#: (possible only with masses spanning > 1e100): recomputed with the exact one.
_TINY_Z = 1e-100


# ------------------------------------------------------------------ references
def angle_velocity_reference(
    theta: ArrayLike,
    *,
    model: str = "kuramoto",
    beta: float = 0.0,
    coupling: float = 1.0,
    omega: ArrayLike | None = None,
    usa_scale: str = "n",
    masses: ArrayLike | None = None,
) -> np.ndarray:
    """Plain NumPy angular velocities (n x n matrices), the oracle of the kernels.

    Parameters
    ----------
    theta : array_like, shape (n,)
        Phases.
    model : {"sa", "usa", "kuramoto"}
        Coupling function (see the module docstring).
    beta : float
        Inverse temperature (unused by ``kuramoto``).
    coupling : float
        Coupling strength ``c``.
    omega : array_like, shape (n,), optional
        Natural frequencies (zeros when None).
    usa_scale : {"n", "n_exp_beta"}
        USA normalisation.
    masses : array_like, shape (n,), optional
        Weights (ones when None).

    Returns
    -------
    ndarray, shape (n,)
        ``dtheta_i/dt``.
    """
    th = np.asarray(theta, dtype=np.float64)
    n = th.shape[0]
    m = np.ones(n) if masses is None else np.asarray(masses, dtype=np.float64)
    w = np.zeros(n) if omega is None else np.asarray(omega, dtype=np.float64)
    return w + coupling * ANGLE_MODELS[model].velocity(th, m, beta, usa_scale)


# --------------------------------------------------------------------- kernels
@jit
def _row_sums(ci, si, C, S, logm, beta, shift):
    """``(Z, A) = sum_j w_j (1, sin(theta_j - theta_i))`` with
    ``w_j = exp(beta cos(theta_j - theta_i) + log m_j - shift)``; one fused,
    vectorised pass (cosines and sines of differences from C, S)."""
    Z = 0.0
    A = 0.0
    for j in range(C.shape[0]):
        cj = C[j]
        sj = S[j]
        w = exp_scalar(beta * (cj * ci + sj * si) + logm[j] - shift)
        Z += w
        A += w * (sj * ci - cj * si)
    return Z, A


@jit
def _row_max(ci, si, C, S, logm, beta):
    """Exact maximum of ``beta cos(theta_j - theta_i) + log m_j`` (rare slow path)."""
    mx = -np.inf
    for j in range(C.shape[0]):
        mx = max(mx, beta * (C[j] * ci + S[j] * si) + logm[j])
    return mx


NORMALIZED = True  # bound per specialisation


def _attention_drift(X, p, out, ws):
    """SA (NORMALIZED) or USA angular velocities of the phases X (n, 1) into out (n, 1).

    ``ws`` (float64, length >= 2 n) receives cos and sin of the phases.
    """
    omega, _m, logm, beta, coupling, usa_shift, inv_mass = p
    n = X.shape[0]
    C = ws[0:n]
    S = ws[n:2 * n]
    lmax = -np.inf
    for j in range(n):
        lmax = max(lmax, logm[j])
    for i in prange(n):
        C[i] = np.cos(X[i, 0])
        S[i] = np.sin(X[i, 0])
    for i in prange(n):
        ci = C[i]
        si = S[i]
        shift = beta + lmax
        Z, A = _row_sums(ci, si, C, S, logm, beta, shift)
        if Z < _TINY_Z:
            shift = _row_max(ci, si, C, S, logm, beta)
            Z, A = _row_sums(ci, si, C, S, logm, beta, shift)
        if NORMALIZED:
            v = A / Z
        else:
            v = A * (np.exp(shift - usa_shift) * inv_mass)
        out[i, 0] = omega[i] + coupling * v


def _kuramoto_drift(X, p, out, ws):
    """Kuramoto angular velocities of X (n, 1), O(n): ``omega_i + c Im(z e^{-i theta_i})``.

    ``ws`` holds cos and sin of the phases (2 n) then the per-block partial
    sums of ``z`` (``2 ceil(n / BLOCK)``).
    """
    omega, m, _logm, _beta, coupling, _usa_shift, inv_mass = p
    n = X.shape[0]
    C = ws[0:n]
    S = ws[n:2 * n]
    part = ws[2 * n:]
    nblocks = (n + BLOCK - 1) // BLOCK
    for b in prange(nblocks):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        s0 = 0.0
        s1 = 0.0
        for i in range(lo, hi):
            c = np.cos(X[i, 0])
            s = np.sin(X[i, 0])
            C[i] = c
            S[i] = s
            s0 += m[i] * c
            s1 += m[i] * s
        part[2 * b] = s0
        part[2 * b + 1] = s1
    z0, z1 = block_total(part, nblocks, coupling * inv_mass)
    for b in prange(nblocks):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        for i in range(lo, hi):
            out[i, 0] = omega[i] + (z1 * C[i] - z0 * S[i])


_DRIFTS = {
    ("sa", False): specialize(_attention_drift, "sa_serial", cache=True, NORMALIZED=True),
    ("sa", True): specialize(_attention_drift, "sa_parallel", parallel=True, cache=True,
                             NORMALIZED=True),
    ("usa", False): specialize(_attention_drift, "usa_serial", cache=True, NORMALIZED=False),
    ("usa", True): specialize(_attention_drift, "usa_parallel", parallel=True, cache=True,
                              NORMALIZED=False),
    ("kuramoto", False): specialize(_kuramoto_drift, "serial", cache=True),
    ("kuramoto", True): specialize(_kuramoto_drift, "parallel", parallel=True, cache=True),
}


def angle_drift(model: str, parallel: bool) -> Callable:
    """The compiled drift ``drift(X, p, out, ws)`` of an angle model, X and out of
    shape (n, 1); ``parallel`` splits rows over threads."""
    return ANGLE_MODELS[model].drift(parallel)


def angle_workspace(n: int) -> int:
    """Scratch length of the angle drifts for n phases."""
    return 2 * n + 2 * ((n + BLOCK - 1) // BLOCK)


#: position of each named entry of :func:`angle_params`' tuple, for Python
#: readers (the compiled drifts read it by position).
ANGLE_SLOTS = {name: i for i, name in enumerate(
    ("omega", "masses", "log_masses", "beta", "coupling", "usa_shift", "inv_mass"))}


def angle_params(n: int, beta: float, coupling: float, omega: np.ndarray, usa_scale: str,
                 masses: np.ndarray | None) -> tuple:
    """The parameter tuple ``p`` of the angle drifts.

    Returns
    -------
    tuple
        ``(omega (n,), m (n,), log m (n,), beta, coupling, usa_shift, 1 / N)``.
    """
    m = np.ones(n) if masses is None else np.ascontiguousarray(masses, dtype=np.float64)
    usa_shift = float(beta) if usa_scale == "n_exp_beta" else 0.0
    return (np.ascontiguousarray(omega, dtype=np.float64), m, np.log(m), float(beta),
            float(coupling), usa_shift, 1.0 / float(m.sum()))


def angle_speed_bound(model: str, beta: float, coupling: float, omega: np.ndarray,
                      usa_scale: str) -> float:
    """Upper bound on ``|dtheta_i/dt|``: ``max |omega| + |c|`` times the largest weight
    (weights average to at most 1 for SA and Kuramoto, ``e^{beta - s}`` for USA)."""
    rate = ANGLE_MODELS[model].largest_weight(beta, usa_scale)
    return float(np.abs(omega).max()) + abs(coupling) * rate


def angle_field(model: str, n: int, *, beta: float = 0.0, coupling: float = 1.0,
                omega: np.ndarray, usa_scale: str = "n",
                masses: np.ndarray | None = None) -> CompiledField:
    """The angle form of a circle model as a field on the phases (a flat space).

    Parameters
    ----------
    model : {"sa", "usa", "kuramoto"}
        Coupling function (:data:`ANGLE_MODELS`).
    n : int
        Number of oscillators; the state is shaped (n, 1).
    beta, coupling, usa_scale
        As in :func:`angle_velocity_reference`.
    omega : ndarray, shape (n,)
        Natural frequencies.
    masses : ndarray, shape (n,), optional
        Weights (ones when None).

    Returns
    -------
    CompiledField
        Drifts ``drift(theta, p, out, ws)`` on (n, 1) arrays, speed bound
        :func:`angle_speed_bound` and per-oscillator rates ``|omega_i| + (bound -
        max |omega|)``.
    """
    p = angle_params(n, beta, coupling, omega, usa_scale, masses)
    w = p[ANGLE_SLOTS["omega"]]
    bound = angle_speed_bound(model, beta, coupling, w, usa_scale)

    def reference(theta: np.ndarray) -> np.ndarray:
        return angle_velocity_reference(theta[:, 0], model=model, beta=beta, coupling=coupling,
                                        omega=w, usa_scale=usa_scale, masses=masses)[:, None]

    return CompiledField(
        serial=angle_drift(model, False), parallel=angle_drift(model, True), params=p,
        workspace=lambda nchunks: angle_workspace(n), reference=reference,
        name=f"angle_{model}", pairwise=ANGLE_MODELS[model].pairwise, speed=bound,
        rates=np.abs(w) + (bound - float(np.abs(w).max())),
    )
