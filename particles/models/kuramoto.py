"""Kuramoto oscillators as a problem: on the angles for the integrators that gain from it.

The field is :mod:`particles.fields.kuramoto` (the embedded circle).  Under
the fixed-step integrators of :data:`ANGLE_INTEGRATORS` the problem is the
angle form instead (:mod:`particles.fields.angle`): phases ``theta`` (batch,
n, 1) in a flat space, with the same natural frequencies (one set per system
with ``weight_draws="independent"``), mapped to the stored points ``(cos
theta, sin theta)`` at every save point and re-derived from them, so that a
run resumed from a stored frame continues bit for bit.

Why the angle form: RK4's stage states on the embedded form leave the circle,
and an oscillator with ``h |omega_i| >> 1`` inflates its stage vectors and,
through the O(n) mean field, every oscillator's drift.  On the phases RK4
integrates the constant ``omega_i`` exactly.  (Euler and geodesic steps stay
on the circle; dopri5 controls its error.)  The stochastic steppers run on
the phases too: the noise is then additive, ``d theta_i = f_i dt + sigma
dW_i``, and they gain a strong order.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from particles.errors import invalid
from particles.fields import kuramoto
from particles.fields.angle import ANGLE_SLOTS, angle_field
from particles.models.problem import Hints, Problem, run_noise, sphere_problem, token_positions
from particles.protocols import RunSpec

__all__ = ["ANGLE_INTEGRATORS", "circle_points", "on_angles", "phases", "problem"]

#: fixed-step integrators that run ``model="kuramoto"`` on the angle form.
ANGLE_INTEGRATORS = frozenset({"rk4", "em", "heun"})


def on_angles(config: RunSpec) -> bool:
    """Whether a Kuramoto run integrates the phases (its integrator is in
    :data:`ANGLE_INTEGRATORS`) rather than the embedded circle."""
    return config.integrator in ANGLE_INTEGRATORS


def phases(X: np.ndarray) -> np.ndarray:
    """Phases of points on the circle: ``theta`` (batch, n, 1) of X (batch, n, 2)."""
    theta = np.empty((*X.shape[:2], 1))
    _anchor(X, theta)
    return theta


def _anchor(X: np.ndarray, theta: np.ndarray) -> None:
    theta[..., 0] = np.arctan2(X[..., 1], X[..., 0])


def circle_points(theta: np.ndarray) -> np.ndarray:
    """Points ``(cos theta, sin theta)`` (batch, n, 2) of phases (batch, n, 1)."""
    X = np.empty((*theta.shape[:2], 2))
    X[..., 0] = np.cos(theta[..., 0])
    X[..., 1] = np.sin(theta[..., 0])
    return X


def problem(config: RunSpec, positions: np.ndarray, *,
            keys: np.ndarray | None = None) -> Problem:
    """The problem of a validated ``model="kuramoto"`` run.

    Parameters
    ----------
    config : RunSpec
    positions : ndarray, shape (batch, n, 2) or (n, 2)
        Oscillators at the first save point.
    keys : ndarray of uint64, shape (batch, 2), optional
        Noise keys (see :func:`particles.models.problem.run_noise`).

    Returns
    -------
    Problem
        On the embedded circle, or on the phases (see the module docstring);
        either way with the embedded field's speed bounds (``|c| + |omega_i|``).
    """
    field = kuramoto.build(config)
    if not on_angles(config):
        return sphere_problem(config, positions, field, keys=keys)
    X = token_positions(config, positions, field)
    omegas = kuramoto.system_frequencies(config)
    angles = angle_field("kuramoto", config.n, coupling=float(config.coupling),
                         omega=omegas[0], masses=config.mass_array())
    params, select = angles.params, None
    if field.select is not None:
        # each system its own frequencies: a leading batch axis, selected per system
        at = ANGLE_SLOTS["omega"]
        params = (*params[:at], np.ascontiguousarray(omegas), *params[at + 1:])
        select = kuramoto.select_omega
    angles = dataclasses.replace(angles, params=params, select=select, speed=field.speed,
                                 rates=field.rates, pairwise=field.pairwise)
    return Problem(state0=phases(X), space="flat", field=angles,
                   noise=run_noise(config, X.shape[0], keys), to_positions=circle_points,
                   anchor=_anchor, positions0=X, hints=Hints(state="phases"))


#: the attention fields Kuramoto has no use for, and their defaults.
ATTENTION_DEFAULTS = (("weights", "given"), ("value_weights", "given"), ("heads", 1),
                      ("normalization", "softmax"), ("layer_time", None))


def rules(spec: RunSpec) -> None:
    """Kuramoto: attention settings at their defaults, oscillators on the circle,
    no attention matrices, the default kernel (fields ``weights`` ... ``kernel``)."""
    for name, default in ATTENTION_DEFAULTS:
        if getattr(spec, name) != default:
            raise invalid(name, f"{default!r} (the default) for model='kuramoto'",
                          getattr(spec, name))
    if spec.d != 2:
        raise invalid("d", "2 for model='kuramoto' (oscillators on the circle)", spec.d)
    for m in ("Q", "K", "V"):
        if not np.array_equal(spec.matrix(m), np.eye(2)):
            raise invalid(m, "'identity' for model='kuramoto' (it has no attention "
                          "matrices; use coupling, negative for repulsion)", getattr(spec, m))
    if spec.kernel != "edp":
        raise invalid("kernel", "'edp' (the default) for model='kuramoto' (it has no "
                      "attention kernel)", spec.kernel)
