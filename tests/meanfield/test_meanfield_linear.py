"""Linear theory of the uniform density (particles.meanfield.linear) against quadrature."""

import numpy as np
import pytest
from scipy import integrate, special

from particles.meanfield import critical_diffusion, critical_noise, fastest_mode, growth_rate


def _rate_by_quadrature(k, beta, model):
    """Linearise the velocity field by numerical quadrature (independent of the Bessel form)."""
    num = integrate.quad(lambda u: np.exp(beta * np.cos(u)) * np.sin(u) * np.sin(k * u),
                         0, 2 * np.pi, limit=200)[0]
    rate = k * num / (2 * np.pi)  # v = -eps*num*sin(k theta); rho_t = (k/2pi)*eps*num*cos
    if model == "sa":
        rate /= integrate.quad(lambda u: np.exp(beta * np.cos(u)), 0, 2 * np.pi)[0] / (2 * np.pi)
    return rate


@pytest.mark.parametrize("model", ["usa", "sa"])
@pytest.mark.parametrize("beta", [0.3, 1.0, 4.0, 9.0])
def test_rates_match_quadrature(model, beta):
    for k in (1, 2, 3, 5):
        expected = _rate_by_quadrature(k, beta, model)
        assert growth_rate(k, beta, model) == pytest.approx(expected, rel=1e-9)


def test_closed_forms_and_diffusion():
    beta = 2.0
    assert growth_rate(3, beta, "usa") == pytest.approx(9 * special.iv(3, beta) / beta, rel=1e-12)
    assert growth_rate(3, beta, "sa", D=0.1) == pytest.approx(
        9 * special.iv(3, beta) / (beta * special.iv(0, beta)) - 0.9, rel=1e-12)
    assert growth_rate([0, 1, 2], 0.0, "kuramoto", D=0.1, coupling=3.0) == pytest.approx(
        [0.0, 1.4, -0.4])
    # beta -> 0 limit of USA is Kuramoto with c = 1
    assert growth_rate(1, 1e-8, "usa") == pytest.approx(growth_rate(1, 0.0, "usa"), rel=1e-6)
    assert growth_rate(np.arange(4), 300.0, "usa").shape == (4,)
    assert np.isfinite(growth_rate(5, 700.0, "usa"))


def test_threshold_and_fastest_mode():
    beta = 5.0
    Dc = critical_diffusion(beta, "usa")
    assert Dc == pytest.approx(special.iv(1, beta) / beta)
    ks = np.arange(1, 50)
    assert growth_rate(ks, beta, "usa", D=Dc * 1.001).max() < 0
    assert growth_rate(1, beta, "usa", D=Dc * 0.999) > 0
    assert critical_noise(beta, "sa") == pytest.approx(np.sqrt(2 * critical_diffusion(beta, "sa")))
    # argmax k^2 I_k(beta): grows like sqrt(beta)
    expected = np.argmax([k * k * special.iv(k, 9.0) for k in range(1, 40)]) + 1
    assert fastest_mode(9.0) == expected
    assert fastest_mode(100.0) > fastest_mode(9.0) > fastest_mode(1.0) == 1
    assert fastest_mode(3.0, "kuramoto") == 1


def test_diffusion_broadcasts_against_the_modes():
    D = np.array([0.0, 0.1, 0.5])
    rates = growth_rate(np.arange(1, 5)[:, None], 2.0, "sa", D=D)
    assert rates.shape == (4, 3)
    for j, d in enumerate(D):
        assert np.array_equal(rates[:, j], growth_rate(np.arange(1, 5), 2.0, "sa", D=float(d)))
    with pytest.raises(ValueError, match="D must be"):
        growth_rate(1, 1.0, "usa", D=[0.1, np.nan])


def test_bad_input():
    with pytest.raises(ValueError, match="model must be one of"):
        growth_rate(1, 1.0, "softmax")
    with pytest.raises(ValueError, match="D must be"):
        growth_rate(1, 1.0, "usa", D=-1)
    with pytest.raises(ValueError, match="integer"):
        growth_rate(1.5, 1.0)
