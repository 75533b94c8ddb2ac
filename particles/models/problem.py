"""The contract between the models and the engine: a :class:`Problem`.

A model turns a run (its configuration and the positions it starts from)
into a Problem: the state the integrator advances, the space it lives in, the
field that drives it, the noise, and the map from the state back to token
positions, in the spirit of diffrax's term / solver / save-point split
(``particles.engine.integrate`` is the solver and the save points).  The
engine asks nothing of the model beyond these: it does not know models by
name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from particles.fields.base import CompiledField
from particles.integrators import INTEGRATORS, SPACES
from particles.protocols import RunSpec
from particles.seeds import noise_keys
from particles.trajectory import Frame

__all__ = ["Hints", "Noise", "Problem", "run_noise", "sphere_problem", "token_positions"]


@dataclass(frozen=True)
class Noise:
    """The noise of a stochastic run: amplitude and counter-based noise state.

    Attributes
    ----------
    sigma : float
        Amplitude, ``>= 0``: the stochastic steppers read it from the last
        entry of their parameter tuple (the engine appends it).
    keys : ndarray of uint64, shape (batch, 2)
        One noise key per system (:func:`particles.seeds.noise_key`): with the
        global step counter they address every normal, so the bits depend
        neither on threads nor on the batch split, and a resumed run continues
        the same Brownian path.
    """

    sigma: float
    keys: np.ndarray


@dataclass(frozen=True)
class Hints:
    """The words a problem lends the engine's warnings and errors.

    Attributes
    ----------
    state : str
        What the state holds (``"positions"``, ``"phases"``), for errors.
    moving : str
        What moves (``"tokens"``, ``"phases"``), for step-size warnings.
    step : str
        Appended to "reduce dt" in a step-size warning (another normalisation).
    fix, why : str
        The model's own remedy for a failed integration (both spellings, e.g.
        the USA time change), and why it helps an adaptive run.
    remedies : bool
        Whether failed integrations name the run's remedies (the engine's
        list: a smaller dt, ``fix``, dopri5); without them a non-finite state
        says "reduce dt".
    """

    state: str = "positions"
    moving: str = "tokens"
    step: str = ""
    fix: str = ""
    why: str = ""
    remedies: bool = True


def _same(state: np.ndarray) -> np.ndarray:
    return state


@dataclass(frozen=True)
class Problem:
    """What the engine integrates.

    Attributes
    ----------
    state0 : ndarray, shape (batch, n, k)
        State at the first save point (the engine advances a copy).
    space : {"sphere", "flat"}
        Where the state lives (:data:`particles.integrators.SPACES`): rows on
        the unit sphere, or plain coordinates (phases).
    field : CompiledField
        The drift on the state: parameters, per-system selection, layers,
        speed bounds and BLAS use.
    noise : Noise, optional
        The noise (stochastic integrators need one; None: deterministic).
    to_positions : callable
        ``to_positions(state) -> X``, the token positions (batch, n, d) of a
        state (the state itself on the sphere; ``(cos, sin)`` of phases; a
        later model maps k groups to n tokens).  Observers and frames see X.
    anchor : callable, optional
        ``anchor(X, state)``: re-derive the state in place from the positions
        of a save point, so that a run resumed from a stored frame continues
        bit for bit (phases from their points); None: the state is kept.
    positions0 : ndarray, shape (batch, n, d), optional
        The positions at the first save point as given (recorded as they are,
        not recomputed from ``state0``); None: ``to_positions(state0)``.
    hints : Hints
    handover : callable, optional
        ``handover(frame) -> Problem | None`` at every save point after the
        first: a smaller problem that continues the run from that frame
        (collapsed groups, :func:`particles.models.collapse.problem`), or None
        to go on with this one.  The engine knows no model transformation.
    """

    state0: np.ndarray
    space: str
    field: CompiledField
    noise: Noise | None = None
    to_positions: Callable[[np.ndarray], np.ndarray] = _same
    anchor: Callable[[np.ndarray, np.ndarray], None] | None = None
    positions0: np.ndarray | None = None
    hints: Hints = field(default_factory=Hints)
    handover: Callable[[Frame], Problem | None] | None = None

    def __post_init__(self) -> None:
        if self.space not in SPACES:
            raise ValueError(f"space must be one of {SPACES}, got {self.space!r}")
        if np.ndim(self.state0) != 3:
            raise ValueError(f"state0 must have shape (batch, n, k), got {np.shape(self.state0)}")

    @property
    def batch(self) -> int:
        """Number of systems."""
        return int(self.state0.shape[0])


def token_positions(config: RunSpec, positions: np.ndarray,
                    field: CompiledField) -> np.ndarray:
    """The run's positions as a fresh C-contiguous float64 array (batch, n, d).

    ``positions`` of shape (batch, n, d) keeps its batch when the run sets
    none and its systems share the field's parameters (a sweep task runs its
    systems as one ensemble of a one-system configuration); otherwise it is
    shaped to ``(config.batch or 1, n, d)``.
    """
    X = np.array(positions, dtype=np.float64, order="C", copy=True)
    if config.batch is None and X.ndim == 3 and field.select is None:
        return X.reshape(X.shape[0], config.n, config.d)
    return X.reshape(config.batch or 1, config.n, config.d)


def run_noise(config: RunSpec, batch: int, keys: np.ndarray | None = None) -> Noise | None:
    """The noise of a run whose integrator is a stochastic stepper (None otherwise).

    Parameters
    ----------
    config : RunSpec
        Its ``noise`` (sigma), ``integrator`` and ``seed``.
    batch : int
        Number of systems.
    keys : ndarray of uint64, shape (batch, 2), optional
        Noise keys of the systems (default :func:`~particles.seeds.noise_keys`
        of the seed, system ``b`` keyed by its index; a sweep gives each
        system its own, so its path does not depend on the task it runs in).
    """
    if not INTEGRATORS[config.integrator].stochastic:
        return None
    if keys is None:
        keys = noise_keys(config.seed, batch)
    return Noise(float(config.noise), np.ascontiguousarray(keys, dtype=np.uint64)
                 .reshape(batch, 2))


def sphere_problem(config: RunSpec, positions: np.ndarray, field: CompiledField, *,
                   keys: np.ndarray | None = None, hints: Hints | None = None) -> Problem:
    """The problem of a field on the tokens themselves: the state is the positions.

    Parameters
    ----------
    config : RunSpec
    positions : ndarray, shape (batch, n, d) or (n, d)
        Tokens at the first save point (see :func:`token_positions`).
    field : CompiledField
    keys : ndarray of uint64, shape (batch, 2), optional
        See :func:`run_noise`.
    hints : Hints, optional
    """
    X = token_positions(config, positions, field)
    return Problem(state0=X, space="sphere", field=field, noise=run_noise(config, X.shape[0], keys),
                   hints=hints or Hints())
