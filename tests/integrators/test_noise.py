"""The counter-based noise of the steppers and the step contract that carries it.

The compiled Philox-4x64-10 generator equals numpy's ``Philox`` bit generator
and its NumPy twin; the normals depend only on (key, counter, row, component,
stream) and look standard normal; runners hand every step its time, key and
counter.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from particles._numba import jit, specialize
from particles.integrators import INTEGRATORS, SPACES
from particles.integrators.driver import fixed_runner
from particles.integrators.noise import (
    fill_normals,
    normals_reference,
    philox4x64,
    philox_reference,
)
from particles.seeds import noise_key

KEY = noise_key(12345, 3)


def test_philox_matches_numpy_bit_generator():
    rng = np.random.default_rng(0)
    for _ in range(20):
        key = rng.integers(0, 2**63, size=2, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        ctr = rng.integers(1, 2**63, size=4, dtype=np.uint64)
        # numpy increments its counter before generating a block
        before = ctr.copy()
        before[0] -= np.uint64(1)
        want = np.random.Philox(key=key, counter=before).random_raw(4)
        got = np.array(philox4x64(*ctr, key[0], key[1]), dtype=np.uint64)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(philox_reference(ctr, key), want)


@pytest.mark.parametrize("d", [1, 3, 4, 6])
def test_compiled_normals_equal_numpy_twin(d):
    out = np.empty((257, d))
    for counter, stream in ((0, 0), (7, 0), (7, 1), (2**40, 2)):
        fill_normals(KEY, counter, stream, out)
        want = normals_reference(KEY, counter, stream, 257, d)
        # the bits are identical; log/cos/sin may differ by an ulp (numpy's SIMD loops)
        np.testing.assert_allclose(out, want, rtol=4e-16, atol=4e-16)


def test_normals_are_a_function_of_key_counter_row_component():
    a = np.empty((50, 5))
    fill_normals(KEY, 11, 0, a)
    b = np.empty((80, 9))
    fill_normals(KEY, 11, 0, b)
    # the same (row, component) gives the same number whatever the array's shape
    np.testing.assert_array_equal(a[:, :5], b[:50, :5])
    other = np.empty((50, 5))
    for kw in (dict(key=noise_key(12345, 4), counter=11, stream=0),
               dict(key=KEY, counter=12, stream=0), dict(key=KEY, counter=11, stream=1)):
        fill_normals(kw["key"], kw["counter"], kw["stream"], other)
        assert not np.any(other == a)


def test_normals_moments_and_normality():
    z = np.empty((25_000, 4))  # 1e5 draws, 4 per Philox block
    fill_normals(KEY, 0, 0, z)
    x = z.ravel()
    se = 1.0 / np.sqrt(x.size)
    assert abs(x.mean()) < 5 * se
    assert abs(x.var() - 1.0) < 5 * np.sqrt(2.0) * se
    assert abs(stats.skew(x)) < 5 * np.sqrt(6.0) * se
    assert abs(stats.kurtosis(x)) < 5 * np.sqrt(24.0) * se
    assert stats.kstest(x, "norm").pvalue > 1e-3
    # components and consecutive counters are uncorrelated
    c = np.corrcoef(z.T)
    assert np.abs(c - np.eye(4)).max() < 5 * se * 2
    z2 = np.empty_like(z)
    fill_normals(KEY, 1, 0, z2)
    assert abs(np.corrcoef(x, z2.ravel())[0, 1]) < 5 * se


def test_registry_declares_orders_and_spaces():
    for integrator in INTEGRATORS.values():
        assert integrator.order >= 1
        # issue 13 registered the stochastic steppers em and heun (tests/test_sde.py)
        assert (integrator.strong_order is None) == (not integrator.stochastic)
        assert integrator.stochastic == (integrator.name in ("em", "heun"))
        assert integrator.spaces and set(integrator.spaces) <= set(SPACES)
        assert "sphere" in integrator.spaces
    assert "flat" in INTEGRATORS["rk4"].spaces and "flat" in INTEGRATORS["dopri5"].spaces


# a recording "stepper" on the step contract: writes what the runner handed it
def _record_step(X, t, h, p, ws, S, key, counter):
    z = S[0]
    fill_normals(key, counter, 0, z)
    X[counter, 0] = t
    X[counter, 1] = h
    X[counter, 2] = z[0, 0]


class _Recorder:
    STAGES = 1
    ORDER = 1
    STRONG_ORDER = 0.5
    SPACES = ("sphere",)

    @staticmethod
    def make_step(drift, space="sphere"):
        return specialize(_record_step, "recorder")


@jit
def _no_drift(X, p, out, ws):
    pass


def test_runners_pass_time_key_and_counter(monkeypatch):
    from particles.integrators import Integrator

    monkeypatch.setitem(INTEGRATORS, "_recorder",
                        Integrator("_recorder", _Recorder, "test stepper"))
    keys = np.stack([noise_key(5, 0), noise_key(5, 1)])
    for layout in ("batch", "serial"):
        X = np.zeros((2, 12, 3))
        run = fixed_runner("_recorder", _no_drift, layout)
        run(X, 1.5, 4, 0.25, (), 1, keys, 3)  # steps 3..6 from t = 1.5
        run(X, 2.5, 2, 0.5, (), 1, keys, 7)  # steps 7, 8 from t = 2.5
        for b in range(2):
            np.testing.assert_array_equal(X[b, 3:9, 0], [1.5, 1.75, 2.0, 2.25, 2.5, 3.0])
            np.testing.assert_array_equal(X[b, 3:9, 1], [0.25] * 4 + [0.5] * 2)
            want = [normals_reference(keys[b], c, 0, 1, 1)[0, 0] for c in range(3, 9)]
            np.testing.assert_allclose(X[b, 3:9, 2], want, rtol=4e-16, atol=4e-16)
            assert not X[b, :3].any() and not X[b, 9:].any()
        assert X[0, 3, 2] != X[1, 3, 2]  # one key per system


# --- an Euler-Maruyama stepper written against the contract, as the next issue will
# add it: one module (these names) plus one registry line (monkeypatched here).
# Convention: a stochastic stepper reads its amplitude sigma from the last entry of
# p and hands the drift p[:-1].
em_drift = None


def _em_step(X, t, h, p, ws, S, key, counter):
    f, z = S[0], S[1]
    em_drift(X, p[:-1], f, ws)
    fill_normals(key, counter, 0, z)
    c = p[-1] * np.sqrt(h)
    n, d = X.shape
    for i in range(n):
        for a in range(d):
            X[i, a] += h * f[i, a] + c * z[i, a]


class _EulerMaruyama:
    ORDER = 1
    STRONG_ORDER = 0.5
    SPACES = ("flat",)
    STAGES = 2

    @staticmethod
    def make_step(drift, space="flat"):
        return specialize(_em_step, "em", em_drift=drift)


@jit
def _decay(X, p, out, ws):
    lam = p[0]
    n, d = X.shape
    for i in range(n):
        for a in range(d):
            out[i, a] = -lam * X[i, a]


def test_a_stochastic_stepper_is_one_module_and_one_registry_line(monkeypatch):
    from particles.integrators import Integrator

    monkeypatch.setitem(INTEGRATORS, "_em", Integrator("_em", _EulerMaruyama, "test SDE"))
    assert INTEGRATORS["_em"].stochastic and INTEGRATORS["_em"].strong_order == 0.5
    B, n, d, h, nsteps, lam, sigma = 3, 5, 2, 0.01, 40, 0.7, 0.3
    keys = np.stack([noise_key(9, b) for b in range(B)])
    X0 = np.random.default_rng(0).normal(size=(B, n, d))
    p = (lam, sigma)
    # NumPy twin of the whole run
    want = X0.copy()
    for k in range(nsteps):
        for b in range(B):
            want[b] += h * (-lam * want[b]) + sigma * np.sqrt(h) * normals_reference(
                keys[b], k, 0, n, d)
    for layout in ("batch", "serial"):
        run = fixed_runner("_em", _decay, layout, space="flat")
        X = X0.copy()
        run(X, 0.0, nsteps // 2, h, p, 1, keys, 0)
        run(X, 0.2, nsteps // 2, h, p, 1, keys, nsteps // 2)  # a save point in between
        np.testing.assert_allclose(X, want, rtol=1e-13, atol=1e-14)
        # each system alone (a batch split) gives the same numbers bit for bit
        for b in range(B):
            Y = X0[b:b + 1].copy()
            run(Y, 0.0, nsteps, h, p, 1, keys[b:b + 1], 0)
            np.testing.assert_array_equal(Y[0], X[b])
