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
    usage_error(invoke("simulate", "--out", explicit, "--resume", "--T", 0.3),
                "explicit save_times")
    usage_error(invoke("simulate", "--out", out, "--resume", "--T", 0.05), "not shorten")
    assert out.read_bytes() == before
    assert load(out).complete and load(out).config.T == 0.1
