"""File helpers shared by the tests that kill, fill or resume writers."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import pytest

from particles.config import SimulationConfig
from particles.errors import RunInterrupted
from particles.io import TrajectoryFileError, read_summary
from particles.runs import run_to_file


def digest(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes (bit-for-bit comparisons of whole files)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def partials(directory: str | os.PathLike) -> list[Path]:
    """The writers' temporary files (``*.partial``) in ``directory``, sorted."""
    return sorted(p for p in Path(directory).iterdir() if p.name.endswith(".partial"))


def partial_with_frames(directory: str | os.PathLike, proc: subprocess.Popen, *,
                        frames: int = 1, timeout: float = 180.0) -> Path:
    """The first temporary file in ``directory`` once it holds ``frames`` frames,
    while ``proc`` (the writer) still runs; a fixed wait is not enough on a
    loaded machine, where the frame may come seconds after the file."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = partials(directory)
        if found:
            try:
                if read_summary(found[0]).frames >= frames:
                    return found[0]
            except TrajectoryFileError:  # still being laid out
                pass
        assert proc.poll() is None, "the writer ended before its frames were seen"
        time.sleep(0.05)
    raise AssertionError(f"no temporary file with {frames} frame(s) appeared")


def interrupted(path: str | os.PathLike, config: SimulationConfig | None, frames: int, *,
                resume: bool = False) -> Path:
    """``config`` run (or resumed) into ``path`` until the file holds ``frames`` frames."""
    before = read_summary(path).frames if resume else 0
    polls = []

    def should_stop() -> bool:
        polls.append(1)
        return before + len(polls) >= frames

    with pytest.raises(RunInterrupted):
        run_to_file(config, path, resume=resume, flush_interval=0.0, should_stop=should_stop)
    assert read_summary(path).frames == frames
    return Path(path)
