"""A generated table of bad values over every option of every command (issue 25).

For every non-flag option of every command, the values that no option of its
type accepts (``x`` for a number, ``nan`` and ``inf`` for a float, ``nope``
for a choice or a name, a malformed text) are given, with the cheapest valid
rest of the command.  Each must be refused before any work: exit status 2,
one ``Error:`` line, no traceback, and no file made in the working directory
(nothing runs: the runs a command would start are replaced by a failure).
"""

from __future__ import annotations

import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from particles_cli.main import cli

import particles.runs.compare as compare_module
import particles.runs.kernels as kernels_module

#: the valid rest of each command (the bad option added to it).
BASE = {
    "simulate": "--n 4 --d 3 --beta 1 --T 0.1 --dt 0.05 --dry-run",
    "meanfield": "--beta 1 --modes 16 --T 0.01",
    "compare": "--n 4 --beta 1 --T 0.1 --dt 0.05",
    "kernels": "--n 4 --d 3 --beta 1 --T 0.1 --dt 0.05",
    "sweep": "--beta 1 --d 2 --n 4 --runs 2 --T 0.1 --dt 0.05 --dry-run",
    "analyze": "{run}",
    "plot": "{run}",
    "compile": "",
}

#: options that are paths or addresses (their refusals have tests of their own).
SKIPPED = {"out", "config_file", "other", "plot", "scheduler", "scheduler_file"}

#: bad values of a free-text option (what the option reads decides what is bad).
TEXT = {"save_times": ["x", "log:1:0:5"], "omega": ["x", "nope:1"], "init": ["x", "cap:9"],
        "times": ["x", "nan"], "observables": ["nope"], "stat": ["nope"], "axis": ["nope"],
        "where": ["x", "nope=1"], "deltas": ["x", "nan"]}

#: the numeric fields of a sweep (its options are grid specifications: text).
SWEEP_NUMBERS = {"n", "d", "beta", "dt", "T", "save_every", "rtol", "atol", "max_steps",
                 "coupling", "tau", "gamma", "heads", "sinkhorn_iters", "sinkhorn_tol",
                 "layer_time", "noise"}


def _bad_values(command: str, param: click.Option) -> list[str]:
    kind = param.type
    if isinstance(kind, click.Choice):
        return ["nope"]
    if isinstance(kind, click.types.IntParamType):  # IntRange too
        return ["x", "1.5"]
    if isinstance(kind, click.types.FloatParamType):
        return ["x", "nan", "inf"]
    if command == "sweep" and param.name in SWEEP_NUMBERS:
        return ["x", "nan", "1:x:3"]
    if param.name in TEXT:
        return TEXT[param.name]
    return ["nope"]  # names (models, kernels), choices given as text


def _cases() -> list[tuple[str, str, str]]:
    ctx = click.Context(cli)
    cases = []
    for command in BASE:
        cmd = cli.get_command(ctx, command)
        for param in cmd.params:
            if not isinstance(param, click.Option) or param.is_flag or param.name in SKIPPED:
                continue
            if command == "sweep" and param.name in ("model", "kernel", "integrator"):
                values = ["nope"]
            else:
                values = _bad_values(command, param)
            for value in values:
                cases.append((command, param.opts[0], value))
    return cases


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A small trajectory for the commands that read one."""
    path = tmp_path_factory.mktemp("run") / "r.h5"
    from particles.config import SimulationConfig
    from particles.runs import run_to_file

    run_to_file(SimulationConfig(n=6, d=3, beta=1.0, integrator="euler", dt=0.05, T=0.5,
                                 save_every=1, seed=1), path)
    return path


@pytest.mark.parametrize(("command", "option", "value"), _cases())
def test_a_bad_value_is_one_line_exit_2_and_touches_nothing(tmp_path, monkeypatch, run,
                                                            command, option, value):
    def forbidden(*args, **kwargs):
        raise AssertionError(f"{command} {option} {value}: a run started")

    monkeypatch.setattr(compare_module, "iter_frames", forbidden)
    monkeypatch.setattr(kernels_module, "simulate", forbidden)
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(run.parent))
    args = [*BASE[command].format(run=run).split(), option, value]
    result = CliRunner().invoke(cli, [command, *args])
    shown = f"particles {command} {' '.join(args)}\n{result.output}"
    assert result.exit_code == 2, shown + repr(result.exception)
    assert "Traceback" not in result.output, shown
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1, shown
    assert os.listdir(tmp_path) == [], shown  # nothing written
    assert sorted(os.listdir(run.parent)) == before, shown
