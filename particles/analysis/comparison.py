"""Results of the comparison sessions: several runs from one initial condition.

:class:`ComparisonResult` (models, :func:`particles.runs.compare_models`) and
:class:`KernelComparison` (attention kernels,
:func:`particles.runs.compare_kernels`) hold the trajectories and what is
measured on them; the sessions build them and :mod:`particles.plotting.compare`
and :mod:`particles.plotting.kernels` draw them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from particles.analysis.components import DEFAULT_EPS, count_clusters
from particles.config import KERNEL_PARAMETERS, SimulationConfig
from particles.display import time_text, value_text
from particles.io.compare import load_comparison
from particles.models import MODELS
from particles.trajectory import Trajectory

__all__ = ["LABELS", "ComparisonResult", "KernelComparison", "KernelRun", "ModelSummary",
           "min_inner_product", "model_label"]

#: model -> display name, from the registry (:attr:`particles.models.Model.label`).
LABELS = {k: m.label or k.upper() for k, m in MODELS.items()}


def model_label(model: str) -> str:
    """Display name of a model (:attr:`particles.models.Model.label`: ``"SA"``,
    ``"USA"``, ``"Kuramoto"``; one registered without a label in upper case)."""
    entry = MODELS.get(model)
    return entry.label if entry is not None and entry.label else model.upper()


# ------------------------------------------------------------------ models
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
        :func:`~particles.analysis.count_clusters` at the comparison's eps
        (0: spread).
    energy_normalized : float
        ``(1/n^2) sum_ij exp(beta (<x_i, x_j> - 1))`` in (0, 1].
    complete : bool
        Whether the model's run reached its final time.
    spread : bool
        An eps-linked group of tokens spans more than 90 degrees (the rule of
        :mod:`particles.observables.spread`; ``clusters`` is then 0): a
        population spread round the circle (an incoherent Kuramoto
        population), not a cluster; the table prints ``spread`` and ``r``
        tells how coherent it is.
    """

    model: str
    time: float
    order_parameter: float
    clusters: int
    energy_normalized: float
    complete: bool
    spread: bool = False

    @property
    def clusters_text(self) -> str:
        """The cluster count as the table prints it (``"spread"`` for a spread population)."""
        return "spread" if self.spread else str(self.clusters)


def min_inner_product(x: np.ndarray, chunk: int | None = None) -> float:
    """``min_{i, j} <x_i, x_j>`` of one system, in row blocks (no n-by-n matrix).

    Parameters
    ----------
    x : ndarray, shape (n, d)
    chunk : int, optional
        Rows per block (default: blocks of about 32 MiB, at most 512 rows).

    Returns
    -------
    float
        1.0 for a single token.
    """
    x = np.asarray(x, dtype=np.float64)
    if chunk is None:
        chunk = max(1, min(512, 2**22 // max(1, x.shape[0])))
    out = 1.0
    for a in range(0, x.shape[0], chunk):
        out = min(out, float((x[a : a + chunk] @ x.T).min()))
    return out


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
        out = []
        for m, t in self.trajectories.items():
            k = int(count_clusters(t.final, eps))
            out.append(
                ModelSummary(
                    model=m,
                    time=float(t.times[-1]),
                    order_parameter=float(t.observables["order_parameter"][-1]),
                    clusters=k,
                    energy_normalized=float(t.observables["energy_normalized"][-1]),
                    complete=t.complete,
                    spread=k == 0,
                )
            )
        return tuple(out)

    def table(self, eps: float = DEFAULT_EPS) -> str:
        """A text table of :meth:`summaries`: one line per model.

        ``r`` is the order parameter ``|(1/n) sum_j x_j|`` at the last frame;
        ``clusters`` reads ``spread`` where an eps-linked group of tokens
        spans more than 90 degrees (see :class:`ModelSummary`).
        """
        lines = [f"{'model':<10}{'t':>10}{'r':>9}{'clusters':>10}{'energy_norm':>13}"]
        spread = False
        for s in self.summaries(eps):
            spread |= s.spread
            lines.append(
                f"{model_label(s.model):<10}{time_text(s.time):>10}{s.order_parameter:>9.4f}"
                f"{s.clusters_text:>10}{s.energy_normalized:>13.6g}"
                + ("" if s.complete else "  (incomplete)")
            )
        if spread:
            lines.append(
                f"spread: an eps-linked group of tokens (eps={value_text(eps)}) spanning more "
                "than 90 degrees, not a cluster; r measures its coherence"
            )
        return "\n".join(lines)


# ----------------------------------------------------------------- kernels
@dataclass(frozen=True)
class KernelRun:
    """One kernel of a comparison.

    Attributes
    ----------
    kernel : str
        Key of :data:`particles.fields.KERNELS`.
    trajectory : Trajectory
        ``positions`` of shape (frames, n, d); frame 0 is the shared start.
    clusters : ndarray of int64, shape (frames,)
        :func:`~particles.analysis.count_clusters` of every frame.
    histograms : ndarray of int64, shape (frames, bins)
        Pair inner-product counts of every frame (``n (n - 1) / 2`` pairs
        each) on the comparison's ``bin_edges``.
    """

    kernel: str
    trajectory: Trajectory
    clusters: np.ndarray
    histograms: np.ndarray

    @property
    def label(self) -> str:
        """The kernel with the value of its parameter, e.g. ``"rbf (τ=2)"``."""
        cfg = self.trajectory.config
        param = KERNEL_PARAMETERS[self.kernel]
        value = {"beta": cfg.beta, "tau": cfg.tau, "gamma": cfg.gamma}[param]
        symbol = {"beta": "β", "tau": "τ", "gamma": "\u03b3"}[param]
        return f"{self.kernel} ({symbol}={value:g})"


@dataclass(frozen=True)
class KernelComparison:
    """Runs of several kernels from one initial condition.

    Attributes
    ----------
    runs : dict of str to KernelRun
        One per kernel, in run order.
    x0 : ndarray, shape (n, d)
        The shared initial tokens.
    times : ndarray, shape (frames,)
        The output times, the same for every kernel.
    bin_edges : ndarray, shape (bins + 1,)
        Histogram bin edges on [-1, 1].
    eps : float
        Cluster linking distance (radians) of the counts.
    seed : int
        The root seed that drew ``x0``, recorded in every configuration.
    config : SimulationConfig, optional
        The configuration ``x0`` was drawn with (the first kernel's, with its
        ``init`` and ``seed``: each run's own records ``init="array"``).
    """

    runs: dict[str, KernelRun]
    x0: np.ndarray
    times: np.ndarray
    bin_edges: np.ndarray
    eps: float
    seed: int
    config: SimulationConfig | None = None

    @property
    def kernels(self) -> tuple[str, ...]:
        """The kernels, in run order."""
        return tuple(self.runs)

    def table(self) -> str:
        """A text table: kernel, final cluster count and final mean inner product."""
        lines = [f"{'kernel':<22}{'clusters':>10}{'mean <xi,xj>':>14}"]
        for run in self.runs.values():
            t = run.trajectory
            mean = float(t.observables["mean_inner_product"][-1])
            lines.append(
                f"{run.label:<22}{int(run.clusters[-1]):>10d}{mean:>14.4f}"
                + ("" if t.complete else "  (incomplete)")
            )
        return "\n".join(lines)
