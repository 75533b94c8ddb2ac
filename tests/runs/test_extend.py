"""Extending a finished run to a longer ``T`` (``--resume --T``), bit for bit."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from clitools import invoke, ok, usage_error

from particles.config import SimulationConfig
from particles.io import load
from particles.runs import run_to_file

SHORT = dict(n=5, d=3, beta=1.0, dt=0.01, save_every=3, seed=2)


def assert_same_run(a, b):
    assert a.complete and b.complete
    np.testing.assert_array_equal(a.times, b.times)
    np.testing.assert_array_equal(a.steps, b.steps)
    np.testing.assert_array_equal(a.positions, b.positions)
    assert a.observables.keys() == b.observables.keys()
    for name in a.observables:
        np.testing.assert_array_equal(a.observables[name], b.observables[name], err_msg=name)
    assert a.config == b.config


@pytest.mark.parametrize("integrator", ["euler", "rk4", "dopri5"])
def test_extended_run_equals_the_long_run(tmp_path, integrator):
    short = SimulationConfig(**SHORT, T=0.12, integrator=integrator)
    long = short.replace(T=0.3)
    run_to_file(long, tmp_path / "long.h5")
    path = tmp_path / "ext.h5"
    run_to_file(short, path)
    assert load(path).complete
    run_to_file(long, path, resume=True)
    assert_same_run(load(path), load(tmp_path / "long.h5"))
    if integrator == "dopri5":  # the adaptive step statistics continue
        assert load(path).observables["accepted_steps"][-1] > 0


def test_extension_without_positions(tmp_path):
    short = SimulationConfig(**SHORT, T=0.12, integrator="euler", positions="final")
    run_to_file(short.replace(T=0.3), tmp_path / "long.h5")
    run_to_file(short, tmp_path / "ext.h5")
    run_to_file(short.replace(T=0.3), tmp_path / "ext.h5", resume=True)
    assert_same_run(load(tmp_path / "ext.h5"), load(tmp_path / "long.h5"))


def test_cli_extends_with_T_and_marks_the_file(tmp_path):
    out = tmp_path / "r.h5"
    args = ["--n", 5, "--d", 3, "--beta", 1, "--dt", 0.01, "--save-every", 3, "--seed", 2,
            "--integrator", "euler"]
    ok(invoke("simulate", "--out", out, *args, "--T", 0.12))
    result = invoke("simulate", "--out", out, "--resume", "--T", 0.3)
    ok(result)
    assert "(complete)" in result.output
    traj = load(out)
    assert traj.complete and traj.config.T == 0.3 and traj.times[-1] == pytest.approx(0.3)
    with h5py.File(out) as f:
        assert f["parameters"].attrs["complete"] == 1


def test_extension_is_refused_when_the_save_times_cannot_continue(tmp_path):
    out = tmp_path / "r.h5"
    base = ["--n", 5, "--d", 3, "--beta", 1, "--dt", 0.01, "--seed", 2, "--integrator", "euler"]
    # T = 0.1 is not on the grid of 3 steps: its last frame is not a frame of the longer run
    ok(invoke("simulate", "--out", out, *base, "--save-every", 3, "--T", 0.1))
    before = out.read_bytes()
    usage_error(invoke("simulate", "--out", out, "--resume", "--T", 0.3),
                "cannot extend to --T=0.3", "save_every * dt")
    explicit = tmp_path / "s.h5"
    ok(invoke("simulate", "--out", explicit, *base, "--save-times", "0.05,0.1", "--T", 0.1))
    refused = invoke("simulate", "--out", explicit, "--resume", "--T", 0.3)
    usage_error(refused, "not a log- or lin-spaced grid", "start with them")
    assert "only T may differ" not in refused.output
    usage_error(invoke("simulate", "--out", out, "--resume", "--T", 0.05), "not shorten")
    assert out.read_bytes() == before
    assert load(out).complete and load(out).config.T == 0.1


# ------------------------------------------- issue 28 item 4: log-spaced runs
LOG = dict(n=5, d=3, beta=1.0, dt=0.01, seed=2, save_times="log:0.01:0.5:12", T=0.5)


@pytest.mark.parametrize("integrator", ["euler", "dopri5"])
def test_log_spaced_run_extends_with_the_same_points_per_decade(tmp_path, integrator):
    short = SimulationConfig(**LOG, integrator=integrator)
    path = tmp_path / "ext.h5"
    run_to_file(short, path)
    run_to_file(short.replace(T=2.0), path, resume=True)
    ext = load(path)
    times = np.array(ext.config.save_times)
    assert times[:12].tobytes() == np.array(short.save_times).tobytes()  # a prefix, bit for bit
    ratios = times[1:] / times[:-1]
    np.testing.assert_allclose(ratios[:-1], ratios[0], rtol=1e-12)  # same points per decade
    assert ratios[-1] <= ratios[0] and times[-1] == 2.0 and ext.config.T == 2.0
    assert len(times) == 12 + 4  # 0.5 r^3 < 2 < 0.5 r^4 (r = 50^(1/11)): three more, then T
    run_to_file(short.replace(T=2.0, save_times=ext.config.save_times), tmp_path / "long.h5")
    assert_same_run(ext, load(tmp_path / "long.h5"))
    run_to_file(ext.config.replace(T=9.0), path, resume=True)  # again, past the ragged T = 2
    again = np.array(load(path).config.save_times)
    assert again[: len(times)].tobytes() == times.tobytes()
    np.testing.assert_allclose(again[len(times)] / again[len(times) - 1], ratios[0], rtol=1e-12)


def test_given_save_times_that_go_on_extend_the_run(tmp_path):
    short = SimulationConfig(**LOG, integrator="rk4")
    longer = (*short.save_times, 0.8, 1.5)
    path = tmp_path / "ext.h5"
    run_to_file(short, path)
    run_to_file(short.replace(T=1.5, save_times=longer), path, resume=True)
    run_to_file(short.replace(T=1.5, save_times=longer), tmp_path / "long.h5")
    assert_same_run(load(path), load(tmp_path / "long.h5"))


def test_cli_extends_a_log_spaced_run(tmp_path):
    out = tmp_path / "r.h5"
    base = ["--n", 5, "--d", 3, "--beta", 1, "--dt", 0.01, "--seed", 2, "--integrator", "rk4"]
    ok(invoke("simulate", "--out", out, *base, "--save-times", "log:0.01:0.5:12", "--T", 0.5))
    before = out.read_bytes()
    # a new log grid rounds its points otherwise: not a prefix of the stored times
    usage_error(invoke("simulate", "--out", out, "--resume", "--T", 2,
                       "--save-times", "log:0.01:2:15"), "--save-times is not a continuation",
                "start with them")
    assert out.read_bytes() == before
    result = invoke("simulate", "--out", out, "--resume", "--T", 2)
    ok(result)
    assert "(complete)" in result.output
    traj = load(out)
    assert traj.complete and traj.config.T == 2.0 and traj.times[-1] == 2.0
    assert len(traj.times) == 1 + 16  # frame 0, then the continued grid
