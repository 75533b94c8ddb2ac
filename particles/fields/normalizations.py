"""How attention weights are normalised: the ``normalization=`` registry.

Each entry carries its behaviour: the single-head drifts, their parameter
tuple, the NumPy reference of one head and its validation rules.  ``softmax``
is each kernel's own normalisation (rows sum to 1 for SA, the total mass for
USA; see :class:`particles.fields.kernels.Kernel`); ``sinkhorn`` replaces it by
doubly stochastic weights (:mod:`particles.fields.sinkhorn`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from particles.errors import invalid
from particles.fields import sinkhorn
from particles.fields.base import DriftSet
from particles.fields.kernels import KERNELS, USA_SCALES
from particles.fields.summation import SUMMATIONS
from particles.protocols import RunSpec


@dataclass(frozen=True)
class Normalization:
    """A registered normalisation of the attention weights.

    Attributes
    ----------
    name, description : str
    drifts : callable
        ``drifts(config) -> DriftSet``: the single-head drift pair,
        ``workspace(nchunks) -> int``, a path name and whether it runs BLAS.
    params : callable
        ``params(config, Q, K, V, qk_identity, v_identity, normalized) -> p``:
        the drift's parameter tuple for matrices of shape (d, d) (or stacks).
    reference : callable
        ``reference(config, X, Q, K, V, masses, normalized) -> Y``: plain
        NumPy output of one head, ``X, Y`` of shape (n, d), ``Q, K, V`` (d, d).
    check : callable
        ``check(config)``: raises ValueError (one line naming the argument)
        when the configuration cannot use this normalisation.
    """

    name: str
    description: str
    drifts: Callable[[RunSpec], DriftSet]
    params: Callable[..., tuple]
    reference: Callable[..., np.ndarray]
    check: Callable[[RunSpec], None]

    def __str__(self) -> str:
        return self.description


def usa_shift(config: RunSpec) -> float:
    """The USA log-weight shift ``c`` of a configuration (``beta`` or 0)."""
    return USA_SCALES[config.usa_scale].shift(config.beta)


def _softmax_drifts(config: RunSpec) -> DriftSet:
    return SUMMATIONS[config.summation].drifts(config)


def _softmax_params(config, Q, K, V, qk_identity, v_identity, normalized) -> tuple:
    return SUMMATIONS[config.summation].params(config, Q, K, V, qk_identity, v_identity,
                                               normalized, usa_shift(config))


def _softmax_reference(config, X, Q, K, V, masses, normalized) -> np.ndarray:
    kernel = KERNELS[config.kernel]
    return kernel.attention_reference(X, float(getattr(config, kernel.parameter)),
                                      normalized=normalized, usa_shift=usa_shift(config),
                                      Q=Q, K=K, V=V, masses=masses)


def _no_rules(config: RunSpec) -> None:
    return None


def _sinkhorn_drifts(config: RunSpec) -> DriftSet:
    n, d = config.n, config.d
    return DriftSet(sinkhorn.sinkhorn_serial, sinkhorn.sinkhorn_parallel,
                    lambda c: sinkhorn.sinkhorn_workspace_size(n, d, c), "sinkhorn")


def _sinkhorn_params(config, Q, K, V, qk_identity, v_identity, normalized) -> tuple:
    return (Q, K, V, float(config.beta), qk_identity, v_identity,
            int(config.sinkhorn_iters), float(config.sinkhorn_tol))


def _sinkhorn_reference(config, X, Q, K, V, masses, normalized) -> np.ndarray:
    return sinkhorn.sinkhorn_reference(X, beta=config.beta, iters=config.sinkhorn_iters,
                                       tol=config.sinkhorn_tol, Q=Q, K=K, V=V)[0]


def _sinkhorn_rules(config: RunSpec) -> None:
    def fail(name: str, allowed: str, got) -> None:
        raise invalid(name, allowed, got)

    if config.model != "sa":
        fail("normalization", "'softmax' unless model='sa'", config.normalization)
    if config.kernel != "edp":
        fail("normalization", "'softmax' unless kernel='edp'", config.normalization)
    if config.masses is not None:
        fail("masses", "None with normalization='sinkhorn'", "given masses")


#: name -> normalisation of the attention weights (model "sa" for sinkhorn).
NORMALIZATIONS: dict[str, Normalization] = {m.name: m for m in (
    Normalization("softmax", "rows sum to 1 (SA)", _softmax_drifts, _softmax_params,
                  _softmax_reference, _no_rules),
    Normalization("sinkhorn", "doubly stochastic by log-domain Sinkhorn iterations (edp kernel)",
                  _sinkhorn_drifts, _sinkhorn_params, _sinkhorn_reference, _sinkhorn_rules),
)}
