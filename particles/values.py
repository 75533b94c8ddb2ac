"""Checks of single configuration values: numbers, names, matrices, times.

Each returns the value in its canonical form or raises
:class:`~particles.errors.ConfigError` with one line naming the field
(``"beta must be a finite number >= 0, got -1"``).  The rules that relate
several fields, or a field to a registry entry, are the entries' own
(:class:`particles.protocols.Entry`); this module loads no registry.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any, NoReturn

import numpy as np

from particles.errors import ConfigError, invalid
from particles.sphere import INITIAL_CONDITIONS

__all__ = ["MAX_HEADS", "NAMED_MATRICES", "POSITIONS", "SAVE_TIMES_HELP", "canonical",
           "check_choice", "check_coupling",
           "check_coupling_like", "check_float", "check_int", "check_names", "check_save_times",
           "fail", "freeze_matrix", "parse_init", "parse_save_times"]

#: named matrices accepted for Q, K, V.
NAMED_MATRICES = ("identity", "minus_identity")

#: most attention heads of a run (Transformers use tens).
MAX_HEADS = 10**4

#: what a run keeps of the positions (``positions=``), name -> description.
POSITIONS: dict[str, str] = {
    "all": "every saved frame",
    "final": "only the last saved frame (observables at every frame)",
    "none": "no frame (observables only; files keep the latest frame to resume from)",
}


def fail(name: str, allowed: str, got: Any) -> NoReturn:
    """Raise the one form of a refused value (:func:`particles.errors.invalid`)."""
    raise invalid(name, allowed, got)


def check_int(name: str, value: Any, minimum: int) -> int:
    """``value`` as an int of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        fail(name, f"an integer >= {minimum}", value)
    return int(value)


def check_float(name: str, value: Any, *, minimum: float, strict: bool = False) -> float:
    """``value`` as a finite float of at least (``strict``: above) ``minimum``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        fail(name, "a number", value)
    if isinstance(value, bool) or not math.isfinite(v) or v < minimum or (strict and v == minimum):
        fail(name, f"a finite number {'>' if strict else '>='} {minimum:g}", value)
    return v


def check_choice(name: str, value: Any, choices) -> str:
    """``value``, one of ``choices``."""
    if value not in choices:
        fail(name, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def check_names(field: str, value: Any, registry) -> tuple[str, ...]:
    """Names from a registry, as a sequence or one comma-separated string.

    Parameters
    ----------
    field : str
        Argument name used in the error messages (e.g. ``"models"``).
    value : str or sequence of str
        ``"sa,usa"`` or ``("sa", "usa")``.
    registry : mapping
        The allowed names (its keys).

    Returns
    -------
    tuple of str
        The names in order.

    Raises
    ------
    ValueError
        Empty, unknown or repeated names (one line starting with ``field``).
    """
    if isinstance(value, str):
        value = tuple(v.strip() for v in value.split(","))
    try:
        names = tuple(value)
    except TypeError:
        raise ConfigError(f"{field} must be a sequence of names, got {value!r}", field) from None
    unknown = [v for v in names if v not in registry]
    if not names or unknown:
        raise ConfigError(
            f"{field} must be one or more of {', '.join(registry)}, got "
            f"{', '.join(map(repr, unknown or names)) or 'none'}", field
        )
    if len(set(names)) != len(names):
        raise ConfigError(f"{field} must not repeat a name, got {', '.join(names)}", field)
    return names


def parse_init(init: str) -> tuple[str, float | str | None]:
    """Split ``"cap:0.3"`` into ``("cap", 0.3)``; ``"uniform"`` into ``("uniform", None)``;
    ``"density:field.h5"`` into ``("density", "field.h5")`` (a text parameter).

    Names, parameters and their rules come from
    :data:`particles.sphere.INITIAL_CONDITIONS`.
    """
    if not isinstance(init, str):
        fail("init", "one of " + ", ".join(INITIAL_CONDITIONS), init)
    name, _, arg = init.partition(":")
    if name not in INITIAL_CONDITIONS:
        forms = ", ".join(f"{k}:{c.parameter}" for k, c in INITIAL_CONDITIONS.items()
                          if c.parameter)
        fail("init", "one of " + ", ".join(INITIAL_CONDITIONS) + f" ({forms})", init)
    entry = INITIAL_CONDITIONS[name]
    if entry.text:
        if not arg:
            fail("init", f"'{name}:{entry.parameter}' with {entry.allowed}", init)
        return name, arg
    if entry.parameter is not None:
        if not arg:
            fail("init", f"'{name}:VALUE' with a number", init)
        try:
            value = float(arg)
        except ValueError:
            fail("init", f"'{name}:VALUE' with a number", init)
        if entry.accepts is not None and not entry.accepts(value):
            fail("init", f"'{name}:{entry.parameter}' with {entry.allowed}", init)
        return name, value
    if arg:
        fail("init", f"'{name}' without a parameter", init)
    return name, None


def check_coupling(value: Any) -> float:
    """``value`` as a float coupling strength (any finite number); ValueError otherwise."""
    try:
        c = float(value)
    except (TypeError, ValueError):
        fail("coupling", "a finite number", value)
    if isinstance(value, bool) or not math.isfinite(c):
        fail("coupling", "a finite number", value)
    return c


def check_coupling_like(name: str, value: Any) -> float:
    """``value`` as a finite float (any sign); ValueError naming ``name`` otherwise."""
    try:
        c = float(value)
    except (TypeError, ValueError):
        fail(name, "a finite number", value)
    if isinstance(value, bool) or not math.isfinite(c):
        fail(name, "a finite number", value)
    return c


SAVE_TIMES_HELP = ("a sequence of times, 't1,t2,...', 'log:START:STOP:NUM' (log-spaced, "
                    "START > 0) or 'lin:START:STOP:NUM'")


def parse_save_times(spec: str) -> np.ndarray:
    """Output times from a string: ``"log:1:1e4:50"``, ``"lin:0:10:11"`` or ``"0.5,1,2"``.

    Returns
    -------
    ndarray, shape (k,)
        The times (not yet checked against ``T``).
    """
    head, _, rest = spec.partition(":")
    try:
        if head in ("log", "lin"):
            start, stop, num = rest.split(":")
            start, stop, count = float(start), float(stop), int(num)
            if count < 1 or (head == "log" and not 0 < start < stop):
                raise ValueError
            space = np.geomspace if head == "log" else np.linspace
            return space(start, stop, count)
        return np.array([float(t) for t in spec.split(",")])
    except ValueError:
        fail("save_times", SAVE_TIMES_HELP, spec)


def freeze_matrix(name: str, value: Any, d: int) -> str | tuple:
    """``Q``, ``K`` or ``V`` as a name or a tuple of rows (d, d)."""
    if value is None:
        return "identity"
    if isinstance(value, str):
        check_choice(name, value, NAMED_MATRICES)
        return value
    a = np.asarray(value, dtype=np.float64)
    if a.shape != (d, d):
        fail(name, f"a ({d}, {d}) matrix or one of {NAMED_MATRICES}", f"array of shape {a.shape}")
    if not np.all(np.isfinite(a)):
        fail(name, "a finite matrix", "a matrix with NaN or inf")
    return tuple(tuple(float(x) for x in row) for row in a)




def check_save_times(spec: Any, T: float) -> tuple[float, ...]:
    """Output times (a sequence or a :func:`parse_save_times` string) as an
    increasing tuple in ``[0, T]``."""
    try:
        st = (parse_save_times(spec) if isinstance(spec, str)
              else np.asarray(spec, dtype=np.float64).ravel())
    except (TypeError, ValueError):
        fail("save_times", SAVE_TIMES_HELP, spec)
    if st.size == 0 or not np.all(np.isfinite(st)) or np.any(np.diff(st) <= 0):
        fail("save_times", "a non-empty strictly increasing sequence of finite times", spec)
    if st[0] < 0 or st[-1] > T * (1 + 1e-12):
        fail("save_times", f"times in [0, T] = [0, {T:g}]", spec)
    return tuple(float(t) for t in st)


def check_masses(masses: Any, n: int) -> tuple[float, ...]:
    """Token masses as ``n`` finite positive floats."""
    w = np.asarray(masses, dtype=np.float64).ravel()
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        fail("masses", f"{n} finite positive numbers", masses)
    return tuple(float(x) for x in w)


# ------------------------------------------------------------ every value
def canonical(given: dict[str, Any], rules: Any) -> dict[str, Any]:
    """A configuration's values, each checked alone and in canonical form.

    Parameters
    ----------
    given : dict
        Field name -> value as given (:class:`particles.config.SimulationConfig`).
    rules : module
        :mod:`particles.rules`: the registries' names (``CHOICES``), the
        default integrator, the frequencies' freezing.

    Returns
    -------
    dict
        The same fields, canonical (numbers as floats and ints, matrices and
        times as tuples, the integrator resolved).

    Raises
    ------
    ConfigError
        The first value that is refused (one line naming its field).
    """
    v = SimpleNamespace(**given)
    _run_values(v, rules)
    _token_values(v)
    _attention_values(v, rules)
    _series_and_stop_values(v, rules)
    return vars(v)


def _choice(v: SimpleNamespace, rules: Any, name: str) -> None:
    check_choice(name, getattr(v, name), tuple(rules.CHOICES[name]))


def _run_values(v: SimpleNamespace, rules: Any) -> None:
    """Size, model, integrator and times."""
    v.n = check_int("n", v.n, 1)
    v.d = check_int("d", v.d, 2)
    v.beta = check_float("beta", v.beta, minimum=0.0)
    if v.beta > 1e4:
        fail("beta", "a finite number in [0, 1e4]", v.beta)
    for name in ("model", "kernel", "usa_scale"):
        _choice(v, rules, name)
    v.noise = check_float("noise", v.noise, minimum=0.0)
    if v.integrator is None:
        v.integrator = rules.default_integrator(v.noise)
    _choice(v, rules, "integrator")
    v.dt = check_float("dt", v.dt, minimum=0.0, strict=True)
    v.T = check_float("T", v.T, minimum=0.0)
    v.save_every = check_int("save_every", v.save_every, 1)
    if v.save_times is not None:
        v.save_times = check_save_times(v.save_times, v.T)
    if v.batch is not None:
        v.batch = check_int("batch", v.batch, 1)
    if v.seed is not None:
        v.seed = check_int("seed", v.seed, 0)


def _token_values(v: SimpleNamespace) -> None:
    """Initial condition, matrices, masses, tolerances and what is kept."""
    parse_init(v.init)
    for m in ("Q", "K", "V"):
        setattr(v, m, freeze_matrix(m, getattr(v, m), v.d))
    if v.masses is not None:
        v.masses = check_masses(v.masses, v.n)
    v.rtol = check_float("rtol", v.rtol, minimum=0.0, strict=True)
    if v.rtol >= 1.0:  # a 100% relative error controls nothing
        fail("rtol", "a finite number in (0, 1)", v.rtol)
    v.atol = check_float("atol", v.atol, minimum=0.0, strict=True)
    v.max_steps = check_int("max_steps", v.max_steps, 1)
    check_choice("positions", v.positions, tuple(POSITIONS))


def _attention_values(v: SimpleNamespace, rules: Any) -> None:
    """Kernel parameters, weight ensembles, heads, normalisation, layers, Kuramoto's
    coupling and frequencies."""
    v.tau = check_float("tau", v.tau, minimum=0.0)
    v.gamma = check_coupling_like("gamma", v.gamma)
    _choice(v, rules, "weights")
    _choice(v, rules, "value_weights")
    v.heads = check_int("heads", v.heads, 1)
    if v.heads > MAX_HEADS:  # each head's weights are drawn and checked in Python
        fail("heads", f"an integer in [1, {MAX_HEADS}]", v.heads)
    _choice(v, rules, "normalization")
    v.sinkhorn_iters = check_int("sinkhorn_iters", v.sinkhorn_iters, 1)
    v.sinkhorn_tol = check_float("sinkhorn_tol", v.sinkhorn_tol, minimum=0.0, strict=True)
    if v.layer_time is not None:
        v.layer_time = check_float("layer_time", v.layer_time, minimum=0.0, strict=True)
    _choice(v, rules, "weight_draws")
    v.coupling = check_coupling(v.coupling)
    v.omega = rules.freeze_omega(v.omega, v.n)


def _series_and_stop_values(v: SimpleNamespace, rules: Any) -> None:
    """Summation and its tolerance, collapse, stops, merge events, observers."""
    _choice(v, rules, "summation")
    v.tol = check_float("tol", v.tol, minimum=0.0, strict=True)
    if v.tol >= 1.0:
        fail("tol", "a finite number in (0, 1)", v.tol)
    v.collapse_tol = check_float("collapse_tol", v.collapse_tol, minimum=0.0)
    if v.until_clusters is not None:
        v.until_clusters = check_int("until_clusters", v.until_clusters, 1)
    if v.max_wall is not None:
        v.max_wall = check_float("max_wall", v.max_wall, minimum=0.0, strict=True)
    if not isinstance(v.merge_events, bool | np.bool_):
        fail("merge_events", "True or False", v.merge_events)
    v.merge_events = bool(v.merge_events)
    if v.observables is not None:
        v.observables = check_names("observables", v.observables, rules.CHOICES["observables"])
