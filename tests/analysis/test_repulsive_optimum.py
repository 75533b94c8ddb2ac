"""repulsive_optimum: the regular simplex and the cross-polytope that the repulsive flow
V = -I reaches (issue 27, figure 11), their inner products and energies."""

from __future__ import annotations

import numpy as np
import pytest

from particles import simulate
from particles.analysis import Scalars, repulsive_optimum
from particles.sphere import uniform


@pytest.mark.parametrize("n,d,name", [(1, 2, "regular simplex"), (3, 2, "regular simplex"),
                                      (4, 3, "regular simplex"), (5, 8, "regular simplex"),
                                      (4, 2, "cross-polytope"), (6, 3, "cross-polytope"),
                                      (16, 8, "cross-polytope")])
def test_positions_have_the_stated_inner_products(n, d, name):
    opt = repulsive_optimum(n, d)
    assert opt.name == name and opt.inner_products.shape == (n * (n - 1) // 2,)
    x = opt.positions()
    assert x.shape == (n, d)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-14)
    gram = (x @ x.T)[np.triu_indices(n, 1)]
    np.testing.assert_allclose(np.sort(gram), opt.inner_products, atol=1e-14)
    assert np.all(np.diff(opt.inner_products) >= 0)


@pytest.mark.parametrize("beta", [0.0, 0.5, 4.0])
@pytest.mark.parametrize("n,d", [(4, 3), (6, 3), (9, 8)])
def test_energies_match_the_observables_and_bound_random_starts(n, d, beta):
    opt = repulsive_optimum(n, d)
    scalars = Scalars(beta=beta).compute(opt.positions())
    assert opt.energy(beta) == pytest.approx(float(scalars.energy), rel=1e-12)
    assert opt.energy_normalized(beta) == pytest.approx(float(scalars.energy_normalized),
                                                        rel=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(50):  # a minimiser: no random configuration does better
        x = uniform(n, d, rng=rng)
        assert float(Scalars(beta=beta).compute(x).energy) >= opt.energy(beta) - 1e-12


def test_the_repulsive_flow_reaches_the_cross_polytope():
    n, d, beta = 6, 3, 4.0
    traj = simulate(n, d, beta, V="minus_identity", integrator="dopri5", rtol=1e-9, T=300.0,
                    save_times="log:0.01:300:20", seed=3)
    x = traj.positions[-1]
    opt = repulsive_optimum(n, d)
    np.testing.assert_allclose(np.sort((x @ x.T)[np.triu_indices(n, 1)]), opt.inner_products,
                               atol=1e-6)
    assert traj.observables["energy"][-1] == pytest.approx(opt.energy(beta), rel=1e-10)


@pytest.mark.parametrize("n,d,match", [(5, 3, "no known optimal configuration"),
                                       (0, 3, "n must be"), (3, 1, "d must be")])
def test_unknown_sizes_are_refused(n, d, match):
    with pytest.raises(ValueError, match=match):
        repulsive_optimum(n, d)
