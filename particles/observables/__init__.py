"""Observers: what is recorded at every save point, and the registry that names them.

:data:`ALL_OBSERVERS` maps a name to an :class:`Observer` (its cost class,
the datasets it produces, the settings it needs and its compute function
``compute(X, ctx)``, :mod:`particles.observables.base`).  A configuration's
``observables`` (``simulate(..., observables=[...])``, ``--observables``)
chooses among :data:`OBSERVERS`, those a run can record;
:func:`default_observers` picks them when not given.  The sweep records the
others (close pairs for its deltas, clusters for its eps, the energy of
their pass), built for a run with their settings by :func:`observation`.

* ``pairwise`` (:mod:`~particles.observables.pairwise`): energy, normalised
  energy, order parameter, minimum and mean inner product, one fused pass
  over pairs (O(n^2), O(n log n) on the circle at beta = 0); the energy is
  that of the kernel that ran where one is defined
  (:mod:`~particles.observables.energy`);
* ``order`` (:mod:`~particles.observables.order`, the one home of the order
  parameter): ``order_parameter`` and ``mean_inner_product`` alone, in O(n d),
  the default for large runs, where an O(n^2) pass at every frame would cost
  as much as the dynamics;
* ``close_pairs``, ``clusters``, ``pair_energy``
  (:mod:`~particles.observables.pairs`): the sweep's statistics, one fused
  pass however many of them are chosen.

Adaptive integrators also record ``accepted_steps`` and ``rejected_steps``
(the engine's step counters, not an observer of the state).  Adding an
observer is one compute function plus one line in :data:`ALL_OBSERVERS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from particles.fields.summation import SUMMATIONS
from particles.observables import spectral_energy
from particles.observables.base import Context, Observer
from particles.observables.energy import (
    DEFAULT_ENERGY,
    EnergyDefinition,
    energy_definition,
    kernel_energy,
    kernel_energy_reference,
)
from particles.observables.order import (
    OrderParameter,
    order_observables,
    order_observer,
    order_parameter,
    order_parameter_from_positions,
)
from particles.observables.pairs import pair_observer
from particles.observables.pairwise import (
    CIRCLE_MIN_N,
    NAMES,
    PAIR_CHUNKS,
    compute_observables,
    observables_reference,
    pairwise_observer,
)
from particles.protocols import RunSpec

__all__ = [
    "ALL_OBSERVERS",
    "CIRCLE_MIN_N",
    "DEFAULT_ENERGY",
    "NAMES",
    "OBSERVERS",
    "PAIRWISE_DEFAULT_MAX_N",
    "PAIR_CHUNKS",
    "SPECTRAL_PAIRWISE_MAX_N",
    "Context",
    "EnergyDefinition",
    "Observation",
    "Observer",
    "OrderParameter",
    "compute_observables",
    "default_observers",
    "energy_definition",
    "kernel_energy",
    "kernel_energy_reference",
    "observables_reference",
    "observation",
    "observe",
    "order_observables",
    "order_parameter",
    "order_parameter_from_positions",
]


def _energy_setup(spec: RunSpec) -> dict[str, Any]:
    """The energy the run defines (:func:`energy_definition`), found once per run."""
    return {"energy": energy_definition(spec)}


#: name -> observer; the single source of truth for observer names (a run
#: chooses among :data:`OBSERVERS`, the entries with ``per_run``).
ALL_OBSERVERS: dict[str, Observer] = {o.name: o for o in (
    Observer("pairwise", "energy, normalised energy, order parameter, min and mean inner "
             "product, by one pass over pairs (O(n log n) on the circle at beta = 0)",
             "O(n^2)", NAMES, pairwise_observer, setup=_energy_setup),
    Observer("order", "order parameter and mean inner product (from the token sums)",
             "O(n)", ("order_parameter", "mean_inner_product"), order_observer),
    Observer("spectral_energy", "energy and normalised energy through the spectral series "
             "(zonal kernels on the circle and S^2, beta > 0)", "O(n)",
             ("energy", "energy_normalized"), spectral_energy.compute,
             setup=spectral_energy.setup, rules=spectral_energy.check),
    Observer("close_pairs", "pairs closer than 1 - delta in inner product, per delta",
             "O(n^2)", ("pair_counts",), pair_observer, settings=("deltas",), per_run=False),
    Observer("clusters", "clusters of the components detector at linking distance eps",
             "O(n^2)", ("cluster_count",), pair_observer, settings=("eps",), per_run=False),
    Observer("pair_energy", "the energy, summed by the close-pair pass", "O(n^2)",
             ("energy",), pair_observer, setup=_energy_setup, per_run=False),
)}

#: the observers a run's configuration chooses by name (``observables=``).
OBSERVERS: dict[str, Observer] = {k: o for k, o in ALL_OBSERVERS.items() if o.per_run}

#: the pairwise set is recorded by default up to this many tokens (beyond,
#: one O(n^2) pass per frame costs as much as many steps of an O(n) field).
PAIRWISE_DEFAULT_MAX_N = 4096
#: the same with ``summation="spectral"``.
SPECTRAL_PAIRWISE_MAX_N = 512


def default_observers(n: int, d: int, beta: float,
                      summation: str = "direct") -> tuple[str, ...]:
    """The observers of a run that does not choose them.

    ``("pairwise",)`` when ``n <= PAIRWISE_DEFAULT_MAX_N`` (``SPECTRAL_PAIRWISE_MAX_N``
    with the spectral summation, whose O(n K) steps an O(n^2) observer would
    undo), or on the circle at ``beta = 0`` (``d = 2``, where the pairwise set
    costs O(n log n)); ``("order",)`` (O(n)) otherwise, with the energy
    through the spectral series (``spectral_energy``, O(n K)) for spectral runs.
    Ask for ``pairwise`` to record the energy of a larger direct run.
    """
    series = SUMMATIONS[summation].series
    cap = SPECTRAL_PAIRWISE_MAX_N if series else PAIRWISE_DEFAULT_MAX_N
    if n <= cap or (d == 2 and beta == 0.0):
        return ("pairwise",)
    if series and beta > 0:
        return ("order", "spectral_energy")
    return ("order",)


def _chosen(names: Sequence[str]) -> list[Observer]:
    """The observers named, in registry order."""
    unknown = sorted(set(names) - set(ALL_OBSERVERS))
    if unknown:
        raise ValueError(f"observers must be among {', '.join(ALL_OBSERVERS)}, got "
                         f"{', '.join(map(repr, unknown))}")
    return [o for k, o in ALL_OBSERVERS.items() if k in set(names)]


def observe(names: Sequence[str], X: np.ndarray, ctx: Context) -> dict[str, np.ndarray]:
    """The values of the chosen observers for a stack of systems.

    Parameters
    ----------
    names : sequence of str
        Keys of :data:`ALL_OBSERVERS`.
    X : ndarray, shape (batch, n, d)
    ctx : Context
        Masses, beta and the chosen observers' settings (see :func:`observation`).

    Returns
    -------
    dict of str to ndarray, leading axis batch
        Every dataset of the chosen observers, and only those, in registry
        order.  A dataset produced by two chosen observers is computed once,
        by the first in registry order (so the result does not depend on the
        order of ``names``); an observer whose datasets are all produced by an
        earlier one (alone, or by a pass they share) is not evaluated.
    """
    chosen = _chosen(names)
    wanted = {k for o in chosen for k in o.datasets}
    out: dict[str, np.ndarray] = {}
    for obs in chosen:
        if all(k in out for k in obs.datasets):
            continue
        for k, v in obs.compute(X, ctx).items():
            if k in wanted:
                out.setdefault(k, v)
    return {k: out[k] for o in chosen for k in o.datasets}


@dataclass(frozen=True)
class Observation:
    """Chosen observers bound to their context: ``observation(X) -> values``.

    Attributes
    ----------
    names : tuple of str
        Keys of :data:`ALL_OBSERVERS`.
    context : Context
    """

    names: tuple[str, ...]
    context: Context

    def __call__(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """:func:`observe` of positions ``X`` (batch, n, d)."""
        return observe(self.names, X, self.context)


def observation(names: Sequence[str], spec: RunSpec, *, nthreads: int = 1,
                settings: Mapping[str, Any] | None = None) -> Observation:
    """Observers of a run, with their context made once.

    Parameters
    ----------
    names : sequence of str
        Keys of :data:`ALL_OBSERVERS` (a configuration's ``observables``).
    spec : RunSpec
        The run: masses, beta, and what each observer's ``setup`` reads.
    nthreads : int
        Threads available.
    settings : mapping, optional
        The observers' own settings (``deltas`` for ``close_pairs``, ``eps``
        for ``clusters``); they override what a ``setup`` derived.

    Raises
    ------
    ValueError
        An unknown name, or a setting a chosen observer needs is missing.
    """
    chosen = _chosen(names)
    merged: dict[str, Any] = {}
    for obs in chosen:
        if obs.setup is not None:
            merged.update(obs.setup(spec))
    merged.update(settings or {})
    missing = [f"{o.name} needs {s!r}" for o in chosen for s in o.settings if s not in merged]
    if missing:
        raise ValueError("observer settings missing: " + "; ".join(missing))
    ctx = Context(masses=spec.mass_array(), beta=float(spec.beta), nthreads=nthreads,
                  spec=spec, settings=merged)
    return Observation(tuple(o.name for o in chosen), ctx)
