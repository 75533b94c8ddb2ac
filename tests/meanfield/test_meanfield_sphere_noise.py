"""The diffusion threshold on S^2 against noisy particles (issue 42 item 3).

Tokens with noise ``sigma`` on S^2 have the mean field ``D = sigma^2 / 2``; the uniform
state is stable above ``D_c = mu_1 / beta`` (:func:`critical_diffusion_sphere`, the
``l = 1`` drift).  The order parameter ``r = |mean_i x_i|`` is the ``l = 1`` mode, as
on the circle (``tests/meanfield/test_meanfield_particles.py``): above ``D_c`` it is an
Ornstein-Uhlenbeck mode of rate ``2 (D - D_c)`` fed by the same noise as without
interaction (rate ``2 D``, ``n E r^2 = 1``), so ``n E r^2 = D / (D - D_c)``; below,
it grows at ``2 (D_c - D)`` to one cluster.  The PDE agrees: from a cap it relaxes
to the uniform density above ``D_c`` and keeps a cluster below.
"""

import math

import numpy as np
import pytest

import particles
from particles.meanfield.sphere import index
from particles.meanfield.sphere_config import SphereFieldConfig
from particles.meanfield.sphere_solver import make_space, solve_sphere_frames
from particles.meanfield.zonal import critical_diffusion_sphere

BETA, N = 1.0, 100


def order(x: np.ndarray) -> np.ndarray:
    """``r = |mean_i x_i|`` over the token axis, shape (frames, batch)."""
    return np.linalg.norm(x.mean(axis=-2), axis=-1)


def pde_order(config: SphereFieldConfig) -> float:
    """``r = |int x f dsigma|`` of the last frame, from its degree-1 coefficients
    (``x_3 = sqrt(4 pi / 3) Y_10``, and ``Y_11`` carries ``x_1, x_2``)."""
    space = make_space(config)
    a = space.analyse(list(solve_sphere_frames(config, space=space))[-1].rho)
    L = config.lmax
    return math.sqrt(abs(a[index(L, 1, 0)]) ** 2 + 2 * abs(a[index(L, 1, 1)]) ** 2) \
        / math.sqrt(12 * math.pi)


def test_noisy_tokens_on_s2_cross_over_at_the_diffusion_threshold():
    Dc = critical_diffusion_sphere(3, BETA, "usa")
    sc = math.sqrt(2 * Dc)
    # above: the stationary level 1.8 at sigma = 1.5 sigma_c (~100 nearly independent
    # samples: 1.74 to 2.13 over six seeds)
    tr = particles.simulate(N, 3, BETA, model="usa", noise=1.5 * sc, batch=16, dt=0.04,
                            T=12.0, save_every=25, seed=21)
    late = order(tr.positions)[tr.times >= 4.0]
    assert N * np.mean(late**2) == pytest.approx(1.0 / (1.0 - 1.5**-2), rel=0.3)
    assert np.max(late) < 6.0 / math.sqrt(N)
    # below: e^5 times the noise level by T, then one cluster in every system
    D = 0.5 * (0.5 * sc) ** 2
    T = round(5.0 / (2 * (Dc - D)))
    tr = particles.simulate(N, 3, BETA, model="usa", noise=0.5 * sc, batch=4, dt=0.04, T=T,
                            save_every=25, seed=12)
    assert np.all(order(tr.positions)[-1] > 0.7)


def test_the_pde_from_a_cap_relaxes_above_the_threshold_only():
    Dc = critical_diffusion_sphere(3, BETA, "usa")
    r = [pde_order(SphereFieldConfig(d=3, lmax=12, beta=BETA, D=q * Dc, T=8.0, rtol=1e-6,
                                     init="vonmises:kappa=4,theta=1,phi=2"))
         for q in (0.7, 1.5)]
    # below: a steady cluster (r = 0.78); above: decay at 2 (D - Dc) = Dc from
    # r(0) = 0.75, to about 0.75 e^{-8 Dc} = 0.04
    assert r[0] > 0.7 and r[1] < 0.05
