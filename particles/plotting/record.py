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

__all__ = ["figure_metadata", "read_record"]


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


def read_record(path: str | os.PathLike) -> dict[str, str]:
    """The text chunks of a PNG written by :func:`particles.plotting.save.save_figure`
    with a record (key -> text)."""
    from PIL import Image

    with Image.open(path) as image:
        return dict(getattr(image, "text", {}))
