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
``(3, g)``          grid point g of a     :func:`sweep_point_seed`: the root seed of
                    sweep                 the point's configuration (shared weights
                                          and frequencies)
``(3, g, s, 0)``    initial positions of  :func:`sweep_system_rng`
                    system s at point g
``(3, g, s, 2)``    noise of system s at  :func:`sweep_noise_keys`
                    point g
==================  ====================  ==========================================

A sweep's root seed is only used through the ``(3, ...)`` keys, so a
system's draws depend on its grid point and index alone, never on the task
(chunk of systems) it runs in, the number of workers or the backend.

``(0,)``, ``(1,)`` and ``(2,)`` are exactly the three children
``SeedSequence(seed).spawn(3)``; the layout is part of the file format (a
stored seed reproduces every draw), so existing keys never change.
"""

from __future__ import annotations

import numpy as np

#: first element of the spawn key of each stream.
INIT, WEIGHTS, NOISE = 0, 1, 2

#: first element of the spawn keys of a sweep (grid points and their systems).
SWEEP = 3


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


def sweep_point_seed(seed: int, point: int) -> int:
    """The 128-bit root seed of grid point ``point`` of a sweep of root ``seed``
    (the ``seed`` of the point's configuration)."""
    words = child(seed, SWEEP, point).generate_state(4, np.uint32)
    return sum(int(w) << (32 * k) for k, w in enumerate(words))


def sweep_system_rng(seed: int, point: int, system: int) -> np.random.Generator:
    """Generator of the initial positions of system ``system`` at grid point ``point``."""
    return np.random.default_rng(child(seed, SWEEP, point, system, INIT))


def sweep_noise_keys(seed: int, point: int, systems: range) -> np.ndarray:
    """Noise keys of systems ``systems`` of grid point ``point``, shape
    (len(systems), 2) uint64 (see :func:`noise_key`)."""
    return np.stack([child(seed, SWEEP, point, s, NOISE).generate_state(2, np.uint64)
                     for s in systems]).reshape(len(systems), 2)
