"""Sessions: runs that drive the engine and the file writer.

* :func:`run_to_file` (:mod:`particles.runs.run`) streams one configuration
  into a trajectory file;
* :func:`compare_models` (:mod:`particles.runs.compare`) runs several models
  from one initial condition into one comparison file;
* :func:`compare_kernels` (:mod:`particles.runs.kernels`) runs several
  attention kernels from one initial condition;
* :func:`run_meanfield_to_file` (:mod:`particles.runs.meanfield`) streams a
  mean-field solve into a density file;
* :func:`initial_tokens` (:mod:`particles.runs.initial`): the initial tokens
  of a run, the one home every caller takes them from.
"""

from particles.runs.compare import compare_models
from particles.runs.initial import initial_tokens
from particles.runs.kernels import compare_kernels
from particles.runs.meanfield import run_meanfield_to_file
from particles.runs.run import RunResult, check_output_path, resume_path, run_to_file

__all__ = [
    "RunResult",
    "check_output_path",
    "compare_kernels",
    "compare_models",
    "initial_tokens",
    "resume_path",
    "run_meanfield_to_file",
    "run_to_file",
]
