"""Public Butcher tableaux: the coefficients of the Runge-Kutta pairs, written once.

The compiled steppers (:mod:`particles.integrators.dopri5`,
:mod:`particles.integrators.sdirk4`) and the
mean-field PDE solver (:mod:`particles.meanfield.solver`, a Lawson
integrating-factor form of the same pair) read their coefficients here, so
both integrate with the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DOPRI5", "SDIRK4", "DiagonallyImplicitTableau", "EmbeddedTableau"]


def _padded(rows: tuple[tuple[float, ...], ...]) -> np.ndarray:
    """Lower-triangular rows of growing length as a zero-padded square array."""
    out = np.zeros((len(rows), len(rows)))
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out


@dataclass(frozen=True)
class EmbeddedTableau:
    """An explicit embedded Runge-Kutta pair whose last stage is evaluated at the
    new solution (first same as last).

    Attributes
    ----------
    name : str
    order : int
        Order of the propagated solution (the error estimate's is one less).
    c : tuple of float, shape (stages,)
        Nodes; the last one (1) belongs to the stage at the new solution.
    a : tuple of tuple of float
        Rows of the strictly lower-triangular matrix, row ``i`` holding the
        ``i`` weights of the earlier stages (``a[0]`` is empty); one row fewer
        than the stages (the last stage's row is ``b``).
    b : tuple of float, shape (stages - 1,)
        Weights of the propagated solution.
    e : tuple of float, shape (stages,)
        ``b - bhat`` of every stage (the last stage's ``b`` is 0): the local
        error estimate is ``h sum_i e_i k_i``.
    """

    name: str
    order: int
    c: tuple[float, ...]
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    e: tuple[float, ...]

    @property
    def stages(self) -> int:
        """Number of stages, the one at the new solution included."""
        return len(self.c)

    def a_matrix(self) -> np.ndarray:
        """``a`` as a zero-padded square array, shape (stages - 1, stages - 1)."""
        return _padded(self.a)


#: Dormand and Prince, "A family of embedded Runge-Kutta formulae", J. Comput.
#: Appl. Math. 6, 1980: the 5(4) pair of ``integrator="dopri5"`` and of the
#: mean-field solver.
DOPRI5 = EmbeddedTableau(
    name="dopri5",
    order=5,
    c=(0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0),
    a=(
        (),
        (1 / 5,),
        (3 / 40, 9 / 40),
        (44 / 45, -56 / 15, 32 / 9),
        (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
        (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    ),
    b=(35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
    e=(71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40),
)


@dataclass(frozen=True)
class DiagonallyImplicitTableau:
    """A singly diagonally implicit Runge-Kutta pair (SDIRK), stiffly accurate.

    Attributes
    ----------
    name : str
    order : int
        Order of the propagated solution (the embedded one's is one less).
    gamma : float
        The diagonal of ``a``.
    a : tuple of tuple of float
        Rows of the lower-triangular matrix, row ``i`` holding ``i + 1``
        weights (the last is ``gamma``); the last row is ``b`` (stiffly
        accurate: the last stage is the solution, ``R(inf) = 0``).
    e : tuple of float, shape (stages,)
        ``b - bhat``: the local error estimate is ``h sum_i e_i k_i``.
    """

    name: str
    order: int
    gamma: float
    a: tuple[tuple[float, ...], ...]
    e: tuple[float, ...]

    @property
    def stages(self) -> int:
        """Number of (implicit) stages."""
        return len(self.a)

    @property
    def b(self) -> tuple[float, ...]:
        """Weights of the propagated solution (the last row of ``a``)."""
        return self.a[-1]

    @property
    def c(self) -> tuple[float, ...]:
        """Nodes, the row sums of ``a``."""
        return tuple(sum(row) for row in self.a)

    def a_matrix(self) -> np.ndarray:
        """``a`` as a zero-padded square array, shape (stages, stages)."""
        return _padded(self.a)


#: Hairer and Wanner, *Solving Ordinary Differential Equations II*, IV.6,
#: eq. (6.16): the L-stable 5-stage SDIRK of order 4 with an embedded order-3
#: solution ``bhat = (59/48, -17/96, 225/32, -85/12, 0)``; ``integrator="sdirk4"``.
SDIRK4 = DiagonallyImplicitTableau(
    name="sdirk4",
    order=4,
    gamma=1 / 4,
    a=(
        (1 / 4,),
        (1 / 2, 1 / 4),
        (17 / 50, -1 / 25, 1 / 4),
        (371 / 1360, -137 / 2720, 15 / 544, 1 / 4),
        (25 / 24, -49 / 48, 125 / 16, -85 / 12, 1 / 4),
    ),
    e=(25 / 24 - 59 / 48, -49 / 48 + 17 / 96, 125 / 16 - 225 / 32, 0.0, 1 / 4),
)
