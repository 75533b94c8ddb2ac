"""``dopri5``: adaptive Dormand-Prince 5(4) pair on the projected field.

Each attempt evaluates the seven stages of DOPRI5 in the ambient space (the
projected field keeps the sphere invariant), estimates the local error from
the embedded 4th-order solution, and an accepted step is normalised back to
the sphere.  The step-size controller is the standard one (Hairer, Norsett,
Wanner, *Solving ODEs I*, II.4): ``h <- h min(5, max(0.2, 0.9 err^{-1/5}))``
with ``err`` the RMS of ``e / (atol + rtol max(|x|, |x'|))``.  No FSAL reuse:
the normalisation moves the accepted point, so the last stage is recomputed.
"""

from __future__ import annotations

import numpy as np

from particles._numba import kernel_key, specialize
from particles.integrators._rows import copy_rows, normalize_rows, tangent_field

ORDER = 5
STAGES = 9

# Butcher tableau (Dormand & Prince 1980), also used by particles.circle.
_A = np.array([
    [0, 0, 0, 0, 0, 0],
    [1 / 5, 0, 0, 0, 0, 0],
    [3 / 40, 9 / 40, 0, 0, 0, 0],
    [44 / 45, -56 / 15, 32 / 9, 0, 0, 0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0],
])
_B = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])
# b - bhat for the seven stages (the 7th is f at the 5th-order solution).
_E = np.array([71 / 57600, 0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40])


field = None  # bound by make_attempt
attempt = None  # bound by make_step


def _attempt(X, h, p, ws, S, rtol, atol):
    n, d = X.shape
    Xt = S[7]
    Xn = S[8]
    field(X, p, S[0], ws)
    for s in range(1, 6):
        for i in range(n):
            for a in range(d):
                acc = 0.0
                for r in range(s):
                    acc += _A[s, r] * S[r, i, a]
                Xt[i, a] = X[i, a] + h * acc
        field(Xt, p, S[s], ws)
    for i in range(n):
        for a in range(d):
            acc = 0.0
            for r in range(6):
                acc += _B[r] * S[r, i, a]
            Xn[i, a] = X[i, a] + h * acc
    field(Xn, p, S[6], ws)
    tot = 0.0
    for i in range(n):
        for a in range(d):
            e = 0.0
            for r in range(7):
                e += _E[r] * S[r, i, a]
            sc = atol + rtol * max(abs(X[i, a]), abs(Xn[i, a]))
            q = h * e / sc
            tot += q * q
    normalize_rows(Xn)
    return np.sqrt(tot / (n * d))


def make_attempt(drift):
    """Compile ``attempt(X, h, p, ws, S, rtol, atol) -> err``.

    X (n, d) is left untouched; the normalised candidate is written to
    ``S[8]``; S has shape (9, n, d).  ``err <= 1`` means accept.
    """
    return specialize(_attempt, kernel_key(drift), field=tangent_field(drift))


def _step(X, h, p, ws, S):
    attempt(X, h, p, ws, S, 1.0, 1.0)
    copy_rows(S[8], X)


def make_step(drift):
    """Fixed-step 5th-order DOPRI5 step ``step(X, h, p, ws, S)`` (for order tests)."""
    return specialize(_step, kernel_key(drift), attempt=make_attempt(drift))
