"""The whole text of :meth:`AnalysisResult.summary`, pinned for small constructed runs.

Every section is covered (a single system on the circle and on the sphere, an
ensemble with more systems than are listed, a spread population, merges
beyond ``max_merges`` with fast and unformed ones hidden, merges located
while the run ran, splits): a refactor of the summary keeps its text byte
for byte.  The expected texts are ``summary_text.txt`` beside this file, one
case after each ``=== name`` line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from synthetic import collapsing

from particles.analysis import AnalysisResult, analyze
from particles.analysis.merges import Timescales
from particles.analysis.tracking import MergeEvent, SplitEvent
from particles.config import SimulationConfig
from particles.trajectory import Merge, Trajectory

EXPECTED = Path(__file__).with_name("summary_text.txt")


def ring(n: int, frames: int = 4) -> np.ndarray:
    """n tokens evenly along three quarters of the circle: one linked group, spread
    (r well away from 0, so no digit printed depends on rounding)."""
    theta = 1.5 * np.pi * np.arange(n) / n
    x = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    return np.repeat(x[None], frames, axis=0)


def spread_run(batch: int | None) -> AnalysisResult:
    """Tokens along three quarters of the circle (spread); an ensemble's system 1 collapses
    to one point from the third frame on."""
    n, times = 200, np.array([0.0, 1.0, 10.0, 100.0])
    cfg = SimulationConfig(n=n, d=2, beta=1.0, model="kuramoto", T=100.0, seed=1,
                           save_times=tuple(times), batch=batch)
    x = ring(n)
    if batch is not None:
        x = np.repeat(x[:, None], batch, axis=1)
        x[2:, 1] = x[0, 0, 0]
    return analyze(Trajectory(times, np.arange(4), x, {}, cfg))


def unformed() -> AnalysisResult:
    """Merges in a system that never formed, and splits (nothing integrated)."""
    frames, n = 12, 13
    times = np.geomspace(1.0, 2.0, frames)
    counts = np.arange(n, n - frames, -1)
    merges = [MergeEvent(f, float(times[f]), 0, 0, (f,), (f, 1)) for f in range(1, frames)]
    splits = [SplitEvent(3, float(times[3]), 0, 1, 2, 4)]
    settings = {"eps": None, "method": "gap", "min_decades": 1.0, "time_unit": 1.0,
                "floor": 1e-9, "bins": 4, "delta": 1e-3, "span_tol": 1e-6}
    return AnalysisResult(
        times, counts, np.zeros((frames, n), int), {}, np.linspace(-1, 1, 5),
        np.zeros((frames, 4), int), merges, splits, [],
        [Timescales(0, float("nan"), float("nan"), 0, (), ())], settings,
        {"n": n, "d": 3, "beta": 1.0, "batch": None, "source": "run.h5"},
    )


#: the cases, in the order of the expected file
NAMES = ("circle", "circle at chosen times", "sphere, located merges", "ensemble on the circle",
         "ensemble, few merges listed", "ensemble in d = 5", "spread population",
         "spread ensemble", "unformed, merges hidden", "unformed, all merges")


def cases() -> dict[str, str]:
    """Each case's summary text."""
    circle = analyze(collapsing(2))
    located = analyze(collapsing(3))
    located.located = tuple(Merge(float(t), 3, 2) for t in (0.5, 2.0, 50.0, 2000.0))
    ensemble = analyze(collapsing(2, batch=23))
    sphere_ensemble = analyze(collapsing(5, batch=3, seed=4))
    return {
        "circle": circle.summary(),
        "circle at chosen times": circle.summary(times=[0.3, 10.0, 1000.0]),
        "sphere, located merges": located.summary(max_merges=2),
        "ensemble on the circle": ensemble.summary(),
        "ensemble, few merges listed": ensemble.summary(max_merges=3),
        "ensemble in d = 5": sphere_ensemble.summary(),
        "spread population": spread_run(None).summary(),
        "spread ensemble": spread_run(3).summary(),
        "unformed, merges hidden": unformed().summary(max_merges=4),
        "unformed, all merges": unformed().summary(),
    }


def read_expected() -> dict[str, str]:
    out: dict[str, str] = {}
    for block in EXPECTED.read_text(encoding="utf-8").split("=== ")[1:]:
        name, _, text = block.partition("\n")
        out[name] = text[:-1]  # each case ends with the newline before the next marker
    return out


def write_expected(texts: dict[str, str]) -> None:
    """Rewrite the expected texts (run by hand, only for a deliberate change)."""
    EXPECTED.write_text("".join(f"=== {k}\n{v}\n" for k, v in texts.items()), encoding="utf-8")


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    return cases()


@pytest.mark.parametrize("name", NAMES)
def test_the_summary_text_is_unchanged(texts, name):
    assert texts[name] == read_expected()[name]


def test_every_case_is_pinned(texts):
    assert list(texts) == list(NAMES) == list(read_expected())
