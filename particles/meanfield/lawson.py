"""The adaptive integrating-factor (Lawson) Dormand-Prince 5(4) loop of the
spectral mean-field solvers beyond the circle.

A solver supplies a :class:`Space`: a linear map from the grid density to its
spectral coefficients (``analyse``), the advective right-hand side in
coefficient space (``rhs``), a diagonal linear part ``L`` (minus the diffusion
eigenvalues, integrated exactly: it puts no limit on the step) and the grid
norm of a coefficient vector.  :func:`lawson_frames` then advances the grid
density from save time to save time with the tableau of the particles'
``dopri5`` (:data:`particles.integrators.tableaux.DOPRI5`) and its step
controller (:func:`particles.integrators.driver.step_factor`), exactly as the
circle's solver (:mod:`particles.meanfield.solver`) does with its FFT.

Every step starts from the grid density (no FSAL), so a
:class:`SolverState` ``(t, rho, dt, steps, rejected)``
at a save time is the whole state: a solve resumed from it continues bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from particles.errors import IntegrationError
from particles.integrators.driver import step_factor
from particles.integrators.tableaux import DOPRI5

_C = np.array(DOPRI5.c)
_A, _B, _E, _ORDER = DOPRI5.a, DOPRI5.b, DOPRI5.e, DOPRI5.order


@dataclass
class SolverState:
    """Where a solve stands at a save time: enough to continue it bit for bit.

    Attributes
    ----------
    t : float
        Time.
    rho : ndarray
        Density on the grid (the circle: shape (M,)).
    dt : float
        The step the controller proposes next.
    steps, rejected : int
        Accepted and rejected steps so far.
    """

    t: float
    rho: np.ndarray
    dt: float
    steps: int = 0
    rejected: int = 0



class Space(Protocol):
    """What the loop asks of a spectral discretisation."""

    #: minus the diffusion eigenvalue of every coefficient, shape of a coefficient vector.
    L: np.ndarray

    def analyse(self, rho: np.ndarray) -> np.ndarray:
        """Grid density -> spectral coefficients."""

    def rhs(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The advective derivative of coefficients ``u`` and the grid density of ``u``."""

    def norm(self, e: np.ndarray) -> float:
        """RMS over the space of the function with coefficients ``e``."""

    def rms(self, rho: np.ndarray) -> float:
        """RMS over the space of a grid density."""


class _Factors:
    """``exp(L (c_i - c_j) h)`` for the stage pairs, computed once per step size."""

    def __init__(self, L: np.ndarray) -> None:
        self.L = L
        self.active = bool(np.any(L != 0.0))
        self._h: float | None = None
        self._f: dict = {}

    def __call__(self, h: float) -> dict:
        if not self.active:
            return {}
        if h != self._h:
            by_gap: dict[float, np.ndarray] = {}

            def gap(d: float) -> np.ndarray:
                if d not in by_gap:
                    by_gap[d] = np.exp(self.L * (d * h))
                return by_gap[d]

            f = {(i, j): gap(_C[i] - _C[j]) for i in range(DOPRI5.stages) for j in range(i)}
            for j in range(DOPRI5.stages):
                f["end", j] = gap(1.0 - _C[j])
            f["end", "u"] = gap(1.0)
            self._f, self._h = f, h
        return self._f


def attempt(space: Space, factors: _Factors, u0: np.ndarray, k1: np.ndarray,
            rho0: np.ndarray, h: float, rtol: float, atol: float) -> tuple[np.ndarray, float]:
    """One DOPRI5 attempt from coefficients ``u0`` (first stage ``k1``): the candidate
    grid density and the scaled error ``RMS(e) / (atol + rtol max|rho|)``."""
    # a blown-up stage gives an infinite error (the step is rejected): no warnings
    with np.errstate(over="ignore", invalid="ignore"):
        return _attempt(space, factors, u0, k1, rho0, h, rtol, atol)


def _attempt(space: Space, factors: _Factors, u0: np.ndarray, k1: np.ndarray,
             rho0: np.ndarray, h: float, rtol: float, atol: float) -> tuple[np.ndarray, float]:
    F = factors(h)
    K = [k1]
    for i in range(1, 6):
        acc = F[i, 0] * u0 if F else u0
        for j, a in enumerate(_A[i]):
            if a != 0.0:
                acc = acc + (h * a) * (F[i, j] * K[j] if F else K[j])
        K.append(space.rhs(acc)[0])
    u1 = F["end", "u"] * u0 if F else u0
    for j, b in enumerate(_B):
        if b != 0.0:
            u1 = u1 + (h * b) * (F["end", j] * K[j] if F else K[j])
    k7, rho1 = space.rhs(u1)
    K.append(k7)
    e = np.zeros_like(u0)
    for j, c in enumerate(_E):
        if c != 0.0:
            e = e + (h * c) * (F["end", j] * K[j] if F else K[j])
    scale = atol + rtol * max(float(np.abs(rho0).max()), float(np.abs(rho1).max()))
    err = space.norm(e) / scale
    if not (np.all(np.isfinite(rho1)) and math.isfinite(err)):
        err = math.inf
    return rho1, err


def first_step(space: Space, rho: np.ndarray, T: float) -> float:
    """Initial step from the size of the advection (Hairer, Norsett, Wanner II.4)."""
    d1 = space.norm(space.rhs(space.analyse(rho))[0])
    d0 = space.rms(rho)
    h = 1e-6 if d1 < 1e-12 * max(d0, 1e-300) else 0.01 * d0 / d1
    rates = -space.L[space.L != 0.0]
    if rates.size:  # as the circle's: no longer than the slowest diffusive decay
        h = min(h, 1.0 / float(rates.min()))
    return min(h, T)


def lawson_frames(space: Space, times: np.ndarray, state: SolverState, *, rtol: float,
                  atol: float, max_steps: int, resumed: bool) -> Iterator[SolverState]:
    """Advance ``state`` to every save time in ``times`` after ``state.t``.

    Parameters
    ----------
    space : Space
    times : ndarray, shape (F,)
        Increasing save times; those ``<= state.t`` are skipped.
    state : SolverState
        The start.
    resumed : bool
        Whether ``state`` is a saved frame being continued (then it is not yielded
        again); a new solve yields its start first when ``times[0] == 0``.
    rtol, atol : float
        Tolerances of the adaptive step.
    max_steps : int
        Accepted plus rejected steps allowed in all.

    Yields
    ------
    SolverState
        At each save time (a copy: the caller may keep it).

    Raises
    ------
    IntegrationError
        A vanishing step, ``max_steps`` exceeded, a non-finite density.
    """
    rho, t, h = state.rho, float(state.t), float(state.dt)
    steps, rejected = int(state.steps), int(state.rejected)
    factors = _Factors(space.L)
    u0 = k1 = None
    if not resumed and t == 0.0 and len(times) and times[0] == 0.0:
        yield SolverState(t=0.0, rho=rho.copy(), dt=h, steps=steps, rejected=rejected)
    for tf in times[times > t * (1 + 1e-14) + 1e-300]:
        tf = float(tf)
        tiny = 1e-14 * max(1.0, abs(tf))
        span = max(tf - t, 1e-300)
        while tf - t > tiny:
            if steps + rejected >= max_steps:
                raise IntegrationError(f"mean-field solve stopped at t = {t:.6g}: max_steps = "
                                       f"{max_steps} reached")
            last = h >= tf - t
            hh = tf - t if last else h
            if u0 is None:
                u0 = space.analyse(rho)
                k1 = space.rhs(u0)[0]
            rho1, err = attempt(space, factors, u0, k1, rho, hh, rtol, atol)
            fac = step_factor.py_func(err, _ORDER)
            if err <= 1.0:
                rho, u0 = rho1, None
                t = tf if last else t + hh
                steps += 1
                h = max(h, hh * fac) if last else hh * fac
            else:
                rejected += 1
                h = hh * fac
            if not h > 1e-14 * span:
                raise IntegrationError(f"mean-field step vanished at t = {t:.6g} "
                                       f"(dt = {h:.3g}): the density is not resolved")
        if not np.all(np.isfinite(rho)):
            raise IntegrationError(f"mean-field density is not finite at t = {tf:.6g}")
        t = tf  # snap, so that a resumed solve continues from the same time
        yield SolverState(t=tf, rho=rho.copy(), dt=h, steps=steps, rejected=rejected)
