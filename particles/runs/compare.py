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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from particles.analysis import (
    DEFAULT_EPS,
    cluster_sizes_centers,
    component_labels,
    count_clusters,
)
from particles.config import SimulationConfig, check_names
from particles.engine import collect, initial_positions, iter_frames
from particles.errors import (
    ComparisonFailed,
    ComparisonInterrupted,
    IntegrationError,
    OutputPathError,
)
from particles.fields import MODELS
from particles.io.compare import ComparisonWriter, ModelWriter, load_comparison
from particles.progress import Progress
from particles.runs.session import OutputFile, check_output_path, guard, stopped
from particles.seeds import fresh_seed
from particles.trajectory import Trajectory

__all__ = [
    "DEFAULT_MODELS",
    "ComparisonFailed",
    "ComparisonInterrupted",
    "ComparisonResult",
    "ModelSummary",
    "check_models",
    "compare_models",
    "comparison_figure",
    "load_comparison",
    "plot_comparison",
]

#: the models compared when none are named.
DEFAULT_MODELS = ("sa", "usa", "kuramoto")

#: display names; other registered models are shown in upper case.
LABELS = {"sa": "SA", "usa": "USA", "kuramoto": "Kuramoto"}

#: colour and line style per model (and per kernel): identical curves (beta = 0) stay visible
STYLES = (
    ("tab:blue", "-"),
    ("tab:orange", "--"),
    ("tab:green", ":"),
    ("tab:red", "-."),
    ("tab:purple", "-"),
)


def _label(model: str) -> str:
    return LABELS.get(model, model.upper())


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class ModelSummary:
    """The last frame of one model of a comparison.

    Attributes
    ----------
    model : str
    time : float
        Time of the last frame.
    order_parameter : float
        ``r = |(1/n) sum_j x_j|`` in [0, 1].
    clusters : int
        :func:`~particles.analysis.count_clusters` at the comparison's eps.
    energy_normalized : float
        ``(1/n^2) sum_ij exp(beta (<x_i, x_j> - 1))`` in (0, 1].
    complete : bool
        Whether the model's run reached its final time.
    """

    model: str
    time: float
    order_parameter: float
    clusters: int
    energy_normalized: float
    complete: bool


@dataclass(frozen=True)
class ComparisonResult:
    """Trajectories of several models from one initial condition.

    Attributes
    ----------
    path : Path or None
        The comparison file (None for results built in memory).
    trajectories : dict of str to Trajectory
        One per model, in run order; ``positions`` of shape (frames, n, 2),
        the same ``times`` for every model.
    seed : int
        The root seed shared by every model.
    """

    path: Path | None
    trajectories: dict[str, Trajectory]
    seed: int

    @classmethod
    def from_file(cls, path: str | Path) -> ComparisonResult:
        """Read a comparison file (see :func:`load_comparison`)."""
        trajectories = load_comparison(path)
        seed = next(iter(trajectories.values())).config.seed
        return cls(Path(path), trajectories, int(seed))

    @property
    def models(self) -> tuple[str, ...]:
        """The models, in run order."""
        return tuple(self.trajectories)

    @property
    def initial(self) -> np.ndarray:
        """The shared initial positions, shape (n, 2)."""
        return next(iter(self.trajectories.values())).positions[0]

    def cluster_counts(self, eps: float = DEFAULT_EPS) -> dict[str, np.ndarray]:
        """Cluster count of every frame of every model.

        Returns
        -------
        dict of str to ndarray of int64, shape (frames,)
        """
        return {
            m: np.atleast_1d(count_clusters(t.positions, eps)) for m, t in self.trajectories.items()
        }

    def summaries(self, eps: float = DEFAULT_EPS) -> tuple[ModelSummary, ...]:
        """One :class:`ModelSummary` per model, in run order."""
        return tuple(
            ModelSummary(
                model=m,
                time=float(t.times[-1]),
                order_parameter=float(t.observables["order_parameter"][-1]),
                clusters=int(count_clusters(t.final, eps)),
                energy_normalized=float(t.observables["energy_normalized"][-1]),
                complete=t.complete,
            )
            for m, t in self.trajectories.items()
        )

    def table(self, eps: float = DEFAULT_EPS) -> str:
        """A text table of :meth:`summaries`: one line per model."""
        lines = [f"{'model':<10}{'t':>10}{'r':>9}{'clusters':>10}{'energy_norm':>13}"]
        for s in self.summaries(eps):
            lines.append(
                f"{_label(s.model):<10}{s.time:>10.4g}{s.order_parameter:>9.4f}"
                f"{s.clusters:>10d}{s.energy_normalized:>13.6g}"
                + ("" if s.complete else "  (incomplete)")
            )
        return "\n".join(lines)


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
        raise ValueError(
            f"theta0 must be n angles (n,) or n points (n, 2), got "
            f"{a.dtype} array of shape {a.shape}"
        )
    a = a.astype(np.float64)
    if a.shape[0] < 1 or not np.all(np.isfinite(a)):
        raise ValueError("theta0 must hold at least one token and only finite numbers")
    if n is not None and a.shape[0] != n:
        raise ValueError(f"theta0 holds {a.shape[0]} tokens but n={n}")
    if a.ndim == 1:
        return np.stack([np.cos(a), np.sin(a)], axis=-1)
    if np.any(np.linalg.norm(a, axis=1) == 0):
        raise ValueError("theta0 points must be nonzero (they are normalised onto the circle)")
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
        :class:`~particles.config.SimulationConfig`).
    """
    if "kuramoto" not in models and (coupling != 1.0 or omega is not None):
        raise ValueError(
            "coupling and omega apply to model 'kuramoto', which is not among "
            f"the models ({', '.join(models)})"
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
        Keys of :data:`particles.fields.MODELS`, run in this order
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
        plot = check_output(plot, overwrite)
        if plot.resolve() == path.resolve():
            raise OutputPathError(f"plot and out must be different files, both are {path}")
    # one draw for every model: with a named init every config would draw the
    # same positions from the shared seed anyway; this makes it true by construction
    X0 = initial_positions(next(iter(configs.values())), x0)
    output = OutputFile(path, overwrite=overwrite)
    writer = ComparisonWriter.create(output.writing, models=models, seed=seed)
    trajectories: dict[str, Trajectory] = {}
    current: list[ModelWriter] = []

    def close() -> int:
        if current:
            current.pop().close(complete=False)
        writer.close(complete=False)
        return writer.frames

    def interrupted(kept: Path | None) -> ComparisonInterrupted:
        return ComparisonInterrupted(stopped("comparison", "interrupted", path, kept), kept, path)

    def failed(exc: IntegrationError, kept: Path | None) -> ComparisonFailed:
        message = f"{exc}; " + stopped("comparison", "stopped", path, kept)
        return ComparisonFailed(message, kept, path)

    with guard(output, close, interrupted=interrupted, failed=failed, keep_on_error=False):
        for m, config in configs.items():
            current.append(writer.add_model(config))
            frames = []
            with Progress(config.T, enabled=progress, label=f"simulating {_label(m)}") as bar:
                for frame in iter_frames(config, X0, progress=bar.update):
                    frames.append(frame)
                    current[0].append(frame)
                    if should_stop is not None and should_stop():
                        raise KeyboardInterrupt
            current.pop().close(complete=True)
            trajectories[m] = collect(config, frames, complete=True)
    writer.close(complete=True)
    output.finish()
    result = ComparisonResult(path, trajectories, seed)
    if plot is not None:
        plot_comparison(result, plot, overwrite=overwrite)
    return result


def check_output(path: str | os.PathLike, overwrite: bool) -> Path:
    """``path`` may be written (its directory exists and is writable; no file unless
    ``overwrite``); OutputPathError otherwise (:func:`particles.runs.session.check_output_path`
    of a session that cannot resume)."""
    return check_output_path(path, overwrite=overwrite, resumable=False)


# ---------------------------------------------------------------- plotting
def _as_result(
    source: ComparisonResult | Mapping[str, Trajectory] | str | os.PathLike,
) -> ComparisonResult:
    if isinstance(source, ComparisonResult):
        return source
    if isinstance(source, Mapping):
        trajs = dict(source)
        if not trajs:
            raise ValueError("no trajectories to plot")
        return ComparisonResult(None, trajs, int(next(iter(trajs.values())).config.seed))
    return ComparisonResult.from_file(source)


def log_time(times: np.ndarray) -> bool:
    """Log time when the positive output times span at least a decade."""
    pos = times[times > 0]
    return pos.size >= 2 and pos[-1] >= 10 * pos[0]


def _model_title(t: Trajectory) -> str:
    cfg = t.config
    label = _label(cfg.model)
    if cfg.model == "kuramoto":
        parts = [f"c={cfg.coupling:g}"]
        if isinstance(cfg.omega, str):
            parts.append(f"ω~{cfg.omega}")
        elif cfg.omega is not None:
            parts.append("ω given")
        label += f" ({', '.join(parts)})"
    elif cfg.model == "usa" and cfg.usa_scale != "n":
        label += f" ({cfg.usa_scale})"
    return label


def _draw_circle(ax, traj: Trajectory, initial: np.ndarray, color: str, eps: float) -> None:
    """Final clusters of one model (marker area ∝ size), the start in grey, r e^{i psi}."""
    final = traj.final
    n = final.shape[0]
    labels, count = component_labels(final, eps)
    count = int(count)
    sizes, centers = cluster_sizes_centers(final, labels, count)
    s = np.linspace(0, 2 * np.pi, 361)
    ax.plot(np.cos(s), np.sin(s), color="0.75", linewidth=1.0, zorder=0)
    # the shared start, inside the circle so that it never hides the end state
    ax.scatter(*(0.8 * initial).T, s=5, color="0.65", linewidths=0, zorder=1)
    ax.scatter(
        *centers.T,
        s=8 + 250 * sizes / n,
        color=color,
        alpha=0.85,
        edgecolors="k",
        linewidths=0.4,
        zorder=3,
    )
    if count <= 8:  # sizes as numbers while they stay readable
        for size, c in zip(sizes, centers, strict=True):
            if size > 1:
                ax.text(*(1.22 * c), str(size), ha="center", va="center", fontsize=8)
    z = final.mean(axis=0)
    r = float(np.hypot(*z))
    if r > 0.02:
        ax.annotate(
            "",
            xy=tuple(z),
            xytext=(0.0, 0.0),
            zorder=4,
            arrowprops=dict(arrowstyle="-|>", color=color, lw=1.4),
        )
    ax.set_aspect("equal")
    ax.set_xlim(-1.35, 1.35)
    ax.set_ylim(-1.35, 1.35)
    ax.set_axis_off()
    ax.set_title(
        f"{_label(traj.config.model)} at t={traj.times[-1]:g}\n"
        f"{count} cluster{'s' * (count != 1)}, r={r:.2f}",
        fontsize=9,
        color=color,
    )


def comparison_figure(
    source: ComparisonResult | Mapping[str, Trajectory] | str | os.PathLike,
    *,
    eps: float = DEFAULT_EPS,
):
    """Figure of a comparison: r(t), cluster count and energy, then one circle per model.

    Parameters
    ----------
    source : ComparisonResult, dict of str to Trajectory, or path
        The comparison (a path is read with :func:`load_comparison`).
    eps : float
        Cluster linking distance (radians) of the counts.

    Returns
    -------
    matplotlib.figure.Figure
        Built without pyplot (nothing shown); three line panels sharing a
        time axis (log time when the output times span a decade or more;
        frames at t = 0 are then left out) with one line per model, and a
        row of circle panels: each model's final tokens (coloured by
        cluster), the shared initial tokens in grey on an inner circle and
        the order parameter as an arrow.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    result = _as_result(source)
    trajs = result.trajectories
    k = len(trajs)
    first = next(iter(trajs.values()))
    cfg = first.config
    counts = result.cluster_counts(eps)
    log = log_time(first.times)

    fig = Figure(figsize=(max(8.0, 3.0 * k), 10.5), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[2.5, 1.0])
    ax_r, ax_c, ax_e = top.subplots(3, 1, sharex=True)
    for i, (m, t) in enumerate(trajs.items()):
        color, style = STYLES[i % len(STYLES)]
        keep = t.times > 0 if log else np.ones(t.frames, dtype=bool)
        x = t.times[keep]
        kw = dict(color=color, linestyle=style, linewidth=1.7)
        ax_r.plot(x, t.observables["order_parameter"][keep], label=_model_title(t), **kw)
        ax_c.step(x, counts[m][keep], where="post", **kw)
        ax_e.plot(x, t.observables["energy_normalized"][keep], **kw)
    if log:
        ax_e.set_xscale("log")
    ax_r.set_ylim(0, 1.05)
    ax_r.set_ylabel("order parameter r")
    ax_r.legend(loc="best", fontsize=9)
    top_count = max(int(c.max()) for c in counts.values())
    if top_count > 40:
        ax_c.set_yscale("log")
    else:
        ax_c.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax_c.set_ylim(0, top_count + 1)
    ax_c.set_ylabel(f"clusters (eps={eps:g})")
    ax_e.set_ylim(0, 1.05)
    ax_e.set_ylabel("normalised energy\n" + r"$2\beta e^{-\beta}E_\beta$")
    ax_e.set_xlabel("time t" + (" (log)" if log else ""))
    for ax in (ax_r, ax_c, ax_e):
        ax.grid(True, which="major", color="0.9", linewidth=0.6)
    top.suptitle(
        f"n={cfg.n}, β={cfg.beta:g}: {', '.join(map(_label, trajs))} "
        "from the same initial condition"
    )

    circles = np.atleast_1d(bottom.subplots(1, k))
    for i, (ax, t) in enumerate(zip(circles, trajs.values(), strict=True)):
        _draw_circle(ax, t, result.initial, STYLES[i % len(STYLES)][0], eps)
    bottom.supxlabel(
        "final clusters: marker area ∝ size (sizes > 1 written when at most 8)\n"
        r"grey: shared initial tokens (at radius 0.8); arrow: $r\,e^{i\psi}$",
        fontsize=8,
        color="0.35",
    )
    return fig


def plot_comparison(
    source: ComparisonResult | Mapping[str, Trajectory] | str | os.PathLike,
    out: str | os.PathLike,
    *,
    overwrite: bool = False,
    eps: float = DEFAULT_EPS,
    dpi: int = 120,
) -> Path:
    """Draw :func:`comparison_figure` and write it as a PNG (Agg; nothing shown).

    Parameters
    ----------
    source : ComparisonResult, dict of str to Trajectory, or path
        The comparison.
    out : str or path-like
        Output PNG.
    overwrite : bool
        Replace an existing ``out``.
    eps : float
        Cluster linking distance (radians).
    dpi : int
        Resolution.

    Returns
    -------
    Path
        The written file.

    Raises
    ------
    FileExistsError
        ``out`` exists and ``overwrite`` is False (checked before drawing).
    FileNotFoundError
        The directory of ``out`` does not exist.
    """
    out = Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True (--overwrite) to replace it")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"output directory {out.parent} does not exist")
    comparison_figure(source, eps=eps).savefig(out, dpi=dpi)
    return out
