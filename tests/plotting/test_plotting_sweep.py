"""Sweep figures (particles.plotting.sweep) on a synthetic Dataset of the sweep schema,
and the theory curves they overlay."""

from __future__ import annotations

import json

import numpy as np
import pytest

xr = pytest.importorskip("xarray")

from particles.errors import OutputExistsError  # noqa: E402
from particles.plotting.sweep import (  # noqa: E402
    default_sweep_output,
    equiangular_rate,
    equiangular_rho,
    frontier_time,
    grid_axes,
    kuramoto_lorentzian_r,
    plot_cluster_counts,
    plot_phase_diagram,
    plot_sweep_curve,
    save_sweep_plot,
    sweep_figure,
    sweep_setting,
)

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def synthetic(axes: dict[str, list], *, base: dict | None = None, runs: int = 6,
              times=(0.0, 2.0, 4.0, 6.0), deltas=(0.1, 0.01, 0.001), n: int = 8) -> xr.Dataset:
    """A Dataset of the contract's schema with known, distinct values."""
    rng = np.random.default_rng(0)
    grid = {k: np.asarray(v) for k, v in axes.items()}
    shape = tuple(v.size for v in grid.values())
    names = list(grid)
    T, D, Q, K = len(times), len(deltas), len(QUANTILES), n

    def var(*extra, lo=0.0, hi=1.0):
        dims = [*names, *[e[0] for e in extra]]
        return dims, rng.uniform(lo, hi, (*shape, *[e[1] for e in extra]))

    cq = np.sort(rng.integers(1, n + 1, (*shape, T, Q)), axis=-1).astype(float)
    fm = np.sort(rng.uniform(1, 100, (*shape, Q)), axis=-1)
    fm[..., -1] = np.inf  # the 95 % quantile not reached
    sct = rng.uniform(1, 50, (*shape, runs))
    sct[..., 0] = np.inf
    ds = xr.Dataset(
        {
            "pair_fraction": var(("time", T), ("delta", D)),
            "cluster_distribution": var(("time", T), ("clusters", K)),
            "cluster_mean": var(("time", T), lo=1, hi=n),
            "cluster_quantile": ([*names, "time", "quantile"], cq),
            "energy_mean": var(("time", T)),
            "order_parameter_mean": var(("time", T)),
            "formation_time": ([*names, "quantile"], fm / 2),
            "first_merge_time": ([*names, "quantile"], fm),
            "formation_censored": (names, np.zeros(shape, dtype=np.int64)),
            "first_merge_censored": (names, np.ones(shape, dtype=np.int64)),
            "single_cluster_time": ([*names, "system"], sct),
        },
        coords={**grid, "time": list(times), "delta": list(deltas), "quantile": list(QUANTILES),
                "clusters": np.arange(1, K + 1), "system": np.arange(runs)},
        attrs={"config": json.dumps(base or {"model": "sa", "n": n, "d": 2}),
               "runs": runs, "seed": 1},
    )
    return ds


BETAS = [0.5, 1.0, 2.0, 4.0, 8.0]


# ------------------------------------------------------------ theory


@pytest.mark.parametrize("model", ["sa", "usa"])
def test_frontier_at_beta_zero_is_the_closed_form(model):
    n, delta = 32, 0.01
    # rho(t) = (e^{2t} - 1) / (e^{2t} + n - 1) at beta = 0 reaches 1 - delta at
    expected = 0.5 * np.log((1 + (1 - delta) * (n - 1)) / delta)
    assert frontier_time(0.0, delta, n, model) == pytest.approx(expected, rel=1e-9)
    t = np.linspace(0, 3, 7)
    e = np.exp(2 * t)
    np.testing.assert_allclose(equiangular_rho(t, 0.0, n, model), (e - 1) / (e + n - 1),
                               rtol=0, atol=1e-8)


@pytest.mark.parametrize(("model", "scale"), [("sa", "n"), ("usa", "n"), ("usa", "n_exp_beta")])
def test_frontier_is_where_the_ode_reaches_one_minus_delta(model, scale):
    n, beta, delta = 16, 3.0, 0.05
    t_star = frontier_time(beta, delta, n, model, scale)
    rho = equiangular_rho(np.array([0.0, t_star]), beta, n, model, scale)
    assert rho[0] == 0.0
    assert rho[1] == pytest.approx(1 - delta, abs=1e-7)


def test_rates_of_the_models():
    n, beta, r = 8, 2.0, 0.3
    sa = 2 * (1 - r) * ((n - 1) * r + 1) / (np.exp(beta * (1 - r)) + n - 1)
    usa = (2 / n) * np.exp(beta * r) * (1 - r) * ((n - 1) * r + 1)
    assert equiangular_rate(r, beta, n, "sa") == pytest.approx(sa, rel=1e-15)
    assert equiangular_rate(r, beta, n, "usa") == pytest.approx(usa, rel=1e-15)
    assert equiangular_rate(r, beta, n, "usa", "n_exp_beta") == pytest.approx(
        usa * np.exp(-beta), rel=1e-15)
    # larger beta: SA slower (metastability), USA faster
    assert frontier_time(6.0, 0.01, n, "sa") > frontier_time(1.0, 0.01, n, "sa")
    assert frontier_time(6.0, 0.01, n, "usa") < frontier_time(1.0, 0.01, n, "usa")
    with pytest.raises(ValueError, match="delta must be in"):
        frontier_time(1.0, 0.0, n)
    with pytest.raises(ValueError, match="'sa' or 'usa'"):
        equiangular_rate(r, beta, n, "kuramoto")


def test_kuramoto_lorentzian_r():
    gamma = 0.5
    r = kuramoto_lorentzian_r(np.array([0.5, 1.0, 2.0, 4.0]), gamma)
    np.testing.assert_allclose(r, [0.0, 0.0, np.sqrt(0.5), np.sqrt(0.75)], rtol=1e-15)


# ------------------------------------------------------------ the Dataset


def test_grid_axes_and_settings():
    ds = synthetic({"beta": BETAS, "d": [2, 3]})
    assert grid_axes(ds) == ["beta", "d"]
    assert sweep_setting(ds, "model") == "sa"
    assert sweep_setting(ds.isel(d=[1]), "d") == 3  # a swept axis fixed to one value
    assert sweep_setting(ds, "nothing", 0.1) == 0.1
    # a stored configuration leaves defaults out
    ds.attrs["config"] = json.dumps({"n": 8, "d": 2})
    assert sweep_setting(ds, "model") == "sa" and sweep_setting(ds, "usa_scale") == "n"


# ------------------------------------------------------------ figures


def test_phase_diagram_draws_the_stored_fraction_and_the_frontier():
    ds = synthetic({"beta": BETAS})
    ax = plot_phase_diagram(ds, delta=0.01)
    mesh = ax.collections[0]
    expected = ds["pair_fraction"].sel(delta=0.01).transpose("time", "beta").values
    np.testing.assert_array_equal(np.asarray(mesh.get_array()).reshape(expected.shape), expected)
    (line,) = ax.get_lines()
    b, t = line.get_data()
    assert b[0] == BETAS[0] and b[-1] == BETAS[-1]
    assert t[-1] == pytest.approx(frontier_time(BETAS[-1], 0.01, 8, "sa"), rel=1e-12)
    assert "1 \u2212 0.01" in line.get_label()
    assert "n=8" in ax.get_title() and "6 runs" in ax.get_title()


def test_phase_diagram_without_theory_and_for_usa():
    ds = synthetic({"beta": BETAS}, base={"model": "usa", "n": 8, "d": 128})
    assert not plot_phase_diagram(ds, theory=False).get_lines()
    (line,) = plot_phase_diagram(ds, delta=0.1).get_lines()
    assert line.get_data()[1][-1] == pytest.approx(frontier_time(8.0, 0.1, 8, "usa"))


def test_one_panel_per_value_of_a_free_axis():
    ds = synthetic({"beta": BETAS, "d": [2, 3, 128]})
    fig = sweep_figure(ds, "phase-diagram")
    assert len(fig.axes) == 3 + 3  # panels and their colour bars
    titles = [a.get_title() for a in fig.axes if a.get_title()]
    assert [t.split(",")[0] for t in titles] == ["d=2", "d=3", "d=128"]
    fig = sweep_figure(ds, "phase-diagram", where={"d": 3})
    assert len(fig.axes) == 2
    with pytest.raises(ValueError, match="the sweep also varies d"):
        plot_phase_diagram(ds)


def test_two_free_axes_need_where():
    ds = synthetic({"beta": BETAS, "d": [2, 3], "model": ["sa", "usa"]})
    with pytest.raises(ValueError, match="varies d, model besides beta"):
        sweep_figure(ds, "clusters")
    fig = sweep_figure(ds, "clusters", where={"model": "usa"})
    assert len(fig.axes) == 2


def test_cluster_counts_median_and_quartiles_at_chosen_times():
    ds = synthetic({"beta": BETAS})
    ax = plot_cluster_counts(ds, times=[2.1, 5.8])
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == ["t = 2", "t = 6"]
    np.testing.assert_array_equal(lines[1].get_ydata(),
                                  ds["cluster_quantile"].sel(time=6.0, quantile=0.5).values)
    assert len(ax.collections) == 2  # the quartile bands


def test_curve_of_any_statistic_against_any_axis():
    ds = synthetic({"beta": BETAS, "n": [8, 16]})
    ax = plot_sweep_curve(ds, "energy_mean", axis="n", where={"beta": 2.0}, times=[4.0])
    np.testing.assert_array_equal(ax.get_lines()[0].get_ydata(),
                                  ds["energy_mean"].sel(beta=2.0, time=4.0).values)
    assert ax.get_xlabel() == "n" and ax.get_yscale() == "linear"
    ax = plot_sweep_curve(ds, "pair_fraction", axis="beta", where={"n": 16}, delta=0.001)
    assert "δ = 0.001" in ax.get_lines()[0].get_label()
    ax = plot_sweep_curve(ds, "cluster_distribution", where={"n": 8}, clusters=2)
    np.testing.assert_array_equal(ax.get_lines()[0].get_ydata(),
                                  ds["cluster_distribution"].sel(n=8, clusters=2).isel(time=-1))


def test_first_merge_time_against_beta_on_a_log_axis():
    ds = synthetic({"beta": BETAS})
    ax = plot_sweep_curve(ds, "first_merge_time")
    assert ax.get_yscale() == "log" and ax.get_xlabel() == "β"
    np.testing.assert_array_equal(ax.get_lines()[0].get_ydata(),
                                  ds["first_merge_time"].sel(quantile=0.5).values)
    ax = plot_sweep_curve(ds, "single_cluster_time", log=False)
    assert ax.get_yscale() == "linear"
    values = ds["single_cluster_time"].values
    expected = np.quantile(values, 0.5, axis=1, method="inverted_cdf")
    np.testing.assert_array_equal(ax.get_lines()[0].get_ydata(), expected)


def test_kuramoto_r_against_coupling_with_the_lorentzian_theory():
    ds = synthetic({"coupling": [0.5, 1.0, 1.5, 2.0, 3.0]},
                   base={"model": "kuramoto", "n": 8, "d": 2, "omega": "lorentzian:0.4"})
    ax = plot_sweep_curve(ds, "order_parameter_mean", axis="coupling")
    _, theory = ax.get_lines()
    K, r = theory.get_data()
    np.testing.assert_allclose(r, kuramoto_lorentzian_r(K, 0.4), rtol=0, atol=0)
    assert "\u03b3 = 0.4" in theory.get_label()
    # Gaussian frequencies: no Lorentzian theory
    ds.attrs["config"] = json.dumps({"model": "kuramoto", "n": 8, "omega": "gaussian:0.4"})
    assert len(plot_sweep_curve(ds, "order_parameter_mean").get_lines()) == 1


def test_text_axis_and_bad_requests():
    ds = synthetic({"model": ["sa", "usa"], "beta": [1.0, 2.0]})
    ax = plot_sweep_curve(ds, "cluster_mean", axis="model", where={"beta": 2})
    assert [t.get_text() for t in ax.get_xticklabels()] == ["sa", "usa"]
    with pytest.raises(ValueError, match="'energy' is not a statistic"):
        plot_sweep_curve(ds, "energy")
    with pytest.raises(ValueError, match="'d' is not an axis"):
        plot_sweep_curve(ds, "cluster_mean", axis="d")
    with pytest.raises(ValueError, match="model=kuramoto is not in this sweep"):
        plot_sweep_curve(ds, "cluster_mean", where={"model": "kuramoto"})
    with pytest.raises(ValueError, match="kind must be one of"):
        sweep_figure(ds, "sphere")
    with pytest.raises(ValueError, match="needs a statistic"):
        sweep_figure(ds, "curve")


def test_save_sweep_plot(tmp_path):
    ds = synthetic({"beta": BETAS})
    out = default_sweep_output(tmp_path / "sweep.h5", "phase-diagram")
    assert out.name == "sweep_phase-diagram.png"
    assert save_sweep_plot(ds, "phase-diagram", out, dpi=40) == out
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(OutputExistsError):
        save_sweep_plot(ds, "phase-diagram", out)
    save_sweep_plot(ds, "curve", out, overwrite=True, stat="first_merge_time", dpi=40)


# ------------------------------------------------------------ particles plot SWEEP.h5


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory):
    """A small real sweep (two betas, nine systems each)."""
    from particles.sweep import SweepSpec, run_sweep

    spec = SweepSpec(base=dict(n=6, d=2, integrator="euler", dt=0.1, T=2.0, save_every=2),
                     axes=(("beta", (1.0, 5.0)),), runs=9, seed=11)
    path = tmp_path_factory.mktemp("sweep") / "s.h5"
    run_sweep(spec, path)
    return path


def _png(path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_plots_every_sweep_kind(sweep_file, tmp_path):
    from clitools import invoke, ok

    from particles.sweep import load

    result = invoke("plot", sweep_file, "--dpi", 30)  # default: the phase diagram
    ok(result)
    default = sweep_file.with_name("s_phase-diagram.png")
    assert result.output.strip() == str(default) and _png(default)
    for args in (["--kind", "clusters", "--times", "1,2"],
                 ["--kind", "curve", "--stat", "first_merge_time"],
                 ["--kind", "curve", "--stat", "pair_fraction", "--delta", "0.01", "--linear"],
                 ["--kind", "phase-diagram", "--delta", "0.1", "--where", "beta=5"]):
        out = tmp_path / f"{args[1]}{len(args)}.png"
        ok(invoke("plot", sweep_file, *args, "--out", out, "--dpi", 30))
        assert _png(out)
    ds = load(sweep_file)
    fig = sweep_figure(ds, "phase-diagram")
    assert np.asarray(fig.axes[0].collections[0].get_array()).size == ds.sizes["time"] * 2


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--kind", "histogram"], "'histogram' draws a trajectory"),
        (["--kind", "curve"], "the curve kind needs a statistic"),
        (["--kind", "curve", "--stat", "nope"], "'nope' is not a statistic"),
        (["--axis", "d"], "'d' is not an axis"),
        (["--where", "d=3"], "'d' is not an axis"),
        (["--where", "beta"], "must be AXIS=VALUE"),
        (["--system", "1"], "is for trajectory files"),
        (["--out", "x.txt"], "is not a format a picture can be written to"),
    ],
)
def test_cli_bad_sweep_plots_are_one_line(sweep_file, tmp_path, args, fragment):
    from clitools import invoke, usage_error

    if "--out" not in args:
        args = [*args, "--out", tmp_path / "p.png"]
    usage_error(invoke("plot", sweep_file, *args), fragment)
    assert not (tmp_path / "p.png").exists()


def test_cli_sweep_kinds_and_options_refused_for_other_files(tmp_path):
    import h5py
    from clitools import invoke, usage_error

    other = tmp_path / "other.h5"
    with h5py.File(other, "w"):
        pass
    usage_error(invoke("plot", other, "--kind", "phase-diagram"), "draws a sweep file")
    usage_error(invoke("plot", other, "--stat", "cluster_mean"), "is for sweep files")


@pytest.mark.parametrize("args, option, fragment", [
    (["--times", "abc", "--kind", "clusters"], "--times", "numbers"),
    (["--times", "1", "--kind", "phase-diagram"], "--times", "not used by --kind phase-diagram"),
    (["--kind", "clusters", "--delta", "0.1"], "--delta", "not used by --kind clusters"),
    (["--delta", "nan"], None, "delta=nan is not in this sweep"),
    (["--delta", "0.5"], None, "delta=0.5 is not in this sweep"),
    (["--kind", "curve", "--stat", "cluster_mean", "--axis", "time", "--where", "beta=99"],
     None, "beta=99 is not in this sweep"),
])
def test_a_value_the_plot_would_ignore_is_refused(sweep_file, tmp_path, args, option, fragment):
    """Issue 25 item 11: --times abc, --where beta=99, --delta nan and --delta 0.5
    (not stored) drew a picture of something else, exit 0."""
    from clitools import invoke, usage_error

    out = tmp_path / "p.png"
    usage_error(invoke("plot", sweep_file, *args, "--out", out), *filter(None, [option]),
                fragment)
    assert not out.exists()


def test_a_stored_value_typed_as_printed_is_found(sweep_file, tmp_path):
    from clitools import invoke, ok

    ok(invoke("plot", sweep_file, "--delta", "0.01", "--out", tmp_path / "p.png"))


def test_grid_values_and_times_are_rounded_for_display():
    """Issue 28, item 7: ``beta=0.30000000000000004`` reads ``β=0.3`` and a
    log-spaced save time ``10235.3`` reads ``1.024e+04``; the dataset keeps
    both exact."""
    betas = list(np.linspace(0.1, 0.6, 6))
    assert betas[2] == 0.30000000000000004
    ds = synthetic({"beta": betas, "d": [2, 3]}, times=(0.0, 1.37, 10235.3, 1e5))
    ax = plot_cluster_counts(ds, axis="beta", where={"d": 2}, times=[10235.3])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("t = 1.024e+04" in lab for lab in labels), labels
    assert not any("10235.3" in lab for lab in labels)
    ax = plot_sweep_curve(ds, "cluster_mean", axis="d", where={"beta": betas[2]},
                          times=[10235.3])
    assert "β=0.3" in ax.get_title() and "0.30000000000000004" not in ax.get_title()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("t = 1.024e+04" in lab for lab in labels), labels
    assert ds.beta.values[2] == 0.30000000000000004 and ds.time.values[2] == 10235.3


def test_cli_times_beyond_the_sweep_are_refused(sweep_file, tmp_path):
    """Issue 38 item 6: --times past the sweep's last save time drew the last
    time; --times given to a statistic with no time axis was ignored."""
    from clitools import invoke, usage_error

    out = tmp_path / "p.png"
    usage_error(invoke("plot", sweep_file, "--kind", "clusters", "--times", "1,99", "--out", out),
                "--times", "[0, 2]", "99")
    usage_error(invoke("plot", sweep_file, "--kind", "curve", "--stat", "first_merge_time",
                       "--times", "1", "--out", out), "--times", "no time dimension")
    assert not out.exists()


def _censored_sweep() -> xr.Dataset:
    """64 runs per beta, T = 6: at beta = 2 the upper quartile of the first merge is
    not reached, at beta = 4 neither is the median; at beta = 2 only 2 systems are at
    risk (61 formed one cluster, 1 never formed)."""
    ds = synthetic({"beta": BETAS}, runs=64)
    fm = np.array([[1.0, 1.5, 2.0, 3.0, 4.0],
                   [1.0, 2.0, 2.5, 3.5, np.inf],
                   [1.0, 2.0, 3.0, np.inf, np.inf],
                   [2.0, 4.0, np.inf, np.inf, np.inf],
                   [np.nan] * 5])
    ds["first_merge_time"] = (("beta", "quantile"), fm)
    ds["formation_censored"] = ("beta", np.array([0, 0, 1, 0, 64]))
    ds["first_merge_one_cluster"] = ("beta", np.array([0, 10, 61, 0, 0]))
    ds["first_merge_censored"] = ("beta", np.array([0, 1, 1, 40, 0]))
    return ds


def test_censored_quartiles_are_marked_not_dropped():
    """Issue 38 item 9: an upper quartile (or median) beyond T was left out of the
    picture without a word; now it is dashed up to T with an open triangle there,
    and the legend says "censored"."""
    from matplotlib.collections import LineCollection

    from particles.plotting.censored import CENSORED

    ds = _censored_sweep()
    ax = plot_sweep_curve(ds, "first_merge_time")
    T = 6.0  # the sweep's last save time: where the systems without a merge are censored
    marks = [ln for ln in ax.get_lines() if ln.get_gid() == CENSORED]
    upper = next(ln for ln in marks if "upper quartile > T = 6" in ln.get_label())
    median = next(ln for ln in marks if "median > T = 6" in ln.get_label())
    assert upper.get_xdata().tolist() == [2.0, 4.0] and set(upper.get_ydata()) == {T}
    assert median.get_xdata().tolist() == [4.0] and median.get_marker() == "^"
    (dashed,) = [c for c in ax.collections
                 if isinstance(c, LineCollection) and c.get_gid() == CENSORED]
    segments = [s.tolist() for s in dashed.get_segments()]
    assert segments == [[[2.0, 2.0], [2.0, T]], [[4.0, 4.0], [4.0, T]]]  # from the lower quartile
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sum("censored" in lab for lab in labels) == 2, labels


def test_systems_at_risk_are_given_per_point():
    """Issue 38 item 9: the beta = 2 median rested on 2 of 64 systems and nothing
    said so: the systems at risk label a top axis and come as one line per point."""
    ds = _censored_sweep()
    lines: list[str] = []
    ax = plot_sweep_curve(ds, "first_merge_time", report=lines.append)
    (top,) = [c for c in ax.child_axes]
    assert [t.get_text() for t in top.get_xticklabels()] == ["64", "54", "2", "64", "0"]
    assert "of 64" in top.get_xlabel()
    assert len(lines) == 5
    assert lines[2] == ("beta=2: median 3, quartiles 2 .. > 6; 2 of 64 systems at risk, "
                        "1 censored at T = 6, 61 formed one cluster, 1 never formed")
    assert lines[3].startswith("beta=4: median > 6, quartiles 4 .. > 6; 64 of 64")
    assert lines[4] == "beta=8: undefined, no system at risk (of 64, 64 never formed)"
    # formation: every system is at risk; per-system times: inf is censored
    plot_sweep_curve(ds, "single_cluster_time", report=lines.append)
    assert lines[-1].endswith("64 of 64 systems at risk, 1 censored at T = 6")


def test_cli_prints_the_systems_at_risk(sweep_file, tmp_path):
    from clitools import invoke, ok

    out = tmp_path / "c.png"
    result = invoke("plot", sweep_file, "--kind", "curve", "--stat", "first_merge_time",
                    "--out", out)
    ok(result)
    lines = result.output.splitlines()
    assert lines[0] == str(out)
    assert [ln.split(":")[0] for ln in lines[1:]] == ["beta=1", "beta=5"]
    assert all("of 9" in ln for ln in lines[1:]), lines
