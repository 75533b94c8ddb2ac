"""Exact W1 on the circle (particles.meanfield.wasserstein) against brute force.

Oracles: scipy.stats.wasserstein_distance on measures inside an arc of length <= pi
(there the arc-length distance is the distance on the line), a linear program with
the geodesic cost matrix, closed forms, and cells replaced by many sub-atoms.
"""

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.stats import wasserstein_distance

from particles.meanfield.wasserstein import (
    quantile_angles,
    sample_density,
    w1_circle_densities,
    w1_circle_density,
    w1_circle_samples,
)

TWO_PI = 2 * np.pi


def _lp_w1(xa, wa, xb, wb):
    """Optimal transport by linear programming with the geodesic cost (brute force)."""
    d = np.abs(np.mod(xa[:, None] - xb[None, :], TWO_PI))
    cost = np.minimum(d, TWO_PI - d)
    na, nb = len(xa), len(xb)
    rows = [np.kron(np.eye(na), np.ones(nb)), np.kron(np.ones(na), np.eye(nb))]
    res = linprog(cost.ravel(), A_eq=np.vstack(rows), b_eq=np.concatenate([wa, wb]),
                  bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


def _sub_atoms(rho, S):
    """Each cell [theta_j - pi/M, theta_j + pi/M) as S equal atoms at sub-cell midpoints."""
    M = len(rho)
    h = TWO_PI / M
    offs = (np.arange(S) + 0.5) / S * h - h / 2
    x = (np.arange(M)[:, None] * h + offs[None, :]).ravel()
    w = np.repeat(np.asarray(rho, float) / S, S)
    return x, w / w.sum()


def test_closed_forms():
    assert w1_circle_samples([0.0], [1.0]) == pytest.approx(1.0)
    assert w1_circle_samples([0.0], [5.0]) == pytest.approx(TWO_PI - 5.0)  # the short way
    assert w1_circle_samples([0.1], [0.1 + np.pi]) == pytest.approx(np.pi)
    assert w1_circle_samples([-1.0, 3.0], [1.0 + TWO_PI * 7, 3.0 - TWO_PI]) == pytest.approx(1.0)
    # a point against the uniform density: the mean arc length to a point, pi/2, on any grid
    for M in (1, 2, 7, 64):
        assert w1_circle_density([0.3], np.ones(M)) == pytest.approx(np.pi / 2, rel=1e-13)
        two_turns = [-0.3, -0.3 + 4 * np.pi]  # one point, twice
        assert w1_circle_density(two_turns, np.full(M, 5.0)) == pytest.approx(np.pi / 2)
    # uniform against uniform on two different grids, and a density against itself
    assert w1_circle_densities(np.ones(8), np.ones(9)) == pytest.approx(0.0, abs=1e-14)
    rho = np.random.default_rng(0).uniform(0.1, 1, 32)
    assert w1_circle_densities(rho, 3 * rho) == pytest.approx(0.0, abs=1e-14)
    # two single-cell densities: a rotation by three cells
    M = 16
    a, b = np.zeros(M), np.zeros(M)
    a[2], b[5] = 1.0, 1.0
    assert w1_circle_densities(a, b) == pytest.approx(3 * TWO_PI / M, rel=1e-12)
    a, b = np.zeros(M), np.zeros(M)
    a[1], b[M - 2] = 1.0, 1.0  # across the cut at 0
    assert w1_circle_densities(a, b) == pytest.approx(3 * TWO_PI / M, rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_samples_on_an_arc_match_scipy(seed):
    rng = np.random.default_rng(seed)
    start = rng.uniform(0, TWO_PI)  # the arc may cross the cut at 0
    na, nb = rng.integers(1, 60, 2)
    xa = start + rng.uniform(0, np.pi, na)
    xb = start + rng.uniform(0, np.pi, nb)
    wa, wb = rng.uniform(0.1, 2, na), rng.uniform(0.1, 2, nb)
    expected = wasserstein_distance(xa, xb, wa, wb)
    # angles unrolled by arbitrary turns: the same measure on the circle
    ka, kb = rng.integers(-5, 5, na), rng.integers(-5, 5, nb)
    got = w1_circle_samples(xa + TWO_PI * ka, xb + TWO_PI * kb, wa, wb)
    assert got == pytest.approx(expected, rel=1e-11, abs=1e-13)
    assert w1_circle_samples(xb, xa, wb, wa) == pytest.approx(got, rel=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_samples_match_linear_programming(seed):
    rng = np.random.default_rng(100 + seed)
    na, nb = rng.integers(1, 9, 2)
    xa, xb = rng.uniform(-10, 10, na), rng.uniform(-10, 10, nb)
    if seed % 2:
        xb[: min(na, nb)] = xa[: min(na, nb)]  # shared atoms
    wa, wb = rng.uniform(0.1, 1, na), rng.uniform(0.1, 1, nb)
    expected = _lp_w1(xa, wa / wa.sum(), xb, wb / wb.sum())
    assert w1_circle_samples(xa, xb, wa, wb) == pytest.approx(expected, rel=1e-7, abs=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_densities_match_sub_atoms(seed):
    """W1 with cells replaced by S atoms each differs by at most (2 pi / M) / (4 S)."""
    rng = np.random.default_rng(200 + seed)
    Ma, Mb, S = 12, 17, 40
    rho_a = rng.uniform(0, 1, Ma) ** 3
    rho_b = rng.uniform(0, 1, Mb) ** 3
    xs = rng.uniform(0, TWO_PI, 25)
    ws = rng.uniform(0.2, 1, 25)
    xa, wa = _sub_atoms(rho_a, S)
    xb, wb = _sub_atoms(rho_b, S)
    tol_a, tol_b = TWO_PI / Ma / (4 * S), TWO_PI / Mb / (4 * S)
    assert w1_circle_densities(rho_a, rho_b) == pytest.approx(
        w1_circle_samples(xa, xb, wa, wb), abs=tol_a + tol_b + 1e-12)
    assert w1_circle_density(xs, rho_a, ws) == pytest.approx(
        w1_circle_samples(xs, xa, ws, wa), abs=tol_a + 1e-12)


def test_rotation_and_symmetry():
    rng = np.random.default_rng(7)
    M = 24
    rho = rng.uniform(0, 1, M)
    x = rng.uniform(0, TWO_PI, 40)
    base = w1_circle_density(x, rho)
    for s in (1, 5, M - 1):
        # rotating both measures by s cells changes nothing
        assert w1_circle_density(x + s * TWO_PI / M, np.roll(rho, s)) == pytest.approx(
            base, rel=1e-11)
    other = rng.uniform(0, 1, M)
    assert w1_circle_densities(rho, other) == pytest.approx(w1_circle_densities(other, rho))
    assert w1_circle_densities(np.roll(rho, 3), np.roll(other, 3)) == pytest.approx(
        w1_circle_densities(rho, other), rel=1e-11)


def test_empirical_measure_converges_at_rate_one_over_sqrt_n():
    rng = np.random.default_rng(3)
    M = 256
    theta = np.arange(M) * TWO_PI / M
    rho = np.exp(2 * np.cos(theta))
    cdf = np.cumsum(rho) / rho.sum()
    ns = np.array([100, 1000, 10000, 100000])
    means = []
    for n in ns:
        vals = []
        for _ in range(8):  # inverse-cdf sampling of the piecewise-constant density
            u = rng.uniform(0, 1, n)
            j = np.searchsorted(cdf, u)
            lo = np.concatenate([[0.0], cdf])[j]
            x = (j - 0.5 + (u - lo) / (cdf[j] - lo)) * TWO_PI / M
            vals.append(w1_circle_density(x, rho))
            vals.append(w1_circle_density(sample_density(rho, n, rng), rho))
        means.append(np.mean(vals))
    slope = np.polyfit(np.log(ns), np.log(means), 1)[0]
    assert -0.6 < slope < -0.4


def test_sampling_follows_the_cells():
    rng = np.random.default_rng(5)
    M, n = 16, 200_000
    rho = rng.uniform(0, 1, M)
    rho[3] = 0.0  # an empty cell gets no sample
    x = sample_density(rho, n, rng)
    assert x.shape == (n,) and x.min() >= -np.pi / M and x.max() < TWO_PI - np.pi / M
    counts = np.bincount(np.floor(x * M / TWO_PI + 0.5).astype(int) % M, minlength=M)
    p = rho / rho.sum()
    assert counts[3] == 0
    chi2 = np.sum((counts - n * p)[p > 0] ** 2 / (n * p[p > 0]))
    assert chi2 < 40  # 14 degrees of freedom: far in the tail
    # uniform within a cell: the mean offset from the centre is 0
    off = np.mod(x + np.pi / M, TWO_PI / M) - np.pi / M
    assert abs(off.mean()) < 5 * (TWO_PI / M) / np.sqrt(12 * n)


def test_quantile_tokens_are_at_distance_pi_over_2n():
    for n in (1, 10, 333):
        assert w1_circle_density(quantile_angles(np.ones(64), n), np.ones(64)) == pytest.approx(
            np.pi / (2 * n), rel=1e-12)
    M = 512
    theta = np.arange(M) * TWO_PI / M
    rho = np.exp(np.cos(theta) + 0.5 * np.sin(3 * theta))
    for n in (100, 1000):
        x = quantile_angles(rho, n)
        assert np.all(np.diff(x) > 0)
        assert w1_circle_density(x, rho) == pytest.approx(np.pi / (2 * n), rel=5.0 / n)


def test_bad_input():
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        sample_density(np.ones(4), 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rho must be >= 0"):
        quantile_angles([1.0, -0.1, 1.0, 1.0], 3)
    with pytest.raises(ValueError, match="theta_a must be"):
        w1_circle_samples([], [1.0])
    with pytest.raises(ValueError, match="theta_b must be finite"):
        w1_circle_samples([0.0], [np.nan])
    with pytest.raises(ValueError, match="weights_a must have shape"):
        w1_circle_samples([0.0, 1.0], [1.0], weights_a=[1.0])
    with pytest.raises(ValueError, match="weights must be finite, >= 0"):
        w1_circle_density([0.0], np.ones(4), weights=[-1.0])
    with pytest.raises(ValueError, match="rho must have positive total mass"):
        w1_circle_density([0.0], np.zeros(4))
    with pytest.raises(ValueError, match="rho_b must be a non-empty 1-D density"):
        w1_circle_densities(np.ones(4), np.ones((2, 2)))
