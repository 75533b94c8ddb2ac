"""The order parameter, once: ``r e^{i psi} = (1/N) sum_j m_j x_j`` on the circle,
``r = || sum_j m_j x_j || / N`` on any sphere.

* the ``order`` observer (:func:`order_observables`: ``r`` and the mean inner
  product from the token sums, one compiled O(n d) pass, the ``pairwise``
  pass's own numbers bit for bit);
* its NumPy twins with the phase: :func:`order_parameter` of phases and
  :func:`order_parameter_from_positions` of points on the circle, giving an
  :class:`OrderParameter` (``r`` and ``psi``; Kuramoto 1984).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from particles._numba import cached, jit, prange
from particles.observables.base import Context

__all__ = [
    "OrderParameter",
    "check_finite",
    "order_observables",
    "order_observer",
    "order_parameter",
    "order_parameter_from_positions",
]


@jit
def linear_sums(X, m):
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
        r2, sq, w2 = linear_sums(Xb[b], m)
        order[b] = np.sqrt(w2) / N
        mean_ip[b] = (r2 - sq) / (n * (n - 1.0)) if n > 1 else 1.0


def order_observables(Xb: np.ndarray, masses: np.ndarray) -> dict[str, np.ndarray]:
    """``order_parameter`` and ``mean_inner_product`` of a stack of systems, O(n d),
    in one compiled pass parallel over systems.

    Parameters
    ----------
    Xb : ndarray, shape (batch, n, d)
    masses : ndarray, shape (n,)

    Returns
    -------
    dict of str to ndarray, shape (batch,)
        The same numbers as the ``pairwise`` pass gives them
        (:func:`particles.observables.pairwise.compute_observables`).
    """
    X = np.ascontiguousarray(Xb, dtype=np.float64)
    m = np.ascontiguousarray(masses, dtype=np.float64)
    order = np.empty(X.shape[0])
    mean_ip = np.empty(X.shape[0])
    _order_sums(X, m, order, mean_ip)
    return {"order_parameter": order, "mean_inner_product": mean_ip}


def order_observer(Xb: np.ndarray, ctx: Context) -> dict[str, np.ndarray]:
    """The ``order`` observer: :func:`order_observables` with the run's masses."""
    return order_observables(Xb, ctx.masses)


# ------------------------------------------------------ with the phase (NumPy)
def check_finite(name: str, a: np.ndarray) -> np.ndarray:
    """``a`` itself when every entry is finite; a ValueError naming ``name`` otherwise."""
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got NaN or inf entries")
    return a


def _masses(masses: ArrayLike | None, n: int) -> np.ndarray | None:
    if masses is None:
        return None
    m = np.asarray(masses, dtype=np.float64)
    if m.shape != (n,) or not np.all(np.isfinite(m)) or np.any(m <= 0):
        raise ValueError(f"masses must be {n} finite positive numbers, got shape {m.shape}")
    return m


@dataclass(frozen=True)
class OrderParameter:
    """Kuramoto order parameter ``r e^{i psi}`` (per frame, per system).

    Attributes
    ----------
    r : ndarray, shape (...)
        Modulus in [0, 1]: 0 for an incoherent population, 1 when all phases
        coincide.
    psi : ndarray, shape (...)
        Mean phase in (-pi, pi] (meaningless where ``r`` is ~0); follow it in
        time with ``numpy.unwrap(psi, axis=0)``.
    """

    r: np.ndarray
    psi: np.ndarray

    @property
    def z(self) -> np.ndarray:
        """The complex order parameter ``r e^{i psi}``, shape (...)."""
        return self.r * np.exp(1j * self.psi)


def _order(c: np.ndarray, s: np.ndarray, m: np.ndarray | None) -> OrderParameter:
    if m is None:
        z0, z1 = c.mean(axis=-1), s.mean(axis=-1)
    else:
        z0, z1 = (c @ m) / m.sum(), (s @ m) / m.sum()
    return OrderParameter(r=np.hypot(z0, z1), psi=np.arctan2(z1, z0))


def order_parameter(theta: ArrayLike, masses: ArrayLike | None = None) -> OrderParameter:
    """Order parameter of phases: ``r e^{i psi} = (1/N) sum_j m_j e^{i theta_j}``.

    Parameters
    ----------
    theta : array_like, shape (..., n)
        Phases (any leading axes: frames, batch).
    masses : array_like, shape (n,), optional
        Weights ``m_j > 0``, ``N = sum_j m_j`` (ones when None).

    Returns
    -------
    OrderParameter
        ``r`` and ``psi`` of shape (...).
    """
    th = check_finite("theta", np.asarray(theta, dtype=np.float64))
    if th.ndim < 1 or th.shape[-1] < 1:
        raise ValueError(f"theta must have shape (..., n) with n >= 1, got shape {th.shape}")
    return _order(np.cos(th), np.sin(th), _masses(masses, th.shape[-1]))


def order_parameter_from_positions(positions: ArrayLike,
                                   masses: ArrayLike | None = None) -> OrderParameter:
    """Order parameter of points on the circle: the (weighted) mean of the rows.

    Parameters
    ----------
    positions : array_like, shape (..., n, 2)
        Points ``(cos theta_j, sin theta_j)`` (e.g. ``Trajectory.positions``).
    masses : array_like, shape (n,), optional
        Weights (ones when None).

    Returns
    -------
    OrderParameter
        ``r`` and ``psi`` of shape (...); ``r`` equals (to rounding) the
        ``order_parameter`` observable, :func:`order_observables`, of which
        this is the NumPy twin.
    """
    x = check_finite("positions", np.asarray(positions, dtype=np.float64))
    if x.ndim < 2 or x.shape[-1] != 2 or x.shape[-2] < 1:
        raise ValueError(f"positions must have shape (..., n, 2), got shape {x.shape}")
    return _order(x[..., 0], x[..., 1], _masses(masses, x.shape[-2]))
