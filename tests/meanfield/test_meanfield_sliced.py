"""Sliced W1 on S^2 (particles.meanfield.sliced) against plain references.

Oracles: scipy.stats.wasserstein_distance per direction (point sets), the addition
theorem summed over the grid in NumPy (the degree parts), closed forms for the
projected law of the uniform density (Archimedes: uniform on [-1, 1]) and of a von
Mises-Fisher cap along its axis, and the n^{-1/2} law of i.i.d. tokens.
"""

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from particles.meanfield.sliced import (
    degree_parts,
    directions,
    projected_cdf,
    sliced_w1_density,
    sliced_w1_samples,
)
from particles.meanfield.sphere import SphereSpace
from particles.meanfield.sphere_config import SphereFieldConfig


def unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def uniform_points(n: int, rng) -> np.ndarray:
    return unit(rng.standard_normal((n, 3)))


def axis(theta: float, phi: float) -> np.ndarray:
    return np.array([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)])


def vmf_points(n: int, kappa: float, mu: np.ndarray, rng) -> np.ndarray:
    """Exact draws of the von Mises-Fisher law on S^2 (the inverse CDF of <x, mu>)."""
    w = 1.0 + np.log(rng.uniform(size=n) * (1 - np.exp(-2 * kappa)) + np.exp(-2 * kappa)) / kappa
    phi = rng.uniform(0, 2 * np.pi, n)
    r = np.sqrt(np.clip(1 - w * w, 0, None))
    local = np.stack([r * np.cos(phi), r * np.sin(phi), w], axis=1)
    # a rotation taking e_z to mu
    a = unit(np.cross([0.0, 0.0, 1.0], mu) if abs(mu[2]) < 1 else [1.0, 0.0, 0.0])
    b = np.cross(mu, a)
    return local @ np.stack([a, b, mu])


def space(lmax: int, init: str = "uniform", seed: int = 0) -> tuple[SphereSpace, np.ndarray]:
    config = SphereFieldConfig(d=3, lmax=lmax, model="sa", beta=1.0, T=1.0, save_every=1.0,
                               init=init, seed=seed)
    sp = SphereSpace(config)
    return sp, sp.initial(config)


def grid_of(sp: SphereSpace) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    return sp.theta, sp.phi, sp.cell[:, 0], sp.lmax


def vmf_grid(sp: SphereSpace, kappa: float, mu: np.ndarray) -> np.ndarray:
    st, ct = np.sin(sp.theta)[:, None], np.cos(sp.theta)[:, None]
    x = np.stack(np.broadcast_arrays(st * np.cos(sp.phi), st * np.sin(sp.phi), ct), axis=-1)
    return np.exp(kappa * (x @ mu - 1.0))


def vmf_axis_cdf(s, kappa: float) -> np.ndarray:
    """``P(<x, mu> <= s)`` under the cap ``exp(kappa <x, mu>)``."""
    return (np.exp(kappa * (s - 1)) - np.exp(-2 * kappa)) / (1 - np.exp(-2 * kappa))


def w1_line_against_cdf(t, cdf, m=200_001) -> float:
    """1-D W1 of equal atoms against a CDF, by a fine midpoint sum (brute force)."""
    edges = np.linspace(-1, 1, m)
    s = 0.5 * (edges[1:] + edges[:-1])
    F = np.searchsorted(np.sort(t), s, side="right") / len(t)
    return float(np.sum(np.abs(F - cdf(s))) * (edges[1] - edges[0]))


# ---------------------------------------------------------------- point sets
def test_point_sets_are_the_mean_of_exact_1d_w1s():
    rng = np.random.default_rng(1)
    a, b = uniform_points(40, rng), unit(uniform_points(25, rng) + np.array([0.5, 0, 0]))
    wa, wb = rng.uniform(0.1, 1, 40), rng.uniform(0.1, 1, 25)
    u = directions(12, seed=3)
    ref = np.mean([wasserstein_distance(a @ v, b @ v, wa, wb) for v in u])
    assert sliced_w1_samples(a, b, wa, wb, directions=u) == pytest.approx(ref, rel=1e-12)
    # equal sizes and masses: the mean gap between sorted projections
    c = uniform_points(40, rng)
    ref = np.mean([np.mean(np.abs(np.sort(a @ v) - np.sort(c @ v))) for v in u])
    assert sliced_w1_samples(a, c, directions=u) == pytest.approx(ref, rel=1e-12)


def test_zero_for_the_same_measure_and_symmetric():
    rng = np.random.default_rng(2)
    a, b = uniform_points(30, rng), uniform_points(50, rng)
    assert sliced_w1_samples(a, a[::-1]) == 0.0
    # integer masses are repeated points
    m = rng.integers(1, 4, 30)
    assert sliced_w1_samples(a, np.repeat(a, m, axis=0), m) == pytest.approx(0.0, abs=1e-15)
    assert sliced_w1_samples(a, b) == pytest.approx(sliced_w1_samples(b, a), rel=1e-13)
    # reproducible: the default directions are seeded
    assert sliced_w1_samples(a, b) == sliced_w1_samples(a, b)
    np.testing.assert_array_equal(directions(), directions())


def test_rotation_invariant_in_expectation():
    rng = np.random.default_rng(4)
    a, b = uniform_points(60, rng), unit(rng.standard_normal((60, 3)) + np.array([0, 0, 1.5]))
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    u = directions(3000, seed=5)
    d0 = sliced_w1_samples(a, b, directions=u)
    d1 = sliced_w1_samples(a @ q.T, b @ q.T, directions=u)
    assert d0 > 0.05
    assert abs(d1 - d0) < 0.03 * d0  # Monte Carlo over 3000 directions: about 1 %
    # and bounded by the chordal distance of a matching (here: the identity pairing)
    assert d0 <= np.mean(np.linalg.norm(a - b, axis=1))


# ---------------------------------------------------------------- a density
def test_degree_parts_are_the_addition_theorem_on_the_grid():
    sp, f = space(10, "perturbed:eps=0.2", seed=7)
    theta, phi, w, lmax = grid_of(sp)
    u = directions(5, seed=1)
    st, ct = np.sin(theta)[:, None], np.cos(theta)[:, None]
    x = np.stack(np.broadcast_arrays(st * np.cos(phi), st * np.sin(phi), ct), -1).reshape(-1, 3)
    t = x @ u.T  # (N, K)
    P = [np.ones_like(t), t]
    for ell in range(1, lmax):
        P.append(((2 * ell + 1) * t * P[ell] - ell * P[ell - 1]) / (ell + 1))
    fw = (f * w[:, None]).ravel() / np.sum(f * w[:, None])
    ref = np.stack([(2 * ell + 1) * fw @ P[ell] for ell in range(lmax + 1)], axis=1)
    np.testing.assert_allclose(degree_parts(f, theta, phi, w, lmax, u), ref, atol=1e-12)
    # mass 1; the CDF runs from 0 to 1
    G = projected_cdf(f, theta, phi, w, lmax, u, [-1.0, 1.0])
    np.testing.assert_allclose(G, [[0.0, 1.0]] * 5, atol=1e-13)


def test_quantile_tokens_against_the_uniform_density_are_one_over_2n():
    sp, f = space(8)
    n = 50
    z = -1 + (2 * np.arange(n) + 1) / n
    phi = np.random.default_rng(0).uniform(0, 2 * np.pi, n)
    r = np.sqrt(1 - z * z)
    x = np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)
    # along e_z the projection is at the n midpoints: W1 = 1 / (2 n) exactly (g = 1/2)
    d = sliced_w1_density(x, f, *grid_of(sp), directions=[[0, 0, 1.0]])
    assert d == pytest.approx(1 / (2 * n), rel=1e-10)


def test_a_cap_against_its_axis_and_its_own_tokens():
    kappa, mu = 10.0, axis(1.1, 2.0)
    sp, _ = space(32)
    f = vmf_grid(sp, kappa, mu)
    g = grid_of(sp)
    # one token at the cap's centre: W1 = int G = 1/kappa - exp(-kappa)/sinh(kappa)
    exact = 1 / kappa - np.exp(-kappa) / np.sinh(kappa)
    d = sliced_w1_density(mu[None], f, *g, directions=[mu])
    assert d == pytest.approx(exact, abs=5e-6)  # the linear interpolation of G, h = 2/1024
    assert sliced_w1_density(mu[None], f, *g, directions=[mu], cells=8192) == pytest.approx(
        exact, abs=1e-7)
    tokens = vmf_points(3000, kappa, mu, np.random.default_rng(3))
    ref = w1_line_against_cdf(tokens @ mu, lambda s: vmf_axis_cdf(s, kappa))
    assert sliced_w1_density(tokens, f, *g, directions=[mu]) == pytest.approx(ref, abs=2e-5)
    # the tokens of the cap are much nearer to it than to the uniform density
    sp_u, one = space(32)
    near = sliced_w1_density(tokens, f, *g, directions=directions(16))
    far = sliced_w1_density(tokens, one, *grid_of(sp_u), directions=directions(16))
    assert near < 0.1 * far


def test_iid_tokens_decay_as_n_to_the_minus_half():
    sp, f = space(8)
    g = grid_of(sp)
    rng = np.random.default_rng(11)
    u = directions(16)
    ns = np.array([100, 400, 1600])
    mean = [np.mean([sliced_w1_density(uniform_points(int(n), rng), f, *g, directions=u)
                     for _ in range(4)]) for n in ns]
    slope = np.polyfit(np.log(ns), np.log(mean), 1)[0]
    assert -0.6 < slope < -0.4


@pytest.mark.parametrize(("call", "message"), [
    (lambda: sliced_w1_samples(np.zeros((3, 2)), np.zeros((3, 3))), "x_a must be"),
    (lambda: sliced_w1_samples(np.ones((3, 3)), np.ones((3, 3)), [1, -1, 1]), "weights_a"),
    (lambda: sliced_w1_samples(np.ones((2, 3)), np.ones((2, 3)), directions=[[0, 0, 0.0]]),
     "non-zero"),
    (lambda: directions(0), "count"),
    (lambda: sliced_w1_density(np.ones((2, 3)), np.ones((4, 5)), np.ones(4), np.ones(6),
                               np.ones(4), 2), r"shape \(ntheta, nphi\)"),
    (lambda: sliced_w1_density(np.ones((2, 3)), np.zeros((4, 5)), np.ones(4), np.ones(5),
                               np.ones(4), 2), "positive mass"),
    (lambda: sliced_w1_density(np.ones((2, 3)), np.ones((4, 5)), np.ones(4), np.ones(5),
                               np.ones(4), 2, cells=0), "cells"),
])
def test_bad_input_is_one_line(call, message):
    with pytest.raises(ValueError, match=message) as err:
        call()
    assert "\n" not in str(err.value)
