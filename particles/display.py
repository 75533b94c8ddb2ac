"""Numbers as figures, tables and reports show them; files keep the exact values.

One place decides how a value reads on screen:

* :func:`value_text`: a parameter or grid value with 6 significant digits
  (``%.6g``), so the grid value ``0.1 + 0.2 = 0.30000000000000004`` reads
  ``0.3``; integers, strings and booleans as they are.
* :func:`time_text`: a time with 4 significant digits (``%.4g``), so a
  log-spaced save time ``10235.3`` reads ``1.024e+04``: enough to tell the
  saved times of 100 points per decade apart.

Both only format: sweep files, analysis files and trajectories store the
exact float64 values.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["TIME_DIGITS", "VALUE_DIGITS", "time_text", "value_text"]

#: significant digits of a parameter or grid value on screen.
VALUE_DIGITS = 6

#: significant digits of a time on screen.
TIME_DIGITS = 4


def _real(value: Any) -> float | None:
    """``value`` as a float when it is a real number that is not an integer type."""
    if isinstance(value, bool) or not hasattr(value, "__float__"):
        return None
    if isinstance(value, int) or getattr(getattr(value, "dtype", None), "kind", "f") in "iub":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def value_text(value: Any) -> str:
    """A parameter or grid value for display: ``0.30000000000000004`` -> ``"0.3"``.

    Parameters
    ----------
    value : float, int, str, bytes or bool
        Floats (Python or NumPy) get :data:`VALUE_DIGITS` significant digits;
        bytes are decoded; anything else is ``str(value)``.

    Returns
    -------
    str
    """
    if isinstance(value, bytes):
        return value.decode()
    x = _real(value)
    if x is None:
        return str(value)
    return f"{x:.{VALUE_DIGITS}g}"


def time_text(t: float) -> str:
    """A time for display: ``10235.3`` -> ``"1.024e+04"``, ``0.5`` -> ``"0.5"``.

    Parameters
    ----------
    t : float
        Any real number (inf and NaN read ``inf`` and ``nan``).

    Returns
    -------
    str
        :data:`TIME_DIGITS` significant digits.
    """
    x = float(t)
    if not math.isfinite(x):
        return str(x)
    return f"{x:.{TIME_DIGITS}g}"
