"""The one rule for a *spread* state: eps-linked tokens that are no cluster.

The cluster detectors link tokens closer than eps (single linkage).  At
large n on the circle a uniform state, or an incoherent Kuramoto
population, is one chain of such links round the whole circle: one
component, but no cluster.  The rule, read by every consumer:

    a component is *wide* when two of its tokens are more than 90 degrees
    apart (``<x_i, x_j> < 0``, the detectors' inner product); a system with
    a wide component is *spread*, and its cluster count is 0 ("no clusters").

A system of clusters of diameter below 90 degrees has its usual count.  The
detectors that apply it: :func:`particles.analysis.clusters.detect` (every
method), :func:`particles.analysis.components.count_clusters` and the
sweep's pass (:func:`particles.observables.pairs.frame_statistics`); the
summaries, ensembles, sweep statistics and figures read their counts, in
which 0 means spread.

:func:`wide_component` is the compiled test for one system (used inside the
sweep's pass), :func:`wide_systems` its batch entry point and
:func:`wide_systems_reference` the NumPy twin (Gram matrices).
"""

from __future__ import annotations

import numpy as np

from particles._numba import cached, jit, prange

__all__ = ["SCREEN_COS", "wide_component", "wide_systems", "wide_systems_reference"]

#: a component whose tokens all lie within arccos(SCREEN_COS), about 44.8
#: degrees, of its mean direction has diameter below 89.6 degrees: every
#: inner product in it is above 2 SCREEN_COS^2 - 1 > 0.008, far above
#: rounding, so only the other components are checked pair by pair.
SCREEN_COS = 0.71


# C901: a compiled kernel, one loop nest kept whole so that its bits and speed stay as measured
@jit
def wide_component(X, labels, S, q, unsure):  # noqa: C901
    """Whether some component of one system has two tokens with ``<x_i, x_j> < 0``.

    X (n, d) tokens, labels (n,) component of each token (any ids in
    ``[0, n)``); scratch S (n, d), q (n,), unsure (n,) uint8.  The sums of
    the components screen out those within SCREEN_COS of their mean
    direction; the pairs of the others are checked with the detectors'
    arithmetic (products added in coordinate order from 0)."""
    n, d = X.shape
    for c in range(n):
        unsure[c] = 0
        for a in range(d):
            S[c, a] = 0.0
    for i in range(n):
        c = labels[i]
        for a in range(d):
            S[c, a] += X[i, a]
    for c in range(n):
        s = 0.0
        for a in range(d):
            s += S[c, a] * S[c, a]
        q[c] = s * (SCREEN_COS * SCREEN_COS)
    check = False
    for i in range(n):
        c = labels[i]
        s = 0.0
        for a in range(d):
            s += X[i, a] * S[c, a]
        # <x_i, S_c> > SCREEN_COS |S_c|: x_i within the screening cap
        if not (s > 0.0 and s * s > q[c]):
            unsure[c] = 1
            check = True
    if not check:
        return False
    for i in range(n):
        c = labels[i]
        if unsure[c] == 0:
            continue
        for j in range(i + 1, n):
            if labels[j] != c:
                continue
            s = 0.0
            for a in range(d):
                s += X[i, a] * X[j, a]
            if s < 0.0:
                return True
    return False


@cached(parallel=True)
def _wide_batch(Xb, labels, out):
    B, n, d = Xb.shape
    for b in prange(B):
        S = np.empty((n, d))
        q = np.empty(n)
        unsure = np.empty(n, dtype=np.uint8)
        out[b] = wide_component(Xb[b], labels[b], S, q, unsure)


def wide_systems(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Which systems are spread: some component wider than 90 degrees (compiled).

    Parameters
    ----------
    x : ndarray, shape (m, n, d)
        Tokens of m systems.
    labels : ndarray of int, shape (m, n)
        Component of each token, labels in ``[0, n)`` (any detector's).

    Returns
    -------
    ndarray of bool, shape (m,)
    """
    xb = np.ascontiguousarray(x, dtype=np.float64)
    lab = np.ascontiguousarray(labels, dtype=np.int64)
    if xb.ndim != 3 or lab.shape != xb.shape[:2]:
        raise ValueError(f"x (m, n, d) and labels (m, n) must match, got {xb.shape} and "
                         f"{lab.shape}")
    out = np.zeros(xb.shape[0], dtype=np.bool_)
    if xb.shape[1] > 1:
        _wide_batch(xb, lab, out)
    return out


def wide_systems_reference(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Plain NumPy twin of :func:`wide_systems` (a Gram matrix per system, its
    entries summed in coordinate order as the detectors sum them)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros(x.shape[0], dtype=bool)
    for b in range(x.shape[0]):
        g = np.zeros((x.shape[1], x.shape[1]))
        for a in range(x.shape[2]):
            g = g + x[b, :, a, None] * x[b, None, :, a]
        same = labels[b][:, None] == labels[b][None, :]
        out[b] = bool(np.any(same & (g < 0)))
    return out
