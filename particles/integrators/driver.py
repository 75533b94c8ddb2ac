"""Compiled loops that advance systems between two save points.

Python only runs once per save point; every step runs inside these loops.
Two layouts:

* ``batch``: ``prange`` over independent systems, each advanced by the serial
  drift (ensembles, and small single systems);
* ``rows``: systems one after the other, each drift evaluation parallel over
  rows (one large system).

Runners are compiled once per (integrator, drift) pair and cached.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from particles._numba import jit, prange
from particles.integrators import INTEGRATORS

#: status codes written by the adaptive runner, per system.
STATUS_OK, STATUS_MAX_STEPS, STATUS_STEP_UNDERFLOW = 0, 1, 2


@cache
def compiled_step(integrator: str, drift):
    """The integrator's compiled ``step(X, h, p, ws, S)`` for a drift (cached)."""
    return INTEGRATORS[integrator].module.make_step(drift)


@cache
def fixed_runner(integrator: str, drift, layout: str):
    """Compile ``run(Xb, nsteps, h, p, wsize)`` advancing Xb (B, n, d) in place."""
    step = compiled_step(integrator, drift)
    k = INTEGRATORS[integrator].module.STAGES

    if layout == "batch":

        @jit(parallel=True)
        def run(Xb, nsteps, h, p, wsize):
            B, n, d = Xb.shape
            for b in prange(B):
                ws = np.empty(wsize)
                S = np.empty((k, n, d))
                X = Xb[b]
                for _ in range(nsteps):
                    step(X, h, p, ws, S)

        return run

    @jit
    def run_rows(Xb, nsteps, h, p, wsize):
        B, n, d = Xb.shape
        ws = np.empty(wsize)
        S = np.empty((k, n, d))
        for b in range(B):
            X = Xb[b]
            for _ in range(nsteps):
                step(X, h, p, ws, S)

    return run_rows


@cache
def adaptive_runner(integrator: str, drift, layout: str):
    """Compile ``run(Xb, t0, t1, h0, p, wsize, rtol, atol, max_steps, stats)``.

    Advances each system of Xb (B, n, d) from t0 to exactly t1 with its own
    step sizes, starting from ``h0``.  ``stats`` (B, 3) int64 accumulates
    accepted and rejected steps and receives a status code (``STATUS_*``).
    """
    module = INTEGRATORS[integrator].module
    attempt = module.make_attempt(drift)
    k = module.STAGES
    order = module.ORDER

    @jit
    def one(X, t0, t1, h0, p, ws, S, rtol, atol, max_steps, st):
        t = t0
        h = h0
        span = t1 - t0
        tiny = 1e-14 * max(1.0, abs(t1))
        while t1 - t > tiny:
            if st[0] + st[1] >= max_steps:
                st[2] = STATUS_MAX_STEPS
                return
            last = h >= t1 - t
            hh = t1 - t if last else h
            err = attempt(X, hh, p, ws, S, rtol, atol)
            if err <= 1.0:
                X[:, :] = S[k - 1]
                t = t1 if last else t + hh
                st[0] += 1
                fac = 5.0 if err == 0.0 else min(5.0, max(0.2, 0.9 * err ** (-1.0 / order)))
            else:
                st[1] += 1
                # a NaN error (blown-up stage) counts as a rejection with the smallest factor
                fac = 0.2 if not err < np.inf else min(1.0, max(0.2, 0.9 * err ** (-1.0 / order)))
            h = hh * fac
            if not h > 1e-14 * max(span, 1e-300):
                st[2] = STATUS_STEP_UNDERFLOW
                return

    if layout == "batch":

        @jit(parallel=True)
        def run(Xb, t0, t1, h0, p, wsize, rtol, atol, max_steps, stats):
            B, n, d = Xb.shape
            for b in prange(B):
                ws = np.empty(wsize)
                S = np.empty((k, n, d))
                one(Xb[b], t0, t1, h0, p, ws, S, rtol, atol, max_steps, stats[b])

        return run

    @jit
    def run_rows(Xb, t0, t1, h0, p, wsize, rtol, atol, max_steps, stats):
        B, n, d = Xb.shape
        ws = np.empty(wsize)
        S = np.empty((k, n, d))
        for b in range(B):
            one(Xb[b], t0, t1, h0, p, ws, S, rtol, atol, max_steps, stats[b])

    return run_rows
