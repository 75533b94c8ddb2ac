"""Trigonometric moments of a density (particles.meanfield.moments), the order
parameter of DensityResult, and the finite-n incoherent level
(particles.meanfield.linear.incoherent_order) against noisy particles."""

import numpy as np
import pytest
from scipy import special

import particles
from particles.meanfield import (
    MeanFieldConfig,
    critical_diffusion,
    critical_noise,
    density_moment,
    density_order_parameter,
    incoherent_order,
    make_density,
    quantile_angles,
    solve,
)
from particles.observables.order import order_parameter


def test_moments_of_closed_forms():
    # von Mises: z_k = I_k(kappa) / I_0(kappa) e^{i k mu}, exact on the grid to round-off
    rho = make_density("vonmises:kappa=3,mu=1", 128)
    for k in (1, 2, 5):
        expected = special.iv(k, 3.0) / special.iv(0, 3.0) * np.exp(1j * k)
        assert density_moment(rho, k) == pytest.approx(expected, abs=1e-13)
    op = density_order_parameter(rho)
    assert op.r == pytest.approx(special.iv(1, 3.0) / special.iv(0, 3.0), abs=1e-13)
    assert op.psi == pytest.approx(1.0, abs=1e-13)
    # (1 + eps cos k (theta - phase)) / 2 pi: |z_k| = eps / 2, the other modes 0
    rho = make_density("modes:k=2,eps=0.2,phase=0.5", 64)
    assert abs(density_moment(rho, 2)) == pytest.approx(0.1, abs=1e-14)
    assert density_moment(rho, 2) == pytest.approx(0.1 * np.exp(1j), abs=1e-14)
    assert abs(density_moment(rho, 1)) < 1e-15
    assert density_moment(rho, 0) == pytest.approx(1.0)
    # unnormalised rows and leading axes
    stack = np.stack([np.ones(16), 5.0 * make_density("vonmises:kappa=1", 16)])
    r = density_order_parameter(stack).r
    assert r.shape == (2,)
    assert r[0] == pytest.approx(0.0, abs=1e-15)
    assert r[1] == pytest.approx(special.iv(1, 1.0) / special.iv(0, 1.0), abs=1e-12)


def test_order_parameter_is_the_particles_one():
    rho = make_density("vonmises:kappa=2,mu=-2", 256)
    theta = quantile_angles(rho, 20000)
    tokens, density = order_parameter(theta), density_order_parameter(rho)
    assert tokens.r == pytest.approx(density.r, abs=1e-3)
    assert tokens.psi == pytest.approx(density.psi, abs=1e-3)


def test_density_result_order_parameter():
    res = solve(MeanFieldConfig(model="usa", beta=2.0, modes=64, T=2.0, save_every=0.5,
                                init="modes:k=1,eps=0.01"))
    op = res.order_parameter
    assert op.r.shape == op.psi.shape == res.times.shape
    assert op.r[0] == pytest.approx(0.005, rel=1e-12)
    assert np.all(np.diff(op.r) > 0)  # the unstable mode 1 grows (no noise)
    assert np.array_equal(op.r, density_order_parameter(res.rho).r)


def test_bad_densities():
    with pytest.raises(ValueError, match="finite"):
        density_moment([1.0, np.nan])
    with pytest.raises(ValueError, match="positive mass"):
        density_moment(np.zeros((2, 8)))
    with pytest.raises(ValueError, match="integer"):
        density_moment(np.ones(8), 1.5)
    with pytest.raises(ValueError, match="shape"):
        density_moment(np.float64(1.0))


def test_incoherent_order_formula():
    beta = 2.0
    Dc = critical_diffusion(beta)
    # independent uniform angles: E r = sqrt(pi / (4 n)) (Rayleigh), the D -> inf limit
    assert incoherent_order(100, beta, D=np.inf) == pytest.approx(np.sqrt(np.pi / 400))
    assert incoherent_order(100, beta, D=1e6 * Dc) == pytest.approx(np.sqrt(np.pi / 400),
                                                                    rel=1e-5)
    # enhanced by D / (D - D_c) in E r^2; none below the threshold
    D = np.array([0.5, 1.0, 1.5, 2.0]) * Dc
    out = incoherent_order([[64], [256]], beta, D=D)
    assert out.shape == (2, 4)
    assert np.all(np.isinf(out[:, :2]))
    assert out[1, 3] == pytest.approx(np.sqrt(np.pi * 2.0 / (4 * 256)))
    assert incoherent_order(64, beta, "sa", D=2 * critical_diffusion(beta, "sa")) == \
        pytest.approx(np.sqrt(np.pi * 2.0 / (4 * 64)))
    with pytest.raises(ValueError, match="n must be"):
        incoherent_order(0, beta, D=1.0)
    with pytest.raises(ValueError, match="D must be"):
        incoherent_order(10, beta, D=-1.0)


def test_incoherent_order_against_noisy_particles():
    """USA, beta = 1, n = 64, sigma = 1.2 sigma_c: E r^2 = 3.27 / n (1 / n without the
    interaction); 16 systems, 20 late frames each (correlated over ~1 time unit)."""
    beta, n, q = 1.0, 64, 1.2
    sigma = q * critical_noise(beta)
    tr = particles.simulate(n, 2, beta, model="usa", noise=sigma, dt=0.04, T=30.0,
                            save_times=np.arange(1.0, 31.0), batch=16, seed=3,
                            observables=("order",), positions="none")
    r = tr.observables["order_parameter"][tr.times > 10.0]
    expected = incoherent_order(n, beta, D=sigma**2 / 2)
    assert r.mean() == pytest.approx(expected, rel=0.15)
    assert r.mean() > 1.5 * np.sqrt(np.pi / (4 * n))  # clearly above the independent level
