"""The save-point march: compiled chunks of steps between consecutive save times."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import Any

import numpy as np

from particles.engine.layout import layer_segments
from particles.errors import IntegrationError
from particles.integrators.driver import (
    STATUS_MAX_STEPS,
    STATUS_OK,
)


def march(
    X: np.ndarray,
    times: np.ndarray,
    runner: Callable,
    *,
    adaptive: bool,
    dt: float,
    max_steps: int,
    params: tuple,
    wsize: int,
    keys: np.ndarray,
    rtol: float = 0.0,
    atol: float = 0.0,
    stats: np.ndarray | None = None,
    hs: np.ndarray | None = None,
    carry_step: bool = False,
    layer_time: float | None = None,
    layer_params: Callable[[int], tuple] | None = None,
    guard: Callable[[], Any] = nullcontext,
    start: int = 0,
    step: int = 0,
    state: str = "positions",
    hint: str = "",
) -> Iterator[tuple[int, int]]:
    """The one save-point loop: advance X through the save times, one compiled call
    per interval (or layer segment).

    Parameters
    ----------
    X : ndarray, shape (batch, n, d)
        State at ``times[start]``, advanced in place.
    times : ndarray, shape (frames,)
        Save times.
    runner : numba dispatcher
        From :func:`~particles.integrators.driver.fixed_runner` or
        :func:`~particles.integrators.driver.adaptive_runner` (``adaptive``).
    dt : float
        Fixed step (fixed runners: equal steps of at most ``dt`` that land on
        every save and layer time), or initial step (adaptive runners).
    max_steps : int
        Bound on the steps (fixed) or attempts (adaptive) of the run.
    params : tuple
        Drift parameters of the first segment.
    wsize : int
        Drift scratch length.
    keys : ndarray of uint64, shape (batch, 2)
        Noise keys (:func:`particles.seeds.noise_keys`).
    rtol, atol : float
        Adaptive tolerances.
    stats : ndarray of int64, shape (batch, 3), optional
        Adaptive counters (accepted, rejected, status), accumulated.
    hs : ndarray, shape (batch,), optional
        Adaptive step proposals.  With ``carry_step`` the step proposed at the
        end of an interval starts the next one (``hs`` must hold the initial
        step); otherwise every interval starts from ``min(dt, length)``.
    layer_time : float, optional
        Layers: intervals are split at multiples of it and the parameters of
        layer ``l`` are ``layer_params(l)``.
    guard : callable
        Context manager factory wrapped around every compiled call.
    start : int
        Index of the frame X is at.
    step : int
        Step counter at frame ``start`` (fixed steps: the noise counter;
        adaptive steps count frames from it).
    state : str
        What X holds, for error messages (``"positions"``, ``"phases"``).
    hint : str
        Remedy appended to the messages of failed integrations (see
        :func:`_failure_hint`); default: "reduce dt" for non-finite states.

    Yields
    ------
    (k, step) : tuple of int
        After reaching ``times[k]``: the frame index and the step counter
        (fixed: steps since t = 0; adaptive: ``k``, or for a run resumed with an
        adaptive integrator after fixed steps, the counter at ``start`` plus
        the frames since, so that it never goes back).

    Raises
    ------
    IntegrationError
        ``max_steps`` reached, step-size underflow, or non-finite states.
    """
    # weights of the current layer (redrawn from the seed when a layer starts)
    layer_now, p = 0, params
    B = X.shape[0]
    counted = step - start  # adaptive: 0 unless fixed steps came before frame start
    for k in range(start + 1, len(times)):
        t0, t1 = float(times[k - 1]), float(times[k])
        for a, b, layer in layer_segments(t0, t1, layer_time):
            if layer != layer_now:
                layer_now, p = layer, layer_params(layer)
            with guard():
                if adaptive:
                    if not carry_step:
                        hs[:] = min(dt, b - a)
                    runner(X, a, b, hs, p, wsize, rtol, atol, max_steps, stats, keys)
                else:
                    # equal steps that land exactly on the save (or layer) time
                    nsteps = max(1, math.ceil((b - a) / dt - 1e-9))
                    if step + nsteps > max_steps:
                        raise IntegrationError(
                            f"max_steps={max_steps} reached at t={a:g}; raise max_steps")
                    runner(X, a, nsteps, (b - a) / nsteps, p, wsize, keys, step)
                    step += nsteps
        if adaptive:
            step = counted + k
            bad = np.flatnonzero(stats[:, 2] != STATUS_OK)
            if bad.size:
                why = ("max_steps reached" if stats[bad[0], 2] == STATUS_MAX_STEPS
                       else "step size underflow")
                where = f" in system {bad[0]}" if B > 1 else ""
                raise IntegrationError(
                    f"adaptive integration failed{where} between t={t0:g} and "
                    f"t={t1:g}: {why}" + (f"; {hint}" if hint else ""))
        if not np.all(np.isfinite(X)):
            raise IntegrationError(
                f"non-finite {state} between t={t0:g} and t={t1:g}; {hint or 'reduce dt'}")
        yield k, step

