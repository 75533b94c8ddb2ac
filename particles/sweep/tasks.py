"""Tasks of a sweep: a chunk of systems at one grid point, run as one ensemble.

:func:`run_task` runs the systems ``[start, stop)`` of one grid point as one
batch through the engine (:func:`particles.engine.integrate`: one compiled
call per save interval for all of them) and reduces every saved frame at once
to per-system statistics by the observers (:mod:`particles.observables`);
the positions of a frame are dropped once reduced (kept only with
``positions=True``).  Per system and save time:

* ``pair_counts``: pairs ``i < j`` with ``<x_i, x_j> > 1 - delta``, one count
  per threshold (the ``close_pairs`` observer, for the sweep's deltas);
* ``cluster_count``: the clusters of the components detector (the
  ``clusters`` observer, for its eps), 0 for a spread system (a linked group
  wider than 90 degrees, :mod:`particles.observables.spread`);
* ``energy``: summed by the same pass (the ``pair_energy`` observer; the
  energy of the kernel that ran where one is defined);
* ``order_parameter``: the ``order`` observer's ``r``;

the first three from one compiled pass over the pairs of every system
(:mod:`particles.observables.pairs`); and per system: the formation and
first-merge times of its cluster-count series (:mod:`particles.analysis.merges`:
the first long-lived plateau, NaN when not seen), and
``single_cluster_time``, the first save time with one cluster (inf if never;
a spread state is no cluster).

With the sweep's ``merge_events`` (in every grid point's configuration) the
engine also locates every drop of each system's cluster count between save
times (:mod:`particles.events`: each system alone, by bisection, the frames
untouched: the same bits as without), and the task returns those merges.
With ``until_clusters`` the task stops at the first save time at which every
one of its systems has between 1 and K clusters, as an ensemble run does
(a sweep with it runs each grid point as one task, so the stop is the
point's: :func:`particles.sweep.run.plan_tasks`); the frames after it are
not computed (counts 0, floats NaN, ``frames`` says how many were), the
time scales are those of the frames computed, and each system's first
passage is returned.

Seeds (:mod:`particles.seeds`): system ``s`` of grid point ``g`` draws its
initial positions from spawn key ``(3, g, s, 0)`` and its noise from
``(3, g, s, 2)`` of the sweep's root seed; shared random weights and
frequencies come from the point's seed ``(3, g)``.  So a system's numbers do
not depend on the task it runs in: results are bitwise identical whatever
the chunk size, worker count or backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from particles import events
from particles.analysis.merges import DEFAULT_MIN_DECADES, timescales
from particles.config import SimulationConfig, parse_init
from particles.models import build_problem
from particles.observables import observation
from particles.plan import Controller, Saves, Watch
from particles.seeds import sweep_noise_keys, sweep_system_rng
from particles.sphere import INITIAL_CONDITIONS
from particles.trajectory import Merge, Passage, first_passages

__all__ = ["Task", "TaskResult", "run_task", "system_positions"]


@dataclass(frozen=True)
class Task:
    """One unit of work: systems ``[start, stop)`` of grid point ``point``.

    Picklable (plain numbers, strings and a dict), so any backend can ship it.

    Attributes
    ----------
    point : int
        Flat grid index.
    config : dict
        The point's resolved configuration (``SimulationConfig.to_dict()``,
        one system, the point's seed).
    start, stop : int
        System range.
    seed : int
        Root seed of the sweep.
    deltas : tuple of float
        Close-pair thresholds.
    eps : float
        Linking distance of the cluster detection (radians).
    positions : bool
        Return every frame's positions too.
    min_decades, time_unit : float
        Plateau settings of the time scales (:mod:`particles.analysis.merges`).
    """

    point: int
    config: dict[str, Any]
    start: int
    stop: int
    seed: int
    deltas: tuple[float, ...]
    eps: float
    positions: bool = False
    min_decades: float = DEFAULT_MIN_DECADES
    time_unit: float = 1.0

    @property
    def systems(self) -> int:
        """Number of systems of the task."""
        return self.stop - self.start


@dataclass(frozen=True)
class TaskResult:
    """Per-system statistics of a task (``m = stop - start`` systems, ``F`` frames).

    Attributes
    ----------
    point, start, stop : int
        As in :class:`Task`.
    pair_counts : ndarray of int64, shape (m, F, deltas)
    cluster_count : ndarray of int64, shape (m, F)
    energy, order_parameter : ndarray, shape (m, F)
    formation_time, first_merge_time : ndarray, shape (m,)
        NaN where not seen.
    single_cluster_time : ndarray, shape (m,)
        inf where never one cluster.
    positions : ndarray, shape (m, F, n, d), or None
    seconds : float
        Wall time of :func:`run_task`.
    merges : dict of str to ndarray, or None
        With ``merge_events``: the located merges, columns ``system`` (in the
        grid point), ``time``, ``before``, ``after``, in time order.
    frames : ndarray of int64, shape (m,), or None
        With ``until_clusters``: the save times computed (F unless the task
        stopped).
    passage_time : ndarray, shape (m,), or None
        With ``until_clusters``: each system's first passage to between 1
        and K clusters (the located merge with ``merge_events``, else the
        frame's time; inf: not by the end).
    """

    point: int
    start: int
    stop: int
    pair_counts: np.ndarray
    cluster_count: np.ndarray
    energy: np.ndarray
    order_parameter: np.ndarray
    formation_time: np.ndarray
    first_merge_time: np.ndarray
    single_cluster_time: np.ndarray
    positions: np.ndarray | None = None
    seconds: float = 0.0
    merges: dict[str, np.ndarray] | None = None
    frames: np.ndarray | None = None
    passage_time: np.ndarray | None = None


# ------------------------------------------------------------------- running
def system_positions(config: SimulationConfig, seed: int, point: int, start: int,
                     stop: int) -> np.ndarray:
    """Initial positions of systems ``[start, stop)`` of grid point ``point``,
    each drawn from its own generator (:func:`particles.seeds.sweep_system_rng`).

    Returns
    -------
    ndarray, shape (stop - start, n, d)
    """
    name, param = parse_init(config.init)
    entry = INITIAL_CONDITIONS[name]
    if entry.sample is None:
        raise ValueError(f"init={name!r} needs given positions; a sweep draws them")
    n, d = config.n, config.d
    out = np.empty((stop - start, n, d))
    for k, s in enumerate(range(start, stop)):
        x = entry.sample(n, d, param, rng=sweep_system_rng(seed, point, s), batch=1)
        out[k] = np.asarray(x, dtype=np.float64).reshape(n, d)
    return out


def run_task(task: Task) -> TaskResult:
    """Run one task and reduce its frames to per-system statistics.

    Parameters
    ----------
    task : Task

    Returns
    -------
    TaskResult

    Raises
    ------
    IntegrationError
        The integration failed (non-finite state, stalled adaptive step).
    """
    import time

    from particles.engine import integrate

    t0 = time.perf_counter()
    m = task.systems
    config = SimulationConfig.from_dict(task.config)
    # the task's systems as one ensemble of the point's one-system configuration,
    # each from its own initial positions and noise key
    x0 = system_positions(config, task.seed, task.point, task.start, task.stop)
    keys = sweep_noise_keys(task.seed, task.point, range(task.start, task.stop))
    problem = build_problem(config, x0, keys=keys)
    # r from the O(n) observer; the pair statistics and the energy from one fused pass
    observers = observation(("order", "close_pairs", "clusters", "pair_energy"), config,
                            settings={"deltas": task.deltas, "eps": task.eps})
    times = config.output_times()
    F = times.size
    # frames a stop leaves out stay 0 (counts) and NaN (floats)
    pairs = np.zeros((m, F, len(task.deltas)), dtype=np.int64)
    counts = np.zeros((m, F), dtype=np.int64)
    energy = np.full((m, F), np.nan)
    order = np.full((m, F), np.nan)
    pos = np.full((m, F, config.n, config.d), np.nan) if task.positions else None
    watch = Watch.of(config)  # the sweep's merge events and stop (a single run's rules)
    frames = integrate(problem, config.integrator, Saves(times, observers=observers),
                       Controller.of(config), watch=watch if watch.clusters else None)
    if watch.until_clusters is not None:
        frames = events.stops(watch, frames, start=0, last=F - 1)
    merges: list[Merge] = []
    passages: list[Passage] = []
    computed = 0
    for frame in frames:
        k, values = frame.index, frame.observables
        pairs[:, k] = values["pair_counts"]
        counts[:, k] = values["cluster_count"]
        energy[:, k] = values["energy"]
        order[:, k] = values["order_parameter"]
        if pos is not None:
            pos[:, k] = frame.positions
        merges += frame.merges
        passages += frame.passages
        computed = k + 1
    formation, first_merge = timescales(times[:computed], counts[:, :computed],
                                        min_decades=task.min_decades, time_unit=task.time_unit)
    one = counts[:, :computed] == 1
    first_one = np.argmax(one, axis=1)
    single = np.where(one.any(axis=1), times[first_one], np.inf)
    return TaskResult(
        point=task.point, start=task.start, stop=task.stop, pair_counts=pairs,
        cluster_count=counts, energy=energy, order_parameter=order,
        formation_time=formation, first_merge_time=first_merge, single_cluster_time=single,
        positions=pos, seconds=time.perf_counter() - t0,
        merges=_merge_columns(merges, task.start) if watch.locate else None,
        frames=None if watch.until_clusters is None else np.full(m, computed, dtype=np.int64),
        passage_time=(None if watch.until_clusters is None
                      else _passage_times(first_passages(passages), m)),
    )


def _merge_columns(merges: list[Merge], start: int) -> dict[str, np.ndarray]:
    """A task's merges as the columns of a sweep file's table (systems numbered in
    the grid point: the task's first is ``start``)."""
    columns = Merge.columns(merges)
    columns["system"] = columns["system"] + start
    return columns


def _passage_times(passages: list[Passage], m: int) -> np.ndarray:
    """Each system's first passage time, shape (m,) (inf: none recorded)."""
    out = np.full(m, np.inf)
    for p in passages:
        out[p.system] = p.time
    return out
