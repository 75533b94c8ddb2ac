"""Every attention kernel from one initial condition (moved to
:mod:`particles.runs.kernels`; this module re-exports its public names)."""

from particles.runs.kernels import (
    KernelComparison,
    KernelRun,
    check_kernels,
    compare_kernels,
    default_times,
    kernel_comparison_figure,
    plot_kernel_comparison,
)

__all__ = [
    "KernelComparison",
    "KernelRun",
    "check_kernels",
    "compare_kernels",
    "default_times",
    "kernel_comparison_figure",
    "plot_kernel_comparison",
]
