"""Figures by file kind: the registry ``FIGURES[file kind][figure name] -> FigureKind``.

Each kind of file (the names of :data:`particles.io.FILE_KINDS`:
``trajectory``, ``sweep``, ``density``) draws its own figures, each a
:class:`FigureKind` whose ``draw`` takes what that file kind's figures are
drawn from (a trajectory's view, a sweep's dataset, a density).  The module
of each family adds its figures (:func:`register_figures`, one call) when
it is imported, and :mod:`particles.plotting` imports every family, so the
registry is complete once ``particles.plotting`` is loaded.  ``particles
plot`` and :func:`particles.runs.precompile` look figures up here instead
of naming them; :func:`figure_owner` says which file kind's figures a
request draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_FIGURES",
    "FIGURES",
    "FigureKind",
    "figure_kind",
    "figure_owner",
    "register_figures",
]


@dataclass(frozen=True)
class FigureKind:
    """A registered figure (``particles plot --kind NAME``).

    Attributes
    ----------
    name, description : str
    draw : callable or None
        Draws it from what its file kind's figures take (None: an animation,
        written frame by frame by its family's movie writer).
    suffix : str
        The file it is written to ends so (``.png``, ``.gif``).
    uses_times : bool
        It draws chosen times (``times=``, ``particles plot --times``); the
        other figures refuse them.
    options : tuple of str
        Further options it takes (a sweep's ``stat``, ``axis``, ``delta``, ...);
        those of its family it does not take are refused.
    needs : tuple of str
        Options it cannot be drawn without (``stat``; ``other``: a second file).
    """

    name: str
    description: str
    draw: Callable[..., Any] | None
    suffix: str = ".png"
    uses_times: bool = False
    options: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()

    @property
    def animated(self) -> bool:
        """A movie, not a picture."""
        return self.draw is None

    def __str__(self) -> str:
        return self.description


#: file kind -> figure name -> figure; each family adds its own (:func:`register_figures`).
FIGURES: dict[str, dict[str, FigureKind]] = {}

#: file kind -> the figure drawn when none is asked for.
DEFAULT_FIGURES: dict[str, str] = {}


def register_figures(file_kind: str, default: str, *kinds: FigureKind) -> dict[str, FigureKind]:
    """Add the figures of one file kind to :data:`FIGURES`; returns them by name.

    Parameters
    ----------
    file_kind : str
        A name of :data:`particles.io.FILE_KINDS`.
    default : str
        The figure drawn when none is asked for (one of ``kinds``).
    *kinds : FigureKind
    """
    figures = {k.name: k for k in kinds}
    if default not in figures:
        raise ValueError(f"the default figure {default!r} is not one of {', '.join(figures)}")
    FIGURES[file_kind] = figures
    DEFAULT_FIGURES[file_kind] = default
    return figures


def figure_kind(file_kind: str, name: str) -> FigureKind:
    """The figure ``name`` of a file kind.

    Raises
    ------
    ValueError
        The file kind draws no figure of that name (one line naming those it draws).
    """
    figures = FIGURES[file_kind]
    if name not in figures:
        raise ValueError(f"kind must be one of {', '.join(figures)}, got {name!r}")
    return figures[name]


def figure_owner(path_kind: str | None, name: str | None, other: bool) -> str:
    """The file kind whose figures ``particles plot PATH [--kind NAME] [--with OTHER]`` draws.

    PATH's own kind when it has figures; a file of another kind, or of none
    (its reader then says what it is), is read as a trajectory, unless the
    request is for a figure of two files (one that ``needs`` ``other``: a run
    against a density), which may be asked of either file.

    Parameters
    ----------
    path_kind : str or None
        The kind of PATH (:func:`particles.io.kind_of`), None when none opens it.
    name : str or None
        The figure asked for (None: the default).
    other : bool
        A second file was given (``--with``).
    """
    if path_kind in FIGURES and path_kind != "trajectory":
        return path_kind
    for family, figures in FIGURES.items():
        paired = any("other" in k.needs for k in figures.values())
        if paired and (other or name in figures):
            return family
    return "trajectory"
