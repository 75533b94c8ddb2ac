"""How many steps an adaptive run takes, from a short probe of the run itself.

An adaptive integrator's steps follow the dynamics, which the sizes of a
configuration cannot tell: SA at beta = 9 on the circle takes dopri5 steps
of about 3 once its clusters have formed, 300 times the default initial
``dt``, so counting every step at ``dt`` overestimates such a run 100-1000
times (:func:`particles.runs.estimate.estimate` marks that count a bound).

:func:`probe_steps` counts them instead.  It integrates a proxy of the run
(:func:`proxy_config`: one system of :data:`PROBE_PAIRWISE_TOKENS` tokens,
drawn as the run draws its own, for a pairwise model, whose step sizes
follow the dynamics and not n; up to :data:`PROBE_TOKENS` for an O(n) one,
whose fastest oscillators set the step) over the run's own save times up to a horizon that doubles,
from ``8 dt``, until the run's ``T`` is reached or the next doubling would
overrun a budget of wall time (compiling aside); each try starts again
from t = 0, so the steps are those of the run's own save intervals (an
adaptive step restarts from ``dt`` at every save time).  Past the last
horizon the steps go on at the rate of its second half: while the steps
still grow, that overestimates the rest.  The count depends on the
configuration and the seed only, not on the machine (the budget decides
how far the probe goes).

The time of a step is the machine's: :func:`machine_speed` times the run's
own drift on a proxy of :data:`SPEED_TOKENS` tokens on one Numba thread
and divides by the reference cost of those evaluations
(:func:`particles.runs.estimate.config_evaluation_seconds`): a core with
AVX-512 evaluates the softmax three to four times as fast as the 2-core
AVX2 machines the reference costs come from, so an estimate at the
reference costs alone is that much too long there.
:func:`probed_estimate` is the run's
:class:`~particles.runs.estimate.Estimate` with these steps at this speed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numba
import numpy as np

from particles.config import SimulationConfig
from particles.engine import integrate
from particles.errors import IntegrationError
from particles.integrators import INTEGRATORS
from particles.models import MODELS, build_problem, collapse
from particles.runs.estimate import Estimate, config_evaluation_seconds, estimate
from particles.runs.initial import initial_tokens

__all__ = ["PROBE_PAIRWISE_TOKENS", "PROBE_SECONDS", "PROBE_TOKENS", "SPEED_LINEAR_TOKENS",
           "SPEED_SECONDS", "SPEED_STEPS", "SPEED_TOKENS", "StepProbe", "machine_speed",
           "probe_steps", "probed_estimate", "proxy_config"]

#: wall time a probe may spend integrating (compiling aside), seconds.
PROBE_SECONDS = 1.0
#: tokens of the proxy of a pairwise model (SA, USA).
PROBE_PAIRWISE_TOKENS = 64
#: tokens of the proxy of an O(n) model (Kuramoto) at most.
PROBE_TOKENS = 65536
#: the first horizon, in initial steps ``dt``.
FIRST_HORIZON_STEPS = 8
#: tokens of the proxy that :func:`machine_speed` times (at most ``n``): a
#: pairwise model's evaluation then dominates the step's own bookkeeping.
SPEED_TOKENS = 256
#: tokens of that proxy for an O(n) model (Kuramoto), at most.
SPEED_LINEAR_TOKENS = 4096
#: wall time :func:`machine_speed` may spend timing (compiling aside), seconds.
SPEED_SECONDS = 0.25
#: steps ``dt`` of one timed integration of :func:`machine_speed`.
SPEED_STEPS = 32


@dataclass(frozen=True)
class StepProbe:
    """The steps of an adaptive run, counted by :func:`probe_steps`.

    Attributes
    ----------
    steps : float
        Attempts (accepted and rejected steps) of one system over the whole
        run: counted to ``reached``, extrapolated beyond.
    work : float
        The same attempts weighted by their cost relative to an evaluation on
        every token (below 1 once coincident tokens collapse; 1 without).
    probed : int
        Attempts the proxy took to ``reached``.
    reached : float
        The horizon the probe integrated to.
    T : float
        The run's final time.
    tokens : int
        Tokens of the proxy.
    wall : float
        Seconds the probe took, compiling included.
    """

    steps: float
    work: float
    probed: int
    reached: float
    T: float
    tokens: int
    wall: float

    @property
    def complete(self) -> bool:
        """Whether the probe integrated the whole run (nothing extrapolated)."""
        return self.reached >= self.T

    def describe(self) -> str:
        """Where the steps come from, in words."""
        head = f"adaptive steps from a probe of {self.tokens} tokens"
        if self.complete:
            return f"{head} over the whole run"
        return (f"{head} to t={self.reached:.3g} ({self.probed} steps), then at its last rate "
                f"to T={self.T:.3g} (more than the run takes while its steps still grow)")


def proxy_config(config: SimulationConfig, tokens: int) -> SimulationConfig:
    """One system of ``tokens`` tokens (at most ``config.n``) of ``config``.

    Per-token values (masses, explicit frequencies) are cut to the proxy's
    tokens; an ``init="array"`` run (whose positions are not in the
    configuration) starts from uniform tokens.
    """
    m = int(min(tokens, config.n))
    changes: dict = dict(n=m, batch=None, observables=("order",))
    if config.masses is not None:
        changes["masses"] = config.masses[:m]
    if isinstance(config.omega, tuple):
        changes["omega"] = config.omega[:m]
    if config.init == "array":
        changes["init"] = "uniform"
    return config.replace(**changes)


def _attempts(config: SimulationConfig, x0: np.ndarray, horizon: float
              ) -> list[tuple[float, int, int]]:
    """``(time, attempts so far, distinct points)`` at every save time of
    ``config`` before ``horizon``, and at ``horizon``: the proxy integrated to
    it (no observers: they do not change the steps; no collapsing: the
    dynamics brings tokens together to round-off just the same, which the
    count of distinct points, :func:`particles.models.collapse.groups`, sees)."""
    times = config.output_times()
    grid = np.array([*times[times < horizon], horizon], dtype=np.float64)
    out = []
    tol = config.collapse_tol if config.collapses() else 0.0
    for frame in integrate(build_problem(config, x0), config.integrator, grid, None,
                           dt=config.dt, max_steps=config.max_steps, rtol=config.rtol,
                           atol=config.atol):
        tried = frame.observables["accepted_steps"] + frame.observables["rejected_steps"]
        k = collapse.groups(frame.positions[0], tol)[1].size if tol > 0 else config.n
        out.append((frame.time, int(tried[0]), int(k)))
    return out


def _work(rows: list[tuple[float, int, int]], m: int, power: float) -> tuple[float, float]:
    """``(work, last)``: the attempts weighted by the cost of an evaluation on
    the distinct points of each interval relative to all ``m`` tokens,
    ``(k / m)^power`` (collapsed clusters), and that weight in the last interval."""
    work, prev, weight = 0.0, 0, 1.0
    for _, tried, k in rows:
        work += (tried - prev) * weight
        prev, weight = tried, (k / m) ** power
    return work, weight


def probe_steps(config: SimulationConfig, *, seconds: float = PROBE_SECONDS,
                x0: np.ndarray | None = None) -> StepProbe:
    """Count the steps of an adaptive run with a short probe (see the module docstring).

    Parameters
    ----------
    config : SimulationConfig
        A run with an adaptive integrator (an unset seed is resolved: the
        probe draws its own tokens).
    seconds : float
        Wall time the probe may spend integrating, compiling aside.
    x0 : ndarray, shape (n, d) or (batch, n, d), optional
        The run's initial positions (the proxy starts from the first tokens of
        its first system).

    Returns
    -------
    StepProbe

    Raises
    ------
    ValueError
        A fixed-step integrator (its steps are known).
    IntegrationError
        The proxy's integration failed.
    """
    if not INTEGRATORS[config.integrator].adaptive:
        raise ValueError(f"integrator {config.integrator!r} takes fixed steps: nothing to probe")
    start = time.perf_counter()
    config = config.resolved()
    pairwise = MODELS[config.model].pairwise
    proxy = proxy_config(config, PROBE_PAIRWISE_TOKENS if pairwise else PROBE_TOKENS)
    m = proxy.n
    x = None if x0 is None else np.asarray(x0).reshape(-1, config.n, config.d)[:1, :m]
    X0 = initial_tokens(proxy, x)
    T = float(config.T)
    if T <= 0:
        return StepProbe(0.0, 0.0, 0, 0.0, T, m, time.perf_counter() - start)
    horizon = min(T, FIRST_HORIZON_STEPS * float(config.dt))
    rows = _attempts(proxy, X0, horizon)  # compiles (or loads) the kernels: not budgeted
    budget_start = time.perf_counter()
    last = 0.0
    while horizon < T:
        left = seconds - (time.perf_counter() - budget_start)
        if 2.5 * last > left:  # the next try takes about twice the last
            break
        longer = min(T, 2.0 * horizon)
        t0 = time.perf_counter()
        rows = _attempts(proxy, X0, longer)
        last, horizon = time.perf_counter() - t0, longer
    reached, probed, _ = rows[-1]
    steps = float(probed)
    # a spectral evaluation costs O(k), a direct one O(k^2) on k distinct points
    work, weight = _work(rows, m, 1.0 if config.summation == "spectral" or not pairwise else 2.0)
    if reached < T:
        # the rate of the second half of the probe (at least its last interval)
        half = next(i for i, row in enumerate(rows) if row[0] >= reached / 2
                    or i == len(rows) - 2)
        t_a, s_a, _ = rows[half]
        rate = (probed - s_a) / (reached - t_a) if reached > t_a else probed / reached
        steps += rate * (T - reached)
        work += weight * rate * (T - reached)
    return StepProbe(steps, work, int(probed), float(reached), T, m,
                     time.perf_counter() - start)


def machine_speed(config: SimulationConfig, *, seconds: float = SPEED_SECONDS,
                  x0: np.ndarray | None = None) -> float:
    """This machine's cost of the drift evaluations of ``config`` relative to
    the reference costs of :mod:`particles.runs.estimate`.

    A proxy of the run (:func:`proxy_config`: one system of
    :data:`SPEED_TOKENS` tokens, :data:`SPEED_LINEAR_TOKENS` for an O(n)
    model) is integrated with the run's integrator over ``SPEED_STEPS``
    steps ``dt`` (at most ``T``) again and again on one Numba thread, the
    first time to compile (or load) its kernels; the fastest integration,
    divided by the reference cost of its evaluations, is the speed (the
    machine's, not its load's).

    Parameters
    ----------
    config : SimulationConfig
    seconds : float
        Wall time the timing may spend, compiling aside.
    x0 : ndarray, shape (n, d) or (batch, n, d), optional
        The run's initial positions (the proxy starts from its first tokens).

    Returns
    -------
    float
        Above 1: slower than the reference machine.

    Raises
    ------
    IntegrationError
        The proxy's integration failed.
    """
    config = config.resolved()
    pairwise = MODELS[config.model].pairwise
    proxy = proxy_config(config, SPEED_TOKENS if pairwise else SPEED_LINEAR_TOKENS)
    x = None if x0 is None else np.asarray(x0).reshape(-1, config.n, config.d)[:1, :proxy.n]
    problem = build_problem(proxy, initial_tokens(proxy, x))
    entry = INTEGRATORS[config.integrator]
    grid = np.array([0.0, min(float(config.T), SPEED_STEPS * float(config.dt))])
    if not grid[1] > 0:
        return 1.0

    def timed() -> tuple[float, float]:
        t0 = time.perf_counter()
        *_, last = integrate(problem, config.integrator, grid, None, dt=config.dt,
                             max_steps=config.max_steps, rtol=config.rtol, atol=config.atol)
        wall = time.perf_counter() - t0
        if entry.adaptive:
            tried = last.observables["accepted_steps"] + last.observables["rejected_steps"]
            return wall, float(tried[0])
        return wall, float(math.ceil(grid[1] / config.dt - 1e-9))

    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # the estimate counts one core
    try:
        timed()  # compiles (or loads) the kernels: not timed
        best, attempts = timed()
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            wall, tried = timed()
            if wall < best:
                best, attempts = wall, tried
    finally:
        numba.set_num_threads(threads)
    reference = attempts * entry.evaluations * config_evaluation_seconds(proxy)
    return best / reference if reference > 0 else 1.0


def probed_estimate(config: SimulationConfig, *, seconds: float = PROBE_SECONDS,
                    x0: np.ndarray | None = None) -> Estimate:
    """:func:`~particles.runs.estimate.estimate` of ``config`` at this machine's
    :func:`machine_speed`, with its adaptive steps counted by
    :func:`probe_steps` (a fixed-step run's steps are known).  A probe that
    fails leaves the bound at the reference costs, saying so.

    Parameters
    ----------
    config : SimulationConfig
    seconds : float
        Wall time the probe may spend integrating, compiling aside.
    x0 : ndarray, optional
        The run's initial positions.

    Returns
    -------
    Estimate
    """
    if not config.T > 0:
        return estimate(config)
    try:
        speed = machine_speed(config, x0=x0)
        if not INTEGRATORS[config.integrator].adaptive:
            return estimate(config, speed=speed)
        probe = probe_steps(config, seconds=seconds, x0=x0)
    except IntegrationError as exc:
        bound = estimate(config)
        why = " ".join(str(exc).split())
        return Estimate(bound.frames, bound.steps, bound.memory_bytes, bound.output_bytes,
                        bound.seconds, True, f"{bound.basis}; the probe failed: {why}")
    basis = probe.describe()
    if probe.work < probe.steps:
        basis += (f"; coincident tokens collapse: {probe.work / max(probe.steps, 1):.2g} of "
                  "the work on every token")
    return estimate(config, steps=math.ceil(probe.steps), basis=basis,
                    work=probe.work / probe.steps if probe.steps else 1.0, speed=speed)
