"""Validated, frozen simulation configuration.

:class:`SimulationConfig` is built once, checked once (every bad value raises
``ValueError`` naming the argument and what is allowed), and then passed
around unchanged.  It round-trips through JSON (:meth:`to_dict` /
:meth:`from_dict`) so every output file records the full resolved run.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from particles.errors import ConfigError, invalid
from particles.seeds import fresh_seed
from particles.sphere import INITIAL_CONDITIONS

# The registries of particles.fields, integrators and observables (layer 2)
# and of particles.models (this layer, which imports nothing of this module)
# are imported where they are used: importing this module (and so the file
# layer) loads no compiled code; validating a configuration does.


def __getattr__(name: str) -> Any:
    """Names re-exported from the registries, loaded on first use."""
    if name == "USA_SCALES":
        from particles.fields import USA_SCALES

        return tuple(USA_SCALES)
    if name in ("OMEGA_DISTRIBUTIONS", "parse_omega", "freeze_omega"):
        from particles.fields import frequencies

        return getattr(frequencies, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: initial conditions, name -> description (:data:`particles.sphere.INITIAL_CONDITIONS`).
INITS: dict[str, str] = {k: c.description for k, c in INITIAL_CONDITIONS.items()}

#: most attention heads of a run (Transformers use tens).
MAX_HEADS = 10**4

#: named matrices accepted for Q, K, V.
NAMED_MATRICES = ("identity", "minus_identity")

#: what a run keeps of the positions (``positions=``), name -> description.
POSITIONS: dict[str, str] = {
    "all": "every saved frame",
    "final": "only the last saved frame (observables at every frame)",
    "none": "no frame (observables only; files keep the latest frame to resume from)",
}

#: default chord distance at which tokens are one (four ulps of 1; see
#: :mod:`particles.models.collapse`).
COLLAPSE_TOL = 4 * float(np.finfo(np.float64).eps)
#: the largest distance a USA step may move a token: its square is the largest float64.
MAX_STEP_MOVE = float(np.sqrt(np.finfo(np.float64).max))

#: the stopping conditions and events of a run, and their defaults (not written
#: in a file's configuration when unset: files without them stay byte-identical).
STOP_DEFAULTS: dict[str, Any] = {"until_clusters": None, "max_wall": None,
                                 "merge_events": False}

#: how attention sums are taken (``summation=``), name -> description; ``auto``
#: resolves to one of the others (:func:`particles.fields.spectral.choose`).
SUMMATIONS: dict[str, str] = {
    "direct": "n^2 kernel evaluations per drift",
    "spectral": "zonal kernels on S^1 and S^2 by Bessel series (O(n K)), exact to tol",
    "auto": "the faster of the two by a cost model (recorded as the one chosen)",
}

#: (lazy, see ``__getattr__``) ``USA_SCALES``: the USA normalisations, keys of
#: :data:`particles.fields.USA_SCALES`; ``OMEGA_DISTRIBUTIONS``, ``parse_omega``,
#: ``freeze_omega``: from :mod:`particles.fields.frequencies`.


class _KernelParameters(Mapping):
    """kernel -> the name of its parameter, a live view of the kernel registry."""

    def __getitem__(self, name: str) -> str:
        from particles.fields import KERNELS

        return KERNELS[name].parameter

    def __iter__(self):
        from particles.fields import KERNELS

        return iter(KERNELS)

    def __len__(self) -> int:
        from particles.fields import KERNELS

        return len(KERNELS)

    def __repr__(self) -> str:
        return repr(dict(self))


#: kernel -> the name of its parameter (DESIGN.md section 1), from
#: :data:`particles.fields.KERNELS`.
KERNEL_PARAMETERS: Mapping[str, str] = _KernelParameters()


def _fail(name: str, allowed: str, got: Any) -> None:
    raise invalid(name, allowed, got)


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        _fail(name, f"an integer >= {minimum}", value)
    return int(value)


def _check_float(name: str, value: Any, *, minimum: float, strict: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        _fail(name, "a number", value)
    if isinstance(value, bool) or not math.isfinite(v) or v < minimum or (strict and v == minimum):
        _fail(name, f"a finite number {'>' if strict else '>='} {minimum:g}", value)
    return v


def _check_choice(name: str, value: Any, choices) -> str:
    if value not in choices:
        _fail(name, "one of " + ", ".join(repr(c) for c in choices), value)
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
        _fail("init", "one of " + ", ".join(INITIAL_CONDITIONS), init)
    name, _, arg = init.partition(":")
    if name not in INITIAL_CONDITIONS:
        forms = ", ".join(f"{k}:{c.parameter}" for k, c in INITIAL_CONDITIONS.items()
                          if c.parameter)
        _fail("init", "one of " + ", ".join(INITIAL_CONDITIONS) + f" ({forms})", init)
    entry = INITIAL_CONDITIONS[name]
    if entry.text:
        if not arg:
            _fail("init", f"'{name}:{entry.parameter}' with {entry.allowed}", init)
        return name, arg
    if entry.parameter is not None:
        if not arg:
            _fail("init", f"'{name}:VALUE' with a number", init)
        try:
            value = float(arg)
        except ValueError:
            _fail("init", f"'{name}:VALUE' with a number", init)
        if entry.accepts is not None and not entry.accepts(value):
            _fail("init", f"'{name}:{entry.parameter}' with {entry.allowed}", init)
        return name, value
    if arg:
        _fail("init", f"'{name}' without a parameter", init)
    return name, None


def check_coupling(value: Any) -> float:
    """``value`` as a float coupling strength (any finite number); ValueError otherwise."""
    try:
        c = float(value)
    except (TypeError, ValueError):
        _fail("coupling", "a finite number", value)
    if isinstance(value, bool) or not math.isfinite(c):
        _fail("coupling", "a finite number", value)
    return c


def check_coupling_like(name: str, value: Any) -> float:
    """``value`` as a finite float (any sign); ValueError naming ``name`` otherwise."""
    try:
        c = float(value)
    except (TypeError, ValueError):
        _fail(name, "a finite number", value)
    if isinstance(value, bool) or not math.isfinite(c):
        _fail(name, "a finite number", value)
    return c


# ------------------------------------------------------ command-line options
@dataclass(frozen=True)
class Option:
    """How a configuration field is given on the command line (its field metadata).

    The CLI builds its options from these (:func:`particles_cli.options.config_options`):
    ``--save-every`` for ``save_every``, with this help text, type and choices.

    Attributes
    ----------
    help : str or callable
        The help text; a callable builds it when asked (texts listing a
        registry's entries).  ``{choices}`` is replaced by the entries of
        :attr:`choices`, each as :attr:`item` says.
    type : type, optional
        ``int``, ``float`` or ``str`` of a plain value.
    choices : callable, optional
        Returns the registry (name -> entry) the value is one of.
    item : str
        How one entry is listed: ``str.format`` of ``name`` and ``entry``.
    parse : str, optional
        A value the CLI parses itself: ``"init"`` (a name or PATH.npy),
        ``"matrix"`` (a named matrix or PATH.npy), ``"stop"`` (a number, or
        ``none``: no such stop, which a resume may give over a stored one).
    metavar : str, optional
    """

    help: str | Callable[[], str]
    type: type | None = None
    choices: Callable[[], Mapping[str, Any]] | None = None
    item: str = "{name} ({entry})"
    parse: str | None = None
    metavar: str | None = None

    def text(self) -> str:
        """The help text, with the registry's entries listed."""
        text = self.help() if callable(self.help) else self.help
        if "{choices}" in text:
            listed = "; ".join(self.item.format(name=k, entry=v)
                               for k, v in self.choices().items())
            text = text.replace("{choices}", listed)
        return text


def option(help: str | Callable[[], str], type: type | None = None, **kw: Any) -> dict:
    """Field metadata making a configuration field a command-line option (:class:`Option`)."""
    return {"option": Option(help, type, **kw)}


def _registry(module: str, name: str) -> Callable[[], Mapping[str, Any]]:
    """The registry ``module.name``, imported when asked (validating a value loads
    the compiled code's modules; declaring the fields must not)."""
    import importlib

    return lambda: getattr(importlib.import_module(module), name)


def _init_help() -> str:
    def form(name: str) -> str:
        param = INITIAL_CONDITIONS[name].parameter
        return f"{name}:{param}" if param else name

    names = " | ".join(form(k) for k, c in INITIAL_CONDITIONS.items()
                       if c.sample is not None or c.text)
    return (f"Initial condition: {names} (angles drawn from a mean-field file's initial "
            "density) | PATH.npy of shape (n, d) or (batch, n, d).")


def _omega_help() -> str:
    from particles.fields.frequencies import OMEGA_DISTRIBUTIONS

    return ("Kuramoto natural frequencies (--model kuramoto): "
            + " | ".join(f"{k}:WIDTH[:CENTER]" for k in OMEGA_DISTRIBUTIONS)
            + ", drawn with the seed.")


def _observables_help() -> str:
    from particles.observables import OBSERVERS, PAIRWISE_DEFAULT_MAX_N, SPECTRAL_PAIRWISE_MAX_N

    return ("Observers recorded at every frame: "
            + "; ".join(f"{k} ({o.cost}: {o.description})" for k, o in OBSERVERS.items())
            + f". Default: pairwise up to n = {PAIRWISE_DEFAULT_MAX_N} ({SPECTRAL_PAIRWISE_MAX_N} "
            "with the spectral summation; or on the circle at beta = 0), order beyond.")


_SAVE_TIMES_HELP = ("a sequence of times, 't1,t2,...', 'log:START:STOP:NUM' (log-spaced, "
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
        _fail("save_times", _SAVE_TIMES_HELP, spec)


def _freeze_matrix(name: str, value: Any, d: int) -> str | tuple:
    if value is None:
        return "identity"
    if isinstance(value, str):
        _check_choice(name, value, NAMED_MATRICES)
        return value
    a = np.asarray(value, dtype=np.float64)
    if a.shape != (d, d):
        _fail(name, f"a ({d}, {d}) matrix or one of {NAMED_MATRICES}", f"array of shape {a.shape}")
    if not np.all(np.isfinite(a)):
        _fail(name, "a finite matrix", "a matrix with NaN or inf")
    return tuple(tuple(float(x) for x in row) for row in a)


@dataclass(frozen=True)
class SimulationConfig:
    """Everything that defines a run.

    Parameters
    ----------
    n, d : int
        Number of tokens and ambient dimension (tokens live on S^{d-1}).
    beta : float
        Inverse temperature, ``0 <= beta <= 1e4``.
    model : str
        Key of :data:`particles.models.MODELS` (``"sa"``, ``"usa"``,
        ``"kuramoto"``; the last needs ``d = 2`` and ignores ``beta``, which
        then only enters the recorded energy).
    kernel : str
        Attention kernel, key of :data:`particles.fields.KERNELS`.
    usa_scale : {"n", "n_exp_beta"}
        USA normalisation: ``1/n`` or ``e^{-beta}/n`` (time change).
    integrator : str, optional
        Key of :data:`particles.integrators.INTEGRATORS`; None picks ``"rk4"``,
        or :data:`particles.integrators.NOISE_DEFAULT` (``"heun"``) when
        ``noise > 0`` (the resolved name is recorded).  With ``noise > 0`` it
        must be a stochastic stepper (``"em"``, ``"heun"``).
    dt : float
        Step size (initial step for adaptive integrators).
    T : float
        Final time.
    save_every : int
        Steps between saved frames (adaptive: frames every ``save_every * dt``).
    save_times : tuple of float or str, optional
        Explicit increasing output times in ``[0, T]``; overrides ``save_every``.
        A string is expanded once: ``"log:START:STOP:NUM"`` (log-spaced, the
        natural grid for metastable runs), ``"lin:START:STOP:NUM"`` or
        ``"t1,t2,..."``.
    batch : int, optional
        Number of independent systems (ensemble); None for one system.
    seed : int, optional
        Root seed; None draws fresh entropy, recorded by :meth:`resolved`.
    init : str
        Initial condition (see :data:`INITS`).
    Q, K, V : str or tuple of tuples
        ``"identity"``, ``"minus_identity"`` or a d-by-d matrix.
    masses : tuple of float, optional
        Token masses ``m_j > 0`` (ones when None).
    rtol, atol : float
        Tolerances of adaptive integrators.
    max_steps : int
        Upper bound on the steps of one run (guards adaptive runs that stall).
    coupling : float
        Kuramoto coupling strength ``c`` (``model="kuramoto"`` only; any
        finite number, negative is repulsive).  Named so because ``K`` is the
        key matrix.
    omega : str or tuple of float, optional
        Kuramoto natural frequencies (``model="kuramoto"`` only): None for
        all zero, a distribution ``"NAME:WIDTH"`` / ``"NAME:WIDTH:CENTER"``
        (see :data:`OMEGA_DISTRIBUTIONS`) drawn from the weights child of the
        seed (so the seed reproduces them; see
        :func:`particles.fields.kuramoto.natural_frequencies`), or ``n``
        explicit numbers.  One set of frequencies is shared by every system
        of a batch, unless ``weight_draws="independent"`` (a distribution
        only): then each system draws its own.
    tau, gamma : float
        Parameters of the ``rbf``/``l2`` and ``quadratic`` kernels (see
        :data:`particles.fields.KERNELS`); 1.0 unless the kernel uses them.
    weights, value_weights : str
        Random ensembles of ``Q^T K`` and of ``V`` (keys of
        :data:`particles.fields.weights.QK_WEIGHTS` and ``V_WEIGHTS``), drawn
        from the weights child of the seed; ``"given"`` keeps Q, K, V.
    heads : int
        Attention heads, each with its own (drawn) Q, K, V; outputs summed.
    normalization : str
        ``"softmax"`` (SA) or ``"sinkhorn"`` (doubly stochastic, model sa,
        kernel edp), see :data:`particles.fields.NORMALIZATIONS`.
    sinkhorn_iters, sinkhorn_tol : int, float
        Iteration cap and tolerance of the Sinkhorn normalisation.
    layer_time : float, optional
        Redraw the random weights every ``layer_time`` units of time (layer
        ``l`` holds on ``[l * layer_time, (l + 1) * layer_time)``).
    weight_draws : {"shared", "independent"}
        Whether the systems of a batch share each layer's random weights (and
        Kuramoto's drawn frequencies) or draw their own (see
        :mod:`particles.fields.weights`).
    observables : tuple of str or str, optional
        Observers recorded at every frame, keys of
        :data:`particles.observables.OBSERVERS` (a sequence or ``"a,b"``).
        None picks :func:`particles.observables.default_observers` (the
        pairwise set up to ``PAIRWISE_DEFAULT_MAX_N`` tokens, the O(n)
        ``order`` set beyond); the resolved names are recorded.
    positions : {"all", "final", "none"}
        Which positions a run keeps (:data:`POSITIONS`): every saved frame
        (the default), only the last one, or none (observables only; a file
        still holds the latest frame as its resume point, see
        :mod:`particles.io.h5md`).
    noise : float
        Noise amplitude ``sigma >= 0``: every token follows
        ``dX_i = f_i dt + sigma P_{X_i} o dB_i`` (Stratonovich; independent
        Brownian motions B_i in R^d), i.e. Brownian motion on S^{d-1} with
        generator ``f . grad + (sigma^2 / 2) Laplacian`` (on the circle
        ``d theta_i = f_i dt + sigma dW_i``, diffusion coefficient
        ``D = sigma^2 / 2``).  The noise is drawn from the seed (counter-based,
        see :mod:`particles.integrators.noise`).  0 (the default): the
        deterministic flow, bit for bit.
    summation, tol, collapse_tol
        The spectral summation and collapsed clusters (see the options' help
        and :mod:`particles.fields.spectral`, :mod:`particles.models.collapse`).
    until_clusters : int, optional
        Stop at the first saved frame at which every system has at most this
        many clusters (:func:`particles.events.cluster_counts`, eps 0.05); the
        run is complete there, recorded as ``stop_reason = "until_clusters"``.
    max_wall : float, optional
        Seconds of wall time after which a run pauses at its next saved frame:
        a file is kept incomplete (``stop_reason = "max_wall"``) and resuming
        continues it with a new budget; in memory the trajectory so far is
        returned, ``complete`` False.
    merge_events : bool
        Locate each drop of the cluster count between saved frames by
        bisection (:mod:`particles.events`) and record the merges
        (``Trajectory.merge_events``; ``/events/merges`` in a file).
    """

    n: int = field(metadata=option("Number of tokens.", int))
    d: int = field(metadata=option("Ambient dimension (tokens on S^{d-1}).", int))
    beta: float = field(metadata=option("Inverse temperature.", float))
    model: str = field(default="sa", metadata=option(
        "Dynamics: {choices}.", choices=_registry("particles.models", "MODELS"),
        item="{name} ({entry.description})"))
    kernel: str = field(default="edp", metadata=option(
        "Attention kernel: {choices}.", choices=_registry("particles.fields", "KERNELS"),
        item="{name} = {entry}"))
    usa_scale: str = field(default="n", metadata=option(
        "USA normalisation 1/n or e^-beta/n.",
        choices=_registry("particles.fields", "USA_SCALES")))
    integrator: str | None = field(default=None, metadata=option(
        "Integrator: {choices}.", choices=_registry("particles.integrators", "INTEGRATORS"),
        item="{name} ({entry.description})"))
    dt: float = field(default=0.01, metadata=option(
        "Step size (initial step for adaptive integrators).", float))
    T: float = field(default=10.0, metadata=option("Final time.", float))
    save_every: int = field(default=10, metadata=option("Steps between saved frames.", int))
    save_times: tuple[float, ...] | None = field(default=None, metadata=option(
        "Output times instead of --save-every: log:START:STOP:NUM (log-spaced, for "
        "metastable runs), lin:START:STOP:NUM or t1,t2,...", str))
    batch: int | None = field(default=None, metadata=option(
        "Number of independent systems (ensemble).", int))
    seed: int | None = field(default=None, metadata=option(
        "Root seed (default: fresh entropy, recorded in the file).", int))
    init: str = field(default="uniform", metadata=option(_init_help, parse="init"))
    Q: Any = field(default="identity", metadata=option(
        "Query matrix: identity, minus-identity or a (d, d) PATH.npy.", parse="matrix"))
    K: Any = field(default="identity", metadata=option("Key matrix (as --Q).", parse="matrix"))
    V: Any = field(default="identity", metadata=option(
        "Value matrix (as --Q); minus-identity is the repulsive flow.", parse="matrix"))
    masses: tuple[float, ...] | None = None
    rtol: float = field(default=1e-6, metadata=option("Adaptive relative tolerance.", float))
    atol: float = field(default=1e-9, metadata=option("Adaptive absolute tolerance.", float))
    max_steps: int = 10**9
    coupling: float = field(default=1.0, metadata=option(
        "Kuramoto coupling strength c (--model kuramoto).", float))
    omega: str | tuple[float, ...] | None = field(default=None, metadata=option(
        _omega_help, str))
    tau: float = field(default=1.0, metadata=option(
        "Kernel parameter tau of rbf exp(-tau||q-k||^2) and l2 tau||q-k||.", float))
    gamma: float = field(default=1.0, metadata=option(
        "Offset gamma of the quadratic kernel (<q,k> + gamma)^2.", float))
    weights: str = field(default="given", metadata=option(
        "Q^T K ensemble (drawn from the seed): {choices}.",
        choices=_registry("particles.fields.weights", "QK_WEIGHTS")))
    value_weights: str = field(default="given", metadata=option(
        "V ensemble: {choices}.", choices=_registry("particles.fields.weights", "V_WEIGHTS")))
    heads: int = field(default=1, metadata=option(
        "Number of attention heads (outputs summed).", int))
    normalization: str = field(default="softmax", metadata=option(
        "Attention normalisation: {choices}.",
        choices=_registry("particles.fields", "NORMALIZATIONS")))
    sinkhorn_iters: int = field(default=100, metadata=option(
        "Maximum Sinkhorn iterations (1 is SA).", int))
    sinkhorn_tol: float = field(default=1e-9, metadata=option(
        "Sinkhorn tolerance on the column sums.", float))
    layer_time: float | None = field(default=None, metadata=option(
        "Redraw the random weights every LAYER_TIME units of time (one draw per layer; see "
        "--weight-draws).", float))
    weight_draws: str = field(default="shared", metadata=option(
        "Random weights of a batch: {choices}.",
        choices=_registry("particles.fields.weights", "WEIGHT_DRAWS")))
    observables: tuple[str, ...] | None = field(default=None, metadata=option(
        _observables_help, metavar="NAME[,NAME...]"))
    positions: str = field(default="all", metadata=option(
        "Positions kept: {choices}. The observables are kept at every frame; analyze and "
        "plot need all.", choices=lambda: POSITIONS))
    noise: float = field(default=0.0, metadata=option(
        "Noise amplitude sigma >= 0: Brownian motion on the sphere, dX = f dt + sigma P_X o "
        "dB (on the circle D = sigma^2/2); needs --integrator em or heun (the default with "
        "noise), drawn with the seed.", float))
    summation: str = field(default="direct", metadata=option(
        "How attention sums are taken: direct (n^2 kernel evaluations), spectral (zonal "
        "kernels on the circle and S^2 by Bessel series and spherical-harmonic transforms, "
        "O(n K), exact to --tol) or auto (the faster by a cost model; the choice is recorded).",
        choices=lambda: SUMMATIONS, item="{name}"))
    tol: float = field(default=1e-12, metadata=option(
        "Relative tolerance of the spectral summation on each drift evaluation (sets the "
        "series' truncation).", float))
    collapse_tol: float = field(default=COLLAPSE_TOL, metadata=option(
        "Tokens closer than this chord distance (default four ulps: equal to round-off) "
        "are integrated as one token carrying their summed mass, which is exact (coincident "
        "tokens stay coincident); not used with noise, per-layer random weights, V not a "
        "multiple of I, several heads, Sinkhorn, Kuramoto or ensembles. 0 switches it off.",
        float))
    until_clusters: int | None = field(default=None, metadata=option(
        "Stop at the first saved frame with at most this many clusters (eps = 0.05, the "
        "analysis default; every system of an ensemble); the file is complete there and "
        "the stop is recorded. Resume with a smaller value, or 'none' (no stop), to go "
        "on.", int, parse="stop", metavar="K|none"))
    max_wall: float | None = field(default=None, metadata=option(
        "Pause after this many seconds of wall time (at the next saved frame): the file "
        "is kept incomplete, marked paused, and --resume continues it with a new budget "
        "('none': no budget).", float, parse="stop", metavar="SECONDS|none"))
    merge_events: bool = field(default=False, metadata=option(
        "Locate every drop of the cluster count (eps = 0.05) between saved frames by "
        "bisection, to the integrator's tolerance, and store the merge times in the file "
        "(/events/merges) for analyze; one deterministic system only.", bool))

    def __post_init__(self) -> None:
        from particles.fields import KERNELS, check_usa_range
        from particles.fields import USA_SCALES as USA
        from particles.fields.weights import QK_WEIGHTS
        from particles.models import MODELS
        from particles.observables import OBSERVERS, default_observers

        set_ = object.__setattr__
        set_(self, "n", _check_int("n", self.n, 1))
        set_(self, "d", _check_int("d", self.d, 2))
        set_(self, "beta", _check_float("beta", self.beta, minimum=0.0))
        if self.beta > 1e4:
            _fail("beta", "a finite number in [0, 1e4]", self.beta)
        _check_choice("model", self.model, tuple(MODELS))
        _check_choice("kernel", self.kernel, tuple(KERNELS))
        _check_choice("usa_scale", self.usa_scale, tuple(USA))
        self._check_noise()
        set_(self, "dt", _check_float("dt", self.dt, minimum=0.0, strict=True))
        set_(self, "T", _check_float("T", self.T, minimum=0.0))
        set_(self, "save_every", _check_int("save_every", self.save_every, 1))
        if self.save_times is not None:
            try:
                spec = self.save_times
                st = (parse_save_times(spec) if isinstance(spec, str)
                      else np.asarray(spec, dtype=np.float64).ravel())
            except (TypeError, ValueError):
                _fail("save_times", _SAVE_TIMES_HELP, self.save_times)
            if st.size == 0 or not np.all(np.isfinite(st)) or np.any(np.diff(st) <= 0):
                _fail("save_times", "a non-empty strictly increasing sequence of finite times",
                      self.save_times)
            if st[0] < 0 or st[-1] > self.T * (1 + 1e-12):
                _fail("save_times", f"times in [0, T] = [0, {self.T:g}]", self.save_times)
            set_(self, "save_times", tuple(float(t) for t in st))
        if self.batch is not None:
            set_(self, "batch", _check_int("batch", self.batch, 1))
        if self.seed is not None:
            set_(self, "seed", _check_int("seed", self.seed, 0))
        name, _ = parse_init(self.init)
        INITIAL_CONDITIONS[name].check(self.n, self.d)
        for m in ("Q", "K", "V"):
            set_(self, m, _freeze_matrix(m, getattr(self, m), self.d))
        if self.masses is not None:
            w = np.asarray(self.masses, dtype=np.float64).ravel()
            if w.shape != (self.n,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
                _fail("masses", f"{self.n} finite positive numbers", self.masses)
            set_(self, "masses", tuple(float(x) for x in w))
        set_(self, "rtol", _check_float("rtol", self.rtol, minimum=0.0, strict=True))
        if self.rtol >= 1.0:  # a 100% relative error controls nothing
            _fail("rtol", "a finite number in (0, 1)", self.rtol)
        set_(self, "atol", _check_float("atol", self.atol, minimum=0.0, strict=True))
        set_(self, "max_steps", _check_int("max_steps", self.max_steps, 1))
        _check_choice("positions", self.positions, tuple(POSITIONS))
        self._check_attention()
        qk = QK_WEIGHTS.get(self.weights)
        if qk is not None and not qk.random:
            # USA weights are kappa(q, k) e^-c / n: their largest value must be
            # finite (one rule for fixed and drawn weights, on the kernels)
            Q, K = qk.draw(None, self.d, self.matrix("Q"), self.matrix("K"))
            check_usa_range(self, Q, K)
            self._check_usa_step(Q, K)
        self._check_kuramoto()
        self._check_summation()
        self._check_collapse()
        self._check_stops()
        if self.observables is None:
            set_(self, "observables", default_observers(self.n, self.d, self.beta,
                                                        self.summation))
        else:
            set_(self, "observables", check_names("observables", self.observables, OBSERVERS))
        if "spectral_energy" in self.observables:
            from particles.fields.spectral import refusal

            why = refusal(self) or ("beta = 0 (the energy is another limit there)"
                                    if self.beta == 0 else None)
            if why is not None:
                _fail("observables", "observers without 'spectral_energy' for this run, since "
                      f"the spectral series {why}", ",".join(self.observables))

    def _check_collapse(self) -> None:
        """Validate ``collapse_tol``: a value set where collapsing is not exact is refused."""
        from particles.models.collapse import refusal

        tol = _check_float("collapse_tol", self.collapse_tol, minimum=0.0)
        object.__setattr__(self, "collapse_tol", tol)
        if tol > 1e-3:  # a chord that large merges tokens that are not one
            _fail("collapse_tol", "a chord distance in [0, 1e-3]", tol)
        if tol not in (0.0, COLLAPSE_TOL):
            why = refusal(self)
            if why is not None:
                _fail("collapse_tol", f"0 or the default for this run (collapsing is not "
                      f"exact: {why})", tol)

    def _check_usa_step(self, Q: np.ndarray, K: np.ndarray) -> None:
        """Refuse a USA run whose first step cannot stay finite: ``dt`` times the
        speed bound (weights up to e^c, :func:`particles.fields.speed_bound`)
        beyond :data:`MAX_STEP_MOVE`, whose square (the norm that takes a step
        back to the sphere, an adaptive error norm) overflows float64.  A fixed
        step then gives non-finite positions at once; an adaptive one must
        shrink below 1e-154 dt, past its floor (1e-14 of a save interval).
        With ``usa_scale='n_exp_beta'`` (c = beta) no beta reaches it."""
        from particles.fields import KERNELS, speed_bound
        from particles.fields.weights import V_WEIGHTS

        values = V_WEIGHTS.get(self.value_weights)
        if self.model != "usa" or values is None or values.random:
            return  # drawn weights: their range is checked where they are drawn
        V = values.draw(None, self.d, Q, K, self.matrix("V"))
        move = self.dt * self.heads * speed_bound(self, Q, K, V)
        if move > MAX_STEP_MOVE:
            kernel = KERNELS[self.kernel]
            _fail("beta", f"small enough that a step moves a token a distance whose square "
                  f"is finite in float64 (dt x speed bound = {move:.3g} > "
                  f"{MAX_STEP_MOVE:.3g}, kernel {kernel.name!r}); "
                  f"{kernel.overflow_hint(self.usa_scale)} or a smaller dt (dt={self.dt:g})",
                  self.beta)

    def _check_stops(self) -> None:
        """Validate the stopping conditions and the merge events (:mod:`particles.events`)."""
        from particles.integrators import INTEGRATORS

        set_ = object.__setattr__
        if self.until_clusters is not None:
            set_(self, "until_clusters", _check_int("until_clusters", self.until_clusters, 1))
        if self.max_wall is not None:
            set_(self, "max_wall", _check_float("max_wall", self.max_wall, minimum=0.0,
                                                strict=True))
        if not isinstance(self.merge_events, bool | np.bool_):
            _fail("merge_events", "True or False", self.merge_events)
        set_(self, "merge_events", bool(self.merge_events))
        if self.merge_events:
            # bisection integrates a stretch again in other steps: a noise path
            # drawn per step would change, and an ensemble's systems merge at
            # different times
            if self.noise > 0:
                _fail("merge_events", "False with noise (the bisection integrates a stretch "
                      "again in other steps, which draws another noise path)", True)
            if INTEGRATORS[self.integrator].stochastic:
                _fail("merge_events", f"False with the stochastic integrator "
                      f"{self.integrator!r} (merge events are located with a deterministic "
                      "one: rk4, dopri5, ...)", True)
            if (self.batch or 1) > 1:
                _fail("merge_events", "False for an ensemble (merge events are located for "
                      "one system; analyze an ensemble's saved frames)", True)

    def collapses(self) -> bool:
        """Whether coincident tokens are integrated as one (:mod:`particles.models.collapse`)."""
        from particles.models.collapse import refusal

        return self.collapse_tol > 0 and refusal(self) is None

    def _check_summation(self) -> None:
        """Validate ``summation`` and ``tol``; resolve ``auto`` (the choice is recorded)."""
        from particles.fields import spectral

        _check_choice("summation", self.summation, tuple(SUMMATIONS))
        object.__setattr__(self, "tol", _check_float("tol", self.tol, minimum=0.0, strict=True))
        if self.tol >= 1.0:
            _fail("tol", "a finite number in (0, 1)", self.tol)
        if self.summation == "direct":
            if self.tol != 1e-12:  # accepted and ignored would mislead
                _fail("tol", "1e-12 (the default) unless summation is 'spectral' or 'auto'",
                      self.tol)
            return
        why = spectral.refusal(self)
        if self.summation == "spectral" and why is not None:
            _fail("summation", f"'direct' or 'auto' for this run, since the spectral "
                  f"summation {why}", self.summation)
        if self.summation == "auto":
            object.__setattr__(self, "summation", "direct" if why is not None
                               else spectral.choose(self))

    def _check_noise(self) -> None:
        """Validate ``noise`` and resolve and validate ``integrator`` with it."""
        from particles.integrators import INTEGRATORS, NOISE_DEFAULT, stochastic_integrators

        set_ = object.__setattr__
        set_(self, "noise", _check_float("noise", self.noise, minimum=0.0))
        if self.integrator is None:
            set_(self, "integrator", NOISE_DEFAULT if self.noise > 0 else "rk4")
        _check_choice("integrator", self.integrator, tuple(INTEGRATORS))
        if self.noise > 0 and not INTEGRATORS[self.integrator].stochastic:
            why = ("adaptive steps do not apply to an SDE"
                   if INTEGRATORS[self.integrator].adaptive else "it draws no noise")
            names = " or ".join(repr(k) for k in stochastic_integrators())
            _fail("integrator", f"a fixed-step stochastic integrator ({names}) when "
                  f"noise > 0 ({self.integrator!r}: {why})", self.integrator)

    def _check_attention(self) -> None:
        """Validate kernels, weight ensembles, heads, normalisation and layers."""
        from particles.fields import KERNELS, NORMALIZATIONS, USA_SCALES
        from particles.fields.weights import QK_WEIGHTS, V_WEIGHTS, WEIGHT_DRAWS, is_random

        set_ = object.__setattr__
        set_(self, "tau", _check_float("tau", self.tau, minimum=0.0))
        set_(self, "gamma", check_coupling_like("gamma", self.gamma))
        kernel = KERNELS[self.kernel]
        # a parameter the kernel does not use would silently run another model
        for name in ("tau", "gamma"):
            if getattr(self, name) != 1.0 and kernel.parameter != name:
                users = [repr(k) for k, v in KERNELS.items() if v.parameter == name]
                _fail(name, f"1.0 (the default) unless kernel is {' or '.join(users)} "
                      f"(kernel={self.kernel!r})", getattr(self, name))
        if USA_SCALES[self.usa_scale].time_change and not kernel.time_change:
            owners = " or ".join(repr(k) for k, v in KERNELS.items() if v.time_change)
            _fail("usa_scale", f"'n' for kernel={self.kernel!r} (the e^-beta time change "
                  f"belongs to the {owners} kernel)", self.usa_scale)
        _check_choice("weights", self.weights, tuple(QK_WEIGHTS))
        _check_choice("value_weights", self.value_weights, tuple(V_WEIGHTS))
        if not QK_WEIGHTS[self.weights].uses_given and (self.Q != "identity"
                                                         or self.K != "identity"):
            _fail("weights", "'given' when Q or K is set (a random ensemble replaces them)",
                  self.weights)
        if not V_WEIGHTS[self.value_weights].uses_given and self.V != "identity":
            _fail("value_weights", "'given' when V is set (a random ensemble replaces it)",
                  self.value_weights)
        set_(self, "heads", _check_int("heads", self.heads, 1))
        if self.heads > MAX_HEADS:  # each head's weights are drawn and checked in Python
            _fail("heads", f"an integer in [1, {MAX_HEADS}]", self.heads)
        _check_choice("normalization", self.normalization, tuple(NORMALIZATIONS))
        set_(self, "sinkhorn_iters", _check_int("sinkhorn_iters", self.sinkhorn_iters, 1))
        set_(self, "sinkhorn_tol", _check_float("sinkhorn_tol", self.sinkhorn_tol,
                                                minimum=0.0, strict=True))
        NORMALIZATIONS[self.normalization].check(self)
        if self.layer_time is not None:
            set_(self, "layer_time", _check_float("layer_time", self.layer_time,
                                                  minimum=0.0, strict=True))
            if not is_random(self):
                _fail("layer_time", "None unless weights or value_weights is a random "
                      "ensemble (layers redraw them)", self.layer_time)
        _check_choice("weight_draws", self.weight_draws, tuple(WEIGHT_DRAWS))
        drawn = is_random(self) or (self.model == "kuramoto" and isinstance(self.omega, str))
        if self.weight_draws != "shared" and not drawn:
            _fail("weight_draws", "'shared' (the default) unless weights or value_weights is "
                  "a random ensemble, or omega a distribution for model='kuramoto' (only "
                  "random draws can differ per system)", self.weight_draws)
        if self.model == "kuramoto":
            for name, default in (("weights", "given"), ("value_weights", "given"),
                                  ("heads", 1), ("normalization", "softmax"),
                                  ("layer_time", None)):
                if getattr(self, name) != default:
                    _fail(name, f"{default!r} (the default) for model='kuramoto'",
                          getattr(self, name))

    def _check_kuramoto(self) -> None:
        """Validate ``coupling`` and ``omega``, which only ``model="kuramoto"`` uses."""
        from particles.fields.frequencies import freeze_omega

        object.__setattr__(self, "coupling", check_coupling(self.coupling))
        object.__setattr__(self, "omega", freeze_omega(self.omega, self.n))
        if self.model != "kuramoto":
            # silently ignoring them would run a different model than the one asked for
            if self.coupling != 1.0:
                _fail("coupling", f"1.0 (the default) unless model='kuramoto' "
                      f"(model={self.model!r} has no coupling parameter)", self.coupling)
            if self.omega is not None:
                got = (self.omega if isinstance(self.omega, str) or len(self.omega) <= 8
                       else f"{len(self.omega)} numbers")
                _fail("omega", f"None unless model='kuramoto' "
                      f"(model={self.model!r} has no natural frequencies)", got)
            return
        if self.d != 2:
            _fail("d", "2 for model='kuramoto' (oscillators on the circle)", self.d)
        for m in ("Q", "K", "V"):
            if not np.array_equal(self.matrix(m), np.eye(2)):
                _fail(m, "'identity' for model='kuramoto' (it has no attention matrices; "
                      "use coupling, negative for repulsion)", getattr(self, m))
        if self.kernel != "edp":
            _fail("kernel", "'edp' (the default) for model='kuramoto' (it has no attention "
                  "kernel)", self.kernel)

    # ----------------------------------------------------------------- views
    def matrix(self, name: str) -> np.ndarray:
        """The matrix ``Q``, ``K`` or ``V`` as an array of shape (d, d)."""
        value = getattr(self, name)
        if value == "identity":
            return np.eye(self.d)
        if value == "minus_identity":
            return -np.eye(self.d)
        return np.array(value, dtype=np.float64)

    def mass_array(self) -> np.ndarray:
        """Token masses, shape (n,)."""
        if self.masses is None:
            return np.ones(self.n)
        return np.array(self.masses, dtype=np.float64)

    def qk_norm(self) -> float:
        """Spectral norm of ``Q^T K`` (1 for the identity): the score range is ``beta`` times it."""
        return float(np.linalg.norm(self.matrix("Q").T @ self.matrix("K"), 2))

    def frame_count(self) -> int:
        """``len(self.output_times())`` without building the times (a configuration
        that claims 10^10 frames is counted at once)."""
        if self.save_times is not None:
            return len(self.save_times) + (self.save_times[0] != 0.0)
        interval = self.save_every * self.dt
        k = math.floor(self.T / interval + 1e-9)
        last = interval * float(k)  # the last of interval * arange(k + 1)
        return k + 1 + (self.T - last > 1e-9 * max(1.0, self.T))

    def output_times(self) -> np.ndarray:
        """Times of the saved frames, shape (frames,), always starting at 0."""
        if self.save_times is not None:
            st = np.asarray(self.save_times)
            return st if st[0] == 0.0 else np.concatenate([[0.0], st])
        interval = self.save_every * self.dt
        k = math.floor(self.T / interval + 1e-9)
        times = interval * np.arange(k + 1)
        if self.T - times[-1] > 1e-9 * max(1.0, self.T):
            times = np.append(times, self.T)
        return times

    # ----------------------------------------------------------- resolution
    def resolved(self) -> SimulationConfig:
        """A copy with a concrete seed (fresh entropy when ``seed`` is None)."""
        if self.seed is not None:
            return self
        return dataclasses.replace(self, seed=fresh_seed())

    def replace(self, **changes: Any) -> SimulationConfig:
        """A validated copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    # ---------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict of every field."""
        out = dataclasses.asdict(self)
        for key in ("Q", "K", "V"):
            if isinstance(out[key], tuple):
                out[key] = [list(row) for row in out[key]]
        for key in ("save_times", "masses"):
            if out[key] is not None:
                out[key] = list(out[key])
        if isinstance(out["omega"], tuple):
            out["omega"] = list(out["omega"])
        out["observables"] = list(out["observables"])
        if out["positions"] == "all":
            # the default is not written: files of earlier versions stay byte-identical
            del out["positions"]
        if out["noise"] == 0.0:
            del out["noise"]  # likewise for deterministic runs
        for key, default in STOP_DEFAULTS.items():
            if out[key] == default:
                del out[key]  # likewise for runs without stops or events
        return out

    def to_json(self) -> str:
        """The configuration as a JSON string."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimulationConfig:
        """Build (and validate) from :meth:`to_dict` output; unknown keys raise."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(
                f"unknown configuration key(s) {', '.join(map(repr, unknown))}; "
                f"allowed: {', '.join(sorted(names))}"
            )
        if "observables" not in data:
            # written before observers were chosen per run: they all hold the pairwise set
            data = {**data, "observables": ("pairwise",)}
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> SimulationConfig:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))
