"""The one way a figure or a movie reaches its file.

Every writer in :mod:`particles.plotting`, the ``figures/`` scripts and the
CLI goes through :func:`save_figure` (or :func:`particles.paths.replacing`
for a movie): the image is written whole under a hidden temporary name and
then takes its name atomically, so an interrupted or failed write (Ctrl-C, a
full disk) never leaves a half-written image, and ``--overwrite`` replaces
an existing one only by a complete one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from particles.paths import replacing
from particles.plotting.record import figure_metadata

__all__ = ["save_figure"]


def save_figure(fig: Any, out: str | os.PathLike, *, overwrite: bool = False, dpi: int = 120,
                record: dict[str, str] | None = None) -> Path:
    """Write ``fig`` to ``out`` (the format from its extension), atomically.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    out : str or path-like
    overwrite : bool
        Replace an existing ``out`` (only once the new image is complete).
    dpi : int
    record : dict of str to str, optional
        What made the figure, kept in the image's metadata where the format
        has free text (:func:`particles.plotting.record.figure_metadata`).

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    particles.errors.OutputPathError
        ``out`` appeared meanwhile and ``overwrite`` is False.
    """
    out = Path(out)
    fmt = out.suffix.lstrip(".").lower()
    meta = None if record is None else figure_metadata(fmt, record)
    with replacing(out, overwrite=overwrite) as temp:
        fig.savefig(temp, dpi=dpi, format=fmt or None,
                    **({} if meta is None else {"metadata": meta}))
    return out
