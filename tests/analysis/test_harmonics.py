"""The spherical-harmonic power of the tokens' measure (one adjoint transform)
against its addition-theorem twin, its known values, and the linear theory's
rates and fastest degree (Funk-Hecke) against quadrature."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special
from synthetic import collapsing

from particles.analysis import analyze, read_analysis, write_analysis
from particles.analysis.harmonics import (
    DEFAULT_MAX_DEGREE,
    fastest_degree,
    growth_rates,
    harmonic_power,
    harmonic_power_reference,
    normalized_power,
)
from particles.analysis.modes import fourier_coefficients
from particles.sphere import normalize


def test_the_transform_matches_the_addition_theorem():
    rng = np.random.default_rng(0)
    x = normalize(rng.normal(size=(2, 400, 3)))
    x[1] = normalize(x[1] * [1.0, 1.0, 0.2])  # an anisotropic measure: every l shows
    m = rng.uniform(0.5, 2.0, 400)
    p = harmonic_power(x, 12, m)
    assert p.shape == (2, 13)
    for s in range(2):
        np.testing.assert_allclose(p[s], harmonic_power_reference(x[s], 12, m), rtol=1e-10,
                                   atol=1e-14)


def test_known_values_one_cluster_and_uniform():
    ls = np.arange(9)
    one = harmonic_power(normalize(np.ones((50, 3))), 8)
    np.testing.assert_allclose(one, (2 * ls + 1) / (4 * np.pi), rtol=1e-11)
    # the octahedron's six vertices: P_l = 0 for l = 1, 2, 3 (a spherical 3-design)
    octa = np.vstack([np.eye(3), -np.eye(3)])
    p = harmonic_power(octa, 4)
    assert p[0] == pytest.approx(1 / (4 * np.pi), rel=1e-12)
    np.testing.assert_allclose(p[1:4], 0.0, atol=1e-14)
    assert p[4] > 1e-3


def test_normalized_power_in_every_dimension():
    rng = np.random.default_rng(1)
    x3 = normalize(rng.normal(size=(200, 3)))
    np.testing.assert_allclose(normalized_power(x3, 6),
                               4 * np.pi * harmonic_power_reference(x3, 6) / (2 * np.arange(7) + 1),
                               rtol=1e-10, atol=1e-14)
    x2 = normalize(rng.normal(size=(200, 2)))
    np.testing.assert_allclose(normalized_power(x2, 6)[1:],
                               np.abs(fourier_coefficients(x2, 6)) ** 2, rtol=1e-12)
    one = normalized_power(normalize(np.ones((30, 6))), 5)
    np.testing.assert_allclose(one, 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match="at most"):
        normalized_power(normalize(rng.normal(size=(5000, 4))), 3)


@pytest.mark.parametrize("beta", [1.0, 5.0, 9.0])
def test_funk_hecke_eigenvalues_and_growth_rates(beta):
    # lambda_l = 2 pi int e^{beta t} P_l(t) dt = 4 pi i_l(beta), and the SA rate
    # l (l + 1) lambda_l / (beta lambda_0) that growth_rates returns
    t, w = np.polynomial.legendre.leggauss(64)  # exact for degree 127: e^{beta t} to 1e-16
    lam = np.array([2 * np.pi * np.sum(w * np.exp(beta * t) * special.eval_legendre(l, t))
                    for l in range(9)])
    np.testing.assert_allclose(lam, 4 * np.pi * special.spherical_in(np.arange(9), beta),
                               rtol=1e-10, atol=1e-14 * lam[0])
    ls = np.arange(9)
    np.testing.assert_allclose(growth_rates(beta, 8), ls * (ls + 1) * lam / (beta * lam[0]),
                               rtol=1e-10, atol=1e-12)
    # d = 2: the circle's k^2 I_k(beta) / (beta I_0(beta))
    np.testing.assert_allclose(growth_rates(beta, 8, d=2),
                               ls**2 * special.iv(ls, beta) / (beta * special.iv(0, beta)),
                               rtol=1e-12)


def test_fastest_degree():
    # DESIGN.md: l* = 4 at beta = 9 on S^2; small beta: l* = 1
    assert fastest_degree(9.0) == 4
    assert fastest_degree(0.5) == 1
    assert fastest_degree(700.0) == int(np.argmax(growth_rates(700.0, 200)))
    with pytest.raises(ValueError, match="beta"):
        growth_rates(0.0, 4)


def test_analyze_stores_the_power_of_s2_runs(tmp_path):
    from synthetic import write_file

    traj = collapsing(3, batch=2)
    res = analyze(traj)
    assert res.harmonic_power.shape == (traj.times.size, 2, DEFAULT_MAX_DEGREE + 1)
    np.testing.assert_allclose(res.harmonic_power[-1, 1],
                               harmonic_power_reference(traj.positions[-1, 1]), rtol=1e-9)
    path = write_file(tmp_path / "run.h5", traj)
    write_analysis(path, res)
    np.testing.assert_array_equal(read_analysis(path).harmonic_power, res.harmonic_power)
    assert analyze(collapsing(2)).harmonic_power is None
