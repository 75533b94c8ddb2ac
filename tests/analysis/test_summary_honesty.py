"""Summaries that never contradict themselves (issue 11, item 10): no "fast
merges before the formation time" when nothing formed; a population spread
round the circle is not "1 cluster"; r is shown by analyze and compare."""

from __future__ import annotations

import numpy as np

from particles.analysis import AnalysisResult, analyze
from particles.analysis.comparison import ComparisonResult
from particles.analysis.merges import Timescales
from particles.analysis.tracking import MergeEvent
from particles.config import SimulationConfig
from particles.trajectory import Trajectory

SETTINGS = {"eps": 0.05, "method": "components", "min_decades": 1.0, "time_unit": 1.0,
            "floor": 1e-9, "bins": 4, "delta": 1e-3, "span_tol": 1e-6}


def test_no_fast_merge_claim_when_nothing_formed():
    frames, n = 60, 61
    times = np.geomspace(1.0, 2.0, frames)  # far less than a decade: no plateau is long-lived
    counts = np.arange(n, n - frames, -1)
    merges = [MergeEvent(f, float(times[f]), 0, 0, (f,), (f, 1)) for f in range(1, frames)]
    res = AnalysisResult(
        times, counts, np.zeros((frames, n), int), {}, np.linspace(-1, 1, 5),
        np.zeros((frames, 4), int), merges, [], [],
        [Timescales(0, float("nan"), float("nan"), 0, (), ())], SETTINGS,
        {"n": n, "d": 3, "beta": 1.0, "batch": None},
    )
    out = res.summary()
    assert "clusters not formed" in out
    assert "before the formation time" not in out
    assert "59 merges in systems whose clusters never formed" in out
    assert "fast" not in out.split("merges (59)")[1]


def ring(n: int, frames: int = 4) -> np.ndarray:
    """n tokens evenly round the circle (gaps < eps): one eps-linked component."""
    theta = 2 * np.pi * np.arange(n) / n
    x = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    return np.repeat(x[None], frames, axis=0)


def test_a_spread_population_is_not_one_cluster_and_r_is_shown():
    n = 200
    cfg = SimulationConfig(n=n, d=2, beta=1.0, model="kuramoto", T=100.0, seed=1,
                           save_times=(0.0, 1.0, 10.0, 100.0))
    traj = Trajectory(np.array([0.0, 1.0, 10.0, 100.0]), np.arange(4), ring(n), {}, cfg)
    res = analyze(traj)
    # stored as 0 clusters (spread), not as the one linked group (issue 28, item 2)
    assert res.counts.tolist() == [0, 0, 0, 0] and res.spread.all()
    out = res.summary()
    assert "kuramoto" in out.splitlines()[0]
    table = out.split("time scales")[0]
    rows = [line.split() for line in table.splitlines()[3:] if line.strip()]
    assert len(rows) == 4 and all(row[1] == "spread" for row in rows)
    assert table.splitlines()[2].split() == ["time", "clusters", ">=1%", "mode", "k", "|c_k|", "r"]
    assert "(1 cluster)" not in out and "spread population, r=" in out


def test_compare_table_shows_r_and_spread():
    n = 300
    trajs = {}
    for model, x in (("kuramoto", ring(n, 2)), ("sa", np.repeat(ring(n, 2)[:, :1], n, axis=1))):
        cfg = SimulationConfig(n=n, d=2, beta=1.0, model=model, T=1.0, seed=0)
        r = np.linalg.norm(x.mean(axis=1), axis=-1)
        trajs[model] = Trajectory(np.array([0.0, 1.0]), np.arange(2), x,
                                  {"order_parameter": r, "energy_normalized": r**2}, cfg)
    res = ComparisonResult(None, trajs, 0)
    lines = res.table().splitlines()
    assert lines[0].split()[:4] == ["model", "t", "r", "clusters"]
    kura = lines[1].split()
    assert kura[0] == "Kuramoto" and kura[3] == "spread" and float(kura[2]) < 1e-6
    assert lines[2].split()[3] == "1"  # a real single cluster
    assert "not a cluster" in lines[-1]
    from particles.analysis.comparison import min_inner_product

    assert min_inner_product(ring(8)[0]) == -1.0


def test_simulate_line_says_spread_and_r_for_an_incoherent_population(tmp_path):
    """`simulate`'s end-of-run line: an incoherent Kuramoto population (weak
    coupling, broad frequencies) is "spread" with its r, not "clusters 1"."""
    from clitools import invoke, ok

    out = tmp_path / "k.h5"
    # 2000 tokens round the circle: one eps-linked component, r ~ 1/sqrt(n)
    result = invoke("simulate", "--n", "2000", "--d", "2", "--model", "kuramoto",
                    "--coupling", "0.05", "--omega", "lorentzian:1", "--integrator", "euler",
                    "--dt", "0.05", "--T", "0.1", "--seed", "2", "--out", str(out))
    ok(result)
    line = result.output.strip().splitlines()[-1]
    assert "spread (a linked group over more than 90 degrees)" in line, line
    assert "clusters 1" not in line and " r 0." in line, line
