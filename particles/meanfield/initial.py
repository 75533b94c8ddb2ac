"""Initial densities of the mean-field solver, named by a short spec string.

A spec is ``name`` or ``name:key=value,key=value``; every density is
normalised on the grid so that ``sum(rho) * 2 pi / M == 1`` (to round-off):

============  ====================================================================
spec          density
============  ====================================================================
``uniform``   ``1 / (2 pi)``
``perturbed`` ``(1 + eps sum_{k=1}^{kmax} a_k cos(k theta + phi_k)) / (2 pi)``, with
              ``a_k`` standard normal / ``sqrt(kmax)`` and ``phi_k`` uniform, drawn
              from the run's seed (:func:`particles.seeds.init_rng`);
              defaults ``eps=1e-3, kmax=32`` (capped at ``M/2 - 1``)
``modes``     ``(1 + eps cos(k (theta - phase))) / (2 pi)``; defaults ``k=1, eps=1e-3,
              phase=0``
``vonmises``  ``exp(kappa cos(theta - mu)) / (2 pi I_0(kappa))``; defaults ``kappa=1,
              mu=0``
``particles`` the kernel density estimate (:mod:`particles.meanfield.kde`) of the
              tokens of a circle run's first frame (``d = 2``; an ensemble pooled):
              ``particles:file=PATH[,bandwidth=H]``, ``H`` in radians (default
              0: two grid cells, ``4 pi / M``).  The file is read by the session
              (:func:`particles.runs.meanfield.run_meanfield_to_file`), which
              records the bandwidth it used; :func:`make_density` refuses it.
============  ====================================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

from particles.seeds import init_rng

#: name -> {parameter: (default, type)}; the single source of truth for ``init=``.
INITS: dict[str, dict[str, tuple[float, type]]] = {
    "uniform": {},
    "perturbed": {"eps": (1e-3, float), "kmax": (32, int)},
    "modes": {"k": (1, int), "eps": (1e-3, float), "phase": (0.0, float)},
    "vonmises": {"kappa": (1.0, float), "mu": (0.0, float)},
    "particles": {"file": ("", str), "bandwidth": (0.0, float)},
}

#: initial densities read from a file by the session, not made from the spec alone.
FROM_FILE = ("particles",)


def parse_spec(spec: str, inits: dict[str, dict[str, tuple[Any, type]]],
               where: str = "") -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,..."`` against a registry of initial densities (name ->
    {parameter: (default, type)}) into the name and its full parameter dict.

    Raises
    ------
    ValueError
        One line naming the problem (unknown name or key, a value of the wrong type).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"init must be a non-empty string, got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    if name not in inits:
        raise ValueError(f"init must be one of {', '.join(inits)}{where}, got {name!r}")
    schema = inits[name]
    params = {key: default for key, (default, _) in schema.items()}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = (s.strip() for s in item.partition("="))
        if not eq or key not in schema:
            known = ", ".join(schema) or "none"
            raise ValueError(f"init {name!r}: unknown parameter {item!r} (known: {known})")
        kind = schema[key][1]
        if kind is str:
            if not value:
                raise ValueError(f"init {name!r}: {key} must not be empty")
            params[key] = value
            continue
        try:
            num = float(value)
        except ValueError:
            raise ValueError(f"init {name!r}: {key} must be a number, got {value!r}") from None
        if not np.isfinite(num) or (kind is int and num != int(num)):
            raise ValueError(f"init {name!r}: {key} must be a finite {kind.__name__}, "
                             f"got {value!r}")
        params[key] = kind(num)
    return name, params


def parse_init(spec: str) -> tuple[str, dict[str, float]]:
    """Split ``"name:key=value,..."`` into the name and its full parameter dict.

    Raises
    ------
    ValueError
        One line naming the problem (unknown name or key, bad value).
    """
    name, params = parse_spec(spec, INITS)
    if name in ("perturbed", "modes") and params["eps"] < 0:
        raise ValueError(f"init {name!r}: eps must be >= 0, got {params['eps']!r}")
    if name == "perturbed" and params["kmax"] < 1:
        raise ValueError(f"init 'perturbed': kmax must be >= 1, got {params['kmax']!r}")
    if name == "modes" and params["k"] < 1:
        raise ValueError(f"init 'modes': k must be >= 1, got {params['k']!r}")
    if name == "vonmises" and params["kappa"] < 0:
        raise ValueError(f"init 'vonmises': kappa must be >= 0, got {params['kappa']!r}")
    if name == "particles":
        if not params["file"]:
            raise ValueError("init 'particles' needs file=PATH (a trajectory of d = 2)")
        if params["bandwidth"] < 0:
            raise ValueError(f"init 'particles': bandwidth must be >= 0 (0: two grid "
                             f"cells), got {params['bandwidth']!r}")
    return name, params


def grid(M: int) -> np.ndarray:
    """The grid ``theta_j = 2 pi j / M``, shape (M,)."""
    return 2.0 * np.pi * np.arange(M) / M


def make_density(spec: str, M: int, seed: int = 0) -> np.ndarray:
    """The density of ``spec`` on an ``M``-point grid, shape (M,), unit mass on the grid.

    Raises
    ------
    ValueError
        Bad spec, or a density that is not positive (``eps`` too large).
    """
    name, p = parse_init(spec)
    if name in FROM_FILE:
        raise ValueError(f"init {name!r} is read from {p['file']}: the session draws it "
                         "(particles.runs.meanfield.run_meanfield_to_file)")
    theta = grid(M)
    if name == "uniform":
        rho = np.ones(M)
    elif name == "modes":
        if p["k"] > M // 2 - 1:
            raise ValueError(f"init 'modes': k must be below M/2 = {M // 2}, got {p['k']}")
        rho = 1.0 + p["eps"] * np.cos(p["k"] * (theta - p["phase"]))
    elif name == "perturbed":
        kmax = min(p["kmax"], M // 2 - 1)
        rng = init_rng(seed)
        amp = rng.standard_normal(kmax) / np.sqrt(kmax)
        phase = rng.uniform(0.0, 2.0 * np.pi, kmax)
        ks = np.arange(1, kmax + 1)
        rho = 1.0 + p["eps"] * (amp[:, None] * np.cos(ks[:, None] * theta + phase[:, None])).sum(0)
    else:  # vonmises; the normalisation below replaces 1 / (2 pi I_0(kappa))
        rho = np.exp(p["kappa"] * (np.cos(theta - p["mu"]) - 1.0))
    if not rho.min() > 0.0:
        raise ValueError(f"init {spec!r} is not a positive density (min {rho.min():.3g}): "
                         "lower eps")
    return rho / (rho.sum() * 2.0 * np.pi / M)
