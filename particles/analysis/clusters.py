"""Clusters of tokens on the sphere: labels, sizes and centres.

Three ways to cut tokens into clusters (:data:`METHODS`):

``"components"`` (default)
    Connected components of the graph "geodesic distance < eps"
    (:func:`~particles.analysis.components.component_labels`): compiled,
    streamed over pairs, O(n) memory.  This is single linkage cut at eps.
``"single_linkage"``
    SciPy hierarchical single linkage cut at eps: the same partition (up to
    pairs at distance exactly eps), O(n^2) memory; a cross-check.
``"gap"``
    Single linkage cut in its largest gap: to the merge heights ``h_1 <= ...
    <= h_{n-1}`` (geodesic, clipped below at ``floor``) append ``h_n = pi``
    and apply the first m merges, where ``log h_{m+1} - log h_m`` is largest
    (ties: fewer clusters).  No eps is needed: the log scale fits clusters
    whose diameters shrink exponentially while their separations stay O(1);
    appending ``pi`` lets a single tight cluster win.  It always applies at
    least one merge (it cannot tell n well-separated singletons from
    structure), so use it on clustered states, not on the first frames.

Every method is followed by the spread rule
(:mod:`particles.observables.spread`): a system one of whose linked groups
spans more than 90 degrees (two of its tokens with ``<x_i, x_j> < 0``) is
*spread*, not clustered, and its count is 0.  A uniform state at large n on
the circle is such a system: one chain of eps-links round the circle.

Labels number the linked groups of each system ``0 .. k-1`` in order of
their first token (a spread system keeps them, with count 0).  Sizes and
centres of a stack of systems are padded to the largest k (sizes with 0,
centres with NaN).

The mass-weighted count (:func:`mass_counts`) counts the clusters holding
at least a fraction of the tokens' mass (:data:`DEFAULT_MASS_FRACTION`), so
that a few stragglers between the clusters of a large system do not count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from particles.analysis._base import Compute, as_tokens, result
from particles.analysis.cells import use_cells
from particles.analysis.components import DEFAULT_EPS, component_labels
from particles.analysis.minimum import wide_by_cells
from particles.observables.spread import wide_systems


@dataclass(frozen=True)
class ClusterMethod:
    """A registered cluster detection method.

    Attributes
    ----------
    name, description : str
    detect : callable
        ``detect(x, eps, floor) -> (labels, counts)`` for systems ``x`` of shape
        (m, n, d): labels (m, n) int64, counts (m,) int64.
    uses_eps : bool
        Whether the method links at ``eps`` (then 0 < eps < pi is required);
        otherwise ``eps`` is ignored (it may be None).
    """

    name: str
    description: str
    detect: Callable[[np.ndarray, float | None, float], tuple[np.ndarray, np.ndarray]]
    uses_eps: bool = True

    def __str__(self) -> str:
        return self.description


def _linkage(cut_at_eps: bool):
    """Single linkage on each system, cut at eps or at the largest gap."""

    def detect(x: np.ndarray, eps: float | None, floor: float):
        labels = np.empty(x.shape[:2], dtype=np.int64)
        counts = np.empty(x.shape[0], dtype=np.int64)
        for s in range(x.shape[0]):
            labels[s] = single_linkage_labels(x[s], eps if cut_at_eps else None, floor)
            counts[s] = labels[s].max() + 1
        return labels, counts

    return detect


#: name -> cluster method; the single source of truth for ``method=`` (API, CLI).
METHODS: dict[str, ClusterMethod] = {m.name: m for m in (
    ClusterMethod("components", "connected components of geodesic distance < eps "
                  "(compiled, streamed)", lambda x, eps, floor: component_labels(x, eps)),
    ClusterMethod("single_linkage", "scipy single linkage cut at distance eps",
                  _linkage(cut_at_eps=True)),
    ClusterMethod("gap", "scipy single linkage cut at the largest gap of log merge heights",
                  _linkage(cut_at_eps=False), uses_eps=False),
)}

#: geodesic distances below this (radians) count as 0 in the "gap" method:
#: tokens that coincide to rounding have arbitrary tiny distances.
DEFAULT_FLOOR = 1e-10

#: a cluster holding at least this fraction of the mass counts in the
#: mass-weighted count (:func:`mass_counts`): 10 tokens of 1000.
DEFAULT_MASS_FRACTION = 0.01


def canonical_labels(labels: np.ndarray) -> tuple[np.ndarray, int]:
    """Renumber labels ``0 .. k-1`` in order of first appearance.

    Parameters
    ----------
    labels : ndarray of int, shape (n,)
        Any integer labels.

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        Renumbered labels.
    k : int
        Number of distinct labels.
    """
    uniq, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(first)
    remap = np.empty(uniq.size, dtype=np.int64)
    remap[order] = np.arange(uniq.size)
    return remap[inv.ravel()], int(uniq.size)


def _linkage(x: np.ndarray) -> np.ndarray:
    """Single-linkage heights in geodesic distance (n - 1 rows of scipy's Z)."""
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import pdist

    # chord distances are accurate for tiny separations (arccos is not) and
    # are monotone in the geodesic distance, so the linkage tree is the same
    Z = linkage(pdist(x), method="single")
    Z[:, 2] = 2.0 * np.arcsin(np.minimum(Z[:, 2] / 2.0, 1.0))
    return Z


def _apply_merges(Z: np.ndarray, n: int, m: int) -> np.ndarray:
    """Labels after the first ``m`` merges of the linkage ``Z``."""
    parent = np.arange(2 * n - 1)
    for r in range(m):
        a, b = int(Z[r, 0]), int(Z[r, 1])
        parent[a] = parent[b] = n + r
    roots = np.arange(n)
    # follow parents to the top; each pass climbs one level for every leaf
    while True:
        up = parent[roots]
        if np.array_equal(up, roots):
            break
        roots = up
    return canonical_labels(roots)[0]


def single_linkage_labels(
    x: np.ndarray, eps: float | None = DEFAULT_EPS, floor: float = DEFAULT_FLOOR
) -> np.ndarray:
    """Single-linkage labels of one system, cut at ``eps`` or at the largest gap.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Tokens on the sphere.
    eps : float or None
        Cut distance in radians (merges strictly below eps are applied);
        None cuts at the largest gap of the log merge heights.
    floor : float
        Heights below this are raised to it before looking for the gap.

    Returns
    -------
    ndarray of int64, shape (n,)
        Labels numbered in order of first appearance.
    """
    n = x.shape[0]
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    Z = _linkage(x)
    h = Z[:, 2]
    if eps is not None:
        m = int(np.searchsorted(h, eps, side="left"))
    else:
        H = np.concatenate([np.maximum(h, floor), [np.pi]])
        gaps = np.diff(np.log(H))  # gaps[m - 1]: cut after the first m merges
        # argmax of the reversed gaps: on ties prefer more merges (fewer clusters)
        m = n - 1 - int(np.argmax(gaps[::-1]))
    return _apply_merges(Z, n, m)


def cluster_sizes_centers(
    x: np.ndarray, labels: np.ndarray, k: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sizes and centres (normalised means) of the clusters of one system.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Tokens.
    labels : ndarray of int, shape (n,)
        Cluster labels ``0 .. k-1``.
    k : int, optional
        Number of clusters (default ``labels.max() + 1``).

    Returns
    -------
    sizes : ndarray of int64, shape (k,)
        Tokens per cluster.
    centers : ndarray, shape (k, d)
        Normalised mean of each cluster; where the mean is (numerically) zero,
        the cluster's first token.
    """
    k = int(labels.max()) + 1 if k is None else k
    sizes = np.bincount(labels, minlength=k).astype(np.int64)
    sums = np.zeros((k, x.shape[1]))
    np.add.at(sums, labels, x)
    norms = np.linalg.norm(sums, axis=1)
    centers = np.empty_like(sums)
    ok = norms > 1e-12 * np.maximum(sizes, 1)
    centers[ok] = sums[ok] / norms[ok, None]
    if not np.all(ok):
        # a mean of (near-)zero norm has no direction: fall back to a member
        first = np.full(k, -1)
        for i in range(labels.size - 1, -1, -1):
            first[labels[i]] = i
        bad = np.flatnonzero(~ok & (first >= 0))
        centers[bad] = x[first[bad]]
    return sizes, centers


def detect(
    x: np.ndarray,
    eps: float | None = DEFAULT_EPS,
    method: str = "components",
    floor: float = DEFAULT_FLOOR,
) -> tuple[np.ndarray, np.ndarray]:
    """Labels and counts of a stack of systems, the spread rule applied.

    Parameters
    ----------
    x : ndarray, shape (m, n, d)
        Systems (any leading axes flattened by the caller).
    eps, method, floor
        As in :class:`ClusterDetector`.

    Returns
    -------
    labels : ndarray of int64, shape (m, n)
        The linked groups of the method.
    counts : ndarray of int64, shape (m,)
        Their number, or 0 for a spread system (a group wider than 90
        degrees, :mod:`particles.observables.spread`).
    """
    labels, counts = METHODS[method].detect(x, eps, floor)
    if use_cells(x.shape[1], x.shape[2]):  # no O(n^2) pass over a wide-ish component
        wide = np.array([wide_by_cells(xs, ls) for xs, ls in zip(x, labels, strict=True)])
    else:
        wide = wide_systems(x, labels)
    return labels, np.where(wide, 0, counts).astype(np.int64)


def mass_counts(
    labels: np.ndarray,
    counts: np.ndarray,
    masses: np.ndarray | None = None,
    fraction: float = DEFAULT_MASS_FRACTION,
) -> np.ndarray:
    """Clusters holding at least ``fraction`` of the tokens' mass, per system.

    Parameters
    ----------
    labels : ndarray of int, shape (..., n)
        Cluster ids of the tokens (any integers: :func:`detect`'s labels or
        persistent ids).
    counts : ndarray of int, shape (...)
        The cluster counts (0: spread, whose mass count is 0 too).
    masses : ndarray, shape (n,), optional
        Token masses (default 1 each).
    fraction : float in (0, 1]
        A cluster counts when its mass is at least ``fraction`` times the
        total (to a relative 1e-12, so 1 token of 20 is 5 %).

    Returns
    -------
    ndarray of int64, shape (...)
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    lab = np.asarray(labels)
    n = lab.shape[-1]
    flat = lab.reshape(-1, n)
    m = np.ones(n) if masses is None else np.asarray(masses, dtype=np.float64)
    if m.shape != (n,):
        raise ValueError(f"masses must have shape ({n},), got {m.shape}")
    need = fraction * m.sum() * (1.0 - 1e-12)
    out = np.empty(flat.shape[0], dtype=np.int64)
    for r in range(flat.shape[0]):
        inv = np.unique(flat[r], return_inverse=True)[1].ravel()
        out[r] = int(np.sum(np.bincount(inv, weights=m) >= need))
    out = out.reshape(lab.shape[:-1])
    return np.where(np.asarray(counts) == 0, 0, out)


def check_method(eps: float | None, method: str) -> float | None:
    """Validate a (eps, method) pair; returns eps as a float (or None for "gap")."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    if not METHODS[method].uses_eps:
        return None if eps is None else float(eps)
    if eps is None or not 0 < float(eps) < np.pi:
        raise ValueError(f"eps must be in (0, pi) radians for method {method!r}, got {eps!r}")
    return float(eps)


class ClusterDetector(Compute):
    """Clusters of tokens on the sphere.

    Parameters
    ----------
    eps : float
        Linking geodesic distance in radians (default
        :data:`~particles.analysis.components.DEFAULT_EPS` = 0.05): tokens
        closer than eps are in one cluster, and so are chains of them.
        Ignored by ``method="gap"``.
    method : {"components", "single_linkage", "gap"}
        See :data:`METHODS` and the module docstring.
    floor : float
        Smallest distance the ``"gap"`` method resolves (radians).

    Examples
    --------
    >>> det = ClusterDetector(0.05).compute(x)  # doctest: +SKIP
    >>> det.num_clusters, det.sizes, det.centers       # doctest: +SKIP
    """

    def __init__(
        self,
        eps: float | None = DEFAULT_EPS,
        method: str = "components",
        floor: float = DEFAULT_FLOOR,
    ) -> None:
        super().__init__()
        self.eps = check_method(eps, method)
        self.method = method
        self.floor = float(floor)

    def __repr__(self) -> str:
        return f"ClusterDetector(eps={self.eps!r}, method={self.method!r})"

    def compute(self, x: np.ndarray) -> ClusterDetector:
        """Cluster the tokens.

        Parameters
        ----------
        x : array_like, shape (n, d) or (..., n, d)
            Tokens on the sphere; every leading axis (batch, frames) is a
            separate system.

        Returns
        -------
        ClusterDetector
            ``self``.
        """
        x = as_tokens(x)
        lead = x.shape[:-2]
        n, d = x.shape[-2:]
        flat = x.reshape(-1, n, d)
        labels, counts = detect(flat, self.eps, self.method, self.floor)
        kmax = int(counts.max())
        sizes = np.zeros((flat.shape[0], kmax), dtype=np.int64)
        centers = np.full((flat.shape[0], kmax, d), np.nan)
        for s in range(flat.shape[0]):
            k = int(counts[s])
            if k:  # a spread system (count 0) has no clusters to describe
                sizes[s, :k], centers[s, :k] = cluster_sizes_centers(flat[s], labels[s], k)
        if not lead:
            k = int(counts[0])
            self._set(labels=labels[0], num_clusters=k, sizes=sizes[0, :k], centers=centers[0, :k],
                      spread=bool(counts[0] == 0))
        else:
            self._set(
                labels=labels.reshape(*lead, n),
                num_clusters=counts.reshape(lead),
                sizes=sizes.reshape(*lead, kmax),
                centers=centers.reshape(*lead, kmax, d),
                spread=(counts == 0).reshape(lead),
            )
        return self

    labels = result(
        "labels",
        "Cluster label of each token, int64 array of shape (n,) or "
        "(..., n); clusters numbered in order of their first token (a spread "
        "system: its linked groups).",
    )
    num_clusters = result("num_clusters", "Number of clusters: int, or int64 array (...); "
                          "0 for a spread system.")
    spread = result("spread", "Whether the system is spread (a linked group wider than 90 "
                    "degrees, no clusters): bool, or bool array (...).")
    sizes = result("sizes", "Tokens per cluster, int64 shape (k,) or (..., kmax) padded with 0.")
    centers = result(
        "centers", "Normalised cluster means, shape (k, d) or (..., kmax, d) padded with NaN."
    )
