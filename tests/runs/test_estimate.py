"""The cost of a run before it starts (particles.runs.estimate, issue 15 item 9;
its time, with adaptive steps probed, issue 28 item 3), the lazy frame count
of the reader, and the scaled normalisation of initial rows (issue 15 item 10)."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from particles.config import SimulationConfig
from particles.engine import run
from particles.io.h5md import expected_frames
from particles.runs import run_to_file
from particles.runs.estimate import Estimate, check_fits, estimate, estimate_values
from particles.runs.probe import _extrapolate, machine_speed, probe_steps, probed_estimate
from particles.sphere.checks import unit_rows


@pytest.mark.parametrize("T,dt,save_every", list(itertools.product(
    [0.0, 0.1, 1.0, 2.5, 7.77, 30.0], [0.01, 0.001, 0.3, 0.0123], [1, 3, 10])))
def test_expected_frames_is_the_length_of_the_output_times(T, dt, save_every):
    config = SimulationConfig(n=2, d=2, beta=1.0, T=T, dt=dt, save_every=save_every)
    assert expected_frames(config) == len(config.output_times())


@pytest.mark.parametrize("spec", ["lin:0:1:5", "log:0.01:1:7", "0.5,1", "0,0.25,1"])
def test_expected_frames_of_save_times(spec):
    config = SimulationConfig(n=2, d=2, beta=1.0, T=1.0, save_times=spec)
    assert expected_frames(config) == len(config.output_times())


def test_huge_configurations_are_estimated_without_allocating():
    est = estimate(SimulationConfig(n=10**12, d=3, beta=1.0, T=1e12, dt=0.01, save_every=1))
    assert est.frames == 10**14 + 1
    assert est.memory_bytes > 10**15 and est.output_bytes > 10**18
    with pytest.raises(ValueError, match="memory"):
        check_fits(est)


def test_estimate_values_before_a_config_exists():
    est = estimate_values({"n": 10, "d": 10**6, "save_times": "lin:0:1:1000000000000"})
    assert est.frames == 10**12
    with pytest.raises(ValueError, match="memory"):
        check_fits(est)
    check_fits(estimate_values({"n": 10, "d": 3, "heads": "bad", "batch": None}))


def test_estimate_of_a_small_run_matches_its_file(tmp_path):
    config = SimulationConfig(n=64, d=3, beta=1.0, T=1.0, dt=0.01, save_every=1, seed=2,
                              integrator="euler")
    est = estimate(config)
    check_fits(est, tmp_path / "run.h5")
    assert isinstance(est, Estimate) and est.frames == 101 and est.steps == 100
    size = run_to_file(config, tmp_path / "run.h5").path.stat().st_size
    assert size / 3 < est.output_bytes < 3 * size
    text = "\n".join(est.lines())
    assert "memory" in text and "output" in text and "time" in text


def test_ordinary_rows_normalised_bit_for_bit_as_before():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal((500, 5)) * 10.0 ** rng.integers(-100, 100, (500, 1)),
                        rng.standard_normal((50, 5)) / np.linalg.norm(
                            rng.standard_normal((50, 5)), axis=-1, keepdims=True)])
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    before = np.where(np.abs(norms - 1.0) > 4 * np.finfo(np.float64).eps, x / norms, x)
    assert unit_rows(x).tobytes() == before.tobytes()


@pytest.mark.parametrize("scale", [1e200, 1e300, 1e-170, 1e-300, 5e-324])
def test_rows_of_any_scale_reach_the_sphere(scale):
    x = np.array([[3.0, 4.0, 0.0], [1.0, 1.0, 1.0]]) * scale
    y = unit_rows(x)
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), 1.0, rtol=1e-15)
    assert np.all(np.isfinite(y))


@pytest.mark.parametrize("x,fragment", [
    (np.zeros((2, 3)), "nonzero"),
    (np.array([[1.0, np.nan, 0]]), "finite"),
    (np.array([[1.0, 0, 0]], dtype=complex), "real"),
    (np.array([["a", "b"]]), "numeric"),
])
def test_rows_refused(x, fragment):
    with pytest.raises(ValueError, match=fragment):
        unit_rows(x)


# ------------------------------------------- issue 28 item 3: honest time estimates
def test_kuramoto_costs_O_n_per_evaluation():
    kura = [estimate(SimulationConfig(n=n, d=2, beta=0.0, model="kuramoto", T=1.0, dt=0.01,
                                      save_every=100, observables="order")).seconds
            for n in (10**5, 2 * 10**5)]
    sa = [estimate(SimulationConfig(n=n, d=2, beta=1.0, T=1.0, dt=0.01, save_every=100,
                                    observables="order", summation="direct")).seconds
          for n in (10**5, 2 * 10**5)]
    assert kura[1] / kura[0] == pytest.approx(2.0, rel=0.05)  # O(n), not O(n^2)
    assert sa[1] / sa[0] == pytest.approx(4.0, rel=0.05)
    assert kura[0] < sa[0] / 1000


def test_the_estimate_reads_the_steps_and_their_cost_from_the_plan(monkeypatch):
    """Issue 39 item 2: the steps and the cost of a step are facts of the plan
    (:class:`particles.plan.Facts`), which the estimate reads, not recomputes."""
    from particles.plan import Facts

    cfg = SimulationConfig(n=64, d=3, beta=1.0, T=1.0, dt=0.1, observables="order")
    monkeypatch.setattr(Facts, "steps", property(lambda self: 7))
    monkeypatch.setattr(Facts, "evaluation_cost", lambda self, n=None: 1.0)
    est = estimate(cfg)
    assert est.steps == 7
    assert est.seconds == pytest.approx(7 * 4 * 1.0, rel=1e-3)  # rk4: 4 evaluations


def test_an_unprobed_adaptive_count_is_a_bound_and_says_so():
    fixed = estimate(SimulationConfig(n=64, d=3, beta=1.0, T=1.0, integrator="rk4"))
    adaptive = estimate(SimulationConfig(n=64, d=3, beta=1.0, T=1.0, integrator="dopri5"))
    assert not fixed.bound and "an estimate" in fixed.lines()[-1]
    assert adaptive.bound and "upper bound" in adaptive.lines()[-1]
    assert "initial dt" in adaptive.lines()[1]


@pytest.mark.parametrize("save", [{"save_every": 5}, {"save_times": "log:0.01:3:12"}])
def test_a_probe_of_a_small_run_counts_its_steps_exactly(save):
    config = SimulationConfig(n=12, d=3, beta=4.0, T=3.0, dt=0.01, seed=5,
                              integrator="dopri5", **save)
    probe = probe_steps(config, seconds=30.0)  # the whole run: n <= the proxy's tokens
    traj = run(config)
    tried = traj.observables["accepted_steps"][-1] + traj.observables["rejected_steps"][-1]
    assert probe.complete and probe.tokens == 12 and probe.steps == tried
    est = probed_estimate(config, seconds=30.0)
    assert not est.bound and est.steps == tried and "probe" in est.lines()[1]


def test_a_probe_is_for_adaptive_steps():
    with pytest.raises(ValueError, match="fixed steps"):
        probe_steps(SimulationConfig(n=4, d=3, beta=1.0, integrator="rk4"))


def test_the_time_is_at_this_machines_measured_speed():
    """A machine three to four times as fast as the reference (AVX-512) is
    estimated at its own speed: the drift timed on one thread scales the steps'
    and the frames' time, and the time line says so."""
    config = SimulationConfig(n=300, d=3, beta=1.0, T=1.0, dt=0.05, integrator="rk4", seed=2)
    plain, doubled = estimate(config), estimate(config, speed=2.0)
    assert doubled.seconds == pytest.approx(2 * plain.seconds)
    assert plain.speed is None and "reference machine" in plain.lines()[-1]
    speed = machine_speed(config, seconds=0.05)
    assert 0.02 < speed < 50  # a machine, not a unit error
    est = probed_estimate(config)
    assert est.speed is not None and "timed here" in est.lines()[-1]
    assert est.steps == plain.steps and est.frames == plain.frames


# ------------------------------ issue 38 item 7: the growth of the steps, collapse
def _rows_of(h, stops: np.ndarray) -> list[tuple[float, int, int]]:
    """Rows ``(time, attempts, points)`` of a run whose step is ``h(t)``,
    stopped at ``stops``: attempts counted as the integral of dt / h."""
    t = np.linspace(0.0, stops[-1], 2_000_001)
    attempts = np.concatenate([[0.0], np.cumsum(np.diff(t) / h(t[:-1]))])
    return [(float(s), round(float(np.interp(s, t, attempts))), 64) for s in stops]


def test_the_steps_past_a_probe_lie_between_growing_on_and_staying():
    """A metastable run's steps grow like t, then stay at the stability limit
    (here h = t/20 to t = 60, then 3, as SA's on the circle): a probe that saw
    the plateau counts the rest within 3x; one that stopped while they grow
    counts the geometric mean of growing on and staying, or bounds it by
    staying where those differ by more than 9x."""
    def h(t):
        return np.minimum(t / 20 + 0.005, 3.0)

    T = 1e4
    truth = _rows_of(h, np.array([0.0, T]))[-1][1]
    log = 10.0 ** np.arange(-2, 4.01, 1 / 8)
    for reached, counted in ((1000.0, True), (300.0, True), (30.0, False), (0.05, False)):
        rows = _rows_of(h, np.concatenate([[0.0], log[log <= reached]]))
        rest, growth, bound, staying, growing = _extrapolate(rows, T)
        total = rows[-1][1] + rest
        assert bound is not counted, (reached, growth)
        assert 0.0 <= growing <= staying
        if counted:
            assert truth / 3 < total < 3 * truth, (reached, total, truth)
            assert total == pytest.approx(np.sqrt((rows[-1][1] + growing)
                                                  * (rows[-1][1] + staying)))
        else:
            assert total >= truth and rest == staying
    assert _extrapolate(rows, rows[-1][0]) == (0.0, None, False, 0.0, 0.0)
    # save times closer than the steps set them: one each, counted, not a bound
    grid = [(0.01 * i, i, 64) for i in range(200)]
    rest, growth, bound, staying, _ = _extrapolate(grid, 100.0, floor=10000 - 199)
    assert growth is None and not bound and rest == staying == 10000 - 199


def test_a_probe_stopped_at_once_says_its_time_is_a_bound():
    config = SimulationConfig(n=200, d=2, beta=9.0, T=1000.0, save_times="log:0.01:1000:30",
                              integrator="dopri5", seed=2, collapse_tol=0.0)
    complete = probe_steps(config, seconds=60.0)
    stopped = probe_steps(config, seconds=0.0)  # stops after its second save time
    assert complete.complete and not stopped.complete and stopped.bound
    assert stopped.steps >= complete.steps
    est = probed_estimate(config, seconds=0.0)
    assert est.bound and "upper bound" in est.lines()[-1] and "last rate" in est.lines()[1]


def test_a_proxy_smaller_than_a_spectral_run_sums_directly():
    """The series costs a 64-token proxy as much as the run (its degree is the
    run's): the proxy of a spectral run is the proxy of the direct one."""
    spectral = SimulationConfig(n=1000, d=3, beta=9.0, T=20.0, save_times="log:0.01:20:20",
                                integrator="dopri5", seed=4, summation="spectral",
                                collapse_tol=0.0)
    direct = spectral.replace(summation="direct", tol=1e-12)
    assert probe_steps(spectral, seconds=60.0).steps == probe_steps(direct, seconds=60.0).steps


def test_a_collapsing_run_is_probed_by_several_proxies_and_shows_their_spread():
    """When coincident tokens collapse is round-off's lottery: other proxies
    draw it again; the time is their mean, their least and most are shown."""
    config = SimulationConfig(n=200, d=2, beta=9.0, T=300.0, save_times="log:0.01:300:30",
                              integrator="dopri5", seed=3)
    probe = probe_steps(config, seconds=5.0)
    assert probe.complete and len(probe.shares) > 1
    assert probe.work / probe.steps == pytest.approx(np.mean(probe.shares))
    est = probed_estimate(config, seconds=5.0)
    low, high = est.spread
    assert low <= est.seconds <= high and low < high
    assert "early or late" in est.lines()[-1] and "probes of other tokens" in est.lines()[1]
    plain = probed_estimate(config.replace(collapse_tol=0.0), seconds=5.0)
    assert plain.spread is None and "early or late" not in plain.lines()[-1]


def _measured(config: SimulationConfig) -> float:
    """Seconds of ``run(config)`` once compiled, the shorter of two runs."""
    run(config.replace(T=config.T / 50, save_times=None))  # compiles (or loads) its kernels
    out = []
    for _ in range(2):
        start = time.perf_counter()
        run(config)
        out.append(time.perf_counter() - start)
    return min(out)


@pytest.mark.slow
@pytest.mark.parametrize("config", [
    SimulationConfig(n=400, d=3, beta=4.0, T=2.0, dt=0.01, save_every=10, integrator="rk4",
                     seed=1),
    SimulationConfig(n=300, d=2, beta=9.0, T=1000.0, dt=0.01, save_times="log:0.01:1000:60",
                     integrator="dopri5", seed=1, collapse_tol=0.0),
    SimulationConfig(n=20000, d=2, beta=0.0, model="kuramoto", T=5.0, dt=0.01,
                     save_every=10, integrator="rk4", omega="gaussian:0.5", seed=1),
    SimulationConfig(n=2000, d=3, beta=9.0, T=100.0, save_times="log:0.01:100:40",
                     integrator="dopri5", rtol=1e-6, summation="auto", seed=1),
], ids=["fixed-step", "dopri5", "kuramoto", "sphere-spectral-collapsing"])
def test_estimates_of_real_runs_are_within_3x_of_their_time(config):
    """Issue 28 acceptance: a fixed-step run, a dopri5 run (steps probed) and a
    Kuramoto run, each estimated within a factor of 3 of its measured time (one
    Numba thread, as the estimate counts); issue 38: a spectral run on S^2
    whose tokens collapse (its clusters do so at t = 37-47 at any n), the
    shape of ``--n 10000 --d 3 --beta 9 --T 1000 --summation auto`` (estimated
    14 h, run in 2 min) at a fifth of its tokens and a tenth of its time."""
    est = probed_estimate(config)
    measured = _measured(config)
    assert measured / 3 < est.seconds < 3 * measured, (est.seconds, measured, est.lines())


@pytest.mark.slow
def test_a_collapsing_run_on_the_circle_takes_a_time_in_its_estimated_spread():
    """Issue 38: SA at beta = 9 on the circle to T = 10^4 collapses at t = 35 in
    one run and never in another (round-off's lottery; 1.3 s estimated, 7.7 s
    measured before): its steps are counted, its time lies in the spread the
    probes drew, and the estimate is their mean."""
    config = SimulationConfig(n=300, d=2, beta=9.0, T=1e4, save_times="log:0.01:1e4:50",
                              integrator="dopri5", rtol=1e-6, seed=1)
    est = probed_estimate(config)
    measured = _measured(config)
    traj = run(config)
    tried = traj.observables["accepted_steps"][-1] + traj.observables["rejected_steps"][-1]
    assert tried / 1.2 < est.steps < 1.2 * tried
    low, high = est.spread
    assert low <= est.seconds <= high
    assert low / 3 < measured < 3 * high, (low, high, measured, est.lines())
