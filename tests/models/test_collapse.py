"""Collapsed clusters: coincident tokens as one weighted token, exactly."""

from __future__ import annotations

import numpy as np
import pytest
from clitools import invoke, ok

from particles import load, simulate
from particles.config import COLLAPSE_TOL, SimulationConfig
from particles.errors import ConfigError
from particles.models import collapse


def _groups_reference(X, tol):
    """Chains of pairs within tol by brute force and union-find (NumPy twin)."""
    n = len(X)
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            i = parent[i]
        return i

    D = np.linalg.norm(X[:, None] - X[None], axis=-1)
    for i, j in zip(*np.nonzero(np.triu(D <= tol, 1)), strict=True):
        parent[root(i)] = root(j)
    roots = [root(i) for i in range(n)]
    order = {}
    labels = np.array([order.setdefault(r, len(order)) for r in roots])
    return labels


def test_groups_equal_the_brute_force_count():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(7, 3))
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    X = base[rng.integers(0, 7, 200)] + rng.choice([0.0, 1e-17, 3e-16], size=(200, 1))
    # a chain: 4-5 close, 5-6 close, 4-6 not
    X[5], X[6] = X[4], X[4]
    X[5, 0] += 0.6 * COLLAPSE_TOL
    X[6, 0] += 1.2 * COLLAPSE_TOL
    assert np.linalg.norm(X[6] - X[4]) > COLLAPSE_TOL
    labels, first = collapse.groups(X, COLLAPSE_TOL)
    np.testing.assert_array_equal(labels, _groups_reference(X, COLLAPSE_TOL))
    assert labels[4] == labels[5] == labels[6]
    np.testing.assert_array_equal(labels[first], np.arange(first.size))
    assert np.all(np.diff(first) > 0)
    assert collapse.groups(np.eye(3), COLLAPSE_TOL)[1].size == 3


@pytest.mark.parametrize("seed", range(6))
def test_groups_of_collapsed_clusters_equal_the_brute_force_ones(seed):
    """Many exact copies (tokens that follow their group) and a few near ones: the
    distinct rows are grouped first, the partition is the brute force's."""
    rng = np.random.default_rng(seed)
    d = 2 + seed % 2
    base = rng.normal(size=(rng.integers(1, 6), d))
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    X = base[rng.integers(0, len(base), 150)]
    near = rng.random(150) < 0.2
    X[near] += rng.choice([1e-16, 4e-16, 1e-15, 1e-9], size=(near.sum(), 1)) * rng.normal(
        size=(near.sum(), d))
    for tol in (COLLAPSE_TOL, 1e-12):
        labels, first = collapse.groups(X, tol)
        np.testing.assert_array_equal(labels, _groups_reference(X, tol))
        np.testing.assert_array_equal(first, [np.flatnonzero(labels == g)[0]
                                              for g in range(first.size)])


@pytest.mark.parametrize("kw", [
    dict(model="sa"),
    dict(model="usa", usa_scale="n_exp_beta"),
    # the series' degree follows the smallest mass, so groups truncate it
    # elsewhere: within its tol (here 1e-14) at every evaluation
    dict(model="sa", summation="spectral", tol=1e-14),
    dict(model="sa", summation="spectral", V="minus_identity"),
])
def test_on_and_off_give_the_same_trajectory_where_it_engages(kw):
    """n = 64 on the circle at beta = 9 forms 3 clusters that reach round-off
    by t ~ 60: from there the field runs on 3 tokens, and the trajectory is the
    uncollapsed one to 1e-12 (fixed steps; masses unequal)."""
    rng = np.random.default_rng(1)
    run = dict(integrator="rk4", dt=0.1, T=300.0, save_every=100, seed=1,
               masses=rng.uniform(0.5, 2.0, 64), **kw)
    if kw.get("V") == "minus_identity":
        run.update(T=20.0, save_every=20)  # repulsive: nothing coincides, nothing collapses
    on = simulate(64, 2, 9.0, **run)
    off = simulate(64, 2, 9.0, collapse_tol=0.0, **run)
    assert on.config.collapses()
    distinct = collapse.groups(on.positions[-1], COLLAPSE_TOL)[1].size
    assert distinct == (64 if "V" in kw else 3)
    np.testing.assert_allclose(on.positions, off.positions, rtol=0, atol=1e-12)


def test_where_it_is_not_exact_it_is_not_used_and_a_set_value_is_refused():
    noisy = SimulationConfig(n=8, d=2, beta=1.0, noise=0.1)
    assert not noisy.collapses()
    for kw, why in ((dict(noise=0.1), "noise"), (dict(heads=2), "heads"),
                    (dict(V="minus_identity", model="usa"), None),
                    (dict(batch=2), "ensemble"), (dict(model="kuramoto"), "attention")):
        if why is None:
            assert SimulationConfig(n=8, d=2, beta=1.0, collapse_tol=1e-14, **kw).collapses()
            continue
        with pytest.raises(ConfigError, match=why) as info:
            SimulationConfig(n=8, d=2, beta=1.0, collapse_tol=1e-14, **kw)
        assert info.value.field == "collapse_tol"
    with pytest.raises(ConfigError, match="collapse_tol"):
        SimulationConfig(n=8, d=2, beta=1.0, collapse_tol=0.1)


@pytest.mark.parametrize("integrator", ["rk4", "dopri5"])
def test_a_resumed_collapsed_run_equals_the_uninterrupted_one(tmp_path, integrator):
    """Groups are read again from the stored frame: bit for bit."""
    base = ["simulate", "--n", "48", "--d", "2", "--beta", "9", "--integrator", integrator,
            "--dt", "0.1", "--seed", "3", "--save-every", "100"]
    if integrator == "dopri5":
        base += ["--rtol", "1e-8"]
    whole, part = tmp_path / "whole.h5", tmp_path / "part.h5"
    ok(invoke(*base, "--T", "400", "--out", whole))
    ok(invoke(*base, "--T", "200", "--out", part))
    ok(invoke(*base, "--T", "400", "--out", part, "--resume"))
    a, b = load(whole), load(part)
    assert collapse.groups(a.positions[-1], COLLAPSE_TOL)[1].size < 48
    np.testing.assert_array_equal(a.positions, b.positions)
    for name in a.observables:
        np.testing.assert_array_equal(a.observables[name], b.observables[name])
