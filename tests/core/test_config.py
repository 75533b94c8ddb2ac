"""Validation of SimulationConfig: every bad value names the argument."""

from __future__ import annotations

import math

import numpy as np
import pytest

from particles import SimulationConfig, simulate


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(n=0), "n must be an integer >= 1"),
        (dict(n=-3), "n must be"),
        (dict(n=2.5), "n must be"),
        (dict(d=1), "d must be an integer >= 2"),
        (dict(beta=-1.0), "beta must be"),
        (dict(beta=math.nan), "beta must be"),
        (dict(beta=2e4), "beta must be"),
        (dict(model="transformer"), "model must be one of 'sa', 'usa'"),
        (dict(kernel="cosine"), "kernel must be one of"),
        (dict(integrator="leapfrog"), "integrator must be one of"),
        (dict(usa_scale="sqrt"), "usa_scale must be one of"),
        (dict(dt=0.0), "dt must be"),
        (dict(dt=math.inf), "dt must be"),
        (dict(T=-1.0), "T must be"),
        (dict(save_every=0), "save_every must be"),
        (dict(save_times=[0.0, 2.0, 1.0]), "save_times must be"),
        (dict(save_times=[0.0, 20.0]), r"save_times must be times in \[0, T\]"),
        (dict(batch=0), "batch must be"),
        (dict(seed=-1), "seed must be"),
        (dict(init="gaussian"), "init must be one of"),
        (dict(init="cap"), "init must be 'cap:VALUE'"),
        (dict(init="cap:4"), "0 < EPS <= pi"),
        (dict(init="orthogonal", n=5, d=3), "need n <= d"),
        (dict(init="equispaced", d=3), "lie on the circle"),
        (dict(Q=np.eye(4)), r"Q must be a \(3, 3\) matrix"),
        (dict(V="zero"), "V must be one of"),
        (dict(masses=[1.0, -1.0, 1.0, 1.0]), "masses must be 4 finite positive numbers"),
        (dict(rtol=0.0), "rtol must be"),
        (dict(model="usa", beta=800.0), "usa_scale='n_exp_beta'"),
    ],
)
def test_invalid_values_raise_named_errors(kwargs, match):
    base = dict(n=4, d=3, beta=1.0, T=10.0)
    base.update(kwargs)
    with pytest.raises(ValueError, match=match):
        SimulationConfig(**base)


def test_simulate_raises_value_error_before_work():
    with pytest.raises(ValueError, match="integrator must be one of"):
        simulate(4, 3, 1.0, integrator="nope")


def test_json_round_trip_and_unknown_keys():
    cfg = SimulationConfig(n=4, d=3, beta=2.0, Q=np.diag([1.0, 2.0, 3.0]), masses=[1, 2, 3, 4],
                           save_times=[0.0, 1.0], T=1.0, seed=5)
    again = SimulationConfig.from_json(cfg.to_json())
    assert again == cfg
    np.testing.assert_array_equal(again.matrix("Q"), np.diag([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="unknown configuration key"):
        SimulationConfig.from_dict({**cfg.to_dict(), "temperature": 3})


def test_resolved_seed_is_recorded():
    cfg = SimulationConfig(n=4, d=3, beta=1.0)
    assert cfg.seed is None
    r = cfg.resolved()
    assert isinstance(r.seed, int) and r.resolved() is r


def test_output_times():
    cfg = SimulationConfig(n=2, d=2, beta=0.0, dt=0.1, save_every=3, T=1.0)
    np.testing.assert_allclose(cfg.output_times(), [0, 0.3, 0.6, 0.9, 1.0])
    cfg = SimulationConfig(n=2, d=2, beta=0.0, dt=0.1, save_every=5, T=1.0)
    np.testing.assert_allclose(cfg.output_times(), [0, 0.5, 1.0])
    cfg = SimulationConfig(n=2, d=2, beta=0.0, T=5.0, save_times=[1.0, 5.0])
    np.testing.assert_allclose(cfg.output_times(), [0, 1.0, 5.0])


def test_save_times_specs():
    cfg = SimulationConfig(n=2, d=2, beta=0.0, T=100.0, save_times="log:1:100:3")
    np.testing.assert_allclose(cfg.output_times(), [0, 1, 10, 100])
    assert SimulationConfig.from_json(cfg.to_json()) == cfg  # stored expanded
    cfg = SimulationConfig(n=2, d=2, beta=0.0, T=1.0, save_times="lin:0:1:5")
    np.testing.assert_allclose(cfg.output_times(), [0, 0.25, 0.5, 0.75, 1.0])
    cfg = SimulationConfig(n=2, d=2, beta=0.0, T=1.0, save_times="0.5,1")
    np.testing.assert_allclose(cfg.output_times(), [0, 0.5, 1.0])
    for bad in ("log:0:1:3", "log:1:2", "lin:a:1:2", "1,x"):
        with pytest.raises(ValueError, match="save_times must be"):
            SimulationConfig(n=2, d=2, beta=0.0, T=10.0, save_times=bad)


@pytest.mark.parametrize(("changes", "field"), [
    ({"n": 0}, "n"), ({"beta": -1.0}, "beta"), ({"model": "x"}, "model"),
    ({"kernel": "rbf", "usa_scale": "n_exp_beta"}, "usa_scale"), ({"init": "cap:9"}, "init"),
    ({"n": 9, "init": "orthogonal"}, "init"), ({"masses": (1.0,)}, "masses"),
    ({"coupling": 2.0}, "coupling"), ({"tau": 2.0}, "tau"), ({"observables": "x"}, "observables"),
    ({"normalization": "sinkhorn", "model": "usa"}, "normalization"),
    ({"noise": 0.1, "integrator": "rk4"}, "integrator"), ({"beta": 800.0, "model": "usa"}, "beta"),
    ({"layer_time": 1.0}, "layer_time"), ({"omega": "lorentzian:1"}, "omega"),
])
def test_a_refused_value_names_its_field(changes, field):
    """Every refusal is a ConfigError whose ``field`` names the argument (the CLI
    names the option from it, never from the message's first word)."""
    from particles.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        SimulationConfig(**{"n": 4, "d": 3, "beta": 1.0, **changes})
    assert err.value.field == field and "\n" not in str(err.value)
