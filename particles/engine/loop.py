"""The one save-point loop: :func:`integrate` a problem through its save times.

Python runs once per saved frame; every step between two frames runs inside
one compiled call for all systems (:func:`particles.engine.stepping.march`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from particles import events
from particles.engine.layout import blas_guard, drift_of, layout_of
from particles.engine.stepping import march
from particles.engine.stepsize import check_step_size
from particles.integrators import INTEGRATORS, Integrator
from particles.integrators.driver import (
    adaptive_runner,
    fixed_runner,
)
from particles.integrators.noise import no_keys
from particles.models import Hints, Problem
from particles.plan import Controller, Saves, Start, Watch
from particles.trajectory import Frame


def integrate(
    problem: Problem,
    integrator: str,
    saves: Saves,
    controller: Controller,
    *,
    watch: Watch | None = None,
    start: Start | None = None,
    progress: Callable[[float], None] | None = None,
    layout: str | None = None,
    stacklevel: int = 1,
) -> Iterator[Frame]:
    """Integrate a problem through its save times, yielding each frame as soon as it exists.

    Parameters
    ----------
    problem : Problem
        State at ``save_times[start]``, its space, field, noise and map to
        positions (:mod:`particles.models.problem`); not modified.
    integrator : str
        Key of :data:`~particles.integrators.INTEGRATORS`; a stochastic one
        needs ``problem.noise``, and ``problem.noise`` with ``sigma > 0`` a
        stochastic one.
    saves : Saves
        Increasing times of the frames, and ``observers(X) -> {name: (batch,
        ...) array}`` of the positions at every save point
        (:class:`particles.observables.Observation`), if any.
    controller : Controller
        The step ``dt`` (equal steps of at most ``dt`` land on every save and
        layer time; the initial step of an adaptive integrator), the bound on
        steps (fixed) or attempts (adaptive), the adaptive tolerances, and
        whether an adaptive step carries over to the next interval.
    watch : Watch, optional
        With ``clusters``, every frame carries its cluster counts
        (:func:`particles.events.cluster_counts`); with ``locate`` as well
        (one system, a deterministic integrator) the drops of the count
        between frames are located (:func:`particles.events.locate_merges`,
        integrating copies of the state; the run's own bits are unchanged).
    start : Start, optional
        The save time the problem's state is at (with index 0 the first frame
        is yielded too), the step counter and the adaptive step counts there
        (resuming).
    progress : callable, optional
        Called with the time of every frame after the first.
    layout : {"batch", "rows", "serial"}, optional
        How the work is split (default: by the field and the sizes; any
        layout gives the same bits).
    stacklevel : int
        Of step-size warnings, counted from the caller (1: the caller itself).

    Yields
    ------
    Frame
        Positions ``problem.to_positions(state)`` (batch, n, d), the
        observers' values, and ``accepted_steps``, ``rejected_steps`` of
        adaptive integrators; ``clusters`` and ``merges`` with ``watch.clusters``.

    Raises
    ------
    IntegrationError
        ``max_steps`` reached, step-size underflow or non-finite states.

    Warns
    -----
    StepSizeWarning
        A fixed step too large for the field's speed bounds (:func:`check_step_size`).
    """
    entry = INTEGRATORS[integrator]
    start = start or Start()
    times = np.asarray(saves.times, dtype=np.float64)
    observers, c = saves.observers, controller
    state = np.array(problem.state0, dtype=np.float64, order="C", copy=True)
    B = state.shape[0]
    layout = layout or layout_of(problem.field, B, state.shape[1])
    params, layer_params, keys = _noisy(problem, entry)
    runner, stats, hs = _stepper(problem, entry, layout, c.dt, start.step_counts,
                                 stacklevel + 1)
    wsize = drift_of(problem.field, layout)[1]

    steps = dict(adaptive=entry.adaptive, dt=c.dt, max_steps=c.max_steps, params=params,
                 wsize=wsize, keys=keys, rtol=c.rtol, atol=c.atol, carry_step=c.carry_step,
                 layer_time=problem.field.layer_time, layer_params=layer_params,
                 guard=lambda: blas_guard(problem.field, layout),
                 state=problem.hints.state, hint=_failure_hint(entry, problem.hints))
    watch = watch or Watch()
    counter = (Counter(problem, events.cluster_counts, steps, runner, stats, hs, watch.locate)
               if watch.clusters else None)
    if watch.locate and (counter is None or B != 1 or entry.stochastic):
        raise ValueError("merge events are located for one deterministic system with a "
                         "cluster count")

    def frame(index: int, step: int, X: np.ndarray) -> Frame:
        obs = {} if observers is None else observers(X)
        if entry.adaptive:
            obs["accepted_steps"] = stats[:, 0].astype(np.float64)
            obs["rejected_steps"] = stats[:, 1].astype(np.float64)
        fr = Frame(index, step, float(times[index]), X.copy(), obs)
        return fr if counter is None else counter.seen(fr, state)

    if counter is not None:
        counter.mark(float(times[start.index]), state)
    if start.index == 0:
        first = problem.positions0
        yield frame(0, start.step, problem.to_positions(state) if first is None else first)
    for k, step in march(state, times, runner, stats=stats, hs=hs, start=start.index,
                         step=start.step, **steps):
        X = problem.to_positions(state)
        if problem.anchor is not None:
            problem.anchor(X, state)
        if progress is not None:
            progress(float(times[k]))
        yield frame(k, step, X)


class Counter:
    """The cluster counts of :func:`integrate`'s frames, and with ``locate`` the
    merges between them (:func:`particles.events.locate_merges` on copies of the
    state, with copies of the adaptive counters: the run's own steps are untouched)."""

    def __init__(self, problem: Problem, count: Callable[[np.ndarray], np.ndarray],
                 steps: dict[str, Any], runner: Callable, stats: np.ndarray | None,
                 hs: np.ndarray | None, locate: bool) -> None:
        self.problem, self.count, self.steps, self.runner = problem, count, steps, runner
        self.stats, self.hs, self.locate = stats, hs, locate
        self.t, self.state, self.counts = 0.0, None, None

    def counts_of(self, state: np.ndarray) -> np.ndarray:
        return np.asarray(self.count(self.problem.to_positions(state)), dtype=np.int64)

    def tolerance(self, t: float) -> float:
        """The bracket length at which a merge near ``t`` is located."""
        steps = self.steps
        return events.time_tolerance(t, adaptive=steps["adaptive"], rtol=steps["rtol"],
                                     dt=steps["dt"])

    def mark(self, t: float, state: np.ndarray) -> None:
        """Remember the state at ``t`` (the start of the next interval) and its counts."""
        self.t, self.counts = t, self.counts_of(state)
        self.state = state.copy() if self.locate else None

    def advance(self, Y: np.ndarray, a: float, b: float) -> None:
        """Integrate a copy of the state from ``a`` to ``b`` with the run's stepper."""
        stats = None if self.stats is None else self.stats.copy()
        hs = None if self.hs is None else self.hs.copy()
        for _ in march(Y, np.array([a, b]), self.runner, stats=stats, hs=hs, **self.steps):
            pass

    def seen(self, fr: Frame, state: np.ndarray) -> Frame:
        """The frame with its counts (and the merges since the last one)."""
        before, now = self.counts, np.asarray(self.count(fr.positions), dtype=np.int64)
        merges: tuple = ()
        if self.locate and fr.time > self.t:
            merges = tuple(events.locate_merges(
                self.advance, lambda Y: int(self.counts_of(Y)[0]), self.state, self.t,
                int(before[0]), state, fr.time, int(now[0]), self.tolerance))
        self.t, self.counts = fr.time, now
        self.state = state.copy() if self.locate else None
        return dataclasses.replace(fr, clusters=now, merges=merges)


def _noisy(problem: Problem, entry: Integrator
           ) -> tuple[tuple, Callable[[int], tuple] | None, np.ndarray]:
    """``(params, layer_params, keys)`` for the integrator: a stochastic stepper reads
    ``sigma`` from the last parameter (appended to every layer's too) and draws with
    the problem's noise keys; a deterministic one gets the field's parameters."""
    field, noise = problem.field, problem.noise
    if not entry.stochastic:
        if noise is not None and noise.sigma > 0:
            raise ValueError(f"noise sigma = {noise.sigma:g} > 0 needs a stochastic "
                             f"integrator, not {entry.name!r}")
        return field.params, field.layer_params, no_keys(problem.batch)
    if noise is None:
        raise ValueError(f"integrator {entry.name!r} is stochastic: the problem needs a noise")
    sigma, inner = noise.sigma, field.layer_params

    def layer_params(layer: int) -> tuple:
        return (*inner(layer), sigma)

    return (*field.params, sigma), None if inner is None else layer_params, noise.keys


def _stepper(problem: Problem, entry: Integrator, layout: str, dt: float,
             step_counts: np.ndarray | None, stacklevel: int
             ) -> tuple[Callable, np.ndarray | None, np.ndarray | None]:
    """``(runner, stats, hs)``: the compiled runner of the integrator on the problem's
    drift, space and selection, and the adaptive counters and step proposals (None
    for fixed steps, whose size is checked against the field's bounds first)."""
    field, B = problem.field, problem.batch
    drift = drift_of(field, layout)[0]
    if not entry.adaptive:
        hints = problem.hints
        check_step_size(field.speed, dt, entry.name, moving=hints.moving, hint=hints.step,
                        stacklevel=stacklevel + 1, rates=field.rates,
                        stages_leave_sphere=entry.off_sphere_stages and problem.space == "sphere",
                        suggest_adaptive=not entry.stochastic)
        return fixed_runner(entry.name, drift, layout, field.select, problem.space), None, None
    stats = np.zeros((B, 3), dtype=np.int64)
    if step_counts is not None:
        stats[:, :2] = np.asarray(step_counts, dtype=np.int64).reshape(B, 2)
    runner = adaptive_runner(entry.name, drift, layout, field.select, problem.space)
    return runner, stats, np.full(B, float(dt))


def _failure_hint(entry: Integrator, hints: Hints) -> str:
    """What to change when an integration fails: a deterministic blow-up repeats
    on resuming, so the remedy is the step, the model's own fix (the USA time
    change) or the integrator.  Names both spellings: ``--dt`` (``dt=``)."""
    if not hints.remedies:
        return ""
    if entry.adaptive:
        return f"{hints.why}; use {hints.fix}" if hints.fix else ""
    fixes = ["a smaller --dt (dt=)"]
    if hints.fix:
        fixes.append(hints.fix)
    if entry.stochastic:
        return ("use " + " or ".join(fixes)
                + " (resuming repeats the same steps: the noise is part of the seed)")
    fixes.append("--integrator dopri5 (integrator='dopri5')")
    return ("use " + ", ".join(fixes[:-1]) + " or " + fixes[-1]
            + " (resuming repeats the same steps)")


