"""The mean-field solver on S^2 (particles.meanfield.sphere, ducc0's transforms) against
Funk-Hecke, a direct quadrature of the attention field, the conservation laws and the
axisymmetric solver (issue 42, items 1 and 3)."""

import math

import numpy as np
import pytest

from particles.meanfield.solver import SolverState
from particles.meanfield.sphere import SphereSpace, index
from particles.meanfield.sphere_config import SphereFieldConfig
from particles.meanfield.sphere_solver import make_space, solve_sphere_frames
from particles.meanfield.zonal import critical_diffusion_sphere, growth_rate_sphere


def _config(**kw):
    base = dict(d=3, lmax=8, beta=5.0, init="uniform", T=1.0)
    base.update(kw)
    return SphereFieldConfig(**base)


def solver_rates(config, ells, eps=1e-6):
    """Growth rates of (l, 0) and (l, min(l, 3)) for every l in ``ells``, from two solves
    started at ``1 +- eps sum`` (the difference cancels the even nonlinear terms)."""
    space = make_space(config)
    L = config.lmax
    out = []
    for sign in (1.0, -1.0):
        a = np.zeros(space.ell.size, dtype=complex)
        a[0] = math.sqrt(4 * math.pi)
        for ell in ells:
            a[index(L, ell, 0)] += sign * eps
            a[index(L, ell, min(ell, 3))] += sign * eps * (1 + 1j)
        start = SolverState(t=0.0, rho=space.synthesise(a), dt=config.T / 8)
        last = list(solve_sphere_frames(config, state=start, space=space))[-1]
        out.append(space.analyse(last.rho))
    diff = out[0] - out[1]
    zonal = np.array([diff[index(L, ell, 0)].real for ell in ells]) / (2 * eps)
    other = np.array([abs(diff[index(L, ell, min(ell, 3))]) for ell in ells]) / (2 * eps * 2**0.5)
    return np.log(zonal) / config.T, np.log(other) / config.T


@pytest.mark.parametrize("model", ["usa", "sa"])
@pytest.mark.parametrize("beta", [1.0, 5.0, 9.0])
def test_growth_rates_match_funk_hecke(model, beta):
    """Degrees l = 1..8 (m = 0 and m = min(l, 3)) to 1e-6 (relative above rate 1)."""
    ells = np.arange(1, 9)
    theory = growth_rate_sphere(ells, 3, beta, model)
    config = _config(model=model, beta=beta, T=1.0 / np.abs(theory).max(), rtol=1e-13,
                     atol=1e-16)
    for got in solver_rates(config, ells):
        assert (np.abs(got - theory) / np.maximum(1.0, np.abs(theory))).max() < 1e-6


@pytest.mark.parametrize("model", ["usa", "sa"])
def test_velocity_is_the_attention_field(model):
    """v on the grid against the direct quadrature of int exp(beta <x, y>) P_x(y) f(y)."""
    beta = 1.5
    config = _config(model=model, beta=beta, lmax=24, init="vonmises:kappa=1,theta=0.7,phi=2")
    space = SphereSpace(config)
    f = space.initial(config)
    th, ph = np.meshgrid(space.theta, space.phi, indexing="ij")
    X = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], -1)
    Y = X.reshape(-1, 3)
    w = (space.cell * f).reshape(-1)
    rows = [(3, 5), (10, 40), (30, 7)]
    v = space.velocity(space.analyse(f))
    for i, j in rows:
        x = X[i, j]
        kern = np.exp(beta * (Y @ x)) * w
        field = kern @ (Y - np.outer(Y @ x, x))  # int K P_x(y) f(y) dsigma
        if model == "sa":
            field = field / kern.sum()
        e_theta = np.array([np.cos(th[i, j]) * np.cos(ph[i, j]),
                            np.cos(th[i, j]) * np.sin(ph[i, j]), -np.sin(th[i, j])])
        e_phi = np.array([-np.sin(ph[i, j]), np.cos(ph[i, j]), 0.0])
        np.testing.assert_allclose(v[:, i, j], [field @ e_theta, field @ e_phi],
                                   rtol=1e-11, atol=1e-13)


def test_diffusion_threshold():
    """Above D_c every degree decays, below it l = 1 grows, at the theory's rates."""
    Dc = critical_diffusion_sphere(3, 5.0, "sa")
    ells = np.arange(1, 6)
    for D in (0.9 * Dc, 1.1 * Dc):
        theory = growth_rate_sphere(ells, 3, 5.0, "sa", D=D)
        config = _config(model="sa", D=D, lmax=6, T=1.0 / np.abs(theory).max(),
                         rtol=1e-13, atol=1e-16)
        zonal, other = solver_rates(config, ells)
        for got in (zonal, other):
            assert np.abs(got - theory).max() < 1e-6 * max(1.0, np.abs(theory).max())
            assert (got[0] > 0) == (D < Dc) and got[1:].max() < 0


@pytest.mark.parametrize("D", [0.0, 0.05])
def test_mass_exact_and_usa_free_energy_decreases_with_its_dissipation(D):
    config = _config(lmax=24, beta=1.0, D=D, T=0.5, save_every=0.025,
                     init="vonmises:kappa=2,theta=1,phi=1")
    space = make_space(config)
    frames = list(solve_sphere_frames(config, space=space))
    assert np.abs(np.array([f.mass for f in frames]) - 1).max() < 1e-13
    F = np.array([space.free_energy(f.rho) for f in frames])
    diss = np.array([f.dissipation for f in frames])
    assert np.all(np.diff(F) <= 1e-14 * np.abs(F).max()) and diss.min() >= 0
    assert F[0] - F[-1] > 1e-4
    h = 0.025  # Simpson on 21 frames: F(T) - F(0) = -int dissipation
    integral = h / 3 * (diss[0] + diss[-1] + 4 * diss[1:-1:2].sum() + 2 * diss[2:-1:2].sum())
    assert F[-1] - F[0] == pytest.approx(-integral, rel=1e-4)


def test_zonal_solution_is_the_axisymmetric_one():
    kw = dict(lmax=16, beta=3.0, model="sa", T=1.0, D=0.02, init="vonmises:kappa=3",
              rtol=1e-11, atol=1e-14)
    sphere = make_space(_config(**kw))
    a = sphere.analyse(list(solve_sphere_frames(_config(**kw)))[-1].rho)
    axis = make_space(_config(axisymmetric=True, **kw))
    b = axis.analyse(list(solve_sphere_frames(_config(axisymmetric=True, **kw)))[-1].rho)
    zonal = np.array([a[index(16, ell, 0)].real for ell in range(17)]) / math.sqrt(4 * math.pi)
    np.testing.assert_allclose(zonal, b, atol=1e-9)
    assert np.abs(a[17:]).max() < 1e-12  # m != 0 never appears


def test_resume_bit_for_bit_and_threads_do_not_change_numbers():
    config = _config(lmax=12, beta=9.0, model="sa", T=0.6, save_every=0.2,
                     init="perturbed:eps=0.2", seed=4, D=0.01)
    frames = list(solve_sphere_frames(config))
    again = list(solve_sphere_frames(config, state=frames[1].state))
    assert [f.time for f in again] == [0.4, 0.6]
    assert np.array_equal(again[-1].rho, frames[-1].rho)
    from_start = list(solve_sphere_frames(config, state=frames[0].state))  # t = 0 not repeated
    assert [f.time for f in from_start] == [0.2, 0.4, 0.6]
    assert np.array_equal(from_start[-1].rho, frames[-1].rho)
    one = list(solve_sphere_frames(config, space=SphereSpace(config, nthreads=1)))
    assert np.array_equal(one[-1].rho, frames[-1].rho)


def test_initial_densities():
    space = SphereSpace(_config(lmax=8))
    th, ph = np.meshgrid(space.theta, space.phi, indexing="ij")
    x, y = np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph)
    for spec, expected in [("modes:l=1,m=1,eps=0.1", 1 + 0.1 * 3**0.5 * x),
                           ("modes:l=1,m=-1,eps=0.1", 1 + 0.1 * 3**0.5 * y),
                           ("modes:l=1,eps=0.1", 1 + 0.1 * 3**0.5 * np.cos(th))]:
        f = space.initial(_config(lmax=8, init=spec))
        np.testing.assert_allclose(f, expected, atol=1e-14)
    f = space.initial(_config(lmax=8, init="vonmises:kappa=3,theta=2,phi=4"))
    i, j = np.unravel_index(np.argmax(f), f.shape)
    assert abs(space.theta[i] - 2) < 0.2 and abs(space.phi[j] - 4) < 0.3
    assert space.mass(f) == pytest.approx(1, abs=1e-14)
    with pytest.raises(ValueError, match="lower eps"):
        space.initial(_config(lmax=8, init="modes:l=4,m=2,eps=2"))
