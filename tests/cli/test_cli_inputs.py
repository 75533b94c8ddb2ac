"""Hostile inputs (issue 15, items 8-11): every one refused in one line before
any work, sizes estimated before a run, huge frame counts read lazily,
positions of any scale normalised."""

from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest
from clitools import invoke, ok, usage_error

from particles.config import SimulationConfig
from particles.io import load
from particles.runs import run_to_file

CONFIG = SimulationConfig(n=4, d=3, beta=1.0, T=0.1, dt=0.01, save_every=5, seed=1,
                          integrator="euler")
BASE = "--n 4 --d 3 --beta 1 --T 0.1 --dt 0.01 --seed 1 --integrator euler".split()


@pytest.fixture(scope="module")
def traj(tmp_path_factory):
    """A small complete trajectory (3 frames)."""
    path = tmp_path_factory.mktemp("inputs") / "small.h5"
    run_to_file(CONFIG, path)
    return path


@pytest.fixture
def no_load(monkeypatch):
    """Fail the test if the frames of a trajectory are loaded."""
    import particles.io

    def forbidden(*args, **kwargs):
        raise AssertionError("frames were loaded")

    monkeypatch.setattr(particles.io, "load", forbidden)
    monkeypatch.setattr("particles.io.h5md.load", forbidden)


def rewrite(src, dst, **config):
    """Copy a trajectory, changing keys of its stored configuration."""
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        stored = json.loads(f["parameters"].attrs["config"])
        f["parameters"].attrs["config"] = json.dumps({**stored, **config})
    return dst


# ------------------------------------------------------------------ item 8
def test_non_utf8_config_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"n = 4\nd = 3\n# \xff\xfe\n")
    usage_error(invoke("simulate", "--config", bad, "--out", tmp_path / "o.h5"),
                "'--config'", "UTF-8")
    assert not (tmp_path / "o.h5").exists()


@pytest.mark.parametrize("name", ["movie.jpg", "movie.h5", "movie"])
def test_movie_extension(traj, tmp_path, no_load, name):
    usage_error(invoke("plot", traj, "--kind", "movie", "--out", tmp_path / name),
                "'--out'", ".gif")


def test_plot_extension(traj, tmp_path, no_load):
    usage_error(invoke("plot", traj, "--out", tmp_path / "x.bmpx"), "'--out'", ".png")


def test_kernels_extension_before_running(tmp_path, monkeypatch):
    import particles_cli.kernels

    def forbidden(*args, **kwargs):
        raise AssertionError("kernels ran")

    monkeypatch.setattr(particles_cli.kernels, "compare_kernels", forbidden)
    usage_error(invoke("kernels", *BASE, "--out", tmp_path / "k.txt"), "'--out'", ".txt")


def test_analyze_huge_bins(traj, no_load):
    usage_error(invoke("analyze", traj, "--no-write", "--bins", "1000000000"), "'--bins'")


@pytest.mark.parametrize("dpi", ["0", "100000"])
def test_plot_dpi(traj, tmp_path, no_load, dpi):
    usage_error(invoke("plot", traj, "--dpi", dpi, "--out", tmp_path / "x.png"), "'--dpi'")


def test_info_complex_positions(traj, tmp_path):
    path = tmp_path / "complex.h5"
    shutil.copy(traj, path)
    with h5py.File(path, "r+") as f:
        group = f["particles/tokens/position"]
        value = group["value"][:]
        del group["value"]
        group.create_dataset("value", data=value + 1j, maxshape=(None, *value.shape[1:]))
    r = invoke("info", path)
    usage_error(r, "complex")
    assert "Warning" not in r.output


# ------------------------------------------------------------------ item 9
@pytest.mark.parametrize("option", [
    ["--n", "1000000000000"],
    ["--batch", "1000000000000"],
    ["--d", "1000000"],
    ["--heads", "1000000000000"],
    ["--save-times", "lin:0:0.1:1000000000000"],
    ["--T", "1e12", "--save-every", "1"],
])
def test_huge_sizes_refused(tmp_path, option):
    out = tmp_path / "o.h5"
    usage_error(invoke("simulate", *BASE, *option, "--out", out), "memory", "--no-size-check")
    assert not out.exists()


def test_output_larger_than_disk(tmp_path, monkeypatch):
    import shutil as sh

    usage = sh.disk_usage(tmp_path)
    monkeypatch.setattr("particles.runs.estimate.shutil.disk_usage",
                        lambda p: usage._replace(free=10_000))
    out = tmp_path / "o.h5"
    usage_error(invoke("simulate", *BASE, "--T", "10", "--save-every", "1", "--out", out),
                "output needs", "free")
    assert not out.exists()


def test_dry_run(tmp_path):
    out = tmp_path / "o.h5"
    r = invoke("simulate", *BASE, "--save-every", "5", "--dry-run", "--out", out)
    ok(r)
    assert "nothing written" in r.output and "memory" in r.output and "frames       3" in r.output
    assert not out.exists() and not list(tmp_path.iterdir())


def test_no_size_check_skips_the_refusal(tmp_path):
    out = tmp_path / "o.h5"
    r = invoke("simulate", *BASE, "--n", "1000000000000", "--no-size-check", "--dry-run",
               "--out", out)
    ok(r)
    assert "TiB" in r.output and not out.exists()


def test_file_claiming_1e10_frames_read_lazily(traj, tmp_path):
    path = rewrite(traj, tmp_path / "huge.h5", T=1e9)  # dt * save_every = 0.05
    r = invoke("info", path)
    ok(r)
    assert "3 of 20000000001 frames" in r.output


# ----------------------------------------------------------------- item 10
def test_huge_and_tiny_initial_rows(tmp_path):
    x0 = np.array([[1e200, 1e200, 0.0], [1e-170, 0.0, 0.0], [0.0, 3.0, 4.0], [0, 0, 1.0]])
    np.save(tmp_path / "x0.npy", x0)
    out = tmp_path / "o.h5"
    ok(invoke("simulate", *BASE, "--init", tmp_path / "x0.npy", "--out", out))
    first = load(out).positions[0]
    np.testing.assert_allclose(first[0], [2**-0.5, 2**-0.5, 0], rtol=1e-15)
    np.testing.assert_array_equal(first[1], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(first[2], np.array([0.0, 3.0, 4.0]) / 5.0)


@pytest.mark.parametrize("x0,fragment", [
    (np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1]], dtype=complex), "real"),
    (np.array([[0.0, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1]]), "nonzero"),
    (np.array([[np.inf, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1]]), "finite"),
])
def test_bad_initial_rows(tmp_path, x0, fragment):
    np.save(tmp_path / "x0.npy", x0)
    out = tmp_path / "o.h5"
    usage_error(invoke("simulate", *BASE, "--init", tmp_path / "x0.npy", "--out", out), fragment)
    assert not out.exists()


# ----------------------------------------------------------------- item 11
def test_analyze_zero_bins(traj, no_load):
    usage_error(invoke("analyze", traj, "--no-write", "--bins", "0"), "'--bins'")


def test_plot_system_from_header(traj, tmp_path, no_load):
    usage_error(invoke("plot", traj, "--kind", "sphere", "--system", "99",
                       "--out", tmp_path / "s.png"), "'--system'", "[0, 1)")


def test_plot_missing_directory(traj, tmp_path, no_load):
    usage_error(invoke("plot", traj, "--out", tmp_path / "nodir" / "x.png"), "does not exist")


def test_plot_out_is_its_input(traj, tmp_path, no_load):
    path = tmp_path / "run.png"  # a trajectory with a picture's name
    shutil.copy(traj, path)
    usage_error(invoke("plot", path, "--out", path, "--overwrite"), "'--out'", "input")
    assert h5py.is_hdf5(path)


def test_save_every_with_save_times(tmp_path):
    out = tmp_path / "o.h5"
    usage_error(invoke("simulate", *BASE, "--save-every", "2", "--save-times", "0.05,0.1",
                       "--out", out), "--save-every", "--save-times")
    usage_error(invoke("kernels", *BASE, "--save-every", "2", "--save-times", "0.05,0.1",
                       "--out", tmp_path / "k.png"), "--save-every", "--save-times")
    assert not out.exists()


def test_plot_read_only_directory(traj, tmp_path, no_load, monkeypatch):
    import os

    import particles.paths

    real = os.access
    monkeypatch.setattr(particles.paths.os, "access",
                        lambda p, mode, **kw: False if mode & os.W_OK else real(p, mode, **kw))
    usage_error(invoke("plot", traj, "--out", tmp_path / "x.png"), "'--out'")


# -------------------------------------------------- sizes bounded before any work
@pytest.mark.parametrize("args, fragment", [
    ("sweep --beta 0.1:9:1000000 --d 2 --n 8 --runs 4 --T 1 --dry-run", "at most 100000"),
    ("sweep --beta 1 --d 2 --n 1000000000000 --runs 4 --T 1 --dry-run", "of memory"),
    ("sweep --beta 1 --d 2 --n 8 --runs 100000000000000000000 --T 1", "systems; at most"),
    ("sweep --beta 1 --d 2 --n 8 --runs 4 --T 1e300", "save times"),
    ("sweep --beta 0.1:9:400 --d 2 --n 8:407:400 --runs 4 --T 1", "grid has 160000 points"),
    ("meanfield --beta 1 --modes 10000000000000", "reduce --modes"),
    ("meanfield --beta 1 --T 1e300 --save-every 1", "the output needs"),
    ("simulate --n 8 --d 3 --beta 1 --heads 100000000", "--heads must be an integer in"),
    ("simulate --n 8 --d 3 --beta 1 --T 1e300", "--T, --save-every"),
])
def test_sizes_are_bounded_before_any_allocation(tmp_path, args, fragment):
    """Issue 25 item 8: grids, runs, mean-field grids and heads without a bound grew
    memory with no output, or gave tracebacks; one line, exit 2, nothing written."""
    usage_error(invoke(*args.split(), "--out", tmp_path / "x.h5"), fragment)
    assert list(tmp_path.iterdir()) == []


def test_dry_run_of_an_adaptive_run_probes_its_steps(tmp_path):
    """Issue 28 item 3: the steps of dopri5 come from a probe (an estimate, not the
    count at the initial --dt), and nothing is written."""
    out = tmp_path / "o.h5"
    args = ["--n", "20", "--d", "2", "--beta", "9", "--T", "1000", "--seed", "1",
            "--save-times", "log:0.01:1000:30", "--out", out, "--dry-run"]
    r = invoke("simulate", *args, "--integrator", "dopri5")
    ok(r)
    steps = next(line for line in r.output.splitlines() if line.startswith("steps"))
    time_line = next(line for line in r.output.splitlines() if line.startswith("time"))
    assert "probe" in steps and "an estimate" in time_line, r.output
    assert float(steps.split()[1].rstrip(";")) < 1000 / 0.01 / 10  # steps grow past dt
    fixed = invoke("simulate", *args, "--integrator", "rk4")
    ok(fixed)
    assert "fixed steps" in fixed.output and "probe" not in fixed.output
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------ outputs onto inputs (issue 38 item 3)


def _unchanged(path, before: bytes) -> None:
    assert path.read_bytes() == before, f"{path} was changed"


def test_overwrite_onto_the_runs_own_npy_input_is_refused(tmp_path):
    x0 = tmp_path / "x0.npy"
    np.save(x0, np.eye(3)[None].repeat(2, axis=0).reshape(6, 3)[:4])
    before = x0.read_bytes()
    usage_error(invoke("simulate", *BASE, "--init", x0, "--out", x0, "--overwrite"),
                "'--out'", "input of this run")
    _unchanged(x0, before)
    link = tmp_path / "link.h5"  # the same file under another name
    link.symlink_to(x0)
    usage_error(invoke("simulate", *BASE, "--init", x0, "--out", link, "--overwrite"),
                "input of this run")
    _unchanged(x0, before)


def test_overwrite_onto_the_particle_file_a_meanfield_solve_reads_is_refused(tmp_path):
    run = tmp_path / "circle.h5"
    ok(invoke("simulate", "--n", 64, "--d", 2, "--beta", 1, "--T", 0.1, "--dt", 0.05,
              "--integrator", "euler", "--seed", 1, "--out", run))
    before = run.read_bytes()
    usage_error(invoke("meanfield", "--beta", 1, "--T", 0.1, "--init",
                       f"particles:file={run}", "--out", run, "--overwrite"),
                "'--out'", "input of this run")
    _unchanged(run, before)


def test_overwrite_onto_the_density_file_a_run_draws_from_is_refused(tmp_path):
    field = tmp_path / "field.h5"
    ok(invoke("meanfield", "--beta", 1, "--T", 0.1, "--modes", 32, "--out", field))
    before = field.read_bytes()
    usage_error(invoke("simulate", "--n", 8, "--d", 2, "--beta", 1, "--T", 0.1, "--dt", 0.05,
                       "--init", f"density:{field}", "--out", field, "--overwrite"),
                "'--out'", "input of this run")
    _unchanged(field, before)
    # the library refuses it too, whoever calls it
    from particles.errors import OutputPathError

    with pytest.raises(OutputPathError, match="input of this run"):
        run_to_file(SimulationConfig(n=8, d=2, beta=1.0, T=0.1, dt=0.05, seed=1,
                                     init=f"density:{field}"), field, overwrite=True)
    _unchanged(field, before)


def test_outputs_that_are_no_regular_files_are_refused(tmp_path):
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    usage_error(invoke("simulate", *BASE, "--out", fifo, "--overwrite"), "'--out'",
                "not a regular file")
    assert fifo.is_fifo()
    usage_error(invoke("simulate", *BASE, "--out", "/dev/null", "--overwrite"),
                "not a regular file")
    assert not os.path.isfile("/dev/null")
    dangling = tmp_path / "dangling.h5"
    dangling.symlink_to(tmp_path / "nowhere" / "run.h5")
    usage_error(invoke("simulate", *BASE, "--out", dangling), "'--out'",
                "symbolic link", "does not exist")
    assert dangling.is_symlink() and not list((tmp_path).glob("*.partial"))
