"""A mean-field density from particles (issue 28 item 6): the von Mises kernel
density estimate on the circle, the ``particles:file=`` initial density, and a
solve from a given initial density."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from particles.meanfield import MeanFieldConfig, initial_density, make_density, solve
from particles.meanfield.initial import parse_init
from particles.meanfield.kde import default_bandwidth, kde_density


def tokens(n: int, k: int, eps: float) -> np.ndarray:
    """Angles whose density is about ``(1 + eps cos(k theta)) / (2 pi)``."""
    phi = 2 * np.pi * np.arange(n) / n
    return phi - (eps / k) * np.sin(k * phi)


def test_kde_is_a_positive_unit_mass_density_with_the_tokens_modes_damped_as_its_kernel():
    theta, M = tokens(2000, 2, 0.4), 128
    h = default_bandwidth(M)
    rho = kde_density(theta, M)
    assert rho.shape == (M,) and rho.min() > 0
    assert rho.sum() * 2 * np.pi / M == pytest.approx(1.0, rel=1e-13)
    # mode k of the estimate: the tokens' mode times the kernel's I_k(kappa) / I_0(kappa)
    kappa = 1 / h**2
    coeff = np.fft.rfft(rho) * 2 * np.pi / M
    for k in range(1, 8):
        tokens_mode = np.exp(-1j * k * theta).mean()
        kernel = special.ive(k, kappa) / special.ive(0, kappa)
        np.testing.assert_allclose(coeff[k], tokens_mode * kernel, rtol=1e-9, atol=1e-13)
    # two grid cells keep the low modes nearly whole
    assert abs(coeff[2]) > 0.98 * abs(np.exp(-2j * theta).mean()) > 0.18


def test_default_bandwidth_is_two_grid_cells_and_a_narrower_one_is_refused():
    assert default_bandwidth(256) == 4 * math.pi / 256
    with pytest.raises(ValueError, match="bandwidth"):
        kde_density([0.0, 1.0], 64, 0.5 * 2 * math.pi / 64)
    with pytest.raises(ValueError, match="finite angles"):
        kde_density([0.0, np.nan], 64)
    wide = kde_density([0.0], 64, math.pi)
    assert wide.max() / wide.min() < math.exp(2 / math.pi**2) + 1e-12  # nearly flat


def test_the_particles_init_names_a_file_the_session_reads():
    name, params = parse_init("particles:file=runs/a.h5,bandwidth=0.1")
    assert name == "particles" and params == {"file": "runs/a.h5", "bandwidth": 0.1}
    assert parse_init("particles:file=a.h5")[1]["bandwidth"] == 0.0  # the default
    MeanFieldConfig(init="particles:file=a.h5")  # valid without reading the file
    for bad in ("particles", "particles:bandwidth=0.1", "particles:file=", "particles:"
                "file=a.h5,bandwidth=-1"):
        with pytest.raises(ValueError, match="init"):
            parse_init(bad)
    with pytest.raises(ValueError, match="session"):
        make_density("particles:file=a.h5", 64)


def test_a_solve_from_a_given_initial_density_is_the_solve_of_that_density():
    config = MeanFieldConfig(model="usa", beta=2.0, modes=32, T=0.5, save_every=0.25, seed=3)
    a = solve(config)
    b = solve(config, rho0=initial_density(config))
    np.testing.assert_array_equal(a.rho, b.rho)
    c = solve(config, rho0=make_density("modes:k=2,eps=0.2", 32))
    assert c.rho[0].tobytes() == make_density("modes:k=2,eps=0.2", 32).tobytes()
    with pytest.raises(ValueError, match="rho0"):
        solve(config, rho0=np.ones(8))
