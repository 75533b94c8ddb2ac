"""``dopri5``: adaptive Dormand-Prince 5(4) pair.

Each attempt evaluates the seven stages of DOPRI5, estimates the local error
from the embedded 4th-order solution and writes the candidate to ``S[8]``.
The step-size controller is the standard one (Hairer, Norsett, Wanner,
*Solving ODEs I*, II.4; :func:`particles.integrators.driver.step_factor`):
``h <- h min(5, max(0.2, 0.9 err^{-1/5}))``.

* On the sphere the stages act on the projected field in the ambient space
  (the projected field keeps the sphere invariant), ``err`` is the RMS of
  ``e / (atol + rtol max(|x|, |x'|))`` and an accepted step is normalised back
  to the sphere.  No FSAL reuse: the normalisation moves the accepted point,
  so the first stage is recomputed.
* In a flat space (the angle form on the circle) the stages act on the drift
  itself, the error of every coordinate is measured against ``atol + rtol``
  (radians on the unit circle, not ``|theta|``, which grows without bound in
  the continuous lift), and the last stage of an accepted step is the first
  of the next (FSAL).
"""

from __future__ import annotations

import numpy as np

from particles._numba import kernel_key, specialize
from particles.integrators._rows import copy_rows, space_field
from particles.integrators.tableaux import DOPRI5
from particles.sphere.rows import normalize_rows

ORDER = DOPRI5.order
STRONG_ORDER = None
SPACES = ("sphere", "flat")
STAGES = 9
#: drift evaluations of one step
EVALUATIONS = 7

# the public tableau as arrays (Numba freezes module-level arrays into the kernels)
_A = DOPRI5.a_matrix()
_B = np.array(DOPRI5.b)
_E = np.array(DOPRI5.e)  # b - bhat of the seven stages (the 7th: f at the new solution)


field = None  # bound by make_attempt / make_start
attempt = None  # bound by make_step
start = None  # bound by make_step
SPHERE = True  # bound per space


# C901: a compiled kernel, one loop nest kept whole so that its bits and speed stay as measured
def _attempt(X, t, h, p, ws, S, rtol, atol, key, counter):  # noqa: C901
    n, d = X.shape
    Xt = S[7]
    Xn = S[8]
    if SPHERE:
        field(X, p, S[0], ws)
    # flat: S[0] holds f(X) already (``start``, then first same as last)
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
    if SPHERE:
        for i in range(n):
            for a in range(d):
                e = 0.0
                for r in range(7):
                    e += _E[r] * S[r, i, a]
                sc = atol + rtol * max(abs(X[i, a]), abs(Xn[i, a]))
                q = h * e / sc
                tot += q * q
        normalize_rows(Xn)
    else:
        sc = atol + rtol
        for i in range(n):
            for a in range(d):
                e = 0.0
                for r in range(7):
                    e += _E[r] * S[r, i, a]
                q = h * e / sc
                tot += q * q
    return np.sqrt(tot / (n * d))


def make_attempt(drift, space: str = "sphere"):
    """Compile ``attempt(X, t, h, p, ws, S, rtol, atol, key, counter) -> err``.

    X (n, d) is left untouched; the candidate (normalised on the sphere) is
    written to ``S[8]``; S has shape (9, n, d).  ``err <= 1`` means accept.
    In a flat space ``S[0]`` must hold the field at X (see :func:`make_start`
    and :func:`make_accept`).
    """
    return specialize(_attempt, f"{kernel_key(drift)}_{space}",
                      field=space_field(drift, space), SPHERE=space == "sphere")


def _start(X, t, p, ws, S):
    if not SPHERE:
        field(X, p, S[0], ws)


def make_start(drift, space: str = "sphere"):
    """Compile ``start(X, t, p, ws, S)``, called before the first attempt from X:
    in a flat space it evaluates the first stage (reused across steps by FSAL);
    on the sphere it does nothing."""
    return specialize(_start, f"{kernel_key(drift)}_{space}",
                      field=space_field(drift, space), SPHERE=space == "sphere")


def _accept(X, S):
    copy_rows(S[8], X)
    if not SPHERE:
        copy_rows(S[6], S[0])  # first same as last


def make_accept(space: str = "sphere"):
    """Compile ``accept(X, S)``: take the candidate ``S[8]`` as the new X (and in a
    flat space keep its field as the next first stage)."""
    return specialize(_accept, space, SPHERE=space == "sphere")


def _step(X, t, h, p, ws, S, key, counter):
    start(X, t, p, ws, S)
    attempt(X, t, h, p, ws, S, 1.0, 1.0, key, counter)
    copy_rows(S[8], X)


def make_step(drift, space: str = "sphere"):
    """Fixed-step 5th-order DOPRI5 step ``step(X, t, h, p, ws, S, key, counter)``
    (for order tests)."""
    return specialize(_step, f"{kernel_key(drift)}_{space}", cache=True,
                      attempt=make_attempt(drift, space), start=make_start(drift, space))
