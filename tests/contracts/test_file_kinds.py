"""The crash-safety contract every file kind keeps, written once, run over ``FILE_KINDS``.

Each registered kind (:data:`particles.io.FILE_KINDS`) streams its own
example (:meth:`FileKind.example`) through the one session driver
(:func:`particles.runs.session.stream`, generic rules:
``contract_rules.py``), in a process of its own (``stream_driver.py``), and
must survive, for real:

* SIGKILL at any moment: the file left is readable, incomplete, and
  ``resume`` finishes it into the same data as an uninterrupted session (a
  kind that cannot resume: its file never takes the target's name half
  written, and the next session removes what was left);
* a full disk (a file size limit): one :class:`~particles.errors.OutputWriteError`
  naming the free space the whole file still needs, a readable file never
  marked complete, and ``resume`` finishes it once there is room;
* a kill before the first promotion: the temporary file is stale, the next
  session removes it with a :class:`~particles.errors.StalePartialWarning`,
  and ``resume`` adopts it instead.

A kind registered anywhere, a test included, gets the suite by being
registered (``test_a_kind_registered_in_a_test_gets_the_contract``).
"""

from __future__ import annotations

import inspect
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from contract_rules import session_of

from particles.errors import StalePartialWarning
from particles.io import FILE_KINDS
from particles.io.kinds import FileKind

HERE = Path(__file__).parent
DRIVER = HERE / "stream_driver.py"

pytestmark = pytest.mark.processes


def pytest_generate_tests(metafunc):
    if "kind" in metafunc.fixturenames:
        kinds = list(FILE_KINDS.values())
        metafunc.parametrize("kind", kinds, ids=[k.name for k in kinds], scope="module")


_RUNNING: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_driver_left():
    """A failed test does not leave its driver process running."""
    yield
    while _RUNNING:
        proc = _RUNNING.pop()
        if proc.poll() is None:
            kill(proc)
        proc.communicate()


def driver(kind: FileKind, path: Path, *args: str) -> subprocess.Popen:
    """``stream_driver.py`` streaming ``kind``'s example into ``path``."""
    module = type(kind).__module__
    extra = [] if module.startswith("particles.") else ["--module", module]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.Popen([sys.executable, str(DRIVER), kind.name, str(path), *extra, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    _RUNNING.append(proc)
    return proc


def outcome(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "Traceback" not in err, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def holder(path: Path) -> Path | None:
    """The file holding the session's items: the target, or its temporary file."""
    if path.exists():
        return path
    partials = sorted(path.parent.glob(f".{path.name}.*.partial"))
    return partials[0] if partials else None


def wait_for_items(kind: FileKind, path: Path, count: int, proc: subprocess.Popen, *,
                   promoted: bool = False) -> Path:
    """Poll until the file of the running session (``promoted``: the target) holds
    ``count`` items."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the session ended early: {proc.communicate()}")
        where = path if promoted and path.exists() else None if promoted else holder(path)
        if where is not None:
            try:
                if kind.summarize(where).items >= count:
                    return where
            except kind.error:
                pass  # created, header not flushed yet
        time.sleep(0.02)
    raise AssertionError(f"the session never held {count} items")


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)  # reaps it and closes its pipes


def datasets(path: Path) -> dict[str, np.ndarray]:
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[()])
                     if isinstance(obj, h5py.Dataset) else None)
    return out


def assert_same_data(a: Path, b: Path) -> None:
    x, y = datasets(a), datasets(b)
    assert sorted(x) == sorted(y)
    differ = [k for k in x if not np.array_equal(x[k], y[k], equal_nan=x[k].dtype.kind == "f")]
    assert not differ, f"datasets differ: {differ}"


def partials(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f".{path.name}.*.partial"))


@pytest.fixture(scope="module")
def reference(kind, tmp_path_factory) -> Path:
    """The kind's example streamed without a stop, in this process."""
    path = tmp_path_factory.mktemp(f"reference-{kind.name}") / "ref.h5"
    summary = session_of(kind)(path)
    assert summary.complete and summary.items == kind.expected(kind.example().spec)
    return path


def test_an_uninterrupted_session_is_complete_and_read_back(kind, reference):
    assert kind.load(reference) is not None
    summary = kind.summarize(reference)
    assert summary.complete and summary.items == summary.items_expected
    with h5py.File(reference, "r") as f:
        assert kind.can_open(f)
    assert not partials(reference)


def test_sigkill_leaves_a_readable_file_that_resume_finishes(kind, reference, tmp_path):
    path = tmp_path / "killed.h5"
    proc = driver(kind, path, "--delay", "0.03")
    wait_for_items(kind, path, 3, proc, promoted=kind.resumable)
    kill(proc)
    kept = kind.summarize(holder(path))
    assert not kept.complete and kept.items >= 3
    if kind.resumable:
        session_of(kind, resume=True)(path)
        assert kind.summarize(path).complete
        assert_same_data(path, reference)
    else:  # never under the target's name half written; the next session cleans up
        assert not path.exists()
        with pytest.warns(StalePartialWarning):
            session_of(kind)(path)
        assert_same_data(path, reference)
    assert not partials(path)


def test_a_full_disk_stops_in_one_error_and_resume_finishes(kind, reference, tmp_path):
    path = tmp_path / "full.h5"
    size = reference.stat().st_size
    result = outcome(driver(kind, path, "--limit", str(size // 2)))
    assert result["outcome"] == "write_error", result
    message = result["message"]
    assert "\n" not in message and str(path) in message and "free space is needed" in message
    kept = holder(path)
    assert not partials(path) or not kind.resumable
    if result["kept"] is None:  # nothing kept: the target was not made
        assert kept is None
        return
    summary = kind.summarize(Path(result["kept"]))
    assert not summary.complete and summary.items == result["items"]
    # what the whole file still needs, not only the write that failed
    assert result["needed"] >= 0.5 * (size - Path(result["kept"]).stat().st_size)
    if kind.resumable:
        session_of(kind, resume=True)(path)
        assert kind.summarize(path).complete
        assert_same_data(path, reference)


def test_a_kill_before_the_first_promotion_leaves_a_stale_file(kind, reference, tmp_path):
    path = tmp_path / "early.h5"
    proc = driver(kind, path, "--pause-after", "1")
    wait_for_items(kind, path, 1, proc)
    kill(proc)
    assert not path.exists() and len(partials(path)) == 1
    if kind.resumable:  # resume adopts it ...
        session_of(kind, resume=True)(path)
        assert_same_data(path, reference)
        assert not partials(path)
        path = tmp_path / "again.h5"
        proc = driver(kind, path, "--pause-after", "1")
        wait_for_items(kind, path, 1, proc)
        kill(proc)
    with pytest.warns(StalePartialWarning, match="left by a run that did not finish"):
        session_of(kind)(path)  # ... and a new session removes it
    assert not partials(path) and kind.summarize(path).complete


def test_a_kind_registered_in_a_test_gets_the_contract(tmp_path):
    if "toy" in FILE_KINDS:  # this is the run the check below starts
        pytest.skip("the toy kind is registered: this run is the check itself")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(Path(__file__)), "-n", "0", "-p", "toy_kind",
         "-k", "toy", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, cwd=HERE.parent.parent, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    contract = [f for name, f in globals().items() if name.startswith("test_")
                and "kind" in inspect.signature(f).parameters]
    assert f"{len(contract)} passed" in proc.stdout.splitlines()[-1], proc.stdout[-2000:]


def _damages(path: Path):
    """Every way the contract damages a file: ``(name, damage(file))``.

    Each dataset deleted, cut to half its frames, or given a NaN; each string
    attribute (JSON) garbled; the whole file truncated.
    """
    with h5py.File(path, "r") as f:
        datasets = []
        f.visititems(lambda name, obj: datasets.append(name)
                     if isinstance(obj, h5py.Dataset) else None)
        attrs = [(name, key) for name in ["", *datasets] for key, value in
                 (f[name] if name else f).attrs.items() if isinstance(value, str)]
        attrs += [(f"parameters/{name}", key) for name in f["parameters"].keys()
                  if isinstance(f["parameters"][name], h5py.Group)
                  for key, value in f["parameters"][name].attrs.items()
                  if isinstance(value, str)]
        attrs += [("parameters", key) for key, value in f["parameters"].attrs.items()
                  if isinstance(value, str)]
    for name in datasets:
        yield f"delete {name}", lambda g, n=name: g.__delitem__(n)

        def halve(g, n=name):
            ds = g[n]
            if ds.maxshape and ds.maxshape[0] is None and ds.shape[0] > 1:
                ds.resize(ds.shape[0] // 2, axis=0)

        yield f"halve {name}", halve

        def poison(g, n=name):
            ds = g[n]
            if ds.dtype.kind == "f" and ds.size:
                ds[(0,) * ds.ndim] = np.nan

        yield f"NaN in {name}", poison
    for name, key in attrs:
        where = name or "/"
        yield f"garble {where}:{key}", lambda g, n=name, k=key: (
            g[n] if n else g).attrs.__setitem__(k, "{garbled")


def test_a_damaged_file_is_refused_in_one_line_naming_it(kind, reference, tmp_path):
    """Every reader of a kind raises the kind's own error, in one line naming the
    file, for every damage (or reads a file the damage left readable): never a
    KeyError, a JSONDecodeError or a traceback (issue 25 item 9)."""
    import shutil

    damaged = tmp_path / "damaged.h5"
    for name, damage in _damages(reference):
        shutil.copy(reference, damaged)
        with h5py.File(damaged, "r+") as f:
            damage(f)
        for read in (kind.summarize, kind.load):
            try:
                read(damaged)
            except kind.error as exc:
                text = str(exc)
                assert "\n" not in text and str(damaged) in text, (name, read, text)
    raw = reference.read_bytes()
    damaged.write_bytes(raw[: len(raw) // 3])
    for read in (kind.summarize, kind.load):
        with pytest.raises(kind.error, match="truncated or damaged"):
            read(damaged)
