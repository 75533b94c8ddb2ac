"""The analysis of large systems without the pair loop: the observables by
cells and the spectral series, the pair counts of a subsample, each against
the pair loop (the thresholds lowered so that the systems stay small)."""

from __future__ import annotations

import numpy as np
import pytest
from synthetic import write_file

import particles
from particles.analysis import Scalars, _pairs, analyze, large, write_analysis
from particles.analysis._pairs import pair_counts, pair_counts_reference, scale_counts
from particles.analysis.minimum import TOL, min_inner_product
from particles.io.analysis import read_analysis_group
from particles.sphere import normalize


def clustered(n: int, d: int, k: int, spread: float, rng) -> np.ndarray:
    c = normalize(rng.normal(size=(k, d)))
    return normalize(c[rng.integers(0, k, n)] + spread * rng.normal(size=(n, d)))


@pytest.mark.parametrize("d", [2, 3, 5])
def test_min_inner_product_is_the_pair_loops(d):
    rng = np.random.default_rng(d)
    cases = [normalize(rng.normal(size=(900, d))), clustered(900, d, 3, 1e-3, rng),
             clustered(900, d, 1, 1e-3, rng), clustered(900, d, 1, 1e-9, rng),
             clustered(900, d, 40, 0.05, rng), normalize(rng.normal(size=(2, d)))]
    for x in cases:
        # the pair loop's arithmetic: products summed in coordinate order
        g = sum(x[:, a, None] * x[None, :, a] for a in range(d))
        ref = g[np.triu_indices(x.shape[0], 1)].min()
        got = min_inner_product(x)
        assert ref <= got <= ref + TOL
    with pytest.raises(ValueError, match="2 tokens"):
        min_inner_product(np.ones((1, d)))


@pytest.mark.parametrize(("d", "beta"), [(2, 4.0), (3, 4.0), (3, 0.0)])
def test_large_scalars_match_the_pair_loop(monkeypatch, d, beta):
    rng = np.random.default_rng(7)
    x = np.stack([clustered(700, d, 6, 0.02, rng), normalize(rng.normal(size=(700, d)))])
    m = rng.uniform(0.5, 2.0, 700)
    ref = Scalars(beta, masses=m).compute(x)
    monkeypatch.setattr(large, "LARGE_N", 500)
    assert large.use_large(700, d) and not large.use_large(700, 4)
    got = Scalars(beta, masses=m).compute(x)
    for name in ("order_parameter", "mean_inner_product", "span_dimension",
                 "close_pair_fraction"):
        np.testing.assert_array_equal(getattr(got, name), getattr(ref, name), err_msg=name)
    for name in ("energy", "energy_normalized"):
        np.testing.assert_allclose(getattr(got, name), getattr(ref, name), rtol=1e-11)
    assert np.all(ref.min_inner_product <= got.min_inner_product)
    assert np.all(got.min_inner_product <= ref.min_inner_product + TOL)


def test_pair_counts_of_a_subsample_estimate_all_pairs(monkeypatch, tmp_path):
    rng = np.random.default_rng(3)
    n = 2500
    x = np.stack([clustered(n, 3, 5, 0.3, rng), normalize(rng.normal(size=(n, 3)))])
    exact, close = pair_counts_reference(x, 20, threshold=0.9)
    monkeypatch.setattr(_pairs, "PAIR_SAMPLE", 600)
    hist, close_est = pair_counts(x, 20, threshold=0.9)
    pairs = n * (n - 1) // 2
    np.testing.assert_array_equal(hist.sum(axis=1), pairs)
    p = exact / pairs
    # the stated bound on the standard error: 2 sqrt(p (1 - p) / s); 5 of them
    assert np.all(np.abs(hist / pairs - p) <= 5 * 2 * np.sqrt(p * (1 - p) / 600) + 1e-9)
    q = close / pairs
    assert np.all(np.abs(close_est / pairs - q) <= 10 * np.sqrt(q * (1 - q) / 600) + 1e-9)
    # the file says so
    traj = particles.simulate(n, 3, 1.0, integrator="euler", dt=0.1, T=0.1, save_every=1,
                              seed=0, x0=x[1])
    path = write_file(tmp_path / "big.h5", traj)
    write_analysis(path, analyze(traj))
    assert read_analysis_group(path).attrs["pair_sample"] == 600
    # the same tokens in every frame: a repeated system gives the same counts
    again, _ = pair_counts(x[[1, 1]], 20, threshold=0.9)
    np.testing.assert_array_equal(again[0], hist[1])
    np.testing.assert_array_equal(again[1], hist[1])


def test_scale_counts_keeps_the_scaled_total():
    c = np.array([[3, 5, 0, 7], [1, 1, 1, 1], [0, 0, 0, 0]])
    out = scale_counts(c, 2.5)
    np.testing.assert_array_equal(out.sum(axis=1), np.rint(c.sum(axis=1) * 2.5))
    assert np.all(np.abs(out - 2.5 * c) < 1)


def test_the_spread_rule_by_cells_is_the_pair_loops():
    from particles.analysis.minimum import wide_by_cells
    from particles.observables.spread import wide_systems_reference

    rng = np.random.default_rng(11)
    u = normalize(rng.normal(size=(1200, 3)))
    systems = []
    for cap in (70.0, 89.0, 100.0, 120.0):  # one component, caps round the pole
        keep = u[u[:, 2] > np.cos(np.radians(cap / 2))]
        systems.append((keep, np.zeros(len(keep), dtype=np.int64)))
    # exactly 90 degrees apart: <x_i, x_j> = 0 is not wide
    square = np.array([[1.0, 0, 0], [0, 1.0, 0], [np.sqrt(0.5), np.sqrt(0.5), 0]])
    systems.append((square, np.zeros(3, dtype=np.int64)))
    # three clusters mutually 85 degrees apart, chained: no token within 45
    # degrees of their mean, no pair beyond 90 (the pair loop's O(n^2) case)
    g = np.full((3, 3), np.cos(np.radians(85.0)))
    np.fill_diagonal(g, 1.0)
    three = normalize(np.linalg.cholesky(g)[rng.integers(0, 3, 1200)]
                      + 0.01 * rng.normal(size=(1200, 3)))
    systems.append((three, np.zeros(1200, dtype=np.int64)))
    x = clustered(1200, 3, 8, 0.3, rng)
    systems.append((x, (x[:, 0] > 0).astype(np.int64)))  # two hemispheres' worth
    systems.append((x, np.arange(1200)))  # singletons
    wide = [wide_by_cells(x, lab) for x, lab in systems]
    assert wide == [bool(wide_systems_reference(x[None], lab[None])[0]) for x, lab in systems]
    assert wide[:6] == [False, False, True, True, False, False]
