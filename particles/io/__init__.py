"""Trajectory files: H5MD 1.1 writer and reader (pure file format).

Runs streamed to disk (:func:`particles.runs.run_to_file`) live in
:mod:`particles.runs`; the exceptions they raise are re-exported here.

* :func:`load` reads a file back as a :class:`~particles.trajectory.Trajectory`.
* :func:`read_summary` describes a file from its header and last frame.
* :func:`load_density` reads a mean-field density file
  (:mod:`particles.io.density`) as a :class:`~particles.meanfield.DensityResult`;
  :func:`load` refuses one, naming it.

The file layout (single systems and ensembles) is documented in
:mod:`particles.io.h5md`.
"""

from particles.errors import OutputPathError, RunFailed, RunInterrupted
from particles.io.density import load_density, read_density_summary
from particles.io.h5md import (
    SCHEMA_VERSION,
    RunSummary,
    TrajectoryFileError,
    TrajectoryWriter,
    load,
    read_summary,
)

__all__ = [
    "SCHEMA_VERSION",
    "OutputPathError",
    "RunFailed",
    "RunInterrupted",
    "RunSummary",
    "TrajectoryFileError",
    "TrajectoryWriter",
    "load",
    "load_density",
    "read_density_summary",
    "read_summary",
]
