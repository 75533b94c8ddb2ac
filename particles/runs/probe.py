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
whose fastest oscillators set the step) on one Numba thread, as the run
goes (its coincident tokens collapsing where the run's do), through the
run's save times until its ``T`` or a budget of wall time (compiling
aside); a proxy of fewer tokens than a run that does not collapse stops at
:data:`GRID_PER_DECADE` log-spaced times a decade too (a collapsing one looks
for coincident tokens where it stops, so it stops where the run does).  A
proxy of fewer tokens than the run sums its attention directly: the
spectral series costs the same for 64 tokens as for 10^4 (its degree is the
run's), 200 times the direct sums, for the same steps to a few per cent.

Past the last time reached the steps are extrapolated from their growth.
A metastable run's steps grow about like ``t`` until they reach the
stability limit of its clusters (dopri5: about 3 for SA), then stay, and
where that happens the probe cannot tell.  So the rest lies between two
counts: the steps growing on as the probe saw them grow (the mean step of
each interval of its last decade fitted as ``h(t) = h_r (t / t_r)^p``,
``0 <= p <= 1``, integrated: ``int dt / h(t)`` to ``T``) and the steps
staying (the rate of the probe's second half, an upper bound while they
still grow).  Where the two totals differ by at most :data:`SPAN` (9) their
geometric mean is counted, within 3x of either; else, or where the probe saw
too little of that decade to fit, the last rate, marked a bound
(:attr:`StepProbe.bound`).  Measured from a 64-token proxy of SA at beta = 9
on the circle and S^2 to T = 10^3-10^5, stopped early: 0.7-2.6x the complete
count where counted, 1.5-98x where bounded.

Coincident tokens that collapse (:mod:`particles.models.collapse`) make the
steps after they do cheap, but when a cluster's tokens coincide to
round-off is a lottery: on the circle at beta = 9 it happens at t = 35 in
one run and never before t = 10^4 in another, at any n.  A collapsing run
is therefore probed with up to :data:`PROBE_SEEDS` proxies of different
tokens (as the budget allows); the share of the work on all tokens is the
mean of theirs (the expected time: 32 proxies of 64 tokens and 24 runs of
1000 on the circle draw the same spread, 0.03 to 1, half of them near 0.04,
a mean of 0.27-0.31 and 0.26), and the range is said (:attr:`Estimate.spread
<particles.runs.estimate.Estimate.spread>`).
A proxy's count of distinct points ``k`` of ``m`` stands for
``k_end + (k - k_end) (n - k_end) / (m - k_end)`` of the run's ``n``
(``k_end``: its fewest), each costing
:meth:`particles.plan.Facts.evaluation_cost` at that size.
The count depends on the configuration, the seed and how far the budget
lets the probe go.

The time of a step is the machine's: :func:`machine_speed` times the run's
own drift on a proxy of :data:`SPEED_TOKENS` tokens on one Numba thread
and divides by the reference cost of those evaluations
(:meth:`particles.plan.Facts.step_cost`): a core with
AVX-512 evaluates the softmax three to four times as fast as the 2-core
AVX2 machines the reference costs come from, so an estimate at the
reference costs alone is that much too long there.
:func:`probed_estimate` is the run's
:class:`~particles.runs.estimate.Estimate` with these steps at this speed.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Callable

import numba
import numpy as np

from particles.config import SimulationConfig
from particles.engine import integrate, iter_frames
from particles.errors import IntegrationError
from particles.models import MODELS, build_problem, collapse
from particles.plan import Controller, Saves, facts
from particles.runs.estimate import Estimate, estimate
from particles.runs.initial import initial_tokens

__all__ = ["GRID_PER_DECADE", "PROBE_PAIRWISE_TOKENS", "PROBE_SECONDS", "PROBE_SEEDS",
           "PROBE_TOKENS", "SEEDS_BUDGET", "SPAN", "SPEED_LINEAR_TOKENS", "SPEED_SECONDS",
           "SPEED_SPECTRAL_STEPS", "SPEED_SPECTRAL_TOKENS", "SPEED_STEPS",
           "SPEED_TOKENS", "StepProbe", "machine_speed", "probe_steps", "probed_estimate",
           "proxy_config"]

#: wall time a probe may spend integrating (compiling aside), seconds.
PROBE_SECONDS = 1.0
#: tokens of the proxy of a pairwise model (SA, USA).
PROBE_PAIRWISE_TOKENS = 64
#: tokens of the proxy of an O(n) model (Kuramoto) at most.
PROBE_TOKENS = 65536
#: proxies of different tokens that probe a run whose tokens collapse, at most
#: (after the first, they share a budget of their own, :data:`SEEDS_BUDGET`
#: times the first's: on the circle at beta = 9 a mean of 16 draws still
#: strays by 2x from that of 32).
PROBE_SEEDS = 32
#: the budget of the other proxies of a collapsing run, in budgets of the first.
SEEDS_BUDGET = 2.0
#: log-spaced times per decade the proxy of a larger run also stops at (where
#: the probe may end and the growth of the steps is fitted).
GRID_PER_DECADE = 8
#: the first log-spaced time of a proxy, in initial steps ``dt``.
FIRST_HORIZON_STEPS = 8
#: intervals of the last decade probed needed to fit the growth of the steps.
FIT_INTERVALS = 3
#: the most the steps at the last rate may exceed those growing on for their
#: geometric mean to be counted (within 3x of both).
SPAN = 9.0
#: tokens of the proxy that :func:`machine_speed` times (at most ``n``): a
#: pairwise model's evaluation then dominates the step's own bookkeeping.
SPEED_TOKENS = 256
#: tokens of that proxy for an O(n) model (Kuramoto), at most.
SPEED_LINEAR_TOKENS = 4096
#: wall time :func:`machine_speed` may spend timing (compiling aside), seconds.
SPEED_SECONDS = 0.25
#: steps ``dt`` of one timed integration of :func:`machine_speed`.
SPEED_STEPS = 32
#: tokens of that proxy for a spectral series, at most: its cost has a part
#: fixed by the degree, which 256 tokens overweigh (S^2 at beta = 9: 2.2x the
#: reference cost at 256 tokens, 1.4x at 2000 and 10^4).
SPEED_SPECTRAL_TOKENS = 4096
#: steps ``dt`` of one timed integration of that proxy.
SPEED_SPECTRAL_STEPS = 4


@dataclasses.dataclass(frozen=True)
class StepProbe:
    """The steps of an adaptive run, counted by :func:`probe_steps`.

    Attributes
    ----------
    steps : float
        Attempts (accepted and rejected steps) of one system over the whole
        run: counted to ``reached``, extrapolated beyond.
    work : float
        The same attempts weighted by their cost relative to an evaluation on
        every token (below ``steps`` once coincident tokens collapse).
    probed : int
        Attempts the first proxy took to ``reached``.
    reached : float
        The time the probe integrated to.
    T : float
        The run's final time.
    tokens : int
        Tokens of a proxy.
    wall : float
        Seconds the probe took, compiling included.
    growth : float or None
        The fitted exponent ``p`` of the step ``h ~ t^p`` past ``reached``;
        None when nothing is extrapolated or it could not be fitted.
    bound : bool
        Whether ``steps`` bounds the run's rather than estimates them (the
        last rate, where the growth could not be fitted or the two counts
        differ by more than :data:`SPAN`).
    last_rate : float
        The steps with the last rate past ``reached`` (an upper bound while the
        steps grow; equal to ``steps`` when complete).
    grown : float
        The steps with the fitted growth going on past ``reached`` (equal to
        ``steps`` when complete or not fitted).
    shares : tuple of float
        Each proxy's share of the work on all tokens (``work / steps`` is their
        mean); one entry per proxy.
    """

    steps: float
    work: float
    probed: int
    reached: float
    T: float
    tokens: int
    wall: float
    growth: float | None = None
    bound: bool = False
    last_rate: float = 0.0
    grown: float = 0.0
    shares: tuple[float, ...] = (1.0,)

    @property
    def complete(self) -> bool:
        """Whether the probe integrated the whole run (nothing extrapolated)."""
        return self.reached >= self.T

    def describe(self) -> str:
        """Where the steps come from, in words."""
        head = f"adaptive steps from a probe of {self.tokens} tokens"
        if self.complete:
            text = f"{head} over the whole run"
        elif self.bound:
            text = (f"{head} to t={self.reached:.3g} ({self.probed} steps), then at its last "
                    f"rate to T={self.T:.3g} (more than the run takes while its steps still "
                    "grow" + ("" if self.growth is None else
                              f"; {self.grown:.3g} if they grow on like t^{self.growth:.2g}")
                    + ")")
        elif self.growth is None:
            text = (f"{head} to t={self.reached:.3g} ({self.probed} steps), then a step per "
                    f"save time to T={self.T:.3g} (its save times are closer than its steps)")
        else:
            text = (f"{head} to t={self.reached:.3g} ({self.probed} steps), then to "
                    f"T={self.T:.3g} between its steps growing on like t^{self.growth:.2g} "
                    f"({self.grown:.3g}) and staying ({self.last_rate:.3g}), counted at their "
                    "geometric mean")
        low, high = min(self.shares), max(self.shares)
        if low < 1.0:
            share = self.work / self.steps if self.steps else 1.0
            if len(self.shares) == 1:
                text += f"; coincident tokens collapse: {share:.2g} of the work on every token"
            else:
                text += (f"; coincident tokens collapse when round-off lets them: "
                         f"{len(self.shares)} probes of other tokens do {low:.2g}-{high:.2g} "
                         f"of the work on every token, counted at their mean {share:.2g}")
        return text


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


def _step_proxy(config: SimulationConfig, tokens: int) -> SimulationConfig:
    """:func:`proxy_config` for counting steps: the whole run (no stops, no
    merge events), collapsing where the run does, and a proxy smaller than
    the run sums directly (see the module docstring)."""
    proxy = proxy_config(config, tokens).replace(until_clusters=None, max_wall=None,
                                                 merge_events=False)
    if proxy.n < config.n and facts(proxy).series:
        proxy = proxy.replace(summation="direct", tol=1e-12)
    if not facts(config).collapses:  # an ensemble's tokens do not collapse, the proxy's would
        proxy = proxy.replace(collapse_tol=0.0)
    return proxy


def _grid(config: SimulationConfig, dense: bool) -> np.ndarray:
    """The times a proxy stops at: the run's save times, and with ``dense``
    :data:`GRID_PER_DECADE` log-spaced times a decade from ``8 dt`` too."""
    times = config.output_times()
    if not dense:
        return times
    first = FIRST_HORIZON_STEPS * float(config.dt)
    T = float(config.T)
    if not first < T:
        return times
    count = math.ceil(math.log10(T / first) * GRID_PER_DECADE)
    extra = first * 10.0 ** (np.arange(count) / GRID_PER_DECADE)
    # a log time at a save time (to round-off) would only truncate a step
    i = np.clip(np.searchsorted(times, extra), 1, times.size - 1)
    gap = np.minimum(np.abs(times[i] - extra), np.abs(times[i - 1] - extra))
    return np.union1d(times, extra[gap > 1e-6 * extra])


def _rows(config: SimulationConfig, x0: np.ndarray, grid: np.ndarray, seconds: float
          ) -> tuple[list[tuple[float, int, int]], float]:
    """``(rows, wall)``: ``(time, attempts so far, distinct points)`` at the times of ``grid``:
    the proxy run through them as a run goes (coincident tokens collapse as
    the run's do, which makes its steps the run's and the proxy cheap once
    they have), until the end of ``grid`` or ``seconds`` of wall time after
    its first interval (which compiles or loads the kernels); ``wall``: the
    seconds after it."""
    tol = config.collapse_tol if facts(config).collapses else 0.0
    out: list[tuple[float, int, int]] = []
    deadline, begin = math.inf, 0.0
    for frame in iter_frames(config.replace(save_times=tuple(grid.tolist()),
                                            observables=("order",)), x0):
        tried = frame.observables["accepted_steps"] + frame.observables["rejected_steps"]
        k = collapse.groups(frame.positions[0], tol)[1].size if tol > 0 else config.n
        out.append((frame.time, int(tried[0]), int(k)))
        if len(out) == 2:
            begin = time.perf_counter()
            deadline = begin + seconds
        elif time.perf_counter() > deadline:
            break
    return out, time.perf_counter() - begin if begin else 0.0


def _share(rows: list[tuple[float, int, int]], cost: Callable[[int], float]
           ) -> tuple[float, float]:
    """``(work, last)``: the attempts of ``rows`` weighted by ``cost(k)``, the
    cost of an evaluation on ``k`` distinct points of the proxy relative to
    all its tokens, for the points of each interval's start (the run collapses
    at save times), and that weight in the last interval."""
    work, prev, weight = 0.0, 0, 1.0
    for _, tried, k in rows:
        work += (tried - prev) * weight
        prev, weight = tried, cost(k)
    return work, weight


def _growth(rows: list[tuple[float, int, int]]) -> float | None:
    """The exponent ``p`` in [0, 1] of the mean step ``h ~ t^p`` of the
    intervals of the last decade of ``rows`` (least squares on log axes,
    weighted by attempts); None where fewer than :data:`FIT_INTERVALS`
    intervals of a few steps each, or less than a factor 2 in time, give it."""
    reached = rows[-1][0]
    t, h, w = [], [], []
    for (a, sa, _), (b, sb, _) in itertools.pairwise(rows):
        if a >= reached / 10 and a > 0 and sb - sa >= 2:
            t.append(math.log(math.sqrt(a * b)))
            h.append(math.log((b - a) / (sb - sa)))
            w.append(float(sb - sa))
    if len(t) < FIT_INTERVALS or t[-1] - t[0] < math.log(2.0):
        return None
    slope = np.polyfit(t, h, 1, w=np.sqrt(w))[0]
    return float(min(1.0, max(0.0, slope)))


def _rest(rows: list[tuple[float, int, int]], p: float, T: float) -> float:
    """Attempts from the last time of ``rows`` to ``T`` with steps ``h_r (t/t_r)^p``,
    ``h_r`` the mean step of the last interval of a few steps."""
    t_r = rows[-1][0]
    i = len(rows) - 1
    while i > 0 and rows[-1][1] - rows[i - 1][1] < 2:
        i -= 1
    t_a = rows[i - 1][0] if i > 0 else 0.0
    h_r = (t_r - t_a) / max(1, rows[-1][1] - (rows[i - 1][1] if i > 0 else 0))
    if p >= 1.0 - 1e-9:
        return t_r / h_r * math.log(T / t_r)
    return t_r ** p / h_r * (T ** (1 - p) - t_r ** (1 - p)) / (1 - p)


def _last_rate(rows: list[tuple[float, int, int]]) -> float:
    """Attempts per unit time of the second half of ``rows`` (at least its last interval)."""
    reached, probed, _ = rows[-1]
    half = next(i for i, row in enumerate(rows) if row[0] >= reached / 2 or i == len(rows) - 2)
    t_a, s_a, _ = rows[half]
    return (probed - s_a) / (reached - t_a) if reached > t_a else probed / reached


def _extrapolate(rows: list[tuple[float, int, int]], T: float, floor: float = 0.0
                 ) -> tuple[float, float | None, bool, float, float]:
    """``(rest, growth, bound, staying, growing)``: the attempts past the last
    of ``rows`` to ``T`` as counted (see the module docstring), the fitted
    exponent (None: not fitted), whether ``rest`` is the bound, and the
    attempts with the last rate and with the growth going on (0 when the
    rows reach ``T``).  ``floor``: the run's save times past the rows, one
    attempt each at least (a save grid finer than the steps sets them: the
    last rate is then the count, not a bound)."""
    reached, probed, _ = rows[-1]
    if reached >= T:
        return 0.0, None, False, 0.0, 0.0
    staying = max(floor, _last_rate(rows) * (T - reached))
    growth = _growth(rows)
    growing = staying if growth is None else max(floor, min(staying, _rest(rows, growth, T)))
    if growth is None:
        bound = staying > 1.05 * floor
    else:
        bound = probed + staying > SPAN * (probed + growing)
    rest = staying if bound or growth is None else \
        math.sqrt((probed + growing) * (probed + staying)) - probed
    return rest, growth, bound, staying, growing


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
        The run's initial positions (the first proxy starts from the first
        tokens of its first system).

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
    if not facts(config).adaptive:
        raise ValueError(f"integrator {config.integrator!r} takes fixed steps: nothing to probe")
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # the estimate counts one core; 64 tokens need no more
    try:
        return _probe(config, seconds, x0)
    finally:
        numba.set_num_threads(threads)


def _probe(config: SimulationConfig, seconds: float, x0: np.ndarray | None) -> StepProbe:
    """:func:`probe_steps` on one Numba thread."""
    start = time.perf_counter()
    config = config.resolved()
    pairwise = MODELS[config.model].pairwise
    proxy = _step_proxy(config, PROBE_PAIRWISE_TOKENS if pairwise else PROBE_TOKENS)
    m = proxy.n
    x = None if x0 is None else np.asarray(x0).reshape(-1, config.n, config.d)[:1, :m]
    X0 = initial_tokens(proxy, x)
    T = float(config.T)
    if T <= 0:
        return StepProbe(0.0, 0.0, 0, 0.0, T, m, time.perf_counter() - start)
    # a collapsing proxy looks for coincident tokens at every time it stops,
    # which the run does at its save times only
    collapses = facts(config).collapses
    grid = _grid(config, dense=m < config.n and not collapses)
    rows, first = _rows(proxy, X0, grid, seconds)
    runs = [rows]
    reached, probed, _ = rows[-1]
    if collapses and m < config.n:
        # the time tokens coincide is a lottery (module docstring): other tokens
        # draw it again, each while a budget of its own allows the first one's time
        part, left = grid[grid <= reached], SEEDS_BUDGET * seconds
        for i in range(1, PROBE_SEEDS):
            if first > left:
                break
            other = proxy.replace(seed=int(np.random.SeedSequence((config.seed, i))
                                           .generate_state(1)[0]))
            more, wall = _rows(other, initial_tokens(other), part, left)
            left -= wall
            if more[-1][0] >= reached:
                runs.append(more)
    steps = float(np.mean([r[-1][1] for r in runs]))
    times = config.output_times()
    floor = float(np.count_nonzero(times > reached * (1 + 1e-12)))
    rest, growth, bound, staying, growing = _extrapolate(rows, T, floor)
    cost = _cost(config, pairwise)
    works = []
    for r in runs:
        k_end = min(row[2] for row in r)

        def weight(k: int, k_end: int = k_end) -> float:
            # the proxy's k of m points stand for the run's (module docstring)
            if k >= m or k_end >= m:
                return 1.0
            return cost(k_end + (k - k_end) * (config.n - k_end) / (m - k_end))

        work, last = _share(r, weight)
        works.append(work * steps / r[-1][1] + last * rest if r[-1][1] else steps + rest)
    steps += rest
    # the expected work over the lottery (the sum of many runs' times is its mean)
    return StepProbe(steps, float(np.mean(works)), int(probed), float(reached), T, m,
                     time.perf_counter() - start, growth, bound, steps - rest + staying,
                     steps - rest + growing, tuple(w / steps if steps else 1.0 for w in works))


def _cost(config: SimulationConfig, pairwise: bool) -> Callable[[float], float]:
    """``cost(k)``: an evaluation of the run on ``k`` distinct points relative to
    one on all its tokens (a spectral series' fixed part included)."""
    if not pairwise:
        return lambda k: 1.0
    run = facts(config)
    full = run.evaluation_cost()
    return lambda k: run.evaluation_cost(max(1, round(k))) / full


def machine_speed(config: SimulationConfig, *, seconds: float = SPEED_SECONDS,
                  x0: np.ndarray | None = None) -> float:
    """This machine's cost of the drift evaluations of ``config`` relative to
    the reference costs of :mod:`particles.fields.costs`.

    A proxy of the run (:func:`proxy_config`: one system of
    :data:`SPEED_TOKENS` tokens, :data:`SPEED_LINEAR_TOKENS` for an O(n)
    model, :data:`SPEED_SPECTRAL_TOKENS` for a spectral series) is integrated
    with the run's integrator over :data:`SPEED_STEPS` steps ``dt``
    (:data:`SPEED_SPECTRAL_STEPS` for a series; at most ``T``) again and
    again on one Numba thread, the
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
    spectral = facts(config).series
    tokens = (SPEED_SPECTRAL_TOKENS if spectral else SPEED_TOKENS) if pairwise \
        else SPEED_LINEAR_TOKENS
    proxy = proxy_config(config, tokens)
    x = None if x0 is None else np.asarray(x0).reshape(-1, config.n, config.d)[:1, :proxy.n]
    problem = build_problem(proxy, initial_tokens(proxy, x))
    adaptive = facts(config).adaptive
    steps = SPEED_SPECTRAL_STEPS if spectral else SPEED_STEPS
    grid = np.array([0.0, min(float(config.T), steps * float(config.dt))])
    if not grid[1] > 0:
        return 1.0

    def timed() -> tuple[float, float]:
        t0 = time.perf_counter()
        *_, last = integrate(problem, config.integrator, Saves(grid), Controller.of(config))
        wall = time.perf_counter() - t0
        if adaptive:
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
    reference = attempts * facts(proxy).step_cost()
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
        if not facts(config).adaptive:
            return estimate(config, speed=speed)
        probe = probe_steps(config, seconds=seconds, x0=x0)
    except IntegrationError as exc:
        bound = estimate(config)
        why = " ".join(str(exc).split())
        return Estimate(bound.frames, bound.steps, bound.memory_bytes, bound.output_bytes,
                        bound.seconds, True, f"{bound.basis}; the probe failed: {why}")
    steps = math.ceil(probe.steps)
    est = estimate(config, steps=steps, basis=probe.describe(),
                   work=probe.work / probe.steps if probe.steps else 1.0, speed=speed,
                   bound=probe.bound)
    if len(probe.shares) < 2:
        return est
    low, high = (estimate(config, steps=steps, work=w, speed=speed).seconds
                 for w in (min(probe.shares), max(probe.shares)))
    return dataclasses.replace(est, spread=(low, high))
