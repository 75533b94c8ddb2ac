"""The mean-field (n -> infinity) limit on the circle.

As the number of tokens grows, the empirical measure of the angles solves the
continuity equation ``d_t rho + d_theta(rho v[rho]) = D d_theta^2 rho`` for a
probability density ``rho`` on ``[0, 2 pi)``.  :mod:`particles.meanfield.linear`
holds the linear theory around the uniform density (growth rates, the
diffusion threshold); the PDE solver builds on it.
"""

from __future__ import annotations

from particles.meanfield.linear import (
    MEANFIELD_MODELS,
    critical_diffusion,
    critical_noise,
    fastest_mode,
    growth_rate,
)

__all__ = [
    "MEANFIELD_MODELS",
    "critical_diffusion",
    "critical_noise",
    "fastest_mode",
    "growth_rate",
]
