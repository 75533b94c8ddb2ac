"""Whether a fixed step is too large for a field's speed bounds (a warning)."""

from __future__ import annotations

import warnings

import numpy as np

from particles.errors import StepSizeWarning

#: a fixed step is too large when ``dt`` times a speed bound exceeds this (rad).
STEP_LIMIT = 0.5

#: when at least this fraction of the tokens exceeds :data:`STEP_LIMIT`, the
#: mean field they all feel is corrupted (an error of up to ~2x this fraction
#: in ``z``): the whole population is at risk, not only the fast tokens.
POPULATION_AT_RISK = 0.02


def check_step_size(rate: float | None, dt: float, integrator: str, *, moving: str = "tokens",
                    hint: str = "", stacklevel: int = 2, rates: np.ndarray | None = None,
                    stages_leave_sphere: bool = False, suggest_adaptive: bool = True) -> None:
    """Warn (:class:`StepSizeWarning`) when a fixed step ``dt`` times the speed
    bound ``rate`` exceeds :data:`STEP_LIMIT` (0.5 rad; None: unknown bound,
    no warning).

    The message says who is at risk:

    * without per-token bounds ``rates`` (SA, USA: one bound for all), every token;
    * with them, the whole population when at least :data:`POPULATION_AT_RISK`
      of the tokens exceed the limit (the mean field every token feels is
      then corrupted), otherwise only the fast tokens (counted);
    * with ``stages_leave_sphere`` (RK4 stages off the circle feeding a mean
      field), the whole population whatever the count: one inflated stage
      vector corrupts the mean field.

    Parameters
    ----------
    rate : float or None
        Bound on every token's speed.
    dt : float
        The fixed step.
    integrator : str
        Its name, for the message.
    moving : str
        What moves (``"tokens"``, ``"phases"``), for the message.
    hint : str
        Appended to "reduce dt" (e.g. another normalisation).
    stacklevel : int
        Of the warning, counted from the caller.
    rates : ndarray, shape (n,), optional
        Per-token speed bounds (Kuramoto: ``|c| + |omega_i|``).
    stages_leave_sphere : bool
        See above.
    suggest_adaptive : bool
        Whether the message suggests ``integrator='dopri5'`` (not for SDEs).
    """
    if rate is None or not dt * rate > STEP_LIMIT:
        return
    if rates is None:
        who = f"all {moving} are at risk: each may move up to ~{dt * rate:.2g} rad per step"
    else:
        rates = np.asarray(rates, dtype=np.float64).ravel()
        fast = int(np.count_nonzero(dt * rates > STEP_LIMIT))
        share = fast / max(1, rates.size)
        counted = (f"{fast} of {rates.size} {moving} ({share:.2%}) move more than "
                   f"{STEP_LIMIT} rad per step (up to ~{dt * rate:.2g})")
        if stages_leave_sphere:
            who = (f"the whole population is at risk: {counted}, and {integrator!r} stage "
                   f"states off the circle corrupt the mean field every one feels")
        elif share >= POPULATION_AT_RISK:
            who = (f"the whole population is at risk: {counted}, enough to corrupt the "
                   f"mean field every one feels")
        else:
            who = (f"only the fast {moving} are at risk: {counted}, too few to corrupt the "
                   f"mean field the others feel")
    warnings.warn(
        f"dt * (speed bound {rate:.3g}) = {dt * rate:.3g} > {STEP_LIMIT}: the fixed step "
        f"{integrator!r} will be inaccurate ({who}); reduce dt{hint}"
        + (" or use integrator='dopri5'" if suggest_adaptive else ""),
        StepSizeWarning,
        stacklevel=stacklevel + 1,
    )

