"""Titles and axis labels that say what ran, built from a configuration.

:func:`run_title` is the one place a figure's title is made from a
:class:`~particles.config.SimulationConfig`: model, kernel and its parameter,
``V`` when not the identity (``-I``: repulsive), ``Q, K`` when given,
``usa_scale``, random weights, heads, layers, Sinkhorn, token masses,
Kuramoto's coupling and frequencies, the ensemble member drawn, and the
seed when it is short (a 39-digit entropy seed is "seed: see file").
:func:`time_label` names the time axis (``e^β t`` for the rescaled USA).
"""

from __future__ import annotations

import textwrap
from typing import Any

from particles.analysis.comparison import model_label
from particles.display import value_text
from particles.fields.kernels import KERNELS, USA_SCALES
from particles.models import MODELS

__all__ = ["SHORT_SEED_DIGITS", "kernel_text", "particle_run_text", "run_title", "seed_text",
           "time_label", "trajectory_title"]

#: seeds with more digits are not written in titles ("seed: see file").
SHORT_SEED_DIGITS = 8

_SYMBOLS = {"beta": "β", "tau": "τ", "gamma": "\u03b3"}


def kernel_text(config: Any) -> str:
    """``"edp kernel, β=9"``, ``"rbf kernel, τ=2"``: the kernel and its parameter."""
    from particles.config import KERNEL_PARAMETERS

    param = KERNEL_PARAMETERS[config.kernel]
    value = getattr(config, param)
    return f"{config.kernel} kernel, {_SYMBOLS.get(param, param)}={value_text(value)}"


def _matrix_text(name: str, value: Any) -> str | None:
    if isinstance(value, str):
        if value == "identity":
            return None
        if value == "minus_identity":
            return f"{name}=-I" + (" (repulsive)" if name == "V" else "")
        return f"{name}={value}"
    return f"{name} given"


def seed_text(seed: Any, *, full: bool = False) -> str | None:
    """``"seed 7"``, or ``"seed: see file"`` for a long entropy seed (None: no seed).

    ``full``: always the whole seed (a figure that no data file accompanies).
    """
    if seed is None:
        return None
    s = str(seed)
    return f"seed {s}" if full or len(s) <= SHORT_SEED_DIGITS else "seed: see file"


def particle_run_text(run: Any) -> str:
    """``"particles usa, n=64, β=4, noise 0.1 (D = 0.005), seed 0"``: the particle side of a
    figure against a density (``run``: a :class:`~particles.config.SimulationConfig` or None)."""
    if run is None:
        return "particles"
    what = f"particles {run.model}, n={run.n}, β={value_text(run.beta)}"
    if run.model == "usa" and run.usa_scale != "n":
        what += f", usa_scale {run.usa_scale}"
    if getattr(run, "noise", 0.0):
        what += f", noise {value_text(run.noise)} (D = {run.noise ** 2 / 2:.3g})"
    # each side names its own seed: a run drawn with another seed than the field's
    seed = seed_text(run.seed)
    if seed:
        what += f", {seed}"
    return what


def run_title(
    config: Any,
    *,
    system: int | None = None,
    batch: int | None = None,
    width: int = 80,
    seed: bool = True,
) -> str:
    """A title naming what ran.

    Parameters
    ----------
    config : SimulationConfig
        The run's configuration.
    system : int, optional
        The ensemble member drawn (``"system 3 of 256"``); None for a figure
        of the whole ensemble (``"ensemble of 256"``).
    batch : int, optional
        Ensemble size (default ``config.batch``).
    width : int
        Lines are wrapped at this many characters.
    seed : bool
        Name the seed (when it has at most :data:`SHORT_SEED_DIGITS` digits).

    Returns
    -------
    str
        One or more lines, e.g.
        ``"SA, edp kernel, β=9, n=32, d=3, V=-I (repulsive), system 3 of 8, seed 7"``.
    """
    cfg = config
    model = MODELS[cfg.model]
    parts = [model_label(cfg.model), *_model_parts(cfg, model)]
    if model.attention:
        parts.append(kernel_text(cfg))
        if not KERNELS[cfg.kernel].time_change and cfg.beta:
            parts.append(f"β={value_text(cfg.beta)} (energy)")
    parts.append(f"n={cfg.n}, d={cfg.d}")
    if model.attention:
        parts += _attention_parts(cfg)
    if cfg.masses is not None:
        parts.append("weighted tokens")
    parts += _member_parts(cfg, system, batch, seed)
    return "\n".join(textwrap.wrap(", ".join(parts), width=width, break_long_words=False))


def _model_parts(cfg: Any, model: Any) -> list[str]:
    """The model's own parameters: Kuramoto's coupling and frequencies."""
    parts = []
    if "coupling" in model.parameters:
        parts.append(f"c={value_text(cfg.coupling)}")
    if "omega" in model.parameters:
        if isinstance(cfg.omega, str):
            parts.append(f"ω~{cfg.omega}")
        elif cfg.omega is not None:
            parts.append("ω given")
    return parts


def _attention_parts(cfg: Any) -> list[str]:
    """What an attention model ran with beyond its kernel: matrices, time scale,
    weights, heads, layers, normalisation (each only when not the default)."""
    parts = []
    for name in ("Q", "K", "V"):
        text = _matrix_text(name, getattr(cfg, name))
        if text:
            parts.append(text)
    if _time_changed(cfg):
        parts.append(f"usa_scale={cfg.usa_scale} (time e^β t)")
    if cfg.weights != "given":
        parts.append(f"weights {cfg.weights}")
    if cfg.value_weights != "given":
        parts.append(f"V weights {cfg.value_weights}")
    if cfg.heads > 1:
        parts.append(f"{cfg.heads} heads")
    if cfg.layer_time is not None:
        parts.append(f"layers of {value_text(cfg.layer_time)} time units")
    if cfg.normalization != "softmax":
        parts.append(f"{cfg.normalization} normalisation")
    return parts


def _member_parts(cfg: Any, system: int | None, batch: int | None, seed: bool) -> list[str]:
    """The ensemble member drawn (or the ensemble) and the seed."""
    parts = []
    b = cfg.batch if batch is None else batch
    if b is not None:
        parts.append(f"system {system} of {b}" if system is not None else f"ensemble of {b}")
    if seed:
        s = seed_text(cfg.seed)
        if s:
            parts.append(s)
    return parts


def _time_changed(config: Any) -> bool:
    """Whether the run's time is a rescaled one: a model that reads ``usa_scale``
    run with a scale that is a time change (``n_exp_beta``: time ``e^β t``)."""
    model = MODELS.get(getattr(config, "model", None))
    scale = USA_SCALES.get(getattr(config, "usa_scale", None))
    return (model is not None and "usa_scale" in model.parameters and scale is not None
            and scale.time_change)


def time_label(config: Any = None, *, log: bool = False) -> str:
    """The time axis label: ``"time t"``, or ``"time e^β t"`` for the rescaled USA.

    With ``usa_scale="n_exp_beta"`` the run integrates USA with weights
    ``e^{-β} exp(β <x_i, x_j>) / n``: its time is ``e^β t`` in the time ``t``
    of USA with ``usa_scale="n"``.
    """
    rescaled = config is not None and _time_changed(config)
    text = r"time $e^{\beta} t$ (usa_scale=n_exp_beta)" if rescaled else "time t"
    return text + (" (log)" if log else "")


def trajectory_title(traj: Any, analysis: Any, system: int | None = None) -> str:
    """:func:`run_title` of a run (``traj``, a Trajectory) from its configuration, or
    from the facts of its analysis (an AnalysisResult) when it has none."""
    cfg = getattr(traj, "config", None)
    info = analysis.info
    if cfg is not None:
        return run_title(cfg, system=system, batch=info.get("batch"))
    ens = ""
    if info.get("batch"):
        ens = (f", system {system} of {info['batch']}" if system is not None
               else f", ensemble of {info['batch']}")
    return f"n={info['n']}, d={info['d']}, β={value_text(info['beta'])}{ens}"
