"""A kernel function the tests register: the Laplace kernel's log, compiled once
(through the disk cache) for every test file that adds it to the registry."""

from __future__ import annotations

import numpy as np

from particles._numba import jit


@jit
def log_laplace(q, k, tau):
    """``log kappa(q, k) = -tau ||q - k||`` for one pair; ``q``, ``k`` of shape (d,)."""
    s = 0.0
    for a in range(q.shape[0]):
        t = q[a] - k[a]
        s += t * t
    return -tau * np.sqrt(s)
