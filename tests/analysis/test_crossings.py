"""first_crossing (particles.analysis.crossings) against its plain-loop twin and by hand."""

import numpy as np
import pytest

from particles.analysis import first_crossing
from particles.analysis.crossings import first_crossing_reference


def test_linear_interpolation_by_hand():
    x = np.array([0.0, 1.0, 2.0, 4.0])
    assert first_crossing(x, [0.0, 0.2, 0.6, 1.0], 0.5) == pytest.approx(1.75)
    assert first_crossing(x, [1.0, 0.8, 0.4, 0.0], 0.5, rising=False) == pytest.approx(1.75)
    assert first_crossing(x, [0.0, 0.5, 0.9, 1.0], 0.5) == 1.0  # reached at a sample
    # never, or already at the first sample: not a sampled crossing
    assert np.isnan(first_crossing(x, [0.0, 0.1, 0.2, 0.3], 0.5))
    assert np.isnan(first_crossing(x, [0.7, 0.1, 0.9, 1.0], 0.5))
    assert np.isnan(first_crossing([3.0], [0.0], 0.5))


@pytest.mark.parametrize("rising", [True, False])
def test_rows_equal_the_loop(rising):
    rng = np.random.default_rng(4)
    x = np.cumsum(rng.random(30)) + 1.0
    y = np.cumsum(rng.standard_normal((5, 7, 30)), axis=-1) * (1 if rising else -1)
    got = first_crossing(x, y, 1.5 if rising else -1.5, rising=rising)
    expected = first_crossing_reference(x, y, 1.5 if rising else -1.5, rising=rising)
    assert got.shape == (5, 7)
    assert np.isfinite(got).any() and np.isnan(got).any()
    np.testing.assert_array_equal(got, expected)


def test_bad_axes():
    with pytest.raises(ValueError, match="shape"):
        first_crossing([0.0, 1.0], [[0.0, 1.0, 2.0]], 0.5)
    with pytest.raises(ValueError, match="increasing"):
        first_crossing([0.0, 0.0, 1.0], [0.0, 1.0, 2.0], 0.5)
