"""Self-attention models as problems: SA and USA on the tokens themselves."""

from __future__ import annotations

import math

import numpy as np

from particles.fields import KERNELS, CompiledField, attention_field
from particles.models.problem import Hints, Problem, sphere_problem
from particles.protocols import RunSpec

__all__ = ["sa_field", "sa_problem", "usa_field", "usa_problem"]

#: the USA time change in both spellings (option and argument).
_TIME_CHANGE = "--usa-scale n_exp_beta (usa_scale='n_exp_beta', a time change)"


def sa_field(config: RunSpec) -> CompiledField:
    """SA: softmax (row-stochastic) weights."""
    return attention_field(config, normalized=True)


def usa_field(config: RunSpec) -> CompiledField:
    """USA: weights divided by the total mass."""
    return attention_field(config, normalized=False)


def sa_problem(config: RunSpec, positions: np.ndarray, *,
               keys: np.ndarray | None = None) -> Problem:
    """The SA problem: tokens on the sphere."""
    return sphere_problem(config, positions, sa_field(config), keys=keys)


def usa_hints(config: RunSpec) -> Hints:
    """USA speeds grow like ``e^beta``: step-size warnings and failures name the
    time change ``usa_scale='n_exp_beta'`` (where the kernel takes it)."""
    fix = why = ""
    if config.usa_scale == "n" and KERNELS[config.kernel].time_change:
        fix = _TIME_CHANGE
        why = f"the USA weights reach e^beta = {math.exp(min(config.beta, 700.0)):.3g}"
    return Hints(step=", use usa_scale='n_exp_beta' (--usa-scale n_exp_beta)", fix=fix,
                 why=why)


def usa_problem(config: RunSpec, positions: np.ndarray, *,
                keys: np.ndarray | None = None) -> Problem:
    """The USA problem: tokens on the sphere, with the time change as a remedy."""
    return sphere_problem(config, positions, usa_field(config), keys=keys,
                          hints=usa_hints(config))
