"""Tasks of a sweep: a chunk of systems at one grid point, run as one ensemble.

:func:`run_task` runs the systems ``[start, stop)`` of one grid point as one
batch through the engine (one compiled call per save interval for all of
them) and reduces every saved frame at once to per-system statistics; the
positions of a frame are dropped once reduced (kept only with
``positions=True``).  Per system and save time:

* ``pair_counts``: pairs ``i < j`` with ``<x_i, x_j> > 1 - delta``, one count
  per threshold;
* ``cluster_count``: the clusters of the components detector
  (:func:`particles.analysis.components.component_labels`: connected
  components of "geodesic distance < eps");
* ``energy``: the ``energy`` observable (:mod:`particles.observables`; the
  energy of the kernel that ran where one is defined);
* ``order_parameter``: the ``order`` observer's ``r``;

the first three from one compiled pass over the pairs of every system
(:func:`frame_statistics`: one inner product per pair, the exponentials
vectorised; tested against the detector and the observables);

and per system: the formation and first-merge times of its cluster-count
series (:mod:`particles.analysis.merges`: the first long-lived plateau, NaN
when not seen), and ``single_cluster_time``, the first save time with one
cluster (inf if never).

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

from particles._numba import cached, prange
from particles.analysis.components import find_root
from particles.analysis.merges import DEFAULT_MIN_DECADES
from particles.config import SimulationConfig, parse_init
from particles.fastexp import exp_row
from particles.observables import energy_definition, kernel_energy
from particles.seeds import sweep_noise_keys, sweep_system_rng
from particles.sphere import INITIAL_CONDITIONS

__all__ = ["Task", "TaskResult", "frame_statistics", "run_task", "system_positions", "timescales"]


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


# ------------------------------------------------------------ compiled kernels
@cached(parallel=True)
def _frame_stats(Xb, thresholds, cos_eps, beta, m, pairs, counts, esum):
    """One pass over the pairs i < j of every system b of Xb (B, n, d):

    pairs[b, k] = #{<x_i, x_j> > thresholds[k]}; counts[b] = connected components
    of ``<x_i, x_j> > cos_eps`` (the components detector's graph);
    esum[b] = sum_{i<j} m_i m_j exp(beta (<x_i, x_j> - 1)) (beta > 0) or
    sum_{i<j} m_i m_j <x_i, x_j> (beta = 0).
    """
    B, n, d = Xb.shape
    K = thresholds.shape[0]
    for b in prange(B):
        X = Xb[b]
        buf = np.empty(n)
        parent = np.arange(n)
        for k in range(K):
            pairs[b, k] = 0
        e_acc = 0.0
        for i in range(n - 1):
            row = buf[i + 1:n]
            for j in range(row.shape[0]):
                s = 0.0
                for a in range(d):
                    s += X[i, a] * X[i + 1 + j, a]
                row[j] = s
            for k in range(K):
                t = thresholds[k]
                c = 0
                for j in range(row.shape[0]):
                    if row[j] > t:
                        c += 1
                pairs[b, k] += c
            for j in range(row.shape[0]):
                if row[j] > cos_eps:
                    ri = find_root(parent, i)
                    rj = find_root(parent, i + 1 + j)
                    if ri != rj:
                        parent[max(ri, rj)] = min(ri, rj)
            mrow = m[i + 1:n]
            e = 0.0
            if beta > 0.0:
                for j in range(row.shape[0]):
                    row[j] = beta * (row[j] - 1.0)
                exp_row(row, row)
            for j in range(row.shape[0]):
                e += mrow[j] * row[j]
            e_acc += m[i] * e
        esum[b] = e_acc
        c = 0
        for i in range(n):
            if find_root(parent, i) == i:
                c += 1
        counts[b] = c


def frame_statistics(x: np.ndarray, deltas: np.ndarray, eps: float, beta: float,
                     masses: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Close pairs, cluster counts and the default energy of every system, in one
    compiled pass over the pairs.

    Parameters
    ----------
    x : ndarray, shape (m, n, d)
    deltas : ndarray, shape (k,)
    eps : float
        Linking distance of the clusters (the components detector).
    beta : float
    masses : ndarray, shape (n,)

    Returns
    -------
    pairs : ndarray of int64, shape (m, k)
        As :func:`close_pairs`.
    counts : ndarray of int64, shape (m,)
        As :func:`particles.analysis.components.component_labels`.
    energy : ndarray, shape (m,)
        ``1/(2 beta N^2) sum_ij m_i m_j exp(beta <x_i, x_j>)`` (its beta = 0
        limit ``1/(2 N^2) sum_ij m_i m_j <x_i, x_j>``), the default ``energy``
        observable (:mod:`particles.observables`) to rounding.
    """
    xb = np.ascontiguousarray(x, dtype=np.float64)
    B = xb.shape[0]
    m = np.ascontiguousarray(masses, dtype=np.float64)
    pairs = np.empty((B, len(deltas)), dtype=np.int64)
    counts = np.empty(B, dtype=np.int64)
    esum = np.empty(B)
    _frame_stats(xb, 1.0 - np.asarray(deltas, dtype=np.float64), float(np.cos(eps)),
                 float(beta), m, pairs, counts, esum)
    N = m.sum()
    diag = float(np.sum(m * m))
    if beta > 0.0:
        # off-diagonal pairs twice, the diagonal (exp(0) = 1) once
        scale = np.exp(beta) / (2.0 * beta) if beta < 709.0 else np.inf
        energy = scale * (diag + 2.0 * esum) / (N * N)
    else:
        energy = (diag + 2.0 * esum) / (2.0 * N * N)
    return pairs, counts, energy


def close_pairs_reference(x: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """Plain NumPy twin of the close-pair counts of :func:`frame_statistics`
    (Gram matrices): shape (m, k) int64."""
    x = np.asarray(x, dtype=np.float64)
    iu = np.triu_indices(x.shape[1], 1)
    g = np.einsum("bia,bja->bij", x, x)[:, iu[0], iu[1]]
    thr = 1.0 - np.asarray(deltas, dtype=np.float64)
    return (g[:, :, None] > thr[None, None, :]).sum(axis=1).astype(np.int64)


@cached()
def _timescales(times, counts, min_decades, time_unit, formation, first_merge):
    """Formation and first-merge time of every series counts[b] (F,), as
    :func:`particles.analysis.merges.find_timescales` of its plateaus."""
    B, F = counts.shape
    for b in range(B):
        formation[b] = np.nan
        first_merge[b] = np.nan
        a = 0
        for k in range(1, F + 1):
            if k < F and counts[b, k] == counts[b, k - 1]:
                continue
            censored = k == F
            e = F - 1 if censored else k  # first frame after the plateau, or the last
            last = e if censored else e - 1
            t_last = times[last]
            if t_last > 0.0:
                length = np.log10(t_last / max(times[a], time_unit))
            else:
                length = -np.inf
            if length >= min_decades:
                formation[b] = times[a]
                if not censored:
                    first_merge[b] = times[e]
                break
            a = k


def timescales(times: np.ndarray, counts: np.ndarray, *, min_decades: float = DEFAULT_MIN_DECADES,
               time_unit: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Formation and first-merge times of cluster-count series (compiled).

    Parameters
    ----------
    times : ndarray, shape (F,)
    counts : ndarray of int, shape (m, F)

    Returns
    -------
    formation_time, first_merge_time : ndarray, shape (m,)
        NaN where not seen (the definitions of :mod:`particles.analysis.merges`).
    """
    c = np.ascontiguousarray(counts, dtype=np.int64)
    form = np.empty(c.shape[0])
    merge = np.empty(c.shape[0])
    if c.shape[1]:
        _timescales(np.ascontiguousarray(times, dtype=np.float64), c, float(min_decades),
                    float(time_unit), form, merge)
    else:
        form[:] = merge[:] = np.nan
    return form, merge


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

    from particles.engine import iter_frames

    t0 = time.perf_counter()
    m = task.systems
    base = SimulationConfig.from_dict(task.config)
    # the O(n) observer gives r; the pair statistics and the energy come from one
    # fused pass (frame_statistics), the energy of another kernel from its own
    config = base.replace(batch=m, init="array", observables=("order",), positions="none")
    definition = energy_definition(config)
    masses = config.mass_array()
    x0 = system_positions(base, task.seed, task.point, task.start, task.stop)
    keys = sweep_noise_keys(task.seed, task.point, range(task.start, task.stop))
    times = config.output_times()
    F = times.size
    deltas = np.asarray(task.deltas, dtype=np.float64)
    pairs = np.empty((m, F, deltas.size), dtype=np.int64)
    counts = np.empty((m, F), dtype=np.int64)
    energy = np.empty((m, F))
    order = np.empty((m, F))
    pos = np.empty((m, F, config.n, config.d)) if task.positions else None
    for frame in iter_frames(config, x0, keys=keys):
        k = frame.index
        X = frame.positions
        pairs[:, k], counts[:, k], e = frame_statistics(X, deltas, task.eps, config.beta,
                                                        masses)
        energy[:, k] = e if definition.default else kernel_energy(X, masses,
                                                                  definition)["energy"]
        order[:, k] = frame.observables["order_parameter"]
        if pos is not None:
            pos[:, k] = X
    formation, first_merge = timescales(times, counts, min_decades=task.min_decades,
                                        time_unit=task.time_unit)
    one = counts == 1
    first_one = np.argmax(one, axis=1)
    single = np.where(one.any(axis=1), times[first_one], np.inf)
    return TaskResult(
        point=task.point, start=task.start, stop=task.stop, pair_counts=pairs,
        cluster_count=counts, energy=energy, order_parameter=order,
        formation_time=formation, first_merge_time=first_merge, single_cluster_time=single,
        positions=pos, seconds=time.perf_counter() - t0,
    )
