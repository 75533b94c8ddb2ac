"""``positions="none"|"final"|"all"``: runs that keep the observables without every frame."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from clitools import invoke, ok, usage_error

import particles
from particles.config import SimulationConfig
from particles.errors import RunInterrupted
from particles.io import load, read_summary
from particles.runs import run_to_file

CONFIG = SimulationConfig(n=6, d=3, beta=1.0, T=0.2, dt=0.01, save_every=2, seed=5,
                          integrator="euler", batch=2)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("all") / "all.h5"
    run_to_file(CONFIG, path)
    return load(path)


def test_default_is_all_and_not_written_to_the_stored_config():
    assert CONFIG.positions == "all"
    assert "positions" not in CONFIG.to_dict()
    final = CONFIG.replace(positions="final")
    assert SimulationConfig.from_dict(final.to_dict()) == final


def test_unknown_positions_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"^positions must be one of 'all', 'final', 'none'"):
        CONFIG.replace(positions="some")


def test_simulate_in_memory_keeps_only_what_is_asked(reference):
    for kind, frames in (("none", 0), ("final", 1)):
        traj = particles.simulate(6, 3, 1.0, T=0.2, dt=0.01, save_every=2, seed=5,
                                  integrator="euler", batch=2, positions=kind)
        assert traj.positions.shape == (frames, 2, 6, 3)
        np.testing.assert_array_equal(traj.times, reference.times)
        for name, v in reference.observables.items():
            np.testing.assert_array_equal(traj.observables[name], v)
        if frames:
            np.testing.assert_array_equal(traj.final, reference.final)
        else:
            with pytest.raises(ValueError, match=r"kept no positions \(positions='none'\)"):
                traj.final  # noqa: B018  (the property raises)


@pytest.mark.parametrize("kind", ["none", "final"])
def test_file_holds_observables_and_the_last_frame_only(tmp_path, reference, kind):
    path = tmp_path / "r.h5"
    run_to_file(CONFIG.replace(positions=kind), path, flush_interval=0.0)
    with h5py.File(path) as f:
        assert f["particles/tokens/position/value"].shape == (1, 2, 6, 3)
        assert f["observables/energy/time"].shape == reference.times.shape
    traj = load(path)
    assert traj.complete and traj.config.positions == kind
    assert traj.positions.shape == ((1 if kind == "final" else 0), 2, 6, 3)
    np.testing.assert_array_equal(traj.times, reference.times)
    np.testing.assert_array_equal(traj.steps, reference.steps)
    for name, v in reference.observables.items():
        np.testing.assert_array_equal(traj.observables[name], v)
    s = read_summary(path)
    assert s.frames == reference.frames and s.time == reference.times[-1]
    np.testing.assert_array_equal(s.final, reference.positions[-1])


def test_interrupted_run_without_positions_resumes_bit_identically(tmp_path, reference):
    path = tmp_path / "r.h5"
    calls = []
    with pytest.raises(RunInterrupted):
        run_to_file(CONFIG.replace(positions="none"), path, flush_interval=0.0,
                    should_stop=lambda: calls.append(1) or len(calls) == 4)
    assert read_summary(path).frames == 4
    run_to_file(None, path, resume=True)
    traj = load(path)
    assert traj.complete
    np.testing.assert_array_equal(traj.observables["energy"], reference.observables["energy"])
    np.testing.assert_array_equal(read_summary(path).final, reference.positions[-1])


def test_cli_positions_option_info_analyze_and_plot(tmp_path):
    out = tmp_path / "r.h5"
    ok(invoke("simulate", "--out", out, "--n", 6, "--d", 3, "--beta", 1, "--T", 0.2,
              "--save-every", 2, "--seed", 5, "--integrator", "euler", "--positions", "none"))
    assert load(out).positions.shape == (0, 6, 3)
    info = invoke("info", out)
    ok(info)
    assert "positions" in info.output and "none" in info.output
    usage_error(invoke("analyze", out), "positions='none'", "positions='all'")
    usage_error(invoke("plot", out, "--kind", "energy"), "positions='none'")
    usage_error(invoke("simulate", "--out", tmp_path / "x.h5", "--n", 6, "--d", 3, "--beta", 1,
                       "--positions", "some"), "--positions")


def test_simulate_without_positions_does_not_hold_every_frame():
    import tracemalloc

    kwargs = dict(T=1.0, dt=0.01, save_every=1, seed=1, integrator="euler", batch=256)
    frame_bytes = 256 * 16 * 3 * 8  # the observables take about 10 frames' worth
    peaks = {}
    for kind in ("all", "none"):
        particles.simulate(16, 3, 1.0, **{**kwargs, "T": 0.02}, positions=kind)  # compile
        tracemalloc.start()
        traj = particles.simulate(16, 3, 1.0, **kwargs, positions=kind)
        peaks[kind] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert traj.frames == 101
    assert peaks["all"] > 100 * frame_bytes
    assert peaks["none"] < 40 * frame_bytes
