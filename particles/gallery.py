"""The figure gallery: one script per figure in the top-level ``figures/`` directory.

:data:`FIGURES` maps a figure name to its script (``figures/NAME.py``) and
the files it writes.  Every script is a small program of its own::

    python figures/NAME.py [--quick] [--out PATH]

exposing ``main(argv) -> int`` that parses its command line with
:func:`figure_command` and saves its picture with :meth:`FigureCommand.save`;
:func:`make_figures` (what ``particles
figures`` calls) checks every output first, then imports each script in
this process and calls its ``main(["--out", DIR/NAME.png, "--quick"])``.
The scripts use only public names of :mod:`particles` (an architecture test
checks it), so they are also examples of the API.

``figures/`` is found next to the package directory, which is where it is
in a source checkout and an editable install; a wheel does not ship it, and
:func:`figures_dir` then says so in one line.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from particles.errors import FiguresNotFoundError, OutputPathError, UnknownFigureError
from particles.paths import check_output_path

__all__ = [
    "FIGURES",
    "FigureCommand",
    "FigureEntry",
    "FigureResult",
    "check_figures",
    "figure_command",
    "figures_dir",
    "make_figures",
    "select_figures",
]


@dataclass(frozen=True)
class FigureEntry:
    """One figure of the gallery.

    Attributes
    ----------
    name : str
        Figure name: the script is ``figures/NAME.py``, its picture ``NAME.png``.
    caption : str
        One line: what the figure shows.
    extra : tuple of str
        Suffixes of further files the script writes beside its PNG
        (``".gif"``: ``NAME.gif``).
    """

    name: str
    caption: str
    extra: tuple[str, ...] = ()

    def outputs(self, out_dir: str | os.PathLike) -> list[Path]:
        """Every file the figure writes into ``out_dir``, its PNG first."""
        png = Path(out_dir) / f"{self.name}.png"
        return [png, *(png.with_suffix(s) for s in self.extra)]


#: the figures, in the order ``particles figures`` makes them (issue 27's numbers).
FIGURES: dict[str, FigureEntry] = {e.name: e for e in (
    FigureEntry("tokens", "Figure 1: tokens on S^2 and on the circle with trajectory tails "
                "(Euler layer), and a GIF of the sphere", (".gif",)),
    FigureEntry("histograms", "Figure 2: histograms of the pair inner products across time, "
                "d = 3 and d = 128"),
    FigureEntry("phase_diagram", "Figure 3: (beta, t) phase diagrams of the fraction of pairs "
                "with <x_i, x_j> > 0.999, d = 2, d = 128 with the d >> n frontier, random Q, K, V"),
    FigureEntry("metastability", "Figure 4: circle, cluster count, Fourier moduli |c_k| and "
                "normalised energy against log time, beta = 4 and 9, with the dominant linear "
                "mode against argmax_k k^2 I_k(beta) and the located merges"),
    FigureEntry("merge_time", "Figure 5: merge time of two clusters on the circle against beta, "
                "with the law log T ~ beta (1 - cos phi) and the fitted slopes"),
    FigureEntry("formation", "Figure 6: the dominant linear Fourier mode and the clusters "
                "first formed against beta from uniform starts (ensemble medians and quartiles) "
                "against argmax_k k^2 I_k(beta)"),
    FigureEntry("kernels", "Figure 7: cluster count and pair histograms under every attention "
                "kernel and Sinkhorn from one start; the metastable runs continued to one "
                "cluster"),
    FigureEntry("kuramoto", "Figure 8: Kuramoto r against coupling K for n = 50 to 3200 "
                "against sqrt(1 - K_c/K), and SA, USA, Kuramoto from one start"),
    FigureEntry("meanfield_w1", "Figure 9: particles against the mean-field PDE on the circle, "
                "densities over time against particle histograms, and W1 against n (also the "
                "sliced W1 on S^2)"),
    FigureEntry("noise", "Figure 10: noisy particles (two n) and the mean-field PDE on the "
                "circle, steady order parameter against sigma / sigma_c, and mode-1 growth rates"),
    FigureEntry("repulsive", "Figure 11: the repulsive flow V = -I against the regular simplex "
                "(n = d + 1) and the cross-polytope (n = 2d): energy gap and final inner products"),
    FigureEntry("meanfield_sphere", "Figure 12: the mean-field PDE on S^2 against 1e5 particles "
                "from the same start: Mollweide densities beside the tokens' histograms at four "
                "times, and the degree-l power of both against the linear rates, l* marked"),
    FigureEntry("noise_sphere", "Figure 13: noisy particles (two n) and the PDE on S^2, steady "
                "order parameter against sigma / sigma_c with the PDE's D_c, and l = 1 growth "
                "rates"),
)}


@dataclass(frozen=True)
class FigureResult:
    """What one figure wrote.

    Attributes
    ----------
    name : str
    paths : list of Path
        The files written, its PNG first.
    seconds : float
        Wall time of the script.
    """

    name: str
    paths: list[Path]
    seconds: float


@dataclass
class FigureCommand:
    """The command line every figure script shares (:func:`figure_command`).

    Attributes
    ----------
    quick : bool
        ``--quick``: small n, short T (seconds).
    out : Path
        ``--out``: the PNG (default ``figures/NAME.png`` beside the script).
    seed : int
        ``--seed`` (default 0).
    started : float
        ``time.perf_counter()`` when the command was parsed.
    """

    quick: bool
    out: Path
    seed: int
    started: float = field(default_factory=time.perf_counter)

    def save(self, figure: Any, *also: Path) -> None:
        """Write ``figure`` (a matplotlib Figure) to :attr:`out` at 100 dpi, then print
        its path, the paths of the other files the script wrote and the seconds taken."""
        from particles.plotting.save import save_figure  # matplotlib only when drawing

        save_figure(figure, self.out, overwrite=True, dpi=100)
        print("\n".join(map(str, (self.out, *also))))
        print(f"{time.perf_counter() - self.started:.1f} s")


def figure_command(doc: str, script: str, argv: Sequence[str] | None = None) -> FigureCommand:
    """Parse a figure script's ``[--quick] [--out PATH] [--seed N]``.

    Parameters
    ----------
    doc : str
        The script's docstring (its first line is the description).
    script : str
        The script's ``__file__`` (the default output is its name with ``.png``).
    argv : sequence of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    FigureCommand
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a seconds-long run")
    parser.add_argument("--out", type=Path, default=Path(script).with_suffix(".png"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    return FigureCommand(args.quick, args.out, args.seed)


def figures_dir() -> Path:
    """The ``figures/`` directory beside the package.

    Raises
    ------
    FiguresNotFoundError
        It is not there (an installed wheel: the scripts live in the source tree).
    """
    path = Path(__file__).resolve().parents[1] / "figures"
    if not path.is_dir():
        raise FiguresNotFoundError(
            f"no figures/ directory at {path}: the figure scripts come with a source checkout "
            "(pip install -e .), not with an installed package")
    return path


def select_figures(only: str | Sequence[str] | None = None) -> list[str]:
    """Figure names to make, in gallery order.

    Parameters
    ----------
    only : str or sequence of str, optional
        Comma-separated names (or a sequence of them); None: every figure.

    Returns
    -------
    list of str

    Raises
    ------
    UnknownFigureError
        A name is not in :data:`FIGURES` (the message lists the known ones).
    """
    if only is None:
        return list(FIGURES)
    names = [s.strip() for s in only.split(",")] if isinstance(only, str) else list(only)
    names = [s for s in names if s]
    unknown = [s for s in names if s not in FIGURES]
    if unknown or not names:
        what = (f"unknown figure{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))}" if unknown else "no figure named")
        raise UnknownFigureError(f"{what}; known: {', '.join(FIGURES)}")
    return [s for s in FIGURES if s in names]


def check_figures(names: Sequence[str], out_dir: str | os.PathLike, *,
                  overwrite: bool = False) -> list[Path]:
    """Everything :func:`make_figures` refuses, before any work.

    Parameters
    ----------
    names : sequence of str
        Names from :func:`select_figures`.
    out_dir : str or path-like
        Output directory (created by :func:`make_figures` when missing).
    overwrite : bool
        Allow replacing existing pictures.

    Returns
    -------
    list of Path
        The scripts, one per name.

    Raises
    ------
    FiguresNotFoundError, UnknownFigureError
    OutputPathError
        ``out_dir`` is a file, or an output exists without ``overwrite``.
    """
    root = figures_dir()
    scripts = []
    for name in names:
        if name not in FIGURES:
            select_figures([name])  # raises, listing the known names
        script = root / f"{name}.py"
        if not script.is_file():
            raise FiguresNotFoundError(f"figure {name!r} has no script {script}")
        scripts.append(script)
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputPathError(f"{out_dir} is not a directory", out_dir)
    if out_dir.is_dir():
        for name in names:
            for path in FIGURES[name].outputs(out_dir):
                check_output_path(path, overwrite=overwrite, resumable=False)
    return scripts


def _load(script: Path):
    """Import a figure script as a fresh module (not registered in ``sys.modules``
    beyond the call, so running it twice starts clean)."""
    module_name = f"particles_figure_{script.stem}"
    spec = importlib.util.spec_from_file_location(module_name, script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def make_figures(names: Sequence[str] | None = None, out_dir: str | os.PathLike = "figures",
                 *, quick: bool = False, overwrite: bool = False,
                 report: Callable[[FigureResult], None] | None = None) -> list[FigureResult]:
    """Run each figure's script in this process: ``main(["--out", DIR/NAME.png])``.

    Parameters
    ----------
    names : sequence of str, optional
        Figure names (default: every figure, in gallery order).
    out_dir : str or path-like
        Directory of the pictures (created when missing).
    quick : bool
        Pass ``--quick`` (small n, short T: seconds per figure).
    overwrite : bool
        Replace existing pictures (otherwise refused before any work).
    report : callable, optional
        Called with each :class:`FigureResult` as soon as its figure is done.

    Returns
    -------
    list of FigureResult

    Raises
    ------
    FiguresNotFoundError, UnknownFigureError, OutputPathError
        From :func:`check_figures`, before any figure runs.
    RuntimeError
        A script's ``main`` returned a non-zero status.
    """
    names = list(FIGURES) if names is None else list(names)
    scripts = check_figures(names, out_dir, overwrite=overwrite)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for name, script in zip(names, scripts, strict=True):
        entry = FIGURES[name]
        paths = entry.outputs(out_dir)
        argv = ["--out", os.fspath(paths[0]), *(["--quick"] if quick else [])]
        start = time.perf_counter()
        module = _load(script)
        try:
            # the scripts' own lines go to stderr: stdout is one line per figure
            with contextlib.redirect_stdout(sys.stderr):
                status = module.main(argv)
        finally:
            sys.modules.pop(module.__name__, None)
        if status:
            raise RuntimeError(f"figure {name!r}: {script.name} exited with status {status}")
        result = FigureResult(name, paths, time.perf_counter() - start)
        results.append(result)
        if report is not None:
            report(result)
    return results
