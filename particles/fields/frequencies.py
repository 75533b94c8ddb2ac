"""Natural-frequency distributions of ``model="kuramoto"``: the ``omega=`` registry.

``omega="NAME:WIDTH"`` or ``"NAME:WIDTH:CENTER"`` draws ``omega_i = CENTER +
WIDTH x_i`` with ``x_i`` from the standard form of distribution NAME (WIDTH is
the half-width at half maximum, the standard deviation and the half-width of
the support respectively).  Each entry carries its draw and its quantile
function; :func:`parse_omega` and :func:`freeze_omega` validate ``omega``
values (re-exported by :mod:`particles.config`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from particles.errors import invalid


@dataclass(frozen=True)
class FrequencyDistribution:
    """A registered distribution of natural frequencies.

    Attributes
    ----------
    name : str
        Registry key (the NAME of ``"NAME:WIDTH[:CENTER]"``).
    description : str
        The density in words (help texts).
    draw : callable
        ``draw(rng, n) -> x``, shape (n,): ``n`` standard draws (center 0,
        width 1) from ``rng``, a ``numpy.random.Generator``.
    quantile : callable
        ``quantile(u, c) -> x``: the standard quantile function at ``u`` in
        (0, 1), conditioned on ``|x| <= c`` (``c`` may be ``inf``).
    """

    name: str
    description: str
    draw: Callable[[np.random.Generator, int], np.ndarray]
    quantile: Callable[[np.ndarray, float], np.ndarray]

    def __str__(self) -> str:
        return self.description


def _lorentzian_quantile(u: np.ndarray, c: float) -> np.ndarray:
    a = math.atan(c) if math.isfinite(c) else 0.5 * math.pi
    return np.tan(a * (2.0 * u - 1.0))


def _gaussian_quantile(u: np.ndarray, c: float) -> np.ndarray:
    lo = float(ndtr(-c))
    return ndtri(lo + (1.0 - 2.0 * lo) * u)


def _uniform_quantile(u: np.ndarray, c: float) -> np.ndarray:
    return min(c, 1.0) * (2.0 * u - 1.0)


#: named natural-frequency distributions (``omega="NAME:WIDTH[:CENTER]"``).
OMEGA_DISTRIBUTIONS: dict[str, FrequencyDistribution] = {g.name: g for g in (
    FrequencyDistribution("lorentzian", "Cauchy, density (W/pi) / ((w - C)^2 + W^2)",
                          lambda rng, n: rng.standard_cauchy(n), _lorentzian_quantile),
    FrequencyDistribution("gaussian", "normal with mean C and standard deviation W",
                          lambda rng, n: rng.standard_normal(n), _gaussian_quantile),
    FrequencyDistribution("uniform", "uniform on [C - W, C + W]",
                          lambda rng, n: rng.uniform(-1.0, 1.0, n), _uniform_quantile),
)}


def _fail(name: str, allowed: str, got: Any) -> None:
    raise invalid(name, allowed, got)


def parse_omega(spec: str) -> tuple[str, float, float]:
    """Split ``"lorentzian:0.5"`` into ``("lorentzian", 0.5, 0.0)``.

    Parameters
    ----------
    spec : str
        ``"NAME:WIDTH"`` or ``"NAME:WIDTH:CENTER"`` with NAME a key of
        :data:`OMEGA_DISTRIBUTIONS`, WIDTH >= 0 and CENTER finite.

    Returns
    -------
    name : str
    width, center : float
    """
    allowed = ("'NAME:WIDTH' or 'NAME:WIDTH:CENTER' with NAME one of "
               + ", ".join(OMEGA_DISTRIBUTIONS) + ", WIDTH >= 0 and CENTER finite, "
               "or a sequence of n numbers")
    if not isinstance(spec, str):
        _fail("omega", allowed, spec)
    parts = spec.split(":")
    if parts[0] not in OMEGA_DISTRIBUTIONS or len(parts) not in (2, 3):
        _fail("omega", allowed, spec)
    try:
        width = float(parts[1])
        center = float(parts[2]) if len(parts) == 3 else 0.0
    except ValueError:
        _fail("omega", allowed, spec)
    if not (math.isfinite(width) and width >= 0):
        _fail("omega", f"a distribution with a finite width >= 0 ({allowed})", spec)
    if not math.isfinite(center):
        _fail("omega", f"a distribution with a finite center ({allowed})", spec)
    return parts[0], width, center


def freeze_omega(value: Any, n: int) -> str | tuple[float, ...] | None:
    """Validate natural frequencies: None, a distribution spec, or ``n`` finite numbers.

    Parameters
    ----------
    value : None, str or array_like, shape (n,)
        The ``omega`` argument.
    n : int
        Number of oscillators.

    Returns
    -------
    None, str or tuple of float
        The spec string unchanged (after :func:`parse_omega` checked it) or
        the numbers as a tuple (hashable, JSON-friendly).
    """
    if value is None:
        return None
    if isinstance(value, str):
        parse_omega(value)
        return value
    try:
        w = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        w = None
    if w is None or w.shape != (n,) or not np.all(np.isfinite(w)):
        # describe arrays by shape: the message must stay readable for n = 1e5
        got = value if w is None or w.size <= 8 else f"an array of shape {w.shape}"
        _fail("omega", f"{n} finite numbers (one per oscillator) or a distribution "
              "'NAME:WIDTH[:CENTER]' with NAME one of " + ", ".join(OMEGA_DISTRIBUTIONS), got)
    return tuple(float(x) for x in w)
