"""Merge events and ``until_clusters`` of ensembles (issue 41 item 4): merges
located system by system, each at the times a run of that system alone
locates, and every system's first passage to the stop's cluster count."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from clitools import invoke, ok

from particles import simulate
from particles.config import SimulationConfig
from particles.engine.loop import one_system
from particles.events import cluster_counts
from particles.fields.weights import draw_layer
from particles.io import load, read_summary
from particles.runs import run_to_file
from particles.runs.initial import initial_tokens
from particles.trajectory import Passage, first_passages

#: circle, SA, beta = 9, fixed steps: 16 tokens cluster by t ~ 1 and merge
#: down to 3-4 clusters by t ~ 10 (about 10 located merges per system).
RUN = dict(n=16, d=2, beta=9.0, integrator="rk4", dt=0.05, T=50.0,
           save_times="log:0.1:50:15", seed=3)
B = 3


@pytest.fixture(scope="module")
def ensemble():
    """The ensemble without events, and with merge events located."""
    return simulate(**RUN, batch=B), simulate(**RUN, batch=B, merge_events=True)


def counts_of(traj) -> np.ndarray:
    """Cluster counts of an ensemble's frames, (frames, batch)."""
    X = traj.positions
    return cluster_counts(X.reshape(-1, *X.shape[-2:])).reshape(X.shape[0], -1)


def rows(merges) -> list[tuple]:
    return [(m.time, m.before, m.after) for m in merges]


def test_each_systems_merges_are_those_of_a_run_of_it_alone(ensemble):
    """System b's located merges are, bit for bit, those a single-system run from
    its initial tokens locates; the ensemble's frames are untouched."""
    plain, located = ensemble
    np.testing.assert_array_equal(located.positions, plain.positions)
    X0 = initial_tokens(SimulationConfig(**RUN, batch=B).resolved())
    merges = located.merge_events
    assert [m.time for m in merges] == sorted(m.time for m in merges)
    assert {m.system for m in merges} == set(range(B))
    for b in range(B):
        alone = simulate(**RUN, x0=X0[b], merge_events=True)
        mine = [m for m in merges if m.system == b]
        assert len(mine) >= 5
        assert rows(mine) == rows(alone.merge_events)


@pytest.mark.parallel
def test_merges_on_every_thread_are_the_same(ensemble):
    """With every thread the ensemble runs its systems in parallel and a located
    system the layout of a run of it alone: the same merges, bit for bit."""
    _, located = ensemble
    assert simulate(**RUN, batch=B, merge_events=True).merge_events == located.merge_events


def test_only_the_systems_whose_count_dropped_are_located(ensemble):
    """Every drop of a system's frame counts is its chain of merges in that
    interval, and no merge lies where its count did not drop."""
    plain, located = ensemble
    counts, t = counts_of(plain), plain.times
    for b in range(B):
        mine = [m for m in located.merge_events if m.system == b]
        for k in range(1, t.size):
            inside = [m for m in mine if t[k - 1] < m.time <= t[k]]
            if 1 <= counts[k, b] < counts[k - 1, b]:
                assert inside[0].before == counts[k - 1, b]
                assert inside[-1].after == counts[k, b]
            else:
                assert not inside, (b, k, inside)


def test_an_adaptive_ensemble_locates_each_system_with_its_own_step():
    """dopri5 carries a step and counters per system: each system is located with
    its own (the times equal those of runs of it alone)."""
    run = dict(RUN, integrator="dopri5", rtol=1e-5, save_times="log:0.1:50:12", T=50.0)
    located = simulate(**run, batch=2, merge_events=True)
    X0 = initial_tokens(SimulationConfig(**run, batch=2).resolved())
    for b in range(2):
        alone = simulate(**run, x0=X0[b], merge_events=True)
        mine = [m for m in located.merge_events if m.system == b]
        assert mine and rows(mine) == rows(alone.merge_events)


#: S^2 with Gaussian Q, K drawn per system: the located system needs its own weights.
OWN = dict(n=16, d=3, beta=4.0, integrator="rk4", dt=0.05, T=50.0,
           save_times="log:0.1:50:15", seed=5, weights="gaussian",
           weight_draws="independent")


def test_systems_with_their_own_weights_are_located_with_them():
    """Each system of an ensemble with per-system weights locates what a run of it
    alone with those matrices given locates."""
    located = simulate(**OWN, batch=B, merge_events=True)
    config = SimulationConfig(**OWN, batch=B).resolved()
    X0 = initial_tokens(config)
    Q, K, V = draw_layer(config, 0)
    alone_run = {**OWN, "weights": "given", "weight_draws": "shared"}
    for b in range(B):
        alone = simulate(**alone_run, x0=X0[b], Q=Q[b, 0], K=K[b, 0], V=V[b, 0],
                         merge_events=True)
        mine = [m for m in located.merge_events if m.system == b]
        assert mine and rows(mine) == rows(alone.merge_events)


def test_layers_of_own_weights_narrow_to_the_located_system():
    """Weights redrawn per layer and system: system 0's merges are those of a run
    of one system with the same seed (its draws are system 0's)."""
    run = dict(OWN, layer_time=2.0)
    located = simulate(**run, batch=2, merge_events=True)
    alone = simulate(**run, batch=1, merge_events=True)
    mine = [m for m in located.merge_events if m.system == 0]
    assert mine and rows(mine) == rows(alone.merge_events)


def test_one_system_narrows_the_per_system_entries_only():
    """The entries the selection picks per system keep a batch axis of one (that
    system's); shared entries, and everything without a selection, stay."""
    Q = np.arange(3 * 2 * 2, dtype=float).reshape(3, 2, 2)
    masses = np.ones(3)  # as long as the batch, but shared: not narrowed

    def select(p, b):
        return (p[0][b], *p[1:])

    steps = dict(params=(Q, masses, 2.0), keys=np.arange(6, dtype=np.uint64).reshape(3, 2),
                 layer_params=lambda layer: (Q + layer, masses, 2.0), dt=0.1)
    one = one_system(steps, select, 2)
    np.testing.assert_array_equal(one["params"][0], Q[2:3])
    assert one["params"][1] is masses and one["params"][2] == 2.0
    np.testing.assert_array_equal(one["layer_params"](4)[0], Q[2:3] + 4)
    np.testing.assert_array_equal(one["keys"], steps["keys"][2:3])
    assert one["dt"] == 0.1 and steps["params"][0] is Q  # the run's own untouched
    shared = one_system(steps, None, 1)
    assert shared["params"] is steps["params"] and shared["layer_params"] is steps[
        "layer_params"]


def test_noise_is_still_refused_for_ensembles():
    for changes in (dict(noise=0.1, integrator="heun"), dict(integrator="em", noise=0.0)):
        with pytest.raises(ValueError, match="merge_events"):
            SimulationConfig(**{**RUN, **changes}, batch=B, merge_events=True)


def first_frames(counts: np.ndarray, until: int) -> np.ndarray:
    """Per system, the first frame with between 1 and ``until`` clusters."""
    within = (counts >= 1) & (counts <= until)
    return np.array([int(np.flatnonzero(within[:, b])[0]) for b in range(counts.shape[1])])


def test_until_clusters_records_each_systems_first_passage(ensemble):
    """The run stops when every system has at most K clusters; each system's
    passage is at its first frame there, timed by the merge that took it there
    (with merge events) or by that frame."""
    plain, located = ensemble
    counts = counts_of(plain)
    until = 4
    frames = first_frames(counts, until)
    stop = int(np.flatnonzero(np.all((counts >= 1) & (counts <= until), axis=1))[0])
    by_frames = simulate(**RUN, batch=B, until_clusters=until)
    exact = simulate(**RUN, batch=B, until_clusters=until, merge_events=True)
    for traj in (by_frames, exact):
        assert traj.frames == stop + 1 and traj.stop_reason == "until_clusters"
        assert sorted(p.system for p in traj.passages) == list(range(B))
        assert {p.until for p in traj.passages} == {until}
        np.testing.assert_array_equal(traj.positions, plain.positions[:stop + 1])
    assert len(set(frames)) > 1  # the systems got there at different frames
    for p in by_frames.passages:
        assert p.frame == frames[p.system] and p.time == plain.times[p.frame]
    for p in exact.passages:
        merge = next(m for m in located.merge_events
                     if m.system == p.system and m.after <= until)
        assert p.frame == frames[p.system] and p.time == merge.time
        assert plain.times[p.frame - 1] < p.time <= plain.times[p.frame]


def test_passages_in_a_file_survive_resumes_once_each(tmp_path, ensemble):
    """Passages are stored, read back, and written once per system and value of
    until_clusters across resumes: a resume with a smaller value adds that
    value's, NaN for the systems already there at the resume point (when is
    not recorded), timed for the others."""
    plain, _ = ensemble
    counts = counts_of(plain)
    path = tmp_path / "r.h5"
    config = SimulationConfig(**RUN, batch=B, until_clusters=6, merge_events=True)
    first = run_to_file(config, path)
    stored = load(path)
    assert stored.passages == simulate(**RUN, batch=B, until_clusters=6,
                                       merge_events=True).passages
    assert first.passages == read_summary(path).passages == B
    assert run_to_file(config, path, resume=True).frames == first.frames  # still holds
    run_to_file(config.replace(until_clusters=4), path, resume=True)
    traj = load(path)
    assert traj.passages[:B] == stored.passages
    new = traj.passages[B:]
    assert sorted(p.system for p in new) == list(range(B)) and {p.until for p in new} == {4}
    resumed_at = first.frames - 1
    assert {bool(np.isnan(p.time)) for p in new} == {True, False}  # both kinds here
    for p in new:
        if counts[resumed_at, p.system] <= 4:
            assert p.frame == resumed_at and np.isnan(p.time)
        else:
            assert p.frame == first_frames(counts, 4)[p.system] > resumed_at
            assert not np.isnan(p.time)
    assert traj.merge_events == simulate(**RUN, batch=B, merge_events=True).merge_events[
        :len(traj.merge_events)]
    with h5py.File(path) as f:
        assert f["events/passages/system"].shape == (2 * B,)


def test_passages_past_the_last_frame_are_skipped_and_cut(tmp_path):
    """A kill between a batch's passages and its frames leaves rows past the
    last frame: readers skip them and resuming cuts them."""
    path = tmp_path / "r.h5"
    config = SimulationConfig(**RUN, batch=B, until_clusters=4)
    run_to_file(config.replace(max_wall=1e-9), path)
    with h5py.File(path, "r+") as f:
        group = f["events/passages"]
        k = group["time"].shape[0]
        for name, value in dict(system=0, until=4, frame=99, time=1.0).items():
            group[name].resize(k + 1, axis=0)
            group[name][k] = value
    assert len(load(path).passages) == k == read_summary(path).passages
    run_to_file(config, path, resume=True)
    passages = load(path).passages
    assert sorted(p.system for p in passages) == list(range(B))
    assert all(p.frame < 99 for p in passages)


def test_first_passages_keep_the_first_record_of_each_system_and_value():
    a, b = Passage(0, 4, 3, 1.5), Passage(0, 4, 5, np.nan)
    seen = {(1, 4)}
    assert first_passages([a, b, Passage(1, 4, 2, 0.5), Passage(0, 2, 6, 3.0)], seen) == [
        a, Passage(0, 2, 6, 3.0)]
    assert seen == {(0, 4), (1, 4), (0, 2)}


def test_cli_ensemble_events_in_info_and_analyze(tmp_path):
    out = tmp_path / "e.h5"
    args = ["--n", 16, "--d", 2, "--beta", 9, "--dt", 0.05, "--T", 50,
            "--save-times", "log:0.1:50:15", "--seed", 3, "--batch", B]
    result = invoke("simulate", "--out", out, *args, "--merge-events", "--until-clusters", 5)
    ok(result)
    assert "merge events located" in result.output
    assert f"{B} first passages recorded" in result.output
    info = invoke("info", out)
    ok(info)
    assert f"passages     {B} recorded" in info.output
    analysed = invoke("analyze", out)
    ok(analysed)
    assert "merges located while it ran" in analysed.output and "system, time" in analysed.output
    assert f"first passages to until_clusters ({B})" in analysed.output
