"""Located merges and stops at a cluster count in sweeps (issue 41, item 4):
``--merge-events`` locates every system's merges as ``simulate --batch
--merge-events`` does and stores them in ``/sweep/merges``; the first-merge
and single-cluster times and their Kaplan-Meier quantiles then come from the
located events (within the save grid's bracket of the frame-based ones), the
rest of the file unchanged bit for bit; a killed sweep resumes to the
uninterrupted file; ``--until-clusters K`` stops each grid point as its
ensemble run stops."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from clitools import invoke, ok, usage_error
from test_sweep import assert_same, contents

from particles.analysis.ensemble import ensemble_stats
from particles.analysis.merges import located_timescales, timescales
from particles.engine import collect, iter_frames
from particles.errors import RunInterrupted, SweepError
from particles.io.sweep import read_contents, read_merges
from particles.seeds import sweep_noise_keys
from particles.sweep import SweepSpec, load, run_sweep
from particles.sweep.tasks import system_positions
from particles.trajectory import Merge, Passage

#: circle, beta 9 (plateaus, merges after them by T) and 4 (one cluster soon):
#: the dopri5 kernels of tests/sweep/test_sweep_counts.py.
BASE = dict(n=16, d=2, integrator="dopri5", rtol=1e-6, T=1e4, save_times="log:0.01:1e4:36")
SPEC = SweepSpec(base=BASE, axes=(("beta", (9.0, 4.0)),), runs=12, seed=2, merge_events=True)
ARGS = ("--n 16 --d 2 --integrator dopri5 --rtol 1e-6 --T 1e4 --save-times log:0.01:1e4:36 "
        "--beta 9,4 --runs 12 --seed 2 --processes 1").split()

#: the statistics located merges change.
LOCATED = ("stats/first_merge_time", "stats/single_cluster_time",
           "stats/first_merge_censored")


@pytest.fixture(scope="module")
def located(tmp_path_factory):
    """SPEC in tasks of 5 systems."""
    path = tmp_path_factory.mktemp("merges") / "located.h5"
    run_sweep(SPEC, path, chunk=5)
    return path


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """SPEC without merge events, one task per grid point."""
    path = tmp_path_factory.mktemp("merges") / "plain.h5"
    run_sweep(SPEC.replace(merge_events=False), path, chunk=SPEC.runs)
    return path


def ensemble(spec: SweepSpec, point: int, **changes) -> tuple:
    """The systems of a grid point as one ensemble run of the engine (their
    initial positions and keys), its frames collected."""
    spec = spec.resolved()
    config = spec.config(point)
    x0 = system_positions(config, spec.seed, point, 0, spec.runs)
    config = config.replace(batch=spec.runs, init="array", **changes)
    keys = sweep_noise_keys(spec.seed, point, range(spec.runs))
    frames = list(iter_frames(config, x0, keys=keys))
    counts = np.stack([f.clusters for f in frames], axis=1)  # (runs, frames)
    return collect(config, frames, complete=True), counts


def table(merges: tuple[Merge, ...]) -> dict[str, np.ndarray]:
    """Merges as a sweep file's columns of one point, in its order (system, time)."""
    columns = Merge.columns(sorted(merges, key=lambda m: (m.system, m.time)))
    return {k: columns[k] for k in ("system", "time", "before", "after")}


def grid_quantiles(times: np.ndarray, counts: np.ndarray, first: np.ndarray,
                   levels: np.ndarray) -> np.ndarray:
    """The sweep file's first-merge quantiles (inf: not reached) of per-system times."""
    formation, _ = timescales(times, counts)
    es = ensemble_stats(times, counts.T, formation, first, levels=levels)
    q = es.first_merge_quantiles
    return np.where(np.isnan(q), np.inf, q) if es.first_merge.systems else q


def test_a_grid_point_locates_the_merges_of_its_ensemble_run(located):
    """Every system's merges are those `simulate --batch B --merge-events` locates
    for the same systems (initial positions and keys), bit for bit, and the
    statistics follow from them."""
    data = read_contents(located)
    merges, systems = data["merges"], data["systems"]
    ds = load(located)
    times = ds.time.values
    for p in range(SPEC.points):
        traj, counts = ensemble(SPEC, p)
        assert len(traj.merge_events) > SPEC.runs  # several per system
        rows = merges["point"] == p
        for k, v in table(traj.merge_events).items():
            assert merges[k][rows].tobytes() == v.tobytes(), k
        assert np.array_equal(systems["cluster_count"][p], counts)
        m = table(traj.merge_events)
        first, single = located_timescales(times, counts, systems["first_merge_time"][p],
                                           m["system"], m["time"], m["after"])
        stats = ds.isel(beta=p)
        assert stats.single_cluster_time.values.tobytes() == single.tobytes()
        expected = grid_quantiles(times, counts, first, ds["quantile"].values)
        assert stats.first_merge_time.values.tobytes() == expected.tobytes()
    assert ds.attrs["merge_times"] == "located"
    assert ds.first_merge_time.attrs["source"] == "located"


def test_merge_events_change_nothing_else(located, plain):
    """The frames, per-system results and statistics of a sweep with merge events
    are those without, bit for bit, but for the located times; a sweep without
    them writes the file of before (format 2, no table, no source attribute)."""
    a, b = contents(located), contents(plain)
    assert sorted(k for k in a if k.startswith("merges")) == [
        "merges/after", "merges/before", "merges/point", "merges/system", "merges/time"]
    assert not [k for k in b if k.startswith("merges")]
    same = [k for k in b if k not in LOCATED and k not in ("attrs", "configs")]
    assert_same({k: a[k] for k in same}, {k: b[k] for k in same})
    with h5py.File(plain, "r") as f:
        assert f["sweep"].attrs["format"] == 2
        assert "source" not in f["sweep/stats/first_merge_time"].attrs
        spec = json.loads(f["parameters"].attrs["sweep"])
        assert "merge_events" not in spec and "until_clusters" not in spec
        assert "merges" not in f["sweep"]
        assert "merge_events" not in json.loads(f["sweep/configs"][0])
    with h5py.File(located, "r") as f:
        assert f["sweep"].attrs["format"] == 3
        assert json.loads(f["sweep/configs"][0])["merge_events"]
    assert read_merges(h5py.File(plain, "r")) is None
    ds = load(plain)
    assert ds.attrs["merge_times"] == "save_grid" and not ds.first_merge_time.attrs


def test_located_first_merges_lie_in_the_save_grid_bracket(located, plain):
    """The issue's acceptance: each system's located first merge lies in the save
    grid's bracket (t_{e-1}, t_e] of its frame-based one, and so do the
    Kaplan-Meier quantiles (the median at beta 9 among them)."""
    data = read_contents(located)
    merges, systems = data["merges"], data["systems"]
    times = data["header"].times
    ds, grid = load(located), load(plain)
    seen = 0
    for p in range(SPEC.points):
        counts = systems["cluster_count"][p]
        rows = merges["point"] == p
        frame_based = systems["first_merge_time"][p]
        first, _ = located_timescales(times, counts, frame_based, merges["system"][rows],
                                      merges["time"][rows], merges["after"][rows])
        for t_grid, t_loc, c in zip(frame_based, first, counts, strict=True):
            if not np.isfinite(t_grid):
                assert np.isnan(t_loc)
                continue
            e = int(np.searchsorted(times, t_grid))
            if c[e] < c[e - 1] and c[e] >= 1:  # the formation plateau ends in a merge
                assert times[e - 1] < t_loc <= t_grid
                seen += 1
        q_loc = ds.first_merge_time.values[p]
        q_grid = grid.first_merge_time.values[p]
        assert np.array_equal(np.isfinite(q_loc), np.isfinite(q_grid))
        for a, b in zip(q_loc[np.isfinite(q_loc)], q_grid[np.isfinite(q_grid)], strict=True):
            e = int(np.searchsorted(times, b))
            assert times[e - 1] < a <= b
    assert seen >= 8
    median = list(ds["quantile"].values).index(0.5)
    assert np.isfinite(ds.first_merge_time.values[0, median])  # beta 9
    assert ds.first_merge_time.values[0, median] < grid.first_merge_time.values[0, median]


def _orphans(path) -> None:
    """What a kill between a task's merges and its done flags leaves: rows of a
    system not done (and a sorted copy of the table a kill while sorting left)."""
    with h5py.File(path, "r+") as f:
        g = f["sweep"]
        undone = np.argwhere(g["done"][()] == 0)[0]
        table = g["merges"]
        for k, v in (("point", undone[0]), ("system", undone[1]), ("time", 1.5),
                     ("before", 3), ("after", 2)):
            table[k].resize((table[k].shape[0] + 1,))
            table[k][-1] = v
        g.copy(table, "merges.sorted")


def test_a_killed_sweep_resumes_to_the_uninterrupted_file(located, tmp_path):
    """Stopped after two tasks, with the leftovers of a kill at the worst moment:
    `particles sweep --merge-events --resume` (other tasks) gives the
    uninterrupted file; and so does a resume of one killed while its finished
    table was being sorted."""
    path = tmp_path / "killed.h5"
    polled = []
    with pytest.raises(RunInterrupted, match="holds 6 of 24 systems"):
        run_sweep(SPEC, path, chunk=3, should_stop=lambda: polled.append(1) or len(polled) >= 2)
    _orphans(path)
    usage_error(invoke("sweep", *ARGS, "--resume", "--out", path),
                "these differ from it: merge_events None (stored True)")
    result = invoke("sweep", *ARGS, "--merge-events", "--resume", "--chunk", 7, "--out", path)
    ok(result)
    assert "complete; 3 tasks (18 systems) run" in result.output
    assert_same(contents(path), contents(located))
    result = invoke("info", path)
    ok(result)
    assert "merges located between save times" in result.output
    # killed after the sorted copy replaced the table, before its name was moved
    with h5py.File(path, "r+") as f:
        f["parameters"].attrs["complete"] = np.int8(0)
        f["sweep"].move("merges", "merges.sorted")
    assert run_sweep(None, path, resume=True).complete
    assert_same(contents(path), contents(located))


def test_until_clusters_stops_each_point_as_its_ensemble(tmp_path):
    """Each grid point runs until every one of its systems has at most K clusters,
    as the ensemble run with --until-clusters K: the same frames, passages and
    merges; its statistics end at the stop (NaN after), the time scales are
    censored there (not at T) and each system's passage is a statistic."""
    spec = SPEC.replace(until_clusters=3)
    path = tmp_path / "until.h5"
    run_sweep(spec, path)
    data = read_contents(path)
    ds = load(path)
    assert ds.attrs["until_clusters"] == 3
    times = ds.time.values
    for p in range(spec.points):
        traj, counts = ensemble(spec, p, until_clusters=3, merge_events=True)
        assert traj.stop_reason == "until_clusters"
        S = len(traj.times)
        assert S < len(times)
        assert np.array_equal(data["systems"]["frames"][p], np.full(spec.runs, S))
        assert np.array_equal(data["systems"]["cluster_count"][p][:, :S], counts)
        assert not data["systems"]["cluster_count"][p][:, S:].any()
        rows = data["merges"]["point"] == p
        for k, v in table(traj.merge_events).items():
            assert data["merges"][k][rows].tobytes() == v.tobytes(), k
        passages = sorted(traj.passages, key=lambda q: q.system)
        assert [q.system for q in passages] == list(range(spec.runs))
        assert ds.passage_time.values[p].tobytes() == Passage.columns(passages)["time"].tobytes()
        stats = ds.isel(beta=p)
        assert stats.cluster_mean.values[:S].all() and np.isnan(stats.cluster_mean.values[S:]).all()
        assert np.isnan(stats.cluster_distribution.values[S:]).all()
        # single-cluster times over the frames computed: inf where not at one by the stop
        single = stats.single_cluster_time.values
        assert np.array_equal(np.isfinite(single), (counts == 1).any(axis=1))
    result = invoke("info", path)
    ok(result)
    assert "each grid point at 3 clusters or fewer" in result.output


def test_the_cli_refuses_what_cannot_be_located_or_stopped_in_one_line(tmp_path):
    """The TOML keys and options a sweep refused are settings of the whole sweep
    now, refused where they cannot hold."""
    grid = tmp_path / "grid.toml"
    grid.write_text("merge_events = true\nuntil_clusters = 1\n")
    usage_error(invoke("sweep", *ARGS, "--config", grid, "--chunk", 2, "--out",
                       tmp_path / "t.h5"), "--chunk 2: with --until-clusters")
    usage_error(invoke("sweep", *ARGS, "--until-clusters", 1, "--merge-events", "--noise",
                       0.1, "--integrator", "heun", "--out", tmp_path / "u.h5"),
                "--merge-events must be False with noise")
    grid.write_text("merge_events = true\n")
    usage_error(invoke("sweep", *ARGS, "--config", grid, "--noise", 0.1, "--integrator", "heun",
                       "--out", tmp_path / "v.h5"),
                "--merge-events must be False with noise", f"(key merge_events in {grid})")
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".h5"]


def test_a_spec_with_merges_round_trips_and_checks_its_values():
    spec = SPEC.replace(until_clusters=3).resolved()
    assert SweepSpec.from_json(spec.to_json()) == spec
    assert spec.config(1).merge_events and spec.config(1).until_clusters == 3
    with pytest.raises(SweepError, match="--until-clusters must be a positive integer"):
        SPEC.replace(until_clusters=0)
    with pytest.raises(SweepError, match="--merge-events must be True or False"):
        SPEC.replace(merge_events="yes")
    with pytest.raises(SweepError, match="--merge-events must be False with the stochastic"):
        SPEC.replace(base={**BASE, "integrator": "em", "dt": 0.1})
