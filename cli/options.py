"""Options shared by the commands, and the parsing of their values.

Choices come from the library's registries (models, kernels, integrators,
initial conditions), never from lists written here.  Every value is checked
before any work starts; a bad one is a one-line click error (exit code 2).
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import numpy as np

from particles.config import (
    NAMED_MATRICES,
    SimulationConfig,
    parse_init,
)
from particles.observables import PAIRWISE_DEFAULT_MAX_N
from particles.sphere import INITIAL_CONDITIONS

#: configuration fields that every run needs (no default in SimulationConfig).
REQUIRED = ("n", "d", "beta")

#: the keys a --config TOML file may hold: exactly the SimulationConfig fields.
CONFIG_KEYS = tuple(f.name for f in dataclasses.fields(SimulationConfig))

#: initial conditions given by name (``array`` is given as PATH.npy instead).
NAMED_INITS = tuple(name for name, c in INITIAL_CONDITIONS.items() if c.sample is not None)


def option_name(field: str) -> str:
    """The command-line spelling of a configuration field: ``save_every`` -> ``--save-every``."""
    return "--" + field.replace("_", "-")


_API_NAME = re.compile(r"(?<![\w'-])(" + "|".join(sorted(CONFIG_KEYS, key=len, reverse=True))
                       + r")(?=(=| must\b| is\b))")


def cli_message(text: str) -> str:
    """A library message in command-line names: ``usa_scale must be 'n' for
    kernel='rbf'`` -> ``--usa-scale must be 'n' for --kernel='rbf'``.

    Configuration fields followed by ``=``, ``must`` or ``is`` are renamed
    (other words that happen to equal a field name are left alone).
    """
    return _API_NAME.sub(lambda m: option_name(m.group(1)), text)


def output_refused(exc: Exception, option: str = "--out") -> click.BadParameter:
    """An output path the library refused (:class:`~particles.errors.OutputPathError`)
    as click's one line on ``option``, without the API's ``(overwrite=True)``."""
    return click.BadParameter(str(exc).replace(" (overwrite=True)", ""),
                              param_hint=f"'{option}'")


#: ``click.Context.meta`` key of the files a command's values were read from.
READ_FILES = "particles.read_files"


def load_npy(value: str | Path, what: str) -> np.ndarray:
    """Read a ``.npy`` array (no pickles), or raise ValueError with a one-line message.

    The file is noted in the current command's context (:data:`READ_FILES`):
    an input its output may not replace (:func:`named_files`).
    """
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta.setdefault(READ_FILES, []).append(Path(value))
    try:
        return np.load(Path(value), allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(
            f"cannot read {what} from {value!s}: {' '.join(str(exc).split())}"
        ) from None


def named_files(ctx: click.Context, outputs: tuple[str, ...] = ("out",)) -> list[Path]:
    """The existing files a command reads: those its arrays were loaded from
    (:func:`load_npy`), and those its options name, outputs aside: a path, or a
    path inside a value (``density:FILE``, ``particles:file=PATH,bandwidth=H``).

    For the check that its output is none of them
    (:func:`particles.paths.check_not_input`).
    """
    found = [path for path in ctx.meta.get(READ_FILES, []) if path.is_file()]
    for key, value in ctx.params.items():
        if key in outputs:
            continue
        for item in value if isinstance(value, list | tuple) else (value,):
            if not isinstance(item, str | Path):
                continue
            text = str(item)
            candidates = [text, text.partition(":")[2]]
            candidates += [part.partition("=")[2] for part in candidates[1].split(",")]
            found += [Path(c) for c in candidates if c and os.path.isfile(c)]
    return found


# ------------------------------------------------------------ value parsing
@dataclasses.dataclass(frozen=True)
class InitSpec:
    """A parsed ``--init``: a configuration name, and positions for ``PATH.npy``."""

    init: str
    x0: np.ndarray | None = None


def _is_path(value: str) -> bool:
    """A ``PATH.npy`` of positions (not a named init, whose parameter may be a file)."""
    name = value.partition(":")[0]
    text = name in INITIAL_CONDITIONS and INITIAL_CONDITIONS[name].text
    return not text and (value.endswith(".npy") or "/" in value)


def parse_init_value(value: str, base: Path | None = None) -> InitSpec:
    """Parse ``uniform|orthogonal|equispaced|cap:EPS|vmf:KAPPA|density:FILE|PATH.npy``.

    Raises
    ------
    ValueError
        One-line message.
    """
    if _is_path(value):
        path = Path(value) if base is None else base / value
        x0 = load_npy(path, "initial positions")
        if x0.ndim not in (2, 3) or not np.issubdtype(x0.dtype, np.number) or (
            np.iscomplexobj(x0)
        ):
            raise ValueError(
                f"initial positions in {value} must be a real numeric array of shape "
                f"(n, d) or (batch, n, d), got {x0.dtype} {x0.shape}"
            )
        return InitSpec("array", x0)
    name, _ = parse_init(value)
    if name == "array":
        raise ValueError("init 'array' is given as PATH.npy")
    return InitSpec(value)


def parse_matrix_value(value: Any, base: Path | None = None) -> Any:
    """Parse a ``--Q/--K/--V`` value: ``identity``, ``minus-identity`` or ``PATH.npy``.

    Nested lists (from a TOML file) pass through; their shape is checked by
    :class:`~particles.config.SimulationConfig`.
    """
    if not isinstance(value, str):
        return value
    name = value.replace("-", "_")
    if name in NAMED_MATRICES:
        return name
    if _is_path(value):
        a = load_npy(value if base is None else base / value, "a matrix")
        if not np.issubdtype(a.dtype, np.number):
            raise ValueError(f"matrix in {value} must be numeric, got {a.dtype}")
        return a
    named = ", ".join(n.replace("_", "-") for n in NAMED_MATRICES)
    raise ValueError(f"must be one of {named} or a PATH.npy file, got {value!r}")


class _Parsed(click.ParamType):
    """A click type around one of the parsers above."""

    def __init__(self, name: str, parse: Callable[[str], Any]) -> None:
        self.name = name
        self._parse = parse

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        try:
            return self._parse(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class _NoStop:
    """``--until-clusters none`` / ``--max-wall none``: no such stop, given (a None
    option means "not given": on ``--resume``, the stored value)."""

    def __repr__(self) -> str:
        return "none"


#: the value of a stop option given as ``none``.
NO_STOP = _NoStop()


def parse_stop_value(value: str) -> int | float | _NoStop:
    """Parse a stop's value: ``none`` (:data:`NO_STOP`) or a number (the
    configuration checks its range)."""
    text = value.strip()
    if text.lower() == "none":
        return NO_STOP
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"must be a number or 'none' (no such stop), got {value!r}") from None


INIT = _Parsed("init", parse_init_value)
MATRIX = _Parsed("matrix", parse_matrix_value)
STOP = _Parsed("stop", parse_stop_value)


# ------------------------------------------------------------------ options
#: the CLI's parsers of values that are not plain numbers or names
#: (:attr:`particles.config.Option.parse`).
PARSERS: dict[str, click.ParamType] = {"init": INIT, "matrix": MATRIX, "stop": STOP}


def _option(f: dataclasses.Field) -> Callable:
    """The click option of a configuration field, from its metadata
    (:class:`particles.config.Option`: help text, type, the registry of its
    choices).  Its default is None: a value not given comes from --config,
    then from SimulationConfig's defaults."""
    spec = f.metadata["option"]
    if spec.type is bool:  # --merge-events / --no-merge-events; unset: None
        name = option_name(f.name)
        return click.option(f"{name}/--no-{name[2:]}", f.name, default=None,
                            help=spec.text())
    if spec.parse is not None:
        kind = PARSERS[spec.parse]
    elif spec.choices is not None:
        kind = click.Choice(list(spec.choices()))
    else:
        kind = spec.type
    return click.option(option_name(f.name), f.name, type=kind, help=spec.text(),
                        metavar=spec.metavar)


#: (field, click decorator) for every configuration field that is an option of
#: `simulate` (the fields with :class:`particles.config.Option` metadata).
CONFIG_OPTIONS: list[tuple[str, Callable]] = [
    (f.name, _option(f)) for f in dataclasses.fields(SimulationConfig) if "option" in f.metadata
]


class NamesType(click.ParamType):
    """Comma-separated registry names, checked by ``check(value) -> tuple``."""

    def __init__(self, name: str, check: Callable[[Any], tuple]) -> None:
        self.name = name
        self._check = check

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            return self._check(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


#: what ``--help`` shows as the default of a field whose default is None.
_NONE_DEFAULTS = {
    "save_times": "none: every --save-every steps",
    "batch": "none: one system",
    "seed": "fresh entropy",
    "omega": "none: all zero",
    "integrator": "rk4; heun with --noise",
    "layer_time": "none: one draw",
    "observables": f"pairwise up to n = {PAIRWISE_DEFAULT_MAX_N}, order beyond",
}


def default_text(field: str) -> str | None:
    """The default of a configuration field as ``--help`` shows it (None: required)."""
    f = {f.name: f for f in dataclasses.fields(SimulationConfig)}[field]
    if f.default is dataclasses.MISSING:
        return None
    if f.default is None:
        return _NONE_DEFAULTS.get(field, "none")
    if isinstance(f.default, str):
        return f.default.replace("_", "-") if field in ("Q", "K", "V") else f.default
    return f"{f.default:g}" if isinstance(f.default, float) else str(f.default)


def _with_default(field: str, decorate: Callable) -> Callable:
    """``decorate``, with the option's ``--help`` showing SimulationConfig's default
    (the option's own default is None: an unset value comes from --config first)."""

    def wrapped(f: Callable) -> Callable:
        f = decorate(f)
        text = default_text(field)
        if text is not None:
            f.__click_params__[-1].show_default = text
        return f

    return wrapped


def some_config_options(*fields: str) -> Callable[[Callable], Callable]:
    """Add the configuration options of the given fields (see :data:`CONFIG_OPTIONS`)."""
    shared = dict(CONFIG_OPTIONS)

    def decorate(f: Callable) -> Callable:
        for name in reversed(fields):
            f = _with_default(name, shared[name])(f)
        return f

    return decorate


def config_options(f: Callable) -> Callable:
    """Add every configuration option (see :data:`CONFIG_OPTIONS`) to a command."""
    for name, decorate in reversed(CONFIG_OPTIONS):
        f = _with_default(name, decorate)(f)
    return f


# ------------------------------------------------------- building a config
def read_config_file(path: Path) -> dict[str, Any]:
    """Read a ``--config`` TOML file: keys are SimulationConfig field names.

    ``init``, ``Q``, ``K``, ``V`` take the command-line spellings; paths are
    relative to the file.  ``init`` becomes :class:`InitSpec`.

    Raises
    ------
    click.BadParameter
        Unreadable TOML, unknown keys, or a value of ``init``, ``Q``, ``K``,
        ``V`` or ``masses`` that cannot be read (naming its key).
    """
    hint = "'--config'"
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint=hint) from None
    except UnicodeDecodeError as exc:
        raise click.BadParameter(
            f"{path}: not a UTF-8 text file (byte {exc.start}: {exc.reason})", param_hint=hint
        ) from None
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        raise click.BadParameter(
            f"{path}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(CONFIG_KEYS)}",
            param_hint=hint,
        )
    base = path.parent
    for key in ("init", "Q", "K", "V", "masses"):
        if key in data:
            try:
                data[key] = _file_value(key, data[key], base)
            except ValueError as exc:  # naming the key, as build_config does
                raise click.BadParameter(str(exc), param_hint=f"'{key}' in {path}") from None
    return data


def _file_value(key: str, value: Any, base: Path) -> Any:
    """A ``--config`` value of ``init``, a matrix or ``masses``, read (paths relative
    to ``base``) or checked to be numbers.

    Raises
    ------
    ValueError
        One line, saying what the key takes.
    """
    if key == "init":
        return parse_init_value(value, base) if isinstance(value, str) else value
    if key != "masses" and isinstance(value, str):
        return parse_matrix_value(value, base)
    try:  # nested lists of numbers; the shape is checked by SimulationConfig
        np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        what = ("a list of numbers, one per token" if key == "masses" else
                f"identity, minus-identity, a PATH.npy file (as --{key}) or a (d, d) "
                "list of rows of numbers")
        raise ValueError(f"{key} must be {what}, got {value!r}") from None
    return value


def given_values(options: dict[str, Any], config_file: Path | None) -> dict[str, Any]:
    """The configuration values given: command-line options over the --config file."""
    from_file = read_config_file(config_file) if config_file else {}
    return {**from_file, **{k: v for k, v in options.items() if v is not None}}


def check_exclusive(values: dict[str, Any]) -> None:
    """Refuse command-line options that exclude each other (``--save-every`` with
    ``--save-times``).  A --config file may hold both keys (``save_times`` wins, as in
    :class:`~particles.config.SimulationConfig`).

    Raises
    ------
    click.UsageError
    """
    if values.get("save_every") is not None and values.get("save_times") is not None:
        raise click.UsageError(
            "--save-every and --save-times exclude each other (--save-times gives "
            "the output times)"
        )


def check_sizes(values: dict[str, Any]) -> None:
    """Refuse, before a configuration is built, sizes that cannot fit in memory.

    ``--n 1e12``, ``--d 1e6``, ``--heads 1e12`` or ``--save-times lin:0:1:1e12``
    would otherwise fail with a MemoryError while building or running it.

    Raises
    ------
    click.UsageError
    """
    from particles.runs.estimate import check_fits, estimate_values

    try:
        check_fits(estimate_values(values))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def build_config(
    options: dict[str, Any], config_file: Path | None
) -> tuple[SimulationConfig, np.ndarray | None]:
    """The configuration of `simulate`: command-line options over the --config file.

    Parameters
    ----------
    options : dict
        Field name -> value from the command line (None when not given).
    config_file : Path, optional
        TOML file of field values.

    Returns
    -------
    config : SimulationConfig
    x0 : ndarray or None
        Initial positions from ``--init PATH.npy``.

    Raises
    ------
    click.BadParameter, click.UsageError
        Any invalid or missing value, naming the option (or the file key).
    """
    from_file = read_config_file(config_file) if config_file else {}
    given = {k: v for k, v in options.items() if v is not None}
    values = {k: None if v is NO_STOP else v for k, v in {**from_file, **given}.items()}

    def hint(field: str) -> str:
        if field in given or field not in from_file:
            return f"'{option_name(field)}'"
        return f"'{field}' in {config_file}"

    if values.get("model") == "kuramoto":
        # beta only enters Kuramoto's recorded energy: E_0 = r^2 / 2 unless given
        values.setdefault("beta", 0.0)
    missing = [option_name(k) for k in REQUIRED if k not in values]
    if missing:
        raise click.UsageError(
            f"missing option(s) {', '.join(missing)}"
            + (f" (or key(s) in {config_file})" if config_file else "")
        )
    x0 = None
    init = values.get("init")
    if isinstance(init, InitSpec):
        values["init"], x0 = init.init, init.x0
    try:
        return SimulationConfig(**values), x0
    except (ValueError, TypeError) as exc:
        field = getattr(exc, "field", None)
        # the message in the names the user typed: options, or the file's keys
        from_toml = field in from_file and field not in given
        text = str(exc) if from_toml else cli_message(str(exc))
        if field in CONFIG_KEYS:
            raise click.BadParameter(text, param_hint=hint(field)) from None
        raise click.UsageError(text) from None
