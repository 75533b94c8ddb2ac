"""``particles analyze`` and ``particles plot``: results stored in the file,
summary printed, pictures written, bad input refused with exit status 2."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from clitools import invoke, ok, usage_error

from particles.analysis import read_analysis
from particles.config import SimulationConfig
from particles.engine import Frame
from particles.io import TrajectoryWriter
from particles.sphere import normalize

TIMES = np.array([0.0, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0])


@pytest.fixture
def run_file(tmp_path) -> Path:
    """Three clusters forming by t ~ 3, two of them merging at t = 300."""
    rng = np.random.default_rng(0)
    n, d = 12, 3
    centers = normalize(rng.normal(size=(3, d)))
    which = np.arange(n) % 3
    u = rng.normal(size=(n, d))
    config = SimulationConfig(n=n, d=d, beta=10.0, T=1000.0, save_times=tuple(TIMES), seed=0)
    path = tmp_path / "run.h5"
    w = TrajectoryWriter.create(path, config)
    for f, t in enumerate(TIMES):
        c = centers.copy()
        if t >= 300:
            c[1] = c[0]
        x = normalize(c[which] + np.exp(-2 * t) * u)
        w.append(Frame(f, f, float(t), x[None], {"energy": np.zeros(1)}))
    w.close(complete=True)
    return path


def test_commands_are_registered():
    result = invoke("--help")
    ok(result)
    assert "analyze" in result.output and "plot" in result.output


def test_analyze_stores_results_and_prints_the_summary(run_file):
    result = invoke("analyze", run_file)
    ok(result)
    out = result.output
    assert "formation time 3 (3 clusters); first merge 300 (2.00 decades later)" in out
    assert "t=300" in out and "sizes 4 + 4 = 8  slow" in out
    # results go to a sidecar file (issue 15): the trajectory is only read
    sidecar = run_file.with_name("run.analysis.h5")
    assert f"results stored in {sidecar}:/analysis" in out
    stored = read_analysis(run_file)
    np.testing.assert_array_equal(stored.counts[-3:], [3, 2, 2])
    # a rerun with other settings replaces the group
    ok(invoke("analyze", run_file, "--eps", "0.1", "--bins", "8", "--times", "0,100"))
    with h5py.File(run_file, "r") as f:
        assert "analysis" not in f and "_analysis_tmp" not in f
    with h5py.File(sidecar, "r") as f:
        assert f["analysis"].attrs["eps"] == 0.1
        assert f["analysis/histogram/counts"].shape == (TIMES.size, 8)
    # the trajectory itself is untouched and still loads
    from particles.io import load

    assert load(run_file).frames == TIMES.size


def test_analyze_no_write_and_table_times(run_file):
    result = invoke("analyze", run_file, "--no-write", "--times", "0,5,1000")
    ok(result)
    rows = [line.split() for line in result.output.splitlines()[2:6]]
    # issue 11 item 10: the table shows the order parameter r next to the count
    # (issue 28 item 2: and the mass-weighted count; d = 3: no Fourier mode)
    assert rows[0] == ["time", "clusters", ">=1%", "r"] and rows[1][0] == "0"
    assert int(rows[1][1]) > 3
    assert [r[:2] for r in rows[2:4]] == [["3", "3"], ["1000", "2"]]
    with h5py.File(run_file, "r") as f:
        assert "analysis" not in f


def test_analyze_refuses_bad_input(run_file, tmp_path):
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    usage_error(invoke("analyze", junk), "not an HDF5 file")
    empty = tmp_path / "empty.h5"
    h5py.File(empty, "w").close()
    usage_error(invoke("analyze", empty), "not a particles trajectory")
    usage_error(invoke("analyze", tmp_path / "missing.h5"), "does not exist")
    usage_error(invoke("analyze", run_file, "--eps", "0"), "eps")
    usage_error(invoke("analyze", run_file, "--method", "kmeans"), "--method")
    usage_error(invoke("analyze", run_file, "--times", "1,x"), "--times")
    usage_error(invoke("analyze", run_file, "--min-decades", "-1"), "min_decades")


def test_plot_defaults_and_overwrite(run_file):
    result = invoke("plot", run_file)
    ok(result)
    out = run_file.with_name("run_clusters.png")
    assert result.output.strip() == str(out)
    assert out.read_bytes().startswith(b"\x89PNG")
    usage_error(invoke("plot", run_file), "exists", "--overwrite")
    ok(invoke("plot", run_file, "--overwrite", "--dpi", "40"))


@pytest.mark.parametrize("kind", ["histogram", "sphere", "energy", "movie"])
def test_plot_kinds(run_file, tmp_path, kind):
    out = tmp_path / f"fig.{'gif' if kind == 'movie' else 'png'}"
    extra = ["--times", "1,1000"] if kind in ("histogram", "sphere") else []
    result = invoke("plot", run_file, "--kind", kind, "--out", out, *extra)
    ok(result)
    assert out.stat().st_size > 1000


def test_plot_refuses_bad_input(run_file, tmp_path):
    usage_error(invoke("plot", run_file, "--kind", "pie"), "--kind")
    usage_error(invoke("plot", run_file, "--out", tmp_path / "nodir" / "x.png"), "directory")
    usage_error(
        invoke("plot", run_file, "--kind", "sphere", "--system", "1", "--out", tmp_path / "s.png"),
        "system",
    )
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    usage_error(invoke("plot", junk), "not an HDF5 file")


def test_info_of_the_analysis_sidecar_is_a_one_kind_answer(run_file):
    ok(invoke("analyze", run_file))
    sidecar = run_file.with_name("run.analysis.h5")
    result = invoke("info", sidecar)
    ok(result)
    lines = result.output.splitlines()
    assert lines[0] == str(sidecar)
    assert lines[1] == "kind         trajectory analysis (particles analyze)"
    assert "trajectory   run.h5" in lines and "status       complete" in lines
    assert "frames       9 analysed" in lines
    assert "run          sa  n=12  d=3  beta=10" in lines
    assert "clusters     eps=0.05 rad (components)" in lines
    # the commands that read trajectories refuse it in one line, naming its reader
    for command in ("plot", "analyze"):
        usage_error(invoke(command, sidecar),
                    "is a trajectory analysis file (particles analyze), not a particle "
                    "trajectory; read it with particles.analysis.read_analysis")
