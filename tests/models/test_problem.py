"""The Problem contract between models and the engine (issue 24, item 3).

``engine.integrate`` advances any :class:`~particles.models.Problem` (state,
space, field, noise, map to positions) and knows no model by name: a problem
written here, whose state is k groups and whose positions are n tokens, runs
through it; the configuration's models build the problems ``iter_frames``
runs (Kuramoto on its phases under rk4, on the circle under euler); noise,
the BLAS guard and step-size inputs are the problem's and the field's.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from particles.config import SimulationConfig
from particles.engine import blas_guard, integrate, iter_frames
from particles.errors import StepSizeWarning
from particles.fields.angle import angle_field
from particles.models import MODELS, Hints, Noise, Problem, build_field, build_problem
from particles.models.kuramoto import ANGLE_INTEGRATORS, circle_points
from particles.observables import observation
from particles.plan import Controller, Saves
from particles.runs.initial import initial_tokens


def _groups(k: int, size: int):
    """state (batch, k, 1) phases -> positions (batch, k * size, 2): each group's
    ``size`` tokens on one point (the shape of a collapsed-cluster problem)."""
    def to_positions(theta: np.ndarray) -> np.ndarray:
        return np.repeat(circle_points(theta), size, axis=1)
    return to_positions


def test_a_problem_of_groups_runs_through_integrate():
    k, size, B = 3, 4, 2
    omega = np.array([0.5, -1.0, 2.0])
    theta0 = np.random.default_rng(0).uniform(-1, 1, (B, k, 1))
    # no coupling: every phase turns at its own frequency, which rk4 integrates exactly
    field = angle_field("kuramoto", k, coupling=0.0, omega=omega)
    problem = Problem(state0=theta0, space="flat", field=field,
                      to_positions=_groups(k, size), hints=Hints(state="phases"))
    spec = SimulationConfig(n=k * size, d=2, beta=0.0)
    times = np.array([0.0, 0.5, 1.5])
    frames = list(integrate(problem, "rk4", Saves(times, observers=observation(("order",), spec)),
                            Controller(dt=0.1)))
    assert [f.index for f in frames] == [0, 1, 2]
    assert [f.step for f in frames] == [0, 5, 15]
    for f in frames:
        want = theta0 + omega[None, :, None] * f.time
        np.testing.assert_allclose(f.positions, _groups(k, size)(want), atol=1e-13)
        assert f.observables["order_parameter"].shape == (B,)
        r = np.hypot(*f.positions.mean(axis=1).T)
        np.testing.assert_allclose(f.observables["order_parameter"], r, rtol=1e-12)
    # the problem itself is left as it was
    assert np.array_equal(problem.state0, theta0)


def test_the_noise_is_the_problems_and_the_steppers():
    field = angle_field("kuramoto", 2, coupling=0.0, omega=np.zeros(2))
    quiet = Problem(state0=np.zeros((1, 2, 1)), space="flat", field=field)
    with pytest.raises(ValueError, match="'heun' is stochastic: the problem needs a noise"):
        next(integrate(quiet, "heun", Saves(np.array([0.0, 1.0])), Controller(dt=0.1)))
    noisy = dataclasses.replace(quiet, noise=Noise(0.3, np.zeros((1, 2), dtype=np.uint64)))
    with pytest.raises(ValueError, match="needs a stochastic integrator, not 'rk4'"):
        next(integrate(noisy, "rk4", Saves(np.array([0.0, 1.0])), Controller(dt=0.1)))
    with pytest.raises(ValueError, match="space must be one of"):
        Problem(state0=np.zeros((1, 2, 1)), space="torus", field=field)


def test_models_build_the_problems_of_a_configuration():
    kw = dict(n=8, d=2, beta=0.0, model="kuramoto", omega="gaussian:0.5", seed=1)
    for integrator in ("rk4", "em", "heun", "euler", "geodesic", "dopri5"):
        noise = 0.1 if integrator in ("em", "heun") else 0.0
        config = SimulationConfig(integrator=integrator, noise=noise, **kw)
        X0 = initial_tokens(config)
        problem = MODELS["kuramoto"].build(config, X0)
        angles = integrator in ANGLE_INTEGRATORS
        assert problem.space == ("flat" if angles else "sphere")
        assert problem.state0.shape == (1, 8, 1 if angles else 2)
        assert (problem.noise is not None) == (noise > 0)
        # the step-size inputs are the embedded field's either way
        field = build_field(config)
        assert problem.field.speed == field.speed
        assert np.array_equal(problem.field.rates, field.rates)
        np.testing.assert_allclose(problem.to_positions(problem.state0), X0, atol=1e-14)
    sa = SimulationConfig(n=8, d=3, beta=1.0, seed=1)
    assert build_problem(sa, initial_tokens(sa)).space == "sphere"
    usa = SimulationConfig(n=8, d=3, beta=1.0, model="usa", seed=1)
    assert "n_exp_beta" in build_problem(usa, initial_tokens(usa)).hints.fix


def test_iter_frames_is_integrate_of_the_models_problem():
    config = SimulationConfig(n=6, d=2, beta=0.0, model="kuramoto", omega="uniform:1",
                              T=0.4, dt=0.05, save_every=2, seed=2, batch=2,
                              weight_draws="independent")
    X0 = initial_tokens(config)
    frames = list(iter_frames(config, X0))
    saves = Saves(config.output_times(), observers=observation(config.observables, config))
    again = list(integrate(build_problem(config, X0), config.integrator, saves,
                           Controller(dt=config.dt)))
    for a, b in zip(frames, again, strict=True):
        assert np.array_equal(a.positions, b.positions)
        for key in a.observables:
            assert np.array_equal(a.observables[key], b.observables[key])
    # frame 0 holds the positions as given, not their round trip through the phases
    assert np.array_equal(frames[0].positions, X0)


def testblas_guard_follows_the_fields_declaration():
    blas = build_field(SimulationConfig(n=8, d=24, beta=1.0))
    direct = build_field(SimulationConfig(n=8, d=3, beta=1.0))
    assert blas.blas and not direct.blas
    assert "blas" in blas.name.split("_")
    # the declaration decides, not the name
    named = dataclasses.replace(direct, name="blas")
    assert type(blas_guard(named, "batch")).__name__ == "nullcontext"
    assert type(blas_guard(blas, "batch")).__name__ != "nullcontext"
    assert type(blas_guard(blas, "serial")).__name__ == "nullcontext"


def test_step_size_warning_takes_the_fields_rates():
    # one fast oscillator of 100: the message counts it (rates), and points at the caller
    field = angle_field("kuramoto", 100, coupling=0.0, omega=np.r_[np.zeros(99), 100.0])
    problem = Problem(state0=np.zeros((1, 100, 1)), space="flat", field=field)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        next(integrate(problem, "rk4", Saves(np.array([0.0, 0.1])), Controller(dt=0.1)))
    (w,) = [c for c in caught if issubclass(c.category, StepSizeWarning)]
    assert "only the fast tokens are at risk: 1 of 100 tokens (1.00%)" in str(w.message)
    assert w.filename == __file__


@pytest.mark.parametrize("model", ["kuramoto", "sa", "usa"])
def test_angle_field_drifts_match_their_numpy_twin(model):
    n = 9
    rng = np.random.default_rng(3)
    field = angle_field(model, n, beta=2.0, coupling=1.5, omega=rng.normal(size=n),
                        masses=np.linspace(0.5, 2.0, n))
    theta = rng.uniform(-np.pi, np.pi, (n, 1))
    for drift in (field.serial, field.parallel):
        out = np.empty((n, 1))
        drift(theta, field.params, out, np.empty(field.workspace(1)))
        np.testing.assert_allclose(out, field.reference(theta), rtol=1e-12, atol=1e-13)
    assert field.pairwise == (model != "kuramoto")


@pytest.mark.parametrize("model", sorted(MODELS))
def test_a_models_declared_cost_class_is_its_fields(model):
    """``Model.pairwise`` (what an estimate counts before building anything) says
    what the built field does: O(n^2) pairs, or O(n) for Kuramoto."""
    field = build_field(SimulationConfig(n=5, d=2, beta=1.0, model=model, seed=1))
    assert MODELS[model].pairwise == field.pairwise == (model != "kuramoto")
