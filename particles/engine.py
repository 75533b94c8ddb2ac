"""The engine: the one save-point loop, compiled chunks of steps between save points.

This is the only module that knows about save points, threading layout,
progress and observables together.  Python runs once per saved frame; every
step between two frames runs inside one compiled call for all systems.

:func:`integrate` advances a :class:`~particles.models.Problem` (state,
space, field, noise, map to positions; built by the model,
``particles.models.MODELS[m].build``) with an integrator through the save
times, evaluating the observers at each; it knows no model by name.
:func:`iter_frames` is the same loop for a configuration: its model's
problem, its integrator, times and observers.

Randomness: ``numpy.random.SeedSequence(seed)`` is split into three children,
``(initial positions, random weights, noise)``, so adding a random component
never changes the initial condition drawn for a seed.

Noise (a problem's :class:`~particles.models.Noise`, ``sigma > 0``): the
stochastic steppers (those the integrator registry declares stochastic) read
``sigma`` from the last entry of the parameter tuple, which the engine
appends (to every layer's parameters too); their normals are addressed by the
system's key (:func:`particles.seeds.noise_key`) and the global step counter,
so the bits depend neither on threads nor on the batch split, and a resumed
run continues the same Brownian path.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import Any

import numba
import numpy as np
from threadpoolctl import ThreadpoolController

from particles import events, sphere
from particles.config import SimulationConfig, parse_init
from particles.errors import IntegrationError, StepSizeWarning
from particles.fields import CompiledField
from particles.integrators import INTEGRATORS, Integrator
from particles.integrators.driver import (
    STATUS_MAX_STEPS,
    STATUS_OK,
    adaptive_runner,
    fixed_runner,
)
from particles.integrators.noise import no_keys
from particles.models import Hints, Problem, build_field, build_problem, collapse
from particles.observables import observation
from particles.plan import Controller, Plan, Saves, Start, Watch, plan
from particles.progress import Progress
from particles.seeds import init_rng, noise_keys, seed_sequences  # noqa: F401 (re-export)
from particles.sphere.checks import unit_rows
from particles.trajectory import Frame, Trajectory

#: one system with at least this many tokens is parallelised over rows.
ROWS_PARALLEL_MIN_N = 512

_THREADPOOLS: ThreadpoolController | None = None

#: a fixed step is too large when ``dt`` times a speed bound exceeds this (rad).
STEP_LIMIT = 0.5

#: when at least this fraction of the tokens exceeds :data:`STEP_LIMIT`, the
#: mean field they all feel is corrupted (an error of up to ~2x this fraction
#: in ``z``): the whole population is at risk, not only the fast tokens.
POPULATION_AT_RISK = 0.02


def initial_positions(config: SimulationConfig, x0: np.ndarray | None = None) -> np.ndarray:
    """Initial tokens of a run, always with a batch axis.

    Parameters
    ----------
    config : SimulationConfig
        Resolved configuration (concrete seed when ``x0`` is None).
    x0 : ndarray, shape (n, d) or (batch, n, d), optional
        Given positions; rows are normalised onto the sphere.  A single
        (n, d) configuration is repeated over the batch.

    Returns
    -------
    ndarray, shape (batch, n, d)
        C-contiguous float64 (batch is 1 for a single system).
    """
    B = config.batch or 1
    n, d = config.n, config.d
    if x0 is not None:
        x = np.asarray(x0)
        if x.shape == (n, d):
            x = np.broadcast_to(x, (B, n, d))
        elif x.shape != (B, n, d):
            allowed = f"({n}, {d})" + (f" or ({B}, {n}, {d})" if config.batch else "")
            raise ValueError(f"x0 must have shape {allowed}, got {x.shape}")
        # finite, real, nonzero rows, normalised with a scaled norm where the
        # plain one under/overflows (ordinary rows bit for bit as before)
        return unit_rows(x, "x0")
    if config.seed is None:
        raise ValueError("seed must be resolved before drawing positions (config.resolved())")
    name, param = parse_init(config.init)
    entry = sphere.INITIAL_CONDITIONS[name]
    if entry.text:  # a file, which this layer does not read
        raise ValueError(f"init={config.init!r} is drawn from a file by the sessions: give "
                         "x0=particles.runs.initial.initial_tokens(config) (run_to_file does)")
    if entry.sample is None:
        raise ValueError(f"init={name!r} needs x0")
    x = entry.sample(n, d, param, rng=init_rng(config.seed), batch=B)
    return np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(B, n, d))


def speed_bound(config: SimulationConfig) -> float:
    """Upper bound on token speeds ``|dx_i/dt|`` of a configuration, over every
    system and head: the field's own bound (:attr:`CompiledField.speed`).

    SA moves tokens by convex combinations of ``V x_j``: speed <= ||V||.
    USA multiplies by up to ``exp(beta ||Q^T K|| - c)``.
    Kuramoto: ``|coupling| + max |omega_i|``.
    """
    return build_field(config).speed


def _layout(field: CompiledField, batch: int, n: int) -> str:
    """How the runners split the work: ``"rows"`` (one large system, its rows
    over threads), ``"batch"`` (systems over threads) or ``"serial"`` (one
    small system, or one Numba thread: systems in turn, and no parallel region
    to compile, which in a one-thread sweep worker halves the runner's compile).
    Every layout advances each system by the same serial step: the same bits."""
    threads = numba.get_num_threads()
    if field.pairwise and batch < threads and n >= ROWS_PARALLEL_MIN_N:
        return "rows"
    return "serial" if batch == 1 or threads == 1 else "batch"


def _drift_of(field: CompiledField, layout: str) -> tuple[Callable, int]:
    """``(drift, wsize)``: the drift the runners call for a layout (parallel over
    rows only for ``"rows"``) and its scratch size."""
    if layout == "rows":
        return field.parallel, field.workspace(numba.get_num_threads())
    return field.serial, field.workspace(1)


def execution_plan(config: SimulationConfig, field: CompiledField
                   ) -> tuple[str, Callable, int]:
    """``(layout, drift, wsize)`` of a configuration's field: the layout
    (:func:`_layout`), the drift the runners call and its scratch size."""
    layout = _layout(field, config.batch or 1, config.n)
    return (layout, *_drift_of(field, layout))


def _blas_guard(field: CompiledField, layout: str):
    """Single-threaded BLAS while Numba threads run BLAS blocks (two spinning
    pools on two cores make a step many times slower): for fields that declare
    BLAS use (:attr:`CompiledField.blas`)."""
    global _THREADPOOLS
    if not field.blas or layout == "serial":
        return nullcontext()
    if _THREADPOOLS is None:
        _THREADPOOLS = ThreadpoolController()
    return _THREADPOOLS.limit(limits=1, user_api="blas")


def _layer_segments(t0: float, t1: float, layer_time: float | None
                    ) -> list[tuple[float, float, int]]:
    """Split ``[t0, t1]`` at multiples of ``layer_time``: ``(start, stop, layer)``.

    Layer ``l`` covers ``[l * layer_time, (l + 1) * layer_time)``; without
    layers everything is layer 0.
    """
    if layer_time is None:
        return [(t0, t1, 0)]
    out = []
    a = t0
    # the tolerance keeps a save point that equals a layer boundary from
    # producing an empty segment
    layer = math.floor(a / layer_time + 1e-9)
    while a < t1 - 1e-12 * max(1.0, abs(t1)):
        b = min(t1, (layer + 1) * layer_time)
        if b - a > 1e-12 * max(1.0, abs(b)):
            out.append((a, b, layer))
        a = b
        layer += 1
    return out or [(t0, t1, math.floor(t0 / layer_time + 1e-9))]


def iter_frames(
    config: SimulationConfig,
    positions: np.ndarray,
    *,
    start: int = 0,
    start_step: int = 0,
    step_counts: np.ndarray | None = None,
    progress: Callable[[float], None] | None = None,
    keys: np.ndarray | None = None,
) -> Iterator[Frame]:
    """Run a configuration, yielding each saved frame as soon as it exists.

    Its model's problem (``MODELS[config.model].build``), integrator, save
    times and observers through :func:`integrate`.

    Parameters
    ----------
    config : SimulationConfig
        Resolved configuration.
    positions : ndarray, shape (batch, n, d)
        State at frame ``start`` (the initial condition when ``start = 0``).
    start : int
        Index (into ``config.output_times()``) of the frame ``positions`` is
        at; frames after it are computed.  With ``start = 0`` the initial
        frame itself is yielded first.
    start_step : int
        Step counter of frame ``start`` (for resuming).
    step_counts : ndarray, shape (batch, 2), optional
        Accepted and rejected steps of adaptive integrators up to frame
        ``start`` (for resuming; zeros when None).
    progress : callable, optional
        Called with the current time after every frame.
    keys : ndarray of uint64, shape (batch, 2), optional
        Noise keys of the systems (stochastic integrators; default
        :func:`~particles.seeds.noise_keys` of ``config.seed``, system ``b``
        keyed by its index in the batch).  A sweep gives each system its own
        key, so a system's path does not depend on the chunk it runs in.

    Yields
    ------
    Frame
    """
    run = plan(config)
    yield from events.stops(run.watch, _frames(config, run, positions, start, start_step,
                                               step_counts, progress, keys),
                            start=start, last=run.facts.frames - 1)


def _frames(config: SimulationConfig, run: Plan, positions: np.ndarray, start: int,
            start_step: int, step_counts: np.ndarray | None,
            progress: Callable[[float], None] | None, keys: np.ndarray | None
            ) -> Iterator[Frame]:
    """:func:`iter_frames` before its stops."""
    saves = dataclasses.replace(run.saves, observers=observation(
        run.saves.observables, config, nthreads=numba.get_num_threads()))
    # stacklevel 6: a step-size warning points at the caller of simulate (through run,
    # iter_frames and its stops)
    options = dict(watch=run.watch, progress=progress, stacklevel=6)
    begin = Start(start, start_step, step_counts)
    if run.facts.collapses and np.shape(positions)[0] == 1:
        yield from _collapsing(config, positions, run, saves, begin, options)
        return
    problem = build_problem(config, positions, keys=keys)
    yield from integrate(problem, run.integrator, saves, run.controller, start=begin,
                         **options)


def _collapsing(config: SimulationConfig, positions: np.ndarray, run: Plan, saves: Saves,
                begin: Start, options: dict[str, Any]) -> Iterator[Frame]:
    """:func:`iter_frames` with coincident tokens integrated as one weighted token
    (:mod:`particles.models.collapse`): the groups of the positions at ``start``
    and, whenever a save point finds fewer, a new problem on the groups from there.
    The frames (and observers) see all ``n`` tokens."""
    X = np.array(positions, dtype=np.float64).reshape(1, config.n, config.d)
    masses = config.mass_array()
    labels, first = collapse.groups(X[0], config.collapse_tol)
    while True:
        k = first.size
        sub = config if k == config.n else config.replace(
            # the run's own summation: the series and the direct sums extend the
            # field differently off the sphere, where rk4's stages go
            n=k, masses=tuple(collapse.weighted(masses, labels, k)), init="array",
            observables=("order",))
        problem = dataclasses.replace(
            build_problem(sub, X[:, first]), positions0=X,
            to_positions=lambda state, labels=labels: state[:, labels])
        for fr in integrate(problem, run.integrator, saves, run.controller, start=begin,
                            **options):
            yield fr
            if fr.index == begin.index or k == 1:
                continue
            found = collapse.groups(fr.positions[0], config.collapse_tol)
            if found[1].size < k:
                labels, first = found
                X = fr.positions.reshape(X.shape)
                counts = begin.step_counts
                if "accepted_steps" in fr.observables:
                    counts = np.stack([fr.observables["accepted_steps"],
                                       fr.observables["rejected_steps"]], axis=1)
                begin = Start(fr.index, fr.step, counts)
                break  # a new problem on the fewer groups, from this frame
        else:
            return


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
    layout = layout or _layout(problem.field, B, state.shape[1])
    params, layer_params, keys = _noisy(problem, entry)
    runner, stats, hs = _stepper(problem, entry, layout, c.dt, start.step_counts,
                                 stacklevel + 1)
    wsize = _drift_of(problem.field, layout)[1]

    steps = dict(adaptive=entry.adaptive, dt=c.dt, max_steps=c.max_steps, params=params,
                 wsize=wsize, keys=keys, rtol=c.rtol, atol=c.atol, carry_step=c.carry_step,
                 layer_time=problem.field.layer_time, layer_params=layer_params,
                 guard=lambda: _blas_guard(problem.field, layout),
                 state=problem.hints.state, hint=_failure_hint(entry, problem.hints))
    watch = watch or Watch()
    counter = (_Watch(problem, events.cluster_counts, steps, runner, stats, hs, watch.locate)
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


class _Watch:
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
    drift = _drift_of(field, layout)[0]
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


def check_step_size(rate: float | None, dt: float, integrator: str, *, moving: str = "tokens",
                    hint: str = "", stacklevel: int = 2, rates: np.ndarray | None = None,
                    stages_leave_sphere: bool = False, suggest_adaptive: bool = True) -> None:
    """Warn (:class:`StepSizeWarning`) when a fixed step ``dt`` times the speed
    bound ``rate`` exceeds :data:`STEP_LIMIT` (0.5 rad; None: unknown bound,
    no warning).

    The message says who is at risk:

    * without per-token bounds ``rates`` (SA, USA: one bound for all), every token;
    * with them, the whole population when at least :data:`POPULATION_AT_RISK`
      of the tokens exceed the limit (the mean field every token feels is
      then corrupted), otherwise only the fast tokens (counted);
    * with ``stages_leave_sphere`` (RK4 stages off the circle feeding a mean
      field), the whole population whatever the count: one inflated stage
      vector corrupts the mean field.

    Parameters
    ----------
    rate : float or None
        Bound on every token's speed.
    dt : float
        The fixed step.
    integrator : str
        Its name, for the message.
    moving : str
        What moves (``"tokens"``, ``"phases"``), for the message.
    hint : str
        Appended to "reduce dt" (e.g. another normalisation).
    stacklevel : int
        Of the warning, counted from the caller.
    rates : ndarray, shape (n,), optional
        Per-token speed bounds (Kuramoto: ``|c| + |omega_i|``).
    stages_leave_sphere : bool
        See above.
    suggest_adaptive : bool
        Whether the message suggests ``integrator='dopri5'`` (not for SDEs).
    """
    if rate is None or not dt * rate > STEP_LIMIT:
        return
    if rates is None:
        who = f"all {moving} are at risk: each may move up to ~{dt * rate:.2g} rad per step"
    else:
        rates = np.asarray(rates, dtype=np.float64).ravel()
        fast = int(np.count_nonzero(dt * rates > STEP_LIMIT))
        share = fast / max(1, rates.size)
        counted = (f"{fast} of {rates.size} {moving} ({share:.2%}) move more than "
                   f"{STEP_LIMIT} rad per step (up to ~{dt * rate:.2g})")
        if stages_leave_sphere:
            who = (f"the whole population is at risk: {counted}, and {integrator!r} stage "
                   f"states off the circle corrupt the mean field every one feels")
        elif share >= POPULATION_AT_RISK:
            who = (f"the whole population is at risk: {counted}, enough to corrupt the "
                   f"mean field every one feels")
        else:
            who = (f"only the fast {moving} are at risk: {counted}, too few to corrupt the "
                   f"mean field the others feel")
    warnings.warn(
        f"dt * (speed bound {rate:.3g}) = {dt * rate:.3g} > {STEP_LIMIT}: the fixed step "
        f"{integrator!r} will be inaccurate ({who}); reduce dt{hint}"
        + (" or use integrator='dopri5'" if suggest_adaptive else ""),
        StepSizeWarning,
        stacklevel=stacklevel + 1,
    )


def march(
    X: np.ndarray,
    times: np.ndarray,
    runner: Callable,
    *,
    adaptive: bool,
    dt: float,
    max_steps: int,
    params: tuple,
    wsize: int,
    keys: np.ndarray,
    rtol: float = 0.0,
    atol: float = 0.0,
    stats: np.ndarray | None = None,
    hs: np.ndarray | None = None,
    carry_step: bool = False,
    layer_time: float | None = None,
    layer_params: Callable[[int], tuple] | None = None,
    guard: Callable[[], Any] = nullcontext,
    start: int = 0,
    step: int = 0,
    state: str = "positions",
    hint: str = "",
) -> Iterator[tuple[int, int]]:
    """The one save-point loop: advance X through the save times, one compiled call
    per interval (or layer segment).

    Parameters
    ----------
    X : ndarray, shape (batch, n, d)
        State at ``times[start]``, advanced in place.
    times : ndarray, shape (frames,)
        Save times.
    runner : numba dispatcher
        From :func:`~particles.integrators.driver.fixed_runner` or
        :func:`~particles.integrators.driver.adaptive_runner` (``adaptive``).
    dt : float
        Fixed step (fixed runners: equal steps of at most ``dt`` that land on
        every save and layer time), or initial step (adaptive runners).
    max_steps : int
        Bound on the steps (fixed) or attempts (adaptive) of the run.
    params : tuple
        Drift parameters of the first segment.
    wsize : int
        Drift scratch length.
    keys : ndarray of uint64, shape (batch, 2)
        Noise keys (:func:`particles.seeds.noise_keys`).
    rtol, atol : float
        Adaptive tolerances.
    stats : ndarray of int64, shape (batch, 3), optional
        Adaptive counters (accepted, rejected, status), accumulated.
    hs : ndarray, shape (batch,), optional
        Adaptive step proposals.  With ``carry_step`` the step proposed at the
        end of an interval starts the next one (``hs`` must hold the initial
        step); otherwise every interval starts from ``min(dt, length)``.
    layer_time : float, optional
        Layers: intervals are split at multiples of it and the parameters of
        layer ``l`` are ``layer_params(l)``.
    guard : callable
        Context manager factory wrapped around every compiled call.
    start : int
        Index of the frame X is at.
    step : int
        Step counter at frame ``start`` (fixed steps: the noise counter).
    state : str
        What X holds, for error messages (``"positions"``, ``"phases"``).
    hint : str
        Remedy appended to the messages of failed integrations (see
        :func:`_failure_hint`); default: "reduce dt" for non-finite states.

    Yields
    ------
    (k, step) : tuple of int
        After reaching ``times[k]``: the frame index and the step counter
        (fixed: steps since t = 0; adaptive: ``k``).

    Raises
    ------
    IntegrationError
        ``max_steps`` reached, step-size underflow, or non-finite states.
    """
    # weights of the current layer (redrawn from the seed when a layer starts)
    layer_now, p = 0, params
    B = X.shape[0]
    for k in range(start + 1, len(times)):
        t0, t1 = float(times[k - 1]), float(times[k])
        for a, b, layer in _layer_segments(t0, t1, layer_time):
            if layer != layer_now:
                layer_now, p = layer, layer_params(layer)
            with guard():
                if adaptive:
                    if not carry_step:
                        hs[:] = min(dt, b - a)
                    runner(X, a, b, hs, p, wsize, rtol, atol, max_steps, stats, keys)
                else:
                    # equal steps that land exactly on the save (or layer) time
                    nsteps = max(1, math.ceil((b - a) / dt - 1e-9))
                    if step + nsteps > max_steps:
                        raise IntegrationError(
                            f"max_steps={max_steps} reached at t={a:g}; raise max_steps")
                    runner(X, a, nsteps, (b - a) / nsteps, p, wsize, keys, step)
                    step += nsteps
        if adaptive:
            step = k
            bad = np.flatnonzero(stats[:, 2] != STATUS_OK)
            if bad.size:
                why = ("max_steps reached" if stats[bad[0], 2] == STATUS_MAX_STEPS
                       else "step size underflow")
                where = f" in system {bad[0]}" if B > 1 else ""
                raise IntegrationError(
                    f"adaptive integration failed{where} between t={t0:g} and "
                    f"t={t1:g}: {why}" + (f"; {hint}" if hint else ""))
        if not np.all(np.isfinite(X)):
            raise IntegrationError(
                f"non-finite {state} between t={t0:g} and t={t1:g}; {hint or 'reduce dt'}")
        yield k, step


def collect(config: SimulationConfig, frames: list[Frame], *, complete: bool) -> Trajectory:
    """Assemble frames into a :class:`Trajectory` (drops the batch axis for one system).

    Positions follow ``config.positions``: every frame's, the last frame's
    (shape (1, ...)) or none (shape (0, ...)).
    """
    if config.positions == "all" or not frames:
        positions = np.stack([f.positions for f in frames])
    else:
        keep = frames[-1].positions[None]
        positions = keep if config.positions == "final" else keep[:0]
    names = frames[0].observables.keys() if frames else ()
    obs = {k: np.stack([f.observables[k] for f in frames]) for k in names}
    if config.batch is None:
        positions = positions[:, 0]
        obs = {k: v[:, 0] for k, v in obs.items()}
    stop = frames[-1].stop if frames else ""
    return Trajectory(
        times=np.array([f.time for f in frames]),
        steps=np.array([f.step for f in frames], dtype=np.int64),
        positions=positions,
        observables=obs,
        config=config,
        complete=complete and stop != "max_wall",  # a paused run did not end
        stop_reason=stop,
        merge_events=tuple(m for f in frames for m in f.merges),
    )


def run(config: SimulationConfig, x0: np.ndarray | None = None, *,
        progress: bool = False) -> Trajectory:
    """Run a configuration in memory and return its :class:`Trajectory`.

    Parameters
    ----------
    config : SimulationConfig
        Configuration; an unset seed is resolved (and recorded) first.
    x0 : ndarray, shape (n, d) or (batch, n, d), optional
        Initial positions (overrides ``config.init``, recorded as ``"array"``).
    progress : bool
        Show a progress bar on stderr for runs longer than a second.
    """
    if x0 is not None and config.init != "array":
        config = config.replace(init="array")
    config = config.resolved()
    X0 = initial_positions(config, x0)
    bar = Progress(config.T, enabled=progress)
    frames: list[Frame] = []
    with bar:
        for fr in iter_frames(config, X0, progress=bar.update):
            if config.positions != "all" and frames:
                # keep only the latest frame's positions (a large ensemble's
                # frames would not fit in memory)
                last = frames[-1]
                empty = np.empty((0, *last.positions.shape[1:]))  # not a view: frees them
                frames[-1] = dataclasses.replace(last, positions=empty)
            frames.append(fr)
    return collect(config, frames, complete=True)


#: SimulationConfig fields, and those simulate takes through ``**attention``.
_FIELDS = frozenset(f.name for f in dataclasses.fields(SimulationConfig))
_OTHER_FIELDS = _FIELDS - {
    "n", "d", "beta", "model", "kernel", "usa_scale", "integrator", "dt", "T", "save_every",
    "save_times", "batch", "seed", "init", "Q", "K", "V", "masses", "rtol", "atol",
    "max_steps", "coupling", "omega", "noise",
}


def simulate(
    n: int,
    d: int,
    beta: float,
    *,
    model: str = "sa",
    kernel: str = "edp",
    usa_scale: str = "n",
    integrator: str | None = None,
    dt: float = 0.01,
    T: float = 10.0,
    save_every: int = 10,
    save_times=None,
    batch: int | None = None,
    seed: int | None = None,
    init: str = "uniform",
    x0: np.ndarray | None = None,
    Q=None,
    K=None,
    V=None,
    masses=None,
    rtol: float = 1e-6,
    atol: float = 1e-9,
    max_steps: int = 10**9,
    progress: bool = False,
    coupling: float = 1.0,
    omega=None,
    noise: float = 0.0,
    **attention: Any,
) -> Trajectory:
    """Simulate attention dynamics of ``n`` tokens on S^{d-1}.

    Parameters
    ----------
    n, d : int
        Number of tokens and ambient dimension.
    beta : float
        Inverse temperature.
    model, kernel, usa_scale, integrator : str
        Names from the registries (see :class:`~particles.config.SimulationConfig`);
        ``integrator=None`` is ``"rk4"``, or ``"heun"`` with ``noise > 0``.
    dt, T : float
        Step size (initial step when adaptive) and final time.
    save_every : int
        Steps between saved frames; or give ``save_times``.
    batch : int, optional
        Number of independent systems advanced together.
    seed : int, optional
        Root seed (None: fresh, recorded in ``config.seed``).
    init : str
        Initial condition name, or give ``x0`` of shape (n, d) / (batch, n, d).
    Q, K, V : ndarray (d, d) or str, optional
        Attention matrices (identity by default; ``"minus_identity"``).
    masses : array_like, shape (n,), optional
        Token masses.
    rtol, atol : float
        Adaptive tolerances.
    max_steps : int
        Upper bound on steps.
    progress : bool
        Progress bar on stderr.
    coupling : float
        Kuramoto coupling strength (``model="kuramoto"`` only).
    omega : str or array_like, shape (n,), optional
        Kuramoto natural frequencies (``model="kuramoto"`` only): a
        distribution ``"lorentzian:WIDTH"``, ``"gaussian:WIDTH"``,
        ``"uniform:WIDTH"`` (optionally ``:CENTER``), drawn with the seed, or
        ``n`` numbers.
    noise : float
        Noise amplitude ``sigma >= 0``: Brownian motion on the sphere,
        ``dX_i = f_i dt + sigma P_{X_i} o dB_i`` (needs a stochastic
        integrator, ``"em"`` or ``"heun"``; 0: deterministic, bit for bit).
    **attention
        Further configuration fields: ``tau``, ``gamma``, ``weights``,
        ``value_weights``, ``heads``, ``normalization``, ``sinkhorn_iters``,
        ``sinkhorn_tol``, ``layer_time``, ``weight_draws``, ``observables``,
        ``positions``, ``summation``, ``tol``, ``collapse_tol``, and the stops
        ``until_clusters``, ``max_wall``, ``merge_events`` (see
        :class:`~particles.config.SimulationConfig`).

    Returns
    -------
    Trajectory
        ``positions`` of shape (frames, n, d), or (frames, batch, n, d).

    Raises
    ------
    ValueError
        Invalid arguments (the message names the argument and allowed values).
    """
    unknown = sorted(set(attention) - _OTHER_FIELDS)
    if unknown:
        raise TypeError(f"simulate() got an unexpected keyword argument {unknown[0]!r}; "
                        f"allowed: {', '.join(sorted(_FIELDS | {'x0', 'progress'}))}")
    config = SimulationConfig(
        n=n, d=d, beta=beta, model=model, kernel=kernel, usa_scale=usa_scale,
        integrator=integrator, dt=dt, T=T, save_every=save_every, save_times=save_times,
        batch=batch, seed=seed, init="array" if x0 is not None else init,
        Q="identity" if Q is None else Q, K="identity" if K is None else K,
        V="identity" if V is None else V, masses=masses, rtol=rtol, atol=atol,
        max_steps=max_steps, coupling=coupling, omega=omega, noise=noise, **attention,
    )
    return run(config, x0, progress=progress)
