"""The mean-field PDE on S^{d-1} for densities of the polar angle only (any ``d >= 3``).

For ``f(theta)`` relative to the uniform measure (:mod:`particles.meanfield.zonal`)
and ``t = cos theta``, ``d_t f + div(f v) = D Laplace f`` with
``v = grad Phi`` reads

    d_t f = -(1/w) d_t[w (1 - t^2) f Phi'(t)] + D (1/w) d_t[w (1 - t^2) f'(t)],

``w = (1 - t^2)^{(d-3)/2}`` (the ``sin^{d-2} theta`` of the volume).  USA:
``Phi = s K f / beta``; SA: ``Phi' = (K f)' / (beta K f)``, with ``K`` acting on
the orthonormal Gegenbauer polynomial ``q_l`` as its Funk-Hecke factor
``mu_l``.

Method: Galerkin in ``q_0..q_lmax``.  The flux ``g = (1 - t^2) f Phi'`` is
formed at the ``N`` Gauss nodes of ``w`` and projected by parts,
``d_t a_l = E_w[g q_l'] - D l (l + d - 2) a_l``; with ``2 N - 1 >= 3 lmax``
the quadrature is exact for USA (a polynomial flux: no aliasing) and the
mass ``a_0`` never changes (``q_0' = 0``): the grid mass moves only by the
round-off of one analysis per step.  The integrating-factor DOPRI5 loop is
:mod:`particles.meanfield.lawson`.  Everything is a matrix product of size
``N x (lmax + 1)`` (NumPy/BLAS; no compiled kernel is needed).

Limit in high dimension: the weight concentrates at ``|t| ~ d^{-1/2}``, while
the outer Gauss nodes (weights down to 1e-70 at ``d = 1024, lmax = 64``) sit
where ``q_lmax`` reaches about ``sqrt(dim) (t / b)^lmax`` (1e15 at ``d = 1024,
lmax = 32``; 1e21 at ``d = 128, lmax = 64``).  The coefficients stay accurate
(``d = 1024``: degrees ``<= 24`` of ``lmax = 32`` and ``64`` agree to 5e-9), and so
do mass, energy and every weighted integral, but the grid values at those nodes
carry the round-off of the top coefficients times that factor: ``min_density``,
the positivity policy and a plot's tails are meaningful only while it stays well
below 1e16 (it is 3e9 at ``d = 128, lmax = 24``, 4e14 at ``lmax = 40``; 3e11 at
``d = 1024, lmax = 24``).
"""

from __future__ import annotations

import math

import numpy as np

from particles.meanfield.sphere_config import SphereFieldConfig, parse_sphere_init
from particles.meanfield.zonal import funk_hecke, gauss_nodes, gegenbauer, laplace_eigenvalues
from particles.seeds import init_rng


def polar_nodes(lmax: int) -> int:
    """Gauss nodes of a dealiased grid: the least ``N`` with ``2 N - 1 >= 3 lmax``."""
    return (3 * lmax) // 2 + 1


class AxisymmetricSpace:
    """The Galerkin discretisation of one configuration
    (a :class:`~particles.meanfield.lawson.Space`).

    Attributes
    ----------
    t, weights : ndarray, shape (N,)
        Gauss nodes ``cos theta_j`` (increasing) and weights (sum 1).
    theta : ndarray, shape (N,)
        Polar angles of the nodes (decreasing).
    L : ndarray, shape (lmax + 1,)
        ``-D l (l + d - 2)``.
    """

    def __init__(self, config: SphereFieldConfig) -> None:
        d, lmax = int(config.d), int(config.lmax)
        self.d, self.lmax = d, lmax
        beta, model = float(config.beta), config.model
        self.beta = beta
        self.t, self.weights = gauss_nodes(d, polar_nodes(lmax))
        self.theta = np.arccos(self.t)
        self.grid_shape = self.t.shape
        q, dq = gegenbauer(d, lmax, self.t)
        self.synth = np.ascontiguousarray(q.T)  # (N, L+1)
        self.dsynth = np.ascontiguousarray(dq.T)
        self.anal = q * self.weights  # (L+1, N)
        self.flux_anal = dq * (self.weights * (1.0 - self.t**2))
        self.lap = laplace_eigenvalues(d, lmax)
        self.L = -float(config.D) * self.lap
        self.D = float(config.D)
        # Phi = pot * a (energy units), v = grad(flow * a) [/ (z * a)]
        self.pot = funk_hecke(d, beta, lmax) / beta if beta > 0 else _beta0(d, lmax)
        if model == "sa" and beta > 0:
            log_mu0 = math.log(funk_hecke(d, beta, 0)[0])
            self.z = funk_hecke(d, beta, lmax, log_scale=log_mu0)
            self.flow = self.z / beta
        else:
            self.z = None
            scale = beta if (config.usa_scale == "n_exp_beta" and beta > 0) else 0.0
            self.flow = (funk_hecke(d, beta, lmax, log_scale=scale) / beta if beta > 0
                         else _beta0(d, lmax))
        # USA: flow potential s Phi; SA: the free energy uses the USA one (circle's rules)
        self.flow_potential = self.flow if self.z is None else self.pot

    # ------------------------------------------------------------ Space protocol
    def analyse(self, f: np.ndarray) -> np.ndarray:
        """Grid values (N,) -> coefficients (lmax + 1,)."""
        return self.anal @ f

    def synthesise(self, u: np.ndarray) -> np.ndarray:
        """Coefficients (lmax + 1,) -> grid values (N,)."""
        return self.synth @ u

    def velocity(self, u: np.ndarray) -> np.ndarray:
        """``d Phi / dt`` (t = cos theta) at the nodes, shape (N,): the polar velocity is
        ``-sin(theta)`` times it."""
        v = self.dsynth @ (self.flow * u)
        if self.z is not None:
            v = v / (self.synth @ (self.z * u))
        return v

    def rhs(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f = self.synth @ u
        return self.flux_anal @ (f * self.velocity(u)), f

    def norm(self, e: np.ndarray) -> float:
        return float(np.sqrt(np.dot(e, e)))

    def rms(self, f: np.ndarray) -> float:
        return float(np.sqrt(self.weights @ (f * f)))

    # ------------------------------------------------------------ observables
    def mass(self, f: np.ndarray) -> float:
        """``int f dsigma`` (1 for a probability density)."""
        return float(self.weights @ f)

    def energy(self, f: np.ndarray) -> float:
        """``E_beta = 1/(2 beta) int int exp(beta <x, y>) f f`` (the particles' energy,
        unit masses; ``beta = 0``: its limit ``|int x f|^2 / 2`` up to a constant)."""
        a = self.analyse(f)
        return 0.5 * float(np.sum(self.pot * a * a))

    def free_energy(self, f: np.ndarray) -> float:
        """``F = -s E_beta + D int f log f dsigma`` (decreases along USA)."""
        a = self.analyse(f)
        e = 0.5 * float(np.sum(self.flow_potential * a * a))
        return -e if self.D == 0.0 else -e + self.D * self.entropy(f)

    def entropy(self, f: np.ndarray) -> float:
        """``int f log f dsigma`` (NaN if ``f < 0`` somewhere)."""
        if f.min() < 0.0:
            return float("nan")
        pos = f > 0.0
        return float(self.weights[pos] @ (f[pos] * np.log(f[pos])))

    def dissipation(self, f: np.ndarray) -> float:
        """``-dF/dt = int f (grad sPhi - D grad log f).(v - D grad log f) dsigma``."""
        a = self.analyse(f)
        g = self.dsynth @ (self.flow_potential * a)
        v = self.velocity(a)
        w = self.weights * (1.0 - self.t**2)
        if self.D == 0.0:
            return float(w @ (f * g * v))
        if f.min() <= 0.0:
            return float("nan")
        df = self.dsynth @ a
        return float(w @ ((f * g - self.D * df) * (f * v - self.D * df) / f))

    def initial(self, config: SphereFieldConfig) -> np.ndarray:
        """The initial density of ``config`` on the nodes, shape (N,), unit mass.

        Raises
        ------
        ValueError
            A density that is not positive (``eps`` too large).
        """
        name, p = parse_sphere_init(config.init, self.lmax, True)
        a = np.zeros(self.lmax + 1)
        a[0] = 1.0
        if name == "modes":
            a[p["l"]] = p["eps"]
        elif name == "perturbed":
            # in the Gegenbauer polynomials normalised to 1 at the pole (|P_l| <= 1): the
            # orthonormal q_l reach sqrt(dim) ~ d^(l/2) there, far beyond eps in high d
            k = min(p["lmax"], self.lmax)
            at_pole = gegenbauer(self.d, k, np.ones(1))[0][1:, 0]
            a[1:k + 1] = (p["eps"] * init_rng(int(config.seed)).standard_normal(k)
                          / (math.sqrt(k) * at_pole))
        elif name == "vonmises":
            a = self.analyse(np.exp(p["kappa"] * (self.t - 1.0)))
            a = a / a[0]
        f = self.synthesise(a)
        if not f.min() > 0.0:
            raise ValueError(f"init {config.init!r} is not a positive density "
                             f"(min {f.min():.3g}): lower eps")
        return f


def _beta0(d: int, lmax: int) -> np.ndarray:
    """The ``beta -> 0`` limit of ``mu_l / beta`` up to the constant ``l = 0`` term:
    ``1 / d`` at ``l = 1`` (the kernel ``<x, y>``)."""
    out = np.zeros(lmax + 1)
    out[1] = 1.0 / d
    return out
