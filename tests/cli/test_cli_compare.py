"""``particles compare``, and the Kuramoto model through simulate, analyze, info and plot."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from clitools import invoke, ok, usage_error
from particles_cli.main import COMMANDS

import particles.runs.compare as compare_module
from particles.config import SimulationConfig
from particles.engine import IntegrationError, iter_frames, speed_bound
from particles.io import load
from particles.plotting import KINDS
from particles.runs.compare import load_comparison

# the sizes of tests/runs/test_compare.py, so the compiled kernels are shared
BASE = "--n 10 --beta 2 --T 0.4 --dt 0.05 --save-every 2 --seed 7".split()
PNG = b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- compare
def test_compare_is_registered():
    assert "compare" in {c.name for c in COMMANDS}
    ok(invoke("compare", "--help"))


def test_compare_writes_the_file_and_plot_and_prints_a_table(tmp_path):
    out, png = tmp_path / "cmp.h5", tmp_path / "cmp.png"
    result = invoke(
        "compare",
        *BASE,
        "--coupling",
        "1.5",
        "--omega",
        "gaussian:0.3",
        "--out",
        out,
        "--plot",
        png,
    )
    ok(result)
    lines = result.stdout.splitlines()
    assert lines[:2] == [str(out), str(png)]
    assert lines[2].split()[:2] == ["model", "t"]
    assert [line.split()[0] for line in lines[3:]] == ["SA", "USA", "Kuramoto"]
    trajs = load_comparison(out)
    assert list(trajs) == ["sa", "usa", "kuramoto"]
    for traj in trajs.values():
        np.testing.assert_array_equal(traj.positions[0], trajs["sa"].positions[0])
    kuramoto = trajs["kuramoto"].config
    assert (kuramoto.coupling, kuramoto.omega, kuramoto.seed) == (1.5, "gaussian:0.3", 7)
    # the clusters column is the final cluster count of each model
    assert int(lines[3].split()[3]) >= 1
    assert png.read_bytes().startswith(PNG)


def test_compare_models_save_times_and_init_from_angles(tmp_path):
    angles = tmp_path / "theta.npy"
    np.save(angles, np.linspace(0, 2, 5))
    out = tmp_path / "a.h5"
    result = invoke(
        "compare",
        "--beta",
        "1",
        "--T",
        "0.4",
        "--dt",
        "0.05",
        "--models",
        "usa,sa",
        "--save-times",
        "0.1,0.4",
        "--init",
        angles,
        "--out",
        out,
    )
    ok(result)
    trajs = load_comparison(out)
    assert list(trajs) == ["usa", "sa"]
    np.testing.assert_allclose(trajs["sa"].times, [0, 0.1, 0.4])
    np.testing.assert_allclose(trajs["usa"].positions[0, :, 0], np.cos(np.linspace(0, 2, 5)))
    assert trajs["sa"].config.init == "array" and trajs["sa"].n == 5


def test_compare_refuses_an_existing_output_without_overwrite(tmp_path, monkeypatch):
    out = tmp_path / "cmp.h5"
    out.write_bytes(b"old")
    with monkeypatch.context() as m:
        m.setattr(compare_module, "iter_frames", lambda *a, **k: pytest.fail("a run started"))
        usage_error(invoke("compare", *BASE, "--out", out), "--out", "exists", "--overwrite")
        png = tmp_path / "p.png"
        png.write_bytes(b"old")
        usage_error(
            invoke("compare", *BASE, "--out", tmp_path / "n.h5", "--plot", png), "--plot", "exists"
        )
    assert out.read_bytes() == b"old"
    ok(invoke("compare", *BASE, "--out", out, "--overwrite", "--models", "sa"))
    assert list(load_comparison(out)) == ["sa"]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--models", "sa,gpt"], ["--models", "'gpt'"]),
        (["--models", "sa,sa"], ["--models", "repeat"]),
        (["--n", "0"], ["--n", "n must be"]),
        (["--n", "-3"], ["--n", "n must be"]),
        (["--d", "3"], ["--d"]),
        (["--beta", "-1"], ["--beta"]),
        (["--omega", "cauchy:1"], ["--omega"]),
        (["--models", "sa,usa", "--coupling", "2"], ["--coupling", "kuramoto"]),
        (["--init", "orthogonal"], ["--init"]),
        (["--init", "nowhere/x.npy"], ["--init", "cannot read"]),
        (["--save-times", "log:0:1:3"], ["--save-times"]),
        (["--integrator", "leapfrog"], ["--integrator"]),
        # issue 38 item 6: --T 0 compared nothing and was accepted
        (["--T", "0"], ["'--T'", "--T must reach past t = 0 for a comparison"]),
        (["--T", "-1"], ["'--T'"]),
        (["--T", "nan"], ["'--T'"]),
        (["--save-times", "0"], ["'--save-times'", "must reach past t = 0"]),
    ],
)
def test_compare_bad_input_is_one_line_exit_2(tmp_path, no_comparison_run, args, fragments):
    out = tmp_path / "bad.h5"
    usage_error(invoke("compare", *BASE, *args, "--out", out), *fragments)
    assert not out.exists()


def test_compare_missing_options_and_bad_angle_files(tmp_path, no_comparison_run):
    usage_error(invoke("compare", "--n", "4", "--out", tmp_path / "m.h5"), "--beta")
    usage_error(invoke("compare", "--beta", "1", "--out", tmp_path / "m.h5"), "--n")
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((4, 3)))
    usage_error(
        invoke("compare", "--beta", "1", "--init", bad, "--out", tmp_path / "m.h5"),
        "--init",
        "(n, 2)",
    )
    np.save(bad, np.zeros(4))
    usage_error(
        invoke("compare", *BASE, "--init", bad, "--out", tmp_path / "m.h5"),
        "--init",
        "4 tokens but --n=10",  # option names on the command line (issue 11 item 12)
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.npy"]


@pytest.mark.parametrize(
    ("error", "status", "prefix"),
    [(IntegrationError, 1, "Error: "), (KeyboardInterrupt, 130, "Interrupted: ")],
)
def test_compare_stopped_in_the_second_model(tmp_path, monkeypatch, error, status, prefix):
    def frames(config, *args, **kwargs):
        if config.model == "usa":
            raise error("non-finite positions")
        yield from iter_frames(config, *args, **kwargs)

    monkeypatch.setattr(compare_module, "iter_frames", frames)
    out = tmp_path / "s.h5"
    result = invoke("compare", *BASE, "--out", out)
    assert result.exit_code == status, result.output
    assert "Traceback" not in result.output
    reported = [line for line in result.stderr.splitlines() if line.startswith(prefix)]
    assert len(reported) == 1 and f"{out} holds the frames so far" in reported[0]
    assert list(load_comparison(out)) == ["sa"]


def test_plot_paths_are_checked_before_any_work_and_blamed_on_plot(tmp_path,
                                                                   no_comparison_run):
    """Issue 25 item 7: ``--plot p.txt`` was refused after the models ran (and
    left the file); ``--plot nodir/p.png`` was blamed on ``--out``."""
    out = tmp_path / "c.h5"
    usage_error(invoke("compare", *BASE, "--out", out, "--plot", tmp_path / "p.txt"),
                "--plot", ".png")
    usage_error(invoke("compare", *BASE, "--out", out, "--plot", tmp_path / "no" / "p.png"),
                "--plot", "does not exist")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.processes
def test_compare_removes_stale_partials_and_a_full_disk_is_one_line(tmp_path):
    """A temporary file of a dead comparison is removed (with a warning); a file
    size limit stops the comparison in one line, exit 1 (issue 25 item 7)."""
    import subprocess
    import sys

    from particles.paths import host_name

    stale = tmp_path / f".c.h5.999999999@{host_name()}.0123abcd.partial"
    stale.write_bytes(b"left by a killed comparison")
    result = invoke("compare", *BASE, "--out", tmp_path / "c.h5")
    ok(result)
    assert not stale.exists() and "Warning: removed" in result.stderr
    full = subprocess.run(
        [sys.executable, "-c", "import resource, signal, sys; "
         "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
         "resource.setrlimit(resource.RLIMIT_FSIZE, (30000, 30000)); "
         "from particles_cli.__main__ import main; sys.argv = ['particles', *sys.argv[1:]]; "
         "main()", "compare", *BASE, "--T", "4", "--save-every", "1", "--out", "d.h5"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    errors = [line for line in full.stderr.splitlines() if line.startswith("Error")]
    assert full.returncode == 1 and len(errors) == 1, full.stderr
    assert "Traceback" not in full.stderr and "free space is needed" in errors[0]


def test_single_run_commands_point_to_load_comparison(tmp_path):
    out = tmp_path / "cmp.h5"
    ok(invoke("compare", *BASE, "--models", "sa", "--out", out))
    for command in ("info", "analyze", "plot"):
        usage_error(invoke(command, out), "model comparison", "load_comparison")


# ------------------------------------------- Kuramoto through the single-run chain
@pytest.fixture(scope="module")
def kuramoto_file(tmp_path_factory) -> Path:
    """``particles simulate --model kuramoto --coupling 2 --omega lorentzian:0.5 --n 200``."""
    out = tmp_path_factory.mktemp("kuramoto") / "k.h5"
    args = dict(n=200, d=2, beta=1.0, model="kuramoto", coupling=2.0, omega="lorentzian:0.5")
    # Lorentzian tails give a few fast oscillators: a step they cross in under 0.4 rad
    rate = speed_bound(SimulationConfig(**args, seed=5))
    dt = 1.0 / (20 * math.ceil(2.5 * rate / 20))
    result = invoke(
        "simulate",
        "--model",
        "kuramoto",
        "--coupling",
        "2",
        "--omega",
        "lorentzian:0.5",
        "--n",
        "200",
        "--d",
        "2",
        "--beta",
        "1",
        "--T",
        "1",
        "--dt",
        dt,
        "--save-every",
        round(0.1 / dt),
        "--seed",
        "5",
        "--out",
        out,
    )
    ok(result)
    assert "Warning" not in result.output
    return out


def test_kuramoto_simulate_analyze_info(kuramoto_file):
    traj = load(kuramoto_file)
    assert traj.positions.shape == (11, 200, 2) and traj.complete
    assert (traj.config.model, traj.config.coupling) == ("kuramoto", 2.0)
    result = invoke("analyze", kuramoto_file)
    ok(result)
    assert "clusters" in result.stdout and "/analysis" in result.stdout
    result = invoke("info", kuramoto_file)
    ok(result)
    assert "kuramoto" in result.stdout and "lorentzian:0.5" in result.stdout


@pytest.mark.parametrize("kind", list(KINDS))
def test_kuramoto_plot_every_kind(kuramoto_file, tmp_path, kind):
    out = tmp_path / f"k.{'gif' if kind == 'movie' else 'png'}"
    result = invoke("plot", kuramoto_file, "--kind", kind, "--out", out)
    ok(result)
    assert result.stdout.strip() == str(out) and out.stat().st_size > 1000
