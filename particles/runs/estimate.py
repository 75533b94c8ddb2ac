"""What a run will cost before it starts: memory, output size, rough time.

:func:`estimate` reads only the sizes of a configuration (tokens, dimension,
batch, heads, frames, steps); nothing is allocated, so a configuration that
claims 10^12 tokens or 10^10 frames is described at once.

Time is steps x drift evaluations per step x the model's cost of one
evaluation (facts of the run's plan, :meth:`particles.plan.Facts.evaluation_cost`
at the reference costs of :mod:`particles.fields.costs`: O(n^2) pairs for SA
and USA, O(n) tokens for Kuramoto, whose coupling is through the order
parameter, O(n K) for a spectral series), plus the observers of every frame,
at costs measured on the 2-core machines of DESIGN.md.  A fixed step's
steps are known; an adaptive integrator's follow the dynamics, so without
a probe they are counted at the initial ``dt`` and the time is marked as
a bound (:attr:`Estimate.bound`): those steps usually grow hundreds of
times longer.  :func:`particles.runs.probe.probed_estimate` counts them
with a short run of the model instead.
:func:`estimate_values` does the same from raw option values, before a
:class:`~particles.config.SimulationConfig` is built (building one already
allocates ``(d, d)`` matrices and the list of output times).
:func:`check_fits` refuses, in one line, what cannot fit in the memory
available or on the output's file system.

Memory and output are orders of magnitude (a factor of two either way),
meant to stop a mistyped ``--n 1e12`` before it allocates terabytes.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from particles.config import SimulationConfig
from particles.fields import costs
from particles.io.density import grid_shape
from particles.io.h5md import expected_frames
from particles.plan import facts

__all__ = ["Estimate", "available_memory", "check_fits", "estimate", "estimate_values",
           "frame_seconds", "meanfield_estimate"]

#: working copies of the state an integrator keeps per system (stages, errors,
#: trial state), counted generously.
STATE_COPIES = 12
#: seconds per (token pair x dimension) of the simpler passes (statistics,
#: FFTs), on one core, roughly.
SECONDS_PER_PAIR_OP = 2e-9
#: the engine's own cost of a frame (observers aside), seconds.
SECONDS_PER_FRAME = 1e-4
#: bytes one stored float takes in memory as a Python float inside a tuple.
PY_FLOAT = 32
#: a process needs this much beyond its arrays (interpreter, Numba, h5py).
BASE_MEMORY = 300 * 2**20


def _size(n: float) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.2g} s"
    if s < 7200:
        return f"{s / 60:.2g} min"
    if s < 86400 * 2:
        return f"{s / 3600:.2g} h"
    if s < 86400 * 365 * 2:
        return f"{s / 86400:.2g} days"
    return f"{s / (86400 * 365):.2g} years"


@dataclass(frozen=True)
class Estimate:
    """Rough cost of a run.

    Attributes
    ----------
    frames : int
        Frames of the complete run.
    steps : float
        Integration steps (for adaptive integrators, at the initial ``dt``).
    memory_bytes : int
        Peak memory of the process, roughly.
    output_bytes : int
        Size of the complete output file, roughly (uncompressed).
    seconds : float
        Wall time on one core: an estimate within a factor of about two or
        three, or a bound (``bound``).
    bound : bool
        Whether ``steps`` and ``seconds`` bound the run rather than estimate
        it: adaptive steps counted at the initial ``dt`` (they usually grow
        far longer) or past a probe at its last rate, Sinkhorn iterations at
        their cap.
    basis : str
        Where the steps come from, in words (for :meth:`lines`).
    speed : float or None
        This machine's measured cost of the run's drift evaluations relative
        to the reference costs of this module
        (:func:`particles.runs.probe.machine_speed`), which ``seconds``
        includes; None: the reference costs as they are.
    spread : tuple of float or None
        The least and the most ``seconds`` of the draws a probe saw, where
        ``seconds`` is their mean: when a run's coincident tokens collapse
        is round-off's lottery (:mod:`particles.runs.probe`); None: one value.
    """

    frames: int
    steps: float
    memory_bytes: int
    output_bytes: int
    seconds: float
    bound: bool = False
    basis: str = ""
    speed: float | None = None
    spread: tuple[float, float] | None = None

    def lines(self) -> list[str]:
        """The estimate in words, one item per line."""
        what = "at most about " if self.bound else ""
        kind = "an upper bound" if self.bound else "an estimate"
        basis = f"; {self.basis}" if self.basis else ""
        where = ("one core of the reference machine" if self.speed is None else
                 f"one core, timed here at {self.speed:.2g}x the reference costs")
        spread = ("" if self.spread is None else f"; {_duration(self.spread[0])} to "
                  f"{_duration(self.spread[1])} as its tokens collapse early or late")
        return [
            f"frames       {self.frames}",
            f"steps        {'at most ' if self.bound else ''}{self.steps:.4g}{basis}",
            f"memory       {_size(self.memory_bytes)} (peak, rough)",
            f"output       {_size(self.output_bytes)}",
            f"time         {what}{_duration(self.seconds)} ({kind}: integration on {where}; "
            f"compiling adds 10-30 s{spread})",
        ]


def _estimate(
    *, n: int, d: int, batch: int, heads: int, frames: int, steps: float, stages: int,
    observables: int, weights_per_system: bool, times_in_memory: int,
    evaluation: float = 0.0, frame_seconds: float = 0.0, bound: bool = False, basis: str = "",
    speed: float | None = None,
) -> Estimate:
    state = 8 * batch * n * d
    weight_sets = batch if weights_per_system else 1
    matrices = 8 * d * d * (4 + 3 * heads * weight_sets)
    frame_bytes = state + 16 + 8 * batch * observables
    memory = (
        BASE_MEMORY + STATE_COPIES * state + matrices + 8 * batch * n  # labels, masses
        + 2 * frame_bytes + times_in_memory
    )
    output = frames * frame_bytes + 64 * 1024
    seconds = batch * (steps * stages * evaluation + frames * frame_seconds)
    return Estimate(
        frames=int(frames),
        steps=float(steps),
        memory_bytes=int(memory),
        output_bytes=int(output),
        seconds=float(seconds),
        bound=bound,
        basis=basis,
        speed=speed,
    )


def frame_seconds(config: SimulationConfig) -> float:
    """Seconds of one frame of one system beyond its steps: the engine's own
    (:data:`SECONDS_PER_FRAME`) and the observers' by their cost class (an
    O(n^2) one visits every pair once, as a drift evaluation does; the
    pairwise set on the circle at beta = 0 sorts angles instead)."""
    from particles.observables import ALL_OBSERVERS
    from particles.observables.pairwise import CIRCLE_MIN_N

    names = set(config.observables or ())
    n = config.n
    sorted_angles = config.d == 2 and config.beta == 0.0 and n >= CIRCLE_MIN_N
    quadratic = {k for k in names if ALL_OBSERVERS[k].cost == "O(n^2)"}
    if sorted_angles:
        quadratic.discard("pairwise")
    out = SECONDS_PER_FRAME + n * config.d * costs.SECONDS_PER_PAIR_DIM * 10
    if quadratic:
        out += facts(config).pass_cost
    elif "pairwise" in names:
        out += n * max(1.0, math.log2(n)) * costs.SECONDS_PER_TOKEN
    return out


def estimate(config: SimulationConfig, *, steps: float | None = None,
             basis: str | None = None, work: float = 1.0,
             speed: float | None = None, bound: bool = False) -> Estimate:
    """The rough cost of running ``config`` (nothing is allocated).

    Parameters
    ----------
    config : SimulationConfig
    steps : float, optional
        Steps (attempts) of one system, where known otherwise: an adaptive
        run's from :func:`particles.runs.probe.probe_steps`.  By default a
        fixed step's count, and an adaptive run's at its initial ``dt`` (a
        bound).
    basis : str, optional
        Where ``steps`` comes from, in words.
    work : float
        The share of the steps' work on all tokens (a probe's count of
        collapsed clusters, :class:`particles.runs.probe.StepProbe`); 1 when
        not known.
    speed : float, optional
        This machine's cost of a drift evaluation relative to the reference
        costs (:func:`particles.runs.probe.machine_speed`); it scales the
        steps' and the frames' time.  By default the reference costs.
    bound : bool
        Whether the given ``steps`` bound the run's rather than estimate them
        (a probe that could only extrapolate at its last rate).

    Returns
    -------
    Estimate
    """
    frames = expected_frames(config)
    run = facts(config)
    adaptive = run.adaptive
    sinkhorn = config.normalization == "sinkhorn"
    bound = bound or sinkhorn
    if steps is None:
        steps = run.steps
        bound |= adaptive and steps > 0
        basis = ("every adaptive step at the initial dt (adaptive steps usually grow far "
                 "longer)" if adaptive else "fixed steps")
    if sinkhorn:
        basis += f"; Sinkhorn at its cap of {config.sinkhorn_iters} iterations"
    times = PY_FLOAT * len(config.save_times or ()) + 8 * frames
    evaluation = run.evaluation_cost() * work * (speed or 1.0)
    if run.collapses and config.T > 0 and work == 1.0:
        note = "not counted: coincident tokens collapse once clusters form (then faster)"
        basis = f"{basis}; {note}" if basis else note
    return _estimate(
        n=config.n, d=config.d, batch=config.batch or 1, heads=config.heads, frames=frames,
        steps=steps, stages=run.evaluations,
        observables=len(config.observables or ()) + 2,
        weights_per_system=config.weight_draws != "shared", times_in_memory=times,
        evaluation=evaluation, frame_seconds=frame_seconds(config) * (speed or 1.0),
        bound=bound, basis=basis or "", speed=speed,
    )


def _spec_count(spec: Any) -> int:
    """Number of times in a ``--save-times`` value, without building them (0 if unknown)."""
    if isinstance(spec, str):
        head, _, rest = spec.partition(":")
        if head in ("log", "lin"):
            try:
                return max(0, int(rest.split(":")[-1]))
            except ValueError:
                return 0
        return spec.count(",") + 1
    try:
        return len(spec)
    except TypeError:
        return 0


def estimate_values(values: dict[str, Any]) -> Estimate:
    """A lower bound of :func:`estimate` from raw configuration values.

    For use before a :class:`~particles.config.SimulationConfig` is built
    (which allocates ``(d, d)`` matrices and the output times).  Values that
    are missing or not positive integers count as 1.

    Parameters
    ----------
    values : dict
        Field name -> value (``n``, ``d``, ``batch``, ``heads``,
        ``save_times``; others are ignored).

    Returns
    -------
    Estimate
        Memory from the sizes alone; frames from ``save_times`` only.
    """

    def count(name: str) -> int:
        v = values.get(name)
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 1

    frames = _spec_count(values.get("save_times"))
    return _estimate(
        n=count("n"), d=count("d"), batch=count("batch"), heads=count("heads"),
        frames=frames, steps=0, stages=1, observables=0, weights_per_system=False,
        times_in_memory=(PY_FLOAT + 16) * frames,
    )


#: arrays of the grid's size a mean-field solve keeps (stages of DOPRI5, the
#: Fourier transforms and the velocity field, counted generously).
MEANFIELD_ARRAYS = 24


def meanfield_estimate(config: Any) -> Estimate:
    """The rough cost of a mean-field solve (a :class:`~particles.meanfield.MeanFieldConfig`
    or :class:`~particles.meanfield.sphere_config.SphereFieldConfig`),
    counted from its sizes: nothing is allocated (``--modes 1e13`` is described at once).

    Returns
    -------
    Estimate
        ``steps`` at one step per save interval (adaptive: a lower bound),
        ``seconds`` at two FFTs per stage.
    """
    M = int(np.prod(grid_shape(config)))  # grid points (the circle's modes, S^2's rings)
    if config.save_times is not None:
        frames = 1 + sum(1 for t in config.save_times if t > 0.0)
    elif config.save_every is None:
        frames = 2
    else:
        frames = math.floor(float(config.T) / float(config.save_every) * (1 + 1e-12)) + 2
    per_frame = 8 * (M + 8)
    return Estimate(frames=int(frames), steps=float(frames),
                    memory_bytes=int(BASE_MEMORY + MEANFIELD_ARRAYS * 16 * M),
                    output_bytes=int(frames * per_frame + 64 * 1024),
                    seconds=float(frames) * 7 * 2 * 5 * M * max(1.0, math.log2(max(M, 2)))
                    * SECONDS_PER_PAIR_OP)


def available_memory() -> int:
    """Bytes of memory available to a new allocation (``MemAvailable``, else free pages)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 2**63


def file_size_limit() -> int | None:
    """The largest file this process may write (``RLIMIT_FSIZE``, bytes), or None."""
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def check_fits(est: Estimate, out: str | Path | None = None, *, written: int = 0,
               sizes: str = "--n, --d, --batch, --heads") -> None:
    """Refuse a run that cannot fit in memory or on the output's file system.

    Parameters
    ----------
    est : Estimate
    out : str or Path, optional
        The output file (its directory's free space is checked).
    written : int
        Bytes of the output already on disk (a resumed run needs the rest).
    sizes : str
        The options that set the memory, for the message.

    Raises
    ------
    ValueError
        One line with the need and what is available.
    """
    free = available_memory()
    if est.memory_bytes > free:
        raise ValueError(
            f"the run needs about {_size(est.memory_bytes)} of memory and "
            f"{_size(free)} is available; reduce {sizes} or the number of output "
            "times (--T, --save-every, --save-times; or pass --no-size-check to try anyway)"
        )
    limit = file_size_limit()
    if limit is not None and est.output_bytes > limit:
        raise ValueError(
            f"the output needs about {_size(est.output_bytes)} and this process may write "
            f"files of at most {_size(limit)} (ulimit -f); save fewer frames (--save-every, "
            "--save-times), raise the limit, or pass --no-size-check to try anyway"
        )
    if out is None:
        return
    directory = Path(out).parent
    try:
        disk = shutil.disk_usage(directory).free
    except OSError:
        return  # the output path check reports a missing directory
    need = max(0, est.output_bytes - written)
    if need > disk:
        raise ValueError(
            f"the output needs about {_size(need)} and {directory} has {_size(disk)} free; "
            "save fewer frames (--save-every, --save-times), free space, or pass "
            "--no-size-check to try anyway"
        )
