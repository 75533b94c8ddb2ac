"""The one save-point loop: :func:`integrate` a problem through its save times.

Python runs once per saved frame; every step between two frames runs inside
one compiled call for all systems (:func:`particles.engine.stepping.march`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import numpy as np

from particles import events
from particles.engine.layout import blas_guard, drift_of, layout_of
from particles.engine.phases import Phases
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
from particles.trajectory import Frame, Merge, Passage


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
        stochastic one.  One with phases (``auto``) runs its first and, from
        the frame at which its rule says so (:mod:`particles.integrators.auto`),
        its next: from that frame on as a run resumed there with it would.
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
        (:func:`particles.events.cluster_counts`) and, with
        ``until_clusters``, the systems' passages there; with ``locate`` as
        well (a deterministic integrator) the drops of each system's count
        between frames are located (:func:`particles.events.locate_merges`,
        integrating copies of that system's state; the run's own bits are
        unchanged).
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
        adaptive integrators; ``clusters``, ``merges`` and ``passages`` with
        ``watch.clusters``; ``switch`` at the frame an integrator with phases
        goes on with the next.

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
    phases = _phases(entry, problem, float(times[start.index]), start.step_counts)
    if phases is not None:
        entry = INTEGRATORS[phases.first]
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

    @cache
    def alone() -> tuple[Callable, dict[str, Any]]:
        # a located system runs as a run of it alone would (its layout, whose
        # runner is compiled on the first merge of an ensemble): the same bits
        # as any layout, without a parallel region around one system
        one = layout_of(problem.field, 1, state.shape[1])
        return (runner if one == layout else _runner(problem, entry, one),
                dict(wsize=drift_of(problem.field, one)[1],
                     guard=lambda: blas_guard(problem.field, one)))

    counter = (Counter(problem, events.cluster_counts, steps, alone, stats, hs, watch)
               if watch.clusters else None)
    if watch.locate and (counter is None or entry.stochastic):
        raise ValueError("merge events are located for deterministic systems with a "
                         "cluster count")

    def frame(index: int, step: int, X: np.ndarray) -> Frame:
        obs = {} if observers is None else observers(X)
        if entry.adaptive:
            obs["accepted_steps"] = stats[:, 0].astype(np.float64)
            obs["rejected_steps"] = stats[:, 1].astype(np.float64)
        fr = Frame(index, step, float(times[index]), X.copy(), obs)
        return fr if counter is None else counter.seen(fr, state)

    if counter is not None:
        counter.mark(start.index, float(times[start.index]), state)
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
        fr = frame(k, step, X)
        switch = None if phases is None else phases.at(k, fr.time, state, stats)
        if switch is None:
            yield fr
            continue
        yield dataclasses.replace(fr, switch=switch)
        # the next phase from this frame: a run resumed here with it, in memory
        # (the state is the one a resume derives from the frame: see anchor)
        yield from integrate(dataclasses.replace(problem, state0=state), switch.after, saves,
                             controller, watch=watch, progress=progress, layout=layout,
                             start=Start(k, step, stats[:, :2].copy()), stacklevel=stacklevel)
        return


class Counter:
    """The cluster counts of :func:`integrate`'s frames, the systems' passages to
    ``until_clusters``, and with ``locate`` the merges between frames.

    Merges are located system by system (:func:`particles.events.locate_merges`),
    only in the systems whose count dropped, each on a copy of its own state
    alone (:func:`one_system`: its row of the batch, its parameters, its
    adaptive counters and step; ``alone()`` gives the runner and layout a run
    of one system takes), so a system's merges are those a run of it alone
    locates; the run's own state and steps are untouched.
    """

    def __init__(self, problem: Problem, count: Callable[[np.ndarray], np.ndarray],
                 steps: dict[str, Any], alone: Callable[[], tuple[Callable, dict[str, Any]]],
                 stats: np.ndarray | None, hs: np.ndarray | None, watch: Watch) -> None:
        self.problem, self.count, self.steps, self.alone = problem, count, steps, alone
        self.stats, self.hs, self.locate = stats, hs, watch.locate
        self.until = watch.until_clusters
        self.t, self.state, self.counts = 0.0, None, None
        self.starting: tuple[Passage, ...] = ()

    def counts_of(self, state: np.ndarray) -> np.ndarray:
        return np.asarray(self.count(self.problem.to_positions(state)), dtype=np.int64)

    def tolerance(self, t: float) -> float:
        """The bracket length at which a merge near ``t`` is located."""
        steps = self.steps
        return events.time_tolerance(t, adaptive=steps["adaptive"], rtol=steps["rtol"],
                                     dt=steps["dt"])

    def mark(self, index: int, t: float, state: np.ndarray) -> None:
        """Remember the state at frame ``index``, time ``t`` (the start of the next
        interval) and its counts; the systems already within ``until_clusters``
        pass there (at ``t`` from frame 0; at a resume point, since a time
        not known here: NaN, which a record of the file made before wins)."""
        self.t, self.counts = t, self.counts_of(state)
        self.state = state.copy() if self.locate else None
        if self.until is not None:
            when = t if index == 0 else np.nan
            self.starting = tuple(Passage(int(b), self.until, index, when)
                                  for b in np.flatnonzero(self.within(self.counts)))

    def within(self, counts: np.ndarray) -> np.ndarray:
        """Which systems have between 1 and ``until_clusters`` clusters, (batch,) bool."""
        return (counts >= 1) & (counts <= self.until)

    def advance_of(self, b: int) -> Callable[[np.ndarray, float, float], None]:
        """``advance(Y, a, b)`` of system ``b`` alone: integrate a copy of its state
        (1, n, d) with the run's integrator, its parameters and its counters."""
        runner, layout = self.alone()
        steps = dict(one_system(self.steps, self.problem.field.select, b), **layout)
        stats = None if self.stats is None else self.stats[b:b + 1]
        hs = None if self.hs is None else self.hs[b:b + 1]

        def advance(Y: np.ndarray, lo: float, hi: float) -> None:
            for _ in march(Y, np.array([lo, hi]), runner,
                           stats=None if stats is None else stats.copy(),
                           hs=None if hs is None else hs.copy(), **steps):
                pass

        return advance

    def located(self, before: np.ndarray, now: np.ndarray, state: np.ndarray, t: float
                ) -> list[Merge]:
        """The merges between the remembered frame and ``state`` at ``t``, in time
        order, of every system whose count dropped."""
        found: list[Merge] = []
        for b in np.flatnonzero((now >= 1) & (now < before)):
            found += events.locate_merges(
                self.advance_of(int(b)), lambda Y: int(self.counts_of(Y)[0]),
                self.state[b:b + 1], self.t, int(before[b]), state[b:b + 1], t, int(now[b]),
                self.tolerance, system=int(b))
        return sorted(found, key=lambda m: (m.time, m.system))

    def passages(self, index: int, t: float, before: np.ndarray, now: np.ndarray,
                 merges: list[Merge]) -> tuple[Passage, ...]:
        """The systems that entered ``1..until_clusters`` at frame ``index``: at the
        located merge that took them there, else at the frame's time."""
        if self.until is None:
            return ()
        out, self.starting = list(self.starting), ()
        for b in np.flatnonzero(self.within(now) & ~self.within(before)):
            when = next((m.time for m in merges
                         if m.system == b and 1 <= m.after <= self.until), t)
            out.append(Passage(int(b), self.until, index, float(when)))
        return tuple(out)

    def seen(self, fr: Frame, state: np.ndarray) -> Frame:
        """The frame with its counts (and the merges and passages since the last one)."""
        before, now = self.counts, np.asarray(self.count(fr.positions), dtype=np.int64)
        merges = (self.located(before, now, state, fr.time)
                  if self.locate and fr.time > self.t else [])
        passages = self.passages(fr.index, fr.time, before, now, merges)
        self.t, self.counts = fr.time, now
        self.state = state.copy() if self.locate else None
        return dataclasses.replace(fr, clusters=now, merges=tuple(merges), passages=passages)


def one_system(steps: dict[str, Any], select: Callable | None, b: int) -> dict[str, Any]:
    """The stepping options of :func:`~particles.engine.stepping.march` for system
    ``b`` of a batch alone, on its state ``X[b:b + 1]`` with a runner of the same
    integrator, drift and selection.

    Per-system parameters (a selection ``select(p, b)``,
    :attr:`particles.fields.CompiledField.select`) stack their entries along a
    leading batch axis; ``select`` picks entry ``i`` as ``p[i][b]``, so the
    entries it returns with one axis fewer are those narrowed here to
    ``p[i][b:b + 1]``: the runner then hands the one system ``select(p', 0)``,
    system ``b``'s own parameters (layers' too).  Shared parameters and
    everything else stay; the noise keys are narrowed to ``b``'s.

    Parameters
    ----------
    steps : dict
        The run's options of ``march`` (``params``, ``layer_params``, ``keys``, ...).
    select : numba dispatcher or None
        The field's selection (None: every system runs with ``params``).
    b : int
        The system.

    Returns
    -------
    dict
        A copy of ``steps`` for a batch of one.
    """
    out = dict(steps, keys=steps["keys"][b:b + 1])
    if select is None:
        return out

    def narrow(p: tuple) -> tuple:
        picked = select(p, b)
        return tuple(full[b:b + 1] if np.ndim(one) < np.ndim(full) else full
                     for full, one in zip(p, picked, strict=True))

    inner = steps["layer_params"]
    out["params"] = narrow(steps["params"])
    if inner is not None:
        out["layer_params"] = lambda layer: narrow(inner(layer))
    return out


def _phases(entry: Integrator, problem: Problem, t: float,
            step_counts: np.ndarray | None) -> Phases | None:
    """The choice between the phases of an integrator that has them (``auto``),
    starting at time ``t`` with the accepted steps of ``step_counts``; None for a
    stepper."""
    if not entry.phases:
        return None
    accepted = (np.zeros(problem.batch, dtype=np.int64) if step_counts is None
                else np.asarray(step_counts, dtype=np.int64).reshape(problem.batch, 2)[:, 0])
    return Phases(entry, problem, t, accepted)


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
    if not entry.adaptive:
        hints = problem.hints
        check_step_size(field.speed, dt, entry.name, moving=hints.moving, hint=hints.step,
                        stacklevel=stacklevel + 1, rates=field.rates,
                        stages_leave_sphere=entry.off_sphere_stages and problem.space == "sphere",
                        suggest_adaptive=not entry.stochastic)
        return _runner(problem, entry, layout), None, None
    stats = np.zeros((B, 3), dtype=np.int64)
    if step_counts is not None:
        stats[:, :2] = np.asarray(step_counts, dtype=np.int64).reshape(B, 2)
    return _runner(problem, entry, layout), stats, np.full(B, float(dt))


def _runner(problem: Problem, entry: Integrator, layout: str) -> Callable:
    """The compiled runner of the integrator on the problem's drift for a layout,
    its space and selection."""
    field = problem.field
    make = adaptive_runner if entry.adaptive else fixed_runner
    return make(entry.name, drift_of(field, layout)[0], layout, field.select, problem.space)


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


