"""Kuramoto oscillators on the circle, embedded in R^2 (``model="kuramoto"``).

With ``x_i = (cos theta_i, sin theta_i)`` and natural frequencies ``omega_i``,

    dtheta_i/dt = omega_i + (c/N) sum_j m_j sin(theta_j - theta_i)

(Kuramoto, *Chemical Oscillations, Waves, and Turbulence*, 1984; ``N = sum_j
m_j``, masses 1 by default).  The drift written here is the ambient vector

    y_i = omega_i J x_i + c z,    z = (1/N) sum_j m_j x_j,

with ``J`` the rotation by +90 degrees.  Its tangent projection is exactly the
Kuramoto velocity: ``P_{x_i} J x_i = J x_i = e_theta_i`` and
``P_{x_i} x_j = sin(theta_j - theta_i) e_theta_i``.  The sine coupling
collapses to the order parameter ``z = r e^{i psi}``, so one evaluation costs
O(n) (two passes over the rows), not O(n^2).

At ``beta = 0``, ``omega = 0`` and ``c = 1`` the drift is the SA and USA drift
(both reduce to ``z``): the three models give the same trajectories.

The natural frequencies come from the configuration
(:func:`natural_frequencies`): explicit, or drawn from a named distribution
with the run's seed, so a trajectory file (which records the seed) reproduces
them.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from particles._numba import jit, prange, specialize
from particles.fields.base import CompiledField
from particles.fields.frequencies import OMEGA_DISTRIBUTIONS, freeze_omega, parse_omega
from particles.protocols import RunSpec
from particles.seeds import frequencies_rng

#: position of each named entry of the Kuramoto drift's parameter tuple, for
#: Python readers (the compiled drifts read it by position).
KURAMOTO_SLOTS = {name: i for i, name in enumerate(("omega", "masses", "coupling", "inv_mass"))}
#: rows per block of the order-parameter sum.  The blocks are fixed by n (not
#: by the thread count), so serial and parallel kernels, and runs on any number
#: of threads, add the same partial sums in the same order.
BLOCK = 4096


def _own_draws(config: RunSpec) -> bool:
    """Whether each system of the configuration draws its own frequencies."""
    return config.weight_draws == "independent" and isinstance(config.omega, str)


def natural_frequencies(config: RunSpec, system: int = 0) -> np.ndarray:
    """Natural frequencies ``omega_i`` of a configuration.

    Parameters
    ----------
    config : RunSpec
        A ``model="kuramoto"`` configuration (any model gives zeros when
        ``config.omega`` is None).  A named distribution needs a concrete
        ``config.seed`` (see :meth:`RunSpec.resolved`).
    system : int
        The system of a batch whose systems draw their own frequencies
        (``weight_draws="independent"``); ignored when they share them.

    Returns
    -------
    omega : ndarray, shape (n,)
        See :func:`resolve_frequencies`; deterministic in the configuration,
        so rerunning or reloading a run (files record the seed) gives the
        same frequencies.
    """
    return resolve_frequencies(config.omega, config.n, seed=config.seed,
                               system=system if _own_draws(config) else None)


def system_frequencies(config: RunSpec) -> np.ndarray:
    """Natural frequencies of every system of the configuration's batch.

    Returns
    -------
    omega : ndarray, shape (batch, n) or (1, n)
        With ``weight_draws="independent"`` and a named distribution, row
        ``b`` holds system ``b``'s own frequencies (``batch`` is 1 for a
        single system); otherwise the one shared row.
    """
    if _own_draws(config):
        return np.stack([natural_frequencies(config, b) for b in range(config.batch or 1)])
    return natural_frequencies(config)[None, :]


def resolve_frequencies(omega: str | ArrayLike | None, n: int, *,
                        seed: int | None = None, system: int | None = None) -> np.ndarray:
    """Natural frequencies from an ``omega`` argument.

    Parameters
    ----------
    omega : None, str or array_like, shape (n,)
        None (all zero), a distribution ``"NAME:WIDTH[:CENTER]"`` (see
        :data:`particles.fields.frequencies.OMEGA_DISTRIBUTIONS`) or ``n`` numbers.
    n : int
        Number of oscillators.
    seed : int, optional
        Root seed of the run; required for a named distribution.
    system : int, optional
        For a named distribution: draw the frequencies of system ``system``
        of an ensemble whose systems draw their own (None: the frequencies
        shared by all systems).

    Returns
    -------
    omega : ndarray, shape (n,)
        Zeros, the given numbers, or ``n`` independent draws.

    Notes
    -----
    Draws use ``numpy.random.default_rng`` seeded by the first child spawned
    from the *weights* child of the root seed
    (spawn key ``(1, 0)``, see :mod:`particles.seeds`): independent
    of the initial positions (the init child) and of noise, and leaving the
    weights child itself free for other random weights.  The embedded
    (``simulate(model="kuramoto")``) and angle
    (:func:`particles.circle.simulate_angles`) forms draw the same
    frequencies for the same seed.  System ``b``'s own frequencies come from
    the grandchild with ``spawn_key=(1, 0, b)``.
    """
    frozen = freeze_omega(omega, n)
    if frozen is None:
        return np.zeros(n)
    if not isinstance(frozen, str):
        return np.array(frozen, dtype=np.float64)
    if seed is None:
        raise ValueError(f"seed must be given (resolved) to draw natural frequencies "
                         f"omega={frozen!r}")
    name, width, center = parse_omega(frozen)
    rng = frequencies_rng(seed, system)
    return center + width * OMEGA_DISTRIBUTIONS[name].draw(rng, n)


def quantile_frequencies(spec: str, n: int, *, cutoff: float | None = None) -> np.ndarray:
    """Deterministic, evenly spread frequencies: the midpoint quantiles of a distribution.

    ``omega_j = G^{-1}((j - 1/2) / n)``, j = 1..n, with ``G`` the distribution
    function of ``spec``, conditioned on ``|omega - CENTER| <= cutoff`` when a
    cutoff is given.  Finite populations with these frequencies follow the
    infinite-n theory much more closely than random draws (no sampling noise
    in the density near the center), which makes synchronization tests sharp;
    the cutoff removes the Lorentzian's extreme quantiles (``~ n W``), which
    would force tiny fixed steps.  Pass the result as ``omega=``.

    Parameters
    ----------
    spec : str
        ``"NAME:WIDTH"`` or ``"NAME:WIDTH:CENTER"`` (see
        :data:`particles.fields.frequencies.OMEGA_DISTRIBUTIONS`).
    n : int
        Number of oscillators, >= 1.
    cutoff : float, optional
        Keep only ``|omega - CENTER| <= cutoff`` (> 0): the quantiles of the
        truncated distribution, whose density is ``g / G(|w - C| <= cutoff)``.

    Returns
    -------
    omega : ndarray, shape (n,)
        Increasing frequencies, symmetric about CENTER.
    """
    name, width, center = parse_omega(spec)
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if cutoff is not None and not (math.isfinite(cutoff) and cutoff > 0):
        raise ValueError(f"cutoff must be a finite number > 0, got {cutoff!r}")
    u = (np.arange(n) + 0.5) / n  # in (0, 1)
    if width == 0.0:
        return np.full(n, center)
    c = math.inf if cutoff is None else cutoff / width  # cutoff in units of the width
    return center + width * OMEGA_DISTRIBUTIONS[name].quantile(u, c)


def kuramoto_reference(X: np.ndarray, omega: np.ndarray, *, coupling: float = 1.0,
                       masses: np.ndarray | None = None) -> np.ndarray:
    """Plain NumPy Kuramoto drift, the oracle for the compiled kernels.

    Parameters
    ----------
    X : ndarray, shape (n, 2)
        Oscillators on the circle.
    omega : ndarray, shape (n,)
        Natural frequencies.
    coupling : float
        Coupling strength ``c``.
    masses : ndarray, shape (n,), optional
        Weights ``m_j`` (ones when None).

    Returns
    -------
    Y : ndarray, shape (n, 2)
        ``y_i = omega_i J x_i + c sum_j m_j x_j / sum_j m_j``.
    """
    X = np.asarray(X, dtype=np.float64)
    m = np.ones(X.shape[0]) if masses is None else np.asarray(masses, dtype=np.float64)
    z = (m @ X) / m.sum()
    JX = np.stack((-X[:, 1], X[:, 0]), axis=1)
    return np.asarray(omega, dtype=np.float64)[:, None] * JX + coupling * z[None, :]


@jit
def block_total(part, nblocks, scale):
    """``scale`` times the sum of per-block partial sums ``part[2b], part[2b+1]``,
    added in block order (fixed by n, so serial and parallel kernels agree
    bit for bit).  Returns the two components."""
    z0 = 0.0
    z1 = 0.0
    for b in range(nblocks):
        z0 += part[2 * b]
        z1 += part[2 * b + 1]
    return z0 * scale, z1 * scale


def _kuramoto_drift(X, p, out, ws):
    """Embedded Kuramoto drift of one system X (n, 2) into out (n, 2).

    ``ws`` holds ``2 * ceil(n / BLOCK)`` floats: the per-block weighted sums.
    """
    omega, m, coupling, inv_mass = p
    n = X.shape[0]
    nblocks = (n + BLOCK - 1) // BLOCK
    for b in prange(nblocks):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        s0 = 0.0
        s1 = 0.0
        for i in range(lo, hi):
            s0 += m[i] * X[i, 0]
            s1 += m[i] * X[i, 1]
        ws[2 * b] = s0
        ws[2 * b + 1] = s1
    z0, z1 = block_total(ws, nblocks, coupling * inv_mass)
    for b in prange(nblocks):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        for i in range(lo, hi):
            w = omega[i]
            out[i, 0] = z0 - w * X[i, 1]
            out[i, 1] = z1 + w * X[i, 0]


kuramoto_serial = specialize(_kuramoto_drift, "serial", cache=True)
kuramoto_parallel = specialize(_kuramoto_drift, "parallel", parallel=True, cache=True)


def workspace_size(n: int) -> int:
    """Scratch length of the Kuramoto kernels (independent of the thread count)."""
    return 2 * ((n + BLOCK - 1) // BLOCK)


def speed_bound(config: RunSpec) -> float:
    """Upper bound ``|c| + max_i |omega_i|`` on the oscillators' angular speeds
    (over every system of a batch)."""
    return _speed(config.coupling, system_frequencies(config))


def _speed(coupling: float, omega: np.ndarray) -> float:
    return abs(coupling) + (float(np.abs(omega).max()) if omega.size else 0.0)


def build(config: RunSpec) -> CompiledField:
    """The compiled Kuramoto field of a validated ``model="kuramoto"`` configuration.

    Parameters
    ----------
    config : RunSpec
        ``d = 2``; a named ``omega`` distribution needs a concrete seed.

    Returns
    -------
    CompiledField
        Drift ``y_i = omega_i J x_i + c z`` (see the module docstring).
    """
    if config.d != 2:
        raise ValueError(f"d must be 2 for model='kuramoto', got {config.d}")
    n = config.n
    omegas = np.ascontiguousarray(system_frequencies(config))
    independent = _own_draws(config)
    omega = omegas[0]
    masses = np.ascontiguousarray(config.mass_array())
    coupling = float(config.coupling)
    params = (omegas if independent else omega, masses, coupling, 1.0 / float(masses.sum()))

    def reference(X: np.ndarray) -> np.ndarray:
        # the first system's field (every system's with shared frequencies)
        return kuramoto_reference(X, omega, coupling=coupling, masses=masses)

    return CompiledField(
        serial=kuramoto_serial,
        parallel=kuramoto_parallel,
        params=params,
        workspace=lambda nchunks: workspace_size(n),
        reference=reference,
        name="kuramoto",
        pairwise=False,
        speed=_speed(coupling, omegas),
        select=select_omega if independent else None,
        rates=abs(coupling) + np.abs(omegas).max(axis=0),
    )


@jit
def select_omega(p, b):
    """Parameters of system ``b`` when the frequencies (first entry) carry a
    leading batch axis."""
    return (p[0][b], *p[1:])
