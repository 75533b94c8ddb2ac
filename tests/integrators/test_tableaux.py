"""The public Butcher tableaux: order conditions, and one set of coefficients for
the particles' stepper and the mean-field solver."""

from __future__ import annotations

import numpy as np

from particles.integrators import INTEGRATORS, dopri5
from particles.integrators.tableaux import DOPRI5
from particles.meanfield import lawson


def test_dopri5_satisfies_its_order_conditions():
    A = np.zeros((DOPRI5.stages, DOPRI5.stages))
    A[:-1, :-1] = DOPRI5.a_matrix()
    A[-1, :-1] = DOPRI5.b  # the last stage sits at the new solution
    b, c = np.array([*DOPRI5.b, 0.0]), np.array(DOPRI5.c)
    np.testing.assert_allclose(A.sum(axis=1), c, atol=1e-15)
    # the order 5 conditions of the propagated solution on the bushy and tall trees
    # (Hairer, Norsett, Wanner I.2), and order 4 of the embedded one
    for q in range(1, 6):
        assert abs(b @ c ** (q - 1) - 1.0 / q) < 1e-14, q
    assert abs(b @ (A @ c) - 1 / 6) < 1e-14
    assert abs(b @ (A @ (A @ c)) - 1 / 24) < 1e-14
    assert abs(b @ (A @ (A @ (A @ c))) - 1 / 120) < 1e-14
    bhat = b - np.array(DOPRI5.e)
    for q in range(1, 5):
        assert abs(bhat @ c ** (q - 1) - 1.0 / q) < 1e-14, q
    assert abs(sum(DOPRI5.e)) < 1e-15
    assert DOPRI5.order == INTEGRATORS["dopri5"].order == 5


def test_stepper_and_mean_field_solver_read_the_same_coefficients():
    assert np.array_equal(dopri5._A, DOPRI5.a_matrix())
    assert np.array_equal(dopri5._B, DOPRI5.b) and np.array_equal(dopri5._E, DOPRI5.e)
    assert lawson._A is DOPRI5.a and lawson._B is DOPRI5.b and lawson._E is DOPRI5.e
    assert np.array_equal(lawson._C, DOPRI5.c)
