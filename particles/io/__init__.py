"""Files: the shared HDF5 layer and one module per file kind (pure file format).

Every kind of file registers itself in :data:`FILE_KINDS`
(:mod:`particles.io.kinds`; :func:`kind_of` names the kind of a file on
disk); importing this package loads every kind module, so the registry is
complete:

* trajectories (:mod:`particles.io.h5md`, H5MD 1.1): :func:`load` reads a
  file back as a :class:`~particles.trajectory.Trajectory`,
  :func:`read_summary` describes it from its header and last frame;
* model comparisons (:mod:`particles.io.compare`);
* mean-field densities (:mod:`particles.io.density`): :func:`load_density`,
  :func:`read_density_summary`;
* sweeps (:mod:`particles.io.sweep`);
* the analysis results of a trajectory, its sidecar ``run.analysis.h5``
  (:mod:`particles.io.analysis`).

The shared layer (header, opening, disk-space reservation, creating and
closing) is :mod:`particles.io.hdf5`; the frame writer the kinds of frames
share is :mod:`particles.io.frames`.  Runs streamed to disk
(:func:`particles.runs.run_to_file`) live in :mod:`particles.runs`; the
exceptions they raise are re-exported here.
"""

from particles.errors import OutputPathError, RunFailed, RunInterrupted
from particles.io import analysis, compare, density, h5md, sweep  # noqa: F401 (each registers its kind)
from particles.io.density import load_density, read_density_summary
from particles.io.h5md import (
    RunSummary,
    TrajectoryFileError,
    TrajectoryWriter,
    load,
    read_summary,
)
from particles.io.hdf5 import SCHEMA_VERSION
from particles.io.kinds import FILE_KINDS, FileKind, kind_of

__all__ = [
    "FILE_KINDS",
    "SCHEMA_VERSION",
    "FileKind",
    "OutputPathError",
    "RunFailed",
    "RunInterrupted",
    "RunSummary",
    "TrajectoryFileError",
    "TrajectoryWriter",
    "kind_of",
    "load",
    "load_density",
    "read_density_summary",
    "read_summary",
]
