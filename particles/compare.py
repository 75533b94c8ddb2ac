"""SA, USA and Kuramoto from one initial condition on the circle (moved to
:mod:`particles.runs.compare`; this module re-exports its public names)."""

from particles.runs.compare import (
    DEFAULT_MODELS,
    LABELS,
    ComparisonFailed,
    ComparisonInterrupted,
    ComparisonResult,
    ModelSummary,
    check_models,
    compare_models,
    comparison_figure,
    load_comparison,
    model_configs,
    plot_comparison,
)

__all__ = [
    "DEFAULT_MODELS",
    "LABELS",
    "ComparisonFailed",
    "ComparisonInterrupted",
    "ComparisonResult",
    "ModelSummary",
    "check_models",
    "compare_models",
    "comparison_figure",
    "load_comparison",
    "model_configs",
    "plot_comparison",
]
