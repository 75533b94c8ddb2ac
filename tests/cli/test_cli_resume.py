"""``particles simulate --resume`` with the original command's options given again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from clitools import invoke, ok, usage_error

from particles.config import SimulationConfig
from particles.engine import run
from particles.errors import ResumeMismatch, RunInterrupted
from particles.io import load
from particles.runs import run_to_file

BASE = "--n 8 --d 3 --beta 1 --T 0.1 --dt 0.01 --save-every 2 --seed 3 --integrator euler".split()
CONFIG = SimulationConfig(
    n=8, d=3, beta=1.0, T=0.1, dt=0.01, save_every=2, seed=3, integrator="euler"
)


def interrupted(path: Path, config: SimulationConfig = CONFIG) -> Path:
    """An incomplete file of ``config`` (stopped after a few frames, flushed at once)."""
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) == 3

    with pytest.raises(RunInterrupted):
        run_to_file(config, path, flush_interval=0.0, should_stop=stop)
    assert not load(path).complete
    return path


def simulate(out: Path, *args):
    return invoke("simulate", "--out", out, *args)


def test_same_command_with_resume_continues(tmp_path):
    out = interrupted(tmp_path / "r.h5")
    ok(simulate(out, *BASE, "--resume"))
    traj = load(out)
    assert traj.complete and traj.config == CONFIG
    np.testing.assert_array_equal(traj.positions, run(CONFIG).positions)


def test_same_command_without_seed_takes_the_stored_seed(tmp_path):
    out = interrupted(tmp_path / "r.h5", CONFIG.replace(seed=12345))
    i = BASE.index("--seed")
    args = BASE[:i] + BASE[i + 2 :]
    ok(simulate(out, *args, "--resume"))
    assert load(out).complete and load(out).config.seed == 12345


def test_same_config_file_with_resume_continues(tmp_path):
    out = interrupted(tmp_path / "r.h5")
    toml = tmp_path / "c.toml"
    toml.write_text("n = 8\nd = 3\nbeta = 1.0\nT = 0.1\ndt = 0.01\nsave_every = 2\n")
    ok(simulate(out, "--config", toml, "--seed", "3", "--integrator", "euler", "--resume"))
    assert load(out).complete


def test_changed_beta_is_refused_naming_it(tmp_path):
    out = interrupted(tmp_path / "r.h5")
    before = out.read_bytes()
    args = [*BASE]
    args[args.index("--beta") + 1] = "2"
    result = simulate(out, *args, "--resume")
    usage_error(result, "--beta 2.0 (stored 1.0)")
    assert "--n " not in result.output and "--seed" not in result.output
    assert out.read_bytes() == before


def test_two_changed_fields_are_both_named(tmp_path):
    out = interrupted(tmp_path / "r.h5")
    args = [*BASE]
    args[args.index("--beta") + 1] = "2"
    args[args.index("--T") + 1] = "0.2"
    result = simulate(out, *args, "--resume")
    usage_error(result, "--beta 2.0 (stored 1.0)", "--T 0.2 (stored 0.1)")
    assert "--n " not in result.output and "--dt" not in result.output


def test_resume_with_overwrite_is_refused(tmp_path):
    out = interrupted(tmp_path / "r.h5")
    usage_error(simulate(out, *BASE, "--resume", "--overwrite"), "--overwrite")


def test_library_names_each_differing_field(tmp_path):
    out = interrupted(tmp_path / "r.h5")
    with pytest.raises(ResumeMismatch) as err:
        run_to_file(CONFIG.replace(beta=2.0, dt=0.005), out, resume=True)
    assert err.value.differences == {"beta": (2.0, 1.0), "dt": (0.005, 0.01)}
