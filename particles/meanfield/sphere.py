"""The mean-field PDE on S^2, pseudo-spectral with ducc0's spherical-harmonic transforms.

Solves ``d_t f + div(f v[f]) = D Laplace f`` for a density ``f`` relative to the
uniform measure (:mod:`particles.meanfield.zonal`; ``rho = f / (4 pi)`` per
unit area) with ``v = grad(s K f) / beta`` (USA) or ``grad(K f) / (beta K f)``
(SA), ``K`` the kernel ``exp(beta <x, y>)``.

Method
------
*Space*: Galerkin in the spherical harmonics ``Y_lm``, ``l <= lmax``, with the
coefficients ``a_lm`` of ``f`` in ducc0's layout (orthonormal on the sphere's
area, ``m >= 0``, healpy order).  ``K`` is diagonal (Funk-Hecke: ``mu_l``);
the gradient of the potential is one ``synthesis_2d_deriv1``, the flux
``F = f v`` is formed on a Gauss-Legendre grid of ``ntheta = 3 lmax / 2 + 2``
rings and ``nphi >= 3 lmax + 2`` points per ring (the next even length with
prime factors 2, 3 and 5: a prime factor such as lmax = 64's 194 = 2 x 97
made every ring's FFT, hence every transform, about four times slower), and
projected by parts,
``d_t a_lm = int F . grad Y_lm^* = sqrt(l (l + 1)) E_lm(F)`` (one weighted
spin-1 adjoint synthesis).  The grid integrates products of degree
``3 lmax`` exactly, so for USA (a polynomial flux) the projection has no
aliasing (dealiased, the 3/2 rule); SA's division by ``K f`` is smooth and
aliases only at the level of its spectral tail.  ``a_00`` (the mass) has a
zero derivative, so the grid mass moves only by round-off.

*Time*: the integrating-factor DOPRI5 loop of :mod:`particles.meanfield.lawson`
(diffusion ``-D l (l + 1)`` exact, advection explicit, adaptive).

*Cost*: per stage three transforms (SA: four) of size ``lmax``; ducc0 runs
them on ``nthreads`` threads with the same numbers on any count (each
coefficient and each ring is summed by one thread).
"""

from __future__ import annotations

import math

import numpy as np
from ducc0.sht import experimental as sht
from scipy.fft import next_fast_len

from particles.meanfield.sphere_config import SphereFieldConfig, parse_sphere_init
from particles.meanfield.sphere_tokens import cap_coefficients, uniform_directions
from particles.meanfield.zonal import funk_hecke
from particles.seeds import init_rng

#: threads of ducc0's transforms (results do not depend on it).
NTHREADS = 2


def grid_size(lmax: int) -> tuple[int, int]:
    """``(ntheta, nphi)`` of the dealiased Gauss-Legendre grid for ``lmax``: ``nphi`` the
    smallest even 5-smooth length ``>= 3 lmax + 2`` (fast FFTs along the rings)."""
    nphi = next_fast_len(3 * lmax + 2, real=True)
    while nphi % 2:
        nphi = next_fast_len(nphi + 1, real=True)
    return (3 * lmax) // 2 + 2, nphi


def degrees(lmax: int) -> tuple[np.ndarray, np.ndarray]:
    """``l`` and ``m`` of every coefficient in ducc0's (healpy) layout, each shape
    ((lmax + 1)(lmax + 2) / 2,)."""
    ell = np.concatenate([np.arange(m, lmax + 1) for m in range(lmax + 1)])
    em = np.concatenate([np.full(lmax + 1 - m, m) for m in range(lmax + 1)])
    return ell, em


def index(lmax: int, ell: int, m: int) -> int:
    """Position of ``a_lm`` (``m >= 0``) in ducc0's layout."""
    return m * (2 * lmax + 1 - m) // 2 + ell


class SphereSpace:
    """The Galerkin discretisation on S^2 of one configuration
    (a :class:`~particles.meanfield.lawson.Space`).

    Attributes
    ----------
    theta : ndarray, shape (ntheta,)
        Colatitudes of the Gauss-Legendre rings (increasing from the north pole).
    phi : ndarray, shape (nphi,)
        Longitudes ``2 pi k / nphi``.
    cell : ndarray, shape (ntheta, 1)
        Quadrature weight of each grid point for ``sigma`` (the grid sums to 1).
    L : ndarray, shape (nalm,)
        ``-D l (l + 1)``.
    """

    def __init__(self, config: SphereFieldConfig, nthreads: int = NTHREADS) -> None:
        lmax = int(config.lmax)
        self.lmax, self.nthreads = lmax, int(nthreads)
        self.ntheta, self.nphi = grid_size(lmax)
        self.grid_shape = (self.ntheta, self.nphi)
        x = np.polynomial.legendre.leggauss(self.ntheta)[0]
        self.theta = np.arccos(x[::-1])
        self.phi = 2.0 * np.pi * np.arange(self.nphi) / self.nphi
        self.cell = (sht.get_gridweights("GL", self.ntheta) / (4.0 * np.pi * self.nphi))[:, None]
        self.ell, self.m = degrees(lmax)
        self.twice = np.where(self.m > 0, 2.0, 1.0)  # a_lm and a_l-m = (-1)^m conj(a_lm)
        self.root = np.sqrt(self.ell * (self.ell + 1.0))
        self.L = -float(config.D) * self.ell * (self.ell + 1.0)
        self.D = float(config.D)
        beta = float(config.beta)
        mu = funk_hecke(3, beta, lmax) if beta > 0 else None
        self.pot = (mu / beta)[self.ell] if beta > 0 else np.where(self.ell == 1, 1.0 / 3, 0.0)
        if config.model == "sa" and beta > 0:
            z = funk_hecke(3, beta, lmax, log_scale=math.log(mu[0]))
            self.z, self.flow = z[self.ell], z[self.ell] / beta
        else:
            self.z = None
            scale = beta if (config.usa_scale == "n_exp_beta" and beta > 0) else 0.0
            self.flow = (funk_hecke(3, beta, lmax, log_scale=scale)[self.ell] / beta
                         if beta > 0 else self.pot)
        self.flow_potential = self.flow if self.z is None else self.pot

    # ------------------------------------------------------------ transforms
    def synthesise(self, u: np.ndarray) -> np.ndarray:
        """Coefficients (nalm,) -> grid values (ntheta, nphi)."""
        return sht.synthesis_2d(alm=u[None], spin=0, lmax=self.lmax, geometry="GL",
                                ntheta=self.ntheta, nphi=self.nphi,
                                nthreads=self.nthreads)[0]

    def gradient(self, u: np.ndarray) -> np.ndarray:
        """``(d_theta, d_phi / sin theta)`` of the function of ``u``, shape (2, ntheta, nphi)."""
        return sht.synthesis_2d_deriv1(alm=u[None], lmax=self.lmax, geometry="GL",
                                       ntheta=self.ntheta, nphi=self.nphi,
                                       nthreads=self.nthreads)

    def analyse(self, f: np.ndarray) -> np.ndarray:
        """Grid values -> coefficients (the exact projection of degree ``<= 2 lmax`` maps)."""
        return sht.adjoint_synthesis_2d(map=(f * (4.0 * np.pi * self.cell))[None], spin=0,
                                        lmax=self.lmax, geometry="GL",
                                        nthreads=self.nthreads)[0]

    def velocity(self, u: np.ndarray) -> np.ndarray:
        """``v`` on the grid, shape (2, ntheta, nphi) (polar and azimuthal components)."""
        v = self.gradient(self.flow * u)
        if self.z is not None:
            v = v / self.synthesise(self.z * u)
        return v

    def rhs(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f = self.synthesise(u)
        flux = f * self.velocity(u) * (4.0 * np.pi * self.cell)
        e = sht.adjoint_synthesis_2d(map=flux, spin=1, lmax=self.lmax, geometry="GL",
                                     nthreads=self.nthreads)[0]
        return self.root * e, f

    def norm(self, e: np.ndarray) -> float:
        return float(np.sqrt(np.sum(self.twice * (e.real**2 + e.imag**2)) / (4.0 * np.pi)))

    def rms(self, f: np.ndarray) -> float:
        return float(np.sqrt(np.sum(self.cell * f * f)))

    # ------------------------------------------------------------ observables
    def mass(self, f: np.ndarray) -> float:
        """``int f dsigma`` (1 for a probability density)."""
        return float(np.sum(self.cell * f))

    def _pairing(self, f: np.ndarray, mult: np.ndarray) -> float:
        a = self.analyse(f)
        return 0.5 * float(np.sum(self.twice * mult * (a.real**2 + a.imag**2))) / (4 * np.pi)

    def energy(self, f: np.ndarray) -> float:
        """``E_beta = 1/(2 beta) int int exp(beta <x, y>) f f dsigma dsigma``."""
        return self._pairing(f, self.pot)

    def entropy(self, f: np.ndarray) -> float:
        """``int f log f dsigma`` (NaN if ``f < 0`` somewhere)."""
        if f.min() < 0.0:
            return float("nan")
        with np.errstate(divide="ignore", invalid="ignore"):
            flogf = np.where(f > 0.0, f * np.log(f), 0.0)
        return float(np.sum(self.cell * flogf))

    def free_energy(self, f: np.ndarray) -> float:
        """``F = -s E_beta + D int f log f dsigma`` (decreases along USA)."""
        e = self._pairing(f, self.flow_potential)
        return -e if self.D == 0.0 else -e + self.D * self.entropy(f)

    def dissipation(self, f: np.ndarray) -> float:
        """``-dF/dt = int f (grad sPhi - D grad log f).(v - D grad log f) dsigma``."""
        a = self.analyse(f)
        g = self.gradient(self.flow_potential * a)
        v = self.velocity(a)
        if self.D == 0.0:
            return float(np.sum(self.cell * f * (g * v).sum(0)))
        if f.min() <= 0.0:
            return float("nan")
        df = self.gradient(a)
        return float(np.sum(self.cell * ((f * g - self.D * df) * (f * v - self.D * df)).sum(0)
                            / f))

    def initial(self, config: SphereFieldConfig) -> np.ndarray:
        """The initial density of ``config`` on the grid, shape (ntheta, nphi), unit mass.

        Raises
        ------
        ValueError
            A density that is not positive (``eps`` too large).
        """
        name, p = parse_sphere_init(config.init, self.lmax, False)
        unit = math.sqrt(4.0 * np.pi)  # a_00 of f = 1
        a = np.zeros(self.ell.size, dtype=np.complex128)
        if name == "modes":
            ell, m = p["l"], p["m"]
            # real harmonics orthonormal for sigma: m > 0 cos, m < 0 sin, without the
            # Condon-Shortley phase of Y_lm (so l = 1, m = 1 is + sqrt(3) x)
            amp = p["eps"] * unit * (1.0 if m == 0 else
                                     (-1) ** m * (1.0 if m > 0 else -1j) / math.sqrt(2))
            a[index(self.lmax, ell, abs(m))] = amp
        elif name == "perturbed":
            k = min(p["lmax"], self.lmax)
            sel = (self.ell >= 1) & (self.ell <= k)
            rng = init_rng(int(config.seed))
            re, im = rng.standard_normal((2, int(sel.sum())))
            coef = np.where(self.m[sel] == 0, re, (re + 1j * im) / math.sqrt(2))
            a[sel] = p["eps"] * unit * coef / math.sqrt(k * (k + 2))
        elif name == "caps":
            centres = uniform_directions(p["count"], init_rng(int(config.seed)))
            a = cap_coefficients(centres, p["kappa"], self.lmax)
        elif name == "particles":
            raise ValueError(f"init 'particles' is read from {p['file']}: the session draws "
                             "it (particles.runs.meanfield.run_meanfield_to_file)")
        elif name == "vonmises":
            st, ct = np.sin(self.theta)[:, None], np.cos(self.theta)[:, None]
            cos_angle = (ct * math.cos(p["theta"])
                         + st * math.sin(p["theta"]) * np.cos(self.phi - p["phi"]))
            a = self.analyse(np.exp(p["kappa"] * (cos_angle - 1.0)))
            a = a * (unit / a[0].real)
        a[0] = unit
        f = self.synthesise(a)
        if not f.min() > 0.0:
            fix = "raise lmax or lower kappa" if name == "caps" else "lower eps"
            raise ValueError(f"init {config.init!r} is not a positive density "
                             f"(min {f.min():.3g}): {fix}")
        return f
