"""Fields (velocity kernels) and the model registry.

A model turns a validated configuration into a :class:`CompiledField`: a pair
of compiled drift functions ``drift(X, p, out, ws)`` (one serial, to run many
systems in parallel; one parallel over rows, for one large system), their
parameter tuple ``p``, the size of their float64 scratch ``ws``, and a plain
NumPy reference with the same meaning.

The drift writes the *ambient* attention output ``y`` of shape ``(n, d)``;
the dynamics is ``dx_i/dt = P_{x_i}(y_i)`` and integrators do the projection
(the Euler layer ``normalize(x + h y)`` uses ``y`` unprojected).

Adding a model is one module with its kernels plus one line in :data:`MODELS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from particles.fields import attention, kuramoto

if TYPE_CHECKING:
    from particles.config import SimulationConfig

#: from this dimension on, the attention kernels multiply row blocks with BLAS
#: (the step is bound by matrix products, not by exp; see benchmarks/).
BLAS_MIN_D = 24


@dataclass(frozen=True)
class CompiledField:
    """A drift ready for the compiled integrators.

    Attributes
    ----------
    serial, parallel : numba dispatcher
        ``drift(X, p, out, ws)`` with ``X, out`` of shape (n, d) and ``ws`` a
        1-D float64 scratch array; ``parallel`` splits rows over threads.
    params : tuple
        The ``p`` argument.
    workspace : callable
        ``workspace(nchunks) -> int``, the scratch length for ``nchunks`` row
        chunks (1 for ``serial``).
    reference : callable
        ``reference(X) -> Y``, plain NumPy, shape (n, d) -> (n, d).
    name : str
        Path taken (for logs and benchmarks).
    pairwise : bool
        True when an evaluation costs O(n^2) (attention); O(n) fields (the
        Kuramoto mean field) gain nothing from splitting rows over threads.
    """

    serial: Callable
    parallel: Callable
    params: tuple
    workspace: Callable[[int], int]
    reference: Callable[[np.ndarray], np.ndarray]
    name: str
    pairwise: bool = True


def _attention(config: SimulationConfig, *, normalized: bool) -> CompiledField:
    n, d = config.n, config.d
    Q, K, V = config.matrix("Q"), config.matrix("K"), config.matrix("V")
    eye = np.eye(d)
    qk_identity = bool(np.array_equal(Q, eye) and np.array_equal(K, eye))
    v_identity = bool(np.array_equal(V, eye))
    masses = config.mass_array()
    usa_shift = float(config.beta) if config.usa_scale == "n_exp_beta" else 0.0
    params = (
        np.ascontiguousarray(Q),
        np.ascontiguousarray(K),
        np.ascontiguousarray(V),
        np.log(masses),
        float(config.beta),
        normalized,
        usa_shift,
        qk_identity,
        v_identity,
        1.0 / float(masses.sum()),
    )
    blas = d >= BLAS_MIN_D
    if blas:
        serial, parallel = attention.attention_blas_serial, attention.attention_blas_parallel
    else:
        serial, parallel = attention.attention_direct_serial, attention.attention_direct_parallel

    def reference(X: np.ndarray) -> np.ndarray:
        return attention.attention_reference(
            X, beta=config.beta, normalized=normalized, usa_shift=usa_shift,
            Q=Q, K=K, V=V, masses=masses,
        )

    return CompiledField(
        serial=serial,
        parallel=parallel,
        params=params,
        workspace=lambda nchunks: attention.workspace_size(n, d, nchunks, blas),
        reference=reference,
        name=("blas" if blas else "direct"),
    )


def _sa(config: SimulationConfig) -> CompiledField:
    return _attention(config, normalized=True)


def _usa(config: SimulationConfig) -> CompiledField:
    return _attention(config, normalized=False)


@dataclass(frozen=True)
class Model:
    """A registered model: name, one-line description and field builder."""

    name: str
    description: str
    build: Callable[[SimulationConfig], CompiledField]


#: name -> model; the single source of truth for ``model=`` (API, CLI, docs).
MODELS: dict[str, Model] = {
    m.name: m
    for m in (
        Model("sa", "self-attention, softmax (row-stochastic) weights", _sa),
        Model("usa", "unnormalized self-attention, weights divided by n", _usa),
        Model("kuramoto", "Kuramoto oscillators on the circle (d = 2), O(n)", kuramoto.build),
    )
}

#: attention kernels kappa(q, k); DESIGN.md section 1.
KERNELS: dict[str, str] = {"edp": "exp(beta <q, k>)"}


def build_field(config: SimulationConfig) -> CompiledField:
    """Build the compiled field of a validated configuration."""
    return MODELS[config.model].build(config)
