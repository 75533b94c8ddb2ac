"""Random weight ensembles for Q, K, V, per head and per layer.

``weights`` names the ensemble of the bilinear form ``Q^T K`` and
``value_weights`` that of ``V``; ``"given"`` keeps the configuration's
matrices.  Draws follow from the seed alone: layer ``l`` draws from the
``l``-th spawned child of the weights child ``seed_sequences(seed)[1]``
(:func:`particles.simulate.seed_sequences`), i.e. from
``SeedSequence(entropy=seed, spawn_key=(1, l))``, heads in order inside it
(for each head: the Q^T K draw, then the V draw).  So a file's seed and
configuration reproduce every weight of every layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from particles.config import SimulationConfig

#: ensembles of the bilinear form Q^T K (DESIGN.md section 1).
QK_WEIGHTS: dict[str, str] = {
    "given": "the configuration's Q and K",
    "gaussian": "Q^T K = G1 G2 / sqrt(d), G1, G2 i.i.d. standard Gaussian "
    "(Q = G1^T / d^(1/4), K = G2 / d^(1/4)); non-symmetric (non-Mercer)",
    "goe": "Q = I, K = (G + G^T) / sqrt(2), G i.i.d. standard Gaussian (GOE)",
}

#: ensembles of the value matrix V.
V_WEIGHTS: dict[str, str] = {
    "given": "the configuration's V",
    "wwt": "V = W W^T / sqrt(d), W i.i.d. standard Gaussian (positive semi-definite)",
    "qk": "V = Q^T K (of the same head)",
    "minus_qk": "V = -Q^T K (of the same head)",
    "identity": "V = I",
}


def weights_rng(seed: int, layer: int = 0) -> np.random.Generator:
    """The generator of layer ``layer``'s weights (see the module docstring)."""
    from particles.simulate import seed_sequences

    child = seed_sequences(seed)[1]
    return np.random.default_rng(
        np.random.SeedSequence(child.entropy, spawn_key=(*child.spawn_key, layer)))


def is_random(config: SimulationConfig) -> bool:
    """Whether the configuration draws any weights from its seed."""
    return config.weights != "given" or config.value_weights not in ("given", "identity")


def draw_weights(config: SimulationConfig, layer: int = 0
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Q, K, V matrices of every head of one layer.

    Parameters
    ----------
    config : SimulationConfig
        With a concrete seed when any ensemble is random.
    layer : int
        Layer index (0 without layers).

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
        rng = weights_rng(config.seed, layer)
    Q = np.empty((H, d, d))
    K = np.empty((H, d, d))
    V = np.empty((H, d, d))
    for h in range(H):
        if config.weights == "gaussian":
            g1, g2 = rng.standard_normal((2, d, d))
            Q[h], K[h] = g1.T / d**0.25, g2 / d**0.25
        elif config.weights == "goe":
            g = rng.standard_normal((d, d))
            Q[h], K[h] = np.eye(d), (g + g.T) / np.sqrt(2.0)
        else:
            Q[h], K[h] = Qg, Kg
        vw = config.value_weights
        if vw == "wwt":
            w = rng.standard_normal((d, d))
            V[h] = w @ w.T / np.sqrt(d)
        elif vw in ("qk", "minus_qk"):
            V[h] = (1.0 if vw == "qk" else -1.0) * (Q[h].T @ K[h])
        elif vw == "identity":
            V[h] = np.eye(d)
        else:
            V[h] = Vg
    return Q, K, V
