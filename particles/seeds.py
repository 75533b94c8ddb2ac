"""The seed policy: every random number of a run derives from one root seed.

``numpy.random.SeedSequence(seed)`` is the root; its children are addressed
by *spawn keys*, so a draw never depends on how many other draws happened
before it, on how an ensemble is split into tasks, on the number of workers
or on the thread count:

==================  ====================  ==========================================
spawn key           stream                used by
==================  ====================  ==========================================
``(0,)``            initial positions     :func:`init_rng`
``(1, l)``          weights of layer l    :func:`weights_rng` (shared by a batch)
``(1, l, b)``       weights of layer l,   :func:`weights_rng` (``weight_draws=
                    system b              "independent"``)
``(1, 0)``          natural frequencies   :func:`frequencies_rng` (Kuramoto; no
                                          weights are drawn then)
``(1, 0, b)``       frequencies of b      :func:`frequencies_rng`
``(2, b)``          noise of system b     :func:`noise_key` (counter-based, see
                                          :mod:`particles.integrators`)
==================  ====================  ==========================================

``(0,)``, ``(1,)`` and ``(2,)`` are exactly the three children
``SeedSequence(seed).spawn(3)``; the layout is part of the file format (a
stored seed reproduces every draw), so existing keys never change.
"""

from __future__ import annotations

import numpy as np

#: first element of the spawn key of each stream.
INIT, WEIGHTS, NOISE = 0, 1, 2


def fresh_seed() -> int:
    """A new root seed from the operating system's entropy (to be recorded)."""
    return int(np.random.SeedSequence().entropy)


def child(seed: int, *key: int) -> np.random.SeedSequence:
    """The seed sequence of root ``seed`` at spawn key ``key``."""
    return np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key))


def seed_sequences(seed: int) -> tuple[np.random.SeedSequence, ...]:
    """The ``(init, weights, noise)`` children of a root seed."""
    return tuple(np.random.SeedSequence(seed).spawn(3))


def init_rng(seed: int) -> np.random.Generator:
    """Generator of the initial positions."""
    return np.random.default_rng(child(seed, INIT))


def weights_rng(seed: int, layer: int = 0, system: int | None = None) -> np.random.Generator:
    """Generator of layer ``layer``'s random weights, shared by a batch
    (``system=None``) or of one system."""
    key = (WEIGHTS, layer) + (() if system is None else (system,))
    return np.random.default_rng(child(seed, *key))


def frequencies_rng(seed: int, system: int | None = None) -> np.random.Generator:
    """Generator of Kuramoto natural frequencies, shared or of one system."""
    key = (WEIGHTS, 0) + (() if system is None else (system,))
    return np.random.default_rng(child(seed, *key))


def noise_key(seed: int, system: int = 0) -> np.ndarray:
    """Two 64-bit words keying system ``system``'s counter-based noise.

    Returns
    -------
    ndarray of uint64, shape (2,)
    """
    return child(seed, NOISE, system).generate_state(2, np.uint64)


def noise_keys(seed: int, batch: int) -> np.ndarray:
    """:func:`noise_key` of every system of a batch, shape (batch, 2) uint64."""
    return np.stack([noise_key(seed, b) for b in range(batch)])
