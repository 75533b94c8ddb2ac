"""Parameter sweeps (issue 14): grid specifications, tasks, seeds independent of the
chunking, the sweep file, stop and resume, load() and the CSV export, the CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from clitools import invoke, ok, usage_error

from particles.analysis.components import component_labels_reference
from particles.config import SimulationConfig
from particles.engine import run
from particles.errors import RunInterrupted, SweepError
from particles.observables import compute_observables
from particles.observables.pairs import close_pairs_reference, frame_statistics
from particles.sweep import (
    LocalBackend,
    SweepSpec,
    export_csv,
    load,
    make_backend,
    parse_value,
    plan_tasks,
    read_sweep_file,
    run_sweep,
)
from particles.sweep.backends import PROCESS_MIN_SECONDS, local_cores
from particles.sweep.run import fit_backend, sweep_estimate
from particles.sweep.tasks import system_positions

ROOT = Path(__file__).resolve().parents[2]

#: one compiled configuration for the whole module (n, d, integrator fixed).
BASE = dict(n=6, d=2, integrator="euler", dt=0.1, T=2.0, save_every=2)
SPEC = SweepSpec(base=BASE, axes=(("beta", (1.0, 5.0)),), runs=9, seed=11)
ARGS = ("--n 6 --d 2 --integrator euler --dt 0.1 --T 2 --save-every 2 --beta 1,5 "
        "--runs 9 --seed 11").split()


def contents(path: Path) -> dict[str, np.ndarray]:
    """Every dataset under /sweep and the sweep's attributes (but the file's
    creation and modification times), by name."""
    out: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as f:
        f["sweep"].visititems(lambda k, v: out.__setitem__(k, v[()])
                              if isinstance(v, h5py.Dataset) else None)
        out["attrs"] = np.array(json.dumps({k: str(v) for k, v in f["parameters"].attrs.items()
                                            if k not in ("created", "modified")}))
    return out


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        if a[k].dtype.kind in "fc":
            assert a[k].tobytes() == b[k].tobytes(), k
        else:
            assert np.array_equal(a[k], b[k]), k


def wait_for_systems(proc: subprocess.Popen, out: Path, count: int, timeout: float = 300) -> int:
    """Poll the sweep file ``out`` of a running sweep until ``count`` systems are
    done (or the process ended, or the timeout passed); the systems done."""
    done = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None and done < count:
        time.sleep(0.02)
        if out.exists():
            try:
                with h5py.File(out, "r", locking=False) as f:
                    done = int(f["sweep/done"][()].sum())
            except (OSError, KeyError):
                continue
    return done


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The sweep SPEC run in one task per grid point."""
    path = tmp_path_factory.mktemp("sweep") / "ref.h5"
    run_sweep(SPEC, path, chunk=SPEC.runs)
    return path


# ------------------------------------------------------------ specifications
def test_grid_specifications():
    assert parse_value("beta", "0.1:9:90") == tuple(np.linspace(0.1, 9, 90))
    assert parse_value("d", "2,3,128") == (2, 3, 128)
    assert parse_value("n", "8:32:4") == (8, 16, 24, 32)
    assert parse_value("model", "sa,usa") == ("sa", "usa")
    assert parse_value("init", "cap:0.1") == ("cap:0.1",)
    assert parse_value("save_times", "log:0.01:10:5") == ("log:0.01:10:5",)
    for name, text, fragment in [
        ("n", "8:9:3", "does not give whole numbers"),
        ("n", "2.5", "not an integer"),
        ("beta", "1:2", "expected VALUE, A,B,C or START:STOP:NUM"),
        ("beta", "1,,2", "empty item"),
        ("beta", "0:1:0", "NUM must be at least 1"),
        ("nope", "1", "unknown sweep parameter --nope"),
        ("batch", "4", "unknown sweep parameter --batch"),
    ]:
        with pytest.raises(SweepError, match=fragment):
            parse_value(name, text)


def test_spec_validates_every_grid_point():
    with pytest.raises(SweepError, match=r"^--kernel must be one of .* at --kernel 'nope'"):
        SweepSpec(base=BASE | {"beta": 1.0}, axes=(("kernel", ("edp", "nope")),))
    with pytest.raises(SweepError, match="same times"):
        SweepSpec(base={"n": 6, "d": 2, "beta": 1.0}, axes=(("T", (1.0, 2.0)),))
    with pytest.raises(SweepError, match="missing parameter"):
        SweepSpec(base={"n": 4, "d": 2})
    with pytest.raises(SweepError, match="both fixed and swept"):
        SweepSpec(base=BASE | {"beta": 1.0}, axes=(("beta", (1.0, 2.0)),))
    spec = SweepSpec(base=BASE, axes=(("beta", (1.0, 2.0)), ("model", ("sa", "usa"))),
                     seed=3)
    assert spec.shape == (2, 2) and spec.points == 4
    assert spec.point_values(1) == {"beta": 1.0, "model": "usa"}
    assert SweepSpec.from_json(spec.to_json()) == spec
    # a grid point's seed is a child of the root seed, the same in every spec
    assert spec.config(3).seed == SweepSpec(base=BASE, axes=spec.axes, seed=3).config(3).seed
    assert spec.config(0).seed != spec.config(1).seed


@pytest.mark.processes
def test_reading_a_grid_loads_no_compiler():
    from particles.analysis.components import DEFAULT_EPS
    from particles.analysis.ensemble import DEFAULT_LEVELS
    from particles.sweep import grid

    assert (grid.DEFAULT_EPS, grid.DEFAULT_LEVELS) == (DEFAULT_EPS, DEFAULT_LEVELS)
    code = ("import sys, particles_cli.sweep, particles.sweep\n"
            "print(sorted(m for m in ('numba', 'h5py', 'particles.analysis') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.strip()
    assert out == "[]"


def test_toml_file(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text('n = 6\nd = 2\nbeta = [1.0, 5.0]\nmodel = "sa,usa"\nruns = 4\n'
                    'delta = [0.1]\nsave_times = [0.5, 1.0]\nT = 1.0\n')
    values = read_sweep_file(path)
    assert values["beta"] == (1.0, 5.0) and values["model"] == ("sa", "usa")
    assert values["save_times"] == ((0.5, 1.0),) and values["runs"] == 4
    path.write_text("n = 6\nbogus = 1\n")
    with pytest.raises(SweepError, match="unknown key 'bogus'"):
        read_sweep_file(path)


def test_plan_covers_undone_systems_once():
    spec = SPEC.resolved()
    done = np.zeros((2, 9), dtype=bool)
    done[0, 2:5] = True
    tasks = plan_tasks(spec, done, 3)
    covered = np.zeros_like(done, dtype=int)
    for t in tasks:
        assert 0 < t.systems <= 3
        covered[t.point, t.start:t.stop] += 1
    assert np.array_equal(covered, (~done).astype(int))


def test_make_backend_is_local_without_a_scheduler(monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    backend = make_backend()
    assert isinstance(backend, LocalBackend) and backend.workers == 1
    assert list(backend.map_unordered(lambda x: x * x, [1, 2, 3])) == [(1, 1), (2, 4), (3, 9)]


def test_a_scheduler_that_cannot_be_used_is_one_line(tmp_path, monkeypatch):
    # a refused connection is retried until the timeout (a scheduler may be starting)
    with pytest.raises(ValueError, match=r"within 0\.5 s"):  # SweepError: no scheduler there
        make_backend(scheduler="tcp://127.0.0.1:9", timeout=0.5)
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:9")
    with pytest.raises(ValueError, match=r"within 0\.5 s"):
        make_backend(timeout=0.5)
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
    out = tmp_path / "s.h5"
    result = invoke("sweep", *ARGS, "--out", out, "--scheduler", "tcp://127.0.0.1:9",
                    "--scheduler-timeout", 0.5)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "within 0.5 s" in result.output
    assert not out.exists()
    # the default wait, as the help states it
    from particles.sweep.backends import DEFAULT_TIMEOUT

    assert f"(default {DEFAULT_TIMEOUT:g})" in " ".join(invoke("sweep", "--help").output.split())
    result = invoke("sweep", *ARGS, "--out", out, "--processes", 2, "--scheduler-timeout", 1)
    assert result.exit_code == 2 and "not local worker processes" in result.output
    result = invoke("sweep", *ARGS, "--out", out, "--scheduler-timeout", 0)
    assert result.exit_code == 2 and "timeout must be > 0 seconds" in result.output


# ------------------------------------------------------------ compiled statistics
def test_close_pairs_match_their_twins():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7, 3))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    x[0, 1] = x[0, 0]  # a coinciding pair
    x[1, 3:] = x[1, 2]  # a cluster
    deltas = np.array([0.5, 0.1, 1e-9])
    masses = np.ones(7)
    for beta in (0.0, 2.0):
        pairs, counts, energy = frame_statistics(x, deltas, 0.3, beta, masses)
        assert np.array_equal(pairs, close_pairs_reference(x, deltas))
        assert np.array_equal(counts, [component_labels_reference(s, 0.3).max() + 1 for s in x])
        np.testing.assert_allclose(energy, compute_observables(x, beta, masses)["energy"],
                                   rtol=1e-13)


# ------------------------------------------------------------ sweeps
def test_results_match_an_ensemble_run_of_the_same_systems(reference):
    """Per-system results are the statistics of the same systems run by the engine."""
    spec = SPEC.resolved()
    config = spec.config(1)
    x0 = system_positions(config, spec.seed, 1, 0, spec.runs)
    traj = run(config.replace(batch=spec.runs, init="array"), x0)
    with h5py.File(reference, "r") as f:
        counts = f["sweep/systems/cluster_count"][1]
        pairs = f["sweep/systems/pair_counts"][1]
        energy = f["sweep/systems/energy"][1]
    for s in range(spec.runs):
        for k in (0, len(traj.times) - 1):
            x = traj.positions[k, s]
            assert counts[s, k] == component_labels_reference(x, spec.eps).max() + 1
            assert np.array_equal(pairs[s, k], close_pairs_reference(x[None], spec.deltas)[0])
    np.testing.assert_allclose(energy, traj.observables["energy"].T, rtol=1e-6)


def test_positions_are_stored_only_when_asked(reference, tmp_path):
    spec = SPEC.replace(axes=(("beta", (5.0,)),), runs=3, positions=True)
    run_sweep(spec, tmp_path / "pos.h5", chunk=2)
    spec = spec.resolved()
    x0 = system_positions(spec.config(0), spec.seed, 0, 0, 3)
    traj = run(spec.config(0).replace(batch=3, init="array"), x0)
    with h5py.File(tmp_path / "pos.h5", "r") as f:
        stored = f["sweep/systems/positions"][0]
    assert stored.tobytes() == traj.positions.transpose(1, 0, 2, 3).tobytes()
    with h5py.File(reference, "r") as f:
        assert "positions" not in f["sweep/systems"]


@pytest.mark.parametrize("chunk", [1, 7])
def test_results_do_not_depend_on_the_chunk_size(reference, tmp_path, chunk):
    path = tmp_path / "chunked.h5"
    result = run_sweep(SPEC, path, chunk=chunk)
    assert result.tasks_run == 2 * -(-SPEC.runs // chunk)
    assert_same(contents(path), contents(reference))


def test_noise_does_not_depend_on_the_chunk_size(tmp_path):
    spec = SweepSpec(base={**BASE, "integrator": "heun", "noise": 0.3, "beta": 1.0}, runs=5,
                     seed=2)
    run_sweep(spec, tmp_path / "a.h5", chunk=1)
    run_sweep(spec, tmp_path / "b.h5", chunk=5)
    assert_same(contents(tmp_path / "a.h5"), contents(tmp_path / "b.h5"))
    # the systems do not all follow the same Brownian path
    with h5py.File(tmp_path / "a.h5", "r") as f:
        energy = f["sweep/systems/energy"][0]
    assert len({e.tobytes() for e in energy}) == spec.runs


def test_stop_and_resume_reruns_only_unfinished_tasks(reference, tmp_path):
    path = tmp_path / "stopped.h5"
    polled = []

    def stop_after_three() -> bool:
        polled.append(1)
        return len(polled) >= 3

    with pytest.raises(RunInterrupted, match="holds 9 of 18 systems"):
        run_sweep(SPEC, path, chunk=3, should_stop=stop_after_three)
    with h5py.File(path, "r") as f:
        assert f["sweep/done"][()].sum() == 9 and not f["parameters"].attrs["complete"]
    with pytest.raises(SweepError, match="unfinished sweep"):
        load(path)
    # resuming with other values is refused, naming them
    with pytest.raises(SweepError, match="runs 10 \\(stored 9\\)"):
        run_sweep(SPEC.replace(runs=10), path, resume=True)
    info = invoke("info", path)
    ok(info)
    assert "parameter sweep" in info.output and "9 of 18 systems done" in info.output
    assert f"particles sweep --resume --out {path}" in info.output
    result = run_sweep(SPEC, path, resume=True, chunk=3)
    assert (result.tasks_run, result.systems_run) == (3, 9)
    info = invoke("info", path)
    ok(info)
    assert "status       complete" in info.output and "beta = 1, 5" in info.output
    assert_same(contents(path), contents(reference))
    again = run_sweep(None, path, resume=True)  # complete: nothing to do
    assert again.tasks_run == 0 and again.complete


def test_load_gives_the_contract_dataset(reference):
    ds = load(reference)
    assert list(ds.coords["beta"].values) == [1.0, 5.0]
    assert ds.sizes == {"beta": 2, "time": 11, "delta": 3, "quantile": 5, "clusters": 6,
                        "system": 9}
    dims = {k: ds[k].dims for k in ds.data_vars}
    assert dims["pair_fraction"] == ("beta", "time", "delta")
    assert dims["cluster_distribution"] == ("beta", "time", "clusters")
    assert dims["cluster_quantile"] == ("beta", "time", "quantile")
    assert dims["formation_time"] == ("beta", "quantile")
    assert dims["formation_censored"] == ("beta",)
    assert dims["single_cluster_time"] == ("beta", "system")
    for k in ("cluster_mean", "energy_mean", "order_parameter_mean"):
        assert dims[k] == ("beta", "time")
    np.testing.assert_allclose(ds.cluster_distribution.sum("clusters"), 1.0)
    # the fractions of close pairs grow with delta and, at t = 0, are those of random starts
    pf = ds.pair_fraction.values
    assert np.all(np.diff(pf, axis=-1) <= 0)
    assert json.loads(ds.attrs["sweep"])["runs"] == 9 and ds.attrs["seed"] == "11"
    table = ds.cluster_mean.to_dataframe()
    assert len(table) == 22


# ------------------------------------------------------------ command line
def test_cli_runs_exports_and_matches_the_library(reference, tmp_path):
    out = tmp_path / "cli.h5"
    result = invoke("sweep", *ARGS, "--out", out, "--chunk", 4)
    ok(result)
    assert str(out) in result.output and "2 grid points x 9 systems, complete" in result.output
    assert_same(contents(out), contents(reference))
    csv = tmp_path / "out.csv"
    result = invoke("sweep", "export", out, "--csv", csv)
    ok(result)
    import pandas as pd

    table = pd.read_csv(csv)
    assert list(table.columns[:3]) == ["variable", "beta", "time"]
    mean = table[table.variable == "cluster_mean"]
    assert len(mean) == 22
    np.testing.assert_allclose(mean.value, load(out).cluster_mean.values.ravel())
    # an existing file is never replaced without --overwrite
    usage_error(invoke("sweep", *ARGS, "--out", out), "exists")


@pytest.mark.parametrize("args, fragment", [
    (["--beta", "1:2:x"], "--beta: 'x' is not a number"),
    (["--n", "4:5:3"], "--n: '4:5:3' does not give whole numbers"),
    (["--kernel", "edp,nope"], "--kernel must be one of"),
    (["--T", "1,2"], "same times"),
    (["--runs", "0"], "--runs must be a positive integer"),
    (["--delta", "0.1,x"], "--delta"),
    (["--bogus", "1"], "No such option '--bogus'"),
])
def test_cli_bad_input_is_one_line_and_clobbers_nothing(tmp_path, args, fragment):
    out = tmp_path / "keep.h5"
    out.write_bytes(b"precious")
    base = [a for a in ARGS]
    for opt in args[::2]:
        if opt in base:
            i = base.index(opt)
            del base[i:i + 2]
    usage_error(invoke("sweep", *base, *args, "--out", out, "--overwrite"), fragment)
    assert out.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.h5"]


def test_cli_dry_run_prints_tasks_and_writes_nothing(tmp_path):
    out = tmp_path / "dry.h5"
    result = invoke("sweep", *ARGS, "--out", out, "--dry-run", "--chunk", 5)
    ok(result)
    assert "grid         2 points: beta (2)" in result.output
    assert "tasks        4 of at most 5 systems" in result.output
    assert "point 1 (beta=5) systems 5..8" in result.output
    assert "time" in result.output and not out.exists()


def test_grid_values_print_rounded_and_stay_exact_in_the_file(tmp_path):
    """Issue 28, item 7: the grid 0.1:0.6:6 holds 0.1 + 2 * 0.1 =
    0.30000000000000004; the dry run and info print 0.3, the file keeps it."""
    grid = ("--beta", "0.1:0.6:6", "--runs", "1")
    out = tmp_path / "g.h5"
    result = invoke("sweep", *ARGS[:-6], *grid, "--seed", "11", "--out", out, "--dry-run")
    ok(result)
    assert "point 2 (beta=0.3) systems 0..0" in result.output, result.output
    ok(invoke("sweep", *ARGS[:-6], *grid, "--seed", "11", "--out", out))
    info = invoke("info", out)
    ok(info)
    assert "beta = 0.1, 0.2, 0.3, 0.4, 0.5, 0.6" in info.output, info.output
    assert "0.30000000000000004" not in info.output
    assert load(out).beta.values[2] == 0.30000000000000004


def test_cli_toml_grid(tmp_path):
    toml = tmp_path / "grid.toml"
    toml.write_text('n = 6\nd = 2\nbeta = [1.0, 2.0, 3.0]\nmodel = ["sa", "usa"]\n'
                    'runs = 5\nseed = 3\n')
    result = invoke("sweep", "--config", toml, "--dry-run", "--out", tmp_path / "t.h5")
    ok(result)
    assert "6 points: beta (3), model (2)" in result.output
    assert "systems      5 per point" in result.output
    toml.write_text("n = 6\nd = 2\nbeta = 1.0\nbatch = 4\n")
    usage_error(invoke("sweep", "--config", toml, "--out", tmp_path / "t.h5"),
                "unknown key 'batch'")


def test_cli_unreadable_sweep_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.h5"
    bad.write_text("not hdf5")
    usage_error(invoke("sweep", "export", bad, "--csv", tmp_path / "x.csv"), "not an HDF5")


def stoppable_sweep(tmp_path: Path, runs: int, *extra: str) -> tuple[Path, Path, list[str]]:
    """``(reference, out, command)`` for a sweep to stop mid-way: the file of the
    uninterrupted sweep with ``runs`` systems per point, the path the command
    writes, and ``particles sweep`` of the same spec in one-system tasks (many
    tasks, so that it is still going when it is stopped)."""
    ref = tmp_path / "ref.h5"
    run_sweep(SPEC.replace(runs=runs), ref)
    out = tmp_path / "stopped.h5"
    args = [a if a != "9" else str(runs) for a in ARGS]
    cmd = [sys.executable, "-m", "particles_cli", "sweep", *args, "--out", str(out),
           "--chunk", "1", *extra]
    return ref, out, cmd


@pytest.mark.processes
def test_sigkill_then_resume_gives_the_uninterrupted_file(reference, tmp_path):
    """A real driver process killed with SIGKILL mid-sweep; --resume finishes it."""
    runs = 300
    ref, out, cmd = stoppable_sweep(tmp_path, runs)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=tmp_path)
    try:
        done = wait_for_systems(proc, out, 3)
        assert proc.poll() is None, f"the sweep ended before it was killed ({done} done)"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    with h5py.File(out, "r") as f:
        before = int(f["sweep/done"][()].sum())
    assert 3 <= before < 2 * runs
    result = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"{2 * runs - before} systems) run" in result.stdout
    assert_same(contents(out), contents(ref))
    assert export_csv(out, tmp_path / "k.csv") > 0


def test_export_never_replaces_the_sweep_it_reads(reference, tmp_path):
    """``sweep export s.h5 --csv s.h5 --overwrite`` used to replace the sweep by
    the CSV; through a link or a hard link too.  The CSV is written under a
    temporary name and renamed into place."""
    import shutil

    sweep = tmp_path / "s.h5"
    shutil.copy(reference, sweep)
    (tmp_path / "link.csv").symlink_to(sweep)
    (tmp_path / "hard.csv").hardlink_to(sweep)
    before = contents(sweep)
    for target in (sweep, tmp_path / "link.csv", tmp_path / "hard.csv"):
        usage_error(invoke("sweep", "export", sweep, "--csv", target, "--overwrite"),
                    "--csv", "is the sweep file")
    assert_same(contents(sweep), before)
    csv = tmp_path / "k.csv"
    csv.write_text("old")
    usage_error(invoke("sweep", "export", sweep, "--csv", csv), "exists")
    assert csv.read_text() == "old"
    ok(invoke("sweep", "export", sweep, "--csv", csv, "--overwrite"))
    assert csv.read_text().startswith("variable,")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hard.csv", "k.csv", "link.csv", "s.h5"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_statistics_is_held_then_reported(reference, tmp_path, monkeypatch,
                                                             sig):
    """Issue 25 item 5: a signal while the statistics were written was swallowed
    (exit 0).  It is held until the file is complete, then reported: exit
    128 + signal, the line saying the file is complete."""
    import os

    import particles.sweep.run as sweep_run

    statistics = sweep_run.write_statistics

    def signalled(writer, spec):
        os.kill(os.getpid(), sig)  # arrives while the statistics are written
        statistics(writer, spec)

    monkeypatch.setattr(sweep_run, "write_statistics", signalled)
    out = tmp_path / "s.h5"
    result = invoke("sweep", *ARGS, "--out", out, "--chunk", 9)
    assert result.exit_code == 128 + sig, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("Interrupted")]
    assert len(lines) == 1 and f"{out} is complete" in lines[0], result.stderr
    assert_same(contents(out), contents(reference))


def test_the_forced_stop_line_names_the_command_that_continues_the_file(tmp_path):
    from particles_cli.interrupts import describe_output

    out = tmp_path / "s.h5"
    out.write_bytes(b"old")
    describe = describe_output(out, "particles sweep")
    out.write_bytes(b"new, longer")
    assert describe().endswith(f"continue with: particles sweep --resume --out {out}")


_DAMAGES = {
    "no sweep group": lambda f: f.__delitem__("sweep"),
    "no statistics": lambda f: f["sweep"].__delitem__("stats"),
    "garbled sweep JSON": lambda f: f["parameters"].attrs.__setitem__("sweep", "{not json"),
    "garbled dims": lambda f: [f["sweep/stats"][k].attrs.__setitem__("dims", "[")
                               for k in f["sweep/stats"]],
    "no axes": lambda f: f["sweep"].__delitem__("axes"),
    "3 save times for 11 frames": lambda f: (f["sweep"].__delitem__("time"),
                                             f["sweep"].create_dataset("time", data=[0., 1, 2])),
}


@pytest.mark.parametrize("damage", list(_DAMAGES))
def test_a_damaged_sweep_file_is_one_line_everywhere(reference, tmp_path, damage):
    """Issue 25 item 9: damaged sweep files gave 19 CLI tracebacks and raw KeyError,
    JSONDecodeError or xarray errors from particles.sweep.load."""
    import shutil

    path = tmp_path / "d.h5"
    shutil.copy(reference, path)
    with h5py.File(path, "r+") as f:
        _DAMAGES[damage](f)
    with pytest.raises(SweepError, match=r"d\.h5") as err:
        load(path)
    assert "\n" not in str(err.value)
    for args in (["info", path], ["plot", path, "--out", tmp_path / "p.png"],
                 ["sweep", "export", path, "--csv", tmp_path / "e.csv"],
                 ["sweep", "--out", path, "--resume"]):
        usage_error(invoke(*args), "d.h5")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.h5"]


def test_simulation_config_fields_are_sweep_options():
    from particles_cli.sweep import sweep as command

    names = {p.name for p in command.params}
    fields = set(SimulationConfig.__dataclass_fields__) - {"batch", "seed", "positions"}
    assert fields <= names


@pytest.mark.parametrize("line, fragment", [
    ("delta = 0.1", None), ('delta = "x"', "--delta"), ('eps = "x"', "--eps"),
    ("eps = true", "--eps"), ('runs = "many"', "--runs"),
])
def test_toml_sweep_keys_get_the_options_checks(tmp_path, line, fragment):
    """Issue 25 item 10: ``delta = 0.1`` and ``eps = "x"`` in a sweep file were
    tracebacks; a TOML value gets the option's check and message, naming its key."""
    grid = tmp_path / "grid.toml"
    grid.write_text(f"beta = [1.0, 2.0]\nn = 6\nd = 2\nT = 1.0\n{line}\n")
    result = invoke("sweep", "--config", grid, "--out", tmp_path / "s.h5", "--dry-run")
    if fragment is None:
        ok(result)
    else:
        key = line.split(" ")[0]
        usage_error(result, fragment, f"key {key} in {grid}")


@pytest.mark.skipif(local_cores() < 2, reason="one core: processes are never picked")
def test_a_small_adaptive_sweep_runs_in_this_process():
    """Issue 28 item 3: the estimate that picks processes or threads probes the
    adaptive steps: a sweep whose steps at the initial dt would take minutes,
    but whose dopri5 steps grow, stays in this process."""
    spec = SweepSpec(base=dict(n=48, d=2, integrator="dopri5", T=2000.0,
                               save_times="log:0.01:2000:20"), axes=(("beta", (4.0,)),),
                     runs=4, seed=3).resolved()
    assert sweep_estimate(spec).seconds >= PROCESS_MIN_SECONDS  # the bound
    auto = LocalBackend(processes=None)
    fit_backend(auto, spec, np.zeros((spec.points, spec.runs), dtype=bool))
    assert auto.workers == 1
    probed = sweep_estimate(spec, probe=1.0)
    assert probed.seconds < PROCESS_MIN_SECONDS and "probes" in probed.lines()[1]


def test_the_sweep_estimate_reads_every_grid_points_facts(monkeypatch):
    """Issue 39 item 2: each grid point's steps and costs come from its plan
    (:class:`particles.plan.Facts`), not from the sweep's own recomputation."""
    from particles.plan import Facts

    spec = SPEC.resolved()
    monkeypatch.setattr(Facts, "steps", property(lambda self: 7))
    monkeypatch.setattr(Facts, "evaluation_cost", lambda self, n=None: 0.0)
    monkeypatch.setattr(Facts, "pass_cost", property(lambda self: 0.0))
    est = sweep_estimate(spec)
    assert est.steps == 7 * spec.points
    monkeypatch.setattr(Facts, "pass_cost", property(lambda self: 1.0))
    more = sweep_estimate(spec).seconds - est.seconds
    # one pass a frame for the statistics, one for the energy observer
    assert more == pytest.approx(2 * len(spec.times) * spec.runs * spec.points)


@pytest.mark.parametrize("line", ['Q = "nope"', "Q = [[1, 2], [3]]", 'V = [["a", 1], [2, 3]]',
                                  'masses = "x"', 'masses = ["a", "b", "c", "d", "e", "f"]',
                                  "masses = [1, 2]"])
def test_toml_matrices_and_masses_name_their_key(tmp_path, line):
    """Issue 38 item 5: a ragged Q or text masses gave numpy's "could not convert
    string to float", naming no key."""
    grid = tmp_path / "grid.toml"
    grid.write_text(f"beta = [1.0, 2.0]\nn = 6\nd = 2\nT = 1.0\n{line}\n")
    key = line.split(" ")[0]
    result = invoke("sweep", "--config", grid, "--out", tmp_path / "s.h5", "--dry-run")
    usage_error(result, f"--{key}")
    assert f"key {key}" in result.output and str(grid) in result.output, result.output


def test_cli_masses_are_numbers(tmp_path):
    """``--masses M1,M2,...`` was passed on as text (numpy's "could not convert")."""
    ok(invoke("sweep", *ARGS, "--masses", "1,2,1,2,1,2", "--out", tmp_path / "s.h5",
              "--dry-run"))
    usage_error(invoke("sweep", *ARGS, "--masses", "1,x", "--out", tmp_path / "s.h5"),
                "--masses: 'x' is not a number")


@pytest.mark.parametrize("n", [6, 100])
def test_the_estimated_size_of_a_sweep_file_holds_the_file(tmp_path, n):
    """Issue 38 item 6: the estimate counts what the writer reserves (whole
    chunks, the statistics of every grid point: a cluster-count distribution
    of n bins per save time), not the per-system rows alone (6% low at n = 100),
    and stays within 1.5x of the file."""
    spec = SweepSpec(base={**BASE, "n": n}, axes=(("beta", (1.0, 5.0)),), runs=9,
                     seed=11).resolved()
    path = tmp_path / "s.h5"
    run_sweep(spec, path)
    size = path.stat().st_size
    assert size <= sweep_estimate(spec).output_bytes <= 1.5 * size
