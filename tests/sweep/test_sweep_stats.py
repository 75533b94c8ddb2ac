"""The sweep's per-frame statistics (issue 14, performance): the compiled pass of
:func:`particles.observables.pairs.frame_statistics` (bitmask clusters for
n <= MASK_MAX_N, a union-find above) against the components detector, the
close-pair twin and the energy observable, on random, clustered and chained
inputs (links just inside and just outside eps), at every word boundary of the
masks and through the union-find fallback; the spread rule (a component wider
than 90 degrees counts 0, issue 28) against its NumPy twin."""

from __future__ import annotations

import numpy as np
import pytest

from particles.analysis.components import component_labels
from particles.observables import compute_observables
from particles.observables import pairs as pair_pass
from particles.observables.pairs import MASK_MAX_N, close_pairs_reference, frame_statistics
from particles.observables.spread import wide_systems, wide_systems_reference

NS = (1, 2, 31, 32, 33, 64, 65, 130)
DS = (2, 3, 8)
#: five thresholds (1 - delta), the last a hair below 1 (coinciding tokens)
DELTAS = np.array([0.5, 0.1, 0.01, 0.001, 1e-12])


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _chain(n: int, d: int, steps: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Tokens along a great circle at the angular steps given (n - 1 of them),
    rotated by a random orthogonal matrix so every coordinate is used."""
    theta = np.concatenate([[0.0], np.cumsum(steps)])[:n]
    x = np.zeros((n, d))
    x[:, 0], x[:, 1] = np.cos(theta), np.sin(theta)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return _unit(x @ q)


def frames(n: int, d: int, eps: float, seed: int = 0) -> np.ndarray:
    """A batch of systems (m, n, d): uniform ones, tight clusters (with
    coinciding tokens), and chains whose links are just inside, just outside
    or at eps, or a random mix of the two (so components of every size)."""
    rng = np.random.default_rng([seed, n, d])
    out = [_unit(rng.standard_normal((n, d))) for _ in range(3)]
    for k in (1, 2, 3, 5, 9):
        centres = _unit(rng.standard_normal((k, d)))
        x = centres[rng.integers(0, k, n)] + rng.standard_normal((n, d)) * eps / 20
        if n > 3:
            x[1] = x[0]
            x[n // 2:n // 2 + 2] = x[n - 1]
        out.append(_unit(x))
    for scale in (1 - 1e-9, 1 + 1e-9, 1.0):
        out.append(_chain(n, d, np.full(max(n - 1, 0), eps * scale), rng))
    for _ in range(3):
        signs = rng.choice([-1.0, 1.0], size=max(n - 1, 0), p=[0.7, 0.3])
        out.append(_chain(n, d, eps * (1 + signs * 1e-9), rng))
    return np.ascontiguousarray(np.stack(out))


def check(x: np.ndarray, eps: float, beta: float, masses: np.ndarray) -> np.ndarray:
    pairs, counts, energy = frame_statistics(x, DELTAS, eps, beta, masses)
    labels, components = component_labels(x, eps)
    # the spread rule: a component wider than 90 degrees makes the count 0
    wide = wide_systems_reference(x, labels)
    assert np.array_equal(wide_systems(x, labels), wide)
    assert np.array_equal(counts, np.where(wide, 0, components))
    assert np.array_equal(pairs, close_pairs_reference(x, DELTAS))
    ref = compute_observables(x, beta, masses)["energy"]
    # beta > 0: positive terms, relative; beta = 0: terms of size 1, absolute
    np.testing.assert_allclose(energy, ref, rtol=1e-12, atol=0.0 if beta > 0 else 1e-13)
    return counts


@pytest.mark.parametrize("d", DS)
@pytest.mark.parametrize("n", NS)
def test_statistics_match_the_detector_the_twin_and_the_observable(n, d):
    seen = set()
    for eps in (0.05, 0.3):
        x = frames(n, d, eps)
        for beta, masses in ((2.0, np.ones(n)), (0.0, np.ones(n)),
                             (0.7, np.linspace(0.5, 2.0, n))):
            seen.update(check(x, eps, beta, masses).tolist())
    if n >= 31:  # chains and clusters give components of many sizes, and spread chains
        assert 1 in seen and 0 in seen and len(seen) > 6, sorted(seen)
    if 31 <= n <= 64:  # chains shorter than the circle: links just outside eps
        assert n in seen, sorted(seen)


@pytest.mark.parametrize("n", (1, 2, 3, 5, 32, 33, 64))
def test_the_union_find_fallback_agrees_below_its_threshold(monkeypatch, n):
    """The large-n path (MASK_MAX_N is a module constant: 0 sends every n
    through it) gives the same counts and pairs as the bitmask path, and the
    detector's."""
    assert MASK_MAX_N >= 64
    for d in (2, 3, 8):
        x = frames(n, d, 0.05, seed=1)
        m = np.linspace(1.0, 3.0, n)
        fast = frame_statistics(x, DELTAS, 0.05, 1.5, m)
        monkeypatch.setattr(pair_pass, "MASK_MAX_N", 0)
        check(x, 0.05, 1.5, m)
        check(x, 0.05, 0.0, np.ones(n))
        slow = frame_statistics(x, DELTAS, 0.05, 1.5, m)
        monkeypatch.undo()
        assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
        np.testing.assert_allclose(fast[2], slow[2], rtol=1e-13)


def test_pair_weights_follow_the_buffer_order():
    """The masses of the packed pairs (diagonals of the circulant, the repeated
    half of the last one left out) are those of every pair i < j once."""
    for n in (1, 2, 5, 8, 33):
        m = np.arange(1.0, n + 1) ** 1.5
        w = pair_pass._pair_weights(m)
        iu = np.triu_indices(n, 1)
        assert w.shape == (n * (n - 1) // 2,)
        np.testing.assert_allclose(np.sort(w), np.sort(m[iu[0]] * m[iu[1]]), rtol=1e-15)
