"""Parameter sweeps: ensembles over grids of parameters, locally or on a Dask cluster.

* :class:`SweepSpec` (:mod:`particles.sweep.grid`): fixed fields, grid axes,
  systems per grid point, thresholds, root seed;
* :func:`run_sweep` (:mod:`particles.sweep.run`): the session, writing one
  sweep file (:mod:`particles.io.sweep`) as tasks finish, resumable;
* :func:`make_backend`, :class:`LocalBackend`, :class:`Backend`
  (:mod:`particles.sweep.backends`): where tasks run;
* :class:`Task`, :func:`run_task` (:mod:`particles.sweep.tasks`): a chunk of
  systems at one grid point, run as one ensemble;
* :func:`load` -> ``xarray.Dataset``, :func:`export_csv`
  (:mod:`particles.sweep.dataset`).

Names load lazily: ``import particles.sweep`` loads neither Numba nor h5py.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_API: dict[str, str] = {
    "Backend": "particles.sweep.backends",
    "LocalBackend": "particles.sweep.backends",
    "make_backend": "particles.sweep.backends",
    "SweepSpec": "particles.sweep.grid",
    "parse_value": "particles.sweep.grid",
    "read_sweep_file": "particles.sweep.grid",
    "Task": "particles.sweep.tasks",
    "TaskResult": "particles.sweep.tasks",
    "run_task": "particles.sweep.tasks",
    "SweepResult": "particles.sweep.run",
    "run_sweep": "particles.sweep.run",
    "plan_tasks": "particles.sweep.run",
    "default_chunk": "particles.sweep.run",
    "read_spec": "particles.sweep.run",
    "load": "particles.sweep.dataset",
    "export_csv": "particles.sweep.dataset",
}

__all__ = [
    "Backend",
    "LocalBackend",
    "SweepResult",
    "SweepSpec",
    "Task",
    "TaskResult",
    "default_chunk",
    "export_csv",
    "load",
    "make_backend",
    "parse_value",
    "plan_tasks",
    "read_spec",
    "read_sweep_file",
    "run_sweep",
    "run_task",
]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'particles.sweep' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from particles.sweep.backends import Backend, LocalBackend, make_backend
    from particles.sweep.dataset import export_csv, load
    from particles.sweep.grid import SweepSpec, parse_value, read_sweep_file
    from particles.sweep.run import (
        SweepResult,
        default_chunk,
        plan_tasks,
        read_spec,
        run_sweep,
    )
    from particles.sweep.tasks import Task, TaskResult, run_task
