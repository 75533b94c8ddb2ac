"""Initial conditions read from files, between particles and the mean field.

The two directions of a like-with-like comparison of a particle run and a
mean-field solve on the circle:

* :func:`initial_tokens`: a run's initial tokens (their one home: sessions,
  probes, benchmarks and tests take them here), with ``init="density:FILE"``
  drawn from the initial density (frame 0) of a mean-field density file:
  ``n`` i.i.d. angles per system by the exact inverse distribution function
  (:func:`particles.meanfield.sample_density`), or on S^2 (``d = 3``, a file
  of ``particles meanfield --d 3``) i.i.d. tokens by exact rejection
  (:func:`particles.meanfield.sphere_tokens.sample_sphere_density`), from the
  run's own seed (:func:`particles.seeds.init_rng`), so the file's
  configuration (``init`` and ``seed``) draws them again; given ``x0`` and
  every other ``init`` as the engine draws them
  (``particles.engine.initial_positions``).
* :func:`particles_density`: a mean-field initial density from the tokens of
  a circle run's first frame (``init="particles:file=PATH"``), a kernel
  density estimate (:func:`particles.meanfield.kde.kde_density`; an ensemble
  pooled), with the bandwidth it used written into the spec;
  :func:`sphere_particles_density` the same on S^2 (a run of ``d = 3``,
  :func:`particles.meanfield.sphere_tokens.kde_coefficients`).

They live with the sessions because they read files (:mod:`particles.io`),
which the engine and the solver below do not.
"""

from __future__ import annotations

import numpy as np

from particles.config import SimulationConfig, parse_init
from particles.engine import initial_positions
from particles.errors import TrajectoryFileError
from particles.io.density import load_density
from particles.io.h5md import read_first_frame
from particles.meanfield import sample_density
from particles.meanfield.initial import parse_init as parse_density_init
from particles.meanfield.kde import default_bandwidth, kde_density
from particles.meanfield.sphere_config import SphereFieldConfig, parse_sphere_init
from particles.meanfield.sphere_solver import make_space
from particles.meanfield.sphere_tokens import default_bandwidth as sphere_bandwidth
from particles.meanfield.sphere_tokens import kde_coefficients, sample_sphere_density
from particles.seeds import init_rng
from particles.sphere import INITIAL_CONDITIONS

__all__ = ["density_tokens", "initial_tokens", "particles_density", "particles_spec",
           "sphere_particles_density"]


def density_tokens(config: SimulationConfig) -> np.ndarray:
    """The initial tokens of an ``init="density:FILE"`` run.

    Parameters
    ----------
    config : SimulationConfig
        Resolved (a concrete seed), ``d = 2`` (a circle's density file) or ``d = 3``
        (a density file on S^2).

    Returns
    -------
    ndarray, shape (batch, n, d)
        ``(cos theta, sin theta)`` of ``batch * n`` angles drawn i.i.d. from
        the file's frame-0 density, or ``batch * n`` tokens on S^2 (system ``b``
        holds draws ``b n .. (b+1) n - 1``).

    Raises
    ------
    ValueError
        (one line, starting with ``init=``) The file is missing, not a
        density file, or of another space than the run's ``d``; the seed is
        not resolved.
    """
    name, path = parse_init(config.init)
    if name != "density":
        raise ValueError(f"init={config.init!r} is not drawn from a density file")
    if config.seed is None:
        raise ValueError("seed must be resolved before drawing positions (config.resolved())")
    try:
        stored = load_density(path)
    except TrajectoryFileError as exc:
        raise ValueError(f"init={config.init!r} cannot be read: {exc}") from None
    sphere = isinstance(stored.config, SphereFieldConfig)
    where = (f"S^{stored.config.d - 1}" + (" (axisymmetric)" if stored.config.axisymmetric
                                           else "")) if sphere else "the circle"
    if (config.d == 3) != sphere or (sphere and stored.config.axisymmetric):
        raise ValueError(f"init={config.init!r} holds a density on {where}: draws need "
                         f"d = 2 for the circle's, d = 3 for S^2's, got d={config.d}")
    B, n = config.batch or 1, config.n
    if sphere:
        try:
            x = sample_sphere_density(stored.rho[0], stored.config.lmax, B * n,
                                      init_rng(config.seed))
        except ValueError as exc:
            raise ValueError(f"init={config.init!r}: {exc}") from None
        return np.ascontiguousarray(x.reshape(B, n, 3))
    angles = sample_density(stored.rho[0], B * n, init_rng(config.seed)).reshape(B, n)
    return np.ascontiguousarray(np.stack([np.cos(angles), np.sin(angles)], axis=-1))


def initial_tokens(config: SimulationConfig, x0: np.ndarray | None = None) -> np.ndarray:
    """The initial tokens of a run: ``x0``, else drawn by its ``init`` (a file's
    density, :func:`density_tokens`, or the registry's sampler from its seed).

    Parameters
    ----------
    config : SimulationConfig
        Resolved configuration (concrete seed when ``x0`` is None).
    x0 : ndarray, shape (n, d) or (batch, n, d), optional
        Given positions; rows are normalised onto the sphere.  A single
        (n, d) configuration is repeated over the batch.

    Returns
    -------
    ndarray, shape (batch, n, d)
        C-contiguous float64 (batch is 1 for a single system).

    Raises
    ------
    ValueError
        ``x0`` of the wrong shape or with rows off the sphere's reach, an
        unresolved seed, an unreadable density file.
    """
    if x0 is None and INITIAL_CONDITIONS[parse_init(config.init)[0]].text:
        x0 = density_tokens(config)
    return initial_positions(config, x0)


def particles_spec(spec: str, M: int, *, sphere: bool = False) -> str:
    """``"particles:file=PATH[,bandwidth=H]"`` with the bandwidth a solve of ``M``
    grid points uses written out (``H = 0`` or none: two grid cells), so that the
    stored configuration says it and the original command resumes; with ``sphere``,
    ``M`` is the solve's ``lmax`` (default ``2 pi / lmax``)."""
    params = (parse_sphere_init(spec, M, False) if sphere else parse_density_init(spec))[1]
    h = params["bandwidth"] or (sphere_bandwidth(M) if sphere else default_bandwidth(M))
    return f"particles:file={params['file']},bandwidth={h!r}"


def particles_density(spec: str, M: int) -> tuple[np.ndarray, str]:
    """A mean-field initial density from a trajectory file's first frame.

    Parameters
    ----------
    spec : str
        ``"particles:file=PATH[,bandwidth=H]"`` (a
        :class:`~particles.meanfield.MeanFieldConfig` ``init``); ``H = 0`` or
        none: :func:`~particles.meanfield.kde.default_bandwidth`.
    M : int
        Grid points of the solve.

    Returns
    -------
    rho : ndarray, shape (M,)
        The kernel density estimate of the first frame's angles (every system
        of an ensemble pooled), unit mass.
    spec : str
        The spec with the bandwidth used (:func:`particles_spec`).

    Raises
    ------
    ValueError
        (one line, starting with ``init=``) The file is not a trajectory of
        ``d = 2`` with its first frame, or a bad bandwidth.
    """
    _, params = parse_density_init(spec)
    path = params["file"]
    try:
        config, first = read_first_frame(path)
    except TrajectoryFileError as exc:
        raise ValueError(f"init={spec!r} cannot be read: {exc}") from None
    if config.d != 2:
        raise ValueError(f"init={spec!r} needs a run on the circle (d = 2), got d={config.d}")
    spec = particles_spec(spec, M)
    x = first.reshape(-1, 2)
    try:
        rho = kde_density(np.arctan2(x[:, 1], x[:, 0]), M, parse_density_init(spec)[1]["bandwidth"])
    except ValueError as exc:
        raise ValueError(f"init={spec!r}: {exc}") from None
    return rho, spec


def sphere_particles_density(config: SphereFieldConfig) -> tuple[np.ndarray, str]:
    """A mean-field initial density on S^2 from a trajectory file's first frame.

    Parameters
    ----------
    config : SphereFieldConfig
        A solve on S^2 with ``init="particles:file=PATH[,bandwidth=H]"`` (``H = 0``
        or none: :func:`particles.meanfield.sphere_tokens.default_bandwidth`).

    Returns
    -------
    rho : ndarray, shape (ntheta, nphi)
        The kernel density estimate of the first frame's tokens (every system of an
        ensemble pooled, weighted by the run's masses) on the solve's grid, unit mass.
    spec : str
        The spec with the bandwidth used (:func:`particles_spec`).

    Raises
    ------
    ValueError
        (one line, starting with ``init=``) The file is not a trajectory of
        ``d = 3`` with its first frame, a bad bandwidth, or an estimate that is
        not positive on the grid.
    """
    spec = config.init
    path = parse_sphere_init(spec, config.lmax, False)[1]["file"]
    try:
        run, first = read_first_frame(path)
    except TrajectoryFileError as exc:
        raise ValueError(f"init={spec!r} cannot be read: {exc}") from None
    if run.d != 3:
        raise ValueError(f"init={spec!r} needs a run on S^2 (d = 3), got d={run.d}")
    spec = particles_spec(spec, config.lmax, sphere=True)
    x = first.reshape(-1, 3)
    masses = np.tile(run.mass_array(), x.shape[0] // run.n)
    try:
        alm = kde_coefficients(x, config.lmax, parse_sphere_init(spec, config.lmax, False)[1]
                               ["bandwidth"], masses)
    except ValueError as exc:
        raise ValueError(f"init={spec!r}: {exc}") from None
    rho = make_space(config).synthesise(alm)
    if not rho.min() > 0.0:
        raise ValueError(f"init={spec!r} is not a positive density on the grid (min "
                         f"{rho.min():.3g}): raise the bandwidth")
    return rho, spec
