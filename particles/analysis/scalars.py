"""Scalar summaries of token configurations.

* ``energy`` ``E_beta = 1/(2 beta n^2) sum_ij exp(beta <x_i, x_j>)`` and
  ``energy_normalized = 2 beta e^{-beta} E_beta`` in ``(0, 1]`` (1 when all
  tokens coincide; with k equal well-separated clusters it is about 1/k,
  so its staircase shows merges), ``order_parameter ||mean x_i||``,
  ``min_inner_product`` and ``mean_inner_product``: from
  :func:`particles.observables.compute_observables` (DESIGN.md section 2);
  from 8192 tokens on S^1 and S^2 without the pair loop
  (:mod:`particles.analysis.large`: the energy to a relative 1e-12, the
  minimum to 1e-10).
* ``span_dimension``: the number of eigenvalues of the d-by-d second-moment
  matrix ``M = X^T X / n`` above ``span_tol * trace(M)``.  ``M`` has the
  nonzero eigenvalues of the n-by-n Gram matrix ``X X^T / n`` but costs
  O(n d^2), not O(n^2 d).  An eigenvalue ``w^2`` means an rms extent ``w``
  along its direction, so the default ``span_tol = 1e-6`` ignores directions
  along which tokens spread less than ~1e-3 (relative).
* ``close_pair_fraction``: the fraction of pairs ``i < j`` with
  ``<x_i, x_j> > 1 - delta`` (the "clustered pairs" of the high-dimensional
  phase diagram; 1 for a single token).  Compiled and streamed over pairs
  (:mod:`particles.analysis._pairs`); above 4096 tokens estimated from the
  pairs of a fixed random subsample of 4096 tokens (standard error at most
  ``2 sqrt(p (1 - p) / 4096) <= 0.016``, see :mod:`particles.analysis._pairs`).
"""

from __future__ import annotations

import numba
import numpy as np

from particles.analysis._base import Compute, as_tokens, result
from particles.analysis._pairs import pair_counts
from particles.analysis.large import large_observables, use_large
from particles.observables import compute_observables

#: default delta of the close-pair fraction.
DEFAULT_DELTA = 1e-3

#: default relative eigenvalue threshold of the span dimension.
DEFAULT_SPAN_TOL = 1e-6


def close_pair_fraction(x: np.ndarray, delta: float = DEFAULT_DELTA) -> np.ndarray:
    """Fraction of pairs with ``<x_i, x_j> > 1 - delta`` (compiled, streamed).

    Parameters
    ----------
    x : ndarray, shape (m, n, d)
        Systems of tokens.
    delta : float
        Closeness threshold, ``0 < delta <= 2``.

    Returns
    -------
    ndarray, shape (m,)
        Fractions in [0, 1] (1 when n = 1).
    """
    x = np.asarray(x)
    m, n, _ = x.shape
    if n < 2:
        return np.ones(m)
    return pair_counts(x, 1, threshold=1.0 - float(delta))[1] / (n * (n - 1) / 2)


def close_pair_fraction_reference(x: np.ndarray, delta: float = DEFAULT_DELTA) -> np.ndarray:
    """Plain NumPy twin of :func:`close_pair_fraction`."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[1]
    if n < 2:
        return np.ones(x.shape[0])
    iu = np.triu_indices(n, 1)
    return np.array([np.mean((xs @ xs.T)[iu] > 1.0 - delta) for xs in x])


def span_dimension(x: np.ndarray, tol: float = DEFAULT_SPAN_TOL) -> np.ndarray | int:
    """Numerical dimension of the span of the tokens.

    Parameters
    ----------
    x : array_like, shape (n, d) or (..., n, d)
        Tokens.
    tol : float
        Eigenvalues of ``X^T X / n`` above ``tol * trace`` count.

    Returns
    -------
    int or ndarray of int64, shape (...)
    """
    x = as_tokens(x)
    n = x.shape[-2]
    M = np.swapaxes(x, -1, -2) @ x / n
    w = np.linalg.eigvalsh(M)
    trace = np.trace(M, axis1=-2, axis2=-1)
    dim = np.count_nonzero(w > tol * trace[..., None], axis=-1).astype(np.int64)
    return int(dim) if dim.ndim == 0 else dim


class Scalars(Compute):
    """Energy, order parameter, span dimension and close-pair fraction.

    Parameters
    ----------
    beta : float
        Inverse temperature of the energy.
    masses : array_like, shape (n,), optional
        Token masses for energy and order parameter (ones by default).
    delta : float
        Threshold of ``close_pair_fraction`` (default 1e-3).
    span_tol : float
        Relative eigenvalue threshold of ``span_dimension`` (default 1e-6).

    Notes
    -----
    Definitions in :mod:`particles.analysis.scalars`.  Results are floats
    (ints) for one system (n, d) and arrays of shape (...) for (..., n, d).
    """

    NAMES = (
        "energy",
        "energy_normalized",
        "order_parameter",
        "min_inner_product",
        "mean_inner_product",
        "span_dimension",
        "close_pair_fraction",
    )

    def __init__(
        self,
        beta: float,
        *,
        masses: np.ndarray | None = None,
        delta: float = DEFAULT_DELTA,
        span_tol: float = DEFAULT_SPAN_TOL,
    ) -> None:
        super().__init__()
        if not (np.isfinite(beta) and beta >= 0):
            raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
        if not 0 < delta <= 2:
            raise ValueError(f"delta must be in (0, 2], got {delta!r}")
        if not 0 < span_tol < 1:
            raise ValueError(f"span_tol must be in (0, 1), got {span_tol!r}")
        self.beta = float(beta)
        self.masses = None if masses is None else np.asarray(masses, dtype=np.float64)
        self.delta = float(delta)
        self.span_tol = float(span_tol)

    def __repr__(self) -> str:
        return f"Scalars(beta={self.beta!r}, delta={self.delta!r}, span_tol={self.span_tol!r})"

    def compute(self, x: np.ndarray) -> Scalars:
        """Compute every scalar.

        Parameters
        ----------
        x : array_like, shape (n, d) or (..., n, d)
            Tokens.

        Returns
        -------
        Scalars
            ``self``.
        """
        x = as_tokens(x)
        lead = x.shape[:-2]
        n, d = x.shape[-2:]
        flat = np.ascontiguousarray(x.reshape(-1, n, d))
        masses = np.ones(n) if self.masses is None else self.masses
        if masses.shape != (n,):
            raise ValueError(f"masses must have shape ({n},), got {masses.shape}")
        if use_large(n, d):  # n >= 8192 on S^1, S^2: O(n log n), no pair loop
            obs = large_observables(flat, self.beta, masses)
        else:
            obs = compute_observables(flat, self.beta, masses, nthreads=numba.get_num_threads())
        obs["span_dimension"] = np.atleast_1d(span_dimension(flat, self.span_tol))
        obs["close_pair_fraction"] = close_pair_fraction(flat, self.delta)
        for name in self.NAMES:
            v = obs[name].reshape(lead)
            if not lead:
                v = int(v) if name == "span_dimension" else float(v)
            self._set(**{name: v})
        return self

    def as_dict(self) -> dict[str, np.ndarray | float]:
        """All results keyed by name."""
        return {name: self._get(name) for name in self.NAMES}

    energy = result("energy", "E_beta (inf above beta ~ 709; use energy_normalized).")
    energy_normalized = result("energy_normalized", "2 beta e^{-beta} E_beta in (0, 1].")
    order_parameter = result("order_parameter", "||sum_i m_i x_i|| / sum_i m_i.")
    min_inner_product = result("min_inner_product", "min_{i<j} <x_i, x_j>.")
    mean_inner_product = result("mean_inner_product", "mean_{i<j} <x_i, x_j>.")
    span_dimension = result("span_dimension", "Eigenvalues of X^T X / n above span_tol * trace.")
    close_pair_fraction = result(
        "close_pair_fraction", "Fraction of pairs i < j with <x_i, x_j> > 1 - delta."
    )
