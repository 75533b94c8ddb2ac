"""``auto``: dopri5 while clusters form, sdirk4 from the save point at which the run turns stiff.

Why two methods.  While clusters form, the dynamics is fast everywhere and
``dopri5`` (7 field evaluations a step) takes the steps accuracy asks for.
Once they have formed, the tokens of a cluster contract onto each other at
a rate ``rho`` of order one while the clusters move on a time scale
``e^{c beta}``: dopri5 then sits at its stability limit (``h rho`` about 3.3,
the real stability boundary of the Dormand-Prince pair), whatever the
tolerance, and its cost grows linearly with the time reached.  ``sdirk4``
(L-stable, about 40 evaluations a step) takes steps limited by the slow
motion alone there, but pays several times dopri5's price while clusters
form.  ``auto`` runs the first phase with dopri5 and the rest with sdirk4.

The rule (:func:`stiff`), at each save point, in Python (once per frame,
never per step): the run has turned stiff at frame ``k`` when, in every
system,

* the save interval ``(t_{k-1}, t_k]`` took at least :data:`MIN_STEPS`
  accepted dopri5 steps, and
* their mean size ``h = (t_k - t_{k-1}) / steps`` times ``rho``, the spectral
  radius of the field's Jacobian at frame ``k`` (:func:`spectral_radius`), is
  at least :data:`STIFF`: steps that long, many of them, are held by
  stability (the boundary is at 3.3), not by accuracy.

The mean over the interval, not the last step proposed, is the evidence: it
asks the persistence Hairer's DOPRI5 stiffness test asks of 15 consecutive
steps, and it includes the steps that grow again from ``min(dt, interval)``
at the interval's start, so it errs towards staying explicit.  A save grid
finer than about ``MIN_STEPS * 3.3 / rho`` never switches: dopri5's steps are
then limited by the save points (every interval starts again from ``dt``),
and sdirk4 would gain nothing.  From frame ``k`` on the run goes on with
sdirk4 from the same state (what ``--resume --integrator sdirk4`` does at
that frame); it does not switch back.  Measured on the circle (SA, seed 1,
log-spaced saves), ``h rho`` rises from 0.1 while clusters form to 2.5 by
t = 60 (n = 32, beta 9) or 3.1 by t = 230 (n = 1000, beta 12), and stays
at 3.2 to 3.3 on the plateaus, with ``rho`` within 1 % of 1.

Deterministic.  The rule reads the frame's state, the accepted step counts
at frames ``k`` and ``k - 1`` (stored in the file at every frame as
``accepted_steps``) and the save times: what a run resumed at frame ``k - 1``
has too, so a resumed run switches at the frame the uninterrupted one did.
A run resumed after its switch goes on with sdirk4 (the file records the
switch, ``/events/switches``).

Ensembles switch together, when every system is stiff: one compiled call
advances every system, so one still forming keeps dopri5 for all.

``rtol`` and ``atol`` apply to both phases; ``dt`` is the first step of every
save interval in both.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from particles.integrators import dopri5, sdirk4

#: the explicit method while clusters form, then the stiff one.
PHASES = ("dopri5", "sdirk4")
#: the declared order: the lower of its phases' (the order tests run on each).
ORDER = min(dopri5.ORDER, sdirk4.ORDER)
STRONG_ORDER = None
SPACES = tuple(s for s in dopri5.SPACES if s in sdirk4.SPACES)
STAGES = max(dopri5.STAGES, sdirk4.STAGES)
#: drift evaluations of a step of the first phase (what an estimate counts: the
#: steps at the initial ``dt``, a bound either way)
EVALUATIONS = dopri5.EVALUATIONS

#: accepted dopri5 steps a save interval must take before its mean step counts
#: as evidence (Hairer's test asks for 15 consecutive stiff steps).
MIN_STEPS = 15
#: ``h rho`` from which dopri5's steps count as held by stability (its real
#: stability boundary is about 3.3; accuracy-limited steps stay well below).
STIFF = 2.0
#: power iterations of the spectral radius estimate.
POWER_ITERATIONS = 8

_SQRT_EPS = float(np.sqrt(np.finfo(np.float64).eps))


def _tangent(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``y_i - <x_i, y_i> x_i`` (the projection of the stage field, as compiled)."""
    return Y - np.einsum("ia,ia->i", X, Y)[:, None] * X


def spectral_radius(drift: Callable, X: np.ndarray, p: tuple, ws: np.ndarray, *,
                    sphere: bool = True, iterations: int = POWER_ITERATIONS) -> float:
    """Estimate the spectral radius of the Jacobian of the field the integrators step.

    Power iteration ``v <- J v / |J v|`` from a fixed start vector (a fixed
    seed: the estimate depends on the state alone), ``J v`` the forward
    difference ``(f(X + e v) - f(X)) / e`` with ``sdirk4``'s step ``e``.  On
    the sphere ``f`` is the projected field the stages evaluate, ``v`` is
    tangent and ``J v`` is projected back on the tangent spaces at ``X``: the
    normal direction is reset by the normalisation of every accepted step and
    does not limit the steps.

    Parameters
    ----------
    drift : callable
        ``drift(X, p, out, ws)`` with ``X``, ``out`` of shape (n, d) (a field's
        ``serial`` drift).
    X : ndarray, shape (n, d)
        The state of one system.
    p : tuple
        Its parameters.
    ws : ndarray, shape (m,)
        The drift's scratch.
    sphere : bool
        Rows on the unit sphere (else flat coordinates: no projection).
    iterations : int
        Power iterations (one drift evaluation each, plus one at ``X``).

    Returns
    -------
    float
        ``|J v|`` of the last iterate (``|v| = 1``): 0 for a field that does
        not move, NaN where the field is not finite.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, d = X.shape

    def field(Y: np.ndarray) -> np.ndarray:
        out = np.empty((n, d))
        drift(Y, p, out, ws)
        return _tangent(Y, out) if sphere else out

    f0 = field(X)
    v = np.random.default_rng(0).normal(size=(n, d))
    if sphere:
        v = _tangent(X, v)
    v /= np.sqrt(np.mean(v * v))
    e = _SQRT_EPS * (1.0 + np.sqrt(np.mean(X * X)))
    rho = 0.0
    for _ in range(iterations):
        w = (field(X + e * v) - f0) / e
        if sphere:
            w = _tangent(X, w)
        rho = float(np.sqrt(np.mean(w * w)))
        if not rho > 0.0:  # zero, or NaN: nothing more to learn
            return rho if rho == 0.0 else float("nan")
        v = w / rho
    return rho


def mean_steps(t0: float, t1: float, before: np.ndarray, now: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """The accepted steps of each system over a save interval and their mean size.

    Parameters
    ----------
    t0, t1 : float
        The interval.
    before, now : ndarray, shape (batch,)
        Accepted steps up to ``t0`` and up to ``t1``.

    Returns
    -------
    steps : ndarray of int64, shape (batch,)
    h : ndarray, shape (batch,)
        ``(t1 - t0) / steps`` (0 where no step was taken).
    """
    steps = np.asarray(now, dtype=np.int64) - np.asarray(before, dtype=np.int64)
    h = np.where(steps > 0, (t1 - t0) / np.maximum(steps, 1), 0.0)
    return steps, h


def stiff(steps: np.ndarray, h: np.ndarray, rho: Callable[[int], float]) -> float | None:
    """Whether every system took dopri5 steps held by stability over an interval.

    Parameters
    ----------
    steps, h : ndarray, shape (batch,)
        The accepted steps of each system over the interval and their mean
        size (:func:`mean_steps`).
    rho : callable
        ``rho(b)``: the spectral radius estimate of system ``b`` at the
        interval's end (:func:`spectral_radius`), asked only of systems
        that took at least :data:`MIN_STEPS` steps, in order, until one is
        not stiff.

    Returns
    -------
    float or None
        The smallest ``h rho`` over the systems when every one is at least
        :data:`STIFF` (the evidence the file records); None otherwise.
    """
    if not np.all(steps >= MIN_STEPS):
        return None
    least = np.inf
    for b in range(len(steps)):
        hr = float(h[b]) * rho(b)
        if not hr >= STIFF:  # NaN too
            return None
        least = min(least, hr)
    return least
