"""Tests of particles.sphere: geometry on S^{d-1} and the initial-condition samplers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special

from particles import sphere
from particles.sphere import (
    SAMPLERS,
    angles_to_circle,
    circle_to_angles,
    equispaced_circle,
    exp_map,
    geodesic_distance,
    inner_products,
    log_map,
    normalize,
    orthonormal,
    spherical_cap,
    tangent_projection,
    uniform,
    von_mises_fisher,
)


def rng_of(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def unit_tangent(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random unit tangent vector at each row of ``x``."""
    # Project twice: one pass leaves a normal component of relative size
    # ~1e-16/|P_x(g)|, which the exp/log round trips would then measure.
    v = tangent_projection(x, rng.standard_normal(x.shape))
    return normalize(tangent_projection(x, v))


def assert_unit(x: np.ndarray, tol: float = 1e-14) -> None:
    np.testing.assert_allclose(np.linalg.norm(x, axis=-1), 1.0, rtol=0, atol=tol)


# --------------------------------------------------------------------------
# geometry
# --------------------------------------------------------------------------


def test_normalize_gives_unit_rows_and_keeps_shape():
    x = rng_of().standard_normal((3, 7, 5)) * 1e3
    y = normalize(x)
    assert y.shape == x.shape and y.dtype == np.float64
    assert_unit(y)
    # Direction is preserved.
    np.testing.assert_allclose(np.sum(x * y, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-14)


def test_normalize_rejects_zero_vector():
    x = np.ones((4, 3))
    x[2] = 0.0
    with pytest.raises(ValueError, match="zero vector"):
        normalize(x)


def test_tangent_projection_is_tangent_and_idempotent():
    rng = rng_of(1)
    x = uniform(6, 5, rng=rng, batch=3)
    y = rng.standard_normal(x.shape)
    p = tangent_projection(x, y)
    np.testing.assert_allclose(np.sum(x * p, axis=-1), 0.0, atol=1e-14)
    np.testing.assert_allclose(tangent_projection(x, p), p, atol=1e-14)


def test_exp_log_round_trip_random_pairs_with_broadcasting():
    rng = rng_of(2)
    x = uniform(50, 4, rng=rng)  # (n, d), broadcast against (batch, n, d)
    y = uniform(50, 4, rng=rng, batch=3)
    v = log_map(x, y)
    assert v.shape == (3, 50, 4)
    np.testing.assert_allclose(np.sum(x * v, axis=-1), 0.0, atol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-1), geodesic_distance(x, y), rtol=1e-13)
    np.testing.assert_allclose(exp_map(x, v), y, atol=1e-14)
    assert_unit(exp_map(x, v))


@pytest.mark.parametrize(
    ("length", "atol"),
    [
        (1e-300, 1e-15),
        (1e-12, 1e-15),
        (1e-9, 1e-15),
        (1e-4 * (1 - 1e-12), 1e-15),  # both sides of the Taylor switch
        (1e-4 * (1 + 1e-12), 1e-15),
        (0.3, 1e-14),
        (2.0, 1e-14),
        (math.pi - 1e-4, 1e-10),
        (math.pi - 1e-8, 1e-6),  # near π, log_x y is conditioned like 1/sin θ
    ],
)
def test_exp_log_round_trip_tiny_and_near_pi(length, atol):
    rng = rng_of(3)
    x = uniform(20, 5, rng=rng)
    v = length * unit_tangent(x, rng)
    y = exp_map(x, v)
    assert_unit(y)
    w = log_map(x, y)
    np.testing.assert_allclose(w, v, rtol=0, atol=atol)
    # Points carry ~1e-16 absolute rounding, which bounds what tiny lengths can resolve.
    np.testing.assert_allclose(np.linalg.norm(w, axis=-1), length, rtol=1e-9, atol=atol)


def test_exp_and_log_at_zero_are_exact():
    x = uniform(10, 3, rng=rng_of(4))
    np.testing.assert_array_equal(
        exp_map(x, np.zeros_like(x)), x / np.linalg.norm(x, axis=-1)[:, None]
    )
    np.testing.assert_array_equal(log_map(x, x), 0.0)
    np.testing.assert_array_equal(geodesic_distance(x, x), 0.0)


def test_exp_taylor_branch_is_continuous():
    x = np.array([1.0, 0.0, 0.0])
    e2 = np.array([0.0, 1.0, 0.0])
    below = exp_map(x, 1e-4 * (1 - 1e-13) * e2)
    above = exp_map(x, 1e-4 * (1 + 1e-13) * e2)
    np.testing.assert_allclose(below, above, rtol=0, atol=1e-16)


@settings(deadline=None, max_examples=25)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(2, 8),
    length=st.one_of(
        st.floats(0.0, math.pi - 1e-3),
        st.floats(1e-200, 1e-5),
    ),
)
def test_exp_log_round_trip_property(seed, d, length):
    rng = np.random.default_rng(seed)
    x = uniform(3, d, rng=rng)
    v = length * unit_tangent(x, rng)
    y = exp_map(x, v)
    np.testing.assert_allclose(log_map(x, y), v, rtol=0, atol=1e-12)
    np.testing.assert_allclose(exp_map(x, log_map(x, y)), y, rtol=0, atol=1e-14)
    np.testing.assert_allclose(geodesic_distance(x, y), length, rtol=1e-7, atol=1e-15)


def test_log_of_antipode_is_finite_deterministic_and_of_length_pi():
    rng = rng_of(5)
    x = uniform(30, 4, rng=rng)
    x[0] = [1.0, 0.0, 0.0, 0.0]  # ties in |x_k| are broken deterministically
    v = log_map(x, -x)
    assert np.all(np.isfinite(v))
    np.testing.assert_allclose(np.linalg.norm(v, axis=-1), math.pi, rtol=1e-14)
    np.testing.assert_allclose(np.sum(x * v, axis=-1), 0.0, atol=1e-14)
    np.testing.assert_array_equal(log_map(x, -x), v)
    np.testing.assert_allclose(exp_map(x, v), -x, atol=1e-14)
    np.testing.assert_array_equal(geodesic_distance(x, -x), math.pi)


def test_geodesic_distance_is_accurate_for_tiny_angles():
    rng = rng_of(6)
    x = uniform(20, 6, rng=rng)
    # Points carry ~1e-16 absolute rounding, so 1e-9 rad resolves to ~1e-7 relative.
    y = exp_map(x, 1e-9 * unit_tangent(x, rng))
    np.testing.assert_allclose(geodesic_distance(x, y), 1e-9, rtol=1e-6)
    # An exactly representable pair: relative accuracy is near machine precision.
    t = 1e-9
    e1 = np.array([1.0, 0.0, 0.0])
    y = np.array([math.cos(t), math.sin(t), 0.0])
    assert geodesic_distance(e1, y) == pytest.approx(t, rel=1e-15)
    # The naive formula loses everything here; this is why the stable one exists.
    assert np.arccos(np.clip(e1 @ y, -1.0, 1.0)) == 0.0


def test_geodesic_distance_symmetric_no_nan_and_matches_arccos():
    rng = rng_of(7)
    x = uniform(200, 3, rng=rng, batch=2)
    y = uniform(200, 3, rng=rng, batch=2)
    dxy = geodesic_distance(x, y)
    assert dxy.shape == (2, 200)
    np.testing.assert_array_equal(dxy, geodesic_distance(y, x))
    np.testing.assert_allclose(dxy, np.arccos(np.sum(x * y, axis=-1)), rtol=1e-10)
    # Rounding can push |<x, y>| past 1; the result must stay finite.
    z = np.array([[1.0, 1e-17], [-1.0, -1e-17]]) * (1 + 2e-16)
    assert np.all(np.isfinite(geodesic_distance(z, z[::-1])))


def test_inner_products_gram_matrix():
    x = uniform(7, 4, rng=rng_of(8), batch=3)
    g = inner_products(x)
    assert g.shape == (3, 7, 7)
    np.testing.assert_allclose(g, np.einsum("bid,bjd->bij", x, x), atol=1e-15)
    np.testing.assert_allclose(np.diagonal(g, axis1=-2, axis2=-1), 1.0, atol=1e-14)
    np.testing.assert_array_equal(g, np.swapaxes(g, -1, -2))


# --------------------------------------------------------------------------
# circle helpers
# --------------------------------------------------------------------------


def test_circle_conversions_round_trip():
    theta = rng_of(9).uniform(0.0, 2 * math.pi, size=(4, 11))
    x = angles_to_circle(theta)
    assert x.shape == (4, 11, 2)
    assert_unit(x)
    np.testing.assert_allclose(circle_to_angles(x), theta, atol=1e-13)
    np.testing.assert_allclose(angles_to_circle(circle_to_angles(x)), x, atol=1e-15)


def test_circle_to_angles_range_is_half_open():
    x = np.array([[1.0, -1e-300], [1.0, 0.0], [-1.0, -0.0], [0.0, -1.0]])
    a = circle_to_angles(x)
    assert np.all((a >= 0.0) & (a < 2 * math.pi))
    assert a[0] == 0.0
    np.testing.assert_allclose(a[3], 1.5 * math.pi)
    with pytest.raises(ValueError, match="shape"):
        circle_to_angles(np.ones((3, 3)))


def test_equispaced_circle():
    n = 7
    x = equispaced_circle(n, phase=0.25)
    assert x.shape == (n, 2) and x.flags.c_contiguous
    assert_unit(x)
    gaps = np.diff(np.unwrap(np.arctan2(x[:, 1], x[:, 0])))
    np.testing.assert_allclose(gaps, 2 * math.pi / n, atol=1e-14)
    np.testing.assert_allclose(x[0], [math.cos(0.25), math.sin(0.25)])


def test_equispaced_sampler_only_for_circle_and_repeats_in_batch():
    f = SAMPLERS["equispaced"]
    x = f(5, 2, rng=rng_of(), batch=3)
    assert x.shape == (3, 5, 2) and x.flags.c_contiguous and x.flags.writeable
    np.testing.assert_array_equal(x[0], x[2])
    np.testing.assert_array_equal(x[1], equispaced_circle(5))
    with pytest.raises(ValueError, match="d=2"):
        f(5, 3, rng=rng_of())


# --------------------------------------------------------------------------
# samplers: shared contract
# --------------------------------------------------------------------------

SAMPLER_PARAMS = {
    "uniform": {},
    "orthogonal": {},
    "cap": {"eps": 0.4},
    "vmf": {"mu": [0.0, 1.0, 1.0, 0.0], "kappa": 3.0},
    "equispaced": {},
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("batch", [None, 2])
def test_samplers_shape_dtype_norm_and_reproducibility(name, batch):
    d = 2 if name == "equispaced" else 4
    params = SAMPLER_PARAMS[name]
    f = SAMPLERS[name]
    x = f(3, d, rng=rng_of(42), batch=batch, **params)
    expected = (3, d) if batch is None else (batch, 3, d)
    assert x.shape == expected
    assert x.dtype == np.float64 and x.flags.c_contiguous
    assert_unit(x)
    np.testing.assert_array_equal(f(3, d, rng=rng_of(42), batch=batch, **params), x)
    if name != "equispaced":
        assert not np.array_equal(f(3, d, rng=rng_of(43), batch=batch, **params), x)


def test_sampler_registry_names():
    assert set(SAMPLERS) == {"uniform", "orthogonal", "cap", "equispaced", "vmf"}
    assert SAMPLERS["orthogonal"] is orthonormal
    assert SAMPLERS["cap"] is spherical_cap
    assert SAMPLERS["vmf"] is von_mises_fisher


# --------------------------------------------------------------------------
# samplers: distributions
# --------------------------------------------------------------------------


def test_uniform_moments():
    n, d = 20000, 4
    x = uniform(n, d, rng=rng_of(10))
    # Coordinates have std 1/sqrt(d) = 0.5, so the standard errors are ~0.0035.
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=0.02)
    np.testing.assert_allclose(x.T @ x / n, np.eye(d) / d, atol=0.02)


def test_orthonormal_rows_and_haar_sign_fix():
    x = orthonormal(5, 5, rng=rng_of(11), batch=4)
    np.testing.assert_allclose(inner_products(x), np.broadcast_to(np.eye(5), (4, 5, 5)), atol=1e-14)
    x = orthonormal(3, 7, rng=rng_of(12))
    np.testing.assert_allclose(x @ x.T, np.eye(3), atol=1e-14)
    # Haar rows are uniform on the sphere: without the sign fix of the QR,
    # LAPACK's conventions bias the signs of the leading entries.
    x = orthonormal(3, 3, rng=rng_of(13), batch=4000)
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=0.05)


def mean_resultant_length(d: int, kappa: float) -> float:
    """A_d(kappa) = I_{d/2}(kappa) / I_{d/2-1}(kappa), the vMF E<x, mu>."""
    return float(special.ive(d / 2, kappa) / special.ive(d / 2 - 1, kappa))


@pytest.mark.parametrize(("d", "kappa"), [(2, 1.0), (3, 2.0), (10, 50.0)])
def test_vmf_mean_resultant_length(d, kappa):
    n = 20000
    rng = rng_of(14)
    mu = rng.standard_normal(d)
    x = von_mises_fisher(n, d, mu=3.0 * mu, kappa=kappa, rng=rng)  # mu need not be unit
    m = x.mean(axis=0)
    mu = mu / np.linalg.norm(mu)
    w = x @ mu
    tol = 5 * w.std() / math.sqrt(n)
    assert abs(np.linalg.norm(m) - mean_resultant_length(d, kappa)) < tol
    np.testing.assert_allclose(m / np.linalg.norm(m), mu, atol=0.05)


def test_vmf_extreme_concentrations():
    d, n = 3, 20000
    rng = rng_of(15)
    mu = np.array([0.0, 0.0, 1.0])
    x = von_mises_fisher(n, d, mu=mu, kappa=0.0, rng=rng)
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=0.03)
    for kappa in (1e6, 1e12):
        x = von_mises_fisher(n, d, mu=mu, kappa=kappa, rng=rng)
        assert np.all(np.isfinite(x))
        assert_unit(x)
        # Tangent-plane Gaussian limit: E[1 - <x, mu>] -> (d - 1) / (2 kappa).
        one_minus_w = 2.0 * np.sin(geodesic_distance(x, mu) / 2) ** 2
        assert one_minus_w.mean() == pytest.approx((d - 1) / (2 * kappa), rel=0.05)


def cap_area_fraction(d: int, theta: float) -> float:
    """Normalized area of the cap of radius theta.

    For uniform x, (1 - <x, c>)/2 = sin²(θ/2) ~ Beta((d-1)/2, (d-1)/2).
    """
    a = (d - 1) / 2
    return float(special.betainc(a, a, math.sin(theta / 2) ** 2))


@pytest.mark.parametrize(("d", "eps"), [(2, 1.0), (3, 1.0), (10, 2.5), (5, math.pi)])
def test_cap_inside_and_area_ratio(d, eps):
    n = 20000
    rng = rng_of(16)
    center = rng.standard_normal(d)
    x = spherical_cap(n, d, eps=eps, rng=rng, center=center)
    dist = geodesic_distance(x, center / np.linalg.norm(center))
    assert dist.max() <= eps + 1e-13
    p = cap_area_fraction(d, eps / 2) / cap_area_fraction(d, eps)
    frac = np.mean(dist <= eps / 2)
    assert abs(frac - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_cap_high_dimension_small_radius():
    # Here the cap CDF F(eps) ~ 1e-600 underflows, the regime the rejection sampler is for.
    d, eps, n = 512, 0.1, 5000
    x = spherical_cap(n, d, eps=eps, rng=rng_of(17))
    theta = geodesic_distance(x, np.eye(1, d).ravel())
    assert theta.max() <= eps + 1e-13
    k = d - 2
    log_top = k * math.log(math.sin(eps))

    def weight(t):
        return math.exp(k * math.log(math.sin(t)) - log_top)

    lo = eps - 60 * math.tan(eps) / k  # the mass below is < e^-60
    mass = integrate.quad(weight, lo, eps, epsabs=0, epsrel=1e-12)[0]
    mean = integrate.quad(lambda t: t * weight(t), lo, eps, epsabs=0, epsrel=1e-12)[0] / mass
    var = integrate.quad(lambda t: (t - mean) ** 2 * weight(t), lo, eps, epsrel=1e-10)[0] / mass
    assert abs(theta.mean() - mean) < 5 * math.sqrt(var / n)
    # θ is skewed (near-exponential), so the sample variance has ~2.5% relative noise.
    assert theta.var() == pytest.approx(var, rel=0.12)


def test_cap_tiny_radius():
    eps = 1e-9
    x = spherical_cap(1000, 6, eps=eps, rng=rng_of(18), center=[0, 0, 0, 0, 0, 2.0])
    assert_unit(x)
    center = np.array([0, 0, 0, 0, 0, 1.0])
    assert geodesic_distance(x, center).max() <= eps * (1 + 1e-6)


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------

BAD_CALLS = [
    (lambda r: uniform(0, 3, rng=r), "n"),
    (lambda r: uniform(-1, 3, rng=r), "n"),
    (lambda r: uniform(2.0, 3, rng=r), "n"),
    (lambda r: uniform(2, 1, rng=r), "d"),
    (lambda r: uniform(2, 3, rng=r, batch=0), "batch"),
    (lambda r: von_mises_fisher(2, 3, mu=[0, 0, 1], kappa=-1.0, rng=r), "kappa"),
    (lambda r: von_mises_fisher(2, 3, mu=[0, 0, 1], kappa=math.nan, rng=r), "kappa"),
    (lambda r: von_mises_fisher(2, 3, mu=[0, 1], kappa=1.0, rng=r), "mu"),
    (lambda r: von_mises_fisher(2, 3, mu=[0, 0, 0], kappa=1.0, rng=r), "mu"),
    (lambda r: spherical_cap(2, 3, eps=0.0, rng=r), "eps"),
    (lambda r: spherical_cap(2, 3, eps=3.5, rng=r), "eps"),
    (lambda r: spherical_cap(2, 3, eps=0.5, rng=r, center=[0, 0, 0]), "center"),
    (lambda r: spherical_cap(2, 3, eps=0.5, rng=r, center=np.ones((2, 3))), "center"),
    (lambda r: orthonormal(4, 3, rng=r), "n=4 > d=3"),
    (lambda r: equispaced_circle(0), "n"),
    (lambda r: inner_products(np.ones(3)), "shape"),
]


@pytest.mark.parametrize(("call", "name"), BAD_CALLS)
def test_bad_arguments_raise_value_error_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call(rng_of())


@pytest.mark.parametrize("rng", [0, np.random.RandomState(0), None])
def test_rng_must_be_a_generator(rng):
    with pytest.raises(TypeError, match="Generator"):
        uniform(2, 3, rng=rng)


def test_module_exports():
    assert set(sphere.__all__) <= set(dir(sphere))
