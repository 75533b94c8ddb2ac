"""Failed integrations name the remedy (issue 11, items 2 and 3): a
deterministic blow-up suggests a smaller dt, usa_scale='n_exp_beta' or dopri5,
never --resume (which repeats the same steps); CLI names on the CLI, API names
in Python."""

from __future__ import annotations

import pytest
from clitools import invoke

from particles import IntegrationError, StepSizeWarning, simulate

USA_FAST = ("--model", "usa", "--beta", 10, "--dt", 0.01, "--n", 8, "--d", 3, "--T", 0.2,
            "--seed", 0)


def test_cli_rk4_usa_blow_up_suggests_dt_scale_or_dopri5_not_resume(tmp_path):
    result = invoke("simulate", *USA_FAST, "--out", tmp_path / "usa.h5")
    assert result.exit_code == 1, result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(error) == 1, result.output
    for fragment in ("non-finite", "--dt", "--usa-scale n_exp_beta", "--integrator dopri5"):
        assert fragment in error[0], error[0]
    assert "--resume" not in error[0], error[0]


def test_api_rk4_usa_blow_up_names_api_arguments():
    with pytest.warns(StepSizeWarning), pytest.raises(IntegrationError) as info:
        simulate(8, 3, 10.0, model="usa", dt=0.01, T=0.2, seed=0)
    msg = str(info.value)
    assert "usa_scale='n_exp_beta'" in msg and "integrator='dopri5'" in msg, msg
    # the advice works: the time change runs at the same dt
    traj = simulate(8, 3, 10.0, model="usa", usa_scale="n_exp_beta", dt=0.01, T=0.2, seed=0)
    assert traj.complete


@pytest.mark.parametrize("beta", [100.0, 300.0])
def test_dopri5_usa_underflow_names_usa_scale(beta):
    with pytest.raises(IntegrationError, match="step size underflow") as info:
        simulate(8, 3, beta, model="usa", integrator="dopri5", T=0.2, seed=0)
    assert "usa_scale='n_exp_beta'" in str(info.value)


def test_cli_dopri5_usa_underflow_names_usa_scale(tmp_path):
    result = invoke("simulate", "--model", "usa", "--beta", 300, "--integrator", "dopri5",
                    "--n", 8, "--d", 3, "--T", 0.2, "--seed", 0, "--out", tmp_path / "u.h5")
    assert result.exit_code == 1, result.output
    assert "--usa-scale n_exp_beta" in result.output and "--resume" not in result.output
