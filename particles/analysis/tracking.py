"""Cluster identities that persist from frame to frame.

Clusters detected independently in each frame are numbered arbitrarily.
:func:`track_labels` matches the clusters of consecutive frames by token
overlap so that a cluster keeps its id:

1. Count ``O[p, c]``, the tokens in old cluster ``p`` and new cluster ``c``.
2. Visit the pairs with ``O > 0`` by decreasing overlap (ties: older id,
   i.e. smaller id, first) and match ``p`` with ``c`` when both are free:
   ``c`` inherits the id of ``p``.
3. A new cluster left unmatched gets a fresh id (a *split*: some tokens left
   a cluster whose id continues elsewhere).
4. An old cluster left unmatched has *merged*: it is absorbed into the
   matched new cluster holding most of its tokens.  So in a merge the
   cluster contributing most tokens (then the older one) keeps its id.

Ids are never reused, so a smaller id was born no later than a larger one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MergeEvent:
    """Clusters that merged between two saved frames.

    Attributes
    ----------
    frame : int
        First frame in which they are one cluster.
    time : float
        Time of that frame (merges are resolved to the save spacing).
    system : int
        System index in an ensemble (0 for a single system).
    into : int
        Id of the surviving cluster.
    absorbed : tuple of int
        Ids of the clusters that disappeared into it.
    sizes : tuple of int
        Sizes at the previous frame of ``(into, *absorbed)``.
    """

    frame: int
    time: float
    system: int
    into: int
    absorbed: tuple[int, ...]
    sizes: tuple[int, ...]

    @property
    def size_after(self) -> int:
        """Tokens of the merged cluster (sum of ``sizes``)."""
        return int(sum(self.sizes))


@dataclass(frozen=True)
class SplitEvent:
    """A cluster broke up (tokens drifted beyond the linking distance).

    Attributes
    ----------
    frame, time, system
        As in :class:`MergeEvent`.
    parent : int
        Id of the cluster most of the new cluster's tokens came from.
    child : int
        Fresh id of the new cluster.
    size : int
        Tokens of the new cluster.
    """

    frame: int
    time: float
    system: int
    parent: int
    child: int
    size: int


@dataclass(frozen=True)
class Tracked:
    """Persistent labels of one system and the events between frames.

    Attributes
    ----------
    ids : ndarray of int64, shape (frames, n)
        Persistent cluster id of each token at each frame.
    merges : list of MergeEvent
    splits : list of SplitEvent
    next_id : int
        One more than the largest id used.
    """

    ids: np.ndarray
    merges: list[MergeEvent]
    splits: list[SplitEvent]
    next_id: int


def match_frame(
    prev_ids: np.ndarray, new_labels: np.ndarray, next_id: int
) -> tuple[np.ndarray, list[tuple], list[tuple], int]:
    """Persistent ids of one frame given the ids of the previous one.

    Parameters
    ----------
    prev_ids : ndarray of int, shape (n,)
        Persistent ids at the previous frame.
    new_labels : ndarray of int, shape (n,)
        Raw labels ``0 .. k-1`` at this frame.
    next_id : int
        First unused id.

    Returns
    -------
    ids : ndarray of int64, shape (n,)
        Persistent ids at this frame.
    merges : list of (into, absorbed tuple, sizes tuple)
    splits : list of (parent, child, size)
    next_id : int
        Updated first unused id.
    """
    uniq, pinv = np.unique(prev_ids, return_inverse=True)
    pinv = pinv.ravel()
    kp = uniq.size
    kc = int(new_labels.max()) + 1
    overlap = np.bincount(pinv * kc + new_labels, minlength=kp * kc).reshape(kp, kc)
    prev_sizes = overlap.sum(axis=1)
    p_idx, c_idx = np.nonzero(overlap)
    # decreasing overlap; ties broken by the older (smaller) id, then the new label
    order = np.lexsort((c_idx, uniq[p_idx], -overlap[p_idx, c_idx]))
    new_id = np.full(kc, -1, dtype=np.int64)
    taken = np.zeros(kp, dtype=bool)
    for r in order:
        p, c = p_idx[r], c_idx[r]
        if not taken[p] and new_id[c] < 0:
            taken[p] = True
            new_id[c] = uniq[p]
    splits = []
    for c in np.flatnonzero(new_id < 0):
        new_id[c] = next_id
        parent = uniq[int(np.argmax(overlap[:, c]))]
        splits.append((int(parent), next_id, int(overlap[:, c].sum())))
        next_id += 1
    absorbed: dict[int, list[int]] = {}
    for p in np.flatnonzero(~taken):
        # the matched new cluster holding most of p's tokens (argmax: smallest
        # label on ties); every new cluster is matched by now
        c = int(np.argmax(overlap[p]))
        absorbed.setdefault(int(new_id[c]), []).append(int(p))
    size_of = dict(zip(uniq.tolist(), prev_sizes.tolist(), strict=True))
    merges = []
    for into in sorted(absorbed):
        gone = tuple(int(uniq[p]) for p in absorbed[into])
        sizes = (int(size_of.get(into, 0)), *(int(prev_sizes[p]) for p in absorbed[into]))
        merges.append((into, gone, sizes))
    return new_id[new_labels], merges, splits, next_id


def track_labels(
    raw_labels: np.ndarray, times: np.ndarray | None = None, system: int = 0
) -> Tracked:
    """Persistent cluster ids over the frames of one system.

    Parameters
    ----------
    raw_labels : ndarray of int, shape (frames, n)
        Per-frame labels ``0 .. k_f - 1`` (e.g. ``ClusterDetector.labels``).
    times : ndarray, shape (frames,), optional
        Frame times for the events (default: frame indices).
    system : int
        System index recorded in the events.

    Returns
    -------
    Tracked
        Ids (frame 0 keeps its raw labels) and the merge and split events.
    """
    raw_labels = np.asarray(raw_labels, dtype=np.int64)
    frames = raw_labels.shape[0]
    times = np.arange(frames, dtype=np.float64) if times is None else np.asarray(times)
    ids = np.empty_like(raw_labels)
    merges: list[MergeEvent] = []
    splits: list[SplitEvent] = []
    if frames == 0:
        return Tracked(ids, merges, splits, 0)
    ids[0] = raw_labels[0]
    next_id = int(raw_labels[0].max()) + 1
    for f in range(1, frames):
        ids[f], m, s, next_id = match_frame(ids[f - 1], raw_labels[f], next_id)
        t = float(times[f])
        merges.extend(MergeEvent(f, t, system, into, gone, sizes) for into, gone, sizes in m)
        splits.extend(SplitEvent(f, t, system, p, c, size) for p, c, size in s)
    return Tracked(ids, merges, splits, next_id)


@dataclass(frozen=True)
class MergeTree:
    """Genealogy of the clusters of one system.

    Every id ever used is a node.  A node absorbed in a merge has the
    surviving id as parent; clusters alive at the last frame are roots.

    Attributes
    ----------
    ids : ndarray of int64, shape (nodes,)
        Cluster ids ``0 .. nodes-1``.
    birth : ndarray, shape (nodes,)
        Time of the first frame with the id.
    death : ndarray, shape (nodes,)
        Time of the merge that absorbed it (NaN: alive at the end).
    parent : ndarray of int64, shape (nodes,)
        Id it merged into (-1: alive at the end).
    size_at_death : ndarray of int64, shape (nodes,)
        Its size just before being absorbed (its final size if alive).
    """

    ids: np.ndarray
    birth: np.ndarray
    death: np.ndarray
    parent: np.ndarray
    size_at_death: np.ndarray

    @classmethod
    def from_tracking(cls, tracked: Tracked, times: np.ndarray) -> MergeTree:
        """Build the tree from :func:`track_labels` output and the frame times."""
        nodes = tracked.next_id
        ids = np.arange(nodes, dtype=np.int64)
        birth = np.full(nodes, np.nan)
        death = np.full(nodes, np.nan)
        parent = np.full(nodes, -1, dtype=np.int64)
        size = np.zeros(nodes, dtype=np.int64)
        for f in range(tracked.ids.shape[0] - 1, -1, -1):
            u = np.unique(tracked.ids[f])
            birth[u] = times[f]
        if tracked.ids.shape[0]:
            last = np.bincount(tracked.ids[-1], minlength=nodes)
            alive = last > 0
            size[alive] = last[alive]
        for ev in tracked.merges:
            for gone, s in zip(ev.absorbed, ev.sizes[1:], strict=True):
                death[gone] = ev.time
                parent[gone] = ev.into
                size[gone] = s
        return cls(ids, birth, death, parent, size)

    @property
    def roots(self) -> np.ndarray:
        """Ids of the clusters alive at the end (int64 array)."""
        return self.ids[(self.parent < 0) & ~np.isnan(self.birth)]

    def children(self, cluster: int) -> np.ndarray:
        """Ids that merged into ``cluster``, in order of their merge time."""
        kids = np.flatnonzero(self.parent == cluster)
        return self.ids[kids[np.argsort(self.death[kids], kind="stable")]]

    def to_text(self) -> str:
        """The tree as indented text, one line per cluster."""
        lines: list[str] = []

        def walk(node: int, depth: int) -> None:
            when = "" if np.isnan(self.death[node]) else f", merged at t={self.death[node]:.4g}"
            lines.append(f"{'  ' * depth}cluster {node} (size {self.size_at_death[node]}{when})")
            for kid in self.children(node):
                walk(int(kid), depth + 1)

        for root in self.roots:
            walk(int(root), 0)
        return "\n".join(lines)
