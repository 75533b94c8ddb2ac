"""The energy of a zonal kernel through the spectral series: O(n K), not O(n^2).

For runs the spectral summation serves (:func:`particles.fields.spectral.refusal`),
``sum_ij m_i m_j kappa(Q x_i, K x_j) = g e^b F`` with ``F`` the pair sum of
the profile (:func:`particles.fields.spectral.pair_sum`), so ``energy`` and
``energy_normalized`` have the meaning of :class:`EnergyDefinition` (the
``pairwise`` observer's) without a pass over pairs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from particles.errors import invalid
from particles.fields import spectral
from particles.fields.kernels import KERNELS
from particles.fields.weights import draw_layer
from particles.observables.base import Context
from particles.observables.energy import energy_definition, energy_scale, energy_value
from particles.protocols import RunSpec


def check(spec: RunSpec) -> None:
    """Refuse ``spectral_energy`` for a run the series does not serve, or at
    ``beta = 0`` (field ``observables``)."""
    why = spectral.refusal(spec) or ("beta = 0 (the energy is another limit there)"
                                     if spec.beta == 0 else None)
    if why is not None:
        raise invalid("observables", "observers without 'spectral_energy' for this run, "
                      f"since the spectral series {why}", ",".join(spec.observables))


def setup(spec: RunSpec) -> dict[str, Any]:
    """``spectral_energy``: the profile ``(b, log g)``, the definition's ``L`` and ``c``.

    Raises
    ------
    ValueError
        The run is not one the spectral summation serves, or ``beta = 0``
        (the energy is then a limit of another form).
    """
    why = spectral.refusal(spec)
    if why is not None or spec.beta == 0:
        raise ValueError("observables 'spectral_energy' needs a run the spectral summation "
                         f"serves, with beta > 0 ({why or 'beta = 0'})")
    Q, K, _ = draw_layer(spec, 0)
    b, log_g = spectral.profile(spec, Q[0], K[0])
    definition = energy_definition(spec)
    if definition.default:
        L, c = float(spec.beta), float(spec.beta)
    else:
        L = definition.log_bound
        c = energy_scale(KERNELS[definition.kernel], definition.param)
    return {"spectral_energy": (b, log_g, L, c, float(spec.tol))}


def compute(X: np.ndarray, ctx: Context) -> dict[str, np.ndarray]:
    """``energy`` and ``energy_normalized`` (batch,) of positions X (batch, n, d)."""
    b, log_g, L, c, tol = ctx.settings["spectral_energy"]
    m = np.ascontiguousarray(ctx.masses, dtype=np.float64)
    N = float(m.sum())
    norm = np.array([math.exp(log_g + b - L) * spectral.pair_sum(x, m, b, tol) / (N * N)
                     for x in np.asarray(X, dtype=np.float64)])
    energy = np.array([energy_value(v, 0.0, c, None, L) for v in norm])  # beta > 0: c > 0
    return {"energy": energy, "energy_normalized": norm}
