"""A small progress bar on stderr that appears only for runs longer than a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Progress of a run in simulated time, drawn on ``stream`` (stderr).

    Parameters
    ----------
    total : float
        Final (simulated) time.
    enabled : bool
        Draw at all.
    delay : float
        Seconds of wall time before the bar first appears.
    stream : file, optional
        Where to draw (default ``sys.stderr``).
    """

    def __init__(self, total: float, *, enabled: bool = True, delay: float = 1.0,
                 stream: TextIO | None = None, label: str = "simulating") -> None:
        self.total = float(total)
        self.enabled = enabled
        self.delay = delay
        self.stream = stream
        self.label = label
        self._start = 0.0
        self._last_draw = 0.0
        self._drawn = False
        self._first: tuple[float, float] | None = None  # (wall, sim time) of the first update

    def __enter__(self) -> Progress:
        self._start = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        if self._drawn:
            (self.stream or sys.stderr).write("\n")
            (self.stream or sys.stderr).flush()

    def update(self, current: float) -> None:
        """Report that the run reached simulated time ``current``."""
        if not self.enabled:
            return
        now = time.monotonic()
        if self._first is None:
            # the rate is measured from the first report on, so that compilation
            # before it and the part done before a resume do not distort the ETA
            self._first = (now, current)
        elapsed = now - self._start
        done = current >= self.total
        if elapsed < self.delay or (now - self._last_draw < 0.2 and not done):
            return
        self._last_draw = now
        frac = 1.0 if self.total <= 0 else min(1.0, current / self.total)
        width = 30
        fill = round(frac * width)
        w0, t0 = self._first
        eta = ((now - w0) * (self.total - current) / (current - t0)
               if current > t0 else float("nan"))
        eta_text = f"{eta:.1f}s" if eta == eta else "?"
        line = (f"\r{self.label} [{'#' * fill}{'.' * (width - fill)}] {100 * frac:5.1f}% "
                f"t={current:.4g}/{self.total:.4g} elapsed {elapsed:.1f}s eta {eta_text}")
        stream = self.stream or sys.stderr
        stream.write(line)
        stream.flush()
        self._drawn = True
