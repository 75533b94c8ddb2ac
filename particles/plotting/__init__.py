"""Pictures of runs, sweeps and mean-field densities (the face of the package).

* :mod:`~particles.plotting.axes`: plot functions ``f(..., ax=None) -> ax``
  that draw into given axes (histograms, tokens, angles, counts, energy);
* :mod:`~particles.plotting.run`: the whole figures of one run
  (:func:`make_figure`, :data:`KINDS`) and writing them (:func:`save_plot`,
  :func:`plot_file`, what ``particles plot`` calls);
* :mod:`~particles.plotting.movie`: the tokens moving (:func:`save_movie`);
* :mod:`~particles.plotting.kinds`: figures by file kind, ``FIGURES[kind][name]``;
* one module per further family: :mod:`~particles.plotting.sweep`,
  :mod:`~particles.plotting.density`, :mod:`~particles.plotting.compare`,
  :mod:`~particles.plotting.kernels`.

Figures are :class:`matplotlib.figure.Figure` objects, never pyplot, so no GUI
backend is touched; every figure reaches its file through
:func:`~particles.plotting.save.save_figure` (a movie through
:func:`particles.paths.replacing`), whole or not at all.
"""

from particles.plotting import density, sweep  # noqa: F401 (each registers its figures)
from particles.plotting.axes import (
    BANDS,
    largest_gap_cut,
    merge_label_groups,
    plot_angles,
    plot_cluster_count,
    plot_energy,
    plot_histogram,
    plot_tokens,
    principal_directions,
)
from particles.plotting.kinds import DEFAULT_FIGURES, FIGURES, FigureKind
from particles.plotting.movie import save_movie
from particles.plotting.run import (
    DEFAULT_KIND,
    KINDS,
    default_frames,
    default_output,
    make_figure,
    plot_file,
    save_plot,
)
from particles.plotting.save import save_figure

__all__ = [
    "BANDS", "DEFAULT_FIGURES", "DEFAULT_KIND", "FIGURES", "KINDS", "FigureKind",
    "default_frames", "default_output", "largest_gap_cut", "make_figure", "merge_label_groups",
    "plot_angles", "plot_cluster_count", "plot_energy", "plot_file", "plot_histogram",
    "plot_tokens", "principal_directions", "save_figure", "save_movie", "save_plot",
]
