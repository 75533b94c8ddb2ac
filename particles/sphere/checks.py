"""Argument checks shared by the sphere's geometry and samplers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from particles.errors import invalid

__all__ = ["TWO_PI", "as_f64", "check_batch", "check_int", "check_real", "check_rng", "finish",
           "leading_shape", "unit_rows", "unit_vector"]

FloatArray = NDArray[np.float64]

TWO_PI = 2.0 * math.pi


def as_f64(x: ArrayLike) -> FloatArray:
    """``x`` as a float64 array (no copy when it is one)."""
    return np.asarray(x, dtype=np.float64)


def check_int(name: str, value: Any, minimum: int) -> int:
    """``value`` as an int of at least ``minimum``, or a one-line ValueError naming ``name``."""
    # bool is an int subclass, but n=True is never meant.
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise invalid(name, f"an integer >= {minimum}", value)
    if value < minimum:
        raise invalid(name, f"an integer >= {minimum}", value)
    return int(value)


def check_batch(batch: Any) -> int | None:
    """An ensemble size (an int >= 1) or None for one system."""
    if batch is None:
        return None
    return check_int("batch", batch, 1)


def check_rng(rng: Any) -> np.random.Generator:
    """``rng`` itself when it is a ``numpy.random.Generator``, else a TypeError."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


def check_real(name: str, value: Any) -> float:
    """``value`` as a finite float, or a one-line ValueError naming ``name``."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return out


def unit_vector(name: str, value: ArrayLike, d: int) -> FloatArray:
    """``value`` (shape (d,), finite, nonzero) normalised onto the sphere."""
    try:
        arr = as_f64(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real vector of shape ({d},), got {value!r}") from None
    if arr.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},) to match d={d}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must have finite entries, got {arr!r}")
    norm = float(np.linalg.norm(arr))
    if norm == 0.0:
        raise ValueError(f"{name} must be a nonzero vector (it is normalized to the sphere)")
    return arr / norm


def leading_shape(n: int, batch: int | None) -> tuple[int, ...]:
    """``(n,)`` for one system, ``(batch, n)`` for an ensemble."""
    return (n,) if batch is None else (batch, n)


def finish(x: FloatArray) -> FloatArray:
    """``x`` as a C-contiguous float64 array, as every sampler returns it."""
    return np.ascontiguousarray(x, dtype=np.float64)


#: rows whose plain norm lies outside this range are normalised with a scaled
#: norm (their squares under- or overflow); every other row takes the plain
#: ``x / ||x||`` path, so ordinary inputs are normalised bit for bit as before.
_PLAIN_NORM_RANGE = (1e-150, 1e150)


def unit_rows(x: ArrayLike, name: str = "x0") -> FloatArray:
    """Rows of ``x`` normalised onto the unit sphere, refusing what has no direction.

    Rows whose Euclidean norm squares neither under- nor overflow are divided
    by ``np.linalg.norm`` (bit for bit the plain formula), and rows already on
    the sphere (within 4 ulp) are kept unchanged, so that a saved frame passed
    back continues exactly.  Rows of huge (``1e200``) or tiny (``1e-170``)
    entries are first divided by their largest absolute entry.

    Parameters
    ----------
    x : array_like, shape (..., d)
        Real positions.
    name : str
        How messages name the array.

    Returns
    -------
    ndarray, shape (..., d)
        C-contiguous float64 unit rows.

    Raises
    ------
    ValueError
        Complex or non-numeric entries, NaN or infinite entries, a row of zeros.
    """
    raw = np.asarray(x)
    if np.iscomplexobj(raw):
        raise ValueError(f"{name} must be real, got complex entries ({raw.dtype})")
    if not (np.issubdtype(raw.dtype, np.number) or raw.dtype == np.bool_):
        raise ValueError(f"{name} must be a real numeric array, got {raw.dtype}")
    x = np.asarray(raw, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite, got NaN or inf entries")
    with np.errstate(over="ignore", under="ignore"):  # such rows take the scaled path
        norms = np.linalg.norm(x, axis=-1, keepdims=True)
    low, high = _PLAIN_NORM_RANGE
    scaled = ~((norms >= low) & (norms <= high))
    if np.any(scaled):
        peak = np.max(np.abs(x), axis=-1, keepdims=True)
        if np.any(peak == 0):
            raise ValueError(
                f"{name} must have nonzero rows (tokens are normalised onto the sphere)"
            )
        safe = np.where(scaled, peak, 1.0)
        y = np.where(scaled, x / safe, x)
        norms = np.where(scaled, np.linalg.norm(y, axis=-1, keepdims=True), norms)
        x = y
    # rows already on the sphere are kept bit for bit
    off = np.abs(norms - 1.0) > 4 * np.finfo(np.float64).eps
    return np.ascontiguousarray(np.where(off, x / norms, x))
