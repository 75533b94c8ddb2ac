"""The ``/analysis`` group of a trajectory's results: written and read as plain arrays.

The layout (its datasets and attributes) is documented in
:mod:`particles.analysis.report`, which turns an analysis result into the
attributes and arrays stored here and back; this module only knows HDF5.

Where.  The results of ``run.h5`` live in a sidecar file next to it,
``run.analysis.h5`` (:func:`analysis_path`), holding one ``/analysis``
group: the trajectory itself is only ever opened read-only, so analysing
it can never damage its frames (a full disk while writing results into the
trajectory used to make it unreadable).  The sidecar is written under a
hidden temporary name (:func:`particles.paths.temporary_path`:
``.run.analysis.h5.PID@HOST.XXXXXXXX.partial``), its disk
space reserved first, read back, and only then renamed over the previous
one, so a failure or Ctrl-C while writing leaves the previous results
intact and no temporary file.  Files written before the sidecar existed
keep ``/analysis`` inside the trajectory; :func:`read_analysis_group` reads
the sidecar when there is one and that group otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from particles.paths import put_in_place, temporary_path

#: name of the group holding the results in a trajectory file.
ANALYSIS_GROUP = "analysis"

#: the name the group was built under inside trajectories (old files).
TMP_GROUP = "_analysis_tmp"

#: ending of the sidecar file holding a trajectory's results.
SIDECAR_SUFFIX = ".analysis.h5"

__all__ = [
    "ANALYSIS_GROUP",
    "SIDECAR_SUFFIX",
    "AnalysisData",
    "analysis_path",
    "read_analysis_group",
    "write_analysis_group",
]


def analysis_path(path: str | os.PathLike) -> Path:
    """The sidecar file of a trajectory's results: ``run.h5`` -> ``run.analysis.h5``.

    Parameters
    ----------
    path : str or path-like
        The trajectory (``.h5``/``.hdf5``/``.hdf`` lose their extension first).
    """
    path = Path(path)
    stem = path.stem if path.suffix.lower() in (".h5", ".hdf5", ".hdf") else path.name
    return path.with_name(stem + SIDECAR_SUFFIX)


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
    """Replace the results of the trajectory ``path`` (its sidecar file's ``/analysis``).

    The trajectory is not opened at all; the sidecar (:func:`analysis_path`)
    is written under a temporary name and renamed over the previous one.

    Parameters
    ----------
    path : str or path-like
        The trajectory file the results belong to.
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
    OutputWriteError
        The sidecar could not be written (disk full, read-only directory);
        the previous results and the trajectory are unchanged, nothing is left.
    """
    import h5py

    from particles.io.hdf5 import Reserve, close_quietly, write_failure

    compressed = set(compressed)
    target = analysis_path(path)
    temp = temporary_path(target)
    need = 2**16 + sum(np.asarray(v).nbytes + 4096 for v in datasets.values())
    f = reserve = None
    try:
        f = h5py.File(temp, "x")
        reserve = Reserve(f)
        reserve.ensure(f, need)  # fails here, before HDF5 writes, on a full disk
        g = f.create_group(ANALYSIS_GROUP)
        g.attrs["trajectory"] = Path(path).name
        for key, value in attrs.items():
            g.attrs[key] = value
        for name in groups:
            g.require_group(name)
        for name, data in datasets.items():
            if name in compressed:
                g.create_dataset(name, data=data, compression="gzip", shuffle=True)
            else:
                g.create_dataset(name, data=data)
        f.flush()
        close_quietly(f, reserve)
        f = None
        _read_group(temp)  # read back: never rename a damaged file over good results
        put_in_place(temp, target, overwrite=True)
    except (OSError, RuntimeError, KeyError, ValueError) as exc:
        if f is not None:
            close_quietly(f, reserve)
        temp.unlink(missing_ok=True)
        raise write_failure(target, exc, needed=need, frames=None) from None
    except BaseException:  # Ctrl-C: no temporary file left, old results kept
        if f is not None:
            close_quietly(f, reserve)
        temp.unlink(missing_ok=True)
        raise


def analysis_source(path: str | os.PathLike) -> Path | None:
    """The file holding a trajectory's stored results, or None.

    The sidecar :func:`analysis_path` when it exists, otherwise the
    trajectory itself when it holds an ``/analysis`` group (files analysed
    before sidecars), otherwise None.
    """
    import h5py

    sidecar = analysis_path(path)
    if sidecar.is_file() and sidecar != Path(path):
        return sidecar
    try:
        with h5py.File(path, "r") as f:
            return Path(path) if ANALYSIS_GROUP in f else None
    except OSError:
        return None


def read_analysis_group(path: str | os.PathLike) -> AnalysisData:
    """Read every attribute and dataset of a trajectory's stored results.

    From the sidecar :func:`analysis_path` when it exists, otherwise from
    the ``/analysis`` group inside the trajectory (files analysed before
    sidecars).

    Raises
    ------
    KeyError
        If neither holds an ``/analysis`` group.
    """
    sidecar = analysis_path(path)
    if sidecar.is_file() and sidecar != Path(path):
        return _read_group(sidecar)
    return _read_group(path, f"{os.fspath(path)} has no /{ANALYSIS_GROUP} group and no "
                             f"{sidecar.name} (run `particles analyze` first)")


def _read_group(path: str | os.PathLike, missing: str | None = None) -> AnalysisData:
    import h5py

    with h5py.File(path, "r") as f:
        if ANALYSIS_GROUP not in f:
            raise KeyError(missing or f"{os.fspath(path)} has no /{ANALYSIS_GROUP} group")
        g = f[ANALYSIS_GROUP]
        datasets: dict[str, np.ndarray] = {}

        def visit(name: str, obj) -> None:
            if isinstance(obj, h5py.Dataset):
                datasets[name] = obj[()]

        g.visititems(visit)
        return AnalysisData(dict(g.attrs), datasets)
