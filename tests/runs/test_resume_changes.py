"""Resuming with other integration settings (``--resume --collapse-tol``, another
integrator, other tolerances): the stored frames stay, the run goes on from its
last frame with the new settings, and the file records the segment."""

from __future__ import annotations

import hashlib
import re

import h5py
import numpy as np
import pytest
from clitools import invoke, ok, usage_error
from filetools import interrupted

from particles.config import COLLAPSE_TOL, SimulationConfig
from particles.engine import iter_frames
from particles.errors import ConfigError, ResumeMismatch
from particles.io import load
from particles.io.h5md import read_segments
from particles.models.collapse import distinct_rows
from particles.runs import run_to_file

#: S^2, SA, beta = 4: the tokens gather into clusters whose members come within
#: 1e-6 of each other from t ~ 15 on (dopri5 holds them apart: no collapse at
#: the default tolerance).
RUN = SimulationConfig(n=12, d=3, beta=4.0, integrator="dopri5", rtol=1e-8, dt=0.5,
                       save_every=1, T=20.0, seed=5)


def frame_digest(path, frames: int, observables=None) -> str:
    """SHA-256 of the first ``frames`` frames of the positions and the
    ``observables`` (default: every one) of a file."""
    h = hashlib.sha256()
    with h5py.File(path, "r") as f:
        names = ["particles/tokens/position/" + k for k in ("value", "time", "step")]
        names += [f"observables/{k}/value" for k in sorted(observables or f["observables"])]
        for name in names:
            h.update(name.encode())
            h.update(np.ascontiguousarray(f[name][:frames]).tobytes())
    return h.hexdigest()


def continued(config: SimulationConfig, path, frames: int) -> list:
    """The frames after frame ``frames - 1`` of ``path`` computed in memory by a
    fresh start of the engine there with ``config`` (positions, step, step counts)."""
    traj = load(path)
    start = frames - 1
    counts = None
    if "accepted_steps" in traj.observables:
        counts = np.stack([traj.observables[k][start:start + 1]
                           for k in ("accepted_steps", "rejected_steps")], axis=-1)
    X = traj.positions[start][None]
    return [fr for fr in iter_frames(config, X, start=start, start_step=int(traj.steps[start]),
                                     step_counts=counts)]


def assert_frames_equal(traj, frames: list, first: int):
    for fr in frames:
        k = fr.index
        assert k >= first
        assert traj.times[k] == fr.time and traj.steps[k] == fr.step
        np.testing.assert_array_equal(traj.positions[k], fr.positions[0])
        for name, value in fr.observables.items():
            np.testing.assert_array_equal(traj.observables[name][k], value[0], err_msg=name)
    assert frames[-1].index == traj.frames - 1


def test_a_larger_collapse_tol_continues_from_the_last_frame(tmp_path):
    path = interrupted(tmp_path / "r.h5", RUN, 11)
    before = frame_digest(path, 11)
    faster = RUN.replace(collapse_tol=1e-6)
    summary = run_to_file(faster, path, resume=True)
    assert summary.complete and summary.frames == 41
    assert frame_digest(path, 11) == before  # the frames before the segment: untouched
    traj = load(path)
    assert traj.config == faster  # what the next resume compares with
    (segment,) = read_segments(path)
    assert (segment.frame, segment.time) == (10, 5.0)
    assert segment.changes == {"collapse_tol": (COLLAPSE_TOL, 1e-6)}
    assert summary.segments == (segment,)
    # the continued part is the engine started afresh at frame 10 with the new
    # settings, bit for bit (dopri5 restarts its step proposal at every save time)
    assert_frames_equal(traj, continued(faster, tmp_path / "r.h5", 11), 11)
    assert distinct_rows(traj.positions[-1])[0].shape[0] < RUN.n  # it collapsed
    assert distinct_rows(load_uninterrupted(tmp_path).positions[-1])[0].shape[0] == RUN.n


def load_uninterrupted(tmp_path):
    path = tmp_path / "plain.h5"
    if not path.exists():
        run_to_file(RUN, path)
    return load(path)


def test_a_changed_run_killed_and_resumed_unchanged_is_bit_for_bit(tmp_path):
    faster = RUN.replace(collapse_tol=1e-6, rtol=1e-7)
    whole = interrupted(tmp_path / "whole.h5", RUN, 11)
    run_to_file(faster, whole, resume=True)
    cut = interrupted(tmp_path / "cut.h5", RUN, 11)
    interrupted(cut, faster, 25, resume=True)
    run_to_file(faster, cut, resume=True)  # the same changed settings: no new segment
    run_to_file(None, cut, resume=True)  # a complete file is left as it is
    a, b = load(whole), load(cut)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.steps, b.steps)
    for name in a.observables:
        np.testing.assert_array_equal(a.observables[name], b.observables[name])
    assert [s.changes for s in read_segments(cut)] == [s.changes for s in read_segments(whole)]
    assert len(read_segments(cut)) == 1


def test_the_original_settings_again_start_another_segment(tmp_path):
    path = interrupted(tmp_path / "r.h5", RUN, 11)
    faster = RUN.replace(collapse_tol=1e-6)
    interrupted(path, faster, 21, resume=True)
    run_to_file(RUN, path, resume=True)
    first, second = read_segments(path)
    assert (first.frame, second.frame) == (10, 20)
    assert second.changes == {"collapse_tol": (1e-6, COLLAPSE_TOL)}
    assert load(path).config == RUN


def test_switching_to_fixed_steps_equals_a_fresh_run_from_the_last_frame(tmp_path):
    """dopri5 to rk4 on the same save grid (dt 0.125 four times: 0.5, exactly):
    the rk4 part is a fresh rk4 run from the last stored frame, bit for bit, its
    save times shifted (exactly: multiples of 0.5); the step counter goes on, and
    the adaptive step counts stay at what dopri5 took."""
    path = interrupted(tmp_path / "r.h5", RUN, 11)
    fixed = RUN.replace(integrator="rk4", dt=0.125, save_every=4, max_steps=10**6)
    run_to_file(fixed, path, resume=True)
    traj = load(path)
    (segment,) = read_segments(path)
    assert set(segment.changes) == {"integrator", "dt", "save_every", "max_steps"}
    start = traj.positions[10]
    fresh = tmp_path / "fresh.h5"
    run_to_file(fixed.replace(T=RUN.T - 5.0, init="array", max_steps=10**6), fresh, x0=start)
    other = load(fresh)
    np.testing.assert_array_equal(traj.positions[10:], other.positions)
    np.testing.assert_array_equal(traj.times[10:] - 5.0, other.times)
    np.testing.assert_array_equal(traj.steps[10:] - traj.steps[10], other.steps)
    assert np.all(np.diff(traj.steps) > 0)
    for name in other.observables:
        np.testing.assert_array_equal(traj.observables[name][10:], other.observables[name])
    held = traj.observables["accepted_steps"]
    assert held[10] > 0 and np.all(held[10:] == held[10])


def test_switching_to_adaptive_steps_gains_the_step_counts(tmp_path):
    fixed = RUN.replace(integrator="rk4", dt=0.125, save_every=4)
    path = interrupted(tmp_path / "r.h5", fixed, 11)
    names = tuple(load(path).observables)
    assert "accepted_steps" not in names
    before = frame_digest(path, 11, names)
    run_to_file(RUN, path, resume=True)
    assert frame_digest(path, 11, names) == before
    traj = load(path)
    counts = traj.observables["accepted_steps"]
    assert np.all(counts[:11] == 0) and np.all(np.diff(counts[10:]) > 0)
    assert np.all(traj.observables["rejected_steps"][:11] == 0)
    assert np.all(np.diff(traj.steps) > 0)  # frames counted on from the fixed steps
    assert_frames_equal(traj, continued(RUN, path, 11), 11)
    with h5py.File(path) as f:  # the new elements share the frames' clock
        assert f["observables/accepted_steps/time"] == f["particles/tokens/position/time"]


@pytest.mark.parametrize("changes, fragment", [
    (dict(beta=5.0), "beta=5.0 (file: 4.0)"),
    (dict(dt=0.25), "only with a switch between a fixed-step and an adaptive integrator"),
    (dict(integrator="rk4", dt=0.3), "the save times would move"),
    (dict(integrator="em", dt=0.125, save_every=4), "a stochastic integrator"),
])
def test_changes_a_resume_cannot_make_are_refused(tmp_path, changes, fragment):
    path = interrupted(tmp_path / "r.h5", RUN, 5)
    before = path.read_bytes()
    with pytest.raises(ResumeMismatch, match=re.escape(fragment)) as err:
        run_to_file(RUN.replace(**changes), path, resume=True)
    assert set(err.value.differences) <= set(changes)
    assert path.read_bytes() == before


def test_a_run_with_noise_keeps_its_integrator_and_collapse_tol(tmp_path):
    noisy = SimulationConfig(n=6, d=3, beta=1.0, noise=0.1, dt=0.05, T=0.5, save_every=2,
                             seed=1)
    path = interrupted(tmp_path / "n.h5", noisy, 3)
    with pytest.raises(ResumeMismatch, match="a stochastic integrator") as err:
        run_to_file(noisy.replace(integrator="em"), path, resume=True)
    assert err.value.differences == {"integrator": ("em", "heun")}
    with pytest.raises(ConfigError, match="collapse_tol must be 0 or the default"):
        run_to_file(noisy.replace(collapse_tol=1e-6), path, resume=True)
    out = invoke("simulate", "--out", path, "--resume", "--collapse-tol", "1e-6")
    usage_error(out, "--collapse-tol", "noise")
    usage_error(invoke("simulate", "--out", path, "--resume", "--integrator", "em"),
                "--integrator 'em' (stored 'heun')", "stochastic")


def test_a_complete_file_is_left_as_it_is(tmp_path):
    path = tmp_path / "done.h5"
    run_to_file(RUN.replace(T=2.0), path)
    before = path.read_bytes()
    summary = run_to_file(RUN.replace(T=2.0, collapse_tol=1e-6), path, resume=True)
    assert summary.complete and summary.segments == ()
    assert path.read_bytes() == before


def test_cli_resume_with_a_larger_collapse_tol_and_info(tmp_path):
    out = tmp_path / "r.h5"
    args = ["--n", 12, "--d", 3, "--beta", 4, "--integrator", "dopri5", "--rtol", "1e-8",
            "--dt", 0.5, "--save-every", 1, "--T", 20, "--seed", 5]
    interrupted(out, RUN, 11)
    result = invoke("simulate", "--out", out, *args, "--resume", "--collapse-tol", "1e-6")
    ok(result)
    assert "(complete)" in result.output
    ok(again := invoke("simulate", "--out", out, "--resume", "--collapse-tol", "1e-6"))
    assert len(read_segments(out)) == 1 and "(complete)" in again.output
    shown = invoke("info", out)
    ok(shown)
    assert "segments     2 (" in shown.output
    assert "  0  frames 0 .. 10: the run's first settings" in shown.output
    assert "  1  frames 11 .. 40 (from t = 5, " in shown.output
    assert "--collapse-tol 8.88178e-16 -> 1e-06" in shown.output
    usage_error(invoke("simulate", "--out", out, *args, "--resume", "--dt", 0.25),
                "--dt 0.25 (stored 0.5)", "switch between a fixed-step and an adaptive")
