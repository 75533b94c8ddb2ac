"""How the engine splits a run's work over threads, and where layers begin.

Every layout advances each system by the same serial step: the same bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import nullcontext

import numba
from threadpoolctl import ThreadpoolController

from particles.config import SimulationConfig
from particles.fields import CompiledField

#: one system with at least this many tokens is parallelised over rows.
ROWS_PARALLEL_MIN_N = 512

_THREADPOOLS: ThreadpoolController | None = None


def layout_of(field: CompiledField, batch: int, n: int) -> str:
    """How the runners split the work: ``"rows"`` (one large system, its rows
    over threads), ``"batch"`` (systems over threads) or ``"serial"`` (one
    small system, or one Numba thread: systems in turn, and no parallel region
    to compile, which in a one-thread sweep worker halves the runner's compile).
    Every layout advances each system by the same serial step: the same bits."""
    threads = numba.get_num_threads()
    if field.pairwise and batch < threads and n >= ROWS_PARALLEL_MIN_N:
        return "rows"
    return "serial" if batch == 1 or threads == 1 else "batch"


def drift_of(field: CompiledField, layout: str) -> tuple[Callable, int]:
    """``(drift, wsize)``: the drift the runners call for a layout (parallel over
    rows only for ``"rows"``) and its scratch size."""
    if layout == "rows":
        return field.parallel, field.workspace(numba.get_num_threads())
    return field.serial, field.workspace(1)


def execution_plan(config: SimulationConfig, field: CompiledField
                   ) -> tuple[str, Callable, int]:
    """``(layout, drift, wsize)`` of a configuration's field: the layout
    (:func:`layout_of`), the drift the runners call and its scratch size."""
    layout = layout_of(field, config.batch or 1, config.n)
    return (layout, *drift_of(field, layout))


def blas_guard(field: CompiledField, layout: str):
    """Single-threaded BLAS while Numba threads run BLAS blocks (two spinning
    pools on two cores make a step many times slower): for fields that declare
    BLAS use (:attr:`CompiledField.blas`)."""
    global _THREADPOOLS
    if not field.blas or layout == "serial":
        return nullcontext()
    if _THREADPOOLS is None:
        _THREADPOOLS = ThreadpoolController()
    return _THREADPOOLS.limit(limits=1, user_api="blas")


def layer_segments(t0: float, t1: float, layer_time: float | None
                    ) -> list[tuple[float, float, int]]:
    """Split ``[t0, t1]`` at multiples of ``layer_time``: ``(start, stop, layer)``.

    Layer ``l`` covers ``[l * layer_time, (l + 1) * layer_time)``; without
    layers everything is layer 0.
    """
    if layer_time is None:
        return [(t0, t1, 0)]
    out = []
    a = t0
    # the tolerance keeps a save point that equals a layer boundary from
    # producing an empty segment
    layer = math.floor(a / layer_time + 1e-9)
    while a < t1 - 1e-12 * max(1.0, abs(t1)):
        b = min(t1, (layer + 1) * layer_time)
        if b - a > 1e-12 * max(1.0, abs(b)):
            out.append((a, b, layer))
        a = b
        layer += 1
    return out or [(t0, t1, math.floor(t0 / layer_time + 1e-9))]

