"""Geometry of and sampling on the unit sphere S^{d-1} ⊂ R^d.

One package, one geometry: :mod:`~particles.sphere.geometry` (NumPy maps),
:mod:`~particles.sphere.rows` (their compiled row twins, used by the
integrators) and :mod:`~particles.sphere.samplers` (samplers and the
initial-condition registry); the names below are re-exported here.

Conventions
-----------
Tokens are the rows of an array of shape ``(..., n, d)``: the last axis is the
ambient coordinate, every leading axis (a batch axis, the token axis) is
broadcast through.  Everything is float64.  Random functions take an explicit
``numpy.random.Generator`` as ``rng`` and never touch the global state.

The geometric maps follow geomstats' ``Hypersphere`` (``projection``,
``to_tangent``, ``exp``, ``log``, ``dist``), but are written so that they stay
accurate to relative precision for tiny geodesic distances and never return
NaN for antipodal or coincident points.

The samplers all share the call signature ``f(n, d, *, rng, batch=None,
**params)`` and return a C-contiguous float64 array of shape ``(n, d)``, or
``(batch, n, d)`` when ``batch`` is given; :data:`SAMPLERS` maps names to them.
:data:`INITIAL_CONDITIONS` is the registry of the configuration's ``init=``
names: each entry carries its sampler, its parameter and the rules on it, and
its constraints on ``n`` and ``d``.
"""

from particles.sphere.geometry import (
    COLLAPSE_TOL,
    angles_to_circle,
    circle_to_angles,
    equispaced_circle,
    exp_map,
    geodesic_distance,
    inner_products,
    log_map,
    normalize,
    tangent_projection,
)
from particles.sphere.samplers import (
    INITIAL_CONDITIONS,
    SAMPLERS,
    InitialCondition,
    orthonormal,
    spherical_cap,
    uniform,
    von_mises_fisher,
)

__all__ = [
    "COLLAPSE_TOL",
    "INITIAL_CONDITIONS",
    "SAMPLERS",
    "InitialCondition",
    "angles_to_circle",
    "circle_to_angles",
    "equispaced_circle",
    "exp_map",
    "geodesic_distance",
    "inner_products",
    "log_map",
    "normalize",
    "orthonormal",
    "spherical_cap",
    "tangent_projection",
    "uniform",
    "von_mises_fisher",
]
