"""Runs that cannot work are refused before any kernel is made (issue 38
items 6 and 7): one ``Error:`` line naming the option, exit status 2, no file,
and no Numba dispatcher touched (a refusal after start-up cost 7-30 s)."""

from __future__ import annotations

import pytest
from clitools import invoke, usage_error

from particles._numba import LazyDispatcher

RUN = ("--n", 8, "--d", 3, "--T", 1, "--seed", 0)


@pytest.fixture
def no_kernels(monkeypatch):
    """Any compiled function made or called fails the test."""
    def made(self):
        raise AssertionError(f"kernel {self.py_func.__name__} made before the refusal")

    monkeypatch.setattr(LazyDispatcher, "dispatcher", property(made))


@pytest.mark.parametrize("args, option, fragment", [
    # USA weights up to e^700 / n: a step of 0.01 moves tokens 1e302, whose
    # square overflows; the time change of n_exp_beta runs it (below)
    (("--model", "usa", "--beta", 700), "--beta", "--usa-scale"),
    (("--model", "usa", "--beta", 400, "--integrator", "dopri5"), "--beta", "float64"),
    (("--beta", 1, "--merge-events", "--integrator", "heun"), "--merge-events", "'heun'"),
    (("--beta", 1, "--merge-events", "--batch", 2, "--noise", 0.1), "--merge-events",
     "noise"),
], ids=["usa-700", "usa-400-dopri5", "merge-events-heun", "merge-events-noise"])
def test_refused_before_any_kernel(tmp_path, no_kernels, args, option, fragment):
    out = tmp_path / "run.h5"
    result = invoke("simulate", *RUN, *args, "--out", out)
    usage_error(result, option, fragment)
    assert not out.exists() and not list(tmp_path.iterdir())


def test_usa_at_beta_700_runs_with_the_time_change(tmp_path):
    result = invoke("simulate", *RUN, "--model", "usa", "--beta", 700, "--usa-scale",
                    "n_exp_beta", "--dry-run", "--out", tmp_path / "run.h5")
    assert result.exit_code == 0, result.output
