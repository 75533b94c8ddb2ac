"""Models: a run's configuration and positions -> a :class:`Problem` for the engine.

:data:`MODELS` maps ``model=`` to a :class:`Model`: its field (the drift on
the tokens, :mod:`particles.fields`) and its problem builder
``build(config, positions, *, keys=None) -> Problem`` (state, space, field,
noise, map to positions; :mod:`particles.models.problem`).  SA and USA
integrate the tokens themselves; Kuramoto integrates the phases under the
integrators that gain from it (:mod:`particles.models.kuramoto`).

Layer 3, beside the configuration (which validates ``model=`` against this
registry): builders read a :class:`~particles.protocols.RunSpec`.  Adding a
model is one module with its field and problem plus one line in
:data:`MODELS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from particles.fields import CompiledField
from particles.fields import kuramoto as kuramoto_field
from particles.models import kuramoto
from particles.models.attention import (
    attention_rules,
    sa_field,
    sa_problem,
    usa_field,
    usa_problem,
    usa_rules,
)
from particles.models.problem import Hints, Noise, Problem, run_noise, sphere_problem
from particles.protocols import RunSpec

__all__ = ["MODELS", "Hints", "Model", "Noise", "Problem", "build_field", "build_problem",
           "run_noise", "sphere_problem"]


@dataclass(frozen=True)
class Model:
    """A registered model.

    Attributes
    ----------
    name, description : str
    field : callable
        ``field(config) -> CompiledField``: the drift on the tokens.
    problem : callable
        ``problem(config, positions, *, keys=None) -> Problem``.
    label : str
        Display name (``"SA"``; legends, titles, tables).
    parameters : tuple of str
        The configuration fields only this model reads (Kuramoto's
        ``coupling`` and ``omega``, USA's ``usa_scale``), for titles and
        summaries.
    attention : bool
        Whether the model attends: it has a kernel and Q, K, V (Kuramoto does not).
    pairwise : bool
        Whether one drift evaluation visits every pair of tokens, O(n^2) (SA,
        USA), or every token a fixed number of times, O(n) (Kuramoto, whose
        sine coupling collapses to the order parameter): what a run's cost
        counts before any field is built (:mod:`particles.runs.estimate`).
        The same as its field's :attr:`~particles.fields.CompiledField.pairwise`.
    rules : callable, optional
        ``rules(spec)``: raises :class:`~particles.errors.ConfigError` when a
        run cannot use this model (see :meth:`check`).
    """

    name: str
    description: str
    field: Callable[[RunSpec], CompiledField]
    problem: Callable[..., Problem]
    label: str = ""
    parameters: tuple[str, ...] = ()
    attention: bool = True
    pairwise: bool = True
    rules: Callable[[RunSpec], None] | None = None

    def check(self, spec: RunSpec) -> None:
        """Raise :class:`~particles.errors.ConfigError` (one line, ``.field`` the
        argument) when ``spec`` cannot run this model."""
        if self.rules is not None:
            self.rules(spec)

    def build(self, config: RunSpec, positions: np.ndarray, *,
              keys: np.ndarray | None = None) -> Problem:
        """The :class:`Problem` of a validated run from the positions it starts at.

        Parameters
        ----------
        config : RunSpec
            The run (a resolved :class:`~particles.config.SimulationConfig`).
        positions : ndarray, shape (batch, n, d) or (n, d)
            Tokens at its first save point (the initial condition, or a stored
            frame to resume from: the problem continues it bit for bit).
        keys : ndarray of uint64, shape (batch, 2), optional
            Noise keys of the systems (stochastic integrators; default from the seed).
        """
        return self.problem(config, positions, keys=keys)

    def __str__(self) -> str:
        return self.description


#: name -> model; the single source of truth for ``model=`` (API, CLI, docs).
MODELS: dict[str, Model] = {
    m.name: m
    for m in (
        Model("sa", "self-attention, softmax (row-stochastic) weights", sa_field, sa_problem,
              label="SA", rules=attention_rules),
        Model("usa", "unnormalized self-attention, weights divided by n", usa_field,
              usa_problem, label="USA", parameters=("usa_scale",), rules=usa_rules),
        Model("kuramoto", "Kuramoto oscillators on the circle (d = 2), O(n)",
              kuramoto_field.build, kuramoto.problem, label="Kuramoto",
              parameters=("coupling", "omega"), attention=False, pairwise=False,
              rules=kuramoto.rules),
    )
}


def build_field(config: RunSpec) -> CompiledField:
    """The compiled field (drift on the tokens) of a validated configuration."""
    return MODELS[config.model].field(config)


def build_problem(config: RunSpec, positions: np.ndarray, *,
                  keys: np.ndarray | None = None) -> Problem:
    """``MODELS[config.model].build(config, positions, keys=keys)``."""
    return MODELS[config.model].build(config, positions, keys=keys)
