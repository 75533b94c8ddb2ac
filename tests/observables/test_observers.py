"""Observers chosen per run: registry, defaults, Trajectory, files and the CLI."""

import json

import h5py
import numpy as np
import pytest
from clitools import invoke, ok, usage_error

import particles
from particles import sphere
from particles.config import SimulationConfig
from particles.observables import (
    NAMES,
    OBSERVERS,
    PAIRWISE_DEFAULT_MAX_N,
    Context,
    compute_observables,
    default_observers,
    observables_reference,
    observe,
)


def test_registry_entries_describe_themselves():
    assert set(OBSERVERS) == {"pairwise", "order", "spectral_energy"}
    assert OBSERVERS["pairwise"].datasets == NAMES and OBSERVERS["pairwise"].cost == "O(n^2)"
    for name in ("order", "spectral_energy"):
        assert OBSERVERS[name].cost == "O(n)"
        assert set(OBSERVERS[name].datasets) <= set(NAMES)


def test_default_rule():
    assert default_observers(PAIRWISE_DEFAULT_MAX_N, 3, 1.0) == ("pairwise",)
    assert default_observers(PAIRWISE_DEFAULT_MAX_N + 1, 3, 1.0) == ("order",)
    # on the circle at beta = 0 the pairwise set costs O(n log n): kept
    assert default_observers(100_000, 2, 0.0) == ("pairwise",)
    assert default_observers(100_000, 2, 0.5) == ("order",)
    cfg = SimulationConfig(n=100_000, d=3, beta=1.0, summation="direct")
    assert cfg.observables == ("order",)
    assert SimulationConfig(n=8, d=3, beta=1.0).observables == ("pairwise",)
    # the resolved choice is part of the configuration (and its JSON)
    assert json.loads(cfg.to_json())["observables"] == ["order"]
    assert SimulationConfig.from_json(cfg.to_json()) == cfg


def test_files_written_before_the_choice_read_as_pairwise():
    data = SimulationConfig(n=100_000, d=3, beta=1.0, summation="direct").to_dict()
    data.pop("observables")
    assert SimulationConfig.from_dict(data).observables == ("pairwise",)


def test_names_are_validated():
    with pytest.raises(ValueError, match=r"^observables must be one or more of pairwise, order"):
        SimulationConfig(n=4, d=3, beta=1.0, observables=("energy",))
    with pytest.raises(ValueError, match=r"^observables must not repeat"):
        SimulationConfig(n=4, d=3, beta=1.0, observables="order,order")
    assert SimulationConfig(n=4, d=3, beta=1.0, observables="order, pairwise").observables \
        == ("order", "pairwise")


@pytest.mark.parametrize("n", [1, 2, 40])
@pytest.mark.parametrize("batch", [None, 3])
def test_order_observer_matches_the_pairwise_values(batch, n):
    d = 3
    X = sphere.uniform(n, d, rng=np.random.default_rng(0), batch=batch).reshape(-1, n, d)
    m = np.linspace(0.5, 1.5, n)
    full = compute_observables(X, 2.0, m)
    part = OBSERVERS["order"].compute(X, Context(masses=m, beta=2.0))
    for k in OBSERVERS["order"].datasets:
        np.testing.assert_allclose(part[k], full[k], rtol=1e-13, atol=1e-15)
    ref = observables_reference(X[0], 2.0, m)
    assert part["order_parameter"][0] == pytest.approx(ref["order_parameter"], rel=1e-13)


def test_observe_selects_and_deduplicates():
    X = sphere.uniform(12, 3, rng=np.random.default_rng(1))[None]
    m = np.ones(12)
    full = compute_observables(X, 1.0, m)
    ctx = Context(masses=m, beta=1.0)
    both = observe(("order", "pairwise"), X, ctx)
    # registry order, each dataset once, computed by the pairwise pass: today's bits
    assert list(both) == list(NAMES)
    for k in NAMES:
        np.testing.assert_array_equal(both[k], full[k])
    assert list(observe(("order",), X, ctx)) == ["order_parameter", "mean_inner_product"]


def test_default_run_records_the_same_values_as_before():
    traj = particles.simulate(6, 3, 1.5, T=0.2, seed=3)
    assert traj.config.observables == ("pairwise",)
    assert list(traj.observables) == list(NAMES)
    want = compute_observables(traj.positions[-1][None], 1.5, np.ones(6))
    for k in NAMES:
        np.testing.assert_array_equal(traj.observables[k][-1], want[k][0])


def test_chosen_observers_only_in_trajectory_and_file(tmp_path):
    traj = particles.simulate(6, 3, 1.0, T=0.2, seed=3, batch=2, observables=["order"])
    assert set(traj.observables) == {"order_parameter", "mean_inner_product"}
    assert traj.observables["order_parameter"].shape == (traj.frames, 2)
    ref = particles.simulate(6, 3, 1.0, T=0.2, seed=3, batch=2)
    np.testing.assert_array_equal(traj.positions, ref.positions)
    np.testing.assert_allclose(traj.observables["order_parameter"],
                               ref.observables["order_parameter"], rtol=1e-13)

    out = tmp_path / "run.h5"
    particles.run_to_file(SimulationConfig(n=6, d=3, beta=1.0, T=0.2, seed=3,
                                           observables="order"), out)
    with h5py.File(out, "r") as f:
        assert set(f["observables"]) == {"order_parameter", "mean_inner_product"}
        assert json.loads(f["parameters"].attrs["config"])["observables"] == ["order"]
    loaded = particles.load(out)
    assert loaded.config.observables == ("order",)
    assert set(loaded.observables) == {"order_parameter", "mean_inner_product"}


def test_cli_observables(tmp_path):
    out = tmp_path / "run.h5"
    res = invoke("simulate", "--n", "5", "--d", "3", "--beta", "1", "--T", "0.1", "--seed",
                 "1", "--observables", "order", "--out", str(out))
    ok(res)
    with h5py.File(out, "r") as f:
        assert set(f["observables"]) == {"order_parameter", "mean_inner_product"}
    bad = invoke("simulate", "--n", "5", "--d", "3", "--beta", "1", "--T", "0.1",
                 "--observables", "pairwise,nope", "--out", str(tmp_path / "bad.h5"))
    usage_error(bad, "--observables", "observables must be one or more of", "'nope'")
    assert not (tmp_path / "bad.h5").exists()


# --------------------------------------- observers with settings (the sweep's)
def test_sweep_observers_take_settings_and_are_not_run_choices():
    from particles.observables import ALL_OBSERVERS, observation

    assert {"close_pairs", "clusters", "pair_energy"} <= set(ALL_OBSERVERS)
    assert not any(ALL_OBSERVERS[k].per_run for k in ("close_pairs", "clusters", "pair_energy"))
    assert ALL_OBSERVERS["close_pairs"].settings == ("deltas",)
    spec = SimulationConfig(n=6, d=3, beta=1.0)
    with pytest.raises(ValueError, match="clusters needs 'eps'"):
        observation(("clusters",), spec)
    with pytest.raises(ValueError, match="observers must be among"):
        observation(("nope",), spec)


def test_close_pairs_and_clusters_share_one_pass(monkeypatch):
    from particles.analysis.components import component_labels
    from particles.observables import observation
    from particles.observables import pairs as pair_pass

    n, d = 10, 3
    spec = SimulationConfig(n=n, d=d, beta=1.5, masses=np.linspace(0.5, 2.0, n))
    X = sphere.uniform(n, d, rng=np.random.default_rng(2), batch=3).reshape(3, n, d)
    X[:, 1] = X[:, 0]  # a close pair and a cluster in every system
    settings = {"deltas": (0.5, 0.1), "eps": 0.3}
    calls = []
    real = pair_pass.frame_statistics
    monkeypatch.setattr(pair_pass, "frame_statistics",
                        lambda *a: calls.append(a) or real(*a))
    both = observation(("clusters", "close_pairs", "pair_energy", "order"), spec,
                       settings=settings)(X)
    assert len(calls) == 1
    assert list(both) == ["order_parameter", "mean_inner_product", "pair_counts",
                          "cluster_count", "energy"]
    want_pairs, want_counts, want_energy = real(X, np.array(settings["deltas"]), 0.3, 1.5,
                                                spec.mass_array())
    assert np.array_equal(both["pair_counts"], want_pairs)
    assert np.array_equal(both["cluster_count"], component_labels(X, 0.3)[1])
    assert np.array_equal(both["energy"], want_energy)
    # alone, each gives its own dataset, the same numbers
    alone = observation(("close_pairs",), spec, settings=settings)(X)
    assert list(alone) == ["pair_counts"] and np.array_equal(alone["pair_counts"], want_pairs)
    alone = observation(("clusters",), spec, settings={"eps": 0.3})(X)
    assert list(alone) == ["cluster_count"]
    assert np.array_equal(alone["cluster_count"], want_counts)
    # the pass's energy is the pairwise observer's to rounding
    full = compute_observables(X, 1.5, spec.mass_array())
    np.testing.assert_allclose(both["energy"], full["energy"], rtol=1e-12)


def test_the_energy_observers_record_the_kernel_that_ran():
    from particles.observables import kernel_energy, observation

    spec = SimulationConfig(n=7, d=3, beta=1.0, kernel="rbf", tau=0.6)
    X = sphere.uniform(7, 3, rng=np.random.default_rng(4), batch=2).reshape(2, 7, 3)
    want = kernel_energy(X, spec.mass_array(), observation(("pairwise",), spec)
                         .context.settings["energy"])
    got = observation(("pairwise", "pair_energy"), spec)(X)
    assert np.array_equal(got["energy"], want["energy"])
    assert np.array_equal(got["energy_normalized"], want["energy_normalized"])
    sweep = observation(("pair_energy",), spec)(X)
    assert np.array_equal(sweep["energy"], want["energy"])
