"""Compiled attention kernels against their NumPy reference, and their symmetries."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from particles._numba import jit
from particles.config import SimulationConfig
from particles.fields import BLAS_MIN_D, KERNELS
from particles.fields.attention import attention_reference
from particles.models import build_field
from particles.sphere.rows import project_rows


def _tokens(rng, n, d):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _evaluate(field, X, parallel: bool, nchunks: int = 2) -> np.ndarray:
    out = np.empty_like(X)
    ws = np.empty(field.workspace(nchunks if parallel else 1))
    (field.parallel if parallel else field.serial)(X, field.params, out, ws)
    return out


def _random_config(rng, n, d, beta, model, usa_scale, weights):
    kw = {}
    if weights:
        # scaled so that ||Q^T K|| stays O(1) and USA weights stay finite
        kw = dict(
            Q=rng.normal(size=(d, d)) / np.sqrt(d),
            K=rng.normal(size=(d, d)) / np.sqrt(d),
            V=rng.normal(size=(d, d)),
            masses=rng.uniform(0.2, 3.0, size=n),
        )
    return SimulationConfig(n=n, d=d, beta=beta, model=model, usa_scale=usa_scale, **kw)


@pytest.mark.parametrize("d", [2, 3, 7, BLAS_MIN_D, 40])
@pytest.mark.parametrize("n", [1, 5, 70])
@pytest.mark.parametrize("model,usa_scale", [("sa", "n"), ("usa", "n"), ("usa", "n_exp_beta")])
@pytest.mark.parametrize("weights", [False, True])
def test_kernel_matches_reference(n, d, model, usa_scale, weights):
    rng = np.random.default_rng(n * 1000 + d)
    X = _tokens(rng, n, d)
    for beta in (0.0, 1.0, 30.0, 500.0):
        if model == "usa" and usa_scale == "n" and beta > 100:
            continue  # e^beta overflows by design; validation rejects it (tested elsewhere)
        if weights and model == "usa" and beta > 100:
            continue
        field = build_field(_random_config(rng, n, d, beta, model, usa_scale, weights))
        ref = field.reference(X)
        scale = np.abs(ref).max() or 1.0
        # the parallel twin once per kernel (model and dimension), not for every
        # size and weighting: each is a compile of its own
        for parallel in (False, True) if n == 70 and not weights else (False,):
            got = _evaluate(field, X, parallel)
            assert np.all(np.isfinite(got))
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * scale,
                                       err_msg=f"beta={beta} parallel={parallel}")


@pytest.mark.parametrize("d", [3, BLAS_MIN_D])
def test_huge_beta_is_finite_and_exact(d):
    rng = np.random.default_rng(1)
    n = 40
    X = _tokens(rng, n, d)
    X[1] = X[0] + 1e-3 * rng.normal(size=d)  # one close pair: nontrivial weights at 1e4
    X[1] /= np.linalg.norm(X[1])
    for beta in (1e3, 1e4):
        field = build_field(SimulationConfig(n=n, d=d, beta=beta))
        ref = field.reference(X)
        got = _evaluate(field, X, parallel=False)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-11)
        # usa with the time change is finite at huge beta too
        field = build_field(SimulationConfig(n=n, d=d, beta=beta, model="usa",
                                             usa_scale="n_exp_beta"))
        got = _evaluate(field, X, parallel=True)
        np.testing.assert_allclose(got, field.reference(X), rtol=0, atol=1e-11)


def test_reference_is_softmax_formula():
    """The oracle itself against the textbook formula (no max shift) at moderate beta."""
    rng = np.random.default_rng(2)
    n, d, beta = 6, 4, 2.5
    X = _tokens(rng, n, d)
    W = np.exp(beta * X @ X.T)
    sa = (W / W.sum(1, keepdims=True)) @ X
    usa = W @ X / n
    np.testing.assert_allclose(attention_reference(X, beta=beta), sa, rtol=1e-14)
    np.testing.assert_allclose(attention_reference(X, beta=beta, normalized=False), usa,
                               rtol=1e-14)
    np.testing.assert_allclose(
        attention_reference(X, beta=beta, normalized=False, usa_shift=beta),
        usa * np.exp(-beta), rtol=1e-14)


@pytest.mark.parametrize("d", [3, BLAS_MIN_D])
def test_permutation_equivariance(d):
    rng = np.random.default_rng(3)
    n = 33
    X = _tokens(rng, n, d)
    m = rng.uniform(0.5, 2, n)
    perm = rng.permutation(n)
    f1 = build_field(SimulationConfig(n=n, d=d, beta=4.0, masses=m))
    f2 = build_field(SimulationConfig(n=n, d=d, beta=4.0, masses=m[perm]))
    np.testing.assert_allclose(_evaluate(f2, X[perm], False), _evaluate(f1, X, False)[perm],
                               rtol=0, atol=1e-14)


@pytest.mark.parametrize("model", ["sa", "usa"])
def test_rotation_equivariance(model):
    rng = np.random.default_rng(4)
    n, d = 20, 5
    X = _tokens(rng, n, d)
    R, _ = np.linalg.qr(rng.normal(size=(d, d)))
    V = rng.normal(size=(d, d))
    # y(XR^T) = y(X) R^T when the weights are conjugated by R
    f1 = build_field(SimulationConfig(n=n, d=d, beta=3.0, model=model, V=V))
    f2 = build_field(SimulationConfig(n=n, d=d, beta=3.0, model=model, V=R @ V @ R.T))
    np.testing.assert_allclose(_evaluate(f2, X @ R.T, False), _evaluate(f1, X, False) @ R.T,
                               rtol=0, atol=1e-13)


def test_projected_field_is_tangent():
    rng = np.random.default_rng(5)
    n, d = 30, 4
    X = _tokens(rng, n, d)
    field = build_field(SimulationConfig(n=n, d=d, beta=2.0, V=rng.normal(size=(d, d))))
    Y = _evaluate(field, X, False)
    project_rows(X, Y, Y)
    assert np.abs(np.einsum("id,id->i", X, Y)).max() < 1e-14


def test_fixed_points_have_zero_velocity():
    d = 3
    x = np.array([0.6, 0.0, 0.8])
    for model in ("sa", "usa"):
        # all tokens equal
        X = np.tile(x, (5, 1))
        field = build_field(SimulationConfig(n=5, d=d, beta=2.0, model=model))
        Y = _evaluate(field, X, False)
        project_rows(X, Y, Y)
        assert np.abs(Y).max() < 1e-15
        # an antipodal pair
        X = np.stack([x, -x])
        field = build_field(SimulationConfig(n=2, d=d, beta=2.0, model=model))
        Y = _evaluate(field, X, False)
        project_rows(X, Y, Y)
        assert np.abs(Y).max() < 1e-15


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 40), d=st.integers(2, 6), beta=st.floats(0, 200),
       seed=st.integers(0, 2**32 - 1))
def test_kernel_property(n, d, beta, seed):
    rng = np.random.default_rng(seed)
    X = _tokens(rng, n, d)
    field = build_field(SimulationConfig(n=n, d=d, beta=beta))
    ref = field.reference(X)
    np.testing.assert_allclose(_evaluate(field, X, False), ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("d", [3, 5, BLAS_MIN_D])
def test_loose_shift_bound_falls_back_to_exact_max(d):
    """Queries orthogonal to all keys: the Cauchy-Schwarz shift is ~beta too high,
    and the kernel must recompute the rows with their true maximum."""
    rng = np.random.default_rng(6)
    n, beta = 20, 2000.0
    X = _tokens(rng, n, d)
    Q = np.zeros((d, d))
    Q[-1, -1] = 1.0  # q_i along e_d
    K = np.eye(d)
    K[-1, -1] = 0.0  # k_j orthogonal to e_d: every score is 0
    V = rng.normal(size=(d, d))
    for model in ("sa", "usa"):
        field = build_field(SimulationConfig(n=n, d=d, beta=beta, Q=Q, K=K, V=V, model=model,
                                             usa_scale="n_exp_beta"))
        ref = field.reference(X)
        for parallel in (False, True):
            got = _evaluate(field, X, parallel)
            assert np.all(np.isfinite(got))
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * np.abs(ref).max() + 1e-300)


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("weights", [False, True])
def test_tiling_does_not_change_the_bits(d, weights):
    """A row's sums do not depend on the tile it falls in: the kernel with
    tiles of 7 rows (several chunks, a partial last tile) gives the numbers of
    one tile per system exactly, including rows that fall back to their exact
    maximum (a loose bound at large beta)."""
    from particles._numba import specialize
    from particles.fields import attention

    # cached, as every entry point a test calls from Python
    tiled = specialize(attention._attention_direct, "probe_tiled", cache=True, TILE=7)
    rng = np.random.default_rng(11)
    for n in (1, 7, 32, 33, attention.TILE):
        for beta, flat in ((3.0, False), (300.0, True)):
            field = build_field(_random_config(rng, n, d, beta, "sa", "n", weights))
            X = rng.normal(size=(n, d))
            if not flat:
                X /= np.linalg.norm(X, axis=1, keepdims=True)
            ws = np.empty(attention.workspace_size(n, d, 1, False))
            whole, out = np.empty_like(X), np.empty_like(X)
            attention.attention_direct_serial(X, field.params, whole, ws)
            tiled(X, field.params, out, np.empty(attention.workspace_size(n, d, 3, False)))
            np.testing.assert_array_equal(whole, out)


def test_tile_lanes_pad_three_or_more_rows_left_over():
    """A tile of T rows runs T lanes, or T rounded up to TILE_LANES (8) when
    the vector loop would leave PAD_FROM (3) or more rows to scalar code."""
    from particles.fields.attention import tile_lanes

    got = {T: tile_lanes.py_func(T) for T in (1, 5, 7, 8, 9, 10, 11, 15, 16, 31, 33, 34, 35, 128)}
    assert got == {1: 1, 5: 5, 7: 7, 8: 8, 9: 9, 10: 10, 11: 16, 15: 16, 16: 16, 31: 32,
                   33: 33, 34: 34, 35: 40, 128: 128}
    assert tile_lanes(31) == 32  # the compiled twin


@jit
def _no_padding(T):
    """A tile's lanes without padding: its rows (compiled into a cached kernel,
    whose entry Numba keys by attention.py only: a change here needs a new key)."""
    return T


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("weights", [False, True])
def test_padded_tiles_give_the_unpadded_bits(d, weights):
    """Padding a tile with copies of its first row changes no row's numbers:
    kernels that pad (one tile per system, and tiles of 12 rows in 3 chunks,
    padded to 16 with a partial last tile) equal the same kernels that never
    pad, bit for bit, for 1 to 7 rows left over, on the sphere and
    off it at large beta (rows that fall back to their exact maximum)."""
    from particles._numba import specialize
    from particles.fields import attention

    # (tiling itself does not change the bits, test_tiling_does_not_change_the_bits:
    # both padded kernels are held against one unpadded kernel)
    # compiled for this d only (its tile and set-up), as the package's kernels are
    dim = d if d in attention._TILES else 0
    parts = dict(TILE=12, _tile=attention._TILES[dim], _setup_identity_T=attention._SETUPS[dim])
    plain = specialize(attention._attention_direct, f"probe_nopad_d{dim}", cache=True,
                       tile_lanes=_no_padding, **parts)
    padded = (attention.direct_kernels(d)[0],
              specialize(attention._attention_direct, f"probe_pad_d{dim}", cache=True,
                         **parts))
    rng = np.random.default_rng(13)
    for n in (3, 11, 15, 18, 20, 22, 31, 37, 63, 100, 129):
        for beta, flat in ((3.0, False), (300.0, True)):
            field = build_field(_random_config(rng, n, d, beta, "sa", "n", weights))
            X = rng.normal(size=(n, d))
            if not flat:
                X /= np.linalg.norm(X, axis=1, keepdims=True)
            ref = field.reference(X)
            b = np.empty_like(X)
            plain(X, field.params, b, np.empty(attention.workspace_size(n, d, 3, False)))
            np.testing.assert_allclose(b, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())
            for kernel in padded:
                a = np.empty_like(X)
                kernel(X, field.params, a, np.empty(attention.workspace_size(n, d, 3, False)))
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("d", [2, 3, 4])
def test_finite_exp_tiles_give_the_exact_tiles_bits(d):
    """The tiles take the exp without clamps and NaN select (exp_finite); the
    same tile with the exact exp must give the same numbers, on the sphere and
    off it at large beta (shifts far above the true maxima), with equal and
    with unequal masses; the d = 2, 3 tiles give the same bits whether they
    take the masses as uniform (once per tile) or per key."""
    from particles._numba import specialize
    from particles.fastexp import exp_scalar
    from particles.fields import attention

    tile = {2: attention._tile_d2, 3: attention._tile_d3}.get(d, attention._tile_general)
    exact = specialize(tile.py_func, "probe_exact", exp_finite=exp_scalar)
    rng = np.random.default_rng(12)
    for n, beta, flat in ((5, 3.0, False), (32, 3.0, False), (128, 300.0, True)):
        X = rng.normal(size=(n, d))
        if not flat:
            X /= np.linalg.norm(X, axis=1, keepdims=True)
        field = build_field(SimulationConfig(n=n, d=d, beta=beta))
        kT = np.ascontiguousarray(X.T)
        qT = beta * kT
        norms = np.linalg.norm(X, axis=1)
        for logm in (np.full(n, -np.log(n)), np.log(rng.uniform(0.5, 2.0, n))):
            mt = beta * norms * norms.max() + logm.max()
            args = [kT, kT.copy(), logm, qT, mt]
            fast, slow = np.empty((d + 1, n)), np.empty((d + 1, n))
            if d in (2, 3):
                uniform = bool(np.all(logm == logm[0]))
                tile(*args, fast, np.empty(n), n, uniform)
                exact(*args, slow, np.empty(n), n, uniform)
                if uniform:
                    per_key = np.empty((d + 1, n))
                    tile(*args, per_key, np.empty(n), n, False)
                    np.testing.assert_array_equal(fast, per_key)
            else:
                tile(*args, fast, np.empty(n), n)
                exact(*args, slow, np.empty(n), n)
            np.testing.assert_array_equal(fast, slow)
            ref = np.exp(qT.T @ kT + logm[None, :] - mt[:, None])
            # (weights below 2^-1022 are flushed to 0.0)
            np.testing.assert_allclose(fast[0], ref.sum(axis=1), rtol=1e-12, atol=1e-300)
        assert field.params[KERNELS["edp"].slots["qk_identity"]]  # Q = K = I: as above


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("model", ["sa", "usa"])
def test_a_nan_or_infinite_token_shows_in_every_row(d, model):
    """A NaN or infinite token takes the system off the fast tiles (whose exp
    has no NaN select): a NaN token makes every output NaN, and an infinite
    one leaves a NaN in every row (never an all-finite, made-up row).  The
    NaN with payload bits would come out of that exp as a finite number."""
    from particles.fields import attention

    n = 20
    rng = np.random.default_rng(5)
    field = build_field(SimulationConfig(n=n, d=d, beta=2.0, model=model))
    serial = attention.direct_kernels(d)[0]
    payload_nan = np.array([0x7FF8000000000FFF], dtype=np.int64).view(np.float64)[0]
    for bad in (np.nan, payload_nan, np.inf, -np.inf):
        X = rng.normal(size=(n, d))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        X[7, 1] = bad
        out = np.empty_like(X)
        serial(X, field.params, out, np.empty(attention.workspace_size(n, d, 1, False)))
        if np.isnan(bad):
            assert np.all(np.isnan(out))
        assert np.all(np.isnan(out).any(axis=1))


@pytest.mark.parametrize("d", [2, 3, 4])
def test_shifts_too_large_for_the_fast_exp_take_the_exact_rows(d):
    """Tokens of norm ~1e6 give shifts above SAFE_SHIFT: every row goes through
    the exact-exp row path; still finite, the reference's numbers, and the same
    in the serial and the parallel kernel."""
    from particles.fields import attention

    rng = np.random.default_rng(13)
    for n in (20, 300):
        X = rng.normal(size=(n, d)) * 1e6
        field = build_field(SimulationConfig(n=n, d=d, beta=1.0))
        assert np.abs(X).max() ** 2 > attention.SAFE_SHIFT
        ref = field.reference(X)
        serial = _evaluate(field, X, False)
        assert np.all(np.isfinite(serial))
        np.testing.assert_allclose(serial, ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())
        np.testing.assert_array_equal(_evaluate(field, X, True), serial)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_parameter_slots_name_the_entries_python_reads(name):
    """Issue 39 item 3: Python reads a drift's parameters by name, not by slot
    number (the compiled drifts keep their positions)."""
    from particles.fields.angle import ANGLE_SLOTS, angle_params
    from particles.fields.kuramoto import KURAMOTO_SLOTS

    kernel = KERNELS[name]
    Q, K, V, logm = np.eye(2), 2 * np.eye(2), 3 * np.eye(2), np.zeros(4)
    p = kernel.params(Q, K, V, logm, 1.5, True, 0.25, True, False, 0.125)
    slots = kernel.slots
    assert len(p) == len(slots)
    assert p[slots["Q"]] is Q and p[slots["K"]] is K and p[slots["V"]] is V
    assert p[slots["log_masses"]] is logm and p[slots["param"]] == 1.5
    assert p[slots["qk_identity"]] is True and p[slots["v_identity"]] is False
    assert p[slots["inv_mass"]] == 0.125
    assert ("usa_shift" in slots) == kernel.time_change
    omega = np.arange(4.0)
    a = angle_params(4, 2.0, 0.5, omega, "n", None)
    assert len(a) == len(ANGLE_SLOTS) and a[ANGLE_SLOTS["coupling"]] == 0.5
    np.testing.assert_array_equal(a[ANGLE_SLOTS["omega"]], omega)
    field = build_field(SimulationConfig(n=4, d=2, beta=0.0, model="kuramoto", coupling=0.5,
                                         omega=tuple(omega), seed=0))
    assert len(field.params) == len(KURAMOTO_SLOTS)
    assert field.params[KURAMOTO_SLOTS["coupling"]] == 0.5
    np.testing.assert_array_equal(field.params[KURAMOTO_SLOTS["omega"]], omega)
