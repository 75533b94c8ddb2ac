"""Kernels the tests share, compiled once (through the disk cache): the Laplace
kernel's log (registered by the tests that add a kernel), and a linear drift that
counts its calls (the integrators' tests)."""

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


@jit
def linear_rows(X, p, out, ws):
    """``out = X A^T`` row by row (the linear ODE ``x' = A x`` in each row), ``A = p[0]``;
    counts its calls in ``p[1][0]``."""
    A = p[0]
    p[1][0] += 1.0
    n, d = X.shape
    for i in range(n):
        for a in range(d):
            s = 0.0
            for b in range(d):
                s += A[a, b] * X[i, b]
            out[i, a] = s
