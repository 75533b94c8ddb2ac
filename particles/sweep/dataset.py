"""Reading a sweep file as an ``xarray.Dataset`` and as a tidy CSV table."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from particles.errors import OutputPathError, SweepError
from particles.io.sweep import (
    MERGE_SOURCES,
    MERGE_STATS,
    open_sweep,
    read_stats,
    reading,
    sweep_error,
)
from particles.paths import check_output_path, put_in_place, same_file, temporary_path

__all__ = ["export_csv", "load"]


def _tables(name: str) -> Any:
    """The module ``name`` (xarray, pandas), or an ImportError naming the extra."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(f"reading a sweep's statistics as a table needs {name}: "
                          "pip install 'attention-particles[tables]'", name=name) from None


def load(path: str | Path) -> Any:
    """The statistics of a finished sweep as an ``xarray.Dataset``.

    Coordinates: one per swept field (named as the ``simulate`` option's
    field: ``beta``, ``d``, ``model``, ...), in grid order; ``time``,
    ``delta``, ``quantile``, ``clusters`` (1 .. largest n) and ``system``.
    Data variables: see :mod:`particles.sweep.aggregate`.  Attributes: the
    sweep (JSON), its fixed fields (``config``, JSON), the swept axes, root
    seed, runs, eps of the cluster detection, software versions,
    ``merge_times``: where the first-merge and single-cluster times come
    from (``"located"``: merges located between the save times,
    ``--merge-events``; ``"save_grid"``: the save times; the two variables
    carry it as ``source`` too), and ``until_clusters`` (K) for a sweep
    whose grid points stopped at K clusters.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    xarray.Dataset

    Raises
    ------
    SweepError
        Not a sweep file, a damaged one, or an unfinished sweep (resume it
        first); one line naming the file.
    ImportError
        xarray is not installed (``pip install 'attention-particles[tables]'``).
    """
    xr = _tables("xarray")
    path = Path(path)
    with open_sweep(path) as f, reading(path):
        coords, data, attrs = _contents(f, path)
        if not data:
            raise sweep_error(path, "holds no statistics")
        return xr.Dataset(data, coords=coords, attrs=attrs)


def _contents(f: Any, path: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The coordinates, data variables and attributes of an open sweep file."""
    params = f["parameters"]
    if not int(params.attrs.get("complete", 0)):
        done = int(np.asarray(f["sweep/done"][()]).sum())
        total = int(np.prod(f["sweep/done"].shape))
        raise sweep_error(path, f"unfinished sweep ({done} of {total} systems done); "
                          "finish it with the original command and --resume")
    g = f["sweep"]
    axes = json.loads(g.attrs["axes"])
    coords: dict[str, Any] = {}
    for k in axes:
        values = g["axes"][k][()]
        if values.dtype.kind in "OS":
            values = np.array([v.decode() if isinstance(v, bytes) else str(v)
                               for v in values])
        coords[k] = values
    runs = int(g.attrs["runs"])
    coords["time"] = g["time"][()]
    coords["delta"] = g["delta"][()]
    coords["quantile"] = g["quantile"][()]
    coords["clusters"] = g["clusters"][()]
    coords["system"] = np.arange(runs)
    stats = g["stats"]
    data = {k: (dims, values, {key: str(stats[k].attrs[key]) for key in ("source",)
                               if key in stats[k].attrs})
            for k, (values, dims) in read_stats(f).items()}
    sources = {v[2].get("source", MERGE_SOURCES[False]) for k, v in data.items()
               if k in MERGE_STATS}
    attrs = {
        "sweep": str(params.attrs["sweep"]),
        "config": str(params.attrs["config"]),
        "axes": json.dumps(axes),
        "seed": str(params.attrs["seed"]),
        "runs": runs,
        "eps": float(g.attrs["eps"]),
        "versions": json.dumps({k: str(v) for k, v in params["versions"].attrs.items()}),
        "merge_times": sources.pop() if len(sources) == 1 else MERGE_SOURCES[False],
    }
    until = json.loads(str(params.attrs["sweep"])).get("until_clusters")
    if until is not None:
        attrs["until_clusters"] = int(until)
    return coords, data, attrs


def export_csv(path: str | Path, out: str | Path, *, variables: tuple[str, ...] | None = None,
               overwrite: bool = False) -> int:
    """Write the statistics of a sweep as one tidy CSV table.

    One row per value: the column ``variable`` names the statistic, one
    column per coordinate it depends on (grid axes, ``time``, ``delta``,
    ``quantile``, ``clusters``, ``system``; empty where it does not), and
    ``value``.

    Parameters
    ----------
    path : str or Path
        Sweep file.
    out : str or Path
        CSV file to write.
    variables : tuple of str, optional
        Statistics to export (default: all).
    overwrite : bool
        Replace an existing ``out`` (never the sweep file itself, whatever
        name or link leads to it).

    Returns
    -------
    int
        Rows written.

    Raises
    ------
    OutputPathError
        ``out`` exists (without ``overwrite``), is the sweep file, or its
        directory cannot be written.
    SweepError
        ``path`` is not a finished sweep, or an unknown statistic.
    ImportError
        pandas or xarray is not installed (the ``tables`` extra).
    """
    pd = _tables("pandas")

    if same_file(path, out):
        raise OutputPathError(f"{out} is the sweep file {path} itself; the export would "
                              "replace it (give another file)", out)
    out = check_output_path(out, overwrite=overwrite, resumable=False)
    ds = load(path)
    names = tuple(ds.data_vars) if variables is None else variables
    unknown = [v for v in names if v not in ds.data_vars]
    if unknown:
        raise SweepError(f"unknown statistic(s) {', '.join(unknown)}; "
                         f"allowed: {', '.join(ds.data_vars)}")
    columns = ["variable", *ds.coords]
    frames = []
    for name in names:
        da = ds[name]
        if da.ndim == 0:
            table = pd.DataFrame({"value": [da.item()]})
        else:
            table = da.to_dataframe(name="value").reset_index()
        table.insert(0, "variable", name)
        frames.append(table)
    table = pd.concat(frames, ignore_index=True).reindex(columns=[*columns, "value"])
    for c in ds.coords:
        if ds[c].dtype.kind in "iu":  # integer coordinates stay integers (empty: missing)
            table[c] = table[c].astype("Int64")
    temp = temporary_path(out, ".csv")  # the old file stays until the new one is whole
    try:
        table.to_csv(temp, index=False)
        put_in_place(temp, out, overwrite=overwrite)
    finally:
        temp.unlink(missing_ok=True)
    return len(table)
