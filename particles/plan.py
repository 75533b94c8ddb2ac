"""One plan per run: what a validated configuration resolves to, computed once.

:func:`plan` turns a configuration into a :class:`Plan`: the integrator, where
the run saves (:class:`Saves`, as diffrax's ``SaveAt``), how its steps are
controlled (:class:`Controller`), what it watches for (:class:`Watch`) and
the derived :class:`Facts` (the summation and its truncation degree, whether
coincident tokens collapse, the energy's definition, the frames expected,
the steps, the drift evaluations per step and their cost at the reference
costs of :mod:`particles.fields.costs`).  Facts are computed here
only: the file layer records them, the estimates and probes read them.
Each fact is computed when first asked (a file's header needs no energy
definition), then kept.

Layer 3, beside the configuration: it reads a
:class:`~particles.protocols.RunSpec` and the registries below it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from particles.fields import costs
from particles.fields.summation import SUMMATIONS
from particles.integrators import INTEGRATORS
from particles.models import MODELS, collapse
from particles.observables import energy_definition
from particles.protocols import RunSpec

__all__ = ["Controller", "Facts", "Plan", "Saves", "Start", "Watch", "facts", "plan"]


@dataclass(frozen=True)
class Saves:
    """Where a run stops to record a frame (diffrax's ``SaveAt``).

    Attributes
    ----------
    times : ndarray, shape (frames,)
        Increasing save times, the first the start of the run.
    observables : tuple of str
        The observers recorded at every frame (:data:`particles.observables.OBSERVERS`).
    observers : callable, optional
        ``observers(X) -> {name: (batch, ...) array}`` of the positions at every
        save point: the observers built for the threads that run them
        (:func:`particles.observables.observation`; the engine builds them).
    """

    times: np.ndarray
    observables: tuple[str, ...] = ()
    observers: Callable[[np.ndarray], dict[str, np.ndarray]] | None = None


@dataclass(frozen=True)
class Start:
    """Where an integration starts: a save point of a run, or of a resumed one.

    Attributes
    ----------
    index : int
        Index of the save time the state is at; with 0 the first frame is
        yielded too.
    step : int
        Step counter at that frame.
    step_counts : ndarray, shape (batch, 2), optional
        Accepted and rejected adaptive steps up to that frame (zeros when None).
    """

    index: int = 0
    step: int = 0
    step_counts: np.ndarray | None = None


@dataclass(frozen=True)
class Controller:
    """How the steps are sized (diffrax's step-size controller).

    Attributes
    ----------
    dt : float
        Fixed step, or the initial step of an adaptive integrator.
    max_steps : int
        Bound on the steps (fixed) or attempts (adaptive) of the run.
    rtol, atol : float
        Adaptive tolerances.
    carry_step : bool
        Adaptive: the step proposed at the end of an interval starts the next
        (instead of ``min(dt, interval)``).
    """

    dt: float
    max_steps: int = 10**9
    rtol: float = 1e-6
    atol: float = 1e-9
    carry_step: bool = False

    @classmethod
    def of(cls, spec: RunSpec) -> Controller:
        """The controller of a configuration (its ``dt``, ``max_steps``, ``rtol``, ``atol``)."""
        return cls(dt=float(spec.dt), max_steps=int(spec.max_steps), rtol=float(spec.rtol),
                   atol=float(spec.atol))


@dataclass(frozen=True)
class Watch:
    """What a run watches for between its frames (diffrax's ``Event``).

    Attributes
    ----------
    clusters : bool
        Whether every frame carries its cluster counts (a stop at a cluster
        count, or merge events, need them).
    locate : bool
        Whether the drops of the count between frames are located by bisection
        (merge events; deterministic integrators, system by system).
    until_clusters : int, optional
        Stop at the first frame with at most this many clusters.
    max_wall : float, optional
        Pause at the first frame after this many seconds.
    """

    clusters: bool = False
    locate: bool = False
    until_clusters: int | None = None
    max_wall: float | None = None

    @classmethod
    def of(cls, spec: RunSpec) -> Watch:
        """The watch of a configuration (its stops and merge events)."""
        return cls(clusters=spec.until_clusters is not None or bool(spec.merge_events),
                   locate=bool(spec.merge_events), until_clusters=spec.until_clusters,
                   max_wall=spec.max_wall)


class Facts:
    """What a run's configuration implies, each computed on first use and kept.

    Parameters
    ----------
    spec : RunSpec
        A validated configuration (its summation resolved).
    """

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec

    @property
    def summation(self) -> str:
        """The summation the run uses (``auto`` resolved at validation)."""
        return self.spec.summation

    @property
    def series(self) -> bool:
        """Whether its attention sums are a truncated series (O(n K) per drift)."""
        return SUMMATIONS[self.summation].series

    @cached_property
    def degree(self) -> int | None:
        """The series' truncation degree (K on the circle, L on S^2), None for
        direct sums: ``summation_degree`` of a file."""
        degree = SUMMATIONS[self.summation].degree
        return None if degree is None else int(degree(self.spec))

    @cached_property
    def collapses(self) -> bool:
        """Whether coincident tokens are integrated as one (:mod:`particles.models.collapse`)."""
        return self.spec.collapse_tol > 0 and collapse.refusal(self.spec) is None

    @cached_property
    def energy(self) -> Any:
        """The energy the observers record (:func:`particles.observables.energy_definition`)."""
        return energy_definition(self.spec)

    @property
    def frames(self) -> int:
        """The frames of the complete run (counted, the times not built)."""
        return self.spec.frame_count()

    @property
    def evaluations(self) -> int:
        """Drift evaluations per step of the integrator."""
        return INTEGRATORS[self.spec.integrator].evaluations

    @property
    def adaptive(self) -> bool:
        """Whether the integrator sizes its steps (their count follows the dynamics)."""
        return INTEGRATORS[self.spec.integrator].adaptive

    @property
    def steps(self) -> int:
        """Steps of one system to ``T``: a fixed step's count, an adaptive
        integrator's at its initial ``dt`` (a bound: they usually grow far longer)."""
        return math.ceil(self.spec.T / self.spec.dt) if self.spec.T > 0 else 0

    @property
    def pass_cost(self) -> float:
        """Seconds of one pass over the run's pairs of one system on one core
        at the reference costs (an O(n^2) observer's frame, a sweep's statistics)."""
        return costs.pairs(self.spec.n, self.spec.d)

    def evaluation_cost(self, n: int | None = None) -> float:
        """Seconds of one drift evaluation of ``n`` tokens (default the run's)
        of one system on one core at the reference costs
        (:mod:`particles.fields.costs`): O(n) tokens for a model that is not
        pairwise (Kuramoto), else the summation's own model (every pair per
        head and Sinkhorn pass, or the series)."""
        n = self.spec.n if n is None else int(n)
        if not MODELS[self.spec.model].pairwise:
            return costs.tokens(n)
        return SUMMATIONS[self.summation].cost(self.spec, n)

    def step_cost(self, n: int | None = None) -> float:
        """Seconds of one step of one system on one core at the reference
        costs: :attr:`evaluations` times :meth:`evaluation_cost`."""
        return self.evaluations * self.evaluation_cost(n)


@dataclass(frozen=True)
class Plan:
    """A run, resolved: what :mod:`particles.engine` integrates and files record.

    Attributes
    ----------
    integrator : str
        Key of :data:`particles.integrators.INTEGRATORS`.
    saves : Saves
    controller : Controller
    watch : Watch
    facts : Facts
    """

    integrator: str
    saves: Saves
    controller: Controller
    watch: Watch
    facts: Facts


def facts(spec: RunSpec) -> Facts:
    """The :class:`Facts` of a validated configuration."""
    return Facts(spec)


def plan(spec: RunSpec) -> Plan:
    """The :class:`Plan` of a validated configuration.

    Parameters
    ----------
    spec : RunSpec
        A :class:`~particles.config.SimulationConfig`.

    Returns
    -------
    Plan
    """
    return Plan(integrator=spec.integrator,
                saves=Saves(spec.output_times(), tuple(spec.observables)),
                controller=Controller.of(spec), watch=Watch.of(spec), facts=Facts(spec))
