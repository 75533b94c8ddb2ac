"""``sdirk4``: L-stable singly diagonally implicit Runge-Kutta 4(3), for plateaus.

Why an implicit method.  After clusters form, the tokens of one cluster
contract onto each other at a rate of order one while the clusters move on a
time scale ``e^{c beta}``.  An explicit method (dopri5) sits at the stability
limit of that contraction (h ~ 3), holding the tokens 1e-9 to 1e-13 apart, so
the exact collapse of coincident tokens (:mod:`particles.models.collapse`)
never engages and the cost stays linear in the time reached.  This method is
L-stable (stiffly accurate, ``R(inf) = 0``): a step of any size damps the
contracting modes, the tokens of a cluster meet to round-off, the collapse
engages, and the steps grow with the slow motion alone (no cap).

The method: the 5-stage SDIRK of order 4 with an embedded order-3 solution
(Hairer and Wanner, *Solving ODEs II*, IV.6, eq. (6.16); ``gamma = 1/4``), in
:data:`particles.integrators.tableaux.SDIRK4`.  Stage ``s`` solves
``Y_s = Z_s + h gamma f(Y_s)`` with ``Z_s = X + h sum_{r<s} a_sr k_r``.

Jacobian-free Newton-Krylov.  Each Newton correction solves
``(I - h gamma J) D = Z + h gamma f(Y) - Y`` by GMRES (at most :data:`KRYLOV`
vectors), with ``J v`` a forward difference of the field, so every field the
engine runs (SA, USA, masses, every kernel, normalisation and head count,
direct or spectral sums, collapsed or not) is served without a Jacobian
written per field.  The spectrum of ``J`` on a plateau is clustered (the
intra-cluster rates and near-zero slow modes), so GMRES converges in a few
vectors whatever ``n``.  The order does not depend on the Jacobian's accuracy
(the stage equations are solved, not linearised); Newton stops at
``kappa`` of the error tolerance, ``kappa = max(10 eps / rtol, min(0.03,
sqrt(rtol)))`` (Hairer and Wanner's RADAU5 rule) or at the residual's
round-off, whichever is larger, and a Newton iteration that
diverges or does not converge in :data:`NEWTON_ITERATIONS` rejects the step
(it shrinks fivefold).

Norms are those of dopri5: on the sphere the stages act on the projected
field in the ambient space, errors are scaled by ``atol + rtol max(|x|,
|x'|)`` and the accepted step is normalised back to the sphere; in a flat
space (the circle's angles) by ``atol + rtol``.  GMRES works in the inner
product scaled by ``atol + rtol |x|`` (flat: ``atol + rtol``), the norm the
Newton test uses.
"""

from __future__ import annotations

import numpy as np

from particles._numba import jit, kernel_key, specialize
from particles.integrators._rows import copy_rows, space_field
from particles.integrators.tableaux import SDIRK4
from particles.sphere.rows import normalize_rows

ORDER = SDIRK4.order
STRONG_ORDER = None
SPACES = ("sphere", "flat")
#: GMRES vectors per Newton correction (the Krylov basis holds one more).
KRYLOV = 10
#: Newton iterations per stage before the step is rejected.
NEWTON_ITERATIONS = 8
#: GMRES stops when the scaled residual falls below this fraction of its start.
KRYLOV_TOL = 1e-3
#: the stage derivatives (5), Z, Y, f(Y), the residual, the perturbed state and
#: its field, the error scale of X, the Krylov basis and the candidate
STAGES = SDIRK4.stages + 7 + KRYLOV + 1 + 1
#: drift evaluations of a typical plateau step (5 stages, about 2 Newton
#: iterations of 1 residual and 3 Krylov vectors each); the estimates' count
EVALUATIONS = 40

_A = SDIRK4.a_matrix()
_E = np.array(SDIRK4.e)
_GAMMA = SDIRK4.gamma
_NS = SDIRK4.stages
# scratch rows of S
_Z, _Y, _F, _R, _YT, _FT, _SC = range(_NS, _NS + 7)
_V = _NS + 7
_EPS = float(np.finfo(np.float64).eps)
_SQRT_EPS = float(np.sqrt(_EPS))

field = None  # bound by make_attempt / make_solve
solve = None  # bound by make_attempt
attempt = None  # bound by make_step
SPHERE = True  # bound per space


@jit
def _rms(X):
    n, d = X.shape
    s = 0.0
    for i in range(n):
        for a in range(d):
            s += X[i, a] * X[i, a]
    return np.sqrt(s / (n * d))


# C901: a compiled kernel, GMRES written out in one loop nest
def _solve(Y, F, R, D, S, hg, p, ws):  # noqa: C901
    """GMRES for ``(I - hg J(Y)) D = R`` in the inner product scaled by ``S[_SC]``.

    ``F`` holds ``f(Y)``; ``S[_YT]``, ``S[_FT]`` and ``S[_V:_V + KRYLOV + 1]``
    are scratch; ``R`` is left untouched.  Returns the Krylov vectors used.
    """
    n, d = Y.shape
    V = S[_V:_V + KRYLOV + 1]
    Yt, Ft, sc = S[_YT], S[_FT], S[_SC]
    H = np.zeros((KRYLOV + 1, KRYLOV))
    cs = np.zeros(KRYLOV)
    sn = np.zeros(KRYLOV)
    g = np.zeros(KRYLOV + 1)
    beta = 0.0
    for i in range(n):
        for a in range(d):
            v = R[i, a] / sc[i, a]
            V[0, i, a] = v
            beta += v * v
    beta = np.sqrt(beta)
    for i in range(n):
        for a in range(d):
            D[i, a] = 0.0
    if beta == 0.0:
        return 0
    for i in range(n):
        for a in range(d):
            V[0, i, a] /= beta
    g[0] = beta
    ynorm = _rms(Y)
    used = 0
    for j in range(KRYLOV):
        # physical direction u = sc v_j and its difference quotient step
        unorm = 0.0
        for i in range(n):
            for a in range(d):
                u = sc[i, a] * V[j, i, a]
                unorm += u * u
        unorm = np.sqrt(unorm / (n * d))
        eps = _SQRT_EPS * (1.0 + ynorm) / unorm
        for i in range(n):
            for a in range(d):
                Yt[i, a] = Y[i, a] + eps * sc[i, a] * V[j, i, a]
        field(Yt, p, Ft, ws)
        w = V[j + 1]
        c = hg / eps
        for i in range(n):
            for a in range(d):
                w[i, a] = V[j, i, a] - c * (Ft[i, a] - F[i, a]) / sc[i, a]
        # modified Gram-Schmidt
        for k in range(j + 1):
            hk = 0.0
            for i in range(n):
                for a in range(d):
                    hk += w[i, a] * V[k, i, a]
            H[k, j] = hk
            for i in range(n):
                for a in range(d):
                    w[i, a] -= hk * V[k, i, a]
        hn = _rms(w) * np.sqrt(n * d)
        H[j + 1, j] = hn
        if hn > 0.0:
            for i in range(n):
                for a in range(d):
                    w[i, a] /= hn
        # the earlier rotations, then one that zeroes H[j + 1, j]
        for k in range(j):
            t = cs[k] * H[k, j] + sn[k] * H[k + 1, j]
            H[k + 1, j] = -sn[k] * H[k, j] + cs[k] * H[k + 1, j]
            H[k, j] = t
        r = np.sqrt(H[j, j] ** 2 + H[j + 1, j] ** 2)
        cs[j] = H[j, j] / r
        sn[j] = H[j + 1, j] / r
        H[j, j] = r
        H[j + 1, j] = 0.0
        g[j + 1] = -sn[j] * g[j]
        g[j] = cs[j] * g[j]
        used = j + 1
        if abs(g[j + 1]) <= KRYLOV_TOL * beta or hn == 0.0:
            break
    # back substitution, then D = sc sum_k y_k v_k
    y = np.zeros(used)
    for k in range(used - 1, -1, -1):
        s = g[k]
        for m in range(k + 1, used):
            s -= H[k, m] * y[m]
        y[k] = s / H[k, k]
    for i in range(n):
        for a in range(d):
            s = 0.0
            for k in range(used):
                s += y[k] * V[k, i, a]
            D[i, a] = sc[i, a] * s
    return used


def make_solve(drift, space: str = "sphere"):
    """Compile the Newton correction's linear solve for a drift (see :func:`_solve`)."""
    return specialize(_solve, f"{kernel_key(drift)}_{space}", field=space_field(drift, space))


# C901: a compiled kernel, the stages and their Newton iterations in one loop nest
def _attempt(X, t, h, p, ws, S, rtol, atol, key, counter):  # noqa: C901
    n, d = X.shape
    Z, Y, F, R, sc = S[_Z], S[_Y], S[_F], S[_R], S[_SC]
    Xn = S[S.shape[0] - 1]
    hg = h * _GAMMA
    for i in range(n):
        for a in range(d):
            sc[i, a] = atol + rtol * abs(X[i, a]) if SPHERE else atol + rtol
    kappa = max(10.0 * _EPS / rtol, min(0.03, np.sqrt(rtol)))
    for s in range(_NS):
        for i in range(n):
            for a in range(d):
                acc = 0.0
                for r in range(s):
                    acc += _A[s, r] * S[r, i, a]
                Z[i, a] = X[i, a] + h * acc
                # predictor: the previous stage's slope (the first stage starts at X)
                Y[i, a] = X[i, a] if s == 0 else Z[i, a] + hg * S[s - 1, i, a]
        converged = False
        before = 0.0
        for it in range(NEWTON_ITERATIONS):
            field(Y, p, F, ws)
            floor = 0.0
            for i in range(n):
                for a in range(d):
                    R[i, a] = Z[i, a] + hg * F[i, a] - Y[i, a]
                    q = (abs(Z[i, a]) + abs(hg * F[i, a]) + abs(Y[i, a])) / sc[i, a]
                    floor += q * q
            # the residual's round-off: no correction is measured below it
            floor = 10.0 * _EPS * np.sqrt(floor / (n * d))
            solve(Y, F, R, Xn, S, hg, p, ws)
            size = 0.0
            for i in range(n):
                for a in range(d):
                    Y[i, a] += Xn[i, a]
                    q = Xn[i, a] / sc[i, a]
                    size += q * q
            size = np.sqrt(size / (n * d))
            if not size < np.inf:
                break
            if size <= max(kappa, floor):
                converged = True
                break
            if it > 0:
                rate = size / before
                if rate >= 1.0:
                    break  # diverging
                if rate / (1.0 - rate) * size <= kappa:
                    converged = True
                    break
            before = size
        if not converged:
            for i in range(n):
                for a in range(d):
                    Xn[i, a] = np.nan  # no candidate (a fixed step shows it)
            return np.inf
        for i in range(n):
            for a in range(d):
                S[s, i, a] = (Y[i, a] - Z[i, a]) / hg
    # stiffly accurate: the last stage is the solution
    tot = 0.0
    for i in range(n):
        for a in range(d):
            e = 0.0
            for r in range(_NS):
                e += _E[r] * S[r, i, a]
            Xn[i, a] = Y[i, a]
            # dopri5's error scale: the larger of the two sizes
            big = atol + rtol * max(abs(X[i, a]), abs(Y[i, a])) if SPHERE else atol + rtol
            q = h * e / big
            tot += q * q
    if SPHERE:
        normalize_rows(Xn)
    return np.sqrt(tot / (n * d))


def make_attempt(drift, space: str = "sphere"):
    """Compile ``attempt(X, t, h, p, ws, S, rtol, atol, key, counter) -> err``.

    X (n, d) is left untouched; the candidate (normalised on the sphere) is
    written to ``S[STAGES - 1]``; S has shape (STAGES, n, d).  ``err <= 1``
    means accept; ``inf`` when a stage's Newton iteration failed.
    """
    return specialize(_attempt, f"{kernel_key(drift)}_{space}",
                      field=space_field(drift, space), solve=make_solve(drift, space),
                      SPHERE=space == "sphere")


@jit
def _nothing(X, t, p, ws, S):
    pass


def make_start(drift, space: str = "sphere"):
    """``start(X, t, p, ws, S)``: nothing to prepare (no stage is reused)."""
    return _nothing


@jit
def _take(X, S):
    copy_rows(S[S.shape[0] - 1], X)


def make_accept(space: str = "sphere"):
    """``accept(X, S)``: take the candidate ``S[STAGES - 1]`` as the new X."""
    return _take


#: the tolerances of a fixed step (order tests): Newton converged far below
#: the truncation error of any step worth measuring.
FIXED_TOL = 1e-12


def _step(X, t, h, p, ws, S, key, counter):
    attempt(X, t, h, p, ws, S, FIXED_TOL, FIXED_TOL, key, counter)
    copy_rows(S[S.shape[0] - 1], X)


def make_step(drift, space: str = "sphere"):
    """Fixed-step SDIRK4 step ``step(X, t, h, p, ws, S, key, counter)`` (for order
    tests; Newton to :data:`FIXED_TOL`)."""
    return specialize(_step, f"{kernel_key(drift)}_{space}", cache=True,
                      attempt=make_attempt(drift, space))
