"""The kernels' helpers: scratch views, exact reductions, serial twins of
parallel entry points and kernels compiled for one d."""

import numpy as np
import pytest

import particles._numba as nb
from particles._numba import jit, view2d
from particles.fields import attention

# (compiling _carve rebinds this module's `view2d` to the intrinsic, as for
# every kernel module; Python calls go through nb.view2d)


@jit
def _carve(ws, rows, cols, offset):
    v = view2d(ws[offset:], rows, cols)
    v[rows - 1, cols - 1] = -1.0
    return v.copy(), v.strides[0], v.strides[1]


def test_view2d_is_the_reshape_of_the_slice_and_writes_through():
    ws = np.arange(30.0)
    got, s0, s1 = _carve(ws, 3, 4, 5)
    want = np.arange(30.0)[5:17].reshape(3, 4)
    want[2, 3] = -1.0
    np.testing.assert_array_equal(got, want)
    assert (s0, s1) == (32, 8)
    assert ws[16] == -1.0  # a view, not a copy
    np.testing.assert_array_equal(nb.view2d(np.arange(6.0), 2, 3), np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("rows, cols", [(4, 4), (-1, 2), (2, -1)])
def test_view2d_refuses_views_the_array_cannot_hold(rows, cols):
    with pytest.raises(ValueError, match="too short"):
        _carve(np.zeros(15), rows, cols, 0)
    with pytest.raises(ValueError, match="too short"):
        nb.view2d(np.zeros(15), rows, cols)


def test_max4_is_the_maximum_for_every_tail_length():
    rng = np.random.default_rng(3)
    for n in range(0, 13):
        x = rng.normal(size=n)
        assert attention._max4(x, n, -np.inf) == (x.max() if n else -np.inf)
        assert attention._max4(x, n, 10.0) == 10.0


def test_blas_blocks_depend_on_the_system_alone():
    """Small blocks while keys and values stay in cache, large ones beyond, and
    the workspace sized for the same block."""
    assert attention.blas_block.py_func(1024, 16) == attention.BLOCK_MIN
    assert attention.blas_block.py_func(4096, 64) == attention.BLOCK
    assert attention.blas_block.py_func(8192, 8) == attention.BLOCK_SCORES // 8192
    assert attention.blas_block(1024, 16) == attention.blas_block.py_func(1024, 16)
    n, d = 4096, 64
    size = attention.workspace_size(n, d, 2, True)
    assert size == 3 * n * d + n + 2 * attention.BLOCK * (n + d)


@pytest.mark.parallel
def test_one_thread_runs_the_serial_twin_with_the_same_bits():
    import numba

    from particles.observables.order import _order_sums

    rng = np.random.default_rng(5)
    X = rng.normal(size=(9, 7, 3))
    m = rng.uniform(0.5, 2.0, size=7)
    threads = numba.get_num_threads()
    got = {}
    try:
        for nt in (1, threads):
            numba.set_num_threads(nt)
            order, mean_ip = np.empty(9), np.empty(9)
            _order_sums(X, m, order, mean_ip)
            got[nt] = (order, mean_ip)
    finally:
        numba.set_num_threads(threads)
    assert _order_sums.serial.signatures  # the one-thread call took the twin
    for a, b in zip(got[1], got[threads], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("d", [2, 3])
def test_kernels_for_one_d_give_the_any_d_numbers(d):
    from particles.config import SimulationConfig
    from particles.models import build_field

    rng = np.random.default_rng(6)
    serial, parallel = attention.direct_kernels(d)
    assert serial is not attention.attention_direct_serial
    for n, beta, flat in ((5, 2.0, False), (140, 300.0, True)):
        field = build_field(SimulationConfig(n=n, d=d, beta=beta))
        X = rng.normal(size=(n, d))
        if not flat:
            X /= np.linalg.norm(X, axis=1, keepdims=True)
        ws = np.empty(attention.workspace_size(n, d, 2, False))
        outs = [np.empty_like(X) for _ in range(3)]
        attention.attention_direct_serial(X, field.params, outs[0], ws)
        serial(X, field.params, outs[1], ws)
        parallel(X, field.params, outs[2], ws)
        np.testing.assert_array_equal(outs[0], outs[1])
        np.testing.assert_array_equal(outs[0], outs[2])
    other = np.ones((4, 5 - d))
    field = build_field(SimulationConfig(n=4, d=5 - d, beta=1.0))
    with pytest.raises(ValueError, match="another d"):
        serial(other, field.params, np.empty_like(other),
               np.empty(attention.workspace_size(4, 5 - d, 1, False)))


@pytest.mark.parametrize("d", [2, 3, 4])
def test_identity_setup_is_the_generic_prepare_and_bounds_bit_for_bit(d):
    """The one-pass set-up for Q = K = V = I (specialised for d, and for any d)
    gives the queries, keys and shifts of _prepare_T and _bounds_T exactly,
    and their flags (uniform masses or not, shifts safe or not)."""
    rng = np.random.default_rng(d)
    n, beta = 37, 2.5
    none = np.zeros((0, 0))
    for scale, logm in ((1.0, np.full(n, -np.log(n))), (1.0, np.log(rng.uniform(0.5, 2.0, n))),
                        (1e7, np.zeros(n))):
        X = scale * rng.normal(size=(n, d))
        qT, kT, vT, bound = (np.empty((d, n)), np.empty((d, n)), np.empty((d, n)),
                             np.empty(n))
        attention._prepare_T(X, none, none, none, beta, True, True, qT, kT, vT)
        attention._bounds_T(qT, kT, logm, bound)
        flags = attention._system_flags(bound, logm)
        assert flags[1] == (logm == logm[0]).all()
        assert flags[0] == (scale == 1.0)
        for setup in {attention._SETUPS[0], attention._SETUPS.get(d, attention._SETUPS[0])}:
            q2, k2, b2 = np.empty((d, n)), np.empty((d, n)), np.empty(n)
            assert setup(X, beta, logm, q2, k2, np.empty(n), b2) == flags
            for got, want in ((q2, qT), (k2, kT), (k2, vT), (b2, bound)):
                np.testing.assert_array_equal(got, want)


def _template(x):
    return x


def test_the_optimisation_level_is_part_of_a_cached_name(monkeypatch):
    """Numba's cache key omits NUMBA_OPT: entries compiled at another level
    (the test suite's 1) carry it in their names, never served to a default run."""
    from particles._numba import SOURCE_HASH, opt_suffix, specialize

    for level, suffix in (("1", "_O1"), ("0", "_O0"), ("max", "_Omax"), ("3", ""), ("", "")):
        monkeypatch.setenv("NUMBA_OPT", level)
        assert opt_suffix() == suffix
        name = specialize(_template, "k", cache=True).py_func.__qualname__
        assert name == f"_template__k__{SOURCE_HASH}{suffix}"
    monkeypatch.delenv("NUMBA_OPT")
    assert opt_suffix() == ""
