"""Solve the mean-field PDE on S^{d-1}: the axisymmetric solver in any ``d`` or the one
on S^2, frame by frame, with the circle's rules (:mod:`particles.meanfield.solver`):
the same frames (:class:`~particles.meanfield.DensityFrame`), resume points
(:class:`~particles.meanfield.SolverState`), positivity policy and errors.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from particles.meanfield.axisymmetric import AxisymmetricSpace
from particles.meanfield.lawson import first_step, lawson_frames
from particles.meanfield.solver import DensityFrame, SolverState, check_positivity
from particles.meanfield.sphere import SphereSpace
from particles.meanfield.sphere_config import SphereFieldConfig


def make_space(config: SphereFieldConfig) -> AxisymmetricSpace | SphereSpace:
    """The discretisation of ``config``: an
    :class:`~particles.meanfield.axisymmetric.AxisymmetricSpace` or a
    :class:`~particles.meanfield.sphere.SphereSpace`."""
    return AxisymmetricSpace(config) if config.axisymmetric else SphereSpace(config)


def _check_state(config: SphereFieldConfig, state: SolverState, shape) -> SolverState:
    rho = np.array(state.rho, dtype=np.float64)
    if rho.shape != tuple(shape):
        raise ValueError(f"state has grid shape {rho.shape}, the config {tuple(shape)}")
    t, h = float(state.t), float(state.dt)
    if not 0.0 <= t <= float(config.T) or not h > 0.0:
        raise ValueError(f"state (t={t!r}, dt={h!r}) does not fit T = {float(config.T)!r}")
    return SolverState(t=t, rho=rho, dt=h, steps=int(state.steps), rejected=int(state.rejected))


def _check_start(space, rho0) -> np.ndarray:
    rho = np.array(rho0, dtype=np.float64)
    if rho.shape != tuple(space.grid_shape) or not np.all(np.isfinite(rho)):
        raise ValueError(f"rho0 must be finite of the grid's shape {tuple(space.grid_shape)}, "
                         f"got {rho.shape}")
    return rho


def solve_sphere_frames(config: SphereFieldConfig, *, state: SolverState | None = None,
                        space=None, rho0: np.ndarray | None = None) -> Iterator[DensityFrame]:
    """The frames of a solve on S^{d-1}, each yielded as soon as it is computed.

    Parameters
    ----------
    config : SphereFieldConfig
    state : SolverState, optional
        Resume from this state (a frame's ``state``): the continuation is bit for
        bit the uninterrupted solve.
    space : optional
        A prebuilt :func:`make_space` of ``config``.
    rho0 : ndarray, optional
        The initial density on the grid (the space's ``grid_shape``) instead of
        ``config.init``'s (which ``init="particles"`` needs: the session reads the
        file); ignored when resuming.

    Yields
    ------
    DensityFrame
        At every save time after ``state.t`` (t = 0 included unless resuming);
        ``rho`` of the grid's shape, ``mass = int rho dsigma``.

    Raises
    ------
    IntegrationError
        Non-finite density, a vanishing step, ``max_steps`` exceeded, or a loss of
        positivity with ``positivity="raise"``.
    ValueError
        A ``state`` or ``rho0`` that does not fit the config.
    """
    space = make_space(config) if space is None else space
    T = float(config.T)
    if state is None:
        rho = space.initial(config) if rho0 is None else _check_start(space, rho0)
        h = float(config.dt0) if config.dt0 is not None else first_step(space, rho, T)
        start = SolverState(t=0.0, rho=rho, dt=h)
    else:
        start = _check_state(config, state, space.grid_shape)
    warned = False
    for s in lawson_frames(space, config.frame_times(), start, rtol=float(config.rtol),
                           atol=float(config.atol), max_steps=int(config.max_steps),
                           resumed=state is not None):
        rho = s.rho
        fr = DensityFrame(time=s.t, rho=rho, mass=space.mass(rho), energy=space.energy(rho),
                          dissipation=space.dissipation(rho), min_density=float(rho.min()),
                          state=SolverState(t=s.t, rho=rho.copy(), dt=s.dt, steps=s.steps,
                                            rejected=s.rejected))
        warned = check_positivity(config.positivity, fr, warned, "lmax", stacklevel=3)
        yield fr
