"""What the user reads: ``--help`` defaults, names in messages, the package root,
options that do not exist yet, the README's examples and the ``slow`` marker."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from clitools import invoke, usage_error
from particles_cli.options import REQUIRED
from particles_cli.simulate import simulate as simulate_command

import particles
from particles.config import SimulationConfig

ROOT = Path(__file__).resolve().parents[2]


def test_simulate_help_shows_every_default():
    ctx = click.Context(simulate_command)
    defaults = {f.name: f.default for f in dataclasses.fields(SimulationConfig)}
    missing = []
    for param in simulate_command.params:
        if not isinstance(param, click.Option) or param.is_flag or param.name in (
                *REQUIRED, "config_file", "help"):
            continue
        record = param.get_help_record(ctx)
        if record is None or "default:" not in record[1]:
            missing.append(param.opts[0])
            continue
        value = defaults.get(param.name)
        if isinstance(value, float | int) and not isinstance(value, bool):
            assert f"({value:g})" in record[1] or f"({value})" in record[1], record
    assert not missing, f"no default shown for {missing}"


@pytest.mark.processes
def test_subpackages_are_attributes_of_the_package_root():
    code = ("import sys, particles\n"
            "assert 'numba' not in sys.modules\n"
            "print(particles.analysis.ClusterDetector.__name__, particles.io.load.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.split()
    assert out == ["ClusterDetector", "load"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        particles.nope  # noqa: B018


def test_noise_is_an_option_and_unknown_keywords_stay_one_line():
    # issue 13 landed noise: simulate(noise=...) and --noise exist (they were refused
    # "until the noise issue lands"); a misspelt keyword is still one line
    with pytest.raises(TypeError, match=r"^simulate\(\) got an unexpected keyword argument "
                       r"'nois'; allowed: [^\n]*\bnoise\b"):
        particles.simulate(4, 3, 1.0, T=0.1, seed=0, nois=0.1)
    result = invoke("simulate", "--n", 4, "--d", 3, "--beta", 1, "--noise", -0.1)
    usage_error(result, "noise must be a finite number >= 0")


def test_config_errors_use_option_names_on_the_command_line(tmp_path):
    from particles_cli.options import cli_message

    assert cli_message("usa_scale must be 'n' for kernel='rbf' (the e^-beta time change)") \
        == "--usa-scale must be 'n' for --kernel='rbf' (the e^-beta time change)"
    result = invoke("simulate", "--out", tmp_path / "x.h5", "--n", 4, "--d", 3, "--beta", 1,
                    "--kernel", "rbf", "--usa-scale", "n_exp_beta")
    usage_error(result, "--usa-scale must be 'n' for --kernel='rbf'")
    assert "usa_scale" not in result.output
    assert not re.search(r"(?<![-\w])kernel=", result.output)
    result = invoke("simulate", "--out", tmp_path / "x.h5", "--n", 4, "--d", 3, "--beta", 1,
                    "--tau", 2)
    usage_error(result, "--tau must be 1.0 (the default) unless --kernel is 'rbf'")
    # Python keeps the API names
    with pytest.raises(ValueError, match=r"^usa_scale must be 'n' for kernel='rbf'"):
        SimulationConfig(n=4, d=3, beta=1.0, kernel="rbf", usa_scale="n_exp_beta")
    # a --config file's keys keep their names
    toml = tmp_path / "run.toml"
    toml.write_text("n = 4\nd = 3\nbeta = 1.0\nkernel = 'rbf'\nusa_scale = 'n_exp_beta'\n")
    usage_error(invoke("simulate", "--out", tmp_path / "x.h5", "--config", toml),
                "usa_scale must be 'n' for kernel='rbf'")


@pytest.mark.processes
def test_readme_compare_example_runs_without_a_warning(tmp_path):
    readme = (ROOT / "README.md").read_text()
    line = next(li for li in readme.splitlines() if li.startswith("particles compare "))
    args = line.split("#")[0].split()[2:]
    args = [str(tmp_path / a) if a.endswith(".png") else a for a in args]
    result = subprocess.run([sys.executable, "-m", "particles_cli", "compare", *args,
                             "--out", str(tmp_path / "compare.h5")],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr, result.stderr


@pytest.mark.processes
def test_long_physics_validations_are_marked_slow():
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-n", "0", "-m", "slow", "tests/models/test_physics.py",
         "tests/analysis/test_analysis_physics.py", "tests/integrators/test_integrators.py"],
        capture_output=True, text=True, cwd=ROOT)
    selected = set(re.findall(r"^tests/\w+/(\w+\.py)::", result.stdout, re.M))
    assert selected == {"test_physics.py", "test_analysis_physics.py", "test_integrators.py"}, \
        result.stdout
    readme = (ROOT / "README.md").read_text()
    assert "marked `slow`" in readme and 'pytest -m "not slow"' in readme
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'markers = ["slow:' in pyproject
