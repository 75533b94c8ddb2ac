"""The save-point choice of an integrator with phases (``auto``,
:mod:`particles.integrators.auto`): whether the run goes on with the next one."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from particles.integrators import Integrator, auto
from particles.models import Problem
from particles.trajectory import Switch


class Phases:
    """What an integrator with phases needs between frames: the step counts at
    the previous frame and the drift to estimate the spectral radius with.

    Parameters
    ----------
    entry : Integrator
        The entry with phases (``auto``).
    problem : Problem
        The problem integrated (its field, space and layers).
    t : float
        Time of the frame the integration starts from.
    accepted : ndarray, shape (batch,)
        Accepted steps up to that frame.
    """

    def __init__(self, entry: Integrator, problem: Problem, t: float,
                 accepted: np.ndarray) -> None:
        self.entry, self.problem = entry, problem
        self.t, self.accepted = t, np.array(accepted, dtype=np.int64)

    @property
    def first(self) -> str:
        """The integrator of the first phase."""
        return self.entry.phases[0]

    def params(self, t: float) -> tuple:
        """The field's parameters on the interval starting at ``t`` (its layer's)."""
        field = self.problem.field
        if field.layer_time is None:
            return field.params
        # the layer of layer_segments: a save point on a layer boundary starts the next
        return field.layer_params(math.floor(t / field.layer_time + 1e-9))

    def radius(self, state: np.ndarray, t: float) -> Callable[[int], float]:
        """``rho(b)``: the spectral radius estimate of system ``b`` of ``state`` at ``t``."""
        field, p = self.problem.field, self.params(t)
        ws = np.empty(field.workspace(1))
        sphere = self.problem.space == "sphere"

        def rho(b: int) -> float:
            pb = p if field.select is None else field.select(p, b)
            return auto.spectral_radius(field.serial, state[b], pb, ws, sphere=sphere)

        return rho

    def at(self, index: int, t: float, state: np.ndarray, stats: np.ndarray
           ) -> Switch | None:
        """The switch to the next phase after frame ``index`` at time ``t``, or None.

        Parameters
        ----------
        index : int
        t : float
        state : ndarray, shape (batch, n, k)
            The state at that frame (as a run resumed there derives it).
        stats : ndarray of int64, shape (batch, 3)
            The adaptive counters there.
        """
        now = stats[:, 0].copy()
        steps, h = auto.mean_steps(self.t, t, self.accepted, now)
        self.t, self.accepted = t, now
        evidence = auto.stiff(steps, h, self.radius(state, t))
        if evidence is None:
            return None
        return Switch(index, t, self.first, self.entry.phases[1], evidence)
