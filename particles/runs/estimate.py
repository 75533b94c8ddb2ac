"""What a run will cost before it starts: memory, output size, rough time.

:func:`estimate` reads only the sizes of a configuration (tokens, dimension,
batch, heads, frames, steps); nothing is allocated, so a configuration that
claims 10^12 tokens or 10^10 frames is described at once.
:func:`estimate_values` does the same from raw option values, before a
:class:`~particles.config.SimulationConfig` is built (building one already
allocates ``(d, d)`` matrices and the list of output times).
:func:`check_fits` refuses, in one line, what cannot fit in the memory
available or on the output's file system.

The figures are orders of magnitude (a factor of two either way), meant to
stop a mistyped ``--n 1e12`` before it allocates terabytes, not to plan a
cluster job.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from particles.config import SimulationConfig
from particles.integrators import INTEGRATORS
from particles.io.h5md import expected_frames

__all__ = ["Estimate", "available_memory", "check_fits", "estimate", "estimate_values",
           "meanfield_estimate"]

#: working copies of the state an integrator keeps per system (stages, errors,
#: trial state), counted generously.
STATE_COPIES = 12
#: seconds per (token pair x dimension x head x stage) on one core, roughly.
SECONDS_PER_PAIR_OP = 2e-9
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
        Wall time on one core, to an order of magnitude.
    """

    frames: int
    steps: float
    memory_bytes: int
    output_bytes: int
    seconds: float

    def lines(self) -> list[str]:
        """The estimate in words, one item per line."""
        return [
            f"frames       {self.frames}",
            f"steps        {self.steps:.4g}",
            f"memory       {_size(self.memory_bytes)} (peak, rough)",
            f"output       {_size(self.output_bytes)}",
            f"time         {_duration(self.seconds)} (integration on one core, order of "
            "magnitude; compiling adds 10-30 s)",
        ]


def _estimate(
    *, n: int, d: int, batch: int, heads: int, frames: int, steps: float, stages: int,
    observables: int, weights_per_system: bool, times_in_memory: int,
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
    work = steps * stages * batch * n * n * d * heads
    return Estimate(
        frames=int(frames),
        steps=float(steps),
        memory_bytes=int(memory),
        output_bytes=int(output),
        seconds=work * SECONDS_PER_PAIR_OP,
    )


def estimate(config: SimulationConfig) -> Estimate:
    """The rough cost of running ``config`` (nothing is allocated).

    Parameters
    ----------
    config : SimulationConfig

    Returns
    -------
    Estimate
    """
    frames = expected_frames(config)
    steps = math.ceil(config.T / config.dt) if config.T > 0 else 0
    times = PY_FLOAT * len(config.save_times or ()) + 8 * frames
    return _estimate(
        n=config.n, d=config.d, batch=config.batch or 1, heads=config.heads, frames=frames,
        steps=steps, stages=INTEGRATORS[config.integrator].evaluations,
        observables=len(config.observables or ()) + 2,
        weights_per_system=config.weight_draws != "shared", times_in_memory=times,
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
    """The rough cost of a mean-field solve (a :class:`~particles.meanfield.MeanFieldConfig`),
    counted from its sizes: nothing is allocated (``--modes 1e13`` is described at once).

    Returns
    -------
    Estimate
        ``steps`` at one step per save interval (adaptive: a lower bound),
        ``seconds`` at two FFTs per stage.
    """
    M = int(config.modes)
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
