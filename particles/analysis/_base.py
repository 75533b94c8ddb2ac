"""The convention every analysis object follows (after freud).

Settings go in the constructor; ``compute(...)`` fills the results and
returns ``self`` so calls chain (``ClusterDetector(0.05).compute(x).labels``);
results are read-only properties that raise :class:`NotComputedError` until
``compute`` has run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from particles.errors import NotComputedError


class Compute:
    """Base of the analysis objects: result storage with a clear error."""

    def __init__(self) -> None:
        self._results: dict[str, Any] = {}

    @property
    def computed(self) -> bool:
        """True once ``compute`` has run."""
        return bool(self._results)

    def _set(self, **results: Any) -> None:
        self._results.update(results)

    def _get(self, name: str) -> Any:
        try:
            return self._results[name]
        except KeyError:
            raise NotComputedError(
                f"{type(self).__name__}.{name} is not available: call compute(...) first"
            ) from None


def result(name: str, doc: str) -> property:
    """A read-only property returning the stored result ``name``."""

    def getter(self: Compute) -> Any:
        return self._get(name)

    getter.__doc__ = doc
    return property(getter)


def as_tokens(x: Any, *, name: str = "x") -> np.ndarray:
    """Check and convert tokens to float64 with shape (..., n, d).

    Parameters
    ----------
    x : array_like, shape (..., n, d)
        Tokens (``n >= 1``, ``d >= 2``).
    name : str
        Argument name used in error messages.

    Returns
    -------
    ndarray, shape (..., n, d)
        C-contiguous float64 view or copy.
    """
    arr = np.ascontiguousarray(x, dtype=np.float64)
    if arr.ndim < 2 or arr.shape[-1] < 2 or arr.shape[-2] < 1:
        raise ValueError(
            f"{name} must have shape (n, d) or (..., n, d) with d >= 2, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got NaN or inf entries")
    return arr
