"""Integrators and their registry.

Every integrator is a module with

* ``ORDER``: its declared (weak, or deterministic) convergence order, checked
  by the tests;
* ``STRONG_ORDER``: its declared strong order for stochastic steppers, None
  for deterministic ones;
* ``SPACES``: the spaces it works in (``"sphere"``: rows on the unit sphere;
  ``"flat"``: plain coordinates, the circle's angle form);
* ``STAGES``: the scratch arrays of shape (n, d) a step needs;
* ``EVALUATIONS``: the drift evaluations of one step (what a run costs);
* ``make_step(drift, space)`` returning a compiled
  ``step(X, t, h, p, ws, S, key, counter)`` that advances one system X (n, d)
  in place from time ``t`` by ``h``; ``key`` ((2,) uint64, the system's noise
  key) and ``counter`` (the global step counter) address the counter-based
  noise of :mod:`particles.integrators.noise`.

Adaptive integrators also provide ``make_attempt(drift, space)``
(``attempt(X, t, h, p, ws, S, rtol, atol, key, counter) -> err`` writing the
candidate to ``S[STAGES - 1]``), ``make_start(drift, space)`` and
``make_accept(space)`` (see :mod:`particles.integrators.dopri5`).  Adding an
integrator (a stochastic stepper included) is one module plus one line below.

An entry with ``phases`` (``auto``, :mod:`particles.integrators.auto`) steps
nothing itself: the engine runs its phases in turn, choosing at save points
(:func:`particles.engine.integrate`); its module declares the same constants
(``ORDER``, ``SPACES``, ...) and the rule that chooses.

Stochastic steppers (``STRONG_ORDER`` set) draw their normals with
:func:`particles.integrators.noise.fill_normals` from the ``key`` and
``counter`` they receive, read their amplitude ``sigma`` from the last entry
of ``p`` and call the drift with ``p[:-1]`` (the engine appends ``sigma`` to
the field's parameters for them, from the problem's noise);
``tests/integrators/test_noise.py`` runs such an Euler-Maruyama stepper
through the runners.  Time-dependent fields (random weights redrawn per
layer) stay segments of the save-point loop (:func:`particles.engine.march`):
every step also receives ``t``, so a stepper for an explicitly time-dependent
drift needs no new runner.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from particles.errors import invalid
from particles.integrators import auto, dopri5, em, euler, geodesic, heun, rk4, sdirk4
from particles.integrators._rows import SPACES
from particles.protocols import RunSpec

__all__ = ["INTEGRATORS", "NOISE_DEFAULT", "SPACES", "Integrator", "steppers",
           "stochastic_integrators"]


@dataclass(frozen=True)
class Integrator:
    """A registered integrator."""

    name: str
    module: ModuleType
    description: str
    adaptive: bool = False
    #: whether its stage states leave the sphere (``x + h k``, normalised only at
    #: the end of the step): a mean field fed by them is corrupted when a fast
    #: token inflates its stage vectors (see ``particles.engine.check_step_size``)
    off_sphere_stages: bool = False
    #: the registered integrators it runs in turn, choosing at save points
    #: (``auto``: :mod:`particles.integrators.auto`); empty for a stepper
    phases: tuple[str, ...] = ()

    @property
    def order(self) -> int:
        """Declared order of convergence."""
        return self.module.ORDER

    @property
    def strong_order(self) -> float | None:
        """Declared strong order of a stochastic stepper (None: deterministic)."""
        return self.module.STRONG_ORDER

    @property
    def stochastic(self) -> bool:
        """Whether steps draw noise (from the key and counter they receive)."""
        return self.module.STRONG_ORDER is not None

    def strong_order_in(self, space: str) -> float | None:
        """Declared strong order in ``space`` (``STRONG_ORDERS`` where the module
        gives one per space: additive noise on the angle form does better)."""
        return getattr(self.module, "STRONG_ORDERS", {}).get(space, self.module.STRONG_ORDER)

    @property
    def spaces(self) -> tuple[str, ...]:
        """The spaces the integrator works in (a subset of :data:`SPACES`)."""
        return tuple(self.module.SPACES)

    @property
    def stages(self) -> int:
        """Number of (n, d) scratch arrays a step needs."""
        return self.module.STAGES

    @property
    def evaluations(self) -> int:
        """Drift evaluations per step (the cost a run's estimate counts; an adaptive
        step's at its stages, rejected attempts aside)."""
        return self.module.EVALUATIONS

    def check(self, spec: RunSpec) -> None:
        """Refuse a run with ``noise > 0`` unless it draws noise (field ``integrator``)."""
        if spec.noise > 0 and not self.stochastic:
            why = "adaptive steps do not apply to an SDE" if self.adaptive else "it draws no noise"
            names = " or ".join(repr(k) for k in stochastic_integrators())
            raise invalid("integrator", f"a fixed-step stochastic integrator ({names}) when "
                          f"noise > 0 ({self.name!r}: {why})", self.name)


#: name -> integrator; the single source of truth for ``integrator=``.
INTEGRATORS: dict[str, Integrator] = {
    i.name: i
    for i in (
        Integrator("euler", euler, "Transformer layer normalize(x + h y), order 1"),
        Integrator("rk4", rk4, "projected classical Runge-Kutta, order 4",
                   off_sphere_stages=True),
        Integrator("geodesic", geodesic, "exponential-map midpoint on great circles, order 2"),
        Integrator("dopri5", dopri5, "adaptive Dormand-Prince 5(4), rtol/atol control",
                   adaptive=True, off_sphere_stages=True),
        Integrator("sdirk4", sdirk4, "L-stable implicit SDIRK 4(3), Jacobian-free Newton-Krylov: "
                   "steps that grow on metastable plateaus, clusters contracted to round-off",
                   adaptive=True, off_sphere_stages=True),
        Integrator("auto", auto, "dopri5 while clusters form, sdirk4 from the save point at "
                   "which the run turns stiff (metastable plateaus)",
                   adaptive=True, off_sphere_stages=True, phases=auto.PHASES),
        Integrator("em", em, "geodesic Euler-Maruyama for noise > 0, strong order 1/2 "
                   "(1 on the circle's angles)"),
        Integrator("heun", heun, "stochastic Heun on great circles, the default with noise "
                   "> 0: strong order 1/2 (1 on the circle's angles), order 2 without noise"),
    )
}


#: the integrator of a run with ``noise > 0`` that names none.
NOISE_DEFAULT = "heun"


def steppers() -> tuple[str, ...]:
    """Names of the registered integrators that step themselves (each has
    ``make_step``; not those that choose among others at save points)."""
    return tuple(k for k, v in INTEGRATORS.items() if not v.phases)


def stochastic_integrators() -> tuple[str, ...]:
    """Names of the registered stochastic steppers (those that take ``noise > 0``)."""
    return tuple(k for k, v in INTEGRATORS.items() if v.stochastic)
