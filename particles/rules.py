"""The rules of a run, in the order they are checked: each registry entry's own.

:class:`particles.config.SimulationConfig` checks every value alone (numbers,
names, matrices; :mod:`particles.values`), then runs the ``check(spec)`` of
each entry the run names (:class:`particles.protocols.Entry`): its initial
condition, integrator, kernel, normalisation, model, summation and
observers, and the rules between entries (:data:`WEIGHTS`, :data:`COLLAPSE`,
:data:`MERGE_EVENTS`).  Resolving what the run leaves open (the integrator
with noise, ``summation="auto"``, the default observers) is here too: the
registries are loaded with the first validation, not when the configuration
module is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from particles.errors import invalid
from particles.fields import KERNELS, NORMALIZATIONS, USA_SCALES
from particles.fields.frequencies import freeze_omega
from particles.fields.summation import SUMMATIONS
from particles.fields.weights import QK_WEIGHTS, V_WEIGHTS, WEIGHT_DRAWS, is_random
from particles.integrators import INTEGRATORS, NOISE_DEFAULT
from particles.models import MODELS, collapse
from particles.observables import OBSERVERS, default_observers
from particles.protocols import Entry, RunSpec
from particles.sphere import INITIAL_CONDITIONS
from particles.values import parse_init

__all__ = ["CHOICES", "COLLAPSE", "MERGE_EVENTS", "WEIGHTS", "Rule", "default_integrator",
           "default_observables", "entries", "freeze_omega", "observers", "resolved_summation"]

#: configuration field -> the registry its value is a key of.
CHOICES: dict[str, Mapping[str, Any]] = {
    "model": MODELS, "kernel": KERNELS, "usa_scale": USA_SCALES, "integrator": INTEGRATORS,
    "weights": QK_WEIGHTS, "value_weights": V_WEIGHTS, "normalization": NORMALIZATIONS,
    "weight_draws": WEIGHT_DRAWS, "summation": SUMMATIONS, "observables": OBSERVERS,
}


@dataclass(frozen=True)
class Rule:
    """A rule between entries (an :class:`~particles.protocols.Entry` of no registry)."""

    name: str
    check: Callable[[RunSpec], None]


def _weights_rules(spec: RunSpec) -> None:
    """Random ensembles replace the given matrices; only random draws have layers
    or differ per system."""
    if not QK_WEIGHTS[spec.weights].uses_given and (spec.Q != "identity"
                                                     or spec.K != "identity"):
        raise invalid("weights", "'given' when Q or K is set (a random ensemble replaces "
                      "them)", spec.weights)
    if not V_WEIGHTS[spec.value_weights].uses_given and spec.V != "identity":
        raise invalid("value_weights", "'given' when V is set (a random ensemble replaces "
                      "it)", spec.value_weights)
    if spec.layer_time is not None and not is_random(spec):
        raise invalid("layer_time", "None unless weights or value_weights is a random "
                      "ensemble (layers redraw them)", spec.layer_time)
    drawn = is_random(spec) or (spec.model == "kuramoto" and isinstance(spec.omega, str))
    if spec.weight_draws != "shared" and not drawn:
        raise invalid("weight_draws", "'shared' (the default) unless weights or value_weights "
                      "is a random ensemble, or omega a distribution for model='kuramoto' "
                      "(only random draws can differ per system)", spec.weight_draws)


def _merge_events_rules(spec: RunSpec) -> None:
    """Merge events are located by bisection, which integrates a stretch again
    in other steps: a noise path drawn per step would change.  (An ensemble's
    systems are located one by one, each alone.)"""
    if not spec.merge_events:
        return
    if spec.noise > 0:
        raise invalid("merge_events", "False with noise (the bisection integrates a stretch "
                      "again in other steps, which draws another noise path)", True)
    if INTEGRATORS[spec.integrator].stochastic:
        raise invalid("merge_events", f"False with the stochastic integrator "
                      f"{spec.integrator!r} (merge events are located with a deterministic "
                      "one: rk4, dopri5, ...)", True)


#: the weight ensembles' rules (given matrices, layers, per-system draws).
WEIGHTS = Rule("weights", _weights_rules)
#: ``collapse_tol`` set only where collapsing is exact (:func:`particles.models.collapse.check`).
COLLAPSE = Rule("collapse_tol", collapse.check)
#: merge events of deterministic systems.
MERGE_EVENTS = Rule("merge_events", _merge_events_rules)


def entries(spec: RunSpec) -> tuple[Entry, ...]:
    """The entries (and rules) a run's values name, in the order they are checked."""
    name, _ = parse_init(spec.init)
    return (INITIAL_CONDITIONS[name], INTEGRATORS[spec.integrator], KERNELS[spec.kernel],
            WEIGHTS, NORMALIZATIONS[spec.normalization], MODELS[spec.model],
            SUMMATIONS[spec.summation], COLLAPSE, MERGE_EVENTS)


def observers(spec: RunSpec) -> tuple[Entry, ...]:
    """The observers a run records (its ``observables``, resolved)."""
    return tuple(OBSERVERS[k] for k in spec.observables)


def default_integrator(noise: float) -> str:
    """The integrator of a run that names none: ``rk4``, or
    :data:`particles.integrators.NOISE_DEFAULT` with noise."""
    return NOISE_DEFAULT if noise > 0 else "rk4"


def resolved_summation(spec: RunSpec) -> str:
    """The concrete summation of a checked run (``auto`` chooses, see
    :data:`particles.fields.summation.SUMMATIONS`)."""
    return SUMMATIONS[spec.summation].choose(spec)


def default_observables(spec: RunSpec) -> tuple[str, ...]:
    """The observers of a run that chooses none
    (:func:`particles.observables.default_observers`)."""
    return default_observers(spec.n, spec.d, spec.beta, spec.summation)
