"""Trajectory files: H5MD 1.1 writer and reader, and runs streamed to disk.

* :func:`run_to_file` runs a configuration into a file that never loses
  data (frames flushed as the run goes; resumable; no silent overwrite).
* :func:`load` reads a file back as a :class:`~particles.trajectory.Trajectory`.
* :func:`read_summary` describes a file from its header and last frame.

The file layout (single systems and ensembles) is documented in
:mod:`particles.io.h5md`.
"""

from particles.io.h5md import (
    SCHEMA_VERSION,
    RunSummary,
    TrajectoryFileError,
    TrajectoryWriter,
    load,
    read_summary,
)
from particles.io.run import (
    OutputPathError,
    RunFailed,
    RunInterrupted,
    check_output_path,
    run_to_file,
)

__all__ = [
    "SCHEMA_VERSION",
    "OutputPathError",
    "RunFailed",
    "RunInterrupted",
    "RunSummary",
    "TrajectoryFileError",
    "TrajectoryWriter",
    "check_output_path",
    "load",
    "read_summary",
    "run_to_file",
]
