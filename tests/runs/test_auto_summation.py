"""``summation="auto"`` (the default) in files: the choice is recorded, and a
resumed or extended file keeps the summation it was made with."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from clitools import invoke, ok

from particles.config import SimulationConfig
from particles.errors import RunInterrupted
from particles.io import load, read_summary
from particles.runs import run_to_file

#: a circle run that auto now sums by the series (n = AUTO_MIN_N), four Euler steps.
RUN = dict(n=1024, d=2, beta=1.0, integrator="euler", dt=0.1, T=0.4, save_every=1, seed=3)


def assert_same_frames(a, b):
    np.testing.assert_array_equal(a.times, b.times)
    np.testing.assert_array_equal(a.positions, b.positions)
    for name in a.observables:
        np.testing.assert_array_equal(a.observables[name], b.observables[name], err_msg=name)


@pytest.fixture(scope="module")
def direct_reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("auto") / "direct.h5"
    run_to_file(SimulationConfig(**RUN, summation="direct"), path)
    return load(path)


def test_a_resumed_direct_file_stays_direct_where_auto_would_choose_the_series(
        tmp_path, direct_reference):
    assert SimulationConfig(**RUN).summation == "spectral"  # the default, given again
    path = tmp_path / "r.h5"
    calls = []
    with pytest.raises(RunInterrupted):
        run_to_file(SimulationConfig(**RUN, summation="direct"), path, flush_interval=0.0,
                    should_stop=lambda: calls.append(1) or len(calls) == 2)
    assert not read_summary(path).complete
    run_to_file(SimulationConfig(**RUN), path, resume=True)
    traj = load(path)
    assert traj.complete and traj.config.summation == "direct"
    assert_same_frames(traj, direct_reference)
    assert not read_summary(path).summation_auto


def test_an_extended_direct_file_stays_direct(tmp_path, direct_reference):
    assert SimulationConfig(**RUN).summation == "spectral"
    path = tmp_path / "e.h5"
    run_to_file(SimulationConfig(**{**RUN, "T": 0.2}, summation="direct"), path)
    run_to_file(SimulationConfig(**RUN), path, resume=True)  # auto, extended to T = 0.4
    traj = load(path)
    assert traj.complete and traj.config.summation == "direct"
    assert_same_frames(traj, direct_reference)


def test_a_new_run_records_the_choice_of_auto_and_info_shows_it(tmp_path):
    path = tmp_path / "a.h5"
    run_to_file(SimulationConfig(**RUN), path)
    s = read_summary(path)
    assert s.config.summation == "spectral" and s.summation_auto
    with h5py.File(path) as f:
        assert f["parameters"].attrs["summation_auto"] == 1
    info = invoke("info", path)
    ok(info)
    assert "spectral (chosen by --summation auto)" in info.output
    explicit = tmp_path / "s.h5"
    run_to_file(SimulationConfig(**RUN, summation="spectral"), explicit)
    assert not read_summary(explicit).summation_auto
    with h5py.File(explicit) as f:
        assert "summation_auto" not in f["parameters"].attrs


def test_cli_resume_with_summation_auto_keeps_the_recorded_direct(tmp_path, direct_reference):
    out = tmp_path / "c.h5"
    args = ["--n", 1024, "--d", 2, "--beta", 1, "--integrator", "euler", "--dt", 0.1,
            "--save-every", 1, "--seed", 3, "--out", out]
    ok(invoke("simulate", *args, "--T", 0.2, "--summation", "direct"))
    ok(invoke("simulate", *args, "--T", 0.4, "--summation", "auto", "--resume"))
    traj = load(out)
    assert traj.config.summation == "direct"
    assert_same_frames(traj, direct_reference)
