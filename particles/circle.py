"""Angle-form solvers on the circle: theta in, theta out.

On S^1 every model of DESIGN.md section 1 is an ODE for the angles
``theta_i``; with natural frequencies ``omega_i`` and a coupling ``c`` the
angle form solved here is the generalized Kuramoto model

    dtheta_i/dt = omega_i + c (1/N) sum_j m_j h_i(theta_j - theta_i)

(``N = sum_j m_j``, masses 1 by default) with

* ``kuramoto``: ``h(u) = sin(u)`` (Kuramoto 1984), O(n) per evaluation
  through the order parameter: ``(1/N) sum_j m_j sin(theta_j - theta_i) =
  Im(z e^{-i theta_i})``, ``z = (1/N) sum_j m_j e^{i theta_j}``;
* ``usa``: ``h(u) = exp(beta cos u - s) sin u`` with ``s = 0``
  (``usa_scale="n"``) or ``s = beta`` (``usa_scale="n_exp_beta"``);
* ``sa``: the same weights normalised by the row sum,
  ``sum_j m_j e^{beta cos} sin / sum_j m_j e^{beta cos}`` (instead of ``N``).

With ``omega = 0`` and ``c = 1`` these are exactly the embedded d = 2
dynamics of ``simulate(..., d=2, model=...)`` for ``x_i = (cos theta_i, sin
theta_i)``; at ``beta = 0`` all three are the Kuramoto model.  The SA/USA
kernels stream pairs (O(n^2) time, O(n) memory: no n x n matrix), with the
vectorised exp and the softmax shift ``beta + max log m`` (exact row maximum
on the circle, where ``cos(theta_j - theta_i) <= 1`` with equality at j = i).

Integrators (fixed-step ``rk4``, adaptive ``dopri5`` with the Dormand-Prince
5(4) pair, FSAL and the standard step-size controller) act on the angle vector
(n,) directly: the state is not on a sphere and needs no projection.  The
phases are kept continuous (no reduction mod 2 pi), so
``theta[-1] - theta[0]`` counts whole turns.

Public API: :func:`simulate_angles` -> :class:`AngleTrajectory`,
:func:`angle_velocity` (compiled) and :func:`angle_velocity_reference`
(NumPy).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import cache

import numba
import numpy as np
from numpy.typing import ArrayLike

from particles._numba import jit, prange, specialize
from particles.circle_analysis import OrderParameter, order_parameter
from particles.config import USA_SCALES, SimulationConfig, check_coupling
from particles.engine import ROWS_PARALLEL_MIN_N
from particles.errors import IntegrationError, StepSizeWarning
from particles.fastexp import exp_scalar
from particles.fields.kuramoto import BLOCK, block_total, resolve_frequencies
from particles.integrators.dopri5 import _A, _B, _E  # the DOPRI5 tableau, shared
from particles.integrators.driver import (
    STATUS_MAX_STEPS,
    STATUS_OK,
    STATUS_STEP_UNDERFLOW,
    step_factor,
)
from particles.sphere import angles_to_circle

__all__ = [
    "ANGLE_INTEGRATORS",
    "ANGLE_MODELS",
    "AngleTrajectory",
    "angle_velocity",
    "angle_velocity_reference",
    "simulate_angles",
]

#: models of the angle form: name -> coupling function h.
ANGLE_MODELS: dict[str, str] = {
    "sa": "h = exp(beta cos) sin, normalised by sum_j m_j exp(beta cos)",
    "usa": "h = exp(beta cos - s) sin / N, s = 0 or beta (usa_scale)",
    "kuramoto": "h = sin / N, O(n) via the order parameter",
}

#: integrators of the angle form: name -> description.
ANGLE_INTEGRATORS: dict[str, str] = {
    "rk4": "classical Runge-Kutta, fixed step, order 4",
    "dopri5": "adaptive Dormand-Prince 5(4), FSAL, rtol/atol control",
}

#: a row whose weights sum below this had a shift far above its true maximum
#: (possible only with masses spanning > 1e100): recomputed with the exact one.
_TINY_Z = 1e-100


# ------------------------------------------------------------------ references
def angle_velocity_reference(
    theta: ArrayLike,
    *,
    model: str = "kuramoto",
    beta: float = 0.0,
    coupling: float = 1.0,
    omega: ArrayLike | None = None,
    usa_scale: str = "n",
    masses: ArrayLike | None = None,
) -> np.ndarray:
    """Plain NumPy angular velocities (n x n matrices), the oracle of the kernels.

    Parameters
    ----------
    theta : array_like, shape (n,)
        Phases.
    model : {"sa", "usa", "kuramoto"}
        Coupling function (see the module docstring).
    beta : float
        Inverse temperature (unused by ``kuramoto``).
    coupling : float
        Coupling strength ``c``.
    omega : array_like, shape (n,), optional
        Natural frequencies (zeros when None).
    usa_scale : {"n", "n_exp_beta"}
        USA normalisation.
    masses : array_like, shape (n,), optional
        Weights (ones when None).

    Returns
    -------
    ndarray, shape (n,)
        ``dtheta_i/dt``.
    """
    th = np.asarray(theta, dtype=np.float64)
    n = th.shape[0]
    m = np.ones(n) if masses is None else np.asarray(masses, dtype=np.float64)
    w = np.zeros(n) if omega is None else np.asarray(omega, dtype=np.float64)
    D = th[None, :] - th[:, None]  # D[i, j] = theta_j - theta_i
    if model == "kuramoto":
        v = (np.sin(D) @ m) / m.sum()
    else:
        S = beta * np.cos(D) + np.log(m)[None, :]
        M = S.max(axis=1)
        W = np.exp(S - M[:, None])
        A = (W * np.sin(D)).sum(axis=1)
        if model == "sa":
            v = A / W.sum(axis=1)
        else:
            shift = beta if usa_scale == "n_exp_beta" else 0.0
            v = A * np.exp(M - shift) / m.sum()
    return w + coupling * v


# --------------------------------------------------------------------- kernels
@jit
def _row_sums(ci, si, C, S, logm, beta, shift):
    """``(Z, A) = sum_j w_j (1, sin(theta_j - theta_i))`` with
    ``w_j = exp(beta cos(theta_j - theta_i) + log m_j - shift)``; one fused,
    vectorised pass (cosines and sines of differences from C, S)."""
    Z = 0.0
    A = 0.0
    for j in range(C.shape[0]):
        cj = C[j]
        sj = S[j]
        w = exp_scalar(beta * (cj * ci + sj * si) + logm[j] - shift)
        Z += w
        A += w * (sj * ci - cj * si)
    return Z, A


@jit
def _row_max(ci, si, C, S, logm, beta):
    """Exact maximum of ``beta cos(theta_j - theta_i) + log m_j`` (rare slow path)."""
    mx = -np.inf
    for j in range(C.shape[0]):
        mx = max(mx, beta * (C[j] * ci + S[j] * si) + logm[j])
    return mx


NORMALIZED = True  # bound per specialisation


def _attention_rhs(theta, p, out, ws):
    """SA (NORMALIZED) or USA angular velocities of theta (n,) into out (n,).

    ``ws`` (float64, length >= 2 n) receives cos and sin of the phases.
    """
    omega, _m, logm, beta, coupling, usa_shift, inv_mass = p
    n = theta.shape[0]
    C = ws[0:n]
    S = ws[n:2 * n]
    lmax = -np.inf
    for j in range(n):
        lmax = max(lmax, logm[j])
    for i in prange(n):
        C[i] = np.cos(theta[i])
        S[i] = np.sin(theta[i])
    for i in prange(n):
        ci = C[i]
        si = S[i]
        shift = beta + lmax
        Z, A = _row_sums(ci, si, C, S, logm, beta, shift)
        if Z < _TINY_Z:
            shift = _row_max(ci, si, C, S, logm, beta)
            Z, A = _row_sums(ci, si, C, S, logm, beta, shift)
        if NORMALIZED:
            v = A / Z
        else:
            v = A * (np.exp(shift - usa_shift) * inv_mass)
        out[i] = omega[i] + coupling * v


def _kuramoto_rhs(theta, p, out, ws):
    """Kuramoto angular velocities, O(n): ``omega_i + c Im(z e^{-i theta_i})``.

    ``ws`` holds cos and sin of the phases (2 n) then the per-block partial
    sums of ``z`` (``2 ceil(n / BLOCK)``).
    """
    omega, m, _logm, _beta, coupling, _usa_shift, inv_mass = p
    n = theta.shape[0]
    C = ws[0:n]
    S = ws[n:2 * n]
    part = ws[2 * n:]
    nblocks = (n + BLOCK - 1) // BLOCK
    for b in prange(nblocks):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        s0 = 0.0
        s1 = 0.0
        for i in range(lo, hi):
            c = np.cos(theta[i])
            s = np.sin(theta[i])
            C[i] = c
            S[i] = s
            s0 += m[i] * c
            s1 += m[i] * s
        part[2 * b] = s0
        part[2 * b + 1] = s1
    z0, z1 = block_total(part, nblocks, coupling * inv_mass)
    for b in prange(nblocks):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        for i in range(lo, hi):
            out[i] = omega[i] + (z1 * C[i] - z0 * S[i])


_KERNELS = {
    ("sa", False): specialize(_attention_rhs, "sa_serial", NORMALIZED=True),
    ("sa", True): specialize(_attention_rhs, "sa_parallel", parallel=True, NORMALIZED=True),
    ("usa", False): specialize(_attention_rhs, "usa_serial", NORMALIZED=False),
    ("usa", True): specialize(_attention_rhs, "usa_parallel", parallel=True, NORMALIZED=False),
    ("kuramoto", False): specialize(_kuramoto_rhs, "serial"),
    ("kuramoto", True): specialize(_kuramoto_rhs, "parallel", parallel=True),
}


def _workspace(n: int) -> int:
    return 2 * n + 2 * ((n + BLOCK - 1) // BLOCK)


def _params(n: int, beta: float, coupling: float, omega: np.ndarray, usa_scale: str,
            masses: np.ndarray | None) -> tuple:
    m = np.ones(n) if masses is None else np.ascontiguousarray(masses, dtype=np.float64)
    usa_shift = float(beta) if usa_scale == "n_exp_beta" else 0.0
    return (np.ascontiguousarray(omega, dtype=np.float64), m, np.log(m), float(beta),
            float(coupling), usa_shift, 1.0 / float(m.sum()))


# ------------------------------------------------------------------ integrators
rhs = None  # bound per specialisation


def _rk4_run(theta, nsteps, h, p, ws, K):
    """Advance theta (n,) in place by nsteps RK4 steps of size h; K (5, n) scratch."""
    n = theta.shape[0]
    k1, k2, k3, k4, tt = K[0], K[1], K[2], K[3], K[4]
    c = h / 6.0
    for _ in range(nsteps):
        rhs(theta, p, k1, ws)
        for i in range(n):
            tt[i] = theta[i] + 0.5 * h * k1[i]
        rhs(tt, p, k2, ws)
        for i in range(n):
            tt[i] = theta[i] + 0.5 * h * k2[i]
        rhs(tt, p, k3, ws)
        for i in range(n):
            tt[i] = theta[i] + h * k3[i]
        rhs(tt, p, k4, ws)
        for i in range(n):
            theta[i] += c * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])




def _dopri5_run(theta, t0, t1, hs, p, ws, K, rtol, atol, max_steps, st):
    """Advance theta (n,) from t0 to exactly t1 with adaptive DOPRI5 steps.

    ``hs`` (1,) holds the proposed step, in and out (carried between save
    points); K (9, n) scratch; ``st`` (3,) int64 accumulates accepted and
    rejected steps and receives a status code.  The error of each angle is
    measured against ``atol + rtol`` (radians on the unit circle), not
    against ``|theta|``, which grows without bound in the continuous lift.
    """
    n = theta.shape[0]
    tt = K[7]
    tn = K[8]
    sc = atol + rtol
    rhs(theta, p, K[0], ws)
    t = t0
    h = hs[0]
    span = t1 - t0
    tiny = 1e-14 * max(1.0, abs(t1))
    while t1 - t > tiny:
        if st[0] + st[1] >= max_steps:
            st[2] = STATUS_MAX_STEPS
            return
        last = h >= t1 - t
        hh = t1 - t if last else h
        for s in range(1, 6):
            for i in range(n):
                acc = 0.0
                for r in range(s):
                    acc += _A[s, r] * K[r, i]
                tt[i] = theta[i] + hh * acc
            rhs(tt, p, K[s], ws)
        for i in range(n):
            acc = 0.0
            for r in range(6):
                acc += _B[r] * K[r, i]
            tn[i] = theta[i] + hh * acc
        rhs(tn, p, K[6], ws)
        tot = 0.0
        for i in range(n):
            e = 0.0
            for r in range(7):
                e += _E[r] * K[r, i]
            q = hh * e / sc
            tot += q * q
        err = np.sqrt(tot / n)
        if err <= 1.0:
            for i in range(n):
                theta[i] = tn[i]
                K[0, i] = K[6, i]  # first same as last
            t = t1 if last else t + hh
            st[0] += 1
            # a truncated last step says nothing about the step to propose next
            h = max(h, hh * step_factor(err, 5)) if last else hh * step_factor(err, 5)
        else:
            st[1] += 1
            h = hh * step_factor(err, 5)
        if not h > 1e-14 * max(span, 1e-300):
            st[2] = STATUS_STEP_UNDERFLOW
            return
    hs[0] = h


@cache
def _runner(integrator: str, model: str, parallel: bool):
    kernel = _KERNELS[(model, parallel)]
    template = _rk4_run if integrator == "rk4" else _dopri5_run
    return specialize(template, f"{model}_{'parallel' if parallel else 'serial'}", cache=True,
                      rhs=kernel)


def angle_velocity(
    theta: ArrayLike,
    *,
    model: str = "kuramoto",
    beta: float = 0.0,
    coupling: float = 1.0,
    omega: ArrayLike | None = None,
    usa_scale: str = "n",
    masses: ArrayLike | None = None,
    parallel: bool | None = None,
) -> np.ndarray:
    """Angular velocities ``dtheta_i/dt`` by the compiled kernels.

    Parameters are those of :func:`angle_velocity_reference`; ``omega`` must
    be numbers here (or None).  ``parallel`` chooses the row-parallel kernel
    (default: for n >= ``ROWS_PARALLEL_MIN_N`` when Numba has several threads).

    Returns
    -------
    ndarray, shape (n,)
    """
    th = _check_theta(theta)
    n = th.shape[0]
    _check_model(model, beta, usa_scale)
    w = resolve_frequencies(omega, n)
    par = _use_parallel(n) if parallel is None else bool(parallel)
    p = _params(n, beta, check_coupling(coupling), w, usa_scale, _check_masses(masses, n))
    out = np.empty(n)
    _KERNELS[(model, par)](th, p, out, np.empty(_workspace(n)))
    return out


# ----------------------------------------------------------------- validation
def _check_theta(theta: ArrayLike) -> np.ndarray:
    th = np.ascontiguousarray(theta, dtype=np.float64)
    if th.ndim != 1 or th.shape[0] < 1:
        raise ValueError(f"theta0 must have shape (n,) with n >= 1, got shape {th.shape}")
    if not np.all(np.isfinite(th)):
        raise ValueError("theta0 must be finite, got NaN or inf entries")
    return th.copy()


def _check_model(model: str, beta: float, usa_scale: str) -> None:
    if model not in ANGLE_MODELS:
        raise ValueError(f"model must be one of {', '.join(map(repr, ANGLE_MODELS))}, "
                         f"got {model!r}")
    if usa_scale not in USA_SCALES:
        raise ValueError(f"usa_scale must be one of {', '.join(map(repr, USA_SCALES))}, "
                         f"got {usa_scale!r}")
    # beta's range and the USA overflow bound, validated once, where the embedded form does
    SimulationConfig(n=1, d=2, beta=beta, model="usa" if model == "usa" else "sa",
                     usa_scale=usa_scale)


def _check_masses(masses: ArrayLike | None, n: int) -> np.ndarray | None:
    if masses is None:
        return None
    return SimulationConfig(n=n, d=2, beta=0.0, masses=masses).mass_array()


def _use_parallel(n: int) -> bool:
    return n >= ROWS_PARALLEL_MIN_N and numba.get_num_threads() > 1


def _speed_bound(model: str, beta: float, coupling: float, omega: np.ndarray,
                 usa_scale: str) -> float:
    """Upper bound on ``|dtheta_i/dt|``: ``max |omega| + |c|`` times the largest weight
    (weights average to at most 1 for SA and Kuramoto, ``e^{beta - s}`` for USA)."""
    rate = 1.0
    if model == "usa":
        shift = beta if usa_scale == "n_exp_beta" else 0.0
        rate = math.exp(beta - shift)
    return float(np.abs(omega).max()) + abs(coupling) * rate


# ------------------------------------------------------------------- driver
@dataclass(frozen=True)
class AngleTrajectory:
    """Saved frames of an angle-form run (returned by :func:`simulate_angles`).

    Attributes
    ----------
    times : ndarray, shape (frames,)
        Times of the saved frames (the first is 0).
    theta : ndarray, shape (frames, n)
        Continuous phases (never reduced mod 2 pi); ``wrapped`` gives them in
        [0, 2 pi).
    omega : ndarray, shape (n,)
        The natural frequencies used.
    steps : ndarray of int64, shape (frames,)
        Accepted steps since t = 0 at each frame.
    rejected : ndarray of int64, shape (frames,)
        Rejected steps since t = 0 (always 0 for ``rk4``).
    model, integrator, usa_scale : str
        As passed.
    beta, coupling : float
        As passed.
    masses : ndarray, shape (n,), optional
        Weights (None for unit masses).
    seed : int, optional
        Root seed of the natural frequencies (None when none were drawn).
    """

    times: np.ndarray
    theta: np.ndarray
    omega: np.ndarray
    steps: np.ndarray
    rejected: np.ndarray
    model: str
    integrator: str
    beta: float
    coupling: float
    usa_scale: str = "n"
    masses: np.ndarray | None = None
    seed: int | None = None

    @property
    def frames(self) -> int:
        """Number of saved frames."""
        return int(self.times.shape[0])

    @property
    def n(self) -> int:
        """Number of oscillators."""
        return int(self.theta.shape[1])

    @property
    def final(self) -> np.ndarray:
        """Last saved phases, shape (n,)."""
        return self.theta[-1]

    @property
    def wrapped(self) -> np.ndarray:
        """Phases reduced to [0, 2 pi), shape (frames, n)."""
        return np.mod(self.theta, 2.0 * math.pi)

    @property
    def positions(self) -> np.ndarray:
        """Embedded points ``(cos theta, sin theta)``, shape (frames, n, 2)."""
        return angles_to_circle(self.theta)

    def order_parameter(self) -> OrderParameter:
        """``r e^{i psi}`` at every frame (``r``, ``psi`` of shape (frames,))."""
        return order_parameter(self.theta, self.masses)

    def __repr__(self) -> str:
        return (f"AngleTrajectory(model={self.model!r}, frames={self.frames}, n={self.n}, "
                f"t_end={self.times[-1]:g})")


def simulate_angles(
    theta0: ArrayLike,
    *,
    model: str = "kuramoto",
    beta: float = 0.0,
    coupling: float = 1.0,
    omega: str | ArrayLike | None = None,
    usa_scale: str = "n",
    masses: ArrayLike | None = None,
    integrator: str = "rk4",
    dt: float = 0.01,
    T: float = 10.0,
    save_every: int = 10,
    save_times: ArrayLike | None = None,
    rtol: float = 1e-6,
    atol: float = 1e-9,
    max_steps: int = 10**9,
    seed: int | None = None,
    parallel: bool | None = None,
) -> AngleTrajectory:
    """Integrate the angle form of a circle model.

    Parameters
    ----------
    theta0 : array_like, shape (n,)
        Initial phases (radians, any branch).
    model : {"kuramoto", "sa", "usa"}
        Coupling function (see :data:`ANGLE_MODELS`).
    beta : float
        Inverse temperature (``sa``, ``usa``; unused by ``kuramoto``).
    coupling : float
        Coupling strength ``c`` (1 gives the attention dynamics).
    omega : str or array_like, shape (n,), optional
        Natural frequencies, for every model: None (zeros), ``n`` numbers,
        or a distribution ``"NAME:WIDTH[:CENTER]"`` drawn with ``seed``
        exactly as ``simulate(model="kuramoto", seed=seed)`` draws them.
    usa_scale : {"n", "n_exp_beta"}
        USA normalisation.
    masses : array_like, shape (n,), optional
        Weights ``m_j > 0``.
    integrator : {"rk4", "dopri5"}
        Fixed-step RK4 (step ``dt``) or adaptive DOPRI5 (initial step ``dt``).
    dt, T : float
        Step and final time.
    save_every : int
        Steps between frames (adaptive: frames every ``save_every * dt``).
    save_times : array_like, optional
        Explicit increasing frame times in [0, T] (overrides ``save_every``).
    rtol, atol : float
        DOPRI5 tolerances: each angle's local error is kept below about
        ``atol + rtol`` radians.
    max_steps : int
        Upper bound on the steps (accepted and rejected) of the run.
    seed : int, optional
        Root seed for a named ``omega`` distribution (fresh when None,
        recorded in the result).
    parallel : bool, optional
        Row-parallel kernels (default: for n >= 512 with several threads).

    Returns
    -------
    AngleTrajectory
        ``theta`` of shape (frames, n), continuous in time.

    Raises
    ------
    ValueError
        Invalid arguments (the message names the argument).
    IntegrationError
        Non-finite phases, or a failed adaptive integration.

    Warns
    -----
    StepSizeWarning
        ``rk4`` with ``dt`` times the speed bound above 0.5.
    """
    th = _check_theta(theta0)
    n = th.shape[0]
    _check_model(model, beta, usa_scale)
    if integrator not in ANGLE_INTEGRATORS:
        raise ValueError(f"integrator must be one of "
                         f"{', '.join(map(repr, ANGLE_INTEGRATORS))}, got {integrator!r}")
    # times, tolerances, masses and the seed are validated as in the embedded form
    timing = SimulationConfig(n=n, d=2, beta=0.0, dt=dt, T=T, save_every=save_every,
                              save_times=save_times, rtol=rtol, atol=atol,
                              max_steps=max_steps, masses=masses, seed=seed)
    c = check_coupling(coupling)
    if isinstance(omega, str) and timing.seed is None:
        timing = timing.resolved()
    w = resolve_frequencies(omega, n, seed=timing.seed)
    m = None if masses is None else timing.mass_array()
    times = timing.output_times()
    par = _use_parallel(n) if parallel is None else bool(parallel)
    p = _params(n, beta, c, w, usa_scale, m)
    run = _runner(integrator, model, par)
    ws = np.empty(_workspace(n))
    adaptive = integrator == "dopri5"
    if not adaptive:
        rate = _speed_bound(model, beta, c, w, usa_scale)
        if dt * rate > 0.5:
            warnings.warn(
                f"dt * (speed bound {rate:.3g}) = {dt * rate:.3g} > 0.5: rk4 will be "
                "inaccurate (phases move up to that many radians per step); reduce dt or "
                "use integrator='dopri5'",
                StepSizeWarning,
                stacklevel=2,
            )
    K = np.empty((9 if adaptive else 5, n))
    hs = np.array([float(dt)])
    st = np.zeros(3, dtype=np.int64)
    out = np.empty((times.shape[0], n))
    steps = np.zeros(times.shape[0], dtype=np.int64)
    rejected = np.zeros(times.shape[0], dtype=np.int64)
    out[0] = th
    for k in range(1, times.shape[0]):
        t0, t1 = float(times[k - 1]), float(times[k])
        if adaptive:
            run(th, t0, t1, hs, p, ws, K, timing.rtol, timing.atol, timing.max_steps, st)
            if st[2] != STATUS_OK:
                why = "max_steps reached" if st[2] == STATUS_MAX_STEPS else "step size underflow"
                raise IntegrationError(f"adaptive integration failed between t={t0:g} and "
                                       f"t={t1:g}: {why}")
        else:
            # equal steps that land exactly on the save time
            nsteps = max(1, math.ceil((t1 - t0) / timing.dt - 1e-9))
            if st[0] + nsteps > timing.max_steps:
                raise IntegrationError(
                    f"max_steps={timing.max_steps} reached at t={t0:g}; raise max_steps")
            run(th, nsteps, (t1 - t0) / nsteps, p, ws, K)
            st[0] += nsteps
        if not np.all(np.isfinite(th)):
            raise IntegrationError(f"non-finite phases between t={t0:g} and t={t1:g}; "
                                   "reduce dt")
        out[k] = th
        steps[k] = st[0]
        rejected[k] = st[1]
    return AngleTrajectory(
        times=times, theta=out, omega=w, steps=steps, rejected=rejected, model=model,
        integrator=integrator, beta=float(beta), coupling=c, usa_scale=usa_scale, masses=m,
        seed=timing.seed if isinstance(omega, str) else seed,
    )
