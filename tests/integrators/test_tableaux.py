"""The public Butcher tableaux: order conditions, and one set of coefficients for
the particles' stepper and the mean-field solver."""

from __future__ import annotations

import numpy as np

from particles.integrators import INTEGRATORS, dopri5
from particles.integrators.tableaux import DOPRI5, SDIRK4
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


def _conditions_of_order_4(A, b, c):
    """The eight order conditions of the trees with at most four nodes."""
    return np.array([b.sum() - 1, b @ c - 1 / 2, b @ c**2 - 1 / 3, b @ (A @ c) - 1 / 6,
                     b @ c**3 - 1 / 4, b @ (c * (A @ c)) - 1 / 8, b @ (A @ c**2) - 1 / 12,
                     b @ (A @ (A @ c)) - 1 / 24])


def _stability(A, b, z):
    """R(z) = 1 + z b^T (I - z A)^{-1} 1 of a Runge-Kutta method."""
    s = len(b)
    return 1 + z * b @ np.linalg.solve(np.eye(s) - z * A, np.ones(s))


def test_sdirk4_is_order_4_l_stable_with_an_order_3_estimate():
    A, b, c = SDIRK4.a_matrix(), np.array(SDIRK4.b), np.array(SDIRK4.c)
    assert np.allclose(np.diag(A), SDIRK4.gamma) and np.allclose(np.triu(A, 1), 0)
    assert np.abs(_conditions_of_order_4(A, b, c)).max() < 1e-13
    bhat = b - np.array(SDIRK4.e)
    cond = _conditions_of_order_4(A, bhat, c)
    assert np.abs(cond[:4]).max() < 1e-13 and np.abs(cond[4:]).min() > 1e-3  # exactly 3
    # A-stable on the imaginary axis and the left half plane; R(-inf) = 0 (stiffly
    # accurate: the last row of A is b)
    assert max(abs(_stability(A, b, 1j * y)) for y in np.geomspace(1e-3, 1e6, 200)) <= 1 + 1e-12
    rng = np.random.default_rng(0)
    z = -rng.exponential(10, 300) + 1j * rng.normal(0, 30, 300)
    assert max(abs(_stability(A, b, w)) for w in z) < 1
    assert abs(_stability(A, b, -1e12)) < 1e-10
    assert SDIRK4.order == INTEGRATORS["sdirk4"].order == 4
