"""Fill the compiled-kernel cache ahead of time (``particles compile``).

Every command loads its compiled entry points from Numba's disk cache (see
:mod:`particles._numba`); the first process to need one compiles and stores
it.  :func:`precompile` pays that cost up front: it runs tiny versions of what
each command runs (one step of one small system, through the same sessions
and therefore the same entry points), so that later processes, say the jobs
of a cluster sharing one ``NUMBA_CACHE_DIR``, start at once.  Since kernels
are strict IEEE code, a kernel loaded from the cache gives the bits it would
give freshly compiled.

The cache key includes the CPU: fill a shared cache on a machine of the
same CPU model as the nodes that will use it (others compile their own).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TARGETS", "PrecompileReport", "precompile"]

def _noise(integrator: str) -> float:
    """A noise amplitude the integrator takes (stochastic steppers need one)."""
    from particles.integrators import INTEGRATORS

    return 0.1 if INTEGRATORS[integrator].stochastic else 0.0


def _simulate_configs(more: bool) -> Iterator[dict[str, Any]]:
    """Keyword sets of :class:`~particles.config.SimulationConfig`: every registered
    model, stepping integrator and layout (serial, batch, rows), direct and BLAS paths;
    with ``more`` also the other kernels, Sinkhorn and per-system weights
    (combinations the registries refuse are skipped by the caller)."""
    from particles.config import SimulationConfig
    from particles.fields import KERNELS
    from particles.integrators import steppers
    from particles.models import MODELS

    default_kernel = SimulationConfig.__dataclass_fields__["kernel"].default
    layouts = (dict(n=8), dict(n=8, batch=2), dict(n=512))  # serial, batch, rows
    # the steppers: auto runs theirs (dopri5, sdirk4), compiled here
    for integrator in steppers():
        noise = _noise(integrator)
        for model in MODELS:
            # direct (d = 2 and 3 have kernels of their own; d = 4 compiles on
            # first use), BLAS
            for d in (2, 3, 24):
                for layout in layouts:
                    yield dict(model=model, d=d, integrator=integrator, noise=noise, **layout)
        if more:
            for kernel in (k for k in KERNELS if k != default_kernel):
                for layout in layouts:
                    yield dict(model="sa", d=3, kernel=kernel, integrator=integrator,
                               noise=noise, **layout)
            for layout in layouts:
                yield dict(model="sa", d=3, normalization="sinkhorn", integrator=integrator,
                           noise=noise, **layout)
                yield dict(model="sa", d=3, weights="gaussian", weight_draws="independent",
                           integrator=integrator, noise=noise, **{**layout, "batch": 2})


def _run_simulate(tmp: Path, more: bool, note: Callable[[str], None]) -> int:
    from particles.config import SimulationConfig
    from particles.runs.run import run_to_file

    count = 0
    for i, kw in enumerate(_simulate_configs(more)):
        try:
            config = SimulationConfig(beta=1.0, dt=0.01, T=0.01, save_every=1, seed=0, **kw)
        except ValueError:
            continue  # a combination the registries do not offer
        note(", ".join(f"{k}={v}" for k, v in kw.items()))
        result = run_to_file(config, tmp / f"simulate{i}.h5")
        result.summary_clusters()  # the summary `particles simulate` prints
        count += 1
    return count


def _small_files(tmp: Path) -> list[Path]:
    """One single-system and one ensemble trajectory (d = 2 and 3)."""
    from particles.config import SimulationConfig
    from particles.runs.run import run_to_file

    paths = []
    for i, kw in enumerate((dict(d=2), dict(d=3, batch=2))):
        path = tmp / f"small{i}.h5"
        if not path.exists():
            config = SimulationConfig(n=8, beta=1.0, dt=0.01, T=0.05, save_every=1, seed=0,
                                      integrator="rk4", **kw)
            run_to_file(config, path)
        paths.append(path)
    return paths


def _run_analyze(tmp: Path, more: bool, note: Callable[[str], None]) -> int:
    from particles.analysis import analyze_file

    paths = _small_files(tmp)
    for path in paths:
        note(f"analyze {path.name}")
        analyze_file(path)
    return len(paths)


def _run_plot(tmp: Path, more: bool, note: Callable[[str], None]) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from particles.plotting import FIGURES, plot_file

    count = 0
    for path in _small_files(tmp):
        for kind in FIGURES["trajectory"].values():
            if kind.animated and not more:
                continue
            note(f"plot {path.name} --kind {kind.name}")
            plot_file(path, kind.name, tmp / f"{path.stem}_{kind.name}{kind.suffix}",
                      overwrite=True)
            count += 1
    return count


def _run_compare(tmp: Path, more: bool, note: Callable[[str], None]) -> int:
    from particles.runs.compare import compare_models

    note("compare")
    compare_models(n=8, beta=1.0, T=0.05, dt=0.01, save_every=1, seed=0,
                   out=tmp / "compare.h5", overwrite=True)
    return 1


def _run_kernels(tmp: Path, more: bool, note: Callable[[str], None]) -> int:
    from particles.runs.kernels import compare_kernels

    note("kernels")
    compare_kernels(n=8, d=3, beta=1.0, T=0.05, dt=0.01, save_every=1, seed=0)
    return 1


def _run_sweep(tmp: Path, more: bool, note: Callable[[str], None]) -> int:
    import numba

    from particles.config import SimulationConfig
    from particles.integrators import NOISE_DEFAULT, steppers
    from particles.models import MODELS
    from particles.sweep import SweepSpec, run_sweep

    # the kernels a sweep task adds to simulate's (per-frame statistics, time
    # scales), for the integrators a sweep is likely to use; in this process's
    # threads and in one thread: the local backend's worker processes run one
    # Numba thread each, and take the serial compilations

    def models_of(d: int) -> tuple[str, ...]:
        ok = []
        for m in MODELS:
            try:
                SimulationConfig(n=8, d=d, beta=1.0, model=m)
            except ValueError:
                continue  # a model the registries do not run in this dimension
            ok.append(m)
        return tuple(ok)

    # the integrators a sweep is likely to use: the default, the Transformer
    # layer and the default with noise (all of them with ``more``)
    likely = {SimulationConfig(n=2, d=2, beta=0.0).integrator, "euler", NOISE_DEFAULT}
    integrators = steppers() if more else tuple(i for i in steppers() if i in likely)
    count = 0
    threads = numba.get_num_threads()
    try:
        for nthreads in sorted({threads, 1}, reverse=True):
            numba.set_num_threads(nthreads)
            for integrator in integrators:
                noise = _noise(integrator)
                for d, models in ((2, models_of(2)), (3, models_of(3))):
                    note(f"sweep --integrator {integrator} --d {d} ({nthreads} thread(s))")
                    spec = SweepSpec(base=dict(n=8, d=d, beta=1.0, T=0.05, dt=0.01,
                                               save_every=1, integrator=integrator,
                                               noise=noise),
                                     axes=(("model", models),), runs=2, seed=0)
                    run_sweep(spec, tmp / f"sweep_{integrator}_{d}_{nthreads}.h5",
                              overwrite=True)
                    count += 1
    finally:
        numba.set_num_threads(threads)
    return count


#: what ``particles compile --for NAME`` prepares: name -> (what, function).
TARGETS: dict[str, tuple[str, Callable[[Path, bool, Callable[[str], None]], int]]] = {
    "simulate": ("every model, integrator and layout of simulate", _run_simulate),
    "analyze": ("the analysis of single systems and ensembles", _run_analyze),
    "plot": ("every plot kind", _run_plot),
    "compare": ("particles compare", _run_compare),
    "kernels": ("particles kernels", _run_kernels),
    "sweep": ("particles sweep (the statistics of every task)", _run_sweep),
}


@dataclass
class PrecompileReport:
    """What :func:`precompile` did.

    Attributes
    ----------
    targets : tuple of str
        The targets prepared.
    runs : int
        Tiny runs made (each loads or compiles its entry points).
    seconds : float
        Wall time.
    cache : Path
        The cache directory (see :func:`particles._numba.cache_dir`).
    entries, nbytes : int
        Compiled entries in the cache and their size, afterwards.
    """

    targets: tuple[str, ...]
    runs: int
    seconds: float
    cache: Path
    entries: int
    nbytes: int
    notes: list[str] = field(default_factory=list)


def precompile(targets: tuple[str, ...] | list[str] | None = None, *, more: bool = False,
               progress: Callable[[str], None] | None = None) -> PrecompileReport:
    """Compile (or load) the entry points of ``targets`` into the disk cache.

    Parameters
    ----------
    targets : sequence of str, optional
        Keys of :data:`TARGETS`; all of them when None.
    more : bool
        Also the less common variants (other attention kernels, Sinkhorn,
        per-system weights, the movie).
    progress : callable, optional
        Called with a short description before each tiny run.

    Returns
    -------
    PrecompileReport

    Raises
    ------
    ValueError
        An unknown target (one line, naming the choices).
    """
    # a module import: this file compiles nothing, so it stays out of the
    # kernel-source hash (SOURCE_HASH)
    from particles import _numba

    names = tuple(TARGETS) if targets is None else tuple(targets)
    unknown = [t for t in names if t not in TARGETS]
    if unknown:
        raise ValueError(f"unknown compile target {unknown[0]!r}; choose from "
                         f"{', '.join(TARGETS)}")
    notes: list[str] = []

    def note(text: str) -> None:
        notes.append(text)
        if progress is not None:
            progress(text)

    t0 = time.perf_counter()
    runs = 0
    with tempfile.TemporaryDirectory(prefix="particles-compile-") as tmp:
        for name in names:
            runs += TARGETS[name][1](Path(tmp), more, note)
    path, _ = _numba.cache_dir()
    entries, nbytes = _numba.cache_entries()
    return PrecompileReport(names, runs, time.perf_counter() - t0, path, entries, nbytes, notes)
