"""The orchestrator: shapes, reproducibility, layouts, warnings and errors."""

from __future__ import annotations

import numpy as np
import pytest

from particles import IntegrationError, StepSizeWarning, simulate
from particles.engine import ROWS_PARALLEL_MIN_N


def test_shapes_and_record():
    traj = simulate(10, 3, 1.0, T=1.0, dt=0.05, save_every=4, seed=1)
    assert traj.positions.shape == (6, 10, 3)
    np.testing.assert_allclose(traj.times, [0, 0.2, 0.4, 0.6, 0.8, 1.0])
    # a final time that is not a multiple of the save interval gets its own frame
    short = simulate(10, 3, 1.0, T=0.5, dt=0.05, save_every=4, seed=1)
    np.testing.assert_allclose(short.times, [0, 0.2, 0.4, 0.5])
    assert short.steps.tolist() == [0, 4, 8, 10]
    assert traj.config.seed == 1 and traj.complete
    for name in ("energy", "energy_normalized", "order_parameter", "min_inner_product",
                 "mean_inner_product"):
        assert traj.observables[name].shape == (traj.frames,)


def test_frame_times_and_steps():
    traj = simulate(6, 3, 1.0, T=1.0, dt=0.05, save_every=5, seed=1)
    np.testing.assert_allclose(traj.times, [0, 0.25, 0.5, 0.75, 1.0])
    assert traj.steps.tolist() == [0, 5, 10, 15, 20]


def test_same_seed_same_result_and_different_seed_differs():
    a = simulate(16, 4, 2.0, T=1.0, seed=42)
    b = simulate(16, 4, 2.0, T=1.0, seed=42)
    c = simulate(16, 4, 2.0, T=1.0, seed=43)
    np.testing.assert_array_equal(a.positions, b.positions)
    assert not np.allclose(a.positions[0], c.positions[0])


def test_unseeded_run_records_its_seed():
    a = simulate(8, 3, 1.0, T=0.5)
    b = simulate(8, 3, 1.0, T=0.5, seed=a.config.seed)
    np.testing.assert_array_equal(a.positions, b.positions)


@pytest.mark.parallel
def test_batch_systems_equal_single_runs():
    batch = simulate(12, 3, 3.0, T=1.0, batch=3, seed=4, integrator="rk4")
    assert batch.positions.shape == (11, 3, 12, 3)
    assert batch.observables["energy"].shape == (11, 3)
    for b in range(3):
        single = simulate(12, 3, 3.0, T=1.0, x0=batch.positions[0, b], integrator="rk4")
        np.testing.assert_array_equal(single.positions, batch.positions[:, b])


@pytest.mark.parallel
def test_batch_of_adaptive_systems():
    traj = simulate(8, 3, 2.0, T=2.0, batch=4, seed=0, integrator="dopri5", dt=0.1,
                    save_every=5)
    assert traj.positions.shape[1:] == (4, 8, 3)
    acc = traj.observables["accepted_steps"]
    assert np.all(np.diff(acc, axis=0) >= 1)


@pytest.mark.parallel
def test_row_parallel_layout_matches_reference_path():
    """One large system (rows in parallel) equals the same system in a batch of two."""
    n = ROWS_PARALLEL_MIN_N
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(n, 3))
    single = simulate(n, 3, 4.0, x0=x0, T=0.02, dt=0.01, save_every=1, integrator="euler")
    pair = simulate(n, 3, 4.0, x0=np.stack([x0, x0]), batch=2, T=0.02, dt=0.01,
                    save_every=1, integrator="euler")
    np.testing.assert_allclose(single.positions, pair.positions[:, 0], rtol=0, atol=1e-15)


def test_usa_step_size_warning():
    with pytest.warns(StepSizeWarning, match="dt"):
        simulate(8, 3, 6.0, model="usa", dt=0.01, T=0.2, seed=0, integrator="euler")
    # the time-changed scale keeps speeds O(1): no warning
    simulate(8, 3, 6.0, model="usa", usa_scale="n_exp_beta", dt=0.1, T=0.2, seed=0)


def test_x0_validation():
    with pytest.raises(ValueError, match=r"x0 must have shape \(4, 3\)"):
        simulate(4, 3, 1.0, x0=np.ones((5, 3)))
    with pytest.raises(ValueError, match="finite"):
        simulate(2, 2, 1.0, x0=np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="nonzero"):
        simulate(2, 2, 1.0, x0=np.array([[0.0, 0.0], [0.0, 1.0]]))


def test_x0_is_normalized_and_recorded():
    traj = simulate(2, 2, 1.0, x0=np.array([[2.0, 0.0], [0.0, 3.0]]), T=0.1)
    np.testing.assert_allclose(traj.positions[0], [[1, 0], [0, 1]])
    assert traj.config.init == "array"


def test_inits():
    for init in ("uniform", "orthogonal", "cap:0.2", "vmf:50"):
        traj = simulate(3, 3, 1.0, init=init, T=0.0, seed=1)
        np.testing.assert_allclose(np.linalg.norm(traj.positions[0], axis=-1), 1)
    cap = simulate(50, 3, 1.0, init="cap:0.2", T=0.0, seed=1).positions[0]
    assert np.all(cap @ np.array([1.0, 0, 0]) >= np.cos(0.2) - 1e-12)
    eq = simulate(4, 2, 1.0, init="equispaced", T=0.0, seed=1).positions[0]
    np.testing.assert_allclose(eq @ eq.T, np.round(eq @ eq.T), atol=1e-15)


def test_non_finite_state_raises():
    # V with a huge norm and a huge step drives Euler to overflow
    with pytest.warns(StepSizeWarning), pytest.raises(IntegrationError, match="non-finite"):
        simulate(4, 3, 1.0, V=1e300 * np.eye(3), dt=1e10, T=1e10, integrator="rk4", seed=0)


def test_masses_equal_duplicated_tokens():
    """A token of mass 2 acts like two coincident tokens of mass 1."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    dup = np.vstack([x, x[:1]])
    a = simulate(4, 3, 2.0, x0=x, masses=[2, 1, 1, 1], T=1.0, dt=0.01)
    b = simulate(5, 3, 2.0, x0=dup, T=1.0, dt=0.01)
    np.testing.assert_allclose(a.positions, b.positions[:, :4], rtol=0, atol=1e-13)
