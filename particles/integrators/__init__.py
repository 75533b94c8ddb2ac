"""Integrators and their registry.

Every integrator is a module with ``ORDER`` (its declared convergence order,
checked by the tests), ``STAGES`` (scratch arrays of shape (n, d) it needs) and
``make_step(drift)`` returning a compiled ``step(X, h, p, ws, S)`` that advances
one system in place.  Adaptive integrators also provide
``make_attempt(drift)``.  Adding one is one module plus one line below.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from particles.integrators import dopri5, euler, geodesic, rk4


@dataclass(frozen=True)
class Integrator:
    """A registered integrator."""

    name: str
    module: ModuleType
    description: str
    adaptive: bool = False

    @property
    def order(self) -> int:
        """Declared order of convergence."""
        return self.module.ORDER

    @property
    def stages(self) -> int:
        """Number of (n, d) scratch arrays a step needs."""
        return self.module.STAGES


#: name -> integrator; the single source of truth for ``integrator=``.
INTEGRATORS: dict[str, Integrator] = {
    i.name: i
    for i in (
        Integrator("euler", euler, "Transformer layer normalize(x + h y), order 1"),
        Integrator("rk4", rk4, "projected classical Runge-Kutta, order 4"),
        Integrator("geodesic", geodesic, "exponential-map midpoint on great circles, order 2"),
        Integrator("dopri5", dopri5, "adaptive Dormand-Prince 5(4), rtol/atol control",
                   adaptive=True),
    )
}
