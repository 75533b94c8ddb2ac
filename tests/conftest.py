"""Fixtures shared across test modules; one Numba thread and ``NUMBA_OPT=1`` by default.

Tests run with one Numba thread unless marked ``parallel``: with one thread a
batch of systems runs the serial runner (:func:`particles.engine.layout.layout_of`)
and a :class:`particles._numba.ByThreads` entry point its serial twin, so a
test compiles no parallel region (each takes about twice a serial one's
compile time, once per model, integrator and observable).  The parallel
variants are compiled by the tests marked ``parallel`` (every thread of the
process), which check them against the serial ones bit for bit.

Kernels compile at LLVM optimisation level 1 (``NUMBA_OPT=1``, unless set):
about a quarter less compile time, the suite's main cost, and the same bits
(strict IEEE code, :mod:`particles._numba`; ``tests/core/test_cache.py``
checks a process compiled at the default level against level-1 ones).
Entries compiled at level 1 are cached under their own names
(:func:`particles._numba.opt_suffix`): never served to a production run.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_OPT", "1")  # before Numba is imported (processes started inherit it)
# OpenMP threads that sleep between parallel regions: the suite runs one worker per
# core, so a parallel region (a test marked parallel, or the CLI and Dask workers the
# tests start, which have every thread) shares its cores with the other worker, and
# GNU OpenMP's spinning threads then starve the thread they wait for (a small sweep:
# 0.9 s passive, 1.6 to 76 s spinning beside one busy process)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba
import pytest

import particles.runs.compare as compare_module

#: the Numba threads this process was started with (NUMBA_NUM_THREADS)
THREADS = numba.config.NUMBA_NUM_THREADS


def pytest_configure(config) -> None:
    # before any fixture: module-scoped ones run with one thread too
    numba.set_num_threads(1)


@pytest.fixture(autouse=True)
def _numba_threads(request):
    """Every thread for a test marked ``parallel``, else one."""
    parallel = request.node.get_closest_marker("parallel") is not None
    numba.set_num_threads(THREADS if parallel else 1)
    yield
    numba.set_num_threads(1)


@pytest.fixture
def no_comparison_run(monkeypatch):
    """Fail the test if a model of a comparison starts running (bad input must
    be refused before any work)."""

    def forbidden(*args, **kwargs):
        raise AssertionError("a run started")

    monkeypatch.setattr(compare_module, "iter_frames", forbidden)
