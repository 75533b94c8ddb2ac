"""The disk cache of compiled kernels: the same bits however a kernel was obtained.

Real processes, each with its own ``NUMBA_CACHE_DIR``: ``tests/core/cache_runs.py``
runs every model, integrator (noise included) and layout (serial, batch, rows,
BLAS) in one process and writes all results to an npz; it runs with an empty
cache, with the cache it filled, with one thread instead of two (the runs
whose layout a thread changes, with an empty cache of their own), and with a
cache some of whose entries are corrupted, and every result must be
bit-identical.  The command line and resumed runs are compared with the same
results.

Only two processes compile from an empty cache (a minute or two each on one
core): the cold run and the one-thread run, which compiles at Numba's default
optimisation level (a production run's) where the others compile at the
suite's level 1.  The others start from a copy of the cold run's cache.

The two compile from scratch once per version of the sources: the cold run's
results and both filled caches are kept in pytest's cache
(``.pytest_cache/d/cache-runs/KEY``), keyed by the package's and this
module's sources, Python, NumPy, Numba and llvmlite versions and the CPU.
A later session with the same key starts from copies of them: its warm,
corrupted and CLI processes are compared with the kept cold results, and the
one-thread process runs what it compiled at level 3 before.  A clean clone,
a changed source or ``pytest --cache-clear`` compiles from scratch again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.processes

DRIVER = Path(__file__).with_name("cache_runs.py")
ROOT = Path(__file__).resolve().parents[2]

#: the runs whose layout one thread changes: a batch of systems (fixed and
#: adaptive steps, noise) and one system's rows in parallel; with one thread
#: every one of them runs systems in turn, rows serially
ONE_THREAD = ("usa_rk4_batch", "sa_dopri5_rows", "usa_heun_noise_batch")

#: the start of a ``python -c`` program that counts its Numba compiles in ``n``
COUNT_COMPILES = ("from numba.core import event\n"
                  "n = []\n"
                  "class L(event.Listener):\n"
                  "    def on_start(self, ev): n.append(1)\n"
                  "    def on_end(self, ev): pass\n"
                  "event.register('numba:compile', L())\n")


def _env(cache: Path, threads: int = 2, opt: str = "1", **extra: str) -> dict[str, str]:
    """A process's environment: its cache, threads and optimisation level (the
    suite's, 1, unless told; see tests/conftest.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(NUMBA_CACHE_DIR=str(cache), NUMBA_NUM_THREADS=str(threads), NUMBA_OPT=opt,
               PYTHONWARNINGS="default", **extra)
    return env


def _drive(out: Path, env: dict[str, str], runs: tuple[str, ...] = ()
           ) -> tuple[dict[str, np.ndarray], str]:
    """The driver's results (every run, or ``runs``) and its stderr."""
    proc = subprocess.run([sys.executable, str(DRIVER), str(out), *([",".join(runs)] if runs
                                                                    else [])],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(out) as data:
        return {k: data[k] for k in data.files}, proc.stderr


def _assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray], what: str) -> None:
    """Every number of ``b`` equals ``a``'s bit for bit, and ``b`` holds every
    number ``a`` has of the runs ``b`` made."""
    runs = {k.split("/")[0] for k in b if k != "compiles"}

    def numbers(d):
        return sorted(k for k in d if k != "compiles" and "/layout" not in k
                      and k.split("/")[0] in runs)

    keys = numbers(a)
    assert keys and keys == numbers(b)
    differ = [k for k in keys if not np.array_equal(a[k], b[k], equal_nan=True)]
    assert not differ, f"{what}: not bit-identical: {differ}"


def _key() -> str:
    """What the cold and one-thread processes' results and caches depend on."""
    import llvmlite
    import llvmlite.binding as ll
    import numba

    h = hashlib.sha256()
    for path in sorted([*(ROOT / "particles").rglob("*.py"), DRIVER, Path(__file__)]):
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    h.update(repr((sys.version, np.__version__, numba.__version__, llvmlite.__version__,
                   ll.get_host_cpu_name(), ll.get_host_cpu_features().flatten())).encode())
    return h.hexdigest()[:20]


@pytest.fixture(scope="module")
def kept(request) -> Path | None:
    """Where this version's cold run is kept (None without pytest's cache); the
    runs of other versions go."""
    cache = getattr(request.config, "cache", None)  # None: -p no:cacheprovider
    if cache is None:
        return None
    root, key = cache.mkdir("cache-runs"), _key()
    for other in root.iterdir():
        if other.name != key:
            shutil.rmtree(other, ignore_errors=True)
    return root / key


def _keep(kept: Path | None, name: str, source: Path) -> None:
    """Copy ``source`` (a file or a directory) to ``kept / name``, atomically."""
    if kept is None or (kept / name).exists():
        return
    kept.mkdir(exist_ok=True)
    part = kept / f".{name}.{os.getpid()}"
    (shutil.copytree if source.is_dir() else shutil.copyfile)(source, part)
    os.replace(part, kept / name)


@pytest.fixture(scope="module")
def cold(tmp_path_factory, kept):
    """One process with an empty cache, or this version's kept one: (results, a
    copy of the cache it filled)."""
    tmp = tmp_path_factory.mktemp("cache")
    cache = tmp / "numba"
    if kept is not None and (kept / "cold.npz").exists() and (kept / "numba").is_dir():
        shutil.copytree(kept / "numba", cache)
        with np.load(kept / "cold.npz") as data:
            return {k: data[k] for k in data.files}, cache
    results, _ = _drive(tmp / "cold.npz", _env(cache))
    _keep(kept, "numba", cache)  # before any test adds entries
    _keep(kept, "cold.npz", tmp / "cold.npz")
    return results, cache


def _entries(cache: Path) -> list[Path]:
    return sorted(cache.rglob("*.nbc"))


def _index(entry: Path) -> Path:
    """The index file of a data file (``f-12.py311.3.nbc`` -> ``f-12.py311.nbi``)."""
    return entry.with_suffix("").with_suffix(".nbi")


def test_cold_run_covers_every_layout_and_fills_the_cache(cold):
    results, cache = cold
    layouts = {str(v) for k, v in results.items() if k.endswith("/layout")}
    assert layouts == {"serial", "batch", "rows"}
    assert "blas" in str(results["sa_geodesic_blas/layout_field"]).split("_")
    assert results["compiles"] > 0
    assert len(_entries(cache)) >= 9  # one runner per run at least


def test_warm_cache_compiles_nothing_and_gives_the_same_bits(cold, tmp_path):
    results, cache = cold
    warm, err = _drive(tmp_path / "warm.npz", _env(cache))
    assert int(warm["compiles"]) == 0, "an entry point is not cached"
    _assert_same(results, warm, "warm cache")
    assert "Warning" not in err, err


def test_one_thread_and_its_own_cache_give_the_same_bits(cold, kept, tmp_path):
    # one thread: the rows layout becomes serial; a cache of its own, empty (or
    # what this process compiled in an earlier session of these sources)
    results, _ = cold
    # and compiled at Numba's default optimisation level, a production run's,
    # where every other process of the suite compiles at level 1: the same bits
    own = tmp_path / "numba1"
    earlier = kept is not None and (kept / "numba1").is_dir()
    if earlier:
        shutil.copytree(kept / "numba1", own)
    one, _ = _drive(tmp_path / "one.npz", _env(own, threads=1, opt="3"), ONE_THREAD)
    assert (int(one["compiles"]) == 0) == earlier
    assert sorted({k.split("/")[0] for k in one if k != "compiles"}) == sorted(ONE_THREAD)
    assert str(one["sa_dopri5_rows/layout"]) == "serial"
    assert str(one["usa_rk4_batch/layout"]) == "serial"  # systems in turn, no parallel region
    _assert_same(results, one, "1 thread, its own cache")
    _keep(kept, "numba1", own)


def test_resumed_runs_end_where_uninterrupted_ones_do(cold):
    results, _ = cold
    for name in ("sa_euler_serial", "usa_heun_noise_batch"):
        assert np.array_equal(results[f"{name}/resumed_final"], results[f"{name}/positions"][-1])


def _cli(args: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "particles_cli", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_cli_and_cli_resume_give_the_api_bits(cold, tmp_path):
    import h5py

    results, cache = cold
    env = _env(cache)
    common = ["--n", "12", "--d", "3", "--beta", "2", "--model", "sa", "--integrator", "euler",
              "--dt", "0.05", "--save-every", "5", "--seed", "7"]
    full, half = tmp_path / "full.h5", tmp_path / "half.h5"
    _cli(["simulate", *common, "--T", "1", "--out", str(full)], env)
    _cli(["simulate", *common, "--T", "0.5", "--out", str(half)], env)
    _cli(["simulate", *common, "--T", "1", "--out", str(half), "--resume"], env)
    expected = results["sa_euler_serial/positions"]
    for path in (full, half):
        with h5py.File(path, "r") as f:
            value = f["particles/tokens/position/value"][()]
        assert np.array_equal(value, expected), path.name


def test_corrupted_cache_entries_recompile_to_the_same_bits(cold, tmp_path):
    results, cache = cold
    broken = tmp_path / "numba"
    shutil.copytree(cache, broken)
    # entries of three runners (which the runs load: a drift or step inside one
    # is linked into it), the smallest (the quickest to compile again): two data
    # files truncated, and one index
    chosen: list[Path] = []
    runners = [p for p in _entries(broken) if p.name.startswith("driver._run_")]
    for path in sorted(runners, key=lambda p: (p.stat().st_size, p.name)):
        if all(_index(path) != _index(other) for other in chosen):
            chosen.append(path)
    *truncated, indexed = chosen[:3]
    for path in truncated:
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    index = _index(indexed)
    index.write_bytes(index.read_bytes()[:10])
    again, err = _drive(tmp_path / "again.npz", _env(broken))
    _assert_same(results, again, "corrupted cache")
    assert int(again["compiles"]) > 0
    warnings = [line for line in err.splitlines() if "CacheWarning" in line]
    assert len(warnings) <= 1, err
    # the entries were rewritten: the next process compiles nothing
    third, _ = _drive(tmp_path / "third.npz", _env(broken))
    assert int(third["compiles"]) == 0
    _assert_same(results, third, "repaired cache")


def test_unwritable_install_falls_back_to_the_per_user_cache(tmp_path):
    # a copy of the package whose __pycache__ directories cannot be made (a file
    # of that name stands in each package directory: unwritable even for root)
    site = tmp_path / "site"
    shutil.copytree(ROOT / "particles", site / "particles",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for pkg in (site / "particles").rglob("__init__.py"):
        (pkg.parent / "__pycache__").write_text("not a directory")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1",
               XDG_CACHE_HOME=str(tmp_path / "xdg"))
    code = ("import numpy as np, particles._numba as nb\n"
            "from particles.analysis.components import component_labels\n"
            f"assert nb.__file__.startswith({str(site)!r}), nb.__file__\n"
            "print(nb.cache_dir()[1])\n"
            "component_labels(np.eye(3)[None])\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["per-user"]
    assert list((tmp_path / "xdg" / "particles" / "numba").rglob("*.nbc"))


@contextmanager
def read_only(tree: Path):
    """Make every directory of ``tree`` refuse new files, for root too (root
    writes through permission bits: the directories are made immutable)."""
    dirs = [tree, *(p for p in tree.rglob("*") if p.is_dir())]
    if os.geteuid() != 0:
        for d in dirs:
            d.chmod(0o555)
        try:
            yield
        finally:
            for d in dirs:
                d.chmod(0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", *map(str, dirs)], capture_output=True).returncode != 0:
        pytest.skip("no way to make a directory read-only for root here (chattr)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, dirs)], capture_output=True)


def test_a_read_only_cache_serves_loads_and_new_entries_go_per_user(cold, tmp_path):
    """Issue 25 item 12: with a filled read-only NUMBA_CACHE_DIR (a shared software
    tree) every kernel was compiled again and written into the installation's
    __pycache__, silently."""
    _, cache = cold
    shared = tmp_path / "shared"
    shutil.copytree(cache, shared)
    env = {**_env(shared), "XDG_CACHE_HOME": str(tmp_path / "home")}
    code = (COUNT_COMPILES + "import particles, particles._numba as nb\n"
            "particles.simulate(12, 3, 2.0, model='sa', integrator='euler', dt=0.05, T=1.0,\n"
            "                   save_every=5, seed=0)\n"
            f"print(len(n), any(k.startswith({str(shared)!r}) for k in nb.LOADS),\n"
            "      nb.cache_dir()[1], sum(nb.SAVES.values()))\n")
    with read_only(shared):
        proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=600)
        info = subprocess.run([sys.executable, "-m", "particles_cli", "info", "--cache"],
                              env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # nothing compiled, so nothing written: not into the installation's tree
    # (which other test processes may fill meanwhile), nor anywhere else
    assert proc.stdout.split() == ["0", "True", "per-user", "0"], proc.stdout
    assert info.returncode == 0, info.stderr
    assert f"loads also   {shared}" in info.stdout and "(per-user)" in info.stdout


def _particles(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "particles_cli", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=1200)


def _entry_count(info: subprocess.CompletedProcess) -> int:
    assert info.returncode == 0, info.stderr
    return int(info.stdout.split("entries")[1].split()[0])


def test_info_of_an_empty_cache(tmp_path):
    cache = tmp_path / "numba"
    before = _particles(["info", "--cache"], _env(cache))
    assert before.returncode == 0, before.stderr
    assert f"{cache} (NUMBA_CACHE_DIR)" in before.stdout
    assert "entries      0 compiled" in before.stdout and "writable     yes" in before.stdout


def test_compile_fills_the_cache_and_info_reports_it(cold, tmp_path):
    # from the cold run's cache (an empty one would compile every analysis
    # kernel from scratch, a minute): compile adds what the analysis needs
    _, filled = cold
    cache = tmp_path / "numba"
    shutil.copytree(filled, cache)
    env = _env(cache)
    before = _entry_count(_particles(["info", "--cache"], env))
    assert before == len(_entries(cache)) > 0
    done = _particles(["compile", "--for", "analyze"], env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "tiny runs (analyze)" in done.stdout and "compiling: analyze" in done.stderr
    entries = _entry_count(_particles(["info", "--cache"], env))
    assert entries > before and entries == len(_entries(cache))
    # a later process runs what compile prepared without compiling anything
    code = (COUNT_COMPILES +
            "from particles.config import SimulationConfig\n"
            "from particles.runs.run import run_to_file\n"
            "from particles.analysis import analyze_file\n"
            "c = SimulationConfig(n=20, d=2, beta=3.0, dt=0.02, T=0.4, save_every=2, seed=3,\n"
            "                     integrator='rk4')\n"
            f"run_to_file(c, {str(tmp_path / 'r.h5')!r})\n"
            f"analyze_file({str(tmp_path / 'r.h5')!r})\n"
            "print('COMPILES', len(n))\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "COMPILES 0" in proc.stdout


def test_compile_refuses_an_unknown_target(tmp_path):
    proc = _particles(["compile", "--for", "everything"], _env(tmp_path / "numba"))
    assert proc.returncode == 2
    assert "Invalid value for '--for'" in proc.stderr and "Traceback" not in proc.stderr
