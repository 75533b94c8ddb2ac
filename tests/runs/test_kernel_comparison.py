"""``compare_kernels``, ``plot_kernel_comparison`` and ``particles kernels``."""

from __future__ import annotations

import numpy as np
import pytest
from clitools import invoke
from particles_cli.main import COMMANDS

import particles.runs.kernels as kc
from particles.config import SimulationConfig
from particles.fields import KERNELS
from particles.io import OutputPathError
from particles.runs.initial import initial_tokens
from particles.runs.kernels import (
    check_kernels,
    compare_kernels,
    default_times,
    plot_kernel_comparison,
)

SMALL = dict(n=10, d=3, beta=2.0, T=1.0, dt=0.05, save_every=5, seed=11)
PNG = b"\x89PNG\r\n\x1a\n"
BASE = "--n 10 --d 3 --beta 2 --T 1 --dt 0.05 --save-every 5 --seed 11".split()


@pytest.fixture(scope="module")
def result():
    return compare_kernels(**SMALL, tau=1.0, gamma=0.5, bins=20)


def test_all_kernels_start_from_the_same_tokens(result):
    assert result.kernels == tuple(KERNELS)
    expected = initial_tokens(SimulationConfig(n=10, d=3, beta=2.0, seed=11))[0]
    np.testing.assert_array_equal(result.x0, expected)
    for run in result.runs.values():
        t = run.trajectory
        assert t.positions.shape == (5, 10, 3)
        np.testing.assert_array_equal(t.positions[0], result.x0)
        np.testing.assert_array_equal(t.times, result.times)
        assert t.config.kernel == run.kernel and t.config.seed == 11
    # the runs differ after t = 0
    assert not np.allclose(result.runs["edp"].trajectory.final, result.runs["l2"].trajectory.final)


def test_parameters_go_only_to_the_kernels_that_use_them(result):
    cfg = {k: r.trajectory.config for k, r in result.runs.items()}
    assert cfg["rbf"].tau == cfg["l2"].tau == 1.0 and cfg["quadratic"].gamma == 0.5
    assert cfg["edp"].tau == 1.0 and cfg["edp"].gamma == 1.0 and cfg["rbf"].gamma == 1.0
    assert result.runs["quadratic"].label == "quadratic (\u03b3=0.5)"


def test_clusters_and_histograms_per_frame(result):
    for run in result.runs.values():
        assert run.clusters.shape == (5,) and run.clusters[0] == 10
        assert run.histograms.shape == (5, 20)
        np.testing.assert_array_equal(run.histograms.sum(axis=1), 45)  # n(n-1)/2 pairs
    assert result.bin_edges.shape == (21,)
    lines = result.table().splitlines()
    assert len(lines) == 1 + len(KERNELS) and lines[1].startswith("edp (β=2)")


def test_edp_and_rbf_at_half_beta_give_the_same_cluster_counts():
    r = compare_kernels(n=12, d=3, beta=4.0, T=8.0, dt=0.05, save_every=20, seed=3,
                        kernels="edp,rbf", tau=2.0)
    edp, rbf = r.runs["edp"], r.runs["rbf"]
    np.testing.assert_array_equal(edp.clusters, rbf.clusters)
    assert edp.clusters[-1] < edp.clusters[0]  # something happened
    np.testing.assert_allclose(edp.trajectory.positions, rbf.trajectory.positions, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs,fragment",
    [
        (dict(kernels="edp,foo"), "kernels must be one or more"),
        (dict(kernels=()), "kernels must be one or more"),
        (dict(kernels="edp,edp"), "kernels must not repeat"),
        (dict(kernels="edp", tau=2.0), "tau applies to kernel(s) rbf, l2"),
        (dict(kernels="edp,rbf", gamma=2.0), "gamma applies"),
        (dict(n=0), "n must be"),
        (dict(eps=-1.0), "eps must be"),
        (dict(bins=0), "bins must be"),
    ],
)
def test_bad_arguments_raise_before_any_run(monkeypatch, kwargs, fragment):
    def no_run(*a, **k):
        raise AssertionError("ran")

    monkeypatch.setattr(kc, "simulate", no_run)
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        compare_kernels(**{**SMALL, **kwargs})


def test_check_kernels_accepts_a_string():
    assert check_kernels(" edp, l2") == ("edp", "l2")


def test_default_times_include_start_and_end():
    assert default_times(np.linspace(0, 1, 5)).tolist() == [0, 1, 3, 4]
    assert default_times(np.linspace(0, 1, 3)).tolist() == [0, 1, 2]
    log = default_times(np.r_[0.0, np.geomspace(0.01, 100, 40)])
    assert log[0] == 0 and log[-1] == 40 and len(log) == 4


def test_png_written_and_never_overwritten(result, tmp_path):
    out = tmp_path / "k.png"
    assert plot_kernel_comparison(result, out) == out
    data = out.read_bytes()
    assert data.startswith(PNG) and len(data) > 10_000
    with pytest.raises(OutputPathError, match="exists"):
        plot_kernel_comparison(result, out, times=[0.0, 1.0])
    assert out.read_bytes() == data
    plot_kernel_comparison(result, out, overwrite=True, times=[0.0, 1.0])
    assert out.read_bytes() != data
    with pytest.raises(ValueError, match="times must lie in"):
        plot_kernel_comparison(result, tmp_path / "t.png", times=[5.0])
    assert not (tmp_path / "t.png").exists()


# ------------------------------------------------------------------ CLI


def test_registered():
    assert "kernels" in [c.name for c in COMMANDS]


def test_cli_happy_path(tmp_path):
    out = tmp_path / "k.png"
    r = invoke("kernels", *BASE, "--kernels", "edp,rbf", "--tau", "1", "--out", out)
    assert r.exit_code == 0, r.output + repr(r.exception)
    lines = r.output.splitlines()
    assert lines[0] == str(out) and out.read_bytes().startswith(PNG)
    assert lines[1] == "seed 11"
    assert lines[2].split() == ["kernel", "clusters", "mean", "<xi,xj>"]
    assert lines[3].startswith("edp (β=2)") and lines[4].startswith("rbf (τ=1)")
    assert len(lines) == 5
    r = invoke("kernels", *BASE, "--kernels", "edp", "--out", out, "--overwrite")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["--kernels", "edp,foo"], "'foo'"),
        (["--kernels", "edp", "--tau", "2"], "--tau"),
        (["--n", "0"], "--n"),
        (["--eps", "-1"], "--eps"),
        (["--save-times", "bad"], "--save-times"),
        (["--model", "nope"], "--model"),
        (["--model", "kuramoto", "--d", "2", "--kernels", "edp,rbf"], "--kernels"),
    ],
)
def test_cli_bad_input_is_a_usage_error(tmp_path, args, fragment):
    out = tmp_path / "k.png"
    r = invoke("kernels", *BASE, "--out", out, *args)
    assert r.exit_code == 2, r.output + repr(r.exception)
    assert "Traceback" not in r.output
    errors = [line for line in r.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and fragment in errors[0], r.output
    assert not out.exists()


def test_cli_missing_and_existing_output(tmp_path, monkeypatch):
    r = invoke("kernels", "--d", "3", "--beta", "1", "--out", tmp_path / "k.png")
    assert r.exit_code == 2 and "missing option(s) --n" in r.output
    out = tmp_path / "k.png"
    out.write_bytes(b"keep")

    def no_run(*a, **k):
        raise AssertionError("ran")

    monkeypatch.setattr(kc, "simulate", no_run)
    r = invoke("kernels", *BASE, "--out", out)
    assert r.exit_code == 2 and "exists" in r.output and "--overwrite" in r.output
    assert out.read_bytes() == b"keep"
    r = invoke("kernels", *BASE, "--out", tmp_path / "missing" / "k.png")
    assert r.exit_code == 2 and "does not exist" in r.output


def test_cli_without_seed_prints_and_records_the_drawn_seed(tmp_path):
    """Issue 28 item 5: the drawn seed is printed, titled in full and kept in the PNG,
    and `--seed` with it remakes the same figure."""
    from particles.plotting.record import read_record

    args = "--n 6 --d 3 --beta 2 --T 0.2 --dt 0.05 --save-every 2 --kernels edp,rbf".split()
    out = tmp_path / "k.png"
    r = invoke("kernels", *args, "--out", out)
    assert r.exit_code == 0, r.output + repr(r.exception)
    seeds = [line.split()[1] for line in r.output.splitlines() if line.startswith("seed ")]
    assert len(seeds) == 1 and seeds[0].isdigit() and len(seeds[0]) > 8  # a drawn entropy seed
    record = read_record(out)
    assert record["seed"] == seeds[0] and record["kernels"] == "edp,rbf"
    config = SimulationConfig.from_json(record["config"])
    assert config.seed == int(seeds[0]) and config.init == "uniform" and config.n == 6
    assert "numba" in record["versions"]
    again = tmp_path / "again.png"
    ok = invoke("kernels", *args, "--seed", seeds[0], "--out", again)
    assert ok.exit_code == 0, ok.output
    assert again.read_bytes() == out.read_bytes()


def test_title_names_a_long_seed_in_full():
    import matplotlib

    matplotlib.use("Agg")
    r = compare_kernels(n=6, d=3, beta=2.0, T=0.1, dt=0.05, save_every=1, kernels="edp",
                        seed=2**100 + 7)
    fig = kc.kernel_comparison_figure(r)
    titles = " ".join(t.get_text() for t in fig.texts)
    titles += " ".join(sf._suptitle.get_text() for sf in fig.subfigs if sf._suptitle)
    assert str(2**100 + 7) in titles and "see file" not in titles
