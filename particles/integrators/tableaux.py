"""Public Butcher tableaux: the coefficients of the Runge-Kutta pairs, written once.

The compiled stepper (:mod:`particles.integrators.dopri5`) and the
mean-field PDE solver (:mod:`particles.meanfield.solver`, a Lawson
integrating-factor form of the same pair) read their coefficients here, so
both integrate with the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DOPRI5", "EmbeddedTableau"]


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
        s = len(self.a)
        out = np.zeros((s, s))
        for i, row in enumerate(self.a):
            out[i, :len(row)] = row
        return out


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
