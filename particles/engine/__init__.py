"""The engine: the one save-point loop, compiled chunks of steps between save points.

This package is the only place that knows about save points, threading
layout, progress and observables together.  Python runs once per saved
frame; every step between two frames runs inside one compiled call for all
systems.  This module is its facade (:func:`simulate`, :func:`run`,
:func:`iter_frames`, on a configuration's :func:`particles.plan.plan`); the
loop is :mod:`particles.engine.loop`, the compiled march between save times
:mod:`particles.engine.stepping`, the threading layout
:mod:`particles.engine.layout` and the step-size warning
:mod:`particles.engine.stepsize`.

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
from collections.abc import Callable, Iterator
from typing import Any

import numba
import numpy as np

from particles import events, sphere
from particles.config import SimulationConfig, parse_init
from particles.engine.layout import (
    ROWS_PARALLEL_MIN_N,
    blas_guard,
    drift_of,
    execution_plan,
    layer_segments,
    layout_of,
)
from particles.engine.loop import integrate
from particles.engine.stepping import march
from particles.engine.stepsize import POPULATION_AT_RISK, STEP_LIMIT, check_step_size

# re-exported (the engine raises and warns them; their home is particles.errors)
from particles.errors import IntegrationError as IntegrationError
from particles.errors import StepSizeWarning as StepSizeWarning
from particles.integrators import INTEGRATORS
from particles.models import Problem, build_field, build_problem, collapse
from particles.observables import observation
from particles.plan import Controller, Plan, Saves, Start, Watch, plan
from particles.progress import Progress
from particles.seeds import init_rng, noise_keys, seed_sequences
from particles.sphere.checks import unit_rows
from particles.trajectory import Frame, Trajectory, first_passages

__all__ = ["POPULATION_AT_RISK", "ROWS_PARALLEL_MIN_N", "STEP_LIMIT", "Controller", "Frame",
           "Saves", "Start", "Watch", "blas_guard",
           "check_step_size", "collect", "drift_of", "execution_plan", "init_rng",
           "integrate", "iter_frames", "layer_segments", "layout_of",
           "march", "noise_keys", "run", "seed_sequences", "simulate", "speed_bound"]

def initial_positions(config: SimulationConfig, x0: np.ndarray | None = None) -> np.ndarray:
    """The engine's half of a run's initial tokens, always with a batch axis:
    ``x0`` normalised, or a draw of the registry's ``init``.  The engine reads
    no file, so every caller above it takes a run's tokens from their one home,
    :func:`particles.runs.initial.initial_tokens`, which draws ``init="density:FILE"``
    too; :func:`run` (``simulate``) draws here.  Its parameters and result
    (shape (batch, n, d)) are those of that home.
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




def iter_frames(
    config: SimulationConfig,
    positions: np.ndarray,
    *,
    start: int = 0,
    start_step: int = 0,
    step_counts: np.ndarray | None = None,
    progress: Callable[[float], None] | None = None,
    keys: np.ndarray | None = None,
    integrator: str | None = None,
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
    integrator : str, optional
        The phase of ``config.integrator`` (``auto``) a run continues with
        from frame ``start`` when it chose it before (``"sdirk4"`` once
        ``auto`` switched: the file's ``/events/switches`` says so); None:
        the integrator's own start.

    Yields
    ------
    Frame
    """
    run = plan(config)
    if integrator is not None:
        if integrator not in INTEGRATORS[run.integrator].phases:
            raise ValueError(f"integrator {integrator!r} is not a phase of "
                             f"{run.integrator!r}")
        run = dataclasses.replace(run, integrator=integrator)
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
    # stacklevel 7: a step-size warning points at the caller of simulate (through run,
    # iter_frames, its stops and the handovers)
    options = dict(watch=run.watch, progress=progress, stacklevel=7)
    begin = Start(start, start_step, step_counts)
    if run.facts.collapses and np.shape(positions)[0] == 1:
        problem = collapse.problem(config, positions)
    else:
        problem = build_problem(config, positions, keys=keys)
    yield from _handing_over(problem, run, saves, begin, options)


def _handing_over(problem: Problem, run: Plan, saves: Saves, begin: Start,
                  options: dict[str, Any]) -> Iterator[Frame]:
    """:func:`integrate` a problem, and from the frame at which it hands over
    (:attr:`particles.models.Problem.handover`) the problem it hands over to,
    with the integrator of that frame (``auto``'s next phase once it switched)."""
    integrator = run.integrator
    while problem is not None:
        current, problem = problem, None
        for fr in integrate(current, integrator, saves, run.controller, start=begin,
                            **options):
            yield fr
            if fr.switch is not None:
                integrator = fr.switch.after
            if fr.index == begin.index or current.handover is None:
                continue
            problem = current.handover(fr)
            if problem is not None:
                counts = begin.step_counts
                if "accepted_steps" in fr.observables:
                    counts = np.stack([fr.observables["accepted_steps"],
                                       fr.observables["rejected_steps"]], axis=1)
                begin = Start(fr.index, fr.step, counts)
                break  # the smaller problem, from this frame


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
        passages=tuple(first_passages(p for f in frames for p in f.passages)),
        switches=tuple(f.switch for f in frames if f.switch is not None),
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
