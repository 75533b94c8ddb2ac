"""The recorded energy is that of the kernel that ran (issue 11, item 4)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from kerneltools import log_laplace

from particles import SimulationConfig, simulate
from particles.fields.kernels import KERNELS, Kernel
from particles.observables import (
    EnergyDefinition,
    compute_observables,
    energy_definition,
    kernel_energy,
    kernel_energy_reference,
)
from particles.runs import run_to_file


def _tokens(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


PARAMS = {"edp": {"beta": 1.5}, "rbf": {"tau": 0.7}, "l2": {"tau": 0.7},
          "intersection": {"beta": 1.5}, "quadratic": {"gamma": 0.5}}


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_compiled_kernel_energy_matches_numpy_twin(kernel):
    n, d = 9, 3
    Q = np.diag([1.0, 0.5, 2.0])  # Q^T K symmetric with K = I
    kw = {"beta": 1.5, **PARAMS[kernel]}
    config = SimulationConfig(n=n, d=d, model="usa", kernel=kernel, Q=Q, **kw)
    definition = energy_definition(config)
    assert definition.own and definition.kernel == kernel
    assert KERNELS[kernel].formula in definition.definition
    masses = np.linspace(0.5, 2.0, n)
    X = np.stack([_tokens(n, d, 1), _tokens(n, d, 2)])
    got = kernel_energy(X, masses, definition)
    for b in range(2):
        want = kernel_energy_reference(X[b], masses, definition)
        for k in ("energy", "energy_normalized"):
            assert got[k][b] == pytest.approx(want[k], rel=1e-12), (kernel, k)


def test_kernel_energy_of_edp_identity_is_the_default_energy():
    # the general formula on edp with Q = K = I is DESIGN.md's E_beta (and E_0)
    X = _tokens(12, 4, 3)[None]
    m = np.ones(12)
    for beta in (0.0, 2.0):
        definition = EnergyDefinition(kernel="edp", param=beta, Q=np.eye(4), K=np.eye(4),
                                      log_bound=beta)
        got = kernel_energy(X, m, definition)
        want = compute_observables(X, beta, m)
        for k in ("energy", "energy_normalized"):
            assert got[k][0] == pytest.approx(want[k][0], rel=1e-13), (beta, k)


def test_simulate_records_the_energy_of_the_kernel_that_ran():
    traj = simulate(8, 3, 1.0, kernel="rbf", tau=0.8, T=0.5, seed=4)
    definition = energy_definition(traj.config)
    for k, X in enumerate(traj.positions):
        want = kernel_energy_reference(X, None, definition)
        assert traj.observables["energy"][k] == pytest.approx(want["energy"], rel=1e-12)
    # not the exp(beta <x_i, x_j>) energy recorded before
    plain = compute_observables(traj.positions[-1:], 1.0, np.ones(8))["energy"][0]
    assert abs(traj.observables["energy"][-1] - plain) > 1e-3
    # Q = 2 I with the edp kernel: E = 1/(2 beta n^2) sum exp(2 beta <x_i, x_j>)
    traj = simulate(8, 3, 1.0, Q=2.0 * np.eye(3), T=0.5, seed=4)
    X = traj.positions[-1]
    want = np.exp(2.0 * X @ X.T).sum() / (2.0 * 64)
    assert traj.observables["energy"][-1] == pytest.approx(want, rel=1e-12)


def test_default_energy_and_named_exceptions_in_the_file(tmp_path):
    default = SimulationConfig(n=6, d=3, beta=1.0, T=0.2, seed=0)
    assert energy_definition(default).default and energy_definition(default).own
    run_to_file(default, tmp_path / "default.h5")
    with h5py.File(tmp_path / "default.h5") as f:
        assert "definition" not in f["observables/energy"].attrs
    # a non-symmetric Q^T K: no energy of the dynamics; the file says what is recorded
    Q = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    skew = default.replace(Q=Q)
    definition = energy_definition(skew)
    assert not definition.own and definition.default
    run_to_file(skew, tmp_path / "skew.h5")
    with h5py.File(tmp_path / "skew.h5") as f:
        for name in ("energy", "energy_normalized"):
            text = f[f"observables/{name}"].attrs["definition"]
            assert "not symmetric" in text and "plain inner product" in text
    # a kernel energy is named too
    run_to_file(default.replace(kernel="l2", tau=1.0), tmp_path / "l2.h5")
    with h5py.File(tmp_path / "l2.h5") as f:
        assert "tau ||q - k||" in f["observables/energy"].attrs["definition"]


# ----------------------------------- a kernel registered after an energy call


def test_a_kernel_registered_after_an_energy_call_has_its_energy():
    # an energy call first (it used to fill a name-keyed table of kernel energies once) ...
    n, d, tau = 7, 3, 0.6
    X = np.stack([_tokens(n, d, 4)])
    masses = np.linspace(0.5, 1.5, n)
    rbf = energy_definition(SimulationConfig(n=n, d=d, beta=1.0, kernel="rbf", tau=tau))
    kernel_energy(X, masses, rbf)
    # ... then a kernel registered afterwards: its energy is declared on its entry
    laplace = Kernel("laplace_energy", "exp(-tau ||q - k||)", "tau",
                     lambda q, k, t: -t * np.sqrt(((q[:, None] - k[None]) ** 2).sum(-1)),
                     lambda t, nq, nk, qk, d: 0.0, logkappa=log_laplace)
    KERNELS[laplace.name] = laplace
    try:
        config = SimulationConfig(n=n, d=d, beta=1.0, kernel=laplace.name, tau=tau,
                                  model="usa")
        definition = energy_definition(config)
        assert definition.own and definition.kernel == laplace.name
        got = kernel_energy(X, masses, definition)
        want = kernel_energy_reference(X[0], masses, definition)
        for k in ("energy", "energy_normalized"):
            assert got[k][0] == pytest.approx(want[k], rel=1e-12), k
        # c = 1 for a kernel that declares no log-linear scale: E = sum kappa / (2 N^2)
        W = np.exp(-tau * np.linalg.norm(X[0][:, None] - X[0][None], axis=-1))
        assert got["energy"][0] == pytest.approx(
            masses @ W @ masses / (2.0 * masses.sum() ** 2), rel=1e-12)
    finally:
        del KERNELS[laplace.name]
