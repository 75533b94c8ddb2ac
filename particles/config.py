"""Validated, frozen simulation configuration.

:class:`SimulationConfig` is built once, checked once (every bad value raises
``ValueError`` naming the argument and what is allowed), and then passed
around unchanged.  It round-trips through JSON (:meth:`to_dict` /
:meth:`from_dict`) so every output file records the full resolved run.

This module is the record: its fields, their command-line metadata
(:mod:`particles.options`) and JSON.  Its checks are generic (each value
alone, :mod:`particles.values`); the rules of models, kernels, integrators,
summations, normalisations, initial conditions and observers are their
registry entries' own ``check(spec)``, run in :mod:`particles.rules` order.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from particles.options import (
    Option,
    init_help,
    observables_help,
    omega_help,
    option,
    registry,
)
from particles.seeds import fresh_seed
from particles.sphere import COLLAPSE_TOL, INITIAL_CONDITIONS
from particles.values import (
    MAX_HEADS,
    NAMED_MATRICES,
    POSITIONS,
    canonical,
    check_coupling,
    check_coupling_like,
    check_names,
    parse_init,
    parse_save_times,
)

__all__ = ["COLLAPSE_TOL", "INITS", "KERNEL_PARAMETERS", "MAX_HEADS", "NAMED_MATRICES",
           "POSITIONS", "STOP_DEFAULTS", "Option", "SimulationConfig", "check_coupling",
           "check_coupling_like", "check_names", "option", "parse_init", "parse_save_times"]

# The registries (particles.fields, integrators, observables, models) load
# with the first validation (particles.rules), not with this module: importing
# it (and so the file layer) loads no compiled code.
_KERNELS = registry("particles.fields", "KERNELS")

#: names served lazily (``__getattr__``): module, attribute, and how the value is given.
_LAZY: dict[str, tuple[str, str]] = {
    "USA_SCALES": ("particles.fields", "USA_SCALES"),
    "OMEGA_DISTRIBUTIONS": ("particles.fields.frequencies", "OMEGA_DISTRIBUTIONS"),
    "parse_omega": ("particles.fields.frequencies", "parse_omega"),
    "freeze_omega": ("particles.fields.frequencies", "freeze_omega"),
    "MAX_STEP_MOVE": ("particles.models.attention", "MAX_STEP_MOVE"),
    "SUMMATIONS": ("particles.fields.summation", "SUMMATIONS"),
}


def __getattr__(name: str) -> Any:
    """Names re-exported from the registries, loaded on first use: ``USA_SCALES``
    (the USA normalisations' names), ``SUMMATIONS`` (name -> description),
    ``OMEGA_DISTRIBUTIONS``, ``parse_omega``, ``freeze_omega``, ``MAX_STEP_MOVE``."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name][0]), _LAZY[name][1])
    if name == "USA_SCALES":
        return tuple(value)
    if name == "SUMMATIONS":
        return {k: s.description for k, s in value.items()}
    return value


#: initial conditions, name -> description (:data:`particles.sphere.INITIAL_CONDITIONS`).
INITS: dict[str, str] = {k: c.description for k, c in INITIAL_CONDITIONS.items()}

#: the stopping conditions and events of a run, and their defaults (not written
#: in a file's configuration when unset: files without them stay byte-identical).
STOP_DEFAULTS: dict[str, Any] = {"until_clusters": None, "max_wall": None,
                                 "merge_events": False}


class _KernelParameters(Mapping):
    """kernel -> the name of its parameter, a live view of the kernel registry."""

    def __getitem__(self, name: str) -> str:
        return _KERNELS()[name].parameter

    def __iter__(self):
        return iter(_KERNELS())

    def __len__(self) -> int:
        return len(_KERNELS())

    def __repr__(self) -> str:
        return repr(dict(self))


#: kernel -> the name of its parameter (DESIGN.md section 1), from
#: :data:`particles.fields.KERNELS`.
KERNEL_PARAMETERS: Mapping[str, str] = _KernelParameters()


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
        The systems of an ensemble run on until the last gets there; each
        one's first passage is recorded (``Trajectory.passages``,
        ``/events/passages``), to the located merge with ``merge_events``.
    max_wall : float, optional
        Seconds of wall time after which a run pauses at its next saved frame:
        a file is kept incomplete (``stop_reason = "max_wall"``) and resuming
        continues it with a new budget; in memory the trajectory so far is
        returned, ``complete`` False.
    merge_events : bool
        Locate each drop of the cluster count between saved frames by
        bisection (:mod:`particles.events`) and record the merges
        (``Trajectory.merge_events``; ``/events/merges`` in a file); in an
        ensemble, system by system (each merge carries its system).
    """

    n: int = field(metadata=option("Number of tokens.", int))
    d: int = field(metadata=option("Ambient dimension (tokens on S^{d-1}).", int))
    beta: float = field(metadata=option("Inverse temperature.", float))
    model: str = field(default="sa", metadata=option(
        "Dynamics: {choices}.", choices=registry("particles.models", "MODELS"),
        item="{name} ({entry.description})"))
    kernel: str = field(default="edp", metadata=option(
        "Attention kernel: {choices}.", choices=registry("particles.fields", "KERNELS"),
        item="{name} = {entry}"))
    usa_scale: str = field(default="n", metadata=option(
        "USA normalisation 1/n or e^-beta/n.",
        choices=registry("particles.fields", "USA_SCALES")))
    integrator: str | None = field(default=None, metadata=option(
        "Integrator: {choices}.", choices=registry("particles.integrators", "INTEGRATORS"),
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
    init: str = field(default="uniform", metadata=option(init_help, parse="init"))
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
        omega_help, str))
    tau: float = field(default=1.0, metadata=option(
        "Kernel parameter tau of rbf exp(-tau||q-k||^2) and l2 tau||q-k||.", float))
    gamma: float = field(default=1.0, metadata=option(
        "Offset gamma of the quadratic kernel (<q,k> + gamma)^2.", float))
    weights: str = field(default="given", metadata=option(
        "Q^T K ensemble (drawn from the seed): {choices}.",
        choices=registry("particles.fields.weights", "QK_WEIGHTS")))
    value_weights: str = field(default="given", metadata=option(
        "V ensemble: {choices}.", choices=registry("particles.fields.weights", "V_WEIGHTS")))
    heads: int = field(default=1, metadata=option(
        "Number of attention heads (outputs summed).", int))
    normalization: str = field(default="softmax", metadata=option(
        "Attention normalisation: {choices}.",
        choices=registry("particles.fields", "NORMALIZATIONS")))
    sinkhorn_iters: int = field(default=100, metadata=option(
        "Maximum Sinkhorn iterations (1 is SA).", int))
    sinkhorn_tol: float = field(default=1e-9, metadata=option(
        "Sinkhorn tolerance on the column sums.", float))
    layer_time: float | None = field(default=None, metadata=option(
        "Redraw the random weights every LAYER_TIME units of time (one draw per layer; see "
        "--weight-draws).", float))
    weight_draws: str = field(default="shared", metadata=option(
        "Random weights of a batch: {choices}.",
        choices=registry("particles.fields.weights", "WEIGHT_DRAWS")))
    observables: tuple[str, ...] | None = field(default=None, metadata=option(
        observables_help, metavar="NAME[,NAME...]"))
    positions: str = field(default="all", metadata=option(
        "Positions kept: {choices}. The observables are kept at every frame; analyze and "
        "plot need all.", choices=lambda: POSITIONS))
    noise: float = field(default=0.0, metadata=option(
        "Noise amplitude sigma >= 0: Brownian motion on the sphere, dX = f dt + sigma P_X o "
        "dB (on the circle D = sigma^2/2); needs --integrator em or heun (the default with "
        "noise), drawn with the seed.", float))
    summation: str = field(default="auto", metadata=option(
        "How attention sums are taken: direct (n^2 kernel evaluations), spectral (zonal "
        "kernels on the circle and S^2 by Bessel series and spherical-harmonic transforms, "
        "O(n K), exact to --tol) or auto (the default: spectral where it serves the run and "
        "its cost model predicts it 1.5x faster, from n = 1024; else direct. The file "
        "records the choice, and a resume keeps it).",
        choices=registry("particles.fields.summation", "SUMMATIONS"), item="{name}"))
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
        "analysis default; every system of an ensemble, each one's first passage "
        "recorded in /events/passages); the file is complete there and "
        "the stop is recorded. Resume with a smaller value, or 'none' (no stop), to go "
        "on.", int, parse="stop", metavar="K|none"))
    max_wall: float | None = field(default=None, metadata=option(
        "Pause after this many seconds of wall time (at the next saved frame): the file "
        "is kept incomplete, marked paused, and --resume continues it with a new budget "
        "('none': no budget).", float, parse="stop", metavar="SECONDS|none"))
    merge_events: bool = field(default=False, metadata=option(
        "Locate every drop of the cluster count (eps = 0.05) between saved frames by "
        "bisection, to the integrator's tolerance, and store the merge times in the file "
        "(/events/merges) for analyze; per system in an ensemble; deterministic "
        "integrators only.", bool))

    def __post_init__(self) -> None:
        from particles import rules  # the registries load with the first validation

        given = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name, value in canonical(given, rules).items():
            self._set(name, value)
        for entry in rules.entries(self):
            entry.check(self)
        # auto is chosen once, here: the file records the choice, and a resume
        # keeps it (the cost model may change with the version or the host)
        self._set("_asked", {k: getattr(self, k) for k in ("summation", "tol", "observables")})
        self._set("summation", rules.resolved_summation(self))
        if self.summation_auto and self.summation == "direct":
            self._set("tol", self.__dataclass_fields__["tol"].default)  # direct: no series
        if self.observables is None:
            self._set("observables", rules.default_observables(self))
        for observer in rules.observers(self):
            observer.check(self)

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    @property
    def summation_auto(self) -> bool:
        """Whether ``summation="auto"`` chose :attr:`summation` (a configuration
        read from a file holds the recorded choice: False)."""
        return self._asked["summation"] == "auto"

    def summed_by(self, summation: str) -> SimulationConfig:
        """The copy that sums by ``summation``, with what ``auto`` set from its
        choice set again (``tol``: the default for ``direct``; the default
        observables of that summation, unless some were given)."""
        tol = self.__dataclass_fields__["tol"].default if summation == "direct" else None
        return dataclasses.replace(self, summation=summation, tol=tol or self._asked["tol"],
                                   observables=self._asked["observables"])

    def collapses(self) -> bool:
        """Whether coincident tokens are integrated as one (:mod:`particles.models.collapse`;
        the fact of its plan, :attr:`particles.plan.Facts.collapses`)."""
        return importlib.import_module("particles.plan").facts(self).collapses

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
        return self.replace(seed=fresh_seed())

    def replace(self, **changes: Any) -> SimulationConfig:
        """A validated copy with some fields changed (``summation="auto"``
        chooses again for the changed run, unless ``summation`` is given)."""
        if self.summation_auto and "summation" not in changes:
            changes = {**self._asked, **changes}
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
