"""Random weight ensembles for Q, K, V, per head and per layer.

``weights`` names the ensemble of the bilinear form ``Q^T K`` and
``value_weights`` that of ``V``; ``"given"`` keeps the configuration's
matrices.  Draws follow from the seed alone: layer ``l`` draws from the
``l``-th spawned child of the weights child of the seed
(:func:`particles.seeds.weights_rng`), i.e. from
``SeedSequence(entropy=seed, spawn_key=(1, l))``, heads in order inside it
(for each head: the Q^T K draw, then the V draw).  With
``weight_draws="independent"`` system ``b`` of an ensemble draws its own
weights from the grandchild ``spawn_key=(1, l, b)`` instead.  So a file's
seed and configuration reproduce every weight of every layer and system.

Scales are those of the formulas (issue 6): entries of order 1
in any dimension (Gaussian ``Q^T K = G1 G2 / sqrt(d)``: variance 1; GOE
``(G + G^T) / sqrt(2)``: variance 1 off the diagonal, 2 on it), so operator
norms grow like ``sqrt(d)`` (measured about ``2.6 sqrt(d)`` and
``2 sqrt(d)``) and ``beta`` weighs the most aligned directions by
``~sqrt(d) beta``; rescale ``beta`` when comparing dimensions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from particles.protocols import RunSpec
from particles.seeds import weights_rng


@dataclass(frozen=True)
class QKEnsemble:
    """A registered ensemble of ``(Q, K)``, one head at a time.

    Attributes
    ----------
    name, description : str
    random : bool
        Whether it draws from the seed (``"given"`` does not).
    draw : callable
        ``draw(rng, d, Q, K) -> (Q, K)``: one head's matrices (d, d) from
        ``rng`` (None when not ``random``) and the configuration's ``Q, K``.
    uses_given : bool
        Whether it uses the configuration's ``Q, K`` (others replace them).
    """

    name: str
    description: str
    random: bool
    draw: Callable[[np.random.Generator | None, int, np.ndarray, np.ndarray],
                   tuple[np.ndarray, np.ndarray]]
    uses_given: bool = False

    def __str__(self) -> str:
        return self.description


@dataclass(frozen=True)
class VEnsemble:
    """A registered ensemble of ``V``, drawn after the head's ``Q, K``.

    Attributes
    ----------
    name, description : str
    random : bool
        Whether it draws from the seed.
    draw : callable
        ``draw(rng, d, Q, K, V) -> V``: one head's value matrix (d, d) from
        ``rng``, that head's ``Q, K`` and the configuration's ``V``.
    uses_given : bool
        Whether it uses the configuration's ``V`` (others replace it, so a
        given ``V`` would be silently ignored).
    """

    name: str
    description: str
    random: bool
    draw: Callable[..., np.ndarray]
    uses_given: bool = False

    def __str__(self) -> str:
        return self.description


def _gaussian_qk(rng, d, Q, K):
    g1, g2 = rng.standard_normal((2, d, d))
    return g1.T / d**0.25, g2 / d**0.25


def _goe_qk(rng, d, Q, K):
    g = rng.standard_normal((d, d))
    return np.eye(d), (g + g.T) / np.sqrt(2.0)


def _wwt_v(rng, d, Q, K, V):
    w = rng.standard_normal((d, d))
    return w @ w.T / np.sqrt(d)


#: ensembles of the bilinear form Q^T K (DESIGN.md section 1).
QK_WEIGHTS: dict[str, QKEnsemble] = {e.name: e for e in (
    QKEnsemble("given", "the configuration's Q and K", False, lambda rng, d, Q, K: (Q, K),
               uses_given=True),
    QKEnsemble("gaussian", "Q^T K = G1 G2 / sqrt(d), G1, G2 i.i.d. standard Gaussian "
               "(Q = G1^T / d^(1/4), K = G2 / d^(1/4)); non-symmetric (non-Mercer)",
               True, _gaussian_qk),
    QKEnsemble("goe", "Q = I, K = (G + G^T) / sqrt(2), G i.i.d. standard Gaussian (GOE)",
               True, _goe_qk),
)}

#: ensembles of the value matrix V.
V_WEIGHTS: dict[str, VEnsemble] = {e.name: e for e in (
    VEnsemble("given", "the configuration's V", False, lambda rng, d, Q, K, V: V,
              uses_given=True),
    VEnsemble("wwt", "V = W W^T / sqrt(d), W i.i.d. standard Gaussian (positive "
              "semi-definite)", True, _wwt_v),
    VEnsemble("qk", "V = Q^T K (of the same head)", False, lambda rng, d, Q, K, V: Q.T @ K),
    VEnsemble("minus_qk", "V = -Q^T K (of the same head)", False,
              lambda rng, d, Q, K, V: -1.0 * (Q.T @ K)),
    VEnsemble("identity", "V = I", False, lambda rng, d, Q, K, V: np.eye(d)),
)}


#: whether the systems of an ensemble share their random weights.
WEIGHT_DRAWS: dict[str, str] = {
    "shared": "one draw per layer, the same for every system of the batch",
    "independent": "every system of the batch draws its own weights per layer "
    "(Kuramoto: its own frequencies)",
}




def is_random(config: RunSpec) -> bool:
    """Whether the configuration draws any weights from its seed (``V = +-Q^T K``
    of given Q and K is fixed, not drawn)."""
    return QK_WEIGHTS[config.weights].random or V_WEIGHTS[config.value_weights].random


def per_system(config: RunSpec) -> bool:
    """Whether the systems of the configuration's batch draw their own weights."""
    return config.weight_draws == "independent" and is_random(config)


def draw_layer(config: RunSpec, layer: int = 0
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Q, K, V matrices of one layer for every system that has its own.

    Returns
    -------
    Q, K, V : ndarray, shape (heads, d, d) or (batch, heads, d, d)
        The shared draw, or with ``weight_draws="independent"`` one draw per
        system (``batch`` is 1 for a single system).
    """
    if not per_system(config):
        return draw_weights(config, layer)
    draws = [draw_weights(config, layer, b) for b in range(config.batch or 1)]
    return tuple(np.stack(m) for m in zip(*draws, strict=True))


def draw_weights(config: RunSpec, layer: int = 0, system: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Q, K, V matrices of every head of one layer.

    Parameters
    ----------
    config : RunSpec
        With a concrete seed when any ensemble is random.
    layer : int
        Layer index (0 without layers).
    system : int, optional
        System of the batch, for ``weight_draws="independent"``; None for the
        draw shared by the ensemble.

    Returns
    -------
    Q, K, V : ndarray, shape (heads, d, d)
        C-contiguous float64.
    """
    H, d = config.heads, config.d
    Qg, Kg, Vg = config.matrix("Q"), config.matrix("K"), config.matrix("V")
    rng = None
    if is_random(config):
        if config.seed is None:
            raise ValueError("seed must be resolved before drawing random weights "
                             "(config.resolved())")
        rng = weights_rng(config.seed, layer, system)
    Q = np.empty((H, d, d))
    K = np.empty((H, d, d))
    V = np.empty((H, d, d))
    qk, v = QK_WEIGHTS[config.weights], V_WEIGHTS[config.value_weights]
    for h in range(H):
        # per head: the Q^T K draw, then the V draw (the documented order)
        Q[h], K[h] = qk.draw(rng, d, Qg, Kg)
        V[h] = v.draw(rng, d, Q[h], K[h], Vg)
    return Q, K, V
