"""Model comparison files: several runs from one initial condition in one H5MD file.

Layout (H5MD 1.1 allows several particle groups, and observables grouped by
particle group; https://www.nongnu.org/h5md/)::

    /h5md                              version = [1, 1], author, creator
    /particles/<model>                 one particle group per model ("sa", "usa", "kuramoto")
        box                            dimension = d, boundary = ["none"] * d
        position
            step    int64   (frames,)
            time    float64 (frames,)  the same output times for every model
            value   float64 (frames, n, d)
    /observables/<model>/<name>        sampled with that model's positions
        step, time                     hard links to /particles/<model>/position/{step,time}
        value   float64 (frames,)
    /parameters                        particles_schema = 1 (int), kind = "comparison",
                                       models (JSON list, in run order), seed (decimal
                                       string, shared by every model), complete = 0 or 1
        versions                       particles, numpy, numba, h5py, hdf5, python
        <model>                        config (JSON of that model's SimulationConfig),
                                       seed (decimal string), complete = 0 or 1

The writer and reader are those of single-run files (:mod:`particles.io.h5md`:
the same header, one particle group per model); this module names them.
Each ``/particles/<model>`` group with its ``/observables/<model>`` and
``/parameters/<model>`` holds exactly what a single-run file holds under
``/particles/tokens``, ``/observables`` and ``/parameters``
(:mod:`particles.io.h5md`), so each model reads back as a
:class:`~particles.trajectory.Trajectory` (:func:`load_comparison`).  The
``kind`` attribute tells the two file types apart; :func:`particles.io.load`
refuses a comparison file with a message pointing here.

Frames are buffered and written at least every ``flush_interval`` seconds
(value first, then observables, then time and step, as in
:mod:`particles.io.h5md`), and readers use the shortest of those lengths.
"""

from particles.io.h5md import (
    KIND,
    ComparisonWriter,
    ModelWriter,
    is_comparison,
    load_comparison,
)

__all__ = ["KIND", "ComparisonWriter", "ModelWriter", "is_comparison", "load_comparison"]
