"""particles: fast, validated simulator of self-attention dynamics on the sphere.

The public API::

    import particles
    traj = particles.simulate(64, 3, beta=1.0, T=10.0, seed=0)
    traj.positions.shape            # (frames, n, d)

Names are loaded lazily (PEP 562 module ``__getattr__``): ``import particles``
and light modules such as :mod:`particles.sphere` or :mod:`particles.errors`
load neither Numba nor h5py; the first use of ``particles.simulate`` does.
Subpackages and modules load the same way on first attribute access:
``import particles; particles.analysis.ClusterDetector`` works.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Any

from particles.version import __version__

#: public name -> module that defines it (the one home of each name).
_API: dict[str, str] = {
    "INTEGRATORS": "particles.integrators",
    "KERNELS": "particles.fields",
    "MODELS": "particles.models",
    "IntegrationError": "particles.errors",
    "SimulationConfig": "particles.config",
    "StepSizeWarning": "particles.errors",
    "Trajectory": "particles.trajectory",
    "TrajectoryFileError": "particles.errors",
    "load": "particles.io",
    "load_density": "particles.io",
    "read_summary": "particles.io",
    "run": "particles.engine",
    "run_to_file": "particles.runs",
    "simulate": "particles.engine",
}

__all__ = [
    "INTEGRATORS",
    "KERNELS",
    "MODELS",
    "IntegrationError",
    "SimulationConfig",
    "StepSizeWarning",
    "Trajectory",
    "TrajectoryFileError",
    "__version__",
    "load",
    "load_density",
    "read_summary",
    "run",
    "run_to_file",
    "simulate",
]


def _submodules() -> set[str]:
    """Public subpackages and modules (``analysis``, ``io``, ``sphere``, ...)."""
    return {m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        if name in _submodules():  # particles.analysis without importing it first
            return importlib.import_module(f"particles.{name}")
        raise AttributeError(f"module 'particles' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # names for type checkers and IDEs
    from particles.config import SimulationConfig
    from particles.engine import run, simulate
    from particles.errors import IntegrationError, StepSizeWarning, TrajectoryFileError
    from particles.fields import KERNELS
    from particles.integrators import INTEGRATORS
    from particles.io import load, load_density, read_summary
    from particles.models import MODELS
    from particles.runs import run_to_file
    from particles.trajectory import Trajectory
