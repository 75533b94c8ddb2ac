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
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from particles._numba import jit, kernel_key
from particles.fields import attention, kernels, kuramoto, sinkhorn
from particles.fields.weights import draw_layer, per_system

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
    layer_params : callable, optional
        ``layer_params(layer) -> p``: the parameters of layer ``layer`` (random
        weights redrawn per layer); None for fields without weights.
    speed : float, optional
        Upper bound on token speeds, over every system (None: unknown, and no
        step-size warning is given).
    select : numba dispatcher, optional
        ``select(p, b) -> p_b`` when the systems of a batch have their own
        parameters (``weight_draws="independent"``): ``params`` and
        ``layer_params`` then stack the per-system entries along a leading
        batch axis, and runners hand system ``b`` its ``p_b``.  None when
        every system runs with ``params``.
    """

    serial: Callable
    parallel: Callable
    params: tuple
    workspace: Callable[[int], int]
    reference: Callable[[np.ndarray], np.ndarray]
    name: str
    pairwise: bool = True
    layer_params: Callable[[int], tuple] | None = None
    speed: float | None = None
    select: Callable | None = None


@jit
def select_qkv(p, b):
    """Parameters of system ``b`` when Q, K, V (the first three entries of
    every attention parameter tuple) carry a leading batch axis."""
    return (p[0][b], p[1][b], p[2][b], *p[3:])


def usa_log_bound(config: SimulationConfig, Q: np.ndarray, K: np.ndarray) -> float:
    """Upper bound on ``log kappa(q, k)`` minus the USA shift, for unit tokens.

    The USA factor ``exp`` of it must stay finite (validation and
    :func:`speed_bound` use it).  Parameters ``Q, K`` have shape (heads, d, d)
    or (d, d).
    """
    Q = np.asarray(Q).reshape(-1, config.d, config.d)
    K = np.asarray(K).reshape(-1, config.d, config.d)
    nq = max(float(np.linalg.norm(q, 2)) for q in Q)
    nk = max(float(np.linalg.norm(k, 2)) for k in K)
    qk = max(float(np.linalg.norm(q.T @ k, 2)) for q, k in zip(Q, K, strict=True))
    if config.kernel == "edp":
        shift = config.beta if config.usa_scale == "n_exp_beta" else 0.0
        return config.beta * qk - shift
    if config.kernel == "rbf":
        # the edp core scales by exp(2 tau |q| |k|) before the exp(-tau |q|^2) factor
        return 2.0 * config.tau * nq * nk
    if config.kernel == "intersection":
        # sum_l min(b q_l, b k_l) <= b (|q|_1 + |k|_1) / 2 <= b sqrt(d) max(|q|, |k|)
        return config.beta * np.sqrt(config.d) * max(nq, nk)
    if config.kernel == "l2":
        return float(np.log(max(config.tau * (nq + nk), 1e-300)))
    return float(2.0 * np.log(max(nq * nk + abs(config.gamma), 1e-300)))


def speed_bound(config: SimulationConfig, Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> float:
    """Upper bound on token speeds for attention models with weights (heads, d, d).

    SA (and Sinkhorn) move tokens by convex combinations of ``V x_j``: at most
    ``||V||`` per head.  USA multiplies by the largest weight.
    """
    v = sum(float(np.linalg.norm(vh, 2)) for vh in np.asarray(V).reshape(-1, config.d, config.d))
    if config.model == "usa":
        return v * float(np.exp(min(usa_log_bound(config, Q, K), 700.0)))
    return v


def _check_usa_range(config: SimulationConfig, Q: np.ndarray, K: np.ndarray) -> None:
    if config.model == "usa":
        reach = usa_log_bound(config, Q, K)
        if reach > 700.0:
            raise ValueError(
                f"beta must be small enough that USA weights stay finite with the drawn "
                f"weights (log bound {reach:.4g} > 700); lower beta/tau or use "
                f"usa_scale='n_exp_beta' (kernel edp), got {config.beta!r}")


def _head_params(config: SimulationConfig, Q: np.ndarray, K: np.ndarray, V: np.ndarray,
                 normalized: bool) -> tuple:
    """Parameter tuple of the single-head drift; ``Q, K, V`` of shape (d, d), or
    (heads, d, d) for the multi-head drift (identity flags then hold for all heads)."""
    d = config.d
    eye = np.eye(d)
    qk_identity = bool(np.all(Q == eye) and np.all(K == eye))
    v_identity = bool(np.all(V == eye))
    Q, K, V = (np.ascontiguousarray(a, dtype=np.float64) for a in (Q, K, V))
    masses = config.mass_array()
    inv_mass = 1.0 / float(masses.sum())
    if config.normalization == "sinkhorn":
        return (Q, K, V, float(config.beta), qk_identity, v_identity,
                int(config.sinkhorn_iters), float(config.sinkhorn_tol))
    if config.kernel == "edp":
        usa_shift = float(config.beta) if config.usa_scale == "n_exp_beta" else 0.0
        return (Q, K, V, np.log(masses), float(config.beta), normalized, usa_shift,
                qk_identity, v_identity, inv_mass)
    param = {"rbf": config.tau, "l2": config.tau, "quadratic": config.gamma,
             "intersection": config.beta}[config.kernel]
    return (Q, K, V, np.log(masses), float(param), normalized, qk_identity, v_identity,
            inv_mass)


def _single_head(config: SimulationConfig) -> tuple[Callable, Callable, Callable[[int], int],
                                                    str]:
    """(serial, parallel, workspace, name) of the single-head drift of a configuration."""
    n, d = config.n, config.d
    blas = d >= BLAS_MIN_D
    if config.normalization == "sinkhorn":
        return (sinkhorn.sinkhorn_serial, sinkhorn.sinkhorn_parallel,
                lambda c: sinkhorn.sinkhorn_workspace_size(n, d, c), "sinkhorn")
    if config.kernel in kernels.PAIR_DRIFTS_KERNELS:
        return (kernels.PAIR_DRIFTS[(config.kernel, False)],
                kernels.PAIR_DRIFTS[(config.kernel, True)],
                lambda c: kernels.pair_workspace_size(n, d, c), f"pair_{config.kernel}")

    def ws(c: int) -> int:
        return attention.workspace_size(n, d, c, blas)

    if config.kernel == "rbf":
        ser, par = ((kernels.rbf_blas_serial, kernels.rbf_blas_parallel) if blas
                    else (kernels.rbf_direct_serial, kernels.rbf_direct_parallel))
        return ser, par, (lambda c: 2 * n + ws(c)), ("rbf_blas" if blas else "rbf_direct")
    if blas:
        return (attention.attention_blas_serial, attention.attention_blas_parallel, ws, "blas")
    return (attention.attention_direct_serial, attention.attention_direct_parallel, ws,
            "direct")


@cache
def _multihead_pair(serial: Callable, parallel: Callable) -> tuple[Callable, Callable]:
    return (sinkhorn.multihead_drift(serial, kernel_key(serial)),
            sinkhorn.multihead_drift(parallel, kernel_key(parallel)))


def _attention(config: SimulationConfig, *, normalized: bool) -> CompiledField:
    n, d = config.n, config.d
    serial, parallel, workspace, name = _single_head(config)
    H = config.heads
    if H > 1:
        serial, parallel = _multihead_pair(serial, parallel)
        single_ws = workspace

        def workspace(c: int) -> int:
            return n * d + single_ws(c)

        name = f"{name}_x{H}"

    independent = per_system(config)

    def layer_params(layer: int) -> tuple:
        Q, K, V = draw_layer(config, layer)
        for q, k in zip(Q, K, strict=True) if independent else [(Q, K)]:
            _check_usa_range(config, q, k)
        if H == 1:
            # the single-head drift takes (d, d) matrices
            Q, K, V = Q[..., 0, :, :], K[..., 0, :, :], V[..., 0, :, :]
        # one flat tuple with (H, d, d) stacks (and a leading batch axis for
        # independent draws): parallel regions cannot take nested tuples of
        # arrays as arguments; identity flags must hold for every system
        return _head_params(config, Q, K, V, normalized)

    Q, K, V = draw_layer(config, 0)
    systems = list(zip(Q, K, V, strict=True)) if independent else [(Q, K, V)]
    masses = config.mass_array()
    # the reference is the first system's field (every system's with shared draws)
    Q0, K0, V0 = systems[0]

    def reference(X: np.ndarray) -> np.ndarray:
        return attention_reference_of(config, X, Q0, K0, V0, masses, normalized)

    return CompiledField(
        serial=serial,
        parallel=parallel,
        params=layer_params(0),
        workspace=workspace,
        reference=reference,
        name=name,
        layer_params=layer_params,
        speed=max(speed_bound(config, *qkv) for qkv in systems),
        select=select_qkv if independent else None,
    )


def attention_reference_of(config: SimulationConfig, X: np.ndarray, Q: np.ndarray,
                           K: np.ndarray, V: np.ndarray, masses: np.ndarray,
                           normalized: bool) -> np.ndarray:
    """Plain NumPy attention output of a configuration, summed over heads.

    Parameters
    ----------
    config : SimulationConfig
    X : ndarray, shape (n, d)
    Q, K, V : ndarray, shape (heads, d, d)
    masses : ndarray, shape (n,)
    normalized : bool
        SA or USA.

    Returns
    -------
    ndarray, shape (n, d)
    """
    out = np.zeros(np.shape(X))
    for h in range(Q.shape[0]):
        if config.normalization == "sinkhorn":
            out += sinkhorn.sinkhorn_reference(
                X, beta=config.beta, iters=config.sinkhorn_iters, tol=config.sinkhorn_tol,
                Q=Q[h], K=K[h], V=V[h])[0]
        elif config.kernel == "edp":
            usa_shift = float(config.beta) if config.usa_scale == "n_exp_beta" else 0.0
            out += attention.attention_reference(
                X, beta=config.beta, normalized=normalized, usa_shift=usa_shift,
                Q=Q[h], K=K[h], V=V[h], masses=masses)
        else:
            param = {"rbf": config.tau, "l2": config.tau, "quadratic": config.gamma,
                     "intersection": config.beta}[config.kernel]
            out += kernels.kernel_attention_reference(
                X, config.kernel, param, normalized=normalized, Q=Q[h], K=K[h], V=V[h],
                masses=masses)
    return out


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

#: attention kernels kappa(q, k); DESIGN.md section 1 (see particles.fields.kernels).
KERNELS: dict[str, str] = {
    "edp": "exp(beta <q, k>)",
    "rbf": "exp(-tau ||q - k||^2)",
    "l2": "tau ||q - k||",
    "intersection": "exp(sum_l min(beta q_l, beta k_l))",
    "quadratic": "(<q, k> + gamma)^2",
}

#: how attention weights are normalised (model "sa").
NORMALIZATIONS: dict[str, str] = {
    "softmax": "rows sum to 1 (SA)",
    "sinkhorn": "doubly stochastic by log-domain Sinkhorn iterations (edp kernel)",
}


def build_field(config: SimulationConfig) -> CompiledField:
    """Build the compiled field of a validated configuration."""
    return MODELS[config.model].build(config)
