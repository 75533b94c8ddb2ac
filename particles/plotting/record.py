"""What a figure records about how it was made, inside the image file.

A figure that no data file accompanies (``particles kernels``) carries its
configuration, seed and software versions in the image's metadata, so it can
be remade: PNG text chunks (one per key, :func:`read_record` reads them
back), the PDF ``Subject`` and the SVG ``Description`` (the record as one
JSON text).  Formats without free-text metadata record nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["figure_metadata", "read_record", "save_recorded"]


def figure_metadata(fmt: str, record: dict[str, str]) -> dict[str, str] | None:
    """Matplotlib's ``savefig(metadata=...)`` holding ``record`` for the format ``fmt``
    (an extension without the dot), or None where the format has no free text."""
    fmt = fmt.lower()
    if fmt == "png":
        return dict(record)
    text = json.dumps(record, sort_keys=True)
    if fmt == "pdf":
        return {"Subject": text}
    if fmt in ("svg", "svgz"):
        return {"Description": text}
    return None


def save_recorded(fig: Any, out: str | os.PathLike, record: dict[str, str], *,
                  dpi: int = 120) -> Path:
    """Write ``fig`` to ``out`` (format from the extension) with ``record`` in its metadata.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    out : str or path-like
    record : dict of str to str
        What made the figure (``seed``, ``config`` JSON, ``versions`` JSON, ...).
    dpi : int

    Returns
    -------
    Path
    """
    out = Path(out)
    meta = figure_metadata(out.suffix.lstrip("."), record)
    fig.savefig(out, dpi=dpi, **({} if meta is None else {"metadata": meta}))
    return out


def read_record(path: str | os.PathLike) -> dict[str, str]:
    """The text chunks of a PNG written by :func:`save_recorded` (key -> text)."""
    from PIL import Image

    with Image.open(path) as image:
        return dict(getattr(image, "text", {}))
