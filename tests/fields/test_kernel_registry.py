"""Adding a kernel is one pointwise function plus one registry line.

The Laplace kernel ``kappa(q, k) = exp(-tau ||q - k||)`` is registered here,
inside the test file (its compiled log, shared with the energy tests, is in
``kerneltools.py``), and runs through ``particles.simulate`` (SA and USA)
against a plain NumPy integration of its own formula.
"""

import numpy as np
import pytest
from kerneltools import log_laplace

import particles
from particles import sphere
from particles.config import KERNEL_PARAMETERS, SimulationConfig
from particles.fields import KERNELS
from particles.fields.kernels import Kernel, log_kernel_reference
from particles.models import build_field


# ------------------------------- the new kernel: one function (log_laplace) ...
def _laplace_log_reference(q, k, tau):
    return -tau * np.sqrt(((q[:, None, :] - k[None, :, :]) ** 2).sum(-1))


# ... and one registry entry (log kappa <= 0: USA weights never overflow)
LAPLACE = Kernel("laplace", "exp(-tau ||q - k||)", "tau", _laplace_log_reference,
                 lambda tau, nq, nk, qk, d: 0.0, logkappa=log_laplace)


@pytest.fixture
def laplace():
    KERNELS["laplace"] = LAPLACE
    try:
        yield LAPLACE
    finally:
        del KERNELS["laplace"]


# ------------------------------------------------------------ plain NumPy
def _numpy_attention(X, tau, Q, K, V, masses, normalized):
    """exp(-tau |q_i - k_j|) attention written out from the formula."""
    q, k, v = X @ Q.T, X @ K.T, X @ V.T
    W = np.exp(-tau * np.linalg.norm(q[:, None, :] - k[None, :, :], axis=-1)) * masses
    if normalized:
        return (W @ v) / W.sum(axis=1, keepdims=True)
    return (W @ v) / masses.sum()


def _numpy_rk4(x0, drift, dt, steps):
    def f(x):
        y = drift(x)
        return y - np.sum(x * y, axis=1, keepdims=True) * x

    x = x0.copy()
    for _ in range(steps):
        k1 = f(x)
        k2 = f(x + 0.5 * dt * k1)
        k3 = f(x + 0.5 * dt * k2)
        k4 = f(x + dt * k3)
        x = x + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def _matrices(d, seed=3):
    rng = np.random.default_rng(seed)
    Q, K, V = (np.eye(d) + 0.3 * rng.standard_normal((d, d)) for _ in range(3))
    return Q, K, V


# ------------------------------------------------------------------ tests
def test_registered_kernel_is_a_config_choice(laplace):
    assert "laplace" in KERNELS and KERNEL_PARAMETERS["laplace"] == "tau"
    cfg = SimulationConfig(n=4, d=3, beta=1.0, kernel="laplace", tau=0.5, model="usa")
    assert SimulationConfig.from_json(cfg.to_json()) == cfg
    with pytest.raises(ValueError, match=r"^gamma must be 1.0 .* 'quadratic'"):
        SimulationConfig(n=4, d=3, beta=1.0, kernel="laplace", gamma=2.0)
    with pytest.raises(ValueError, match=r"^usa_scale must be 'n'"):
        SimulationConfig(n=4, d=3, beta=1.0, kernel="laplace", model="usa",
                         usa_scale="n_exp_beta")
    # tau is now a parameter of two more kernels' rules: its message names them
    with pytest.raises(ValueError, match=r"^tau must be .*'laplace'"):
        SimulationConfig(n=4, d=3, beta=1.0, kernel="edp", tau=2.0)


def test_unregistered_kernel_is_rejected():
    assert "laplace" not in KERNELS
    with pytest.raises(ValueError, match=r"^kernel must be one of"):
        SimulationConfig(n=4, d=3, beta=1.0, kernel="laplace")


@pytest.mark.parametrize("model", ["sa", "usa"])
@pytest.mark.parametrize("d", [3, 24])
def test_compiled_drift_matches_formula(laplace, model, d):
    n, tau = 9, 0.8
    Q, K, V = _matrices(d)
    masses = np.linspace(0.5, 2.0, n)
    cfg = SimulationConfig(n=n, d=d, beta=1.0, kernel="laplace", tau=tau, model=model,
                           Q=Q, K=K, V=V, masses=masses)
    field = build_field(cfg)
    assert field.name == "pair_laplace"
    X = sphere.uniform(n, d, rng=np.random.default_rng(1))
    want = _numpy_attention(X, tau, Q, K, V, masses, model == "sa")
    for drift, chunks in ((field.serial, 1), (field.parallel, 3)):
        out = np.empty_like(X)
        drift(X, field.params, out, np.empty(field.workspace(chunks)))
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(field.reference(X), want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(log_kernel_reference("laplace", X, X, tau),
                               _laplace_log_reference(X, X, tau), rtol=0, atol=0)


@pytest.mark.parametrize("model", ["sa", "usa"])
def test_simulate_matches_numpy_integration(laplace, model):
    n, d, tau, dt, T = 7, 3, 1.3, 0.02, 1.0
    Q, K, V = _matrices(d, seed=5)
    x0 = sphere.uniform(n, d, rng=np.random.default_rng(2))
    traj = particles.simulate(n, d, 1.0, model=model, kernel="laplace", tau=tau, x0=x0,
                              Q=Q, K=K, V=V, dt=dt, T=T, save_every=25, seed=0)
    ones = np.ones(n)
    want = _numpy_rk4(x0, lambda x: _numpy_attention(x, tau, Q, K, V, ones, model == "sa"),
                      dt, round(T / dt))
    np.testing.assert_allclose(traj.positions[-1], want, atol=1e-11)
    assert traj.config.kernel == "laplace" and traj.config.tau == tau
    # tokens moved (the test is not vacuous)
    assert np.abs(traj.positions[-1] - x0).max() > 1e-2


@pytest.mark.parallel
def test_multihead_and_batch_use_the_registered_kernel(laplace):
    n, d = 6, 3
    traj = particles.simulate(n, d, 1.0, kernel="laplace", tau=0.7, heads=2,
                              weights="gaussian", batch=2, dt=0.05, T=0.2, save_every=1, seed=4)
    assert traj.positions.shape == (5, 2, n, d) and np.all(np.isfinite(traj.positions))
