"""Compiled loops that advance systems between two save points.

Python only runs once per save point; every step runs inside these loops.
Three layouts:

* ``batch``: ``prange`` over independent systems, each advanced by the serial
  drift (ensembles);
* ``rows``: systems one after the other, each drift evaluation parallel over
  rows (one large system);
* ``serial``: as ``rows`` with the serial drift (one small system): no
  parallel region, which also spares its compile time (seconds).

Runners carry the step contract (:func:`compiled_step`): the time of every
step and a counter-based noise state (a key per system and the global step
counter), so a stochastic stepper needs nothing the runners do not pass.

Runners are specialised per (integrator, drift, layout, selection, space), kept for
the process and cached on disk as whole entry points (see
:mod:`particles._numba`).  They release the GIL: one call can last minutes
(a step of 10^7 tokens), and the interrupt watchdog
(:mod:`particles_cli.interrupts`) must be able to run meanwhile to keep its
promise of a stop within seconds.

All systems share the parameter tuple ``p`` unless a *selection* function is
bound: then ``p`` holds per-system entries (a leading batch axis) and system
``b`` runs with ``select(p, b)`` (independent random weights per system).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from particles._numba import jit, kernel_key, prange, specialize
from particles.integrators import INTEGRATORS

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
start = None
accept = None
one = None
select = shared
STAGES = 0
ORDER = 1


#: the batch runners split the systems into at most this many interleaved
#: chunks, each with one scratch allocation (not one per system and call: a
#: sweep calls the runner every save point), enough chunks for any core count.
BATCH_CHUNKS = 64


def _run_fixed_batch(Xb, t0, nsteps, h, p, wsize, keys, counter):
    B, n, d = Xb.shape
    nchunks = min(B, BATCH_CHUNKS)
    for c in prange(nchunks):
        ws = np.empty(wsize)
        S = np.empty((STAGES, n, d))
        for b in range(c, B, nchunks):
            X = Xb[b]
            pb = select(p, b)
            key = keys[b]
            for k in range(nsteps):
                step(X, t0 + k * h, h, pb, ws, S, key, counter + k)


def _run_fixed_rows(Xb, t0, nsteps, h, p, wsize, keys, counter):
    B, n, d = Xb.shape
    ws = np.empty(wsize)
    S = np.empty((STAGES, n, d))
    for b in range(B):
        X = Xb[b]
        pb = select(p, b)
        key = keys[b]
        for k in range(nsteps):
            step(X, t0 + k * h, h, pb, ws, S, key, counter + k)


def _key(integrator: str, drift, selection=None, space: str = "sphere") -> str:
    key = f"{integrator}_{space}_{kernel_key(drift)}"
    return key if selection is None else f"{key}__{kernel_key(selection)}"


def _check_space(integrator: str, space: str) -> None:
    spaces = INTEGRATORS[integrator].spaces
    if space not in spaces:
        raise ValueError(f"integrator {integrator!r} works in the spaces {spaces}, not {space!r}")


@cache
def compiled_step(integrator: str, drift, space: str = "sphere"):
    """The integrator's compiled ``step(X, t, h, p, ws, S, key, counter)`` for a drift.

    The step contract: advance one system X (n, d) in place from time ``t``
    by ``h`` with parameters ``p``, float64 scratch ``ws`` (the drift's) and
    ``S`` (``stages`` arrays of shape (n, d)); ``key`` (2,) uint64 and the
    global step counter ``counter`` address the counter-based noise of this
    step (:mod:`particles.integrators.noise`; unused by deterministic
    steppers).
    """
    _check_space(integrator, space)
    return INTEGRATORS[integrator].module.make_step(drift, space)


def _selection(selection) -> dict:
    return {} if selection is None else {"select": selection}


@cache
def fixed_runner(integrator: str, drift, layout: str, selection=None, space: str = "sphere"):
    """Compiled ``run(Xb, t0, nsteps, h, p, wsize, keys, counter)`` advancing Xb (B, n, d)
    in place by ``nsteps`` steps of size ``h`` from time ``t0``.

    Step ``k`` of system ``b`` runs at time ``t0 + k h`` with noise key
    ``keys[b]`` ((B, 2) uint64) and step counter ``counter + k`` (the caller
    passes the global step count at ``t0`` and advances it by ``nsteps``).

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
    space : {"sphere", "flat"}
        Where the state lives (see :data:`~particles.integrators.SPACES`).
    """
    key = _key(integrator, drift, selection, space)
    bindings = dict(step=compiled_step(integrator, drift, space),
                    STAGES=INTEGRATORS[integrator].stages, **_selection(selection))
    if layout == "batch":
        return specialize(_run_fixed_batch, key, parallel=True, cache=True, nogil=True,
                          **bindings)
    return specialize(_run_fixed_rows, key, cache=True, nogil=True, **bindings)


def _one_adaptive(X, t0, t1, hs, p, ws, S, rtol, atol, max_steps, st, key):
    t = t0
    h = hs[0]
    span = t1 - t0
    tiny = 1e-14 * max(1.0, abs(t1))
    start(X, t, p, ws, S)
    while t1 - t > tiny:
        if st[0] + st[1] >= max_steps:
            st[2] = STATUS_MAX_STEPS
            return
        last = h >= t1 - t
        hh = t1 - t if last else h
        err = attempt(X, t, hh, p, ws, S, rtol, atol, key, st[0] + st[1])
        if err <= 1.0:
            accept(X, S)
            t = t1 if last else t + hh
            st[0] += 1
            # a truncated last step says nothing about the step to propose next
            h = max(h, hh * step_factor(err, ORDER)) if last else hh * step_factor(err, ORDER)
        else:
            st[1] += 1
            h = hh * step_factor(err, ORDER)
        if not h > 1e-14 * max(span, 1e-300):
            st[2] = STATUS_STEP_UNDERFLOW
            return
    hs[0] = h


def _run_adaptive_batch(Xb, t0, t1, hs, p, wsize, rtol, atol, max_steps, stats, keys):
    B, n, d = Xb.shape
    nchunks = min(B, BATCH_CHUNKS)
    for c in prange(nchunks):
        ws = np.empty(wsize)
        S = np.empty((STAGES, n, d))
        for b in range(c, B, nchunks):
            one(Xb[b], t0, t1, hs[b:b + 1], select(p, b), ws, S, rtol, atol, max_steps,
                stats[b], keys[b])


def _run_adaptive_rows(Xb, t0, t1, hs, p, wsize, rtol, atol, max_steps, stats, keys):
    B, n, d = Xb.shape
    ws = np.empty(wsize)
    S = np.empty((STAGES, n, d))
    for b in range(B):
        one(Xb[b], t0, t1, hs[b:b + 1], select(p, b), ws, S, rtol, atol, max_steps, stats[b],
            keys[b])


@cache
def _one_system(integrator: str, drift, space: str = "sphere"):
    """Compiled adaptive integration of one system (shared by every runner)."""
    _check_space(integrator, space)
    module = INTEGRATORS[integrator].module
    return specialize(_one_adaptive, _key(integrator, drift, space=space),
                      attempt=module.make_attempt(drift, space),
                      start=module.make_start(drift, space), accept=module.make_accept(space),
                      ORDER=module.ORDER)


@cache
def adaptive_runner(integrator: str, drift, layout: str, selection=None, space: str = "sphere"):
    """Compiled ``run(Xb, t0, t1, hs, p, wsize, rtol, atol, max_steps, stats, keys)``.

    Advances each system of Xb (B, n, d) from t0 to exactly t1 with its own
    step sizes, starting from ``hs[b]`` ((B,) float64), which receives the
    step proposed next (a caller may carry it to the next save interval).
    ``stats`` (B, 3) int64 accumulates accepted and rejected steps and
    receives a status code (``STATUS_*``); the attempt counter
    ``stats[b, 0] + stats[b, 1]`` is the noise counter, ``keys`` (B, 2)
    uint64 the noise keys.  ``selection`` and ``space`` are as in
    :func:`fixed_runner`.
    """
    module = INTEGRATORS[integrator].module
    key = _key(integrator, drift, selection, space)
    bindings = dict(one=_one_system(integrator, drift, space), STAGES=module.STAGES,
                    **_selection(selection))
    if layout == "batch":
        return specialize(_run_adaptive_batch, key, parallel=True, cache=True, nogil=True,
                          **bindings)
    return specialize(_run_adaptive_rows, key, cache=True, nogil=True, **bindings)
