"""Compiled loops that advance systems between two save points.

Python only runs once per save point; every step runs inside these loops.
Three layouts:

* ``batch``: ``prange`` over independent systems, each advanced by the serial
  drift (ensembles);
* ``rows``: systems one after the other, each drift evaluation parallel over
  rows (one large system);
* ``serial``: as ``rows`` with the serial drift (one small system): no
  parallel region, which also spares its compile time (seconds).

Runners are specialised per (integrator, drift, layout, selection), kept for
the process and cached on disk as whole entry points (see
:mod:`particles._numba`).

All systems share the parameter tuple ``p`` unless a *selection* function is
bound: then ``p`` holds per-system entries (a leading batch axis) and system
``b`` runs with ``select(p, b)`` (independent random weights per system).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from particles._numba import jit, kernel_key, prange, specialize
from particles.integrators import INTEGRATORS
from particles.integrators._rows import copy_rows

#: status codes written by the adaptive runner, per system.
STATUS_OK, STATUS_MAX_STEPS, STATUS_STEP_UNDERFLOW = 0, 1, 2

@jit
def step_factor(err, order):
    """Factor for the next step after an attempt with scaled error ``err``.

    The standard controller ``0.9 err^(-1/order)`` clipped to [0.2, 5]
    (Hairer, Norsett, Wanner, II.4); a rejected step never grows, and a
    NaN or infinite error (a blown-up stage) shrinks the step fivefold.
    """
    if err == 0.0:
        return 5.0
    if not err < np.inf:
        return 0.2
    fac = min(5.0, max(0.2, 0.9 * err ** (-1.0 / order)))
    return fac if err <= 1.0 else min(1.0, fac)


@jit
def shared(p, b):
    """Selection of the shared parameters: every system runs with ``p`` itself."""
    return p


# names bound per specialisation
step = None
attempt = None
one = None
select = shared
STAGES = 0
ORDER = 1


def _run_fixed_batch(Xb, nsteps, h, p, wsize):
    B, n, d = Xb.shape
    for b in prange(B):
        ws = np.empty(wsize)
        S = np.empty((STAGES, n, d))
        X = Xb[b]
        pb = select(p, b)
        for _ in range(nsteps):
            step(X, h, pb, ws, S)


def _run_fixed_rows(Xb, nsteps, h, p, wsize):
    B, n, d = Xb.shape
    ws = np.empty(wsize)
    S = np.empty((STAGES, n, d))
    for b in range(B):
        X = Xb[b]
        pb = select(p, b)
        for _ in range(nsteps):
            step(X, h, pb, ws, S)


def _key(integrator: str, drift, selection=None) -> str:
    key = f"{integrator}_{kernel_key(drift)}"
    return key if selection is None else f"{key}__{kernel_key(selection)}"


@cache
def compiled_step(integrator: str, drift):
    """The integrator's compiled ``step(X, h, p, ws, S)`` for a drift."""
    return INTEGRATORS[integrator].module.make_step(drift)


def _selection(selection) -> dict:
    return {} if selection is None else {"select": selection}


@cache
def fixed_runner(integrator: str, drift, layout: str, selection=None):
    """Compiled ``run(Xb, nsteps, h, p, wsize)`` advancing Xb (B, n, d) in place.

    Parameters
    ----------
    integrator : str
        Key of :data:`~particles.integrators.INTEGRATORS`.
    drift : numba dispatcher
        ``drift(X, p, out, ws)``; parallel over rows for ``"rows"``, serial
        otherwise.
    layout : {"batch", "rows", "serial"}
        Parallel over systems, or systems in turn (the drift decides whether
        rows run in parallel).
    selection : numba dispatcher, optional
        ``select(p, b)``, the parameters of system ``b`` from per-system
        parameters ``p`` (:attr:`particles.fields.CompiledField.select`);
        None when all systems share ``p``.
    """
    key = _key(integrator, drift, selection)
    bindings = dict(step=compiled_step(integrator, drift),
                    STAGES=INTEGRATORS[integrator].stages, **_selection(selection))
    if layout == "batch":
        return specialize(_run_fixed_batch, key, parallel=True, cache=True, **bindings)
    return specialize(_run_fixed_rows, key, cache=True, **bindings)


def _one_adaptive(X, t0, t1, h0, p, ws, S, rtol, atol, max_steps, st):
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
            copy_rows(S[STAGES - 1], X)
            t = t1 if last else t + hh
            st[0] += 1
        else:
            st[1] += 1
        h = hh * step_factor(err, ORDER)
        if not h > 1e-14 * max(span, 1e-300):
            st[2] = STATUS_STEP_UNDERFLOW
            return


def _run_adaptive_batch(Xb, t0, t1, h0, p, wsize, rtol, atol, max_steps, stats):
    B, n, d = Xb.shape
    for b in prange(B):
        ws = np.empty(wsize)
        S = np.empty((STAGES, n, d))
        one(Xb[b], t0, t1, h0, select(p, b), ws, S, rtol, atol, max_steps, stats[b])


def _run_adaptive_rows(Xb, t0, t1, h0, p, wsize, rtol, atol, max_steps, stats):
    B, n, d = Xb.shape
    ws = np.empty(wsize)
    S = np.empty((STAGES, n, d))
    for b in range(B):
        one(Xb[b], t0, t1, h0, select(p, b), ws, S, rtol, atol, max_steps, stats[b])


@cache
def _one_system(integrator: str, drift):
    """Compiled adaptive integration of one system (shared by every runner)."""
    module = INTEGRATORS[integrator].module
    return specialize(_one_adaptive, _key(integrator, drift),
                      attempt=module.make_attempt(drift), STAGES=module.STAGES,
                      ORDER=module.ORDER)


@cache
def adaptive_runner(integrator: str, drift, layout: str, selection=None):
    """Compiled ``run(Xb, t0, t1, h0, p, wsize, rtol, atol, max_steps, stats)``.

    Advances each system of Xb (B, n, d) from t0 to exactly t1 with its own
    step sizes, starting from ``h0``.  ``stats`` (B, 3) int64 accumulates
    accepted and rejected steps and receives a status code (``STATUS_*``).
    ``selection`` is as in :func:`fixed_runner`.
    """
    module = INTEGRATORS[integrator].module
    consts = dict(STAGES=module.STAGES, ORDER=module.ORDER)
    key = _key(integrator, drift, selection)
    bindings = dict(one=_one_system(integrator, drift), **consts, **_selection(selection))
    if layout == "batch":
        return specialize(_run_adaptive_batch, key, parallel=True, cache=True, **bindings)
    return specialize(_run_adaptive_rows, key, cache=True, **bindings)
