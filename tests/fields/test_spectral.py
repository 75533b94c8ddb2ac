"""The spectral summation (``summation="spectral"``) against the direct sums, its
series' identities, the runs it serves and the ones it refuses."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from clitools import invoke, ok, usage_error

from particles import simulate
from particles.config import SimulationConfig
from particles.errors import ConfigError
from particles.fields import spectral
from particles.fields.attention import attention_reference
from particles.fields.kernels import kernel_attention_reference
from particles.models import build_field

TOL = 1e-12


def _tokens(rng, n, d):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _configurations(rng, n, d):
    """Random, clustered (three clusters of tokens within 1e-8) and near-antipodal
    (pairs at -x + 1e-7 noise) tokens, each (n, d)."""
    random = _tokens(rng, n, d)
    centres = _tokens(rng, 3, d)
    clustered = centres[rng.integers(0, 3, n)] + 1e-8 * rng.normal(size=(n, d))
    half = _tokens(rng, (n + 1) // 2, d)
    antipodal = np.concatenate([half, -half + 1e-7 * rng.normal(size=half.shape)])[:n]
    for X in (clustered, antipodal):
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    return {"random": random, "clustered": clustered, "antipodal": antipodal}


def _evaluate(field, X, parallel=False):
    out = np.empty_like(X)
    ws = np.empty(field.workspace(2 if parallel else 1))
    (field.parallel if parallel else field.serial)(X, field.params, out, ws)
    return out


def _relative(got, ref):
    return np.abs(got - ref).max() / (np.abs(ref).max() or 1.0)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("model,usa_scale", [("sa", "n"), ("usa", "n_exp_beta")])
@pytest.mark.parametrize("weighted", [False, True])
def test_spectral_drifts_equal_the_direct_sums(d, model, usa_scale, weighted):
    """To 1e-12 relative (max |dy| / max |y|) on random, clustered and
    near-antipodal tokens, beta from 0.1 to 700, with masses and a value matrix."""
    rng = np.random.default_rng(d * 10 + weighted)
    n = 300
    kw = dict(masses=rng.uniform(0.2, 3.0, size=n), V=rng.normal(size=(d, d))) if weighted else {}
    for beta in (0.1, 1.0, 9.0, 100.0, 700.0):
        config = SimulationConfig(n=n, d=d, beta=beta, model=model, usa_scale=usa_scale,
                                  summation="spectral", **kw)
        field = build_field(config)
        assert field.name.startswith("spectral")
        for name, X in _configurations(rng, n, d).items():
            ref = attention_reference(X, beta=beta, normalized=model == "sa",
                                      usa_shift=beta if usa_scale == "n_exp_beta" else 0.0,
                                      V=kw.get("V"), masses=kw.get("masses"))
            got = _evaluate(field, X)
            assert _relative(got, ref) < TOL, (beta, name)


def test_rbf_and_scaled_qk_are_served():
    """rbf with Q = K = I is exp(2 tau <x, y>) up to a constant (USA keeps it);
    edp with Q^T K = c I runs at beta c."""
    rng = np.random.default_rng(3)
    n, d = 200, 3
    X = _tokens(rng, n, d)
    for model in ("sa", "usa"):
        config = SimulationConfig(n=n, d=d, beta=1.0, kernel="rbf", tau=2.5, model=model,
                                  summation="spectral")
        ref = kernel_attention_reference(X, "rbf", 2.5, normalized=model == "sa")
        assert _relative(_evaluate(build_field(config), X), ref) < TOL
    R = np.linalg.qr(rng.normal(size=(d, d)))[0]
    Q, K = 2.0 * R, 1.5 * R  # Q^T K = 3 I
    config = SimulationConfig(n=n, d=d, beta=2.0, Q=Q, K=K, summation="spectral")
    ref = attention_reference(X, beta=2.0, Q=Q, K=K)
    assert _relative(_evaluate(build_field(config), X), ref) < TOL


def test_circle_kernel_matches_its_numpy_twin():
    rng = np.random.default_rng(5)
    # one token, one lane past TOKENS, several moment blocks with a part-filled last lane group
    for n, beta in ((1, 3.0), (spectral.TOKENS + 1, 5.0), (2500, 9.0)):
        X = _tokens(rng, n, 2)
        config = SimulationConfig(n=n, d=2, beta=beta, masses=rng.uniform(0.5, 2, n),
                                  summation="spectral")
        twin = spectral.spectral_reference(config, X, np.eye(2), np.eye(2), np.eye(2),
                                           True, 0.0)
        np.testing.assert_allclose(_evaluate(build_field(config), X), twin, rtol=0, atol=1e-14)


def _with_poles(rng, n):
    """Random tokens (n, 3) with the first four on the axis (both poles, a
    signed zero) and one more, tokens off the sphere (an integrator's stage)."""
    X = _tokens(rng, n, 3)
    X[:4] = [[0.0, 0.0, 1.0], [0.0, 0.0, -1.0], [-0.0, 0.0, 1.0], [0.0, -0.0, -1.0]]
    return X


def test_sphere_kernels_match_their_numpy_twin():
    """The compiled S^2 drift (one adjoint transform, three syntheses, the
    compiled assembly) against :func:`spectral.sphere_sums` in NumPy: on the
    sphere, at the poles and off it, with masses and a value matrix."""
    rng = np.random.default_rng(11)
    n = 2500
    config = SimulationConfig(n=n, d=3, beta=6.0, masses=rng.uniform(0.5, 2, n),
                              V=rng.normal(size=(3, 3)), summation="spectral")
    X = _with_poles(rng, n)
    for scale in (1.0, 1.1):
        twin = spectral.spectral_reference(config, scale * X, np.eye(3), np.eye(3),
                                           config.matrix("V"), True, 0.0)
        got = _evaluate(build_field(config), scale * X)
        np.testing.assert_allclose(got, twin, rtol=0, atol=1e-14 * np.abs(twin).max())


@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_sphere_drift_at_the_poles_and_small_beta(beta):
    """Tokens on the axis (where the longitude is arbitrary) and b < 1 (the
    tangential factors by the Bessel recurrence; b = 0 exactly) equal the direct sums."""
    rng = np.random.default_rng(12)
    n = 200
    X = _with_poles(rng, n)
    for model in ("sa", "usa"):
        config = SimulationConfig(n=n, d=3, beta=beta, model=model, summation="spectral")
        ref = attention_reference(X, beta=beta, normalized=model == "sa")
        assert _relative(_evaluate(build_field(config), X), ref) < TOL


def test_sphere_truncation_bounds_every_series():
    """The transforms' degree meets the bound for D, the radial and the
    tangential parts (each degree's worst case, summed beyond L), and L - 1 does not."""
    for b in (0.1, 0.9, 5.0, 100.0, 700.0):
        for ratio in (1.0, 1e4):
            L = spectral.sphere_truncation(b, 1e-12, ratio)
            bound = 1e-12 / (2 * ratio)
            count = L + 200
            ell = np.arange(count)
            f = spectral.sphere_factors(b, count) * (2 * ell + 1) / (4 * np.pi)
            f[2] *= np.sqrt(ell * (ell + 1.0))
            assert f[0, L + 1:].sum() <= bound and f[1:, L + 1:].sum() <= bound, (b, ratio)
            assert f[0, L:].sum() > bound or f[1:, L:].sum() > bound or L == 1, (b, ratio)
            d = f[0] / (2 * ell + 1) * 4 * np.pi  # 4 pi i_l e^{-b}, the profile's factors
            np.testing.assert_allclose(d[:L], 4 * np.pi * spectral.coefficients(b, 3, L)
                                       / (2 * ell[:L] + 1), rtol=1e-14)


@pytest.mark.parallel
def test_sphere_bits_do_not_depend_on_the_threads():
    """The syntheses, locations and assembly run side by side on two threads,
    each transform on one: the same bits as one thread."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one Numba thread here")
    rng = np.random.default_rng(13)
    X = _tokens(rng, 5000, 3)
    field = build_field(SimulationConfig(n=5000, d=3, beta=4.0, summation="spectral"))
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _evaluate(field, X)
        numba.set_num_threads(2)
        two = _evaluate(field, X)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(one, two)


@pytest.mark.parallel
def test_parallel_drifts_equal_serial_bit_for_bit():
    """The moments are summed in fixed blocks: any number of threads, the same bits."""
    rng = np.random.default_rng(6)
    for d in (2, 3):
        X = _tokens(rng, 3000, d)
        field = build_field(SimulationConfig(n=3000, d=d, beta=4.0, summation="spectral"))
        np.testing.assert_array_equal(_evaluate(field, X, parallel=True), _evaluate(field, X))


@pytest.mark.parametrize("d", [2, 3])
def test_series_weights_sum_to_the_profile_at_one(d):
    """Funk-Hecke / Jacobi-Anger at t = 1: the weights sum to f(1) = 1, and the
    chosen degree is the least whose tail meets the bound."""
    for b in (0.1, 5.0, 100.0, 700.0, 1e4):
        w = spectral.coefficients(b, d, int(60 + 60 * np.sqrt(b)))
        total = w[0] + (2 * w[1:].sum() if d == 2 else w[1:].sum())
        assert abs(total - 1.0) < 1e-12, b
        for ratio in (1.0, 1e3):
            K, tail = spectral.truncation(b, d, 1e-12, ratio)
            bound = 1e-12 / (2 * ratio)
            assert tail <= bound
            over = w[K:] if d == 3 else 2 * w[K:]
            assert K == 1 or over.sum() > bound, (b, ratio)  # K - 1 would not do


def test_degree_grows_like_sqrt_beta():
    degrees = [spectral.truncation(b, 2, 1e-12, 1000.0)[0] for b in (100.0, 400.0)]
    assert 1.6 < degrees[1] / degrees[0] < 2.4


@pytest.mark.parametrize("kw,needle", [
    (dict(d=4), "d = 2 or 3"),
    (dict(kernel="l2"), "'edp' and 'rbf'"),
    (dict(heads=2), "one head"),
    (dict(weights="gaussian", seed=1), "fixed Q, K"),
    (dict(model="kuramoto"), "'sa' and 'usa'"),
    (dict(normalization="sinkhorn"), "softmax"),
    (dict(K="minus_identity"), "non-negative multiple"),
    (dict(value_weights="wwt", weight_draws="independent", batch=2, seed=1),
     "one draw"),
    (dict(d=3, batch=2), "batch on S\\^2 would be .*x slower than the direct sums"),
])
def test_runs_it_cannot_serve_are_refused_naming_why(kw, needle):
    with pytest.raises(ConfigError, match=needle) as info:
        SimulationConfig(**{"n": 8, "d": 2, "beta": 1.0, "summation": "spectral", **kw})
    assert info.value.field == "summation"
    assert "\n" not in str(info.value)


def test_auto_picks_by_cost_and_the_choice_is_recorded():
    assert SimulationConfig(n=16, d=2, beta=1.0, summation="auto").summation == "direct"
    assert SimulationConfig(n=20000, d=2, beta=9.0, summation="auto").summation == "spectral"
    assert SimulationConfig(n=20000, d=3, beta=5.0, summation="auto").summation == "spectral"
    # not served: auto is direct, spectral is refused
    assert SimulationConfig(n=20000, d=4, beta=1.0, summation="auto").summation == "direct"
    with pytest.raises(ConfigError, match="tol"):
        SimulationConfig(n=16, d=2, beta=1.0, summation="direct", tol=1e-9)


def test_auto_is_the_default_and_needs_a_safe_gain():
    """The default picks the series at n = 16384 on S^2, never below
    AUTO_MIN_N tokens (small runs keep their direct bits, though the series
    is 8x faster at n = 512 on the circle), and only where the cost model
    predicts AUTO_GAIN (1.5x): S^2 at beta 5 stays direct at a predicted 1.2x."""
    assert SimulationConfig(n=16384, d=3, beta=5.0).summation == "spectral"
    assert SimulationConfig(n=16384, d=3, beta=5.0).summation_auto
    assert SimulationConfig(n=512, d=2, beta=10.0).summation == "direct"
    assert SimulationConfig(n=spectral.AUTO_MIN_N, d=2, beta=10.0).summation == "spectral"
    for n, chosen in ((1024, "direct"), (1300, "spectral")):
        config = SimulationConfig(n=n, d=3, beta=5.0)
        direct, series = spectral.costs(n, 3, spectral.degree(config.replace(
            summation="spectral")))
        assert (direct / series >= spectral.AUTO_GAIN) == (chosen == "spectral")
        assert 1.0 < direct / series and config.summation == chosen
    assert not SimulationConfig(n=16384, d=3, beta=5.0, summation="direct").summation_auto
    text = SimulationConfig.__dataclass_fields__["summation"].metadata["option"].help
    assert f"{spectral.AUTO_GAIN:g}x faster, from n = {spectral.AUTO_MIN_N}" in text


def test_auto_that_sums_directly_keeps_a_readable_configuration():
    """tol is the series': auto resolved to direct records the default (a file
    of auto with --tol 1e-6 at n = 32 could not be read back), and the copy of
    a larger run chooses again with the tol asked."""
    config = SimulationConfig(n=32, d=2, beta=1.0, summation="auto", tol=1e-6)
    assert (config.summation, config.tol) == ("direct", 1e-12)
    assert SimulationConfig.from_json(config.to_json()) == config
    larger = config.replace(n=4096)
    assert (larger.summation, larger.tol) == ("spectral", 1e-6)


def test_no_quadratic_observer_by_default_on_large_spectral_runs():
    """An O(n^2) observer at every frame would undo the O(n K) steps."""
    assert SimulationConfig(n=4000, d=2, beta=9.0, summation="direct").observables == (
        "pairwise",)
    assert SimulationConfig(n=4000, d=2, beta=9.0, summation="spectral").observables == (
        "order", "spectral_energy")
    assert SimulationConfig(n=100, d=3, beta=9.0, summation="spectral").observables == ("pairwise",)


@pytest.mark.parametrize("d", [2, 3])
def test_the_energy_through_the_series_equals_the_pair_sum(d):
    """spectral_energy against the pairwise pass: edp, rbf, masses, clustered tokens,
    beta up to 700 (O(n K) against O(n^2))."""
    from particles.observables import observation

    rng = np.random.default_rng(8)
    n = 300
    for beta, kw in ((3.0, {}), (2.0, dict(kernel="rbf", tau=1.5)),
                     (9.0, dict(masses=tuple(rng.uniform(0.5, 2, n)))), (700.0, {})):
        X = np.stack(list(_configurations(rng, n, d).values()))
        spec = SimulationConfig(n=n, d=d, beta=beta, observables=("spectral_energy",), **kw)
        got = observation(("spectral_energy",), spec)(X)
        ref = observation(("pairwise",), SimulationConfig(n=n, d=d, beta=beta, **kw))(X)
        for name in ("energy", "energy_normalized"):
            np.testing.assert_allclose(got[name], ref[name], rtol=TOL, atol=0)
    with pytest.raises(ConfigError, match="spectral_energy"):
        SimulationConfig(n=8, d=4, beta=1.0, observables=("spectral_energy",))


@pytest.mark.parametrize("d,integrator,extra", [
    (2, "dopri5", {}),
    (3, "rk4", {"model": "usa", "usa_scale": "n_exp_beta"}),
    (2, "heun", {"noise": 0.3}),
    (3, "euler", {"batch": 3, "n": 1200}),  # (S^2 batches below n = 940 are refused)
    (3, "euler", {"value_weights": "wwt", "layer_time": 0.5}),  # V redrawn per layer
])
def test_trajectories_equal_the_direct_method(d, integrator, extra):
    """Every integrator family (adaptive, fixed, stochastic, ensembles) follows
    the direct trajectory: the series are exact on the sphere, and the stages
    of rk4, heun and dopri5 off it see another extension of the field, so the
    trajectories agree to the integrator's error (small at these steps;
    dopri5: within its tolerance), the Euler layer's to round-off."""
    extra = dict(extra)
    n = extra.pop("n", 64)
    kw = dict(integrator=integrator, T=2.0, dt=0.02, save_every=20, seed=4, **extra)
    if integrator == "dopri5":
        kw.update(rtol=1e-9, atol=1e-12, save_times=np.linspace(0, 2.0, 5))
    a = simulate(n, d, 6.0, summation="spectral", tol=1e-13, **kw)
    b = simulate(n, d, 6.0, summation="direct", **kw)
    assert a.config.summation == "spectral"
    atol = {"dopri5": 1e-8, "euler": 1e-13}.get(integrator, 1e-10)
    np.testing.assert_allclose(a.positions, b.positions, rtol=0, atol=atol)


def test_cli_records_the_choice_and_resumes(tmp_path):
    """--summation and --tol on the command line, the degree in the file, a
    resumed run equal to one uninterrupted run bit for bit; refusals in one line."""
    base = ["simulate", "--n", "40", "--d", "3", "--beta", "3", "--integrator", "rk4",
            "--dt", "0.05", "--seed", "2", "--summation", "spectral", "--tol", "1e-10"]
    whole = tmp_path / "whole.h5"
    part = tmp_path / "part.h5"
    ok(invoke(*base, "--T", "2", "--out", whole))
    ok(invoke(*base, "--T", "1", "--out", part))
    ok(invoke(*base, "--T", "2", "--out", part, "--resume"))
    with h5py.File(whole) as fa, h5py.File(part) as fb:
        assert fa["parameters"].attrs["summation_degree"] == spectral.sphere_truncation(
            3.0, 1e-10, 40.0)
        np.testing.assert_array_equal(fa["particles/tokens/position/value"][()],
                                      fb["particles/tokens/position/value"][()])
    usage_error(invoke("simulate", "--n", "4", "--d", "5", "--beta", "1", "--summation",
                       "spectral", "--out", tmp_path / "x.h5"), "d = 2 or 3")
    assert not (tmp_path / "x.h5").exists()
