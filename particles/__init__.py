"""particles: fast, validated simulator of self-attention dynamics on the sphere.

The public API::

    import particles
    traj = particles.simulate(64, 3, beta=1.0, T=10.0, seed=0)
    traj.positions.shape            # (frames, n, d)
"""

from particles.config import SimulationConfig
from particles.engine import IntegrationError, StepSizeWarning, run, simulate
from particles.fields import KERNELS, MODELS
from particles.integrators import INTEGRATORS
from particles.io import TrajectoryFileError, load, read_summary
from particles.runs import run_to_file
from particles.trajectory import Trajectory

__version__ = "0.1.0"

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
    "read_summary",
    "run",
    "run_to_file",
    "simulate",
]
