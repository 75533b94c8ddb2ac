"""The pairwise observables of a large system on S^1 or S^2 without every pair.

:func:`particles.observables.compute_observables` visits all n(n - 1) / 2
pairs: 5e9 at n = 1e5, seconds a frame.  From :data:`LARGE_N` tokens on, in
d = 2 and 3, :class:`~particles.analysis.Scalars` takes them from here:

* ``order_parameter``, ``mean_inner_product``: the same O(n) sums
  (:func:`particles.observables.order.linear_sums`), the same values.
* ``energy``, ``energy_normalized``: the pair sum ``sum_ij m_i m_j
  exp(beta (<x_i, x_j> - 1))`` through the spectral series of
  :func:`particles.fields.spectral.pair_sum` (Fourier modes on the circle,
  one adjoint spherical-harmonic transform on S^2): relative error below
  :data:`ENERGY_TOL` (a bound on the series' tail, and the transforms'
  accuracy).  At beta = 0, ``|sum m_i x_i|^2``: exact.
* ``min_inner_product``: :func:`particles.analysis.minimum.min_inner_product`
  (the pair loop's value or at most 1e-10 above it).

Measured in ``benchmarks/bench_analysis.py``.
"""

from __future__ import annotations

import math

import numpy as np

from particles.analysis.minimum import min_inner_product
from particles.fields.spectral import pair_sum
from particles.observables.order import linear_sums
from particles.observables.pairwise import NAMES

#: from this many tokens on (d = 2, 3) the observables come from here.
LARGE_N = 8192

#: relative accuracy of the spectral energy.
ENERGY_TOL = 1e-12


def use_large(n: int, d: int) -> bool:
    """Whether :func:`large_observables` serves ``n`` tokens on S^{d-1}."""
    return n >= LARGE_N and d in (2, 3)


def large_observables(Xb: np.ndarray, beta: float, masses: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`~particles.observables.compute_observables`'s values, O(n log n) each.

    Parameters
    ----------
    Xb : ndarray, shape (batch, n, d), d = 2 or 3, n >= 2
    beta : float
    masses : ndarray, shape (n,)

    Returns
    -------
    dict of str to ndarray, shape (batch,)
        One entry per name in :data:`particles.observables.pairwise.NAMES`.
    """
    B, n, _ = Xb.shape
    m = np.ascontiguousarray(masses, dtype=np.float64)
    N = float(np.cumsum(m)[-1])  # summed in order, as the pair loop's finish sums it
    out = {name: np.empty(B) for name in NAMES}
    for b in range(B):
        X = np.ascontiguousarray(Xb[b], dtype=np.float64)
        r2, sq, w2 = linear_sums(X, m)
        if beta > 0.0:
            en = pair_sum(X, m, float(beta), ENERGY_TOL) / (N * N)
            energy = math.exp(beta) * en / (2.0 * beta) if beta < 709.0 else np.inf
        else:
            en, energy = 1.0, w2 / (2.0 * N * N)
        out["energy"][b] = energy
        out["energy_normalized"][b] = en
        out["order_parameter"][b] = math.sqrt(w2) / N
        out["min_inner_product"][b] = min_inner_product(X)
        out["mean_inner_product"][b] = (r2 - sq) / (n * (n - 1.0))
    return out
