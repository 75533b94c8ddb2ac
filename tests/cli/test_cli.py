"""The command line: every option of ``particles simulate``, every bad input
(exit status 2, one-line message, no traceback, no work done), ``info``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from clitools import invoke, ok, usage_error
from particles_cli.main import COMMANDS, cli

import particles.runs.run as run_module
from particles.config import INITS, SimulationConfig
from particles.engine import run
from particles.fields import KERNELS
from particles.integrators import INTEGRATORS
from particles.io import load
from particles.models import MODELS
from particles.runs import run_to_file

# small and cheap to compile; tests add or override options
BASE = "--n 8 --d 3 --beta 1 --T 0.1 --dt 0.01 --save-every 5 --seed 3 --integrator euler".split()
CONFIG = SimulationConfig(
    n=8, d=3, beta=1.0, T=0.1, dt=0.01, save_every=5, seed=3, integrator="euler"
)


def simulate(out: Path, *args):
    return invoke("simulate", "--out", out, *args)


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if a run starts (bad input must be refused before any work)."""

    def forbidden(*args, **kwargs):
        raise AssertionError("a run started")

    monkeypatch.setattr(run_module, "iter_frames", forbidden)


# --------------------------------------------------------------- success
def test_simulate_prints_path_and_summary(tmp_path):
    out = tmp_path / "run.h5"
    result = simulate(out, *BASE)
    ok(result)
    lines = result.stdout.splitlines()
    assert lines[0] == str(out)
    assert len(lines) == 2
    assert "3 frames" in lines[1] and "complete" in lines[1]
    assert "clusters" in lines[1] and "energy" in lines[1]
    traj = load(out)
    assert traj.complete and traj.config == CONFIG
    np.testing.assert_array_equal(traj.positions, run(CONFIG).positions)


def test_default_out_is_run_h5_and_never_overwritten(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ok(invoke("simulate", *BASE))
    assert (tmp_path / "run.h5").exists()
    before = (tmp_path / "run.h5").read_bytes()
    usage_error(invoke("simulate", *BASE, "--beta", "2"), "run.h5 exists")
    assert (tmp_path / "run.h5").read_bytes() == before


@pytest.mark.parametrize(
    ("option", "value", "field", "expected"),
    [
        ("--model", "usa", "model", "usa"),
        ("--kernel", "edp", "kernel", "edp"),
        ("--usa-scale", "n_exp_beta", "usa_scale", "n_exp_beta"),
        ("--dt", "0.02", "dt", 0.02),
        ("--T", "0.05", "T", 0.05),
        ("--save-every", "2", "save_every", 2),
        ("--batch", "2", "batch", 2),
        ("--seed", "11", "seed", 11),
        ("--rtol", "1e-5", "rtol", 1e-5),
        ("--atol", "1e-8", "atol", 1e-8),
        ("--beta", "0", "beta", 0.0),
        ("--init", "cap:0.3", "init", "cap:0.3"),
        ("--init", "vmf:5", "init", "vmf:5"),
        ("--init", "uniform", "init", "uniform"),
        ("--Q", "identity", "Q", "identity"),
        ("--K", "minus-identity", "K", "minus_identity"),
        ("--V", "minus-identity", "V", "minus_identity"),
        ("--V", "minus_identity", "V", "minus_identity"),
    ],
)
def test_each_option_reaches_the_file(tmp_path, option, value, field, expected):
    out = tmp_path / "o.h5"
    ok(simulate(out, *BASE, option, value))
    assert getattr(load(out).config, field) == expected


ATTENTION_RUNS = {
    "kernel_weights_heads_layers": (
        "--kernel rbf --tau 0.7 --weights gaussian --value-weights wwt --heads 2 "
        "--layer-time 0.05 --weight-draws independent --batch 2",
        dict(kernel="rbf", tau=0.7, weights="gaussian", value_weights="wwt", heads=2,
             layer_time=0.05, weight_draws="independent", batch=2)),
    "sinkhorn": (
        "--normalization sinkhorn --sinkhorn-iters 7 --sinkhorn-tol 1e-6 --weights goe",
        dict(normalization="sinkhorn", sinkhorn_iters=7, sinkhorn_tol=1e-6, weights="goe")),
    "quadratic": ("--kernel quadratic --gamma -0.5", dict(kernel="quadratic", gamma=-0.5)),
    "kuramoto_own_frequencies": (
        "--model kuramoto --d 2 --beta 0 --omega lorentzian:0.5 --weight-draws independent "
        "--batch 2",
        dict(model="kuramoto", omega="lorentzian:0.5", weight_draws="independent", batch=2)),
}


@pytest.mark.parametrize("case", list(ATTENTION_RUNS))
def test_attention_options_reach_the_file(tmp_path, case):
    """Kernels, weight ensembles, heads, layers and Sinkhorn from the command line."""
    args, fields = ATTENTION_RUNS[case]
    out = tmp_path / "o.h5"
    ok(simulate(out, *BASE, *args.split()))
    traj = load(out)
    assert traj.complete
    for field, value in fields.items():
        assert getattr(traj.config, field) == value


def test_log_spaced_save_times(tmp_path):
    out = tmp_path / "log.h5"
    # --save-every and --save-times exclude each other (issue 15, item 11)
    base = [a for a in BASE if a not in ("--save-every", "5")]
    ok(simulate(out, *base, "--T", "0.1", "--save-times", "log:0.001:0.1:3"))
    np.testing.assert_allclose(load(out).times, [0, 0.001, 0.01, 0.1])


def test_kuramoto_options(tmp_path):
    out = tmp_path / "k.h5"
    # the command: no --beta needed for Kuramoto
    ok(simulate(out, "--n", "20", "--d", "2", "--T", "0.1", "--model", "kuramoto",
                "--coupling", "2", "--omega", "lorentzian:0.5", "--seed", "3", "--dt", "0.001"))
    config = load(out).config
    assert (config.model, config.coupling, config.omega) == ("kuramoto", 2.0, "lorentzian:0.5")
    assert config.beta == 0.0


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_every_integrator(tmp_path, integrator):
    out = tmp_path / "i.h5"
    ok(simulate(out, *BASE, "--integrator", integrator, "--T", "0.05"))
    assert load(out).config.integrator == integrator


def test_orthogonal_init(tmp_path):
    out = tmp_path / "o.h5"
    ok(simulate(out, *BASE, "--d", "8", "--init", "orthogonal"))
    x = load(out).positions[0]
    np.testing.assert_allclose(x @ x.T, np.eye(8), atol=1e-12)


def test_equispaced_on_the_circle(tmp_path):
    out = tmp_path / "c.h5"
    ok(simulate(out, *BASE, "--d", "2", "--init", "equispaced"))
    x = load(out).positions[0]
    np.testing.assert_allclose(np.linalg.norm(x.sum(axis=0)), 0, atol=1e-12)


def test_init_from_npy(tmp_path):
    x0 = np.random.default_rng(1).normal(size=(8, 3))
    np.save(tmp_path / "x0.npy", x0)
    out = tmp_path / "x.h5"
    ok(simulate(out, *BASE, "--init", tmp_path / "x0.npy"))
    traj = load(out)
    assert traj.config.init == "array"
    np.testing.assert_allclose(traj.positions[0], x0 / np.linalg.norm(x0, axis=1)[:, None])


def test_matrices_from_npy(tmp_path):
    Q = np.random.default_rng(2).normal(size=(3, 3))
    np.save(tmp_path / "q.npy", Q)
    out = tmp_path / "m.h5"
    ok(simulate(out, *BASE, "--Q", tmp_path / "q.npy", "--K", tmp_path / "q.npy"))
    config = load(out).config
    np.testing.assert_array_equal(config.matrix("Q"), Q)
    np.testing.assert_array_equal(config.matrix("K"), Q)


def test_config_file_and_overrides(tmp_path):
    np.save(tmp_path / "v.npy", -np.eye(3))
    (tmp_path / "run.toml").write_text(
        "n = 8\nd = 3\nbeta = 2.0\nT = 0.1\ndt = 0.01\nsave_every = 5\nseed = 4\n"
        'integrator = "euler"\nV = "v.npy"\nmasses = [1, 1, 1, 1, 2, 2, 2, 2]\n'
        "save_times = [0.05, 0.1]\n"
    )
    out = tmp_path / "t.h5"
    ok(simulate(out, "--config", tmp_path / "run.toml", "--beta", "3"))
    config = load(out).config
    assert config.beta == 3.0  # the command line wins
    assert config.seed == 4 and config.integrator == "euler"
    np.testing.assert_array_equal(config.matrix("V"), -np.eye(3))
    assert config.masses == (1, 1, 1, 1, 2, 2, 2, 2)
    assert config.save_times == (0.05, 0.1)


def test_overwrite(tmp_path):
    out = tmp_path / "o.h5"
    out.write_text("old")
    ok(simulate(out, *BASE, "--overwrite"))
    assert load(out).complete


def test_resume(tmp_path, monkeypatch):
    out = tmp_path / "r.h5"
    real = run_module.iter_frames

    def interrupted(*args, **kwargs):
        for i, frame in enumerate(real(*args, **kwargs)):
            if i == 2:
                raise KeyboardInterrupt
            yield frame

    monkeypatch.setattr(run_module, "iter_frames", interrupted)
    result = simulate(out, *BASE)
    assert result.exit_code == 130
    assert "Interrupted" in result.stderr and "--resume" in result.stderr
    assert result.stdout.splitlines()[0] == str(out)
    assert not load(out).complete
    monkeypatch.undo()
    ok(simulate(out, "--resume"))
    traj = load(out)
    assert traj.complete
    np.testing.assert_array_equal(traj.positions, run(CONFIG).positions)
    ok(simulate(out, "--resume"))  # complete: nothing to do


def test_step_size_warning_is_one_line(tmp_path):
    out = tmp_path / "w.h5"
    result = simulate(out, *BASE, "--model", "usa", "--beta", "5", "--T", "0.02")
    ok(result)
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == 1 and "dt" in warnings[0]


def test_integration_error_keeps_file(tmp_path):
    (tmp_path / "c.toml").write_text("max_steps = 7\n")
    out = tmp_path / "e.h5"
    result = simulate(out, *BASE, "--config", tmp_path / "c.toml")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "max_steps" in errors[0] and "incomplete" in errors[0]
    traj = load(out)
    assert traj.frames == 2 and not traj.complete


# ------------------------------------------------------------- bad input
def _npy(tmp_path: Path, name: str, array) -> Path:
    np.save(tmp_path / name, array)
    return tmp_path / name


BAD_OPTIONS = {
    "n_zero": (["--n", "0"], "'--n'"),
    "n_negative": (["--n", "-3"], "'--n'"),
    "n_not_int": (["--n", "abc"], "'--n'"),
    "d_one": (["--d", "1"], "'--d'"),
    "dt_zero": (["--dt", "0"], "'--dt'"),
    "dt_negative": (["--dt", "-0.1"], "'--dt'"),
    "T_negative": (["--T", "-1"], "'--T'"),
    "beta_nan": (["--beta", "nan"], "'--beta'"),
    "beta_inf": (["--beta", "inf"], "'--beta'"),
    "dt_nan": (["--dt", "nan"], "'--dt'"),
    "save_every_zero": (["--save-every", "0"], "'--save-every'"),
    "batch_zero": (["--batch", "0"], "'--batch'"),
    "seed_negative": (["--seed", "-1"], "'--seed'"),
    "rtol_zero": (["--rtol", "0"], "'--rtol'"),
    "model": (["--model", "bogus"], "'--model'"),
    "integrator": (["--integrator", "bogus"], "'--integrator'"),
    "kernel": (["--kernel", "bogus"], "'--kernel'"),
    "usa_scale": (["--usa-scale", "bogus"], "'--usa-scale'"),
    "orthogonal_n_gt_d": (["--n", "8", "--d", "3", "--init", "orthogonal"], "need n <= d"),
    "equispaced_d3": (["--init", "equispaced"], "'--init'"),
    "init_unknown": (["--init", "bogus"], "'--init'"),
    "init_cap_nan": (["--init", "cap:abc"], "'--init'"),
    "init_array": (["--init", "array"], "'--init'"),
    "init_missing_file": (["--init", "missing.npy"], "'--init'"),
    "matrix_name": (["--Q", "bogus"], "'--Q'"),
    "matrix_missing_file": (["--V", "nowhere/v.npy"], "'--V'"),
    "save_times_spec": (["--save-times", "log:0:1:3"], "'--save-times'"),
    "save_times_beyond_T": (["--save-times", "0.5,2"], "'--save-times'"),
    "omega_other_model": (["--omega", "gaussian:1"], "'--omega'"),
    "weight_draws_name": (["--weight-draws", "bogus"], "'--weight-draws'"),
    "weight_draws_given": (["--weight-draws", "independent"], "'--weight-draws'"),
    "layer_time_given": (["--layer-time", "1"], "'--layer-time'"),
    "weights_name": (["--weights", "bogus"], "'--weights'"),
    "heads_zero": (["--heads", "0"], "'--heads'"),
    "tau_edp": (["--tau", "2"], "'--tau'"),
    "sinkhorn_usa": (["--normalization", "sinkhorn", "--model", "usa"], "'--normalization'"),
}


@pytest.mark.parametrize("case", list(BAD_OPTIONS))
def test_bad_options(tmp_path, no_work, case):
    args, fragment = BAD_OPTIONS[case]
    out = tmp_path / "x.h5"
    usage_error(simulate(out, *BASE, *args), fragment)
    assert list(tmp_path.iterdir()) == []


def test_missing_required_option(tmp_path, no_work):
    usage_error(simulate(tmp_path / "x.h5", "--d", "3", "--beta", "1"), "--n")


def test_matrix_of_wrong_shape(tmp_path, no_work):
    path = _npy(tmp_path, "q.npy", np.eye(4))
    usage_error(simulate(tmp_path / "x.h5", *BASE, "--Q", path), "'--Q'", "(3, 3)")


def test_matrix_file_not_npy(tmp_path, no_work):
    (tmp_path / "q.npy").write_text("nope")
    usage_error(simulate(tmp_path / "x.h5", *BASE, "--K", tmp_path / "q.npy"), "'--K'")


def test_initial_positions_of_wrong_shape(tmp_path, no_work):
    path = _npy(tmp_path, "x0.npy", np.ones((5, 3)))
    usage_error(simulate(tmp_path / "x.h5", *BASE, "--init", path), "x0 must have shape")
    assert not (tmp_path / "x.h5").exists()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("n = 8\nbogus = 1\n", "unknown key(s) bogus"),
        ("n = [\n", "'--config'"),
        ('n = 8\nd = 3\nbeta = 1\ninit = "bogus"\n', "'init' in"),
        ("n = 0\nd = 3\nbeta = 1\n", "'n' in"),
        ("d = 3\nbeta = 1\n", "--n"),
        # issue 38 item 5: these named no key (numpy's "could not convert ...")
        ('n = 2\nd = 2\nbeta = 1\nQ = "nope"\n', "'Q' in"),
        ("n = 2\nd = 2\nbeta = 1\nQ = [[1, 2], [3]]\n", "'Q' in"),
        ('n = 2\nd = 2\nbeta = 1\nK = [["a", "b"], ["c", "d"]]\n', "'K' in"),
        ('n = 2\nd = 2\nbeta = 1\nmasses = "x"\n', "'masses' in"),
        ('n = 2\nd = 2\nbeta = 1\nmasses = ["a", "b"]\n', "'masses' in"),
    ],
)
def test_bad_config_files(tmp_path, no_work, text, fragment):
    (tmp_path / "c.toml").write_text(text)
    usage_error(simulate(tmp_path / "x.h5", "--config", tmp_path / "c.toml"), fragment)


def test_missing_config_file(tmp_path, no_work):
    usage_error(
        simulate(tmp_path / "x.h5", *BASE, "--config", tmp_path / "nope.toml"), "'--config'"
    )


def test_missing_output_directory(tmp_path, no_work):
    usage_error(simulate(tmp_path / "no" / "x.h5", *BASE), "'--out'", "does not exist")


def test_output_is_a_directory(tmp_path, no_work):
    usage_error(simulate(tmp_path, *BASE), "'--out'", "directory")


def test_unwritable_output_directory(tmp_path, no_work, monkeypatch):
    # simulated: os.access is what the check asks (and root may write anywhere)
    monkeypatch.setattr(run_module.os, "access", lambda path, mode: False)
    usage_error(simulate(tmp_path / "x.h5", *BASE), "'--out'", "not writable")


def test_existing_output_is_kept(tmp_path, no_work):
    out = tmp_path / "x.h5"
    out.write_text("precious")
    usage_error(simulate(out, *BASE), "'--out'", "exists")
    assert out.read_text() == "precious"


def test_bad_resume(tmp_path, no_work):
    out = tmp_path / "x.h5"
    usage_error(simulate(out, "--resume"), "nothing to resume")
    out.write_text("junk")
    usage_error(simulate(out, "--resume"), "not an HDF5 file")
    usage_error(simulate(out, "--resume", "--overwrite"), "--overwrite")
    usage_error(simulate(out, "--resume", "--beta", "2"), "--beta")
    assert out.read_text() == "junk"


# ------------------------------------------------------------------ info
@pytest.fixture(scope="module")
def trajectory_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("info") / "run.h5"
    run_to_file(CONFIG, path)
    return path


def test_info(trajectory_file):
    result = invoke("info", trajectory_file)
    ok(result)
    out = result.stdout
    assert "complete" in out and "incomplete" not in out
    assert "frames       3" in out
    for name in ("energy", "order_parameter"):
        assert name in out
    for field in ("n", "beta", "integrator", "seed"):
        assert any(line.split()[:1] == [field] for line in out.splitlines())


def test_info_names_the_positions_kept_and_the_analysis_file(trajectory_file, tmp_path):
    path = tmp_path / "run.h5"
    path.write_bytes(trajectory_file.read_bytes())
    out = invoke("info", path).stdout
    assert "positions    every frame" in out
    assert "analysis     - (particles analyze" in out
    ok(invoke("analyze", path))
    out = invoke("info", path).stdout
    assert f"analysis     {tmp_path / 'run.analysis.h5'}:/analysis" in out


def test_info_of_incomplete_file(tmp_path, monkeypatch):
    out = tmp_path / "i.h5"
    (tmp_path / "c.toml").write_text("max_steps = 7\n")
    simulate(out, *BASE, "--config", tmp_path / "c.toml")
    result = invoke("info", out)
    ok(result)
    assert "incomplete (2 of 3 frames" in result.stdout and "--resume" in result.stdout


@pytest.mark.parametrize("content", [None, "text"])
def test_info_of_bad_files(tmp_path, content):
    path = tmp_path / "bad.h5"
    if content is not None:
        path.write_text(content)
    usage_error(invoke("info", path), "bad.h5")


# ------------------------------------------------------------- the group
def test_help_lists_registry_choices():
    result = invoke("simulate", "--help")
    ok(result)
    for name in (*MODELS, *KERNELS, *INTEGRATORS, *(k for k in INITS if k != "array")):
        assert name in result.stdout


def test_commands_are_registered():
    assert {c.name for c in COMMANDS} <= set(cli.commands)
    assert {"simulate", "info"} <= set(cli.commands)


@pytest.mark.processes
def test_python_dash_m():
    proc = subprocess.run(
        [sys.executable, "-m", "particles_cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "simulate" in proc.stdout and "info" in proc.stdout
    assert proc.stdout.startswith("Usage: particles")


def test_summary_counts_clusters_only_where_cheap(tmp_path, monkeypatch):
    """Issue 38 item 1: the summary counted the last frame's clusters at O(n^2)
    cost (an hour at n = 1e6, after the run).  Above SUMMARY_MAX_PAIRS pairs it
    says it did not count them, without a pass over the pairs."""
    result = simulate(tmp_path / "small.h5", *BASE)
    ok(result)
    assert "clusters " in result.output and "not counted" not in result.output

    def no_pass(*args, **kwargs):
        raise AssertionError("the summary counted clusters over every pair")

    monkeypatch.setattr(run_module, "SUMMARY_MAX_PAIRS", 8 * 7 / 2 - 1)
    monkeypatch.setattr(run_module, "count_clusters", no_pass)
    result = simulate(tmp_path / "big.h5", *BASE)
    ok(result)
    assert "clusters not counted at n = 8 (O(n^2) pairs" in result.output
    assert "r " in result.output  # the rest of the line stays
    result = simulate(tmp_path / "ensemble.h5", *BASE, "--batch", "3")
    ok(result)
    assert "clusters not counted at n = 8" in result.output and "r mean " in result.output
