"""SA, USA and Kuramoto from one initial condition on the circle, side by side.

:func:`compare_models` draws one initial condition on the circle (d = 2),
runs each model from exactly those positions with the same output times,
and streams every model into one H5MD file; :func:`load_comparison` reads it
back as ``{model: Trajectory}`` and :func:`plot_comparison` draws the order
parameter ``r(t)``, the cluster count and the normalised energy of every
model on shared axes, above one circle panel per model.

On the circle (DESIGN.md section 1), with ``x_i = (cos theta_i, sin theta_i)``:

* SA:  ``dtheta_i/dt = sum_j e^{beta cos(theta_j - theta_i)} sin(theta_j - theta_i) / Z_i``,
  ``Z_i = sum_k e^{beta cos(theta_k - theta_i)}``;
* USA: the same sum divided by ``n`` instead of ``Z_i``;
* Kuramoto: ``dtheta_i/dt = omega_i + (c/n) sum_j sin(theta_j - theta_i)``.

At ``beta = 0``, ``c = 1`` and ``omega = 0`` the three coincide, which the
tests check.  The normalised energy ``(1/n^2) sum_ij e^{beta(<x_i, x_j> - 1)}``
(the ``energy_normalized`` observable, in (0, 1]) is computed with the same
``beta`` for every model, Kuramoto included, so it compares across models.

File layout (one H5MD particle group per model)::

    /particles/<model>/position/{step,time,value}   value (frames, n, 2)
    /observables/<model>/<name>/{step,time,value}   value (frames,)
    /parameters                                     kind = "comparison", models, seed, ...
    /parameters/<model>                             config (JSON), seed, complete

(in full in :mod:`particles.io.compare`).  Each model's configuration is
complete on its own: with a named ``init`` the shared seed reproduces the
initial condition (``particles simulate`` with that configuration gives the
same run); given angles are recorded as ``init = "array"`` and are frame 0.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from particles.analysis.comparison import LABELS, ComparisonResult, ModelSummary, model_label
from particles.config import SimulationConfig, check_names
from particles.engine import collect, iter_frames
from particles.errors import (
    ComparisonFailed,
    ComparisonInterrupted,
    ConfigError,
    OutputPathError,
)
from particles.io.compare import COMPARISON, ComparisonSpec, ModelFrame, load_comparison
from particles.models import MODELS
from particles.plotting.compare import (
    STYLES,
    check_png_path,
    comparison_figure,
    log_time,
    plot_comparison,
)
from particles.progress import Progress
from particles.runs.initial import initial_tokens
from particles.runs.session import Stops, check_output_path, stopped, stream
from particles.seeds import fresh_seed
from particles.trajectory import Trajectory

__all__ = [
    "DEFAULT_MODELS",
    "LABELS",
    "STYLES",
    "ComparisonFailed",
    "ComparisonInterrupted",
    "ComparisonResult",
    "ModelSummary",
    "check_models",
    "compare_models",
    "comparison_figure",
    "load_comparison",
    "log_time",
    "plot_comparison",
]

#: the models compared when none are named.
DEFAULT_MODELS = ("sa", "usa", "kuramoto")


# ---------------------------------------------------------------- running
def check_models(models: Any) -> tuple[str, ...]:
    """Model names (a sequence, or one comma-separated string) checked against the registry.

    Returns
    -------
    tuple of str
        The names in order.

    Raises
    ------
    ValueError
        Empty, unknown or repeated names (one-line message starting "models").
    """
    return check_names("models", models, MODELS)


def _initial_points(theta0: ArrayLike, n: int | None) -> np.ndarray:
    """Angles (n,) or points (n, 2) as points on the circle, shape (n, 2)."""
    a = np.asarray(theta0)
    if (
        not np.issubdtype(a.dtype, np.number)
        or a.ndim not in (1, 2)
        or (a.ndim == 2 and a.shape[1] != 2)
    ):
        raise ConfigError(
            f"theta0 must be n angles (n,) or n points (n, 2), got "
            f"{a.dtype} array of shape {a.shape}", "theta0"
        )
    a = a.astype(np.float64)
    if a.shape[0] < 1 or not np.all(np.isfinite(a)):
        raise ConfigError("theta0 must hold at least one token and only finite numbers",
                          "theta0")
    if n is not None and a.shape[0] != n:
        raise ConfigError(f"theta0 holds {a.shape[0]} tokens but n={n}", "theta0")
    if a.ndim == 1:
        return np.stack([np.cos(a), np.sin(a)], axis=-1)
    if np.any(np.linalg.norm(a, axis=1) == 0):
        raise ConfigError("theta0 points must be nonzero (they are normalised onto the circle)",
                          "theta0")
    return a


def model_configs(
    *,
    n: int,
    beta: float,
    models: tuple[str, ...],
    coupling: float,
    omega: Any,
    T: float,
    dt: float,
    save_every: int,
    save_times: Any,
    integrator: str,
    seed: int,
    init: str,
    usa_scale: str,
) -> dict[str, SimulationConfig]:
    """The validated configuration of every model (``coupling``/``omega`` go to Kuramoto).

    Raises
    ------
    ValueError
        Any invalid value, naming the argument (from
        :class:`~particles.config.SimulationConfig`), and output times that
        end at t = 0 (``T=0``).
    """
    if "kuramoto" not in models and (coupling != 1.0 or omega is not None):
        raise ConfigError(
            "coupling and omega apply to model 'kuramoto', which is not among "
            f"the models ({', '.join(models)})", "coupling" if coupling != 1.0 else "omega"
        )
    configs = {}
    for m in models:
        kuramoto = m == "kuramoto"
        configs[m] = SimulationConfig(
            n=n,
            d=2,
            beta=beta,
            model=m,
            usa_scale=usa_scale,
            integrator=integrator,
            dt=dt,
            T=T,
            save_every=save_every,
            save_times=save_times,
            seed=seed,
            init=init,
            coupling=coupling if kuramoto else 1.0,
            omega=omega if kuramoto else None,
        )
    last = next(iter(configs.values())).output_times()[-1]
    if not last > 0:  # every model would be the shared initial tokens: nothing compared
        field, value = ("T", T) if save_times is None else ("save_times", save_times)
        raise ConfigError(f"{field} must reach past t = 0 for a comparison (at t = 0 every "
                          f"model holds the same initial tokens), got {value!r}", field)
    return configs


def compare_models(
    *,
    n: int | None = None,
    beta: float,
    models: tuple[str, ...] | str = DEFAULT_MODELS,
    coupling: float = 1.0,
    omega: str | ArrayLike | None = None,
    T: float = 10.0,
    dt: float = 0.01,
    save_every: int = 10,
    save_times: str | ArrayLike | None = None,
    integrator: str = "rk4",
    seed: int | None = None,
    init: str = "uniform",
    theta0: ArrayLike | None = None,
    usa_scale: str = "n",
    out: str | os.PathLike,
    plot: str | os.PathLike | None = None,
    overwrite: bool = False,
    progress: bool = False,
    should_stop: Callable[[], bool] | None = None,
) -> ComparisonResult:
    """Run several models from one initial condition on the circle into one file.

    Parameters
    ----------
    n : int, optional
        Number of tokens (taken from ``theta0`` when None).
    beta : float
        Inverse temperature of SA and USA, and of every model's recorded energy.
    models : tuple of str or str
        Keys of :data:`particles.models.MODELS`, run in this order
        (``"sa,usa"`` is accepted).
    coupling : float
        Kuramoto coupling ``c`` (Kuramoto only).
    omega : str or array_like, shape (n,), optional
        Kuramoto natural frequencies: ``"lorentzian:WIDTH[:CENTER]"``,
        ``"gaussian:..."``, ``"uniform:..."`` (drawn with the seed) or ``n``
        numbers; None for all zero (Kuramoto only).
    T, dt : float
        Final time and step size (initial step when adaptive).
    save_every : int
        Steps between saved frames; or give ``save_times``.
    save_times : str or array_like, optional
        Output times, e.g. ``"log:0.1:1e3:40"`` (see
        :class:`~particles.config.SimulationConfig`).
    integrator : str
        Key of :data:`particles.integrators.INTEGRATORS`.
    seed : int, optional
        Root seed shared by every model (None: fresh entropy, recorded).
    init : str
        Named initial condition on the circle (``uniform``, ``equispaced``,
        ``cap:EPS``, ``vmf:KAPPA``); ignored when ``theta0`` is given.
    theta0 : array_like, shape (n,) or (n, 2), optional
        Initial angles, or points in the plane (normalised onto the circle).
    usa_scale : {"n", "n_exp_beta"}
        USA normalisation.
    out : str or path-like
        The comparison file; never replaced unless ``overwrite``.
    plot : str or path-like, optional
        Also write :func:`plot_comparison` to this PNG once every model ran
        (checked before any work; never replaced unless ``overwrite``).
    overwrite : bool
        Replace an existing ``out`` (once every model has run) and ``plot``.
    progress : bool
        A progress bar per model on stderr (runs longer than a second).
    should_stop : callable, optional
        Polled after every frame; True stops as Ctrl-C does.

    Returns
    -------
    ComparisonResult
        Trajectories of shape (frames, n, 2), identical at frame 0.

    Raises
    ------
    ValueError
        Before any work: an invalid argument (the message names it).
    particles.io.OutputPathError
        Before any work: ``out`` or ``plot`` exists (without ``overwrite``),
        its directory is missing or read-only, or both name one file.
    ComparisonInterrupted
        Ctrl-C or ``should_stop``; the frames computed so far are kept in
        ``out`` (marked incomplete) unless ``out`` already existed.
    ComparisonFailed
        A model's integration failed; frames kept as on interruption.
    """
    models = check_models(models)
    x0 = None if theta0 is None else _initial_points(theta0, n)
    if n is None:
        if x0 is None:
            raise ValueError("n is required unless theta0 is given")
        n = x0.shape[0]
    if seed is None:
        seed = fresh_seed()
    configs = model_configs(
        n=n,
        beta=beta,
        models=models,
        coupling=coupling,
        omega=omega,
        T=T,
        dt=dt,
        save_every=save_every,
        save_times=save_times,
        integrator=integrator,
        seed=seed,
        init="array" if x0 is not None else init,
        usa_scale=usa_scale,
    )
    path = check_output(out, overwrite)
    if plot is not None:
        if Path(plot).resolve() == path.resolve():
            raise OutputPathError(f"plot and out must be different files, both are {path}", plot)
        plot = check_png_path(plot, overwrite=overwrite)
    # one draw for every model: with a named init every config would draw the
    # same positions from the shared seed anyway; this makes it true by construction
    X0 = initial_tokens(next(iter(configs.values())), x0)
    trajectories: dict[str, Trajectory] = {}

    def frames(spec: ComparisonSpec, _: None):
        for m, config in spec.configs.items():
            kept = []
            label = f"simulating {model_label(m)}"
            with Progress(config.T, enabled=progress, label=label) as bar:
                for frame in iter_frames(config, X0, progress=bar.update):
                    kept.append(frame)
                    yield ModelFrame(m, frame)
            trajectories[m] = collect(config, kept, complete=True)

    stream(COMPARISON, path, ComparisonSpec(configs, seed), frames, stops=STOPS,
           overwrite=overwrite, should_stop=should_stop)
    result = ComparisonResult(path, trajectories, seed)
    if plot is not None:
        plot_comparison(result, plot, overwrite=overwrite)
    return result


#: a comparison takes the target's name once every model ran; a stop keeps the
#: frames in ``out`` (marked incomplete) unless ``out`` existed.
STOPS = Stops(
    "comparison",
    promote_at=None,
    interrupted=lambda path, kept, summary: ComparisonInterrupted(
        stopped("comparison", "interrupted", path, kept, summary), kept, path, summary),
    failed=lambda exc, path, kept, summary: ComparisonFailed(
        f"{exc}; " + stopped("comparison", "stopped", path, kept, summary), kept, path,
        summary),
    keep_on_error=False,
)


def check_output(path: str | os.PathLike, overwrite: bool) -> Path:
    """``path`` may be written (its directory exists and is writable; no file unless
    ``overwrite``); OutputPathError otherwise (:func:`particles.runs.session.check_output_path`
    of a session that cannot resume)."""
    return check_output_path(path, overwrite=overwrite, resumable=False)


