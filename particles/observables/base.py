"""The observer contract: an :class:`Observer` and the :class:`Context` it computes in.

Kept apart from the registry (:mod:`particles.observables`) so that observer
modules can name the contract without importing the registry that lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from particles.protocols import RunSpec


@dataclass(frozen=True)
class Context:
    """What an observer computes with, besides the positions: made once per run.

    Attributes
    ----------
    masses : ndarray, shape (n,)
        Token masses.
    beta : float
        Inverse temperature of the energies.
    nthreads : int
        Threads available (the compiled passes split large systems into a
        fixed number of chunks whatever it is, so their bits do not depend on it).
    spec : RunSpec, optional
        The run (its configuration), for observers that read more of it.
    settings : mapping of str to object
        The chosen observers' own settings, by name (:attr:`Observer.settings`,
        e.g. ``deltas`` of ``close_pairs``), and what their ``setup`` derived
        from the run (``energy``: the run's
        :class:`~particles.observables.energy.EnergyDefinition`).
    """

    masses: np.ndarray
    beta: float = 0.0
    nthreads: int = 1
    spec: RunSpec | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Observer:
    """A registered observer, evaluated at every save point.

    Attributes
    ----------
    name, description : str
    cost : str
        Cost class of one evaluation per system: ``"O(n)"`` or ``"O(n^2)"``.
    datasets : tuple of str
        Names of the values it produces (one per system and frame, with more
        axes for some: ``pair_counts`` has one per threshold), in storage order.
    compute : callable
        ``compute(X, ctx) -> {name: array with leading axis batch}`` for
        ``X`` of shape (batch, n, d) and a :class:`Context`; at least
        :attr:`datasets`.  Observers that share one pass share their compute,
        which returns the datasets of every one whose settings ``ctx`` holds
        (one evaluation serves all of them, see :func:`particles.observables.observe`).
    settings : tuple of str
        The settings it needs in ``ctx.settings`` (e.g. ``("deltas",)``).
    setup : callable, optional
        ``setup(spec) -> settings``: what it derives from the run once, before
        the first frame (the energy definition of the kernel that ran).
    per_run : bool
        Whether a run's configuration can choose it (``observables=``): the
        sweep's observers take settings and give integer counts that a
        trajectory file has no place for.
    rules : callable, optional
        ``rules(spec)``: raises :class:`~particles.errors.ConfigError` when a
        run cannot record it (see :meth:`check`).
    """

    name: str
    description: str
    cost: str
    datasets: tuple[str, ...]
    compute: Callable[[np.ndarray, Context], dict[str, np.ndarray]]
    settings: tuple[str, ...] = ()
    setup: Callable[[RunSpec], dict[str, Any]] | None = None
    per_run: bool = True
    rules: Callable[[RunSpec], None] | None = None

    def check(self, spec: RunSpec) -> None:
        """Raise :class:`~particles.errors.ConfigError` (field ``observables``)
        when ``spec`` cannot record this observer."""
        if self.rules is not None:
            self.rules(spec)

    def __str__(self) -> str:
        return self.description
