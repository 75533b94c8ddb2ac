"""Self-attention models as problems: SA and USA on the tokens themselves."""

from __future__ import annotations

import math

import numpy as np

from particles.errors import invalid
from particles.fields import KERNELS, CompiledField, attention_field, check_usa_range, speed_bound
from particles.fields.weights import QK_WEIGHTS, V_WEIGHTS
from particles.models.problem import Hints, Problem, sphere_problem
from particles.protocols import RunSpec

__all__ = ["MAX_STEP_MOVE", "attention_rules", "sa_field", "sa_problem", "usa_field",
           "usa_problem", "usa_rules"]

#: the largest distance a USA step may move a token: its square is the largest float64.
MAX_STEP_MOVE = float(np.sqrt(np.finfo(np.float64).max))

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


# ------------------------------------------------------------------ rules
def attention_rules(spec: RunSpec) -> None:
    """SA and USA: Kuramoto's ``coupling`` and ``omega`` keep their defaults
    (silently ignoring them would run a different model than the one asked for)."""
    if spec.coupling != 1.0:
        raise invalid("coupling", f"1.0 (the default) unless model='kuramoto' "
                      f"(model={spec.model!r} has no coupling parameter)", spec.coupling)
    if spec.omega is not None:
        got = (spec.omega if isinstance(spec.omega, str) or len(spec.omega) <= 8
               else f"{len(spec.omega)} numbers")
        raise invalid("omega", f"None unless model='kuramoto' "
                      f"(model={spec.model!r} has no natural frequencies)", got)


def usa_rules(spec: RunSpec) -> None:
    """USA: :func:`attention_rules`, and fixed weights whose largest value is
    finite (:func:`particles.fields.check_usa_range`) and whose first step
    stays finite (:func:`check_usa_step`); drawn weights are checked where
    they are drawn."""
    attention_rules(spec)
    qk = QK_WEIGHTS[spec.weights]
    if not qk.random:
        Q, K = qk.draw(None, spec.d, spec.matrix("Q"), spec.matrix("K"))
        check_usa_range(spec, Q, K)
        check_usa_step(spec, Q, K)


def check_usa_step(spec: RunSpec, Q: np.ndarray, K: np.ndarray) -> None:
    """Refuse a USA run whose first step cannot stay finite: ``dt`` times the
    speed bound (weights up to e^c, :func:`particles.fields.speed_bound`)
    beyond :data:`MAX_STEP_MOVE`, whose square (the norm that takes a step
    back to the sphere, an adaptive error norm) overflows float64.  A fixed
    step then gives non-finite positions at once; an adaptive one must
    shrink below 1e-154 dt, past its floor (1e-14 of a save interval).
    With ``usa_scale='n_exp_beta'`` (c = beta) no beta reaches it."""
    values = V_WEIGHTS[spec.value_weights]
    if spec.model != "usa" or values.random:
        return  # drawn weights: their range is checked where they are drawn
    V = values.draw(None, spec.d, Q, K, spec.matrix("V"))
    move = spec.dt * spec.heads * speed_bound(spec, Q, K, V)
    if move > MAX_STEP_MOVE:
        kernel = KERNELS[spec.kernel]
        raise invalid("beta", f"small enough that a step moves a token a distance whose "
                      f"square is finite in float64 (dt x speed bound = {move:.3g} > "
                      f"{MAX_STEP_MOVE:.3g}, kernel {kernel.name!r}); "
                      f"{kernel.overflow_hint(spec.usa_scale)} or a smaller dt "
                      f"(dt={spec.dt:g})", spec.beta)
