"""How attention sums are taken: the ``summation=`` registry.

Each entry carries its rules and behaviour: whether it can serve a run
(:attr:`Summation.refusal`, :meth:`Summation.check`), which concrete
summation it resolves to (``auto`` picks one by a cost model), the
single-head softmax drift pair and its parameter tuple, the truncation
degree a file records, and the cost of one drift evaluation.  ``direct``
evaluates the kernel at every pair; ``spectral`` sums zonal kernels on S^1
and S^2 by their series (:mod:`particles.fields.spectral`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from particles.errors import invalid
from particles.fields import costs, spectral
from particles.fields.base import DriftSet
from particles.fields.kernels import KERNELS
from particles.protocols import RunSpec

__all__ = ["SUMMATIONS", "Summation"]

#: the ``tol`` a run that sums directly must keep (it has no series to truncate).
DEFAULT_TOL = 1e-12


@dataclass(frozen=True)
class Summation:
    """A registered way of taking the attention sums.

    Attributes
    ----------
    name, description : str
    refusal : callable
        ``refusal(spec) -> str | None``: why it cannot serve a run (a phrase
        completing "the spectral summation ..."), or None.
    choose : callable
        ``choose(spec) -> str``: the concrete summation a run uses (``auto``
        resolves to ``direct`` or ``spectral``; the others to themselves).
    drifts : callable, optional
        ``drifts(spec) -> DriftSet``: the single-head softmax drift pair of a
        resolved run (None for ``auto``, which is resolved before).
    params : callable, optional
        ``params(spec, Q, K, V, qk_identity, v_identity, normalized, usa_shift)
        -> p``: that drift's parameter tuple for one head's ``Q, K, V`` (d, d).
    degree : callable, optional
        ``degree(spec) -> int``: the truncation degree of a series (K on the
        circle, L on S^2), recorded in a file; None for a summation without one.
    cost : callable, optional
        ``cost(spec, n) -> float``: the seconds of one drift evaluation of ``n``
        tokens of one system of a pairwise model on one core
        (:mod:`particles.fields.costs`); None for ``auto``, which is resolved before.
    """

    name: str
    description: str
    refusal: Callable[[RunSpec], str | None]
    choose: Callable[[RunSpec], str]
    drifts: Callable[[RunSpec], DriftSet] | None = None
    params: Callable[..., tuple] | None = None
    degree: Callable[[RunSpec], int] | None = None
    cost: Callable[[RunSpec, int], float] | None = None
    rules: Callable[[RunSpec], None] | None = None

    @property
    def series(self) -> bool:
        """Whether it sums by a truncated series (O(n K) per drift, not O(n^2))."""
        return self.degree is not None

    def check(self, spec: RunSpec) -> None:
        """Raise :class:`~particles.errors.ConfigError` when ``spec`` cannot use it."""
        if self.rules is not None:
            self.rules(spec)

    def __str__(self) -> str:
        return self.description


def _never(spec: RunSpec) -> None:
    return None


def _direct_rules(spec: RunSpec) -> None:
    if spec.tol != DEFAULT_TOL:  # accepted and ignored would mislead
        raise invalid("tol", "1e-12 (the default) unless summation is 'spectral' or 'auto'",
                      spec.tol)


def _direct_drifts(spec: RunSpec) -> DriftSet:
    return KERNELS[spec.kernel].single_head(spec.n, spec.d)


def _direct_params(spec, Q, K, V, qk_identity, v_identity, normalized, usa_shift) -> tuple:
    kernel = KERNELS[spec.kernel]
    masses = spec.mass_array()
    inv_mass = 1.0 / float(masses.sum())
    return kernel.params(Q, K, V, np.log(masses), float(getattr(spec, kernel.parameter)),
                         normalized, usa_shift, qk_identity, v_identity, inv_mass)


def _spectral_rules(spec: RunSpec) -> None:
    why = spectral.refusal(spec)
    if why is not None:
        raise invalid("summation", f"'direct' or 'auto' for this run, since the spectral "
                      f"summation {why}", spec.summation)


def _spectral_params(spec, Q, K, V, qk_identity, v_identity, normalized, usa_shift) -> tuple:
    return spectral.params(spec, Q, K, V, v_identity, normalized, usa_shift)


def _direct_cost(spec: RunSpec, n: int) -> float:
    # every pair, per head, once per Sinkhorn pass (fields.costs)
    sinkhorn = spec.normalization == "sinkhorn"
    return costs.pairs(n, spec.d, spec.heads, 1.0 + spec.sinkhorn_iters if sinkhorn else 1.0)


def _spectral_cost(spec: RunSpec, n: int) -> float:
    # the series' cost (fields.costs, measured like the pairs')
    return costs.series(n, spec.d, spectral.degree(spec))


def _auto_choose(spec: RunSpec) -> str:
    return "direct" if spectral.refusal(spec) is not None else spectral.choose(spec)


#: name -> summation; the single source of truth for ``summation=``.
SUMMATIONS: dict[str, Summation] = {s.name: s for s in (
    Summation("direct", "n^2 kernel evaluations per drift", _never, lambda spec: "direct",
              _direct_drifts, _direct_params, cost=_direct_cost, rules=_direct_rules),
    Summation("spectral", "zonal kernels on S^1 and S^2 by Bessel series (O(n K)), exact "
              "to tol", spectral.refusal, lambda spec: "spectral", spectral.drifts,
              _spectral_params, spectral.degree, _spectral_cost, rules=_spectral_rules),
    Summation("auto", "the faster of the two by a cost model (recorded as the one chosen)",
              _never, _auto_choose),
)}
