"""Every plot kind writes a non-empty picture for d = 2, 3 and 16; plot
functions draw into given axes and return them; files are never overwritten
without asking."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from synthetic import TIMES, collapsing, write_file

from particles.analysis import InnerProductHistogram, analyze, write_analysis
from particles.plotting import (
    DEFAULT_KIND,
    KINDS,
    default_frames,
    default_output,
    make_figure,
    plot_angles,
    plot_cluster_count,
    plot_energy,
    plot_file,
    plot_histogram,
    plot_tokens,
    principal_directions,
    save_plot,
)
from particles.sphere import normalize

PNG = b"\x89PNG\r\n\x1a\n"
GIF = b"GIF89a"


def assert_picture(path: Path, magic: bytes) -> None:
    data = Path(path).read_bytes()
    assert len(data) > 1000 and data.startswith(magic), path


@pytest.mark.parametrize("d", [2, 3, 16])
def test_every_kind_writes_a_picture(tmp_path, d):
    traj = collapsing(d)
    analysis = analyze(traj)
    for kind in KINDS:
        out = tmp_path / f"{kind}.{'gif' if kind == 'movie' else 'png'}"
        written = save_plot(traj, kind, out, analysis=analysis, dpi=50)
        assert written == out
        assert_picture(out, GIF if kind == "movie" else PNG)


def test_ensemble_pictures(tmp_path):
    traj = collapsing(3, batch=3)
    analysis = analyze(traj)
    for kind in ("clusters", "energy", "sphere", "histogram"):
        assert_picture(
            save_plot(traj, kind, tmp_path / f"{kind}.png", analysis=analysis, dpi=50, system=2),
            PNG,
        )
    with pytest.raises(ValueError, match="system"):
        make_figure(traj, "sphere", analysis=analysis, system=3)


def test_plot_functions_draw_into_given_axes_and_return_them():
    fig = Figure()
    axes = fig.subplots(2, 3).ravel()
    traj = collapsing(2)
    a = analyze(traj)
    h = InnerProductHistogram(20).compute(traj.positions[-1])
    assert plot_histogram(h, axes[0], log=True) is axes[0]
    assert plot_histogram((a.bin_edges, a.histograms[0]), axes[1]) is axes[1]
    assert plot_tokens(traj.positions, axes[2], times=traj.times, labels=a.labels[-1]) is axes[2]
    assert plot_angles(traj.times, traj.positions, axes[3]) is axes[3]
    assert (
        plot_cluster_count(
            a.times,
            a.counts,
            axes[4],
            merges=a.merges,
            formation_time=a.timescales[0].formation_time,
            plateaus=a.plateaus,
        )
        is axes[4]
    )
    assert plot_energy(a.times, a.scalars["energy_normalized"], axes[5]) is axes[5]
    # log-time axes leave out t = 0
    assert axes[4].get_xscale() == "log" and axes[4].lines[0].get_xdata()[0] > 0
    # without axes: a fresh figure, never pyplot's current one
    ax = plot_tokens(collapsing(3).positions)
    assert isinstance(ax, Axes) and ax.name == "3d" and ax.figure is not fig


def test_projection_and_default_frames():
    rng = np.random.default_rng(1)
    x = np.zeros((40, 6))
    x[:, :3] = normalize(rng.normal(size=(40, 3)))
    v = principal_directions(x)
    assert v.shape == (6, 3)
    np.testing.assert_allclose(np.abs(v[3:]), 0.0, atol=1e-12)  # spans the occupied 3 axes
    idx = default_frames(np.concatenate([[0.0], np.logspace(-3, 3, 61)]), k=6)
    assert idx[0] == 0 and idx[-1] == 61 and len(idx) == 6
    np.testing.assert_array_equal(default_frames(TIMES[:4]), np.arange(4))


def test_plot_file_defaults_and_never_overwrites(tmp_path):
    path = write_file(tmp_path / "run.h5", collapsing(3))
    out = plot_file(path)
    assert out == tmp_path / f"run_{DEFAULT_KIND}.png" == default_output(path, DEFAULT_KIND)
    assert_picture(out, PNG)
    with pytest.raises(FileExistsError, match="overwrite"):
        plot_file(path)
    assert plot_file(path, overwrite=True, dpi=50) == out
    movie = plot_file(path, "movie", max_frames=4)
    assert movie.name == "run_movie.gif"
    assert_picture(movie, GIF)
    with pytest.raises(ValueError, match="kind"):
        plot_file(path, "pie")
    with pytest.raises(FileNotFoundError):
        plot_file(tmp_path / "missing.h5")


def test_plot_file_uses_the_stored_analysis(tmp_path, monkeypatch):
    traj = collapsing(2)
    path = write_file(tmp_path / "run.h5", traj)
    write_analysis(path, analyze(traj))
    from particles.plotting import movie, run

    def fail(*args, **kwargs):
        raise AssertionError("analysis recomputed although /analysis is up to date")

    monkeypatch.setattr(run, "analyze", fail)
    monkeypatch.setattr(movie, "analyze", fail)
    assert_picture(plot_file(path, "energy", dpi=50), PNG)


def test_clusters_figure_does_not_draw_a_spread_state_as_one_cluster():
    """Issue 28, item 2: `plot --kind clusters` of a run from a uniform state
    at large n: the spread frames are no count (a gap, shaded "spread"), not a
    staircase that starts at 1 cluster."""
    n = 400
    theta = 2 * np.pi * np.arange(n) / n  # spacing below eps: one chain round the circle
    ring = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    centres = 2 * np.pi * (np.arange(n) % 4) / 4
    four = np.stack([np.cos(centres), np.sin(centres)], axis=-1)
    x = np.stack([ring, ring, ring, four, four, four, four])
    base = collapsing(2, n=n)
    traj = type(base)(base.times, base.steps, x, {}, base.config)
    analysis = analyze(traj)
    assert analysis.counts.tolist() == [0, 0, 0, 4, 4, 4, 4]
    ax = make_figure(traj, "clusters", analysis=analysis).axes[0]
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "clusters")
    y = np.asarray(line.get_ydata(), dtype=float)
    shown = TIMES > 0  # the log-time axis leaves t = 0 out
    assert np.all(np.isnan(y[: 2])) and np.all(y[2:] == 4), y
    assert shown.sum() == y.size
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "spread (no clusters)" in labels


def test_times_beyond_the_run_are_refused(tmp_path):
    """Issue 38 item 6: ``plot --times 1e9`` drew the last frame (t = 1000) and
    exited 0; a time outside the saved frames is one line, exit 2, naming
    --times and the file's time range, before the file's frames are loaded."""
    from clitools import invoke, ok, usage_error

    from particles.plotting.frames import nearest_frames

    path = write_file(tmp_path / "run.h5", collapsing(2))
    out = tmp_path / "p.png"
    for kind in ("histogram", "sphere"):
        usage_error(invoke("plot", path, "--kind", kind, "--times", "1,1e9", "--out", out),
                    "--times", "[0, 1000]", "1e+09")
        assert not out.exists()
    with pytest.raises(ValueError, match=r"times must lie in \[0, 1000\]"):
        make_figure(collapsing(2), "histogram", times=[2000.0])
    # kinds that draw no chosen time refuse --times rather than ignore it
    usage_error(invoke("plot", path, "--kind", "clusters", "--times", "5", "--out", out),
                "--times", "not used by --kind clusters")
    # a time typed as printed (4 digits) is the last frame; inside the range: nearest frames
    assert nearest_frames(TIMES, [999.99, 1000.04]).tolist() == [TIMES.size - 1]
    assert nearest_frames(TIMES, [0.0, 2.5, 0.31]).tolist() == [0, 1, 3]
    ok(invoke("plot", path, "--kind", "histogram", "--times", "0,1000", "--out", out))


def test_modes_marks_the_fastest_degree_of_linear_theory():
    from particles.analysis.harmonics import fastest_degree

    traj = collapsing(3)
    fig = make_figure(traj, "modes")
    lines = [ln for ax in fig.axes for ln in ax.get_lines() if "l* =" in str(ln.get_label())]
    star = fastest_degree(traj.config.beta)
    assert star == 4 and len(lines) == 1 and lines[0].get_xdata()[0] == star
    # the power drawn is the stored P_l normalised (1 for one cluster), and the
    # circle draws |c_k|^2 from the positions
    frames = [ln for ln in fig.axes[1].get_lines() if str(ln.get_label()).startswith("t = ")]
    q = np.asarray(frames[-1].get_ydata())
    assert np.all((q > 0) & (q <= 1 + 1e-12))
    assert "Fourier" in make_figure(collapsing(2), "modes")._suptitle.get_text()
