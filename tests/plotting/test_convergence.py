"""The convergence panels of particles against the mean field (plot_convergence)."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from particles.plotting.convergence import fitted_slope, plot_convergence


def test_an_exact_power_law_is_fitted_and_drawn():
    ns = np.array([100, 1000, 10000])
    times = np.array([0.0, 0.5, 1.0])
    distance = 0.3 * ns[:, None] ** -0.5 * (1 + times[None, :])
    assert fitted_slope(ns, 2.0 * ns**-0.75) == pytest.approx((-0.75, np.log(2.0)))
    ax_t, ax_n = Figure().subplots(1, 2)
    slope = plot_convergence(times, ns, distance, ax_t, ax_n, name="sliced W1", where="on S^2")
    assert slope == pytest.approx(-0.5)
    assert [line.get_label() for line in ax_t.lines] == ["n = 100", "n = 1,000", "n = 10,000"]
    labels = [line.get_label() for line in ax_n.lines]
    assert labels == ["time average", "t = 1", "fit: slope -0.500", "theory: slope -1/2"]
    np.testing.assert_allclose(ax_n.lines[0].get_ydata(), distance.mean(axis=1))
    assert ax_n.get_title() == "sliced W1 against n on S^2"
    assert ax_t.get_yscale() == "log" and ax_n.get_xscale() == "log"
