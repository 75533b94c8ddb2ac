"""The configuration of a mean-field solve on S^{d-1} (``d >= 3``) and its initial densities.

Densities are relative to the uniform probability measure (the uniform density
is 1; :mod:`particles.meanfield.zonal`).  An initial density is named by a
spec ``name`` or ``name:key=value,...``; each is projected on the degrees
``<= lmax`` of the solve and scaled to unit mass:

============  ====================================================================
spec          density
============  ====================================================================
``uniform``   1
``perturbed`` ``1 + eps sum_{l=1}^{lmax} sum_m a_lm Z_lm / sqrt(count)`` with
              standard normal ``a_lm`` drawn from the run's seed
              (:func:`particles.seeds.init_rng`) and ``Z_lm`` the real harmonics,
              orthonormal for the uniform measure (axisymmetric: ``m = 0`` only,
              in the Gegenbauer polynomials ``P_l`` normalised to ``P_l(1) = 1``, so
              that ``|f - 1| <~ eps`` in any ``d``); defaults ``eps=1e-3, lmax=16``
              (capped at the solve's ``lmax``)
``modes``     ``1 + eps Z_lm``; defaults ``l=1, m=0, eps=1e-3`` (``m != 0``: S^2 only;
              ``m > 0`` the ``cos(m phi)`` harmonic, ``m < 0`` the ``sin(|m| phi)`` one)
``vonmises``  the von Mises-Fisher cap ``exp(kappa <x, mu>)`` about the direction of
              polar angle ``theta`` and azimuth ``phi`` (radians; axisymmetric: the
              pole, ``theta = 0``); defaults ``kappa=1, theta=0, phi=0``
``caps``      a mixture of ``count`` von Mises-Fisher caps of equal mass and
              concentration ``kappa`` about centres drawn i.i.d. uniform from the run's
              seed (S^2 only; exact coefficients,
              :func:`particles.meanfield.sphere_tokens.cap_coefficients`); defaults
              ``count=2, kappa=10``
``particles`` the kernel density estimate of the tokens of a run's first frame on
              S^2 (``simulate --d 3``; an ensemble pooled):
              ``particles:file=PATH[,bandwidth=H]``, ``H`` in radians (default 0:
              ``2 pi / lmax``, :mod:`particles.meanfield.sphere_tokens`).  The session
              reads the file (:func:`particles.runs.meanfield.run_meanfield_to_file`)
              and records the bandwidth it used; S^2 only
============  ====================================================================
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from particles.errors import ConfigError
from particles.meanfield.initial import parse_spec
from particles.meanfield.solver import (
    MEANFIELD_INTEGRATORS,
    check_steps,
    check_times,
    config_dict,
    config_from,
    finite_number,
    frame_times,
)
from particles.meanfield.spectral import USA_MAX_BETA, USA_SCALES
from particles.meanfield.zonal import SPHERE_MODELS

#: name -> {parameter: (default, type)}; the single source of truth for ``init=``.
SPHERE_INITS: dict[str, dict[str, tuple[float, type]]] = {
    "uniform": {},
    "perturbed": {"eps": (1e-3, float), "lmax": (16, int)},
    "modes": {"l": (1, int), "m": (0, int), "eps": (1e-3, float)},
    "vonmises": {"kappa": (1.0, float), "theta": (0.0, float), "phi": (0.0, float)},
    "caps": {"count": (2, int), "kappa": (10.0, float)},
    "particles": {"file": ("", str), "bandwidth": (0.0, float)},
}

#: the largest number of caps of ``init="caps"``.
MAX_CAPS = 10_000

#: the largest ``d`` of the axisymmetric solver (the issue's target is 1024).
MAX_D = 4096


def _modes_rule(p: dict[str, Any], lmax: int, axisymmetric: bool) -> str | None:
    if not 1 <= p["l"] <= lmax:
        return f"init 'modes': l must be in 1..lmax = {lmax}, got {p['l']}"
    if abs(p["m"]) > p["l"]:
        return f"init 'modes': |m| must be <= l = {p['l']}, got {p['m']}"
    if axisymmetric and p["m"] != 0:
        return "init 'modes': the axisymmetric solver takes m = 0 only"
    return None


def _vonmises_rule(p: dict[str, Any], lmax: int, axisymmetric: bool) -> str | None:
    if p["kappa"] < 0:
        return f"init 'vonmises': kappa must be >= 0, got {p['kappa']!r}"
    if axisymmetric and p["theta"] != 0:
        return "init 'vonmises': the axisymmetric solver takes the cap at the pole (theta = 0)"
    return None


def _caps_rule(p: dict[str, Any], lmax: int, axisymmetric: bool) -> str | None:
    if not 1 <= p["count"] <= MAX_CAPS:
        return f"init 'caps': count must be in 1..{MAX_CAPS}, got {p['count']!r}"
    if not p["kappa"] > 0:
        return f"init 'caps': kappa must be > 0, got {p['kappa']!r}"
    return None


def _particles_rule(p: dict[str, Any], lmax: int, axisymmetric: bool) -> str | None:
    if not p["file"]:
        return "init 'particles' needs file=PATH (a trajectory of d = 3)"
    if p["bandwidth"] < 0:
        return f"init 'particles': bandwidth must be >= 0 (0: 2 pi / lmax), got {p['bandwidth']!r}"
    return None


def _eps_rule(p: dict[str, Any], lmax: int, axisymmetric: bool) -> str | None:
    if p["eps"] < 0:
        return f"eps must be >= 0, got {p['eps']!r}"
    if "lmax" in p and p["lmax"] < 1:
        return f"init 'perturbed': lmax must be >= 1, got {p['lmax']!r}"
    return None


#: name -> the rule on its parameters (a one-line reason, or None).
_RULES = {"perturbed": _eps_rule, "modes": _modes_rule, "vonmises": _vonmises_rule,
          "caps": _caps_rule, "particles": _particles_rule}


def parse_sphere_init(spec: str, lmax: int, axisymmetric: bool) -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,..."`` into the name and its full parameter dict.

    Raises
    ------
    ValueError
        One line naming the problem (unknown name or key, bad value).
    """
    name, params = parse_spec(spec, SPHERE_INITS, " on the sphere")
    if name in ("caps", "particles") and axisymmetric:
        raise ValueError(f"init {name!r} is on S^2 only (the axisymmetric solver takes "
                         "'vonmises' at the pole)")
    why = _eps_rule(params, lmax, axisymmetric) if name == "modes" else None
    rule = _RULES.get(name)
    why = why or (rule(params, lmax, axisymmetric) if rule else None)
    if why:
        raise ValueError(why if why.startswith("init") else f"init {name!r}: {why}")
    return name, params


@dataclass(frozen=True, kw_only=True)
class SphereFieldConfig:
    """Everything that defines a mean-field solve on S^{d-1} (validated on construction).

    Parameters
    ----------
    d : int
        Ambient dimension: 3 (S^2, :mod:`particles.meanfield.sphere`), or any
        ``3 <= d <= MAX_D`` with ``axisymmetric``.
    lmax : int
        Highest harmonic degree ``>= 4`` (the grid is dealiased: about ``3 lmax / 2``
        polar nodes, at least ``3 lmax + 2`` azimuths on S^2).
    axisymmetric : bool
        Densities of the polar angle only (:mod:`particles.meanfield.axisymmetric`).
    model : {"usa", "sa"}
    beta : float
        Inverse temperature ``>= 0`` (USA with ``usa_scale="n"``: ``<= 700``).
    D : float
        Diffusion coefficient ``>= 0`` (``sigma^2 / 2`` for particle noise sigma).
    T, save_every, save_times
        As :class:`~particles.meanfield.MeanFieldConfig`.
    usa_scale : {"n", "n_exp_beta"}
    init : str
        Initial density spec (module docstring).
    seed : int
        Root seed of ``init="perturbed"`` and ``"caps"``.
    integrator, rtol, atol, dt0, max_steps, positivity
        As :class:`~particles.meanfield.MeanFieldConfig` (``atol`` relative to the
        uniform density 1).
    """

    d: int = 3
    lmax: int = 32
    axisymmetric: bool = False
    model: str = "usa"
    beta: float = 1.0
    D: float = 0.0
    T: float = 1.0
    save_every: float | None = None
    save_times: tuple[float, ...] | None = None
    usa_scale: str = "n"
    init: str = "perturbed"
    seed: int = 0
    integrator: str = "dopri5"
    rtol: float = 1e-8
    atol: float = 1e-10
    dt0: float | None = None
    max_steps: int = 10_000_000
    positivity: str = "warn"

    def __post_init__(self) -> None:
        for name in ("d", "lmax"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ConfigError(f"{name} must be an integer, got {value!r}", name)
        if not isinstance(self.axisymmetric, (bool, np.bool_)):
            raise ConfigError(f"axisymmetric must be true or false, got {self.axisymmetric!r}",
                              "axisymmetric")
        if self.axisymmetric:
            if not 3 <= self.d <= MAX_D:
                raise ConfigError(f"d must be in 3..{MAX_D} for the axisymmetric solver, "
                                  f"got {self.d!r}", "d")
        elif self.d != 3:
            raise ConfigError(f"d must be 3 for the solver on S^2 (other d: axisymmetric; "
                              f"d = 2: the circle's modes), got {self.d!r}", "d")
        if not 4 <= self.lmax <= 2048:
            raise ConfigError(f"lmax must be in 4..2048, got {self.lmax!r}", "lmax")
        if self.model not in SPHERE_MODELS:
            raise ConfigError(f"model must be one of {', '.join(SPHERE_MODELS)} on the sphere, "
                              f"got {self.model!r}", "model")
        beta = finite_number("beta", self.beta, nonneg=True)
        if self.usa_scale not in USA_SCALES:
            raise ConfigError(f"usa_scale must be one of {', '.join(USA_SCALES)}, "
                              f"got {self.usa_scale!r}", "usa_scale")
        if self.model == "usa" and self.usa_scale == "n" and beta > USA_MAX_BETA:
            raise ConfigError(f"beta must be <= {USA_MAX_BETA:g} for usa with usa_scale='n' "
                              f"(speeds ~ e^beta), got {self.beta!r}", "beta")
        if beta > USA_MAX_BETA:
            raise ConfigError(f"beta must be <= {USA_MAX_BETA:g} on the sphere, "
                              f"got {self.beta!r}", "beta")
        finite_number("D", self.D, nonneg=True)
        check_times(self)
        try:
            parse_sphere_init(self.init, int(self.lmax), bool(self.axisymmetric))
        except ValueError as exc:
            raise ConfigError(str(exc), "init") from None
        check_steps(self)
        object.__setattr__(self, "axisymmetric", bool(self.axisymmetric))

    @property
    def kind(self) -> str:
        """``"axisymmetric"`` or ``"sphere"``: which solver runs it."""
        return "axisymmetric" if self.axisymmetric else "sphere"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; inverse of :meth:`from_dict`."""
        return config_dict(self, ("d", "lmax", "seed", "max_steps"))

    def to_json(self) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SphereFieldConfig:
        """Rebuild a config from :meth:`to_dict` (unknown keys: one-line ValueError)."""
        return config_from(cls, d, "sphere mean-field")

    def frame_times(self) -> np.ndarray:
        """The save times, shape (F,): 0 first, ``T`` last with ``save_every``."""
        return frame_times(self)


__all__ = ["MAX_CAPS", "MAX_D", "MEANFIELD_INTEGRATORS", "SPHERE_INITS", "SphereFieldConfig",
           "parse_sphere_init"]
