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
    assert direct.evaluation_cost() == 16 * 16 * (3e-9 + 2 * 0.13e-9)  # every pair
    assert direct.collapses and direct.frames == 101 and direct.evaluations == 4
    assert direct.energy.definition == ""
    series = facts(SimulationConfig(n=16, d=2, beta=2.0, seed=0, summation="spectral",
                                    tol=1e-10, batch=2))
    assert series.series and series.degree > 0
    assert series.evaluation_cost(16) > 0
    assert not series.collapses  # an ensemble's systems have their own groups


def test_the_cost_of_a_step_is_a_fact():
    from particles.fields import costs

    sa = facts(SimulationConfig(n=16, d=3, beta=2.0, seed=0, heads=2, T=1.0, dt=0.3))
    assert sa.evaluation_cost() == costs.pairs(16, 3, heads=2)
    assert sa.evaluation_cost(8) == costs.pairs(8, 3, heads=2)
    assert sa.step_cost() == 4 * sa.evaluation_cost()  # rk4
    assert sa.pass_cost == costs.pairs(16, 3)
    assert sa.steps == 4 and not sa.adaptive
    sinkhorn = facts(SimulationConfig(n=16, d=3, beta=2.0, seed=0, normalization="sinkhorn",
                                      sinkhorn_iters=5))
    assert sinkhorn.evaluation_cost() == costs.pairs(16, 3, passes=6.0)
    kuramoto = facts(SimulationConfig(n=16, d=2, beta=0.0, model="kuramoto", seed=0,
                                      integrator="dopri5"))
    assert kuramoto.evaluation_cost() == costs.tokens(16) and kuramoto.adaptive
    assert kuramoto.step_cost() == 7 * costs.tokens(16)
    circle = facts(SimulationConfig(n=16, d=2, beta=2.0, seed=0, summation="spectral",
                                    tol=1e-10))
    assert circle.evaluation_cost() == costs.series(16, 2, circle.degree)


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


def _frame(index, clusters=None):
    from particles.trajectory import Frame

    return Frame(index, index, float(index), np.zeros((1, 2, 2)), {},
                 clusters=None if clusters is None else np.array([clusters]))


def test_a_stop_is_one_object_of_the_watch():
    from particles.events import MaxWall, UntilClusters, stops, stops_of

    assert stops_of(Watch()) == ()
    assert stops_of(Watch(clusters=True, until_clusters=2, max_wall=5.0)) == (
        UntilClusters(2), MaxWall(5.0))
    assert UntilClusters(2).holds(_frame(1, 2), 0.0)
    assert not UntilClusters(2).holds(_frame(1, 3), 0.0)
    assert not UntilClusters(2).holds(_frame(1, 0), 0.0)  # spread, not clustered
    assert MaxWall(5.0).holds(_frame(1), 5.0) and not MaxWall(5.0).holds(_frame(1), 4.9)
    frames = [_frame(k, c) for k, c in enumerate([5, 3, 2, 1, 1])]
    out = list(stops(Watch(clusters=True, until_clusters=2), frames, start=0, last=4))
    assert [f.index for f in out] == [0, 1, 2] and out[-1].stop == "until_clusters"
    # the start frame and the last frame never stop a run
    out = list(stops(Watch(clusters=True, until_clusters=9), frames, start=1, last=2))
    assert [f.stop for f in out] == ["", "", "", "", ""]


@pytest.mark.parametrize("collapse_tol", [None, 0.0], ids=["collapsing", "not-collapsing"])
def test_a_step_size_warning_points_at_the_caller_of_simulate(collapse_tol):
    import warnings

    from particles import StepSizeWarning, simulate

    extra = {} if collapse_tol is None else {"collapse_tol": collapse_tol}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        simulate(n=4, d=3, beta=1.0, model="usa", T=2.0, dt=1.0, save_every=1, seed=0,
                 integrator="euler", **extra)
    found = [w for w in caught if issubclass(w.category, StepSizeWarning)]
    assert found and found[0].filename == __file__


def test_a_collapsing_problem_hands_over_to_fewer_groups():
    from particles.models import collapse
    from particles.trajectory import Frame

    cfg = SimulationConfig(n=4, d=3, beta=1.0, seed=0)
    X = np.eye(3)[[0, 1, 2, 2]][None]
    problem = collapse.problem(cfg, X)
    assert problem.state0.shape == (1, 3, 3)  # three groups of four tokens
    same = Frame(1, 1, 0.1, X.copy(), {})
    assert problem.handover(same) is None
    merged = Frame(2, 2, 0.2, np.eye(3)[[0, 0, 2, 2]][None], {})
    smaller = problem.handover(merged)
    assert smaller.state0.shape == (1, 2, 3)
    np.testing.assert_array_equal(smaller.to_positions(smaller.state0), merged.positions)
    one = Frame(3, 3, 0.3, np.eye(3)[[0, 0, 0, 0]][None], {})
    assert smaller.handover(one).handover(one) is None  # one group: nothing to merge
