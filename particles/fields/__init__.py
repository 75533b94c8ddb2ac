"""Fields (velocity kernels): the attention field and the registries it is built from.

A field builder turns a run (:class:`particles.protocols.RunSpec`) into a
:class:`CompiledField`: a pair of compiled drift functions ``drift(X, p, out,
ws)`` (one serial, to run many systems in parallel; one parallel over rows,
for one large system), their parameter tuple ``p``, the size of their float64
scratch ``ws``, and a plain NumPy reference with the same meaning.

The drift writes the *ambient* attention output ``y`` of shape ``(n, d)``;
the dynamics is ``dx_i/dt = P_{x_i}(y_i)`` and integrators do the projection
(the Euler layer ``normalize(x + h y)`` uses ``y`` unprojected).

The builders here are :func:`attention_field` (SA and USA) and
:func:`particles.fields.kuramoto.build`; the model registry that names them,
``particles.models.MODELS``, sits above the configuration (layer 3).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from particles._numba import jit, kernel_key
from particles.errors import ConfigError
from particles.fields import sinkhorn
from particles.fields.base import CompiledField, DriftSet
from particles.fields.kernels import BLAS_MIN_D, KERNELS, MAX_LOG_WEIGHT, USA_SCALES, Kernel
from particles.fields.normalizations import NORMALIZATIONS, Normalization, usa_shift
from particles.fields.weights import draw_layer, is_random, per_system
from particles.protocols import RunSpec

__all__ = [
    "BLAS_MIN_D", "KERNELS", "MAX_LOG_WEIGHT", "NORMALIZATIONS", "USA_SCALES",
    "CompiledField", "DriftSet", "Kernel", "Normalization", "attention_field",
    "attention_reference_of", "check_usa_range", "select_qkv", "speed_bound",
    "usa_log_bound", "usa_shift",
]



@jit
def select_qkv(p, b):
    """Parameters of system ``b`` when Q, K, V (the first three entries of
    every attention parameter tuple) carry a leading batch axis."""
    return (p[0][b], p[1][b], p[2][b], *p[3:])


def usa_log_bound(config: RunSpec, Q: np.ndarray, K: np.ndarray) -> float:
    """Upper bound on ``log kappa(q, k)`` minus the USA shift, for unit tokens.

    The kernel's own bound (:attr:`Kernel.log_bound`) less the shift ``c`` of
    the configuration's ``usa_scale``; the USA factor ``exp`` of it must stay
    finite (:func:`check_usa_range` and :func:`speed_bound` use it).
    Parameters ``Q, K`` have shape (heads, d, d) or (d, d).
    """
    Q = np.asarray(Q).reshape(-1, config.d, config.d)
    K = np.asarray(K).reshape(-1, config.d, config.d)
    nq = max(float(np.linalg.norm(q, 2)) for q in Q)
    nk = max(float(np.linalg.norm(k, 2)) for k in K)
    qk = max(float(np.linalg.norm(q.T @ k, 2)) for q, k in zip(Q, K, strict=True))
    kernel = KERNELS[config.kernel]
    bound = kernel.log_bound(float(getattr(config, kernel.parameter)), nq, nk, qk, config.d)
    return bound - usa_shift(config)


def check_usa_range(config: RunSpec, Q: np.ndarray, K: np.ndarray, *,
                    drawn: bool = False) -> None:
    """The one USA overflow rule: the largest USA weight must stay finite.

    Parameters
    ----------
    config : RunSpec
        Any model (only ``model="usa"`` is checked).
    Q, K : ndarray, shape (heads, d, d) or (d, d)
        The configuration's matrices, or a draw of its random ensemble.
    drawn : bool
        Whether ``Q, K`` were drawn (for the message).

    Raises
    ------
    ValueError
        ``"beta must be ..."``, naming the bound and how to lower it.
    """
    if config.model != "usa":
        return
    reach = usa_log_bound(config, Q, K)
    if reach > MAX_LOG_WEIGHT:
        kernel = KERNELS[config.kernel]
        what = " with the drawn weights" if drawn else ""
        raise ConfigError(
            f"beta must be small enough that USA weights kappa(q, k) e^-c stay finite{what} "
            f"(log bound {reach:.4g} > {MAX_LOG_WEIGHT:g}, kernel {kernel.name!r}); "
            f"{kernel.overflow_hint(config.usa_scale)}, got {config.beta!r}", "beta")


def speed_bound(config: RunSpec, Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> float:
    """Upper bound on token speeds for attention models with weights (heads, d, d).

    SA (and Sinkhorn) move tokens by convex combinations of ``V x_j``: at most
    ``||V||`` per head.  USA multiplies by the largest weight.
    """
    v = sum(float(np.linalg.norm(vh, 2)) for vh in np.asarray(V).reshape(-1, config.d, config.d))
    if config.model == "usa":
        return v * float(np.exp(min(usa_log_bound(config, Q, K), MAX_LOG_WEIGHT)))
    return v


def _head_params(config: RunSpec, Q: np.ndarray, K: np.ndarray, V: np.ndarray,
                 normalized: bool) -> tuple:
    """Parameter tuple of the single-head drift; ``Q, K, V`` of shape (d, d), or
    (heads, d, d) for the multi-head drift (identity flags then hold for all heads)."""
    eye = np.eye(config.d)
    qk_identity = bool(np.all(Q == eye) and np.all(K == eye))
    v_identity = bool(np.all(V == eye))
    Q, K, V = (np.ascontiguousarray(a, dtype=np.float64) for a in (Q, K, V))
    return NORMALIZATIONS[config.normalization].params(config, Q, K, V, qk_identity,
                                                       v_identity, normalized)


@cache
def _multihead_pair(serial: Callable, parallel: Callable) -> tuple[Callable, Callable]:
    return (sinkhorn.multihead_drift(serial, kernel_key(serial)),
            sinkhorn.multihead_drift(parallel, kernel_key(parallel)))


def attention_field(config: RunSpec, *, normalized: bool) -> CompiledField:
    """The compiled attention field of a validated ``sa`` (``normalized``) or ``usa`` run.

    Parameters
    ----------
    config : RunSpec
        Its kernel, normalisation, heads, weights (drawn from its seed per
        layer and, with ``weight_draws="independent"``, per system) and masses.
    normalized : bool
        SA (row sums) or USA (total mass).

    Returns
    -------
    CompiledField
    """
    n, d = config.n, config.d
    serial, parallel, workspace, name, blas = NORMALIZATIONS[config.normalization].drifts(config)
    H = config.heads
    if H > 1:
        serial, parallel = _multihead_pair(serial, parallel)
        single_ws = workspace

        def workspace(c: int) -> int:
            return n * d + single_ws(c)

        name = f"{name}_x{H}"

    independent = per_system(config)
    drawn = is_random(config)

    def params_of(Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> tuple:
        for q, k in zip(Q, K, strict=True) if independent else [(Q, K)]:
            check_usa_range(config, q, k, drawn=drawn)
        if H == 1:
            # the single-head drift takes (d, d) matrices
            Q, K, V = Q[..., 0, :, :], K[..., 0, :, :], V[..., 0, :, :]
        # one flat tuple with (H, d, d) stacks (and a leading batch axis for
        # independent draws): parallel regions cannot take nested tuples of
        # arrays as arguments; identity flags must hold for every system
        return _head_params(config, Q, K, V, normalized)

    def layer_params(layer: int) -> tuple:
        return params_of(*draw_layer(config, layer))

    Q, K, V = draw_layer(config, 0)  # once: the first layer's parameters and bounds
    systems = list(zip(Q, K, V, strict=True)) if independent else [(Q, K, V)]
    masses = config.mass_array()
    # the reference is the first system's field (every system's with shared draws)
    Q0, K0, V0 = systems[0]

    def reference(X: np.ndarray) -> np.ndarray:
        return attention_reference_of(config, X, Q0, K0, V0, masses, normalized)

    return CompiledField(
        serial=serial,
        parallel=parallel,
        params=params_of(Q, K, V),
        workspace=workspace,
        reference=reference,
        name=name,
        layer_params=layer_params,
        speed=max(speed_bound(config, *qkv) for qkv in systems),
        select=select_qkv if independent else None,
        layer_time=config.layer_time,
        blas=blas,
    )


def attention_reference_of(config: RunSpec, X: np.ndarray, Q: np.ndarray,
                           K: np.ndarray, V: np.ndarray, masses: np.ndarray,
                           normalized: bool) -> np.ndarray:
    """Plain NumPy attention output of a configuration, summed over heads.

    Parameters
    ----------
    config : RunSpec
    X : ndarray, shape (n, d)
    Q, K, V : ndarray, shape (heads, d, d)
    masses : ndarray, shape (n,)
    normalized : bool
        SA or USA.

    Returns
    -------
    ndarray, shape (n, d)
    """
    norm = NORMALIZATIONS[config.normalization]
    out = np.zeros(np.shape(X))
    for h in range(Q.shape[0]):
        out += norm.reference(config, X, Q[h], K[h], V[h], masses, normalized)
    return out
