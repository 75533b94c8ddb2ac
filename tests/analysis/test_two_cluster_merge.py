"""two_cluster_merge_time: the merge time of two clusters on the circle (issue 27, fig. 5)
against a located merge of the simulation, and its large-beta law."""

from __future__ import annotations

import math

import numpy as np
import pytest

from particles import simulate
from particles.analysis import two_cluster_merge_time


def _pair(phi: float) -> np.ndarray:
    a = np.array([-phi / 2, phi / 2])
    return np.stack([np.cos(a), np.sin(a)], axis=1)


@pytest.mark.parametrize("masses", [None, (1.0, 3.0)])
def test_matches_the_located_merge_of_two_tokens(masses):
    phi, beta = 2.0, 5.0
    traj = simulate(2, 2, beta, integrator="dopri5", rtol=1e-10, T=1e6, summation="auto",
                    save_times="log:0.01:1e6:40", until_clusters=1, merge_events=True,
                    x0=_pair(phi), masses=masses)
    assert traj.stop_reason == "until_clusters"
    (merge,) = traj.merge_events
    assert (merge.before, merge.after) == (2, 1)
    theory = two_cluster_merge_time(beta, phi, masses=masses or (1.0, 1.0))
    assert merge.time == pytest.approx(theory, rel=1e-5)


def test_the_law_log_t_beta_one_minus_cos_phi():
    phi = 1.2
    exact = [two_cluster_merge_time(b, phi) for b in (20.0, 40.0)]
    law = [two_cluster_merge_time(b, phi, asymptotic=True) for b in (20.0, 40.0)]
    # the prefactor's error is O(1/beta): the ratio goes to 1
    assert abs(exact[1] / law[1] - 1) < abs(exact[0] / law[0] - 1) < 0.15
    slope = (math.log(40 * exact[1]) - math.log(20 * exact[0])) / 20
    assert slope == pytest.approx(1 - math.cos(phi), rel=0.02)


def test_only_the_mass_ratio_matters_and_it_is_symmetric():
    a = two_cluster_merge_time(4.0, 1.5, masses=(1.0, 2.0))
    assert a == pytest.approx(two_cluster_merge_time(4.0, 1.5, masses=(6.0, 3.0)), rel=1e-9)
    assert a < two_cluster_merge_time(4.0, 1.5)  # a heavier partner pulls harder


@pytest.mark.parametrize("kw", [dict(beta=0.0, phi=1.0), dict(beta=1.0, phi=0.01),
                                dict(beta=1.0, phi=4.0), dict(beta=1.0, phi=1.0, masses=(1, 0))])
def test_bad_input_is_refused(kw):
    with pytest.raises(ValueError, match="need beta > 0"):
        two_cluster_merge_time(**kw)
