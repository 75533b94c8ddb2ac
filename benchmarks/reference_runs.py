"""Record small reference runs, and check later that the code reproduces them bit for bit.

The package is about to be restructured (modules moved, public APIs kept).
This script pins down what the restructure must not change: it runs a set of
small cases through the command line only (``particles simulate``,
``particles compare``, ``particles kernels``, ``particles analyze``, each in
a fresh process as ``python -m particles_cli ...``) plus the one Python API
that stays where it is, :func:`particles.circle.simulate_angles`, and records
what they write.

``record DIR`` runs every case and writes into DIR

* ``manifest.json``: per case, the commands, their exit codes, their stdout
  (and ``Warning:`` lines of stderr), and per output file a manifest: for an
  HDF5 file every group and dataset path (hard links included, with the
  object each link points to), each dataset's shape, dtype, storage layout
  and the sha256 of its raw bytes, and every attribute name and value; for
  a ``.npz`` file every array's shape, dtype and sha256; for a ``.png`` the
  sha256 of the file and the shape and sha256 of its pixels;
* ``files/CASE/...``: copies of the output files themselves, so that a later
  check can report the largest absolute difference of each dataset that
  changed.

``check DIR`` reruns every case into a temporary directory, compares the new
outputs with DIR and prints one row per case (status, and the largest
``|diff|`` or the names of the missing, extra or differing datasets and
attributes).  It exits with 0 when everything matches and 1 otherwise.

What must match: the set of groups and datasets (reported by name when one
is missing or extra), their shapes, dtypes and bytes, which paths are hard
links to one object, every attribute that does not legitimately vary from
run to run (JSON strings such as ``/parameters:config`` are compared as
parsed JSON, keys in :data:`VOLATILE_JSON_KEYS` ignored), the exit codes,
stdout and warnings.  Attributes in :data:`VOLATILE_ATTRIBUTES` (software
versions, the user name) only have to exist.  Chunking and compression of a
dataset are reported as a note, never a failure.

Every run is seeded and runs with ``NUMBA_NUM_THREADS=2`` (observables and
the row-parallel layout split their work by thread count, so a fixed count
makes the bytes independent of the machine); the whole recording takes a few
minutes on 2 cores, mostly Numba compile time.

Usage::

    python benchmarks/reference_runs.py record DIR [--jobs 2] [--overwrite]
    python benchmarks/reference_runs.py check DIR [--jobs 2] [--keep OUT] [--case NAME ...]
    python benchmarks/reference_runs.py list
"""

from __future__ import annotations

import argparse
import concurrent.futures
import fnmatch
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: format of manifest.json.
MANIFEST_VERSION = 1

#: the script itself (the circle case runs it again as a subprocess).
SCRIPT = Path(__file__).resolve()

#: ``python -m particles_cli``: the ``particles`` command of this interpreter.
PARTICLES = (sys.executable, "-m", "particles_cli")

#: environment of every run: fixed thread count, no buffering.
RUN_ENV = {"NUMBA_NUM_THREADS": "2", "PYTHONUNBUFFERED": "1", "PYTHONHASHSEED": "0"}

#: ``OBJECT_PATH:ATTRIBUTE`` patterns (fnmatch) of attributes whose values may
#: differ between two runs of the same code: software versions, the user name.
#: Their presence is still checked.
VOLATILE_ATTRIBUTES = (
    "h5md/author:name",  # the user running the command
    "h5md/creator:version",  # particles version
    "*versions:*",  # /parameters/versions (and any per-model copy): software versions
    "*:created_by",  # /analysis: "particles <version>"
    "*:*timestamp*",
    "*:*date*",
    "*:*host*",
)

#: keys ignored (at any depth) when attributes holding JSON are compared.
VOLATILE_JSON_KEYS = frozenset(
    {"version", "versions", "created", "created_by", "timestamp", "date", "host", "hostname",
     "user", "python", "numpy", "numba", "h5py", "hdf5"}
)

#: seconds a case may take (compile included) before it counts as failed.
CASE_TIMEOUT = 900

#: the resume case is interrupted once its file holds this many frames: early
#: when recording, later when checking, so that a check also shows that the
#: resumed file does not depend on where the run stopped.
INTERRUPT_AFTER_FRAMES = {"record": 2, "check": 100}


# ------------------------------------------------------------------ cases
@dataclass(frozen=True)
class Step:
    """One command of a case, run in the case's directory.

    ``kind`` is ``"cli"`` (``particles ARGS``), ``"interrupt"`` (``particles
    ARGS`` stopped by SIGINT once its ``out`` holds frames; exit code 130
    expected) or ``"circle"`` (the :func:`particles.circle.simulate_angles`
    runs of :func:`circle_runs`, written to ``out``).
    """

    args: tuple[str, ...] = ()
    kind: str = "cli"
    out: str = ""
    compare_stdout: bool = True


@dataclass(frozen=True)
class Case:
    """A named list of steps and the files they leave to compare."""

    name: str
    what: str
    steps: tuple[Step, ...]
    outputs: tuple[str, ...]
    inputs: dict[str, str] = field(default_factory=dict)  # file name -> generator name


def _sim(*args: str, out: str = "run.h5") -> Step:
    return Step(("simulate", *args, "--out", out))


BASE = ("--n", "32", "--d", "3", "--beta", "4", "--dt", "0.05", "--T", "3", "--save-every", "10")


def _one(name: str, what: str, *args: str) -> Case:
    return Case(name, what, (_sim(*args),), ("run.h5",))


CASES: tuple[Case, ...] = (
    # every model
    _one("sa-rk4", "model sa, integrator rk4, kernel edp (the defaults, given)",
         *BASE, "--model", "sa", "--integrator", "rk4", "--kernel", "edp", "--seed", "1"),
    _one("usa", "model usa, usa_scale n",
         "--n", "32", "--d", "3", "--beta", "1", "--dt", "0.05", "--T", "3", "--save-every", "10",
         "--model", "usa", "--usa-scale", "n", "--seed", "2"),
    _one("kuramoto", "model kuramoto, no frequencies",
         "--n", "32", "--d", "2", "--beta", "0", "--dt", "0.05", "--T", "3", "--save-every", "10",
         "--model", "kuramoto", "--seed", "3"),
    # every integrator on sa
    _one("sa-euler", "integrator euler (Transformer layer), repulsive V, cap init",
         *BASE, "--integrator", "euler", "--V", "minus-identity", "--init", "cap:1.0",
         "--seed", "4"),
    _one("sa-geodesic", "integrator geodesic, vmf init",
         *BASE, "--integrator", "geodesic", "--init", "vmf:2", "--seed", "5"),
    Case("sa-dopri5", "integrator dopri5 from a --config TOML (command line seed)",
         (_sim("--config", "run.toml", "--seed", "6"),), ("run.h5",),
         inputs={"run.toml": "dopri5_toml"}),
    # every kernel (edp: sa-rk4)
    _one("kernel-rbf", "kernel rbf, tau 2", *BASE, "--kernel", "rbf", "--tau", "2",
         "--seed", "7"),
    _one("kernel-l2", "kernel l2, tau 1", *BASE, "--kernel", "l2", "--tau", "1", "--seed", "8"),
    _one("kernel-intersection", "kernel intersection",
         "--n", "32", "--d", "3", "--beta", "2", "--dt", "0.05", "--T", "3",
         "--save-every", "10", "--kernel", "intersection", "--seed", "9"),
    Case("kernel-quadratic", "kernel quadratic, gamma 0.5, initial tokens from PATH.npy",
         (_sim(*BASE, "--kernel", "quadratic", "--gamma", "0.5", "--init", "x0.npy",
               "--seed", "10"),),
         ("run.h5",), inputs={"x0.npy": "x0_32_3"}),
    # ensembles and random weights
    _one("ensemble", "batch 4, lin save-times",
         "--n", "16", "--d", "3", "--beta", "4", "--dt", "0.05", "--T", "4",
         "--save-times", "lin:0:4:9", "--batch", "4", "--seed", "11"),
    _one("weights-independent", "gaussian Q^T K, wwt V, 2 heads, layer time 0.5, "
         "independent draws per system",
         "--n", "16", "--d", "4", "--beta", "1", "--dt", "0.05", "--T", "2",
         "--save-every", "5", "--batch", "3", "--weights", "gaussian", "--value-weights", "wwt",
         "--heads", "2", "--layer-time", "0.5", "--weight-draws", "independent",
         "--seed", "12"),
    _one("weights-goe", "one system: goe Q^T K, V = -Q^T K, redrawn every layer time 1",
         "--n", "16", "--d", "4", "--beta", "1", "--dt", "0.05", "--T", "2",
         "--save-every", "5", "--weights", "goe", "--value-weights", "minus_qk",
         "--layer-time", "1", "--weight-draws", "shared", "--seed", "13"),
    _one("sinkhorn", "sinkhorn normalisation",
         "--n", "24", "--d", "3", "--beta", "2", "--dt", "0.05", "--T", "2",
         "--save-every", "10", "--normalization", "sinkhorn", "--sinkhorn-iters", "50",
         "--sinkhorn-tol", "1e-10", "--seed", "14"),
    # execution layouts
    _one("rows-layout", "one system of n = 600 >= 512: rows over threads",
         "--n", "600", "--d", "3", "--beta", "1", "--dt", "0.05", "--T", "0.1",
         "--save-every", "1", "--seed", "15"),
    _one("usa-blas", "usa in d = 32 >= 24: BLAS row blocks, usa_scale n_exp_beta",
         "--n", "48", "--d", "32", "--beta", "2", "--dt", "0.05", "--T", "2",
         "--save-every", "10", "--model", "usa", "--usa-scale", "n_exp_beta", "--seed", "16"),
    # Kuramoto frequencies
    _one("kuramoto-lorentzian", "kuramoto, omega lorentzian:0.5, coupling 2",
         "--n", "32", "--d", "2", "--beta", "0", "--dt", "0.05", "--T", "3",
         "--save-every", "10", "--model", "kuramoto", "--omega", "lorentzian:0.5",
         "--coupling", "2", "--seed", "17"),
    _one("kuramoto-independent", "kuramoto ensemble, gaussian frequencies drawn per system",
         "--n", "16", "--d", "2", "--beta", "0", "--dt", "0.05", "--T", "3",
         "--save-every", "10", "--model", "kuramoto", "--omega", "gaussian:0.3",
         "--coupling", "1.5", "--batch", "3", "--weight-draws", "independent", "--seed", "18"),
    # SIGINT, then --resume: must equal the uninterrupted run whatever the frame it stopped at
    Case("resume", "euler run, gaussian weights redrawn every layer, stopped by SIGINT "
         "(record: at 2 frames, check: at 100), then --resume",
         (Step(("simulate", "--n", "64", "--d", "3", "--beta", "1", "--integrator", "euler",
                "--dt", "0.001", "--T", "400", "--save-every", "1000", "--weights", "gaussian",
                "--value-weights", "wwt", "--layer-time", "1", "--seed", "20",
                "--out", "run.h5"), kind="interrupt", out="run.h5", compare_stdout=False),
          Step(("simulate", "--resume", "--out", "run.h5"))),
         ("run.h5",)),
    # the other commands
    Case("compare", "particles compare: sa, usa, kuramoto from the same angles, with --plot",
         (Step(("compare", "--n", "24", "--beta", "4", "--T", "4", "--dt", "0.02",
                "--save-every", "10", "--integrator", "rk4", "--coupling", "2",
                "--omega", "lorentzian:0.5", "--seed", "21", "--out", "compare.h5",
                "--plot", "compare.png")),),
         ("compare.h5", "compare.png")),
    Case("kernels", "particles kernels: edp and l2 from the same tokens (one PNG; every "
         "kernel has its own simulate case)",
         (Step(("kernels", "--n", "16", "--d", "3", "--beta", "4", "--T", "3", "--dt", "0.05",
                "--save-every", "10", "--tau", "2", "--kernels", "edp,l2", "--seed", "22",
                "--out", "kernels.png")),),
         ("kernels.png",)),
    Case("save-times-log-analyze", "log save-times (rk4 steps land on every time) of a "
         "metastable run on the circle, then particles analyze on it",
         (_sim("--n", "32", "--d", "2", "--beta", "9", "--integrator", "rk4", "--dt", "0.05",
               "--T", "100", "--save-times", "log:0.01:100:30", "--seed", "19"),
          Step(("analyze", "run.h5"))),
         ("run.h5",)),
    Case("circle", "particles.circle.simulate_angles: kuramoto, sa, usa x rk4, dopri5",
         (Step(kind="circle", out="circle.npz"),), ("circle.npz",)),
)


# ------------------------------------------------------------ case inputs
def _write_input(kind: str, path: Path) -> None:
    """Write an input file of a case (deterministic)."""
    if kind == "x0_32_3":
        x = np.random.default_rng(100).normal(size=(32, 3))
        np.save(path, x / np.linalg.norm(x, axis=1, keepdims=True))
    elif kind == "dopri5_toml":
        path.write_text(
            'n = 32\nd = 3\nbeta = 4.0\nintegrator = "dopri5"\nrtol = 1e-7\natol = 1e-10\n'
            "dt = 0.05\nT = 3.0\nsave_every = 10\nseed = 999\n"
        )
    else:
        raise ValueError(f"unknown input {kind!r}")


def circle_runs(out: Path) -> None:
    """Run :func:`particles.circle.simulate_angles` for kuramoto, sa, usa with
    rk4 and dopri5; save theta, times, steps, rejected, omega to ``out`` (.npz)."""
    from particles.circle import simulate_angles

    theta0 = np.random.default_rng(200).uniform(0.0, 2.0 * np.pi, 24)
    models = {
        "kuramoto": {"beta": 0.0, "coupling": 2.0, "omega": "gaussian:0.5", "seed": 31},
        "sa": {"beta": 4.0},
        "usa": {"beta": 4.0, "usa_scale": "n_exp_beta"},
    }
    integrators = {"rk4": {"dt": 0.01}, "dopri5": {"dt": 0.01, "rtol": 1e-8, "atol": 1e-11}}
    arrays = {}
    for model, kw in models.items():
        for integrator, ikw in integrators.items():
            run = simulate_angles(theta0, model=model, integrator=integrator, T=2.0,
                                  save_every=20, **kw, **ikw)
            for key in ("theta", "times", "steps", "rejected", "omega"):
                arrays[f"{model}-{integrator}-{key}"] = getattr(run, key)
    np.savez(out, **arrays)


# ------------------------------------------------------------ running
@dataclass
class StepResult:
    """What one step did."""

    command: str
    rc: int
    stdout: str
    warnings: list[str]
    stderr: str
    compare_stdout: bool
    note: str = ""


def _env() -> dict[str, str]:
    return {**os.environ, **RUN_ENV}


def _warnings(stderr: str) -> list[str]:
    """The ``Warning: ...`` lines of stderr (the progress bar redraws with \\r)."""
    out = []
    for line in re.split(r"[\r\n]", stderr):
        k = line.find("Warning: ")
        if k >= 0:
            out.append(line[k:].strip())
    return out


def _frames(path: Path) -> int:
    """Frames in a trajectory another process is writing (0 while unreadable)."""
    import h5py

    try:
        with h5py.File(path, "r", locking=False) as f:
            return int(f["particles/tokens/position/step"].shape[0])
    except Exception:  # not created yet, or caught mid-write
        return 0


def _run_step(step: Step, where: Path, interrupt_after: int) -> StepResult:
    if step.kind == "circle":
        argv = [sys.executable, str(SCRIPT), "_circle", step.out]
        command = f"circle_runs {step.out}"
    else:
        argv = [*PARTICLES, *step.args]
        command = " ".join(("particles", *step.args))
    if step.kind != "interrupt":
        p = subprocess.run(argv, cwd=where, env=_env(), capture_output=True, text=True,
                           timeout=CASE_TIMEOUT)
        return StepResult(command, p.returncode, p.stdout, _warnings(p.stderr), p.stderr,
                          step.compare_stdout)
    proc = subprocess.Popen(argv, cwd=where, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    note = ""
    try:
        deadline = time.monotonic() + CASE_TIMEOUT
        while proc.poll() is None and time.monotonic() < deadline:
            frames = _frames(where / step.out)
            if frames >= interrupt_after:
                proc.send_signal(signal.SIGINT)
                note = f"SIGINT at {frames} frames"
                break
            time.sleep(0.05)
        stdout, stderr = proc.communicate(timeout=CASE_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rc = proc.returncode
    if rc == 130:
        rc = 0  # the expected outcome
    elif rc == 0:
        rc, note = 1, "the run finished before SIGINT (make it longer)"
    return StepResult(command + "  [SIGINT]", rc, stdout, _warnings(stderr), stderr,
                      step.compare_stdout, note)


def run_case(case: Case, where: Path, interrupt_after: int) -> tuple[list[StepResult], float]:
    """Run every step of ``case`` in the (new, empty) directory ``where``."""
    where.mkdir(parents=True)
    for name, kind in case.inputs.items():
        _write_input(kind, where / name)
    start = time.monotonic()
    results = []
    for step in case.steps:
        r = _run_step(step, where, interrupt_after)
        results.append(r)
        if r.rc != 0:
            break
    return results, time.monotonic() - start


# ------------------------------------------------------------ manifests
def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _array_bytes(a: np.ndarray) -> bytes:
    """Raw bytes of an array; strings and other objects as JSON of their values."""
    if a.dtype.kind == "O":
        return json.dumps([_plain(v) for v in a.ravel().tolist()]).encode()
    return np.ascontiguousarray(a).tobytes()


def _plain(v):
    """A JSON-able form of an attribute value (exact for floats, NaN kept)."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    if isinstance(v, np.ndarray):
        return [_plain(x) for x in v.tolist()] if v.ndim else _plain(v.item())
    if isinstance(v, np.generic):
        return _plain(v.item())
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    return v


def _attr_entry(value) -> dict:
    arr = np.asarray(value)
    entry = {"dtype": str(arr.dtype) if arr.dtype.kind != "O" else "object",
             "shape": list(arr.shape), "value": _plain(value)}
    if isinstance(entry["value"], str) and entry["value"][:1] in "{[":
        try:
            entry["json"] = json.loads(entry["value"])
        except ValueError:
            pass
    return entry


def h5_manifest(path: Path) -> dict:
    """Every link (groups and datasets) of an HDF5 file, with attributes."""
    import h5py

    groups: dict[str, dict] = {}
    datasets: dict[str, dict] = {}
    first_path: dict[tuple, str] = {}  # object -> first path reaching it

    def attrs(obj) -> dict:
        return {k: _attr_entry(obj.attrs[k]) for k in sorted(obj.attrs.keys())}

    def walk(group, prefix: str) -> None:
        for name in sorted(group.keys()):
            link = group.get(name, getlink=True)
            path_ = f"{prefix}{name}"
            if isinstance(link, h5py.SoftLink | h5py.ExternalLink):
                groups[path_] = {"link": type(link).__name__, "target": str(link.path)}
                continue
            obj = group[name]
            key = (obj.file.filename, h5py.h5o.get_info(obj.id).addr)
            same = first_path.setdefault(key, path_)
            if isinstance(obj, h5py.Group):
                groups[path_] = {"attrs": attrs(obj), "same_as": same}
                if same == path_:
                    walk(obj, path_ + "/")
            else:
                a = obj[()]
                a = np.asarray(a)
                datasets[path_] = {
                    "shape": list(obj.shape),
                    "dtype": str(obj.dtype),
                    "sha256": _sha256(_array_bytes(a)),
                    "attrs": attrs(obj),
                    "same_as": same,
                    "layout": {"chunks": list(obj.chunks) if obj.chunks else None,
                               "maxshape": [m if m is not None else -1
                                            for m in (obj.maxshape or ())],
                               "compression": obj.compression,
                               "shuffle": bool(obj.shuffle)},
                }

    with h5py.File(path, "r") as f:
        groups["/"] = {"attrs": attrs(f), "same_as": "/"}
        walk(f, "")
    return {"type": "hdf5", "groups": groups, "datasets": datasets}


def npz_manifest(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: {"shape": list(z[k].shape), "dtype": str(z[k].dtype),
                      "sha256": _sha256(_array_bytes(z[k]))} for k in sorted(z.files)}
    return {"type": "npz", "datasets": arrays}


def png_manifest(path: Path) -> dict:
    from matplotlib.image import imread

    pixels = imread(path)
    return {"type": "png", "sha256": _sha256(path.read_bytes()),
            "datasets": {"pixels": {"shape": list(pixels.shape), "dtype": str(pixels.dtype),
                                    "sha256": _sha256(_array_bytes(pixels))}}}


def file_manifest(path: Path) -> dict:
    """The manifest of one output file (by suffix)."""
    if path.suffix == ".h5":
        return h5_manifest(path)
    if path.suffix == ".npz":
        return npz_manifest(path)
    if path.suffix == ".png":
        return png_manifest(path)
    return {"type": "bytes", "sha256": _sha256(path.read_bytes()), "datasets": {}}


def case_record(case: Case, where: Path, mode: str) -> dict:
    """Run a case in ``where`` and describe what it did and wrote (mode: record, check)."""
    results, seconds = run_case(case, where, INTERRUPT_AFTER_FRAMES[mode])
    record = {
        "what": case.what,
        "seconds": round(seconds, 1),
        "steps": [{"command": r.command, "rc": r.rc, "note": r.note,
                   "stdout": r.stdout.replace(str(where), "{dir}") if r.compare_stdout else None,
                   "warnings": r.warnings} for r in results],
        "files": {},
        "error": None,
    }
    failed = [r for r in results if r.rc != 0]
    if failed:
        r = failed[0]
        tail = r.stderr.strip().replace("\r", "\n").splitlines()[-5:]
        record["error"] = f"{r.command}: exit {r.rc} {r.note}; " + " | ".join(tail)
        return record
    for name in case.outputs:
        path = where / name
        if not path.exists():
            record["files"][name] = {"type": "missing"}
        else:
            record["files"][name] = file_manifest(path)
    return record


def _run_cases(cases, root: Path, jobs: int, mode: str) -> dict[str, dict]:
    """Run cases (``jobs`` at a time) under ``root/CASE``; print progress to stderr."""
    out: dict[str, dict] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(case_record, c, root / c.name, mode): c for c in cases}
        for fut in concurrent.futures.as_completed(futures):
            c = futures[fut]
            try:
                out[c.name] = fut.result()
            except Exception as exc:  # a timeout, a bug of this script
                out[c.name] = {"what": c.what, "seconds": None, "steps": [], "files": {},
                               "error": f"{type(exc).__name__}: {exc}"}
            rec = out[c.name]
            status = "error" if rec["error"] else "ok"
            print(f"{mode} {c.name}: {status} ({rec['seconds']} s)", file=sys.stderr,
                  flush=True)
    return {c.name: out[c.name] for c in cases}


def _git_head() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=SCRIPT.parent,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _meta() -> dict:
    return {"manifest_version": MANIFEST_VERSION, "git_head": _git_head(),
            "python": platform.python_version(), "machine": platform.machine(),
            "env": RUN_ENV, "date": time.strftime("%Y-%m-%d %H:%M:%S")}


# ------------------------------------------------------------ comparing
def _volatile(obj_path: str, name: str) -> bool:
    key = f"{obj_path.strip('/') or '/'}:{name}"
    return any(fnmatch.fnmatchcase(key, p) for p in VOLATILE_ATTRIBUTES)


def _strip_json(v):
    if isinstance(v, dict):
        return {k: _strip_json(x) for k, x in v.items() if k not in VOLATILE_JSON_KEYS}
    if isinstance(v, list):
        return [_strip_json(x) for x in v]
    return v


def _canon(v) -> str:
    return json.dumps(v, sort_keys=True)


def _compare_attrs(obj_path: str, old: dict, new: dict) -> list[str]:
    problems = []
    for name in sorted(set(old) | set(new)):
        where = f"{obj_path}:{name}"
        if name not in new:
            problems.append(f"missing attr {where}")
        elif name not in old:
            problems.append(f"extra attr {where}")
        elif _volatile(obj_path, name):
            continue
        elif "json" in old[name] and "json" in new[name]:
            a, b = _strip_json(old[name]["json"]), _strip_json(new[name]["json"])
            if _canon(a) != _canon(b):
                keys = ""
                if isinstance(a, dict) and isinstance(b, dict):
                    diff = sorted(k for k in set(a) | set(b) if _canon(a.get(k)) !=
                                  _canon(b.get(k)))
                    keys = " (" + "; ".join(
                        f"{k}: {_canon(a.get(k, '<absent>'))} -> {_canon(b.get(k, '<absent>'))}"
                        for k in diff) + ")"
                problems.append(f"attr {where} JSON differs{keys}")
        elif _canon({k: old[name][k] for k in ("dtype", "shape", "value")}) != _canon(
            {k: new[name][k] for k in ("dtype", "shape", "value")}
        ):
            problems.append(f"attr {where}: {old[name]['value']!r} -> {new[name]['value']!r}")
    return problems


def _load_dataset(path: Path, kind: str, name: str) -> np.ndarray:
    if kind == "hdf5":
        import h5py

        with h5py.File(path, "r") as f:
            return np.asarray(f[name][()])
    if kind == "npz":
        with np.load(path, allow_pickle=False) as z:
            return z[name]
    from matplotlib.image import imread

    return imread(path)


def _max_abs_diff(a: np.ndarray, b: np.ndarray) -> float | None:
    """Largest |a - b| (NaN where both are NaN counts as equal); None if not numeric."""
    if a.dtype.kind not in "biufc" or b.dtype.kind not in "biufc" or a.shape != b.shape:
        return None
    if a.size == 0:
        return 0.0
    x, y = a.astype(np.complex128 if "c" in a.dtype.kind + b.dtype.kind else np.float64), \
        b.astype(np.complex128 if "c" in a.dtype.kind + b.dtype.kind else np.float64)
    d = np.abs(x - y)
    both_nan = np.isnan(x) & np.isnan(y)
    d[both_nan] = 0.0
    d[np.isnan(d)] = np.inf
    return float(d.max())


@dataclass
class FileDiff:
    """Differences found in one output file."""

    problems: list[str] = field(default_factory=list)
    diffs: dict[str, float | None] = field(default_factory=dict)  # dataset -> max |diff|
    notes: list[str] = field(default_factory=list)


def compare_file(name: str, old: dict, new: dict, old_path: Path, new_path: Path) -> FileDiff:
    """Compare the manifests of one output file (and the data where bytes differ)."""
    out = FileDiff()
    if old["type"] != new["type"]:
        out.problems.append(f"{name}: {old['type']} -> {new['type']}")
        return out
    od, nd = old.get("datasets", {}), new.get("datasets", {})
    missing = sorted(set(od) - set(nd))
    extra = sorted(set(nd) - set(od))
    if missing:
        out.problems.append(f"missing datasets {', '.join(missing)}")
    if extra:
        out.problems.append(f"extra datasets {', '.join(extra)}")
    for ds in sorted(set(od) & set(nd)):
        _compare_dataset(out, ds, od[ds], nd[ds], old["type"], new["type"], old_path,
                         new_path)
    if old["type"] == "hdf5":
        _compare_groups(out, old["groups"], new["groups"])
    if old["type"] == "png" and old["sha256"] != new["sha256"] and not out.diffs:
        out.notes.append(f"{name}: PNG bytes differ, pixels identical")
    return out


def _compare_dataset(out: FileDiff, ds: str, a: dict, b: dict, old_type: str, new_type: str,
                     old_path: Path, new_path: Path) -> None:
    """Add to ``out`` how dataset ``ds`` changed (manifest entries ``a`` -> ``b``)."""
    if a["shape"] != b["shape"] or a["dtype"] != b["dtype"]:
        out.problems.append(f"{ds}: {a['dtype']}{tuple(a['shape'])} -> "
                            f"{b['dtype']}{tuple(b['shape'])}")
        return
    if a["sha256"] != b["sha256"]:
        try:
            diff = _max_abs_diff(_load_dataset(old_path, old_type, ds),
                                 _load_dataset(new_path, new_type, ds))
        except Exception as exc:  # the recorded copy is gone
            out.problems.append(f"{ds}: bytes differ ({type(exc).__name__})")
            return
        out.diffs[ds] = diff
    if a.get("same_as") != b.get("same_as"):
        out.problems.append(f"{ds}: hard link to {a.get('same_as')} -> {b.get('same_as')}")
    if "attrs" in a:
        out.problems += _compare_attrs(ds, a["attrs"], b["attrs"])
    if a.get("layout") != b.get("layout"):
        out.notes.append(f"{ds} layout {a.get('layout')} -> {b.get('layout')}")


def _compare_groups(out: FileDiff, og: dict, ng: dict) -> None:
    """Add to ``out`` the HDF5 groups missing, extra, or changed (links, attributes)."""
    gm, ge = sorted(set(og) - set(ng)), sorted(set(ng) - set(og))
    if gm:
        out.problems.append(f"missing groups {', '.join(gm)}")
    if ge:
        out.problems.append(f"extra groups {', '.join(ge)}")
    for g in sorted(set(og) & set(ng)):
        a, b = og[g], ng[g]
        if a.get("same_as") != b.get("same_as") or a.get("link") != b.get("link") or \
                a.get("target") != b.get("target"):
            out.problems.append(f"group {g}: link {a} -> {b}")
        elif "attrs" in a:
            out.problems += _compare_attrs(g, a["attrs"], b["attrs"])


def compare_case(name: str, old: dict, new: dict, old_dir: Path, new_dir: Path
                 ) -> tuple[str, list[str], list[str]]:
    """``(status, details, notes)`` of one case: ``OK``, ``DIFF`` or ``ERROR``."""
    if new["error"]:
        return "ERROR", [new["error"]], []
    if old["error"]:
        return "ERROR", [f"the recording failed: {old['error']}"], []
    details, notes = [], []
    if len(old["steps"]) != len(new["steps"]):
        details.append(f"{len(old['steps'])} steps -> {len(new['steps'])}")
    for i, (a, b) in enumerate(zip(old["steps"], new["steps"], strict=False)):
        if a["rc"] != b["rc"]:
            details.append(f"step {i + 1} exit {a['rc']} -> {b['rc']}")
        if a["stdout"] is not None and a["stdout"] != b["stdout"]:
            la, lb = (a["stdout"] or "").splitlines(), (b["stdout"] or "").splitlines()
            k = next((j for j, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y),
                     min(len(la), len(lb)))
            details.append(f"step {i + 1} stdout differs at line {k + 1}: "
                           f"{la[k] if k < len(la) else '<end>'!r} -> "
                           f"{lb[k] if k < len(lb) else '<end>'!r}")
        if a["warnings"] != b["warnings"]:
            details.append(f"step {i + 1} warnings {a['warnings']} -> {b['warnings']}")
        if b.get("note"):
            notes.append(b["note"] + (f" (recorded: {a['note']})" if a.get("note") else ""))
    for fname in sorted(set(old["files"]) | set(new["files"])):
        if fname not in new["files"] or new["files"][fname]["type"] == "missing":
            details.append(f"{fname} not written")
            continue
        if fname not in old["files"]:
            details.append(f"{fname} extra")
            continue
        fd = compare_file(fname, old["files"][fname], new["files"][fname],
                          old_dir / fname, new_dir / fname)
        prefix = f"{fname}: " if len(old["files"]) > 1 else ""
        details += [prefix + p for p in fd.problems]
        for ds, d in fd.diffs.items():
            details.append(f"{prefix}{ds} max|diff| " + ("(not numeric)" if d is None
                                                        else f"{d:.3g}"))
        notes += [prefix + n for n in fd.notes]
    return ("DIFF" if details else "OK"), details, notes


def print_table(rows: list[tuple[str, str, list[str]]]) -> None:
    """``case | status | details`` (one detail per line)."""
    w = max([len("case"), *(len(r[0]) for r in rows)])
    print(f"{'case':<{w}}  {'status':<6}  max abs diff / differing datasets")
    print(f"{'-' * w}  {'-' * 6}  {'-' * 40}")
    for name, status, details in rows:
        lines = details or ["identical"]
        print(f"{name:<{w}}  {status:<6}  {lines[0]}")
        for line in lines[1:]:
            print(f"{'':<{w}}  {'':<6}  {line}")


# ------------------------------------------------------------ commands
def _select(names: list[str] | None) -> tuple[Case, ...]:
    if not names:
        return CASES
    known = {c.name: c for c in CASES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown case(s) {', '.join(unknown)}; see: list")
    return tuple(known[n] for n in names)


def record(directory: Path, jobs: int, overwrite: bool, names: list[str] | None) -> int:
    """Run the cases into ``directory``: manifest.json and files/CASE/..."""
    if directory.exists() and any(directory.iterdir()):
        if not overwrite:
            print(f"{directory} exists and is not empty (use --overwrite)", file=sys.stderr)
            return 2
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    cases = _select(names)
    with tempfile.TemporaryDirectory(prefix="reference_runs_") as tmp:
        records = _run_cases(cases, Path(tmp), jobs, "record")
        for case in cases:
            for fname in records[case.name]["files"]:
                src = Path(tmp) / case.name / fname
                if src.exists():
                    dst = directory / "files" / case.name / fname
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, dst)
    manifest = {"meta": {**_meta(), "seconds": round(time.monotonic() - start, 1)},
                "cases": records}
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    errors = [n for n, r in records.items() if r["error"]]
    for n in errors:
        print(f"{n}: {records[n]['error']}", file=sys.stderr)
    print(f"recorded {len(records)} cases into {directory} in "
          f"{manifest['meta']['seconds']} s" + (f"; {len(errors)} failed" if errors else ""))
    return 1 if errors else 0


def check(directory: Path, jobs: int, keep: Path | None, names: list[str] | None) -> int:
    """Rerun the recorded cases and compare; 0 when every case matches."""
    manifest = json.loads((directory / "manifest.json").read_text())
    if manifest["meta"]["manifest_version"] != MANIFEST_VERSION:
        print("manifest of another version of this script", file=sys.stderr)
        return 2
    cases = [c for c in _select(names) if c.name in manifest["cases"]]
    absent = sorted(set(manifest["cases"]) - {c.name for c in CASES})
    start = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="reference_check_") if keep is None else None
    root = Path(tmp) if keep is None else keep
    if keep is not None:
        if keep.exists():
            shutil.rmtree(keep)
        keep.mkdir(parents=True)
    try:
        records = _run_cases(cases, root, jobs, "check")
        rows, notes = [], []
        for c in cases:
            status, details, n = compare_case(c.name, manifest["cases"][c.name],
                                              records[c.name], directory / "files" / c.name,
                                              root / c.name)
            rows.append((c.name, status, details))
            notes += [f"{c.name}: {x}" for x in n]
        rows += [(n, "ERROR", ["recorded, but no such case in this script"]) for n in absent]
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    print_table(rows)
    for n in notes:
        print(f"note: {n}")
    bad = [r for r in rows if r[1] != "OK"]
    print(f"\n{len(rows) - len(bad)}/{len(rows)} cases identical to {directory} "
          f"(recorded at {manifest['meta'].get('git_head')}) in "
          f"{time.monotonic() - start:.1f} s")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    """Command line: ``record DIR``, ``check DIR``, ``list``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_rec = sub.add_parser("record", help="run the cases and record them into DIR")
    p_chk = sub.add_parser("check", help="rerun the cases and compare with DIR")
    for p in (p_rec, p_chk):
        p.add_argument("directory", type=Path)
        p.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
        p.add_argument("--case", action="append", help="only this case (repeatable)")
    p_rec.add_argument("--overwrite", action="store_true", help="replace a non-empty DIR")
    p_chk.add_argument("--keep", type=Path, help="write the rerun outputs here (replaced)")
    sub.add_parser("list", help="print the cases")
    p_circle = sub.add_parser("_circle", help=argparse.SUPPRESS)
    p_circle.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.directory, args.jobs, args.overwrite, args.case)
    if args.command == "check":
        return check(args.directory, args.jobs, args.keep, args.case)
    if args.command == "_circle":
        circle_runs(args.out)
        return 0
    for c in CASES:
        print(f"{c.name:<22} {c.what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
