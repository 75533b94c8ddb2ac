"""Argument checks shared by the sphere's geometry and samplers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

_TWO_PI = 2.0 * math.pi


def _as_f64(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def _check_int(name: str, value: Any, minimum: int) -> int:
    # bool is an int subclass, but n=True is never meant.
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_batch(batch: Any) -> int | None:
    if batch is None:
        return None
    return _check_int("batch", batch, 1)


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


def _check_real(name: str, value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return out


def _unit_vector(name: str, value: ArrayLike, d: int) -> FloatArray:
    try:
        arr = _as_f64(value)
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


def _leading_shape(n: int, batch: int | None) -> tuple[int, ...]:
    return (n,) if batch is None else (batch, n)


def _finish(x: FloatArray) -> FloatArray:
    return np.ascontiguousarray(x, dtype=np.float64)
