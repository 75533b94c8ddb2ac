"""Noisy particle dynamics (issue 13, noise part): the stochastic steppers ``em`` and
``heun`` against NumPy twins, their strong orders on a fine-step reference driven
by the same Brownian path, the physics of Brownian motion on the sphere and the
circle, and the engine's promises (seeded bits whatever the layout, thread count
or batch split; a resumed run continues the same path; noise 0 is today's run).
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from clitools import invoke, ok, usage_error
from test_integrators import linear_drift as linear_rows  # y_i = A x_i

import particles
from particles._numba import jit
from particles.config import SimulationConfig
from particles.engine import iter_frames
from particles.integrators import INTEGRATORS, NOISE_DEFAULT, stochastic_integrators
from particles.integrators.driver import compiled_step, fixed_runner
from particles.integrators.noise import normals_reference
from particles.io import load
from particles.models import build_field
from particles.runs import initial_tokens, run_to_file
from particles.seeds import noise_key, noise_keys

SDE = ("em", "heun")


@jit
def pendulum(X, p, out, ws):
    """Flat drift f(theta_i) = omega - k sin(theta_i) (rows independent)."""
    omega, k = p[0], p[1]
    for i in range(X.shape[0]):
        out[i, 0] = omega - k * np.sin(X[i, 0])


# ------------------------------------------------------------------ NumPy twins
def _proj(X, V):
    return V - np.sum(X * V, axis=1, keepdims=True) * X


def _exp(X, V):
    t = np.linalg.norm(V, axis=1, keepdims=True)
    out = np.cos(t) * X + np.sinc(t / np.pi) * V
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def twin_advance(name, space, f, X, h, dW):
    """NumPy twin of ``make_increment_step``: one step of ``name`` driven by ``dW``."""
    if space == "flat":
        f1 = f(X)
        if name == "em":
            return X + h * f1 + dW
        return X + 0.5 * h * (f1 + f(X + h * f1 + dW)) + dW
    v1 = h * _proj(X, f(X)) + _proj(X, dW)
    if name == "em":
        return _exp(X, v1)
    Xp = _exp(X, v1)
    v2 = h * _proj(Xp, f(Xp)) + _proj(Xp, dW)
    return _exp(X, 0.5 * (v1 + _proj(X, v2)))


def _problem(space, n, rng):
    if space == "sphere":
        A = rng.normal(size=(3, 3))
        X0 = rng.normal(size=(n, 3))
        X0 /= np.linalg.norm(X0, axis=1, keepdims=True)
        return linear_rows, (A,), (lambda X: X @ A.T), X0
    p = (0.7, 1.5)
    return pendulum, p, (lambda X: p[0] - p[1] * np.sin(X)), rng.uniform(-3, 3, size=(n, 1))


@pytest.mark.parametrize("space", ["sphere", "flat"])
@pytest.mark.parametrize("name", SDE)
def test_compiled_step_equals_numpy_twin(name, space):
    rng = np.random.default_rng(0)
    drift, p, f, X0 = _problem(space, 7, rng)
    n, d = X0.shape
    key, sigma, h = noise_key(11, 2), 0.6, 0.05
    step = compiled_step(name, drift, space)
    S = np.empty((INTEGRATORS[name].stages, n, d))
    X, want = X0.copy(), X0.copy()
    for k in range(30):
        step(X, k * h, h, (*p, sigma), np.empty(1), S, key, 100 + k)
        want = twin_advance(name, space, f, want,
                            h, sigma * np.sqrt(h) * normals_reference(key, 100 + k, 0, n, d))
    np.testing.assert_allclose(X, want, rtol=1e-12, atol=1e-13)
    if space == "sphere":
        assert np.abs(np.linalg.norm(X, axis=1) - 1).max() < 1e-14


# ------------------------------------------------------------------ strong orders
def _strong_errors(name, space, sigma=0.8, T=1.0, paths=400, levels=(8, 16, 32, 64, 128),
                   fine=2**14):
    """RMS over paths of |X_h(T) - X_ref(T)| for coarse step counts ``levels``;
    the reference is ``heun`` with ``fine`` steps on the same Brownian path (the
    coarse increments are sums of the fine ones).  Rows are independent paths."""
    rng = np.random.default_rng(1)
    drift, p, _, X0 = _problem(space, paths, rng)
    n, d = X0.shape
    adv = INTEGRATORS[name].module.make_increment_step(drift, space)
    ref = INTEGRATORS["heun"].module.make_increment_step(drift, space)
    S = np.empty((4, n, d))
    ws = np.empty(1)
    hf = T / fine
    Xref = X0.copy()
    coarse = {m: X0.copy() for m in levels}
    acc = {m: np.zeros((n, d)) for m in levels}
    for k in range(fine):
        dW = sigma * np.sqrt(hf) * rng.standard_normal((n, d))
        ref(Xref, k * hf, hf, p, ws, S, dW)
        for m in levels:
            acc[m] += dW
            r = fine // m
            if (k + 1) % r == 0:
                adv(coarse[m], 0.0, T / m, p, ws, S, acc[m])
                acc[m][:] = 0.0
    errors = [np.sqrt(np.mean(np.sum((coarse[m] - Xref) ** 2, axis=1))) for m in levels]
    hs = [T / m for m in levels]
    return np.polyfit(np.log(hs), np.log(errors), 1)[0], errors


@pytest.mark.parametrize("space", ["sphere", "flat"])
@pytest.mark.parametrize("name", SDE)
def test_strong_order_on_the_same_brownian_path(name, space):
    order, errors = _strong_errors(name, space)
    declared = INTEGRATORS[name].strong_order_in(space)
    print(f"strong order {name} {space}: {order:.3f} (declared {declared}) {errors}")
    assert abs(order - declared) < 0.15, (name, space, order, errors)


def test_registry_declares_the_stochastic_steppers():
    assert stochastic_integrators() == SDE and NOISE_DEFAULT in SDE
    for name in SDE:
        entry = INTEGRATORS[name]
        assert entry.stochastic and not entry.adaptive and entry.strong_order == 0.5
        assert entry.spaces == ("sphere", "flat") and entry.strong_order_in("flat") == 1.0
    assert INTEGRATORS["em"].order == 1 and INTEGRATORS["heun"].order == 2
    assert INTEGRATORS["rk4"].strong_order_in("flat") is None


# ------------------------------------------------------------------ physics
def test_brownian_motion_on_the_sphere_decays_at_rate_d_minus_1_sigma2_over_2():
    # V = 0: no drift, pure noise.  E <x(t), x(0)> = exp(-(d - 1) sigma^2 t / 2)
    n, d, sigma = 3000, 3, 0.6
    times = (0.5, 1.0, 2.0)
    for name in SDE:
        traj = particles.simulate(n, d, 0.0, V=np.zeros((d, d)), noise=sigma, integrator=name,
                                  dt=0.01, save_times=times, T=2.0, seed=5,
                                  observables="order")
        X = traj.positions
        assert np.abs(np.linalg.norm(X, axis=-1) - 1).max() < 1e-13
        mean = np.einsum("tid,id->ti", X[1:], X[0]).mean(axis=1)
        want = np.exp(-(d - 1) * sigma**2 / 2 * np.array(times))
        # sampling error ~ 1 / sqrt(n) = 0.018 (a standard error below it)
        np.testing.assert_allclose(mean, want, atol=0.04)


def test_circle_pure_noise_order_parameter_decays_like_exp_minus_D_t():
    # Kuramoto with coupling 0 (the angle form, additive noise): d theta = sigma dW,
    # all tokens start at one point, r(t) = |E e^{i theta}| = exp(-D t), D = sigma^2 / 2
    n, sigma = 4000, 0.8
    D = sigma**2 / 2
    times = np.array([0.5, 1.0, 2.0, 3.0])
    x0 = np.tile([1.0, 0.0], (n, 1))
    for name in SDE:
        traj = particles.simulate(n, 2, 0.0, model="kuramoto", coupling=0.0, noise=sigma,
                                  integrator=name, dt=0.05, save_times=tuple(times), T=3.0,
                                  seed=7, x0=x0, observables="order")
        z = traj.positions[1:, :, 0] + 1j * traj.positions[1:, :, 1]
        r = np.abs(z.mean(axis=1))
        np.testing.assert_allclose(r, np.exp(-D * times), atol=0.03)
        # the recorded order parameter says the same
        np.testing.assert_allclose(traj.observables["order_parameter"][1:], r, atol=1e-12)


# ------------------------------------------------------------------ the engine
BASE = dict(n=12, d=3, beta=2.0, T=0.4, dt=0.02, save_every=5)


def test_noise_zero_is_the_deterministic_run_and_is_not_recorded():
    a = particles.simulate(**BASE, seed=1)
    b = particles.simulate(**BASE, seed=1, noise=0.0)
    np.testing.assert_array_equal(a.positions, b.positions)
    assert a.config.integrator == "rk4" and "noise" not in a.config.to_dict()
    c = SimulationConfig(4, 3, 1.0, noise=0.25)
    assert c.integrator == NOISE_DEFAULT and c.to_dict()["noise"] == 0.25
    assert SimulationConfig.from_json(c.to_json()) == c


@pytest.mark.parametrize("integrator", ["rk4", "euler", "geodesic", "dopri5"])
def test_noise_refuses_deterministic_integrators_in_one_line(integrator):
    with pytest.raises(ValueError, match=r"^integrator must be a fixed-step stochastic "
                       r"integrator \('em' or 'heun'\) when noise > 0 [^\n]*$"):
        SimulationConfig(4, 3, 1.0, noise=0.1, integrator=integrator)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "x"])
def test_noise_must_be_a_finite_number_at_least_zero(bad):
    with pytest.raises(ValueError, match=r"^noise must be a (finite )?number"):
        SimulationConfig(4, 3, 1.0, noise=bad)


def test_seeded_noise_is_reproducible_and_differs_between_systems_and_seeds():
    a = particles.simulate(**BASE, seed=3, noise=0.5, batch=3)
    b = particles.simulate(**BASE, seed=3, noise=0.5, batch=3)
    c = particles.simulate(**BASE, seed=4, noise=0.5, batch=3, x0=a.positions[0])
    np.testing.assert_array_equal(a.positions, b.positions)
    assert not np.allclose(a.positions[-1], c.positions[-1])
    # the same initial condition in every system, different Brownian paths
    d = particles.simulate(**BASE, seed=3, noise=0.5, batch=3, x0=a.positions[0, 0])
    assert not np.allclose(d.positions[-1, 0], d.positions[-1, 1])


@pytest.mark.parallel
@pytest.mark.parametrize("name", SDE)
def test_layouts_threads_and_batch_split_give_the_same_bits(name):
    # one configuration, every runner layout; keys per system index
    config = SimulationConfig(n=520, d=3, beta=1.0, batch=2, seed=9, noise=0.4,
                              integrator=name).resolved()
    field = build_field(config)
    keys = noise_keys(config.seed, 2)
    X0 = np.random.default_rng(0).normal(size=(2, 520, 3))
    X0 /= np.linalg.norm(X0, axis=-1, keepdims=True)
    p = (*field.params, config.noise)
    out = {}
    for layout, drift, threads in (("batch", field.serial, 1), ("batch", field.serial, 2),
                                   ("serial", field.serial, 1), ("rows", field.parallel, 2)):
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        try:
            X = X0.copy()
            wsize = field.workspace(numba.get_num_threads() if layout == "rows" else 1)
            fixed_runner(name, drift, layout)(X, 0.0, 3, 0.02, p, wsize, keys, 0)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        out[(layout, threads)] = X
    want = out[("batch", 1)]
    for got in out.values():
        np.testing.assert_array_equal(got, want)
    # system 1 alone, with its own key: the same bits (an ensemble split into tasks)
    X = X0[1:].copy()
    fixed_runner(name, field.serial, "serial")(X, 0.0, 3, 0.02, p, field.workspace(1),
                                              keys[1:], 0)
    np.testing.assert_array_equal(X[0], want[1])


def test_resumed_frames_continue_the_same_brownian_path():
    for config in (SimulationConfig(**BASE, seed=2, noise=0.7, batch=2),
                   SimulationConfig(n=10, d=2, beta=0.0, model="kuramoto", coupling=1.5,
                                    omega="gaussian:0.5", T=0.4, dt=0.02, save_every=5,
                                    seed=2, noise=0.7, integrator="em")):
        X0 = initial_tokens(config)
        frames = list(iter_frames(config, X0))
        k = 2
        rest = list(iter_frames(config, frames[k].positions, start=k,
                                start_step=frames[k].step))
        assert [f.index for f in rest] == list(range(k + 1, len(frames)))
        for a, b in zip(rest, frames[k + 1:], strict=True):
            np.testing.assert_array_equal(a.positions, b.positions)
            assert a.step == b.step


def test_every_model_layers_and_heads_take_noise():
    cases = [dict(model="usa"), dict(kernel="rbf", tau=0.5),
             dict(weights="gaussian", layer_time=0.1, batch=2, weight_draws="independent"),
             dict(heads=2, weights="gaussian")]
    for extra in cases:
        traj = particles.simulate(**{**BASE, "T": 0.2}, seed=1, noise=0.3, **extra)
        quiet = particles.simulate(**{**BASE, "T": 0.2}, seed=1, noise=0.3, **extra,
                                   integrator="heun")
        np.testing.assert_array_equal(traj.positions, quiet.positions)
        assert np.abs(np.linalg.norm(traj.positions, axis=-1) - 1).max() < 1e-13
        ref = particles.simulate(**{**BASE, "T": 0.2}, seed=1, **extra)
        assert not np.allclose(traj.positions[-1], ref.positions[-1]), extra


def test_simulate_cli_noise_and_resume(tmp_path):
    out = tmp_path / "noisy.h5"
    opts = ("--n", 8, "--d", 3, "--beta", 1, "--T", 0.3, "--dt", 0.02,
            "--seed", 4, "--noise", 0.5)
    args = ("simulate", "--out", out, *opts)
    ok(invoke(*args))
    traj = load(out)
    assert (traj.config.noise, traj.config.integrator) == (0.5, "heun")
    want = particles.simulate(8, 3, 1.0, T=0.3, dt=0.02, seed=4, noise=0.5)
    np.testing.assert_array_equal(traj.positions, want.positions)
    # an interrupted file resumed: the same path to the end
    part = tmp_path / "part.h5"
    calls = []
    config = traj.config
    with pytest.raises(KeyboardInterrupt):
        run_to_file(config, part, should_stop=lambda: calls.append(1) or len(calls) >= 2)
    assert load(part).positions.shape[0] < want.positions.shape[0]
    ok(invoke("simulate", "--out", part, *opts, "--resume"))
    np.testing.assert_array_equal(load(part).positions, want.positions)
    usage_error(invoke(*args[:-2], "--noise", -1), "noise must be a finite number >= 0")
    usage_error(invoke(*args, "--integrator", "dopri5"),
                "fixed-step stochastic integrator ('em' or 'heun')")
