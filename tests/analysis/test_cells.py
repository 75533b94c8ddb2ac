"""The O(n log n) components (cells and a KD-tree) against the pair loop's
NumPy twin: the same labels on every constructed fixture, on clustered frames
of every tightness, and for pairs exactly at eps."""

from __future__ import annotations

import numpy as np
import pytest
from synthetic import collapsing

from particles.analysis import ClusterDetector, component_labels
from particles.analysis.cells import cell_labels, cell_side, use_cells
from particles.analysis.components import component_labels_reference
from particles.sphere import normalize, uniform

EPS = 0.05
COS = float(np.cos(EPS))


def frames_of_varied_tightness(n: int, seed: int) -> np.ndarray:
    """Clusters on S^2 of spreads 1e-6 to 0.3 rad, some pairs of them closer than
    eps, with a uniform background: (4, n, 3)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(4):
        k = 40
        c = normalize(rng.normal(size=(k, 3)))
        c[1::2] = normalize(c[::2] + 0.04 * rng.normal(size=(k // 2, 3)))  # neighbours
        spread = 10.0 ** rng.uniform(-6, -0.5, k)
        w = rng.integers(0, k, n)
        x = normalize(c[w] + spread[w, None] * rng.normal(size=(n, 3)))
        x[: n // 10] = normalize(rng.normal(size=(n // 10, 3)))
        out.append(x)
    return np.stack(out)


def test_cells_give_the_pair_loops_components_on_clustered_frames():
    for x in frames_of_varied_tightness(2000, seed=3):
        labels, k = cell_labels(x, COS)
        ref = component_labels_reference(x, EPS)
        np.testing.assert_array_equal(labels, ref)
        assert k == ref.max() + 1
    # through the detector, which takes the cells at this n on S^2
    x = frames_of_varied_tightness(2000, seed=4)
    assert use_cells(2000, 3)
    det = ClusterDetector(EPS).compute(x)
    for s in range(x.shape[0]):
        np.testing.assert_array_equal(det.labels[s], component_labels_reference(x[s], EPS))


@pytest.mark.parametrize("d", [2, 3, 4, 8, 16])
def test_cells_on_every_constructed_fixture(d):
    rng = np.random.default_rng(d)
    systems = [collapsing(d).positions, collapsing(d, n=300, batch=3).positions.reshape(-1, 300, d),
               uniform(1000, d, rng=rng)[None],
               normalize(rng.normal(size=(4, d)))[rng.integers(0, 4, 500)][None]]
    for stack in systems:
        for x in stack:
            np.testing.assert_array_equal(cell_labels(x, COS)[0],
                                          component_labels_reference(x, EPS))


def test_a_pair_exactly_at_eps_is_decided_as_the_pair_loop_decides_it():
    # <x_0, x_1> = cos(eps) exactly in floating point (1 * c + 0 * s): not linked;
    # one ulp more: linked; the rest of the tokens far away in one tight cluster
    c = COS
    s = float(np.sqrt(1 - c * c))
    far = normalize(np.array([-1.0, 0.3, 0.2]) + 1e-4 * np.random.default_rng(0).normal(
        size=(1500, 3)))
    for cx, linked in ((c, False), (np.nextafter(c, 2.0), True)):
        x = np.vstack([[[1.0, 0.0, 0.0], [cx, s, 0.0]], far])
        assert (x[0] @ x[1] > COS) == linked
        labels = cell_labels(x, COS)[0]
        assert (labels[0] == labels[1]) == linked
        np.testing.assert_array_equal(labels, component_labels_reference(x, EPS))
        np.testing.assert_array_equal(component_labels(x, EPS)[0], labels)


def test_tokens_off_the_sphere_fall_back_to_the_pair_loop():
    rng = np.random.default_rng(5)
    x = 0.5 * uniform(1200, 3, rng=rng)  # |x|^2 = 0.25 < cos(eps): no safe cell
    assert cell_side(x, COS)[0] == 0.0
    with pytest.raises(ValueError, match="no cell size"):
        cell_labels(x, COS)
    np.testing.assert_array_equal(component_labels(x, EPS)[0], component_labels_reference(x, EPS))
    y = 1.5 * uniform(1200, 3, rng=rng)  # longer vectors: cells, still the same decisions
    np.testing.assert_array_equal(cell_labels(y, COS)[0], component_labels_reference(y, EPS))
