"""Spectral solver of the mean-field continuity equation on the circle.

Solves ``d_t rho + d_theta(rho v[rho]) = D d_theta^2 rho`` for a probability
density on ``M`` equispaced points, for

- ``"usa"``: ``v = int exp(beta cos(phi - theta)) sin(phi - theta) rho(phi) dphi``,
- ``"sa"``: the same divided by ``Z = int exp(beta cos(phi - theta)) rho(phi) dphi``,
- ``"kuramoto"``: ``v = c int sin(phi - theta) rho(phi) dphi``

(conventions of :mod:`particles.meanfield.linear`; ``D = sigma^2 / 2`` for
particle noise ``sigma``).  Not covered: Kuramoto with distributed natural
frequencies (the density would live on (theta, omega)), ``V != I``, other
attention kernels, weights other than a density and dimensions ``d > 2``.
``usa_scale="n_exp_beta"`` is the particles' option of that name: USA with
the kernel ``exp(beta (cos u - 1)) sin u``, i.e. time ``t`` of it is time
``e^{-beta} t`` of the plain USA flow.

Method
------
*Space*: pseudo-spectral.  ``v`` (and SA's ``Z``) are Fourier multipliers
(:mod:`particles.meanfield.spectral`, modified Bessel functions), the flux
``rho v`` is formed on the grid and differentiated in Fourier space.  No
dealiasing: the velocity multipliers decay like ``(beta/2)^k / k!``, so ``v``
is analytic and aliasing errors are of the size of the unresolved part of
``rho`` itself (watch the top modes, or raise ``modes``).

*Time*: the Dormand-Prince 5(4) pair of :mod:`particles.integrators.dopri5`
(same tableau, same step-size controller
:func:`particles.integrators.driver.step_factor`) in its integrating-factor
(Lawson) form: the diffusion ``-D k^2`` is integrated exactly, so it puts no
limit on the step, and the advection is explicit.  The compiled steppers of
:mod:`particles.integrators` act on particle rows and cannot take a complex
spectral state with an integrating factor, so the public tableau
(:data:`particles.integrators.tableaux.DOPRI5`) is applied by the loop shared with
the sphere's solvers (:mod:`particles.meanfield.lawson`).  Every step starts
from the grid density (no FSAL), so a :class:`SolverState` holds all that is
needed to continue bit for bit.

*Mass*: the ``k = 0`` coefficient of every stage derivative is ``-i 0 f_0 =
0`` exactly and the integrating factor is ``exp(0) = 1`` there, so a step
leaves ``rho_hat_0`` untouched; the grid mass changes only by the round-off
of one FFT round trip per step.

*Positivity* is not enforced (a spectral method can undershoot where
``rho`` is nearly 0); every frame records ``min_density``, and when it falls
below ``-POSITIVITY_TOL * max(rho)`` the solver warns once
(``positivity="warn"``, a ``RuntimeWarning``), raises
:class:`~particles.errors.IntegrationError` (``"raise"``) or says nothing
(``"ignore"``).

*Step*: adaptive, error ``RMS(e) / (atol + rtol max|rho|)`` on the grid.
The explicit advection limits the step to about ``3 / (k_max max|v|)`` once
clusters have formed; USA speeds grow like ``e^beta``, so at ``beta = 9``
with ``usa_scale="n"`` that is ``dt ~ 2e-5`` at ``M = 1024`` (the time change
``usa_scale="n_exp_beta"`` divides speeds by ``e^beta``).  A loose ``rtol``
lets step errors seed the top modes, which the compressive flow then
amplifies: keep ``rtol <= 1e-8`` for long clustering runs.

*Cost*: the Python loop runs once per step, vectorised over the grid with
``numpy.fft``: at ``M = 1024`` a step (7 stages, 22 real FFTs) costs about
1 ms on the shared 2-core machines, half of it in the FFTs
(``benchmarks/bench_meanfield.py``); a compiled loop could save at most the
other half, while the step count (set by the advection limit) decides
whether a run is cheap.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from particles.errors import ConfigError, IntegrationError
from particles.meanfield.energy import dissipation, energy
from particles.meanfield.initial import grid, make_density, parse_init
from particles.meanfield.lawson import SolverState, first_step, lawson_frames
from particles.meanfield.linear import MEANFIELD_MODELS
from particles.meanfield.moments import density_order_parameter
from particles.meanfield.spectral import USA_MAX_BETA, USA_SCALES, multipliers
from particles.observables.order import OrderParameter

#: time integrators of the solver (name -> description).
MEANFIELD_INTEGRATORS = {
    "dopri5": "integrating-factor (Lawson) Dormand-Prince 5(4): exact diffusion, "
              "explicit advection, adaptive",
}

#: positivity policies (see the module docstring).
POSITIVITY = ("warn", "raise", "ignore")

#: a frame loses positivity when min(rho) < -POSITIVITY_TOL * max(rho).
POSITIVITY_TOL = 1e-6



def finite_number(name: str, value: Any, *, positive: bool = False,
                  nonneg: bool = False) -> float:
    """``value`` as a finite float (``> 0`` or ``>= 0`` when asked); :class:`ConfigError`
    naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{name} must be a number, got {value!r}", name)
    x = float(value)
    if not math.isfinite(x):
        raise ConfigError(f"{name} must be finite, got {value!r}", name)
    if positive and not x > 0:
        raise ConfigError(f"{name} must be > 0, got {value!r}", name)
    if nonneg and x < 0:
        raise ConfigError(f"{name} must be >= 0, got {value!r}", name)
    return x


def check_times(config: Any) -> None:
    """Validate ``T``, ``save_every`` and ``save_times`` of a frozen config (normalising
    ``save_times`` to a tuple of floats); :class:`ConfigError` naming the field."""
    T = finite_number("T", config.T, positive=True)
    if config.save_every is not None and config.save_times is not None:
        raise ConfigError("save_every and save_times are exclusive: give one", "save_every")
    if config.save_every is not None:
        finite_number("save_every", config.save_every, positive=True)
        if config.save_every > T:
            raise ConfigError(f"save_every must be <= T = {T!r}, got {config.save_every!r}",
                              "save_every")
    if config.save_times is not None:
        try:
            st = [float(s) for s in config.save_times]
        except (TypeError, ValueError):
            raise ConfigError(f"save_times must be numbers, got {config.save_times!r}",
                              "save_times") from None
        if not st or not all(math.isfinite(s) for s in st):
            raise ConfigError(f"save_times must be finite numbers, got {config.save_times!r}",
                              "save_times")
        if any(0.0 < t < np.finfo(np.float64).tiny for t in st):
            raise ConfigError(f"save_times must be 0 or at least "
                              f"{np.finfo(np.float64).tiny:.3g} (subnormal times lose their "
                              f"digits), got {config.save_times!r}", "save_times")
        if any(b <= a for a, b in itertools.pairwise(st)) or st[0] < 0 or st[-1] > T:
            raise ConfigError(f"save_times must increase within [0, T = {T!r}], "
                              f"got {config.save_times!r}", "save_times")
        object.__setattr__(config, "save_times", tuple(st))


def check_steps(config: Any) -> None:
    """Validate ``seed``, ``integrator``, the tolerances, ``dt0``, ``max_steps`` and
    ``positivity`` of a config; :class:`ConfigError` naming the field."""
    if isinstance(config.seed, bool) or not isinstance(config.seed, (int, np.integer)) \
            or config.seed < 0:
        raise ConfigError(f"seed must be an integer >= 0, got {config.seed!r}", "seed")
    if config.integrator not in MEANFIELD_INTEGRATORS:
        raise ConfigError(f"integrator must be one of {', '.join(MEANFIELD_INTEGRATORS)}, "
                          f"got {config.integrator!r}", "integrator")
    if not finite_number("rtol", config.rtol, positive=True) < 1.0:  # 100% error controls nothing
        raise ConfigError(f"rtol must be in (0, 1), got {config.rtol!r}", "rtol")
    finite_number("atol", config.atol, positive=True)
    if config.dt0 is not None:
        finite_number("dt0", config.dt0, positive=True)
    if isinstance(config.max_steps, bool) or not isinstance(config.max_steps, (int, np.integer)) \
            or config.max_steps < 1:
        raise ConfigError(f"max_steps must be an integer >= 1, got {config.max_steps!r}",
                          "max_steps")
    if config.positivity not in POSITIVITY:
        raise ConfigError(f"positivity must be one of {', '.join(POSITIVITY)}, "
                          f"got {config.positivity!r}", "positivity")


def config_dict(config: Any, integers: tuple[str, ...]) -> dict[str, Any]:
    """A frozen config dataclass as a JSON-ready dict (``save_times`` a list, the
    ``integers`` fields plain ints)."""
    d = dataclasses.asdict(config)
    if d["save_times"] is not None:
        d["save_times"] = list(d["save_times"])
    for key in integers:
        d[key] = int(d[key])
    return d


def config_from(cls: type, d: dict[str, Any], what: str) -> Any:
    """``cls`` rebuilt from :func:`config_dict` (unknown keys: one-line ValueError)."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - known)
    if unknown:
        raise ValueError(f"unknown {what} config keys: {', '.join(unknown)}")
    d = dict(d)
    if d.get("save_times") is not None:
        d["save_times"] = tuple(d["save_times"])
    return cls(**d)


def frame_times(config: Any) -> np.ndarray:
    """The save times of a config with ``T``, ``save_every`` and ``save_times``, shape
    (F,): 0 first, ``T`` last with ``save_every``."""
    T = float(config.T)
    if config.save_times is not None:
        st = [t for t in config.save_times if t > 0.0]
        return np.array([0.0, *st])
    if config.save_every is None:
        return np.array([0.0, T])
    se = float(config.save_every)
    n = math.floor(T / se * (1 + 1e-12))
    times = se * np.arange(n + 1)
    if T - times[-1] > 1e-12 * T:
        times = np.append(times, T)
    else:
        times[-1] = T
    return times



@dataclass(frozen=True, kw_only=True)
class MeanFieldConfig:
    """Everything that defines a mean-field solve (validated on construction).

    Parameters
    ----------
    model : {"usa", "sa", "kuramoto"}
    beta : float
        Inverse temperature, ``>= 0`` (USA: ``<= 700``; ignored by Kuramoto).
    D : float
        Diffusion coefficient ``>= 0`` (``sigma^2 / 2`` for particle noise sigma).
    modes : int
        Grid points ``M`` (even, ``>= 8``); the real FFT has ``M/2 + 1`` modes.
    T : float
        Final time ``> 0``.
    save_every : float, optional
        Time between frames (frames at ``0, s, 2 s, ...`` up to ``T``; ``T`` is
        always a frame).  Exclusive with ``save_times``; with neither, frames
        at 0 and T.
    save_times : tuple of float, optional
        Increasing frame times in ``(0, T]`` (0 is always a frame).
    coupling : float
        Kuramoto coupling ``c``.
    usa_scale : {"n", "n_exp_beta"}
        USA normalisation, as for the particles: ``exp(beta cos) / n`` or the time
        change ``exp(beta (cos - 1)) / n`` (ignored by SA and Kuramoto).
    init : str
        Initial density spec (:mod:`particles.meanfield.initial`).
    seed : int
        Root seed of the random perturbation (``init="perturbed"``).
    integrator : str
        Key of :data:`MEANFIELD_INTEGRATORS`.
    rtol, atol : float
        Error tolerances of the adaptive step (``atol`` in density units).
    dt0 : float, optional
        First step (default: estimated from the initial velocity).
    max_steps : int
        Accepted plus rejected steps allowed per solve.
    positivity : {"warn", "raise", "ignore"}
        What a loss of positivity does (module docstring).
    """

    model: str = "usa"
    beta: float = 1.0
    D: float = 0.0
    modes: int = 256
    T: float = 1.0
    save_every: float | None = None
    save_times: tuple[float, ...] | None = None
    coupling: float = 1.0
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
        if self.model not in MEANFIELD_MODELS:
            raise ConfigError(f"model must be one of {', '.join(MEANFIELD_MODELS)}, "
                              f"got {self.model!r}", "model")
        beta = finite_number("beta", self.beta, nonneg=True)
        if self.usa_scale not in USA_SCALES:
            raise ConfigError(f"usa_scale must be one of {', '.join(USA_SCALES)}, "
                              f"got {self.usa_scale!r}", "usa_scale")
        if self.model == "usa" and self.usa_scale == "n" and beta > USA_MAX_BETA:
            raise ConfigError(f"beta must be <= {USA_MAX_BETA:g} for usa with usa_scale='n' "
                              f"(speeds ~ e^beta), got {self.beta!r}", "beta")
        finite_number("D", self.D, nonneg=True)
        finite_number("coupling", self.coupling)
        if isinstance(self.modes, bool) or not isinstance(self.modes, (int, np.integer)):
            raise ConfigError(f"modes must be an integer, got {self.modes!r}", "modes")
        if self.modes < 8 or self.modes % 2:
            raise ConfigError(f"modes must be an even integer >= 8, got {self.modes!r}", "modes")
        check_times(self)
        parse_init(self.init)
        check_steps(self)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``save_times`` as a list); inverse of :meth:`from_dict`."""
        return config_dict(self, ("modes", "seed", "max_steps"))

    def to_json(self) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MeanFieldConfig:
        """Rebuild a config from :meth:`to_dict` (unknown keys: one-line ValueError)."""
        return config_from(cls, d, "mean-field")

    def frame_times(self) -> np.ndarray:
        """The save times, shape (F,): 0 first, ``T`` last with ``save_every``."""
        return frame_times(self)


@dataclass
class DensityFrame:
    """One saved frame (passed to ``on_frame``).

    Attributes
    ----------
    time : float
    rho : ndarray, shape (M,)
    mass : float
        ``sum(rho) * 2 pi / M`` (1 to round-off).
    energy : float
        ``E_beta[rho]`` (:func:`particles.meanfield.energy.energy`).
    dissipation : float
        ``-dF/dt`` (:func:`particles.meanfield.energy.dissipation`).
    min_density : float
    state : SolverState
        Resume point (``solve(config, state=frame.state)``).
    """

    time: float
    rho: np.ndarray
    mass: float
    energy: float
    dissipation: float
    min_density: float
    state: SolverState


@dataclass
class DensityResult:
    """The frames of a solve (a resumed solve holds only the frames after its start).

    Attributes
    ----------
    config : MeanFieldConfig
    theta : ndarray, shape (M,)
    times : ndarray, shape (F,)
    rho : ndarray, shape (F, M)
    mass, energy, dissipation, min_density : ndarray, shape (F,)
    steps, rejected : int
        Totals at the end (including those before a resume point).
    final : SolverState
        The state at ``T``.
    order_parameter : OrderParameter
        (property) ``r`` and ``psi`` of every frame, shape (F,).
    """

    config: MeanFieldConfig
    theta: np.ndarray
    times: np.ndarray
    rho: np.ndarray
    mass: np.ndarray
    energy: np.ndarray
    dissipation: np.ndarray
    min_density: np.ndarray
    steps: int
    rejected: int
    final: SolverState | None = field(default=None, repr=False)

    @property
    def order_parameter(self) -> OrderParameter:
        """``r e^{i psi}`` of every frame, shape (F,)
        (:func:`particles.meanfield.moments.density_order_parameter`)."""
        return density_order_parameter(self.rho)


def initial_density(config: MeanFieldConfig) -> np.ndarray:
    """The initial density of ``config`` on its grid, shape (M,), unit mass."""
    return make_density(config.init, int(config.modes), int(config.seed))


class _Stepper:
    """The Fourier discretisation of one configuration
    (a :class:`~particles.meanfield.lawson.Space`)."""

    def __init__(self, config: MeanFieldConfig) -> None:
        M = int(config.modes)
        self.M = M
        m = multipliers(M, float(config.beta), config.model, float(config.coupling),
                        config.usa_scale)
        self.mv = m.velocity
        self.mz = m.normaliser
        self.dk = -m.derivative  # N_hat = -i k (rho v)_hat
        self.L = -float(config.D) * m.k**2

    def rhs(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Stage derivative ``N_hat(u)`` (advection only) and the grid density of ``u``."""
        M = self.M
        rho = np.fft.irfft(u, M)
        v = np.fft.irfft(u * self.mv, M)
        if self.mz is not None:
            v = v / np.fft.irfft(u * self.mz, M)
        return self.dk * np.fft.rfft(rho * v), rho

    def analyse(self, rho: np.ndarray) -> np.ndarray:
        """Grid density -> real-FFT coefficients."""
        return np.fft.rfft(rho)

    def norm(self, e: np.ndarray) -> float:
        """RMS on the grid of the function with coefficients ``e``."""
        eg = np.fft.irfft(e, self.M)
        return float(np.sqrt(np.mean(eg * eg)))

    def rms(self, rho: np.ndarray) -> float:
        """RMS of a grid density."""
        return float(np.sqrt(np.mean(rho**2)))


def check_positivity(policy: str, frame: DensityFrame, warned: bool, resolution: str,
                     *, stacklevel: int = 2) -> bool:
    """Apply the positivity ``policy`` to a frame (module docstring); returns whether a
    warning has now been given (``warned``: one was given before; ``resolution``: the
    option that refines the grid, named in the message)."""
    rho = frame.rho
    if frame.min_density < -POSITIVITY_TOL * float(rho.max()):
        msg = (f"mean-field density lost positivity at t = {frame.time:.6g} "
               f"(min {frame.min_density:.3g}, max {rho.max():.3g}): raise {resolution} or D")
        if policy == "raise":
            raise IntegrationError(msg)
        if policy == "warn" and not warned:
            warnings.warn(msg, RuntimeWarning, stacklevel=stacklevel + 1)
            return True
    return warned


def _frame(config: MeanFieldConfig, t: float, rho: np.ndarray, state: SolverState) -> DensityFrame:
    beta, model, c = float(config.beta), config.model, float(config.coupling)
    M = rho.shape[0]
    return DensityFrame(time=t, rho=rho.copy(), mass=float(rho.sum() * 2.0 * np.pi / M),
                        energy=energy(rho, beta, model, c),
                        dissipation=dissipation(rho, beta, model, float(config.D), c,
                                                config.usa_scale),
                        min_density=float(rho.min()), state=state)


def solve(config: MeanFieldConfig, *, state: SolverState | None = None,
          on_frame: Callable[[DensityFrame], None] | None = None,
          rho0: np.ndarray | None = None) -> DensityResult:
    """Solve the mean-field PDE of ``config`` from 0 (or ``state``) to ``config.T``.

    Parameters
    ----------
    config : MeanFieldConfig
    state : SolverState, optional
        Resume from this state (a frame's ``state``): the continuation is bit
        for bit the uninterrupted solve; frames at times ``<= state.t`` are
        not repeated.
    on_frame : callable, optional
        Called with every :class:`DensityFrame` as soon as it is computed
        (t = 0 included unless resuming), e.g. to append it to a file.
    rho0 : ndarray, shape (M,), optional
        The initial density (default :func:`initial_density` of ``config``;
        needed for an ``init`` read from a file, such as ``particles:file=``).

    Returns
    -------
    DensityResult

    Raises
    ------
    IntegrationError
        Non-finite density, a vanishing step, ``max_steps`` exceeded, or a loss of
        positivity with ``positivity="raise"``.
    ValueError
        A ``state`` that does not fit the config (grid size, time beyond T).
    """
    M = int(config.modes)
    frames: list[DensityFrame] = []
    for fr in solve_frames(config, state=state, rho0=rho0):
        frames.append(fr)
        if on_frame is not None:
            on_frame(fr)
    if frames:
        final = frames[-1].state
    else:  # resumed at the last save time: nothing left to solve
        final = _check_state(config, state)

    def col(name: str) -> np.ndarray:
        return np.array([getattr(f, name) for f in frames], dtype=np.float64)

    return DensityResult(
        config=config, theta=grid(M), times=col("time"),
        rho=np.array([f.rho for f in frames]).reshape(len(frames), M),
        mass=col("mass"), energy=col("energy"), dissipation=col("dissipation"),
        min_density=col("min_density"), steps=final.steps, rejected=final.rejected,
        final=final)


def _check_state(config: MeanFieldConfig, state: SolverState) -> SolverState:
    """``state`` checked against ``config`` (ValueError when it does not fit)."""
    rho = np.array(state.rho, dtype=np.float64)
    if rho.shape != (int(config.modes),):
        raise ValueError(f"state has {rho.shape} grid points, the config {int(config.modes)}")
    t, h = float(state.t), float(state.dt)
    if not 0.0 <= t <= float(config.T) or not h > 0.0:
        raise ValueError(f"state (t={t!r}, dt={h!r}) does not fit T = {float(config.T)!r}")
    return SolverState(t=t, rho=rho, dt=h, steps=int(state.steps), rejected=int(state.rejected))


def _check_rho0(config: MeanFieldConfig, rho0: np.ndarray) -> np.ndarray:
    """A given initial density checked against ``config`` (ValueError when it does not fit)."""
    rho = np.array(rho0, dtype=np.float64)
    if rho.shape != (int(config.modes),) or not np.all(np.isfinite(rho)) or rho.min() < 0:
        raise ValueError(f"rho0 must be {int(config.modes)} finite densities >= 0, got an "
                         f"array of shape {rho.shape}")
    return rho


def solve_frames(config: MeanFieldConfig, *, state: SolverState | None = None,
                 rho0: np.ndarray | None = None) -> Iterator[DensityFrame]:
    """The frames of :func:`solve`, each yielded as soon as it is computed.

    Parameters and errors as :func:`solve` (a bad ``state`` or ``rho0`` raises
    when the first frame is asked for; ``rho0`` is ignored when resuming).

    Yields
    ------
    DensityFrame
        At every save time after ``state.t`` (t = 0 included unless resuming).
    """
    T = float(config.T)
    stepper = _Stepper(config)
    if state is None:
        rho = initial_density(config) if rho0 is None else _check_rho0(config, rho0)
        h = float(config.dt0) if config.dt0 is not None else first_step(stepper, rho, T)
        start = SolverState(t=0.0, rho=rho, dt=h)
    else:
        start = _check_state(config, state)
    warned = False
    for s in lawson_frames(stepper, config.frame_times(), start, rtol=float(config.rtol),
                           atol=float(config.atol), max_steps=int(config.max_steps),
                           resumed=state is not None):
        fr = _frame(config, s.t, s.rho, s)
        warned = check_positivity(config.positivity, fr, warned, "modes", stacklevel=3)
        yield fr
