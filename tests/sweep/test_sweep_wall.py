"""The stops of a single run in a sweep (issue 38 item 6): ``--max-wall`` pauses
the whole sweep (a file ``--resume`` finishes into the uninterrupted one, exit
status 0 as ``simulate --max-wall``); ``--until-clusters`` and ``--merge-events``
are settings of the whole sweep (issue 41, tests/sweep/test_sweep_merges.py),
refused as grid fields and when bad, in one line; an older file that recorded
them among its fixed fields (and ignored them) reads without them."""

from __future__ import annotations

import json

import pytest
from clitools import invoke, ok, usage_error
from test_sweep import ARGS, SPEC, assert_same, contents

from particles.errors import SweepError
from particles.io.sweep import read_header
from particles.sweep import LocalBackend, SweepSpec, run_sweep


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """SPEC run without a stop."""
    path = tmp_path_factory.mktemp("wall") / "ref.h5"
    run_sweep(SPEC, path, chunk=3)
    return path


@pytest.mark.parametrize("processes", [1, 2])
def test_max_wall_pauses_and_resume_finishes(reference, tmp_path, processes):
    """A budget of 0 s pauses the sweep at its first task (the tasks still
    running in worker processes are stopped); resuming gives the whole file."""
    path = tmp_path / "paused.h5"
    with LocalBackend(processes=processes) as backend:
        result = run_sweep(SPEC, path, chunk=1, max_wall=0.0, backend=backend)
    assert not result.complete and result.tasks_run == 1 and result.items == 1
    header = read_header(path)
    assert not header.complete and header.systems_done == 1
    assert "max_wall" not in header.spec
    finished = run_sweep(None, path, resume=True, chunk=1)
    assert finished.complete and finished.items == 18 and finished.systems_run == 17
    assert_same(contents(path), contents(reference))


def test_a_budget_spent_at_the_last_task_completes_the_sweep(tmp_path):
    one = SweepSpec(base={**SPEC.base, "beta": 1.0}, runs=3, seed=11)
    result = run_sweep(one, tmp_path / "one.h5", chunk=3, max_wall=0.0)
    assert result.complete and result.tasks_run == 1
    assert read_header(tmp_path / "one.h5").complete


def test_cli_max_wall_reports_the_pause_and_resume_finishes(reference, tmp_path):
    out = tmp_path / "s.h5"
    result = invoke("sweep", *ARGS, "--chunk", 1, "--out", out, "--max-wall", 0)
    ok(result)
    lines = result.stdout.splitlines()
    assert lines[0] == str(out)
    assert lines[1].startswith(f"paused by --max-wall 0 s: {out} holds 1 of 18 systems, "
                               "marked incomplete; 1 tasks (1 systems) run in ")
    assert lines[1].endswith(f"; continue with: particles sweep --resume --out {out}")
    ok(invoke("sweep", "--out", out, "--resume"))
    assert_same(contents(out), contents(reference))


def test_max_wall_from_a_toml_file(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text("n = 6\nd = 2\nintegrator = 'euler'\ndt = 0.1\nT = 2.0\nsave_every = 2\n"
                    "beta = [1.0, 5.0]\nruns = 9\nseed = 11\nmax_wall = 0\n")
    result = invoke("sweep", "--config", grid, "--chunk", 1, "--out", tmp_path / "s.h5")
    ok(result)
    assert result.stdout.splitlines()[1].startswith("paused by --max-wall 0 s")
    grid.write_text(grid.read_text().replace("max_wall = 0", "max_wall = -1"))
    usage_error(invoke("sweep", "--config", grid, "--out", tmp_path / "t.h5"),
                "--max-wall must be a finite number of seconds >= 0, got -1",
                f"(key max_wall in {grid})")


@pytest.mark.parametrize("args, fragments", [
    (["--until-clusters", "0"], ["--until-clusters", "0 is not in the range x>=1"]),
    (["--until-clusters", "1,2"], ["'1,2' is not a valid integer"]),
    (["--merge-events", "--integrator", "heun", "--noise", "0.1"],
     ["--merge-events must be False with noise", "at --beta 1.0"]),
    (["--until-clusters", "1", "--chunk", "4"],
     ["--chunk 4: with --until-clusters each grid point's 9 systems run as one task"]),
    (["--max-wall", "-1"], ["--max-wall must be a finite number of seconds >= 0"]),
    (["--max-wall", "inf"], ["--max-wall must be a finite number of seconds >= 0"]),
    (["--max-wall", "1,2"], ["'1,2' is not a valid float"]),
])
def test_cli_refuses_before_any_work(tmp_path, args, fragments):
    out = tmp_path / "s.h5"
    usage_error(invoke("sweep", *ARGS, "--out", out, *args), *fragments)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("line, fragment", [
    ("until_clusters = 0", "--until-clusters must be a positive integer, got 0"),
    ("until_clusters = [1, 2]", "--until-clusters must be a positive integer, got [1, 2]"),
    ("merge_events = 'yes'", "--merge-events must be True or False, got 'yes'"),
])
def test_bad_stops_in_a_toml_file_are_refused_naming_the_key(tmp_path, line, fragment):
    """The sweep's merge events and stop are session keys of a TOML file (issue 41:
    they were refused); a bad value names the key."""
    grid = tmp_path / "grid.toml"
    key = line.split()[0]
    grid.write_text(f"n = 6\nd = 2\nbeta = [1.0, 5.0]\n{line}\n")
    usage_error(invoke("sweep", "--config", grid, "--out", tmp_path / "s.h5"),
                fragment, f"(key {key} in {grid})")
    assert not (tmp_path / "s.h5").exists()


@pytest.mark.parametrize("field", ["until_clusters", "max_wall", "merge_events"])
def test_the_library_refuses_the_stops_as_grid_fields(field):
    with pytest.raises(SweepError, match=f"--{field.replace('_', '-')}"):
        SweepSpec(base={**SPEC.base, field: 2}, axes=SPEC.axes, runs=2)
    with pytest.raises(SweepError, match=f"--{field.replace('_', '-')}"):
        SweepSpec(base=SPEC.base, axes=(*SPEC.axes, (field, (1, 2))), runs=2)


def test_a_file_that_recorded_the_ignored_stops_still_resumes():
    """Older sweeps recorded --max-wall and --until-clusters among the fixed
    fields and ignored them: their description reads without them."""
    stored = SPEC.to_dict()
    stored["base"] = {**stored["base"], "max_wall": 60.0, "until_clusters": 2,
                      "merge_events": True}
    assert SweepSpec.from_json(json.dumps(stored)) == SPEC
