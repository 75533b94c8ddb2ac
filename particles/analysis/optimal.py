"""The configurations the repulsive flow ``V = -I`` reaches: :func:`repulsive_optimum`.

With ``V = -I`` the dynamics decreases the interaction energy
``E_beta(X) = 1/(2 beta n^2) sum_ij exp(beta <x_i, x_j>)`` (DESIGN.md
section 2).  On the sphere ``exp(beta <x, y>) = e^beta exp(-beta |x - y|^2 / 2)``,
a completely monotone function of the squared distance for ``beta > 0``, so
the minimisers are known wherever a universally optimal configuration exists
(Cohn and Kumar, "Universally optimal distribution of points on spheres",
J. AMS 2007):

* ``n <= d + 1``: the regular simplex, every pair at ``<x_i, x_j> = -1/(n - 1)``
  (the smallest common inner product: ``|sum x_i|^2 >= 0``);
* ``n = 2 d``: the cross-polytope ``{+-e_1, ..., +-e_d}``, each token with
  one antipode (``-1``) and ``2 d - 2`` orthogonal ones (``0``).

At ``beta = 0`` the energy is ``|sum x_i|^2 / (2 n^2)`` up to constants and
both are among its (many) minimisers.  Other ``(n, d)`` have no closed form
here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["OptimalConfiguration", "repulsive_optimum"]


@dataclass(frozen=True)
class OptimalConfiguration:
    """A known minimiser of the exp interaction energy of ``n`` tokens on S^{d-1}.

    Attributes
    ----------
    name : str
        ``"regular simplex"`` or ``"cross-polytope"``.
    n, d : int
        Tokens and ambient dimension.
    inner_products : ndarray, shape (n (n - 1) / 2,)
        The pair inner products ``<x_i, x_j>``, ``i < j``, sorted ascending.
    """

    name: str
    n: int
    d: int
    inner_products: np.ndarray

    def energy(self, beta: float) -> float:
        """``E_beta = 1/(2 beta n^2) sum_ij exp(beta <x_i, x_j>)`` of the configuration
        (the ``energy`` observable of SA/USA with the edp kernel, ``Q = K = I``, unit
        masses); at ``beta = 0`` its limit up to constants, ``1/(2 n^2) sum_ij <x_i, x_j>``.

        Parameters
        ----------
        beta : float
            Inverse temperature (>= 0).

        Returns
        -------
        float
        """
        n, rho = self.n, self.inner_products
        if beta == 0:
            return float((n + 2.0 * rho.sum()) / (2.0 * n * n))
        return float((n * np.exp(beta) + 2.0 * np.exp(beta * rho).sum()) / (2.0 * beta * n * n))

    def energy_normalized(self, beta: float) -> float:
        """``2 beta e^{-beta} E_beta = (1/n^2) sum_ij exp(beta (<x_i, x_j> - 1))``, in (0, 1]
        (the ``energy_normalized`` observable; finite for any beta).

        Parameters
        ----------
        beta : float
            Inverse temperature (>= 0).

        Returns
        -------
        float
        """
        n, rho = self.n, self.inner_products
        return float((n + 2.0 * np.exp(beta * (rho - 1.0)).sum()) / (n * n))

    def positions(self) -> np.ndarray:
        """One instance of the configuration, shape (n, d), unit rows.

        The simplex is the centred basis ``e_i - (1/n) sum e_j`` of R^n
        normalised and written in an orthonormal basis of its (n - 1)-dimensional
        span; the cross-polytope is ``e_1, -e_1, ..., e_d, -e_d``.
        """
        n, d = self.n, self.d
        x = np.zeros((n, d))
        if self.name == "cross-polytope":
            for k in range(d):
                x[2 * k, k], x[2 * k + 1, k] = 1.0, -1.0
            return x
        if n == 1:
            x[0, 0] = 1.0
            return x
        centred = np.eye(n) - 1.0 / n
        # the first n - 1 right singular directions span the centred vectors
        u, s, _ = np.linalg.svd(centred)
        coords = u[:, : n - 1] * s[: n - 1]
        x[:, : n - 1] = coords / np.linalg.norm(coords, axis=1, keepdims=True)
        return x


def repulsive_optimum(n: int, d: int) -> OptimalConfiguration:
    """The energy minimiser of ``n`` tokens on S^{d-1} that the repulsive flow
    (``V = -I``) tends to: the regular simplex (``n <= d + 1``) or the cross-polytope
    (``n = 2 d``) (see the module docstring).

    Parameters
    ----------
    n : int
        Number of tokens (>= 1).
    d : int
        Ambient dimension (>= 2).

    Returns
    -------
    OptimalConfiguration

    Raises
    ------
    ValueError
        ``d + 1 < n`` and ``n != 2 d`` (no closed form), or ``n < 1``, ``d < 2``.
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if isinstance(d, bool) or int(d) != d or d < 2:
        raise ValueError(f"d must be an integer >= 2, got {d!r}")
    n, d = int(n), int(d)
    pairs = n * (n - 1) // 2
    if n <= d + 1:
        rho = np.full(pairs, -1.0 / (n - 1) if n > 1 else 0.0)
        return OptimalConfiguration("regular simplex", n, d, rho)
    if n == 2 * d:
        rho = np.zeros(pairs)
        rho[:d] = -1.0  # d antipodal pairs, the others orthogonal
        return OptimalConfiguration("cross-polytope", n, d, rho)
    raise ValueError(f"no known optimal configuration of n = {n} tokens in d = {d}: "
                     f"the regular simplex needs n <= d + 1 = {d + 1}, the cross-polytope "
                     f"n = 2 d = {2 * d}")
