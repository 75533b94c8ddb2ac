"""Analysis of trajectories: clusters, merges, histograms, scalars.

Every analysis object follows one convention (after freud): settings in the
constructor, ``compute(...)`` returns ``self``, results are attributes that
raise :class:`NotComputedError` until computed::

    ClusterDetector(eps=0.05).compute(x).labels       # .num_clusters: 0 when spread
    MergeAnalysis(eps=0.05, min_decades=1.0).compute(traj).formation_time
    InnerProductHistogram(bins=50).compute(x, reset=False).counts
    Scalars(beta=9.0).compute(x).energy_normalized

:func:`analyze` runs all of them over a trajectory; :func:`analyze_file`
does it for a trajectory file and stores the results in its ``/analysis``
group (layout in :mod:`particles.analysis.report`).
"""

from particles.analysis._base import NotComputedError
from particles.analysis.clusters import (
    DEFAULT_MASS_FRACTION,
    METHODS,
    ClusterDetector,
    cluster_sizes_centers,
    mass_counts,
    single_linkage_labels,
)
from particles.analysis.components import DEFAULT_EPS, component_labels, count_clusters
from particles.analysis.crossings import first_crossing
from particles.analysis.histograms import InnerProductHistogram, pair_histogram
from particles.analysis.merges import (
    MergeAnalysis,
    Plateau,
    Timescales,
    find_plateaus,
    find_timescales,
    two_cluster_merge_time,
)
from particles.analysis.modes import DEFAULT_MAX_MODE, fourier_coefficients, fourier_modes
from particles.analysis.optimal import OptimalConfiguration, repulsive_optimum
from particles.analysis.report import (
    ANALYSIS_GROUP,
    AnalysisResult,
    analyze,
    analyze_file,
    read_analysis,
    write_analysis,
)
from particles.analysis.scalars import Scalars, close_pair_fraction, span_dimension
from particles.analysis.tracking import MergeEvent, MergeTree, SplitEvent, track_labels

__all__ = [
    "ANALYSIS_GROUP",
    "DEFAULT_EPS",
    "DEFAULT_MASS_FRACTION",
    "DEFAULT_MAX_MODE",
    "METHODS",
    "AnalysisResult",
    "ClusterDetector",
    "InnerProductHistogram",
    "MergeAnalysis",
    "MergeEvent",
    "MergeTree",
    "NotComputedError",
    "OptimalConfiguration",
    "Plateau",
    "Scalars",
    "SplitEvent",
    "Timescales",
    "analyze",
    "analyze_file",
    "close_pair_fraction",
    "cluster_sizes_centers",
    "component_labels",
    "count_clusters",
    "find_plateaus",
    "find_timescales",
    "first_crossing",
    "fourier_coefficients",
    "fourier_modes",
    "mass_counts",
    "pair_histogram",
    "read_analysis",
    "repulsive_optimum",
    "single_linkage_labels",
    "span_dimension",
    "track_labels",
    "two_cluster_merge_time",
    "write_analysis",
]
