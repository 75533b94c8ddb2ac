"""The mean-field (n -> infinity) limit on the circle.

As the number of tokens grows, the empirical measure of the angles solves the
continuity equation ``d_t rho + d_theta(rho v[rho]) = D d_theta^2 rho`` for a
probability density ``rho`` on ``[0, 2 pi)``.  :mod:`particles.meanfield.linear`
holds the linear theory around the uniform density (growth rates, the
diffusion threshold); :mod:`particles.meanfield.solver` the spectral PDE
solver, :mod:`particles.meanfield.energy` the energy and its dissipation,
:mod:`particles.meanfield.initial` the initial densities,
:mod:`particles.meanfield.wasserstein` exact W1 distances on the circle
(particles against the continuum), :mod:`particles.meanfield.moments` the
trigonometric moments of a density (its order parameter).

Beyond the circle (issue 42): :mod:`particles.meanfield.sphere` solves the PDE on
S^2 with ducc0's spherical-harmonic transforms, :mod:`particles.meanfield.axisymmetric`
densities of the polar angle only on S^{d-1} for any d, both configured by
:class:`~particles.meanfield.sphere_config.SphereFieldConfig` and run by
:func:`~particles.meanfield.sphere_solver.solve_sphere_frames`;
:mod:`particles.meanfield.zonal` holds their linear theory (Funk-Hecke, Gegenbauer);
:mod:`particles.meanfield.sliced` the sliced W1 on S^2 (particles against the continuum);
:mod:`particles.meanfield.sphere_tokens` caps, kernel density estimates and draws of tokens
on S^2 (the two directions between particles and densities there).
"""

from __future__ import annotations

from particles.meanfield.energy import dissipation, energy, free_energy, rho_log_rho
from particles.meanfield.initial import INITS, make_density
from particles.meanfield.linear import (
    MEANFIELD_MODELS,
    critical_diffusion,
    critical_noise,
    fastest_mode,
    growth_rate,
    incoherent_order,
)
from particles.meanfield.moments import density_moment, density_order_parameter
from particles.meanfield.sliced import sliced_w1_density, sliced_w1_samples
from particles.meanfield.solver import (
    MEANFIELD_INTEGRATORS,
    DensityFrame,
    DensityResult,
    MeanFieldConfig,
    SolverState,
    initial_density,
    solve,
    solve_frames,
)
from particles.meanfield.spectral import velocity
from particles.meanfield.sphere_config import SphereFieldConfig
from particles.meanfield.sphere_solver import solve_sphere_frames
from particles.meanfield.sphere_tokens import (
    cap_coefficients,
    density_power,
    kde_coefficients,
    sample_sphere_density,
)
from particles.meanfield.wasserstein import (
    quantile_angles,
    sample_density,
    w1_circle_densities,
    w1_circle_density,
    w1_circle_samples,
)
from particles.meanfield.zonal import critical_diffusion_sphere, growth_rate_sphere

__all__ = [
    "INITS",
    "MEANFIELD_INTEGRATORS",
    "MEANFIELD_MODELS",
    "DensityFrame",
    "DensityResult",
    "MeanFieldConfig",
    "SolverState",
    "SphereFieldConfig",
    "cap_coefficients",
    "critical_diffusion",
    "critical_diffusion_sphere",
    "critical_noise",
    "density_moment",
    "density_order_parameter",
    "density_power",
    "dissipation",
    "energy",
    "fastest_mode",
    "free_energy",
    "growth_rate",
    "growth_rate_sphere",
    "incoherent_order",
    "initial_density",
    "kde_coefficients",
    "make_density",
    "quantile_angles",
    "rho_log_rho",
    "sample_density",
    "sample_sphere_density",
    "sliced_w1_density",
    "sliced_w1_samples",
    "solve",
    "solve_frames",
    "solve_sphere_frames",
    "velocity",
    "w1_circle_densities",
    "w1_circle_density",
    "w1_circle_samples",
]
