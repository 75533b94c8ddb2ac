"""Samplers on the unit sphere and the initial-condition registry (``init=``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from particles.errors import ConfigError
from particles.protocols import RunSpec
from particles.sphere.checks import (
    FloatArray,
    check_batch,
    check_int,
    check_real,
    check_rng,
    finish,
    leading_shape,
    unit_vector,
)
from particles.sphere.geometry import equispaced_circle


def _nonzero_norms(g: FloatArray, rng: np.random.Generator) -> FloatArray:
    """Row norms of the standard Gaussian array ``g``, redrawing (in place) zero rows.

    Normalized Gaussians are uniform on the sphere by rotation invariance; a
    zero draw has probability ~0 but would turn into NaN.
    """
    norms = np.linalg.norm(g, axis=-1)
    while (zero := norms == 0.0).any():
        g[zero] = rng.standard_normal((int(zero.sum()), g.shape[-1]))
        norms[zero] = np.linalg.norm(g[zero], axis=-1)
    return norms


def _uniform_directions(shape: tuple[int, ...], dim: int, rng: np.random.Generator) -> FloatArray:
    g = rng.standard_normal((*shape, dim))
    g /= _nonzero_norms(g, rng)[..., None]  # in place: sampler outputs can be large
    return g


def _rotate_from_e1(x: FloatArray, mu: FloatArray) -> FloatArray:
    """Apply, in place, the Householder reflection that maps e_1 to the unit vector ``mu``.

    Any orthogonal map sending e_1 to ``mu`` carries a law invariant under the
    stabilizer of e_1 (vMF, cap) to the same law centred at ``mu``.
    """
    u = -mu
    u[0] += 1.0  # e_1 - mu, exact by Sterbenz when mu ≈ e_1
    norm = np.linalg.norm(u)
    if norm == 0.0:
        return x
    u /= norm
    x -= (2.0 * (x @ u))[..., None] * u
    return x


def _from_polar(
    cos_t: FloatArray, sin_t: FloatArray, d: int, rng: np.random.Generator
) -> FloatArray:
    """Points ``cos θ e_1 + sin θ v`` with ``v`` uniform on the unit sphere of e_1^⊥."""
    # Draw v's Gaussians straight into the output's trailing columns (column 0
    # is drawn and overwritten) rather than filling and copying a second array.
    x = rng.standard_normal((*cos_t.shape, d))
    tail = x[..., 1:]
    tail *= (sin_t / _nonzero_norms(tail, rng))[..., None]
    x[..., 0] = cos_t
    return x


def _renormalize(x: FloatArray) -> FloatArray:
    # Rounding of the rotation leaves |x| = 1 ± 1e-16; in place, x is fresh.
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return x


def uniform(n: int, d: int, *, rng: np.random.Generator, batch: int | None = None) -> FloatArray:
    """I.i.d. points from the uniform (area) measure on S^{d-1}.

    Parameters
    ----------
    n : int
        Number of tokens, >= 1.
    d : int
        Ambient dimension, >= 2.
    rng : numpy.random.Generator
        Source of randomness.
    batch : int, optional
        Number of independent configurations, >= 1.

    Returns
    -------
    ndarray, shape (n, d) or (batch, n, d)
        Normalized standard Gaussian vectors.
    """
    n = check_int("n", n, 1)
    d = check_int("d", d, 2)
    batch = check_batch(batch)
    rng = check_rng(rng)
    return finish(_uniform_directions(leading_shape(n, batch), d, rng))


def _wood_one_minus_w(count: int, d: int, kappa: float, rng: np.random.Generator) -> FloatArray:
    """Draw ``s = 1 - <x, mu>`` for the vMF law on S^{d-1} by Wood's (1994) rejection.

    Wood's scheme, rewritten in terms of ``s = 1 - w`` and ``t = 1 - x0`` so
    that no step cancels when kappa is large (then w, x0 -> 1): with
    ``b = (d-1) / (2κ + sqrt(4κ² + (d-1)²))`` (the conjugate form of Wood's
    ``(-2κ + sqrt(4κ² + (d-1)²)) / (d-1)``), ``z ~ Beta((d-1)/2, (d-1)/2)``,

        s = 2 b z / ((1 - z) + b z),
        accept iff  log U <= κ (t - s) + (d-1) log((t + x0 s) / (t (1 + x0))),

    which is Wood's test ``κ w + (d-1) log(1 - x0 w) - c >= log U`` term by term.
    """
    m1 = d - 1.0
    # Beyond ~1e32 the spread ~ sqrt(d/κ) is below the rounding of unit vectors, so
    # capping κ changes no output but keeps 2κ and κ·(t - s) finite near float max.
    kappa = min(kappa, 1e300)
    two_k = 2.0 * kappa
    b = m1 / (two_k + math.hypot(two_k, m1))  # hypot: no overflow of 4κ²
    x0 = (1.0 - b) / (1.0 + b)
    t = 2.0 * b / (1.0 + b)
    log_norm = math.log(t * (1.0 + x0))  # log(1 - x0²)
    out = np.empty(count)
    pending = np.arange(count)
    while pending.size:
        k = pending.size
        z = rng.beta(0.5 * m1, 0.5 * m1, size=k)
        u = rng.random(k)
        s = 2.0 * b * z / ((1.0 - z) + b * z)
        log_ratio = kappa * (t - s) + m1 * (np.log(t + x0 * s) - log_norm)
        # log_ratio <= 0 up to rounding; comparing u < exp() avoids log(0) for u == 0.
        accept = u < np.exp(np.minimum(log_ratio, 0.0))
        out[pending[accept]] = s[accept]
        pending = pending[~accept]
    return out


def von_mises_fisher(
    n: int,
    d: int,
    *,
    mu: ArrayLike,
    kappa: float,
    rng: np.random.Generator,
    batch: int | None = None,
) -> FloatArray:
    """I.i.d. points from the von Mises–Fisher law on S^{d-1}.

    Density proportional to ``exp(kappa <mu, x>)`` with respect to the area
    measure.  The component ``w = <x, mu>`` is drawn with Wood's (1994)
    rejection algorithm in a cancellation-free form (valid for every d >= 2
    and every finite kappa; past kappa ~ 1e32 the samples equal ``mu`` to
    rounding), the orthogonal part uniformly, then e_1 is reflected onto
    ``mu``.  ``kappa = 0`` gives the uniform law.

    Parameters
    ----------
    n : int
        Number of tokens, >= 1.
    d : int
        Ambient dimension, >= 2.
    mu : array_like, shape (d,)
        Mean direction; any nonzero vector (it is normalized).
    kappa : float
        Concentration, finite and >= 0.
    rng : numpy.random.Generator
        Source of randomness.
    batch : int, optional
        Number of independent configurations, >= 1.

    Returns
    -------
    ndarray, shape (n, d) or (batch, n, d)
        The samples.
    """
    n = check_int("n", n, 1)
    d = check_int("d", d, 2)
    batch = check_batch(batch)
    rng = check_rng(rng)
    mu = unit_vector("mu", mu, d)
    kappa = check_real("kappa", kappa)
    if kappa < 0.0:
        raise ValueError(f"kappa must be >= 0 (0 is the uniform law), got {kappa!r}")
    shape = leading_shape(n, batch)
    s = _wood_one_minus_w(math.prod(shape), d, kappa, rng).reshape(shape)
    # sin θ = sqrt(1 - w²) = sqrt(s (2 - s)): no cancellation for w ≈ ±1.
    x = _from_polar(1.0 - s, np.sqrt(s * (2.0 - s)), d, rng)
    return finish(_renormalize(_rotate_from_e1(x, mu)))


def _log_sin_power(theta: FloatArray, k: float) -> FloatArray:
    with np.errstate(divide="ignore"):  # θ = 0 exactly has log-density -inf, a clean reject
        return k * np.log(np.sin(theta))


def _cap_polar_angles(count: int, d: int, eps: float, rng: np.random.Generator) -> FloatArray:
    """Draw θ in [0, eps] with density proportional to sin^{d-2} θ, exactly.

    The inverse CDF (a regularized incomplete beta function) underflows for
    high d and small caps (e.g. d = 512, eps = 0.1 gives F(eps) ~ 1e-600), so we
    use rejection from a piecewise-exponential envelope instead: the
    log-density φ(θ) = (d-2) log sin θ is concave on (0, π), hence each of its
    tangent lines lies above it everywhere and the minimum over tangents is a
    valid envelope however the tangent points are chosen.  We put them around
    the mode at the scale of the mass, which keeps the acceptance rate above
    ~0.9 for every d and eps.
    """
    if d == 2:  # density ∝ sin^0: uniform angle
        return eps * rng.random(count)
    k = d - 2.0
    mode = min(eps, 0.5 * math.pi)
    sigma = math.sin(mode) / math.sqrt(k)  # 1 / sqrt(-φ''(mode))
    slope_at_eps = k * math.cos(eps) / math.sin(eps) if eps < math.pi else -math.inf
    width = sigma
    if mode == eps and slope_at_eps > 0.0:
        # Mass piles up against θ = eps within ~1/φ'(eps), possibly much less than sigma.
        width = min(sigma, 1.0 / slope_at_eps)
    offsets = np.array([-8.0, -4.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 4.0])
    pts = np.unique(np.concatenate(([mode], mode + width * offsets)))
    pts = pts[(pts > 0.0) & (pts <= eps) & (pts < math.pi)]
    phi = _log_sin_power(pts, k)
    slope = k * np.cos(pts) / np.sin(pts)

    # Breakpoints where consecutive tangents cross; clipping only costs efficiency.
    ds = slope[:-1] - slope[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (phi[1:] - phi[:-1] + slope[:-1] * pts[:-1] - slope[1:] * pts[1:]) / ds
    cross = np.where(ds > 0.0, cross, 0.5 * (pts[:-1] + pts[1:]))
    cross = np.clip(cross, pts[:-1], pts[1:])
    left = np.concatenate(([0.0], cross))
    right = np.concatenate((cross, [eps]))
    keep = right > left
    left, right, pts, phi, slope = left[keep], right[keep], pts[keep], phi[keep], slope[keep]
    length = right - left

    # Each piece exp(φ_j + s_j (θ - t_j)) is sampled as a truncated exponential
    # measured from its larger end, which never overflows.
    rate = np.abs(slope)
    anchor = np.where(slope > 0.0, right, left)
    top = phi + slope * (anchor - pts)
    x = rate * length
    flat = x < 1e-300
    with np.errstate(divide="ignore"):
        log_mass = top + np.where(
            flat, np.log(length), np.log(-np.expm1(-x)) - np.log(np.where(flat, 1.0, rate))
        )
    prob = np.exp(log_mass - log_mass.max())
    cdf = np.cumsum(prob)
    cdf /= cdf[-1]

    out = np.empty(count)
    pending = np.arange(count)
    while pending.size:
        m = pending.size
        j = np.minimum(np.searchsorted(cdf, rng.random(m), side="right"), cdf.size - 1)
        u = rng.random(m)
        rj, xj, lj = rate[j], x[j], length[j]
        delta = np.where(flat[j], u * lj, -np.log1p(u * np.expm1(-xj)) / np.where(flat[j], 1.0, rj))
        delta = np.clip(delta, 0.0, lj)
        theta = np.where(slope[j] > 0.0, right[j] - delta, left[j] + delta)
        envelope = phi[j] + slope[j] * (theta - pts[j])
        accept = rng.random(m) < np.exp(np.minimum(_log_sin_power(theta, k) - envelope, 0.0))
        out[pending[accept]] = theta[accept]
        pending = pending[~accept]
    return out


def spherical_cap(
    n: int,
    d: int,
    *,
    eps: float,
    rng: np.random.Generator,
    center: ArrayLike | None = None,
    batch: int | None = None,
) -> FloatArray:
    """I.i.d. points from the uniform (area) measure on a geodesic ball.

    Samples the cap ``{x : geodesic_distance(x, center) <= eps}`` exactly: the
    polar angle θ has density proportional to ``sin^{d-2} θ`` on [0, eps]
    (drawn by rejection from a log-concave envelope, robust for any d and
    tiny caps), the direction in ``center^⊥`` is uniform.

    Parameters
    ----------
    n : int
        Number of tokens, >= 1.
    d : int
        Ambient dimension, >= 2.
    eps : float
        Geodesic radius of the cap, in (0, π]; ``eps = π`` is the whole sphere.
    rng : numpy.random.Generator
        Source of randomness.
    center : array_like, shape (d,), optional
        Centre of the cap, any nonzero vector (it is normalized); default e_1.
    batch : int, optional
        Number of independent configurations, >= 1.

    Returns
    -------
    ndarray, shape (n, d) or (batch, n, d)
        The samples.
    """
    n = check_int("n", n, 1)
    d = check_int("d", d, 2)
    batch = check_batch(batch)
    rng = check_rng(rng)
    eps = check_real("eps", eps)
    if not 0.0 < eps <= math.pi:
        raise ValueError(f"eps must lie in (0, pi], got {eps!r}")
    if center is None:
        center = np.eye(1, d).ravel()
    else:
        center = unit_vector("center", center, d)
    shape = leading_shape(n, batch)
    theta = _cap_polar_angles(math.prod(shape), d, eps, rng).reshape(shape)
    x = _from_polar(np.cos(theta), np.sin(theta), d, rng)
    return finish(_renormalize(_rotate_from_e1(x, center)))


def orthonormal(
    n: int, d: int, *, rng: np.random.Generator, batch: int | None = None
) -> FloatArray:
    """Haar-random orthonormal tokens (a uniform point of the Stiefel manifold).

    QR of a d×n standard Gaussian matrix, with the columns of Q multiplied by
    the signs of diag(R): without that fix Q is not Haar distributed.

    Parameters
    ----------
    n : int
        Number of tokens, 1 <= n <= d.
    d : int
        Ambient dimension, >= 2.
    rng : numpy.random.Generator
        Source of randomness.
    batch : int, optional
        Number of independent configurations, >= 1.

    Returns
    -------
    ndarray, shape (n, d) or (batch, n, d)
        Rows orthonormal to rounding.
    """
    n = check_int("n", n, 1)
    d = check_int("d", d, 2)
    batch = check_batch(batch)
    rng = check_rng(rng)
    if n > d:
        raise ValueError(f"orthonormal needs n <= d, got n={n} > d={d}")
    lead = () if batch is None else (batch,)
    g = rng.standard_normal((*lead, d, n))
    q, r = np.linalg.qr(g)
    sign = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    sign = np.where(sign == 0.0, 1.0, sign)  # probability 0, but keep columns unit
    q = q * sign[..., None, :]
    return finish(np.swapaxes(q, -1, -2))


def _equispaced_sampler(
    n: int,
    d: int,
    *,
    rng: np.random.Generator,
    batch: int | None = None,
    phase: float = 0.0,
) -> FloatArray:
    """:func:`equispaced_circle` behind the common sampler signature (d must be 2).

    ``rng`` is accepted for uniformity and not used; with ``batch`` every
    configuration is the same.
    """
    d = check_int("d", d, 2)
    if d != 2:
        raise ValueError(f"the 'equispaced' sampler only exists for d=2, got d={d}")
    batch = check_batch(batch)
    check_rng(rng)
    x = equispaced_circle(n, phase=phase)
    if batch is not None:
        x = np.broadcast_to(x, (batch, *x.shape))
    return finish(x)


#: Initial-condition samplers by name, all callable as ``f(n, d, *, rng, batch=None, **params)``.
SAMPLERS: dict[str, Callable[..., FloatArray]] = {
    "uniform": uniform,
    "orthogonal": orthonormal,
    "cap": spherical_cap,
    "equispaced": _equispaced_sampler,
    "vmf": von_mises_fisher,
}


@dataclass(frozen=True)
class InitialCondition:
    """A registered initial condition (``init="NAME"`` or ``"NAME:VALUE"``).

    Attributes
    ----------
    name, description : str
    sample : callable, optional
        ``sample(n, d, value, *, rng, batch) -> x`` of shape (n, d) or
        (batch, n, d) (``value`` the parameter, or None); None when the
        positions are given (``"array"``) or drawn from a file by the
        sessions (``"density:FILE"``, :func:`particles.runs.initial.initial_tokens`).
    parameter : str, optional
        Placeholder of the parameter in ``"NAME:PARAM"`` (``"EPS"``), None
        when the name takes none.
    allowed : str
        The rule on the parameter in words (``"0 < EPS <= pi"``).
    accepts : callable, optional
        ``accepts(value) -> bool``, the rule itself.
    requires : callable, optional
        ``requires(n, d) -> str | None``: why ``n`` tokens in dimension ``d``
        cannot start from it (a one-line ValueError message), or None.
    text : bool
        Whether the parameter is a text (a file name) rather than a number.
    """

    name: str
    description: str
    sample: Callable[..., FloatArray] | None
    parameter: str | None = None
    allowed: str = ""
    accepts: Callable[[float], bool] | None = None
    requires: Callable[[int, int], str | None] | None = None
    text: bool = False

    def __str__(self) -> str:
        return self.description

    def check(self, spec: RunSpec) -> None:
        """Raise :class:`~particles.errors.ConfigError` (a ValueError, field ``init``)
        when the run's ``n`` tokens in dimension ``d`` cannot start from it."""
        why = self.requires(spec.n, spec.d) if self.requires is not None else None
        if why:
            raise ConfigError(why, "init")


def _e1(d: int) -> FloatArray:
    mu = np.zeros(d)
    mu[0] = 1.0
    return mu


def _orthogonal_requires(n: int, d: int) -> str | None:
    if n > d:
        return (f"init must not be 'orthogonal' when n > d: orthonormal tokens need n <= d, "
                f"got n={n}, d={d}")
    return None


def _density_requires(n: int, d: int) -> str | None:
    if d not in (2, 3):
        return (f"init must not be 'density:FILE' when d != 2 and d != 3: a density file "
                f"holds a density on the circle or on S^2, got d={d}")
    return None


def _equispaced_requires(n: int, d: int) -> str | None:
    if d != 2:
        return (f"init must not be 'equispaced' when d != 2: equispaced tokens lie on the "
                f"circle, got d={d}")
    return None


#: initial conditions by name (``init=``); ``cap`` and ``vmf`` take ``:PARAM``.
INITIAL_CONDITIONS: dict[str, InitialCondition] = {c.name: c for c in (
    InitialCondition("uniform", "i.i.d. uniform on the sphere",
                     lambda n, d, value, *, rng, batch: uniform(n, d, rng=rng, batch=batch)),
    InitialCondition("orthogonal", "Haar-random orthonormal tokens (n <= d)",
                     lambda n, d, value, *, rng, batch: orthonormal(n, d, rng=rng, batch=batch),
                     requires=_orthogonal_requires),
    InitialCondition("equispaced", "equispaced on the circle (d = 2)",
                     lambda n, d, value, *, rng, batch: _equispaced_sampler(
                         n, d, rng=rng, batch=batch),
                     requires=_equispaced_requires),
    InitialCondition("cap", "uniform on a spherical cap of geodesic radius EPS (cap:EPS)",
                     lambda n, d, value, *, rng, batch: spherical_cap(
                         n, d, eps=value, rng=rng, batch=batch),
                     parameter="EPS", allowed="0 < EPS <= pi",
                     accepts=lambda v: 0 < v <= math.pi),
    InitialCondition("vmf", "von Mises-Fisher around e_1 with concentration KAPPA (vmf:KAPPA)",
                     lambda n, d, value, *, rng, batch: von_mises_fisher(
                         n, d, mu=_e1(d), kappa=value, rng=rng, batch=batch),
                     parameter="KAPPA", allowed="KAPPA >= 0",
                     accepts=lambda v: math.isfinite(v) and v >= 0),
    InitialCondition("density", "tokens drawn i.i.d. with the seed from the initial density "
                     "(frame 0) of a mean-field density file (d = 2 or 3; density:FILE)", None,
                     parameter="FILE", allowed="a density file (particles meanfield)",
                     requires=_density_requires, text=True),
    InitialCondition("array", "given positions x0", None),
)}
