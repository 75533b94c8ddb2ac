"""The ``/analysis`` group of a trajectory file: written and read as plain arrays.

The layout (its datasets and attributes) is documented in
:mod:`particles.analysis.report`, which turns an analysis result into the
attributes and arrays stored here and back; this module only knows HDF5.

The group is replaced atomically: it is built as ``/_analysis_tmp`` and only
then moved over ``/analysis`` (an HDF5 link operation), so a failure while
writing leaves the previous results intact.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

#: name of the group holding the results in a trajectory file.
ANALYSIS_GROUP = "analysis"

#: the name the group is built under before it replaces ``/analysis``.
TMP_GROUP = "_analysis_tmp"

__all__ = ["ANALYSIS_GROUP", "AnalysisData", "read_analysis_group", "write_analysis_group"]


@dataclass(frozen=True)
class AnalysisData:
    """The content of an ``/analysis`` group.

    Attributes
    ----------
    attrs : dict of str to Any
        The group's attributes.
    datasets : dict of str to ndarray
        Every dataset, by its path inside the group (``"time"``,
        ``"scalars/energy"``, ``"merges/frame"``, ...).
    """

    attrs: dict[str, Any]
    datasets: dict[str, np.ndarray]

    def group(self, name: str) -> dict[str, np.ndarray]:
        """The datasets of one subgroup, by their names in it."""
        prefix = f"{name}/"
        return {k[len(prefix):]: v for k, v in self.datasets.items() if k.startswith(prefix)}


def write_analysis_group(
    path: str | os.PathLike,
    attrs: Mapping[str, Any],
    datasets: Mapping[str, np.ndarray],
    *,
    groups: Iterable[str] = (),
    compressed: Iterable[str] = (),
) -> None:
    """Replace the ``/analysis`` group of an existing HDF5 file.

    Parameters
    ----------
    path : str or path-like
        An existing HDF5 file, opened for appending.
    attrs : mapping
        Attributes of the group.
    datasets : mapping of str to ndarray
        Datasets by their path inside the group (subgroups made as needed).
    groups : iterable of str
        Subgroups that must exist even when they hold no dataset.
    compressed : iterable of str
        Datasets stored with gzip and shuffle.

    Raises
    ------
    OSError
        The file cannot be opened for writing (e.g. a run is still writing it).
    """
    import h5py

    compressed = set(compressed)
    try:
        f = h5py.File(path, "a")
    except OSError as exc:
        raise OSError(
            f"cannot open {os.fspath(path)} to store /{ANALYSIS_GROUP} (is a run "
            f"still writing it?): {' '.join(str(exc).split())}"
        ) from None
    with f:
        if TMP_GROUP in f:
            del f[TMP_GROUP]
        g = f.create_group(TMP_GROUP)
        for key, value in attrs.items():
            g.attrs[key] = value
        for name in groups:
            g.require_group(name)
        for name, data in datasets.items():
            if name in compressed:
                g.create_dataset(name, data=data, compression="gzip", shuffle=True)
            else:
                g.create_dataset(name, data=data)
        if ANALYSIS_GROUP in f:
            del f[ANALYSIS_GROUP]
        f.move(TMP_GROUP, ANALYSIS_GROUP)


def read_analysis_group(path: str | os.PathLike) -> AnalysisData:
    """Read every attribute and dataset of the ``/analysis`` group.

    Raises
    ------
    KeyError
        If the file has no ``/analysis`` group.
    """
    import h5py

    with h5py.File(path, "r") as f:
        if ANALYSIS_GROUP not in f:
            raise KeyError(
                f"{os.fspath(path)} has no /{ANALYSIS_GROUP} group (run `particles analyze` first)"
            )
        g = f[ANALYSIS_GROUP]
        datasets: dict[str, np.ndarray] = {}

        def visit(name: str, obj) -> None:
            if isinstance(obj, h5py.Dataset):
                datasets[name] = obj[()]

        g.visititems(visit)
        return AnalysisData(dict(g.attrs), datasets)
