"""File helpers shared by the tests that kill, fill or resume writers."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def digest(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes (bit-for-bit comparisons of whole files)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def partials(directory: str | os.PathLike) -> list[Path]:
    """The writers' temporary files (``*.partial``) in ``directory``, sorted."""
    return sorted(p for p in Path(directory).iterdir() if p.name.endswith(".partial"))
