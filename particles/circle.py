"""Angle-form solvers on the circle: theta in, theta out.

On S^1 every model of DESIGN.md section 1 is an ODE for the angles
``theta_i``: the generalized Kuramoto model ``dtheta_i/dt = omega_i + c (1/N)
sum_j m_j h_i(theta_j - theta_i)`` with the coupling functions of the
``kuramoto``, ``usa`` and ``sa`` models (written out in
:mod:`particles.fields.angle`, where the drifts live).

With ``omega = 0`` and ``c = 1`` these are exactly the embedded d = 2
dynamics of ``simulate(..., d=2, model=...)`` for ``x_i = (cos theta_i, sin
theta_i)``; at ``beta = 0`` all three are the Kuramoto model.

This module is thin: the angle form is a :class:`~particles.models.Problem`
in a *flat space*, integrated by the engine's one save-point loop
(:func:`particles.engine.integrate`):
fixed-step ``rk4`` and adaptive ``dopri5`` (Dormand-Prince 5(4), FSAL, the
standard step-size controller, each angle's error against ``atol + rtol``)
act on the phases, shaped (n, 1), with no projection.  The phases are kept
continuous (no reduction mod 2 pi), so ``theta[-1] - theta[0]`` counts whole
turns.

Public API: :func:`simulate_angles` -> :class:`AngleTrajectory`,
:func:`angle_velocity` (compiled) and :func:`angle_velocity_reference`
(NumPy).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import ArrayLike

from particles.config import USA_SCALES, SimulationConfig, check_coupling
from particles.engine import ROWS_PARALLEL_MIN_N, integrate
from particles.fields.angle import (
    ANGLE_MODELS,
    angle_drift,
    angle_field,
    angle_params,
    angle_velocity_reference,
    angle_workspace,
)
from particles.fields.kuramoto import resolve_frequencies
from particles.integrators import INTEGRATORS
from particles.models import Hints, Problem
from particles.observables.order import OrderParameter, order_parameter
from particles.plan import Controller, Saves
from particles.sphere import angles_to_circle
from particles.trajectory import Trajectory

__all__ = [
    "ANGLE_INTEGRATORS",
    "ANGLE_MODELS",
    "AngleTrajectory",
    "angle_velocity",
    "angle_velocity_reference",
    "simulate_angles",
]

#: integrators of the angle form: the deterministic registry entries that step the
#: flat space (noisy phases run through :func:`particles.simulate` with ``noise``).
ANGLE_INTEGRATORS: dict[str, str] = {
    name: entry.description for name, entry in INTEGRATORS.items()
    if "flat" in entry.spaces and not entry.stochastic
}


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
    p = angle_params(n, beta, check_coupling(coupling), w, usa_scale, _check_masses(masses, n))
    out = np.empty((n, 1))
    angle_drift(model, par)(th.reshape(n, 1), p, out, np.empty(angle_workspace(n)))
    return out[:, 0]


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

    @classmethod
    def from_trajectory(cls, trajectory: Trajectory, *, omega: np.ndarray, model: str,
                        integrator: str, beta: float, coupling: float, usa_scale: str = "n",
                        masses: np.ndarray | None = None,
                        seed: int | None = None) -> AngleTrajectory:
        """The angle view of an engine :class:`~particles.trajectory.Trajectory` in the
        flat space (positions of shape (frames, n, 1); observables
        ``accepted_steps`` and ``rejected_steps`` when adaptive)."""
        obs = trajectory.observables
        steps = obs["accepted_steps"] if "accepted_steps" in obs else trajectory.steps
        rejected = obs.get("rejected_steps", np.zeros(trajectory.frames))
        return cls(times=trajectory.times, theta=trajectory.positions[..., 0], omega=omega,
                   steps=np.asarray(steps, dtype=np.int64),
                   rejected=np.asarray(rejected, dtype=np.int64), model=model,
                   integrator=integrator, beta=beta, coupling=coupling, usa_scale=usa_scale,
                   masses=masses, seed=seed)

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
    # the phases are one flat system of n rows with one coordinate each
    problem = Problem(state0=th.reshape(1, n, 1),
                      space="flat", field=angle_field(model, n, beta=beta, coupling=c, omega=w,
                                                     usa_scale=usa_scale, masses=m),
                      hints=Hints(state="phases", moving="phases", remedies=False))
    par = _use_parallel(n) if parallel is None else bool(parallel)
    controller = dataclasses.replace(Controller.of(timing), carry_step=True)
    frames = list(integrate(problem, integrator, Saves(timing.output_times()), controller,
                            layout="rows" if par else "serial", stacklevel=2))
    # the engine's result (steps and observables as in ``simulate``), seen as angles
    obs = {k: np.array([f.observables[k][0] for f in frames]) for k in frames[0].observables}
    trajectory = Trajectory(times=np.array([f.time for f in frames]),
                            steps=np.array([f.step for f in frames], dtype=np.int64),
                            positions=np.stack([f.positions[0] for f in frames]),
                            observables=obs)
    return AngleTrajectory.from_trajectory(
        trajectory, omega=w, model=model, integrator=integrator, beta=float(beta),
        coupling=c, usa_scale=usa_scale, masses=m,
        seed=timing.seed if isinstance(omega, str) else seed,
    )
