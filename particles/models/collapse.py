"""Collapsed clusters: coincident tokens integrated as one weighted token, exactly.

Why coincident tokens stay coincident.  For SA and USA with fixed weights,
the field on a token depends on the others only through the weighted measure
``sum_j m_j delta_{x_j}`` and on its own position.  Merge tokens that
coincide at ``t0`` into one token carrying their summed mass and solve that
smaller system; giving every merged token its group's trajectory solves the
full system (each feels the field of the same measure at the same point), and
the field is smooth, so solutions are unique: this is *the* solution, and
coincident tokens stay coincident.  In floating point two equal rows compute
the same sums (one query against the same keys) and stay bitwise equal.  So
the field runs on ``k`` groups instead of ``n`` tokens (DESIGN.md's weighted
tokens): after clusters form (2-5 distinct points in a metastable state), an
evaluation costs ``O(k^2)``.

Tokens are grouped when their chord distance is at most ``collapse_tol``
(default :data:`particles.sphere.COLLAPSE_TOL`, four ulps of 1: positions
that agree to round-off), at the start and at every save point; a group never splits.
A group moves as its first token (the lowest index); its other tokens take
that position at the save point where they join, a change of at most
``collapse_tol``.  Files, observers, analysis and plots see the ``n`` tokens
(each follows its group, :attr:`particles.models.Problem.to_positions`).

Not used where it is not exact (:func:`refusal`): noise (independent Brownian
motions part coincident tokens), random weights redrawn per layer, ``V`` that
is not a multiple of the identity, several heads, Sinkhorn weights (its
column scaling is not a sum over weighted tokens), Kuramoto (already O(n)),
and ensembles (each system would have its own groups).

Adaptive steps: the error norm of dopri5 is an RMS over the *distinct*
points once collapsed, so its steps (and the trajectory, within the
tolerance) differ from the uncollapsed run's; fixed steps give the same
trajectory to round-off.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from particles.errors import invalid
from particles.fields.weights import is_random
from particles.models import build_problem
from particles.models.problem import Problem
from particles.protocols import RunSpec
from particles.sphere import COLLAPSE_TOL

__all__ = ["check", "distinct_rows", "groups", "problem", "refusal", "weighted"]

#: the largest ``collapse_tol``: a chord that large merges tokens that are not one.
MAX_COLLAPSE_TOL = 1e-3


def check(spec: RunSpec) -> None:
    """Refuse a ``collapse_tol`` above :data:`MAX_COLLAPSE_TOL`, or one set (not 0,
    not the default) where collapsing is not exact (field ``collapse_tol``)."""
    tol = spec.collapse_tol
    if tol > MAX_COLLAPSE_TOL:
        raise invalid("collapse_tol", "a chord distance in [0, 1e-3]", tol)
    if tol not in (0.0, COLLAPSE_TOL):
        why = refusal(spec)
        if why is not None:
            raise invalid("collapse_tol", f"0 or the default for this run (collapsing is "
                          f"not exact: {why})", tol)


def refusal(config: RunSpec) -> str | None:
    """Why collapsing coincident tokens is not exact for a run (a phrase), or None."""
    if config.model not in ("sa", "usa"):
        return f"model {config.model!r} is not attention"
    if config.noise > 0:
        return "noise parts coincident tokens"
    if is_random(config) and config.layer_time is not None:
        return "random weights are redrawn per layer"
    if config.heads != 1:
        return "several heads"
    if config.normalization != "softmax":
        return f"normalization {config.normalization!r}"
    V = np.asarray(config.matrix("V"), dtype=np.float64)
    if is_random(config) or not np.all(V == V[0, 0] * np.eye(config.d)):
        return "V is not a fixed multiple of the identity"
    if (config.batch or 1) > 1:
        return "an ensemble (each system has its own groups)"
    return None


def groups(X: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Tokens grouped by coincidence: chains of pairs at chord distance <= tol.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    tol : float
        Chord distance (> 0).

    Returns
    -------
    labels : ndarray of intp, shape (n,)
        The group of every token, numbered in the order of their first tokens.
    first : ndarray of intp, shape (k,)
        The first (lowest) token index of every group.
    """
    n = X.shape[0]
    # tokens of one group share their bits (they follow its first token), so the
    # distinct rows come first: the pairs within tol are then sought among k
    # points, not among the O(n^2) pairs of n tokens in a few collapsed clusters
    rows, inverse = distinct_rows(X)
    pairs = cKDTree(rows).query_pairs(tol, output_type="ndarray")
    if pairs.size == 0 and rows.shape[0] == n:
        return np.arange(n), np.arange(n)
    k = rows.shape[0]
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(k, k))
    raw = connected_components(graph, directed=False)[1][inverse]
    # renumber by first token: group g's first token precedes group g + 1's
    _, first, inverse = np.unique(raw, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse], first[order]


def distinct_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a frame, by one sort.

    Parameters
    ----------
    X : ndarray, shape (n, d)

    Returns
    -------
    rows : ndarray, shape (k, d)
        In lexicographic order.
    inverse : ndarray of intp, shape (n,)
        The row of every token: ``rows[inverse] == X``.
    """
    order = np.lexsort(X.T[::-1])
    S = X[order]
    new = np.ones(X.shape[0], dtype=bool)
    new[1:] = np.any(S[1:] != S[:-1], axis=1)
    inverse = np.empty(X.shape[0], dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    return S[new], inverse


def weighted(masses: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """The summed mass of each of ``k`` groups, shape (k,), from token masses (n,)."""
    return np.bincount(labels, weights=masses, minlength=k)


def problem(config: Any, positions: np.ndarray) -> Problem:
    """The problem of a collapsing run (one system) on the groups of ``positions``.

    Its ``handover(frame)`` gives, when a save point finds fewer groups, the
    problem on those from that frame on; the frames (and observers) see all
    ``n`` tokens, each following its group.

    Parameters
    ----------
    config : SimulationConfig
        A run that collapses (:attr:`particles.plan.Facts.collapses`).
    positions : ndarray, shape (1, n, d) or (n, d)
        The tokens at its first save point.
    """
    X = np.array(positions, dtype=np.float64).reshape(1, config.n, config.d)
    labels, first = groups(X[0], config.collapse_tol)
    return _on_groups(config, config.mass_array(), X, labels, first)


def _on_groups(config: Any, masses: np.ndarray, X: np.ndarray, labels: np.ndarray,
               first: np.ndarray) -> Problem:
    k = first.size
    sub = config if k == config.n else config.replace(
        # the run's own summation: the series and the direct sums extend the
        # field differently off the sphere, where rk4's stages go
        n=k, masses=tuple(weighted(masses, labels, k)), init="array",
        observables=("order",))

    def handover(frame: Any) -> Problem | None:
        if k == 1:
            return None
        found = groups(frame.positions[0], config.collapse_tol)
        if found[1].size >= k:
            return None
        return _on_groups(config, masses, frame.positions.reshape(X.shape), *found)

    return dataclasses.replace(build_problem(sub, X[:, first]), positions0=X,
                               to_positions=lambda state: state[:, labels],
                               handover=handover)
