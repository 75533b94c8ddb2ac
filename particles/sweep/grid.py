"""Parameter grids of a sweep: specifications, validation, the grid points.

A sweep runs one ensemble of ``runs`` systems at every point of a grid, the
Cartesian product of its *axes* (``beta``, ``d``, ``model``, ...: any
:class:`~particles.config.SimulationConfig` field); the other fields are
fixed (the *base*).  A value is given as

* ``VALUE``: one value (a fixed field, or an axis of length 1 when it is
  named in ``axes``),
* ``A,B,C``: a list (an axis, in the order given),
* ``START:STOP:NUM``: ``NUM`` values from ``START`` to ``STOP`` inclusive,
  evenly spaced (``numpy.linspace``; numeric fields only, integers must
  come out whole).

Fields whose values themselves hold commas or colons (``save_times``,
``observables``, ``masses``, ``omega``, ``init``, ``Q``, ``K``, ``V``) take
one value, never a grid (``init cap:0.1`` is the cap initial condition);
give several in a TOML file as a list to sweep ``init`` or ``omega``.

Every grid point must save at the same times (the time axis of the
results is shared), so ``T``, ``dt`` and ``save_every`` may be swept only
when the save times stay equal.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import tomllib
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from particles.config import SimulationConfig
from particles.errors import SweepError
from particles.plan import facts
from particles.seeds import fresh_seed, sweep_point_seed

if TYPE_CHECKING:
    from particles.io.sweep import SweepLayout

__all__ = [
    "DEFAULT_DELTAS",
    "FIXED_ONLY",
    "GRID_FIELDS",
    "NOT_SWEPT",
    "RUN_STOPS",
    "SESSION_KEYS",
    "SweepSpec",
    "check_max_wall",
    "field_kind",
    "parse_value",
    "read_sweep_file",
    "stop_refusal",
]

#: default linking distance of the clusters, radians (that of
#: :class:`particles.analysis.ClusterDetector`; not imported, so that reading a
#: grid loads no compiler: a test checks they agree).
DEFAULT_EPS = 0.05

#: default quantile levels (those of :mod:`particles.analysis.ensemble`, likewise).
DEFAULT_LEVELS = (0.05, 0.25, 0.5, 0.75, 0.95)

#: default thresholds ``delta`` of the close-pair fractions ``<x_i, x_j> > 1 - delta``.
DEFAULT_DELTAS = (0.1, 0.01, 0.001)

#: fields that a sweep sets itself (``batch`` is ``runs``; ``seed`` is the root seed).
NOT_SWEPT = ("batch", "seed", "positions")

#: stops and events of a single run, which are no grid fields: merge events
#: (``merge_events``) and the stop at a cluster count (``until_clusters``) are
#: settings of the whole sweep (:class:`SweepSpec`'s, ``particles sweep
#: --merge-events --until-clusters K``), and its wall-time budget is one for the
#: whole session (:func:`particles.sweep.run.run_sweep`'s ``max_wall``).
RUN_STOPS = ("until_clusters", "max_wall", "merge_events")


def stop_refusal(name: str) -> str:
    """Why a sweep refuses the stop ``name`` of :data:`RUN_STOPS` as a grid field."""
    if name == "max_wall":
        return ("--max-wall is a budget of the whole sweep (particles sweep --max-wall "
                "SECONDS, run_sweep(max_wall=...)), not a grid parameter")
    if name == "merge_events":
        return ("--merge-events is a setting of the whole sweep (particles sweep "
                "--merge-events, SweepSpec(merge_events=True)), not a grid parameter")
    return (f"{option_name(name)} is a setting of the whole sweep (particles sweep "
            f"{option_name(name)} K, SweepSpec({name}=K)), not a grid parameter")


def check_max_wall(seconds: Any) -> float:
    """A sweep's wall-time budget (``max_wall``) in seconds, as a float.

    Raises
    ------
    SweepError
        Not a finite number >= 0 (one line).
    """
    try:
        value = float(seconds)
        if isinstance(seconds, bool | str):
            raise TypeError
    except (TypeError, ValueError):
        value = math.nan
    if not 0 <= value < math.inf:
        raise SweepError(f"--max-wall must be a finite number of seconds >= 0, got {seconds!r}")
    return value


#: fields taking one value from the command line (their values hold ``,`` or ``:``).
FIXED_ONLY = ("save_times", "observables", "masses", "omega", "init", "Q", "K", "V")

#: fields whose value is a list: a TOML list is that one value, never an axis.
VALUE_LISTS = ("save_times", "observables", "masses", "Q", "K", "V")

_FIELDS = {f.name: f for f in dataclasses.fields(SimulationConfig)}
_HINTS = typing.get_type_hints(SimulationConfig)

#: the configuration fields a sweep takes, fixed or swept.
GRID_FIELDS = tuple(k for k in _FIELDS if k not in NOT_SWEPT and k not in RUN_STOPS)

#: keys of a sweep TOML file that are no configuration fields.
SESSION_KEYS = ("runs", "delta", "seed", "eps", "max_wall", "merge_events", "until_clusters")


def option_name(name: str) -> str:
    """``save_every`` -> ``--save-every`` (for messages)."""
    return "--" + name.replace("_", "-")


def field_kind(name: str) -> type:
    """``int``, ``float`` or ``str``: how a command-line value of a field is read."""
    hint = _HINTS[name]
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    for kind in (int, float):
        if kind in args:
            return kind
    return str


def _number(name: str, text: str, kind: type) -> int | float:
    try:
        value = float(text)
    except ValueError:
        raise SweepError(f"{option_name(name)}: {text!r} is not a number") from None
    if kind is int:
        if not (math.isfinite(value) and value == round(value)):
            raise SweepError(f"{option_name(name)}: {text!r} is not an integer")
        return round(value)
    return value


#: grid points of one sweep (each is a validated configuration and a task plan).
MAX_POINTS = 10**5

#: systems of one sweep (each has its row of per-system results and a done flag).
MAX_SYSTEMS = 10**10

#: save times of one sweep (every system's statistics are stored at each).
MAX_FRAMES = 10**6


def parse_value(name: str, text: str) -> tuple[Any, ...]:
    """The values of one command-line grid specification.

    Parameters
    ----------
    name : str
        A :class:`~particles.config.SimulationConfig` field.
    text : str
        ``VALUE``, ``A,B,C`` or ``START:STOP:NUM`` (see the module docstring).

    Returns
    -------
    tuple
        The values, converted to the field's type (int, float or str).

    Raises
    ------
    SweepError
        Unknown field, malformed specification (one line naming the option).
    """
    if name in RUN_STOPS:
        raise SweepError(stop_refusal(name))
    if name not in _FIELDS or name in NOT_SWEPT:
        allowed = ", ".join(option_name(k) for k in GRID_FIELDS)
        raise SweepError(f"unknown sweep parameter {option_name(name)}; allowed: {allowed}")
    text = str(text).strip()
    if not text:
        raise SweepError(f"{option_name(name)}: empty value")
    kind = field_kind(name)
    if name == "masses":  # one value: a number per token
        return (tuple(_number(name, x.strip(), float) for x in text.split(",")),)
    if name in FIXED_ONLY:
        return (text,)
    if kind is not str and text.count(":") == 2 and "," not in text:
        return _range_values(name, text, kind)
    if ":" in text and kind is not str:
        raise SweepError(f"{option_name(name)}: {text!r}: expected VALUE, A,B,C or "
                         "START:STOP:NUM")
    parts = [p.strip() for p in text.split(",")]
    if any(not p for p in parts):
        raise SweepError(f"{option_name(name)}: {text!r} has an empty item")
    if kind is str:
        return tuple(parts)
    return tuple(_number(name, p, kind) for p in parts)


def _range_values(name: str, text: str, kind: type) -> tuple[Any, ...]:
    """The values of an inclusive range ``START:STOP:NUM`` of a numeric field."""
    a, b, num = text.split(":")
    count = _number(name, num, int)
    if count < 1:
        raise SweepError(f"{option_name(name)}: {text!r}: NUM must be at least 1")
    if count > MAX_POINTS:
        raise SweepError(f"{option_name(name)}: {text!r}: at most {MAX_POINTS} values")
    lo, hi = _number(name, a, float), _number(name, b, float)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise SweepError(f"{option_name(name)}: {text!r}: START and STOP must be finite")
    values = np.linspace(lo, hi, count)
    if kind is int:
        if not np.all(values == np.round(values)):
            raise SweepError(f"{option_name(name)}: {text!r} does not give whole numbers")
        return tuple(int(v) for v in np.round(values))
    return tuple(float(v) for v in values)


def read_sweep_file(path: str | Path) -> dict[str, Any]:
    """Read a sweep TOML file.

    Keys are :class:`~particles.config.SimulationConfig` fields (a list
    sweeps the field, a string is read as on the command line, any other
    value is fixed; not :data:`RUN_STOPS`) and the :data:`SESSION_KEYS`
    ``runs``, ``delta`` (list), ``seed``, ``eps``, ``max_wall``.

    Returns
    -------
    dict
        Field name -> tuple of values (axes and fixed fields alike), and the
        sweep keys as given.

    Raises
    ------
    SweepError
        Unreadable TOML, unknown keys or bad values.
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SweepError(f"{path}: {' '.join(str(exc).split())}") from None
    extra = set(SESSION_KEYS)
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in extra:
            out[key] = value
            continue
        if key in RUN_STOPS:
            raise SweepError(f"{path}: key {key}: {stop_refusal(key)}")
        if key not in _FIELDS or key in NOT_SWEPT:
            allowed = ", ".join([*GRID_FIELDS, *sorted(extra)])
            raise SweepError(f"{path}: unknown key {key!r}; allowed: {allowed}")
        if isinstance(value, list) and (
                key in VALUE_LISTS or (key == "omega" and not all(isinstance(v, str)
                                                                  for v in value))):
            if key in NUMBER_LISTS:
                _check_numbers(path, key, value)
            out[key] = (tuple(value),)
        elif isinstance(value, list):
            if not value:
                raise SweepError(f"{path}: {key} is an empty list")
            out[key] = tuple(value)
        elif isinstance(value, str):
            try:
                out[key] = parse_value(key, value)
            except SweepError as exc:
                raise SweepError(f"{path}: key {key}: {exc}") from None
        else:
            out[key] = (value,)
    return out


#: list values that are numbers (nested for a matrix).
NUMBER_LISTS = ("masses", "Q", "K", "V")


def _check_numbers(path: Path, key: str, value: list) -> None:
    """Refuse a TOML list of ``key`` that is not numbers (a ragged matrix, text)."""
    try:  # the shape is checked with the configuration
        np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        what = ("a list of numbers, one per token" if key == "masses"
                else "a (d, d) list of rows of numbers")
        raise SweepError(f"{path}: key {key}: {option_name(key)} must be {what}, "
                         f"got {value!r}") from None


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


def _check_fields(base: dict[str, Any], axes: tuple[tuple[str, tuple[Any, ...]], ...]) -> None:
    """Refuse stops, unknown fields, empty or repeated axes, a field fixed and swept."""
    names = [k for k, _ in axes]
    for key in [*base, *names]:
        if key in RUN_STOPS:
            raise SweepError(stop_refusal(key))
    for key in base:
        if key not in _FIELDS or key in NOT_SWEPT:
            raise SweepError(f"unknown sweep parameter {option_name(key)}")
    for k, values in axes:
        if k not in _FIELDS or k in NOT_SWEPT:
            raise SweepError(f"unknown sweep parameter {option_name(k)}")
        if not values:
            raise SweepError(f"{option_name(k)}: no values")
        if len(set(map(repr, values))) != len(values):
            raise SweepError(f"{option_name(k)}: repeated values {list(values)}")
    if len(set(names)) != len(names):
        raise SweepError(f"axes repeat a parameter: {names}")
    both = sorted(set(names) & set(base))
    if both:
        raise SweepError(f"{option_name(both[0])} is both fixed and swept")


def _checked_runs(runs: Any) -> int:
    """``runs``, a positive integer."""
    if isinstance(runs, bool) or not isinstance(runs, int | np.integer) or runs < 1:
        raise SweepError(f"--runs must be a positive integer, got {runs!r}")
    return int(runs)


def _check_size(axes: tuple[tuple[str, tuple[Any, ...]], ...], runs: int) -> None:
    """Refuse a grid of more than MAX_POINTS points or MAX_SYSTEMS systems (counted
    before any grid point is built: each one validates a configuration)."""
    points = math.prod(len(v) for _, v in axes)
    if points > MAX_POINTS:
        raise SweepError(f"the grid has {points} points; at most {MAX_POINTS} "
                         "(sweep a coarser grid, or several sweeps)")
    if points * runs > MAX_SYSTEMS:
        raise SweepError(f"--runs {runs} at {points} grid points is "
                         f"{points * runs:.3g} systems; at most {MAX_SYSTEMS:.0e}")


def _checked_deltas(given: Any) -> tuple[float, ...]:
    """The thresholds, distinct numbers in (0, 2]."""
    try:
        deltas = tuple(float(x) for x in given)
        if any(isinstance(x, bool) for x in given):
            raise TypeError
    except (TypeError, ValueError):
        raise SweepError(f"--delta must be numbers in (0, 2], got {given!r}") from None
    if not deltas or any(not 0 < x <= 2 for x in deltas) or len(set(deltas)) != len(deltas):
        raise SweepError(f"--delta must be distinct numbers in (0, 2], got {list(deltas)}")
    return deltas


def _checked_eps(given: Any) -> float:
    """The linking distance, in (0, pi) radians."""
    try:
        eps = float(given)
    except (TypeError, ValueError):
        eps = math.nan
    if isinstance(given, bool) or not 0 < eps < math.pi:
        raise SweepError(f"--eps must be in (0, pi) radians, got {given!r}")
    return float(given)


def _checked_seed(seed: Any) -> int:
    """The root seed, a non-negative integer."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise SweepError(f"--seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _checked_merge_events(given: Any) -> bool:
    """``merge_events``, a boolean."""
    if not isinstance(given, bool | np.bool_):
        raise SweepError(f"--merge-events must be True or False, got {given!r}")
    return bool(given)


def _checked_until(given: Any) -> int | None:
    """``until_clusters``, None or a positive integer."""
    if given is None:
        return None
    if isinstance(given, bool) or not isinstance(given, int | np.integer) or given < 1:
        raise SweepError(f"--until-clusters must be a positive integer, got {given!r}")
    return int(given)


def _checked_levels(given: Any) -> tuple[float, ...]:
    """The quantile levels, in (0, 1)."""
    levels = tuple(float(q) for q in given)
    if not levels or any(not 0 < q < 1 for q in levels):
        raise SweepError(f"levels must be in (0, 1), got {list(levels)}")
    return levels


def _point_config(merged: dict[str, Any], seed: int | None, where: str) -> SimulationConfig:
    """The configuration of one grid point; a refusal as a SweepError naming the
    option and ``where`` (the point's values), its ``field`` the refused field."""
    try:
        return SimulationConfig(**merged, seed=seed)
    except (TypeError, ValueError) as exc:
        text = " ".join(str(exc).split())
        name = getattr(exc, "field", None)
        if name in _FIELDS and text.startswith(name):
            text = option_name(name) + text[len(name):]
        error = SweepError(text + where)
        error.field = name  # the CLI names the key of a value from a file
        raise error from None


@dataclass(frozen=True)
class SweepSpec:
    """A sweep: fixed fields, grid axes, ensemble size, thresholds, root seed.

    Parameters
    ----------
    base : mapping
        Fixed :class:`~particles.config.SimulationConfig` fields (``n``, ``d``,
        ``beta`` are required, in ``base`` or as axes).
    axes : tuple of (str, tuple)
        Swept fields and their values, in grid order (the last varies fastest).
    runs : int
        Systems per grid point.
    deltas : tuple of float
        Thresholds of the close-pair fractions ``<x_i, x_j> > 1 - delta``.
    seed : int, optional
        Root seed (None: fresh entropy; :meth:`resolved` records it).
    eps : float
        Linking distance (radians) of the cluster detection.
    levels : tuple of float
        Quantile levels of the cluster counts and time scales.
    positions : bool
        Store every system's positions at every save time (off by default).
    merge_events : bool
        Locate every drop of each system's cluster count between save times
        by bisection (as ``simulate --batch B --merge-events``) and store the
        merges; the first-merge and single-cluster times then come from them.
    until_clusters : int, optional
        Run each grid point's ensemble until every one of its systems has
        between 1 and this many clusters (as ``simulate --batch B
        --until-clusters K``): its systems run as one task, and each one's
        first passage is stored.

    Raises
    ------
    SweepError
        On construction: unknown fields, bad values (one line naming the
        option and, for a grid point, its values).
    """

    base: Mapping[str, Any]
    axes: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    runs: int = 1
    deltas: tuple[float, ...] = DEFAULT_DELTAS
    seed: int | None = None
    eps: float = DEFAULT_EPS
    levels: tuple[float, ...] = DEFAULT_LEVELS
    positions: bool = False
    merge_events: bool = False
    until_clusters: int | None = None
    _configs: tuple[SimulationConfig, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        base = dict(self.base)
        axes = tuple((str(k), tuple(v)) for k, v in self.axes)
        _check_fields(base, axes)
        set_(self, "base", types.MappingProxyType(base))
        set_(self, "axes", axes)
        set_(self, "runs", _checked_runs(self.runs))
        _check_size(axes, self.runs)  # before any grid point is built
        set_(self, "deltas", _checked_deltas(self.deltas))
        set_(self, "eps", _checked_eps(self.eps))
        if self.seed is not None:
            set_(self, "seed", _checked_seed(self.seed))
        set_(self, "levels", _checked_levels(self.levels))
        set_(self, "positions", bool(self.positions))
        set_(self, "merge_events", _checked_merge_events(self.merge_events))
        set_(self, "until_clusters", _checked_until(self.until_clusters))
        set_(self, "_configs", self._build())

    # ------------------------------------------------------------ the grid
    @property
    def names(self) -> tuple[str, ...]:
        """Swept fields, in grid order."""
        return tuple(k for k, _ in self.axes)

    @property
    def shape(self) -> tuple[int, ...]:
        """Grid shape (one length per axis; ``()`` for a single point)."""
        return tuple(len(v) for _, v in self.axes)

    @property
    def points(self) -> int:
        """Number of grid points."""
        return math.prod(self.shape)

    def point_values(self, point: int) -> dict[str, Any]:
        """The swept values at flat grid index ``point`` (C order)."""
        index = np.unravel_index(point, self.shape) if self.axes else ()
        return {k: v[int(i)] for (k, v), i in zip(self.axes, index, strict=True)}

    def iter_points(self) -> Iterator[dict[str, Any]]:
        """The swept values of every grid point, in flat (C) order.

        Yields
        ------
        dict
            Swept field name -> its value at the point.
        """
        for combo in itertools.product(*(v for _, v in self.axes)):
            yield dict(zip(self.names, combo, strict=True))

    def config(self, point: int) -> SimulationConfig:
        """The configuration of grid point ``point`` (one system, ``batch=None``;
        ``seed`` the point's seed once the spec is :meth:`resolved`; the sweep's
        ``merge_events`` and ``until_clusters``, where set)."""
        return self._configs[point]

    def _build(self) -> tuple[SimulationConfig, ...]:
        configs = []
        times = None
        for point, values in enumerate(self.iter_points()):
            merged = {**self.base, **values}
            if merged.get("model") == "kuramoto":
                merged.setdefault("beta", 0.0)
            missing = [option_name(k) for k in ("n", "d", "beta") if k not in merged]
            if missing:
                raise SweepError(f"missing parameter(s) {', '.join(missing)}")
            if "seed" in merged:
                raise SweepError("--seed is the root seed of the sweep")
            merged.update(self._watched())
            where = (" at " + ", ".join(f"{option_name(k)} {v!r}" for k, v in values.items())
                     if values else "")
            seed = None if self.seed is None else sweep_point_seed(self.seed, point)
            config = _point_config(merged, seed, where)
            if config.init == "array":
                raise SweepError("--init: a sweep draws its initial positions (no arrays)")
            if config.weight_draws != "shared":
                raise SweepError(
                    "--weight-draws: a sweep supports 'shared' draws only (every system of a "
                    "grid point is an independent start with the point's weights)")
            frames = facts(config).frames  # counted before the times are made
            if frames > MAX_FRAMES:
                raise SweepError(f"{frames:.3g} save times{where}; a sweep stores every "
                                 f"system's statistics at each, at most {MAX_FRAMES} "
                                 "(--save-every, --save-times)")
            t = config.output_times()
            if times is None:
                times = t
            elif t.shape != times.shape or not np.array_equal(t, times):
                raise SweepError(
                    "every grid point must save at the same times (the time axis is shared); "
                    f"the save times differ{where} (T, dt, save_every or save_times)")
            configs.append(config)
        if self.positions and len({(c.n, c.d) for c in configs}) > 1:
            raise SweepError("--positions needs the same --n and --d at every grid point")
        return tuple(configs)

    def _watched(self) -> dict[str, Any]:
        """The run settings every grid point's configuration takes from the sweep
        (none where unset, so that those configurations stay as they were)."""
        out: dict[str, Any] = {}
        if self.merge_events:
            out["merge_events"] = True
        if self.until_clusters is not None:
            out["until_clusters"] = self.until_clusters
        return out

    @property
    def times(self) -> np.ndarray:
        """Save times shared by every grid point, shape (frames,)."""
        return self._configs[0].output_times()

    @property
    def max_n(self) -> int:
        """Largest number of tokens on the grid (the length of the ``clusters`` axis)."""
        return max(c.n for c in self._configs)

    # ---------------------------------------------------------- resolution
    def resolved(self) -> SweepSpec:
        """A copy with a concrete root seed (fresh entropy when ``seed`` is None)."""
        if self.seed is not None:
            return self
        return dataclasses.replace(self, seed=fresh_seed(), _configs=())

    def replace(self, **changes: Any) -> SweepSpec:
        """A validated copy with some attributes changed."""
        return dataclasses.replace(self, **changes, _configs=())

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description (round trip through :meth:`from_dict`)."""
        out = {
            "base": {k: _jsonable(v) for k, v in self.base.items()},
            "axes": [[k, _jsonable(v)] for k, v in self.axes],
            "runs": self.runs,
            "deltas": list(self.deltas),
            "seed": None if self.seed is None else str(self.seed),
            "eps": self.eps,
            "levels": list(self.levels),
            "positions": self.positions,
        }
        return {**out, **self._watched()}  # unset: the description of before

    def to_json(self) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(), sort_keys=True)

    def layout(self) -> SweepLayout:
        """What the sweep file of this (resolved) sweep holds
        (:class:`particles.io.sweep.SweepLayout`)."""
        from particles.io.sweep import SweepLayout  # the file layer loads h5py: not for grids

        if self.seed is None:
            raise SweepError("a sweep is resolved (concrete seed) before its file is made")
        first = self.config(0)
        return SweepLayout(
            spec_json=self.to_json(), seed=int(self.seed),
            base_json=json.dumps(self.to_dict()["base"], sort_keys=True), axes=self.axes,
            runs=self.runs, times=self.times, deltas=self.deltas, levels=self.levels,
            eps=self.eps, max_n=self.max_n, max_pairs=self.max_n * (self.max_n - 1) // 2,
            configs=tuple(self.config(p).to_json() for p in range(self.points)),
            positions=(first.n, first.d) if self.positions else None,
            merges=self.merge_events, until=self.until_clusters is not None)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepSpec:
        """Inverse of :meth:`to_dict`.

        Raises
        ------
        SweepError
            Not the description of a sweep (one line).
        """
        try:
            # older files recorded the stops (and merge events) of single runs,
            # which sweeps ignored
            base = {k: tuple(v) if isinstance(v, list) else v for k, v in data["base"].items()
                    if k not in RUN_STOPS}
            return cls(
                base=base,
                axes=tuple((k, tuple(v)) for k, v in data["axes"]),
                runs=int(data["runs"]),
                deltas=tuple(data["deltas"]),
                seed=None if data.get("seed") is None else int(data["seed"]),
                eps=float(data["eps"]),
                levels=tuple(data["levels"]),
                positions=bool(data.get("positions", False)),
                merge_events=data.get("merge_events", False),
                until_clusters=data.get("until_clusters"),
            )
        except SweepError as exc:
            raise SweepError(f"the sweep description is not valid: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SweepError(f"the sweep description is damaged "
                             f"({type(exc).__name__}: {exc})") from None

    @classmethod
    def from_json(cls, text: str) -> SweepSpec:
        """Inverse of :meth:`to_json`.

        Raises
        ------
        SweepError
            Not the JSON description of a sweep (one line).
        """
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise SweepError(f"the sweep description is damaged ({exc})") from None
        return cls.from_dict(data)

    @classmethod
    def from_values(cls, values: Mapping[str, tuple[Any, ...]], *, axes: tuple[str, ...] = (),
                    **kwargs: Any) -> SweepSpec:
        """A spec from field -> values (as :func:`parse_value` gives): a field with
        several values, or named in ``axes``, is an axis (in the order of
        ``values``); the others are fixed."""
        base, grid = {}, []
        for k, v in values.items():
            v = tuple(v)
            if len(v) > 1 or k in axes:
                grid.append((k, v))
            else:
                base[k] = v[0]
        return cls(base=base, axes=tuple(grid), **kwargs)
