"""One plan per run: :func:`particles.plan.plan` and the facts it computes once."""

from __future__ import annotations

import numpy as np
import pytest

import particles.fields
from particles.config import SimulationConfig
from particles.engine import integrate
from particles.models import build_field, build_problem
from particles.plan import Controller, Facts, Plan, Saves, Start, Watch, facts, plan


def test_a_plan_holds_what_the_configuration_resolves_to():
    cfg = SimulationConfig(n=8, d=3, beta=1.0, T=0.5, dt=0.05, save_every=2, seed=0,
                           integrator="dopri5", rtol=1e-5, until_clusters=2, max_wall=9.0)
    p = plan(cfg)
    assert isinstance(p, Plan) and p.integrator == "dopri5"
    np.testing.assert_array_equal(p.saves.times, cfg.output_times())
    assert p.saves.observables == cfg.observables
    assert p.controller == Controller(dt=0.05, max_steps=cfg.max_steps, rtol=1e-5,
                                      atol=cfg.atol)
    assert p.watch == Watch(clusters=True, locate=False, until_clusters=2, max_wall=9.0)
    assert plan(cfg.replace(until_clusters=None, max_wall=None)).watch == Watch()
    assert isinstance(p.facts, Facts)


def test_facts_of_direct_and_spectral_runs():
    direct = facts(SimulationConfig(n=16, d=2, beta=2.0, seed=0))
    assert direct.summation == "direct" and not direct.series and direct.degree is None
    assert direct.evaluation_cost() is None  # the pair-cost model of runs.estimate
    assert direct.collapses and direct.frames == 101 and direct.evaluations == 4
    assert direct.energy.definition == ""
    series = facts(SimulationConfig(n=16, d=2, beta=2.0, seed=0, summation="spectral",
                                    tol=1e-10, batch=2))
    assert series.series and series.degree > 0
    assert series.evaluation_cost(16) > 0
    assert not series.collapses  # an ensemble's systems have their own groups


def test_a_fact_is_computed_once(monkeypatch):
    f = facts(SimulationConfig(n=16, d=2, beta=2.0, seed=0, summation="spectral", tol=1e-10))
    first = f.degree
    monkeypatch.setattr("particles.fields.spectral.degree", lambda spec: pytest.fail("again"))
    assert f.degree == first


def test_integrate_takes_saves_a_controller_and_a_start():
    cfg = SimulationConfig(n=6, d=3, beta=1.0, T=0.4, dt=0.05, save_every=2, seed=3)
    X0 = np.random.default_rng(0).standard_normal((1, 6, 3))
    X0 /= np.linalg.norm(X0, axis=-1, keepdims=True)
    times = cfg.output_times()
    whole = list(integrate(build_problem(cfg, X0), "rk4", Saves(times), Controller(dt=0.05)))
    assert [f.index for f in whole] == list(range(times.size))
    # from a later save point: the same bits from there
    k = 2
    rest = list(integrate(build_problem(cfg, whole[k].positions), "rk4", Saves(times),
                          Controller(dt=0.05), start=Start(k, whole[k].step)))
    assert [f.index for f in rest] == list(range(k + 1, times.size))
    for a, b in zip(whole[k + 1:], rest, strict=True):
        assert np.array_equal(a.positions, b.positions) and a.step == b.step


def test_the_field_draws_the_first_layer_once(monkeypatch):
    calls = []
    draw = particles.fields.draw_layer

    def counted(config, layer=0):
        calls.append(layer)
        return draw(config, layer)

    monkeypatch.setattr(particles.fields, "draw_layer", counted)
    build_field(SimulationConfig(n=8, d=3, beta=1.0, seed=0, weights="gaussian"))
    assert calls == [0]
