"""A run's stops and merge events (:mod:`particles.events`): ``until_clusters``,
``max_wall`` and ``merge_events``, in memory, in files, across resumes and on
the command line."""

from __future__ import annotations

import itertools

import h5py
import numpy as np
import pytest
from clitools import invoke, ok, usage_error

from particles import simulate
from particles.config import SimulationConfig
from particles.errors import ConfigError
from particles.events import cluster_counts
from particles.io import load, read_summary
from particles.runs import run_to_file

#: circle, SA, beta = 9: clusters form by t ~ 10, then merge on the slow scale
#: (about 20 merges over 30 log-spaced frames, the last at t ~ 60).
RUN = dict(n=24, d=2, beta=9.0, integrator="dopri5", rtol=1e-8, T=2000.0,
           save_times="log:0.01:2000:30", seed=3)


@pytest.fixture(scope="module")
def full():
    """The run without stops or events, and with merge events located."""
    plain = simulate(**RUN)
    located = simulate(**RUN, merge_events=True)
    return plain, located


def frame_counts(traj) -> np.ndarray:
    return cluster_counts(traj.positions)


def assert_same_frames(a, b, frames: int | None = None):
    k = a.frames if frames is None else frames
    np.testing.assert_array_equal(a.times, b.times[:k])
    np.testing.assert_array_equal(a.steps, b.steps[:k])
    np.testing.assert_array_equal(a.positions, b.positions[:k])
    for name in a.observables:
        np.testing.assert_array_equal(a.observables[name], b.observables[name][:k])


def test_merge_events_leave_the_run_unchanged(full):
    plain, located = full
    assert_same_frames(located, plain)
    assert plain.merge_events == () and plain.stop_reason == ""
    assert len(located.merge_events) >= 10


def test_located_merges_explain_every_drop_between_frames(full):
    """Each drop of the frame counts is the chain of located merges inside its
    interval (from the earlier frame's count to the later one's), and no merge
    is located where the count does not drop."""
    plain, located = full
    counts, t = frame_counts(plain), plain.times
    merges = located.merge_events
    times = np.array([m.time for m in merges])
    assert np.all(np.diff(times) >= 0)
    seen = 0
    for k in range(1, t.size):
        inside = [m for m in merges if t[k - 1] < m.time <= t[k]]
        seen += len(inside)
        if 1 <= counts[k] < counts[k - 1]:
            assert inside, (k, counts[k - 1], counts[k])
            assert inside[0].before == counts[k - 1] and inside[-1].after == counts[k]
            for a, b in itertools.pairwise(inside):
                assert b.before == a.after  # a chain of drops, each after the last
        else:
            assert not inside, (k, inside)
        assert all(m.after < m.before for m in inside)
    assert seen == len(merges)


def test_located_merge_times_agree_with_dense_frames(full):
    """On a dense save grid the first frame with fewer clusters comes within one
    frame spacing after each located merge (to 1e-6 relative)."""
    _, located = full
    spacing = 0.02
    late = [m for m in located.merge_events if 1.0 < m.time < 10.0]
    assert late
    dense = simulate(**{**RUN, "T": 10.0, "save_times": None}, save_every=1, dt=spacing)
    counts = frame_counts(dense)
    for m in late:
        k = int(np.searchsorted(dense.times, m.time))  # first frame at or after it
        tol = 1e-6 * m.time
        assert counts[k] <= m.after or dense.times[k] - m.time < tol, m
        before = np.flatnonzero(dense.times < m.time - tol)[-1]
        assert counts[before] >= m.before, (m, dense.times[before], counts[before])


def test_until_clusters_stops_complete_at_the_first_frame_with_so_few(full):
    plain, _ = full
    counts = frame_counts(plain)
    stopped = simulate(**RUN, until_clusters=3)
    k = int(np.flatnonzero((counts >= 1) & (counts <= 3))[0])
    assert stopped.frames == k + 1 < plain.frames
    assert stopped.complete and stopped.stop_reason == "until_clusters"
    assert "stopped by until_clusters" in repr(stopped)
    assert_same_frames(stopped, plain)


def test_until_clusters_in_an_ensemble_waits_for_every_system():
    config = SimulationConfig(**{**RUN, "T": 200.0, "save_times": "log:0.01:200:20"},
                              batch=3, until_clusters=4)
    traj = simulate(**{**RUN, "T": 200.0, "save_times": "log:0.01:200:20"}, batch=3,
                    until_clusters=4)
    counts = cluster_counts(traj.positions.reshape(-1, config.n, config.d)).reshape(
        traj.frames, 3)
    assert np.all(counts[-1] <= 4) and np.all(counts[-1] >= 1)
    assert not np.any(np.all((counts[1:-1] >= 1) & (counts[1:-1] <= 4), axis=1))
    assert traj.complete and traj.stop_reason == "until_clusters"


def test_until_clusters_in_a_file_resumes_with_a_smaller_count(tmp_path, full):
    plain, located = full
    path = tmp_path / "r.h5"
    config = SimulationConfig(**RUN, until_clusters=4, merge_events=True)
    first = run_to_file(config, path)
    assert first.complete and first.stop_reason == "until_clusters"
    assert first.frames < first.frames_expected
    assert "stopped by until_clusters" in first.describe()
    with h5py.File(path) as f:
        assert f["parameters"].attrs["stop_reason"] == "until_clusters"
        assert f["parameters"].attrs["complete"] == 1
    again = run_to_file(config, path, resume=True)  # its stop still holds: as it is
    assert again.frames == first.frames
    second = run_to_file(config.replace(until_clusters=2), path, resume=True)
    assert second.complete and second.frames > first.frames
    assert read_summary(path).config.until_clusters == 2
    last = run_to_file(config.replace(until_clusters=None), path, resume=True)
    assert last.complete and last.stop_reason == "" and last.frames == plain.frames
    traj = load(path)
    assert_same_frames(traj, plain)
    assert traj.merge_events == located.merge_events  # across the resumes


def test_max_wall_pauses_and_resumes_bit_for_bit(tmp_path, full):
    plain, located = full
    path = tmp_path / "r.h5"
    config = SimulationConfig(**RUN, max_wall=1e-9, merge_events=True)
    result = run_to_file(config, path)
    assert not result.complete and result.stop_reason == "max_wall"
    assert result.frames == 2  # frame 0, then the first frame after the budget
    assert "paused by max_wall" in result.describe()
    assert not load(path).complete
    pauses = 1
    while not result.complete:
        result = run_to_file(None, path, resume=True)
        pauses += 1
    assert pauses == plain.frames - 1  # one frame per session
    traj = load(path)
    assert traj.complete and traj.stop_reason == ""
    assert_same_frames(traj, plain)
    assert traj.merge_events == located.merge_events


def test_max_wall_in_memory_returns_the_frames_so_far(full):
    plain, _ = full
    traj = simulate(**RUN, max_wall=1e-9)
    assert traj.frames == 2 and not traj.complete and traj.stop_reason == "max_wall"
    assert_same_frames(traj, plain)


def test_resume_cuts_merge_events_past_the_last_frame(tmp_path, full):
    """A kill between a batch's merges and its frames leaves events past the last
    frame: readers skip them and resuming cuts them."""
    _, located = full
    path = tmp_path / "r.h5"
    run_to_file(SimulationConfig(**RUN, merge_events=True, max_wall=1e-9), path)
    with h5py.File(path, "r+") as f:
        group = f["events/merges"]
        k = group["time"].shape[0]
        for name, value in dict(time=1e6, before=9, after=8, system=0).items():
            group[name].resize(k + 1, axis=0)
            group[name][k] = value
    assert len(load(path).merge_events) == k
    assert read_summary(path).merges == k
    config = SimulationConfig(**RUN, merge_events=True)
    run_to_file(config.replace(max_wall=1e-9), path, resume=True)
    with h5py.File(path) as f:
        assert f["events/merges/time"].shape[0] == len(load(path).merge_events)
    run_to_file(config, path, resume=True)
    assert load(path).merge_events == located.merge_events


@pytest.mark.parametrize("changes, fragment", [
    (dict(merge_events=True, noise=0.1, integrator="heun"), "merge_events"),
    (dict(merge_events=True, batch=2, integrator="em"), "merge_events"),
    (dict(until_clusters=0), "until_clusters"),
    (dict(max_wall=-1.0), "max_wall"),
    (dict(merge_events="yes"), "merge_events"),
])
def test_bad_stops_are_refused_in_one_line(changes, fragment):
    with pytest.raises(ConfigError, match=fragment) as info:
        SimulationConfig(**{**RUN, **changes})
    assert "\n" not in str(info.value)


def test_stops_are_not_written_when_unset():
    """Files of runs without stops or events keep their configuration text."""
    assert not {"until_clusters", "max_wall", "merge_events"} & set(
        SimulationConfig(**RUN).to_dict())
    assert SimulationConfig(**RUN, until_clusters=2).to_dict()["until_clusters"] == 2


def test_cli_until_clusters_and_merge_events(tmp_path):
    out = tmp_path / "r.h5"
    args = ["--n", 24, "--d", 2, "--beta", 9, "--integrator", "dopri5", "--rtol", 1e-8,
            "--T", 2000, "--save-times", "log:0.01:2000:30", "--seed", 3]
    result = invoke("simulate", "--out", out, *args, "--until-clusters", 3, "--merge-events")
    ok(result)
    assert "stopped by --until-clusters 3" in result.output
    assert "merge events located" in result.output
    assert load(out).config.merge_events
    result = invoke("simulate", "--out", out, "--resume", "--until-clusters", 2)
    ok(result)
    assert "stopped by --until-clusters 2" in result.output
    stopped = read_summary(out).frames
    ok(invoke("simulate", "--out", out, "--resume"))  # the stored stop still holds
    assert read_summary(out).frames == stopped
    # issue 38 item 6: no value meant "no stop", so the run could not go on to T
    copy = tmp_path / "to_T.h5"
    copy.write_bytes(out.read_bytes())
    result = invoke("simulate", "--out", copy, "--resume", "--until-clusters", "none")
    ok(result)
    done = read_summary(copy)
    assert done.complete and done.stop_reason == "" and done.frames == 31 > stopped
    assert done.config.until_clusters is None
    usage_error(invoke("simulate", "--out", tmp_path / "y.h5", *args, "--until-clusters",
                       "some"), "'--until-clusters'", "a number or 'none'")
    usage_error(invoke("simulate", "--out", tmp_path / "x.h5", *args, "--merge-events",
                       "--noise", 0.1, "--integrator", "heun"), "merge")
    paused = invoke("simulate", "--out", tmp_path / "p.h5", *args, "--max-wall", 1e-9)
    ok(paused)
    assert "paused by --max-wall" in paused.output and "--resume" in paused.output
    info = invoke("info", tmp_path / "p.h5")
    ok(info)
    assert "incomplete (paused by --max-wall 1e-09 s, 2 of 31 frames" in info.output
    ok(invoke("simulate", "--out", tmp_path / "p.h5", "--resume", "--max-wall", "none"))
    assert read_summary(tmp_path / "p.h5").complete  # no budget: on to T in one go
    info = invoke("info", out)
    ok(info)
    assert "complete (stopped by --until-clusters 2" in info.output
    assert f"merges       {len(load(out).merge_events)} located" in info.output
    analysed = invoke("analyze", out)
    ok(analysed)
    assert "merges located while it ran" in analysed.output


@pytest.mark.parametrize("variant", [dict(collapse_tol=0.0), dict(summation="spectral")],
                         ids=["uncollapsed", "spectral"])
def test_merge_events_on_the_other_paths(full, variant):
    """Without collapsed clusters, and with the spectral sums: the same bits with
    and without events, and the merges located at the same times to 1e-4."""
    _, located = full
    plain = simulate(**RUN, **variant)
    events = simulate(**RUN, **variant, merge_events=True)
    assert_same_frames(events, plain)
    a = np.array([m.time for m in events.merge_events])
    b = np.array([m.time for m in located.merge_events])
    assert a.size == b.size
    np.testing.assert_allclose(a, b, rtol=1e-4)


def test_cluster_counts_over_distinct_points_equal_the_analysis_counts():
    """The stops count over each system's distinct points (collapsed clusters share
    their bits): the same counts as the analysis over every token, spread included."""
    from particles.analysis import count_clusters

    rng = np.random.default_rng(4)
    frames = []
    for d, k, n in ((2, 3, 60), (3, 5, 80), (2, 40, 60)):
        base = rng.normal(size=(k, d))
        base /= np.linalg.norm(base, axis=1, keepdims=True)
        frames.append(base[rng.integers(0, k, n)])  # k points, many copies
    chain = np.arange(0.0, 2.0, 0.01)  # linked over 2 rad: spread
    theta = np.concatenate([chain, chain[rng.integers(0, 200, 100)]])
    frames.append(np.stack([np.cos(theta), np.sin(theta)], axis=1))
    for X in frames:
        expected = count_clusters(X, 0.05)
        assert cluster_counts(X[None])[0] == expected
        assert np.array_equal(cluster_counts(np.stack([X, X[::-1]])), [expected] * 2)
    assert 0 in [count_clusters(X, 0.05) for X in frames]  # a spread frame among them
