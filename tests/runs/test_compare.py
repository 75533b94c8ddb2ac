"""Model comparison (particles.runs.compare): one initial condition, several models, one file."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pyh5md
import pytest

import particles
import particles.runs.compare as compare_module
from particles.engine import IntegrationError, iter_frames, run
from particles.fields.kuramoto import natural_frequencies
from particles.io import OutputPathError, TrajectoryFileError
from particles.runs import run_to_file
from particles.runs.compare import (
    ComparisonFailed,
    ComparisonInterrupted,
    ComparisonResult,
    compare_models,
    load_comparison,
    plot_comparison,
)

MODELS = ("sa", "usa", "kuramoto")
# small and cheap: every test shares the rk4 kernels of these three models
SMALL = dict(n=10, T=0.4, dt=0.05, save_every=2, seed=7)
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> ComparisonResult:
    out = tmp_path_factory.mktemp("compare") / "cmp.h5"
    return compare_models(beta=2.0, coupling=1.5, omega="gaussian:0.3", out=out, **SMALL)


# ---------------------------------------------------------------- running
def test_models_start_from_identical_positions(result):
    assert result.models == MODELS
    first = result.trajectories["sa"]
    for traj in result.trajectories.values():
        assert traj.positions.shape == (5, 10, 2)
        np.testing.assert_array_equal(traj.positions[0], first.positions[0])
        np.testing.assert_array_equal(traj.times, first.times)
        assert traj.complete and traj.config.seed == result.seed == 7
    np.testing.assert_array_equal(result.initial, first.positions[0])


def test_each_stored_configuration_reproduces_its_run(result):
    for traj in result.trajectories.values():
        again = run(traj.config)
        np.testing.assert_array_equal(again.positions, traj.positions)
    k = result.trajectories["kuramoto"].config
    assert (k.coupling, k.omega) == (1.5, "gaussian:0.3")
    assert np.ptp(natural_frequencies(k)) > 0


def test_beta_zero_gives_the_same_trajectory_for_every_model(tmp_path):
    res = compare_models(beta=0.0, out=tmp_path / "b0.h5", **SMALL)
    sa = res.trajectories["sa"].positions
    assert np.ptp(sa[:, :, 0], axis=0).max() > 1e-3  # the tokens do move
    np.testing.assert_allclose(res.trajectories["usa"].positions, sa, rtol=0, atol=1e-13)
    # Kuramoto's rk4 runs on the phases (issue 11): the same ODE by another
    # order-4 scheme, equal to truncation error (measured 1.2e-11 at dt = 0.05)
    np.testing.assert_allclose(res.trajectories["kuramoto"].positions, sa, rtol=0, atol=1e-9)


def test_given_angles_are_frame_zero_and_fix_n(tmp_path):
    theta = np.linspace(0.0, 1.5, 6)
    res = compare_models(
        beta=1.0, models="sa,kuramoto", theta0=theta, out=tmp_path / "a.h5", T=0.2, dt=0.05
    )
    assert res.models == ("sa", "kuramoto")
    for traj in res.trajectories.values():
        assert traj.config.init == "array" and traj.n == 6
        np.testing.assert_allclose(traj.positions[0], np.c_[np.cos(theta), np.sin(theta)])


def test_summaries_and_table(result):
    summaries = result.summaries()
    assert [s.model for s in summaries] == list(MODELS)
    for s in summaries:
        traj = result.trajectories[s.model]
        assert s.order_parameter == pytest.approx(np.linalg.norm(traj.final.mean(axis=0)))
        assert 1 <= s.clusters <= 10 and 0 < s.energy_normalized <= 1 and s.time == 0.4
    counts = result.cluster_counts()
    assert all(
        c.shape == (5,) and c[-1] == s.clusters
        for c, s in zip(counts.values(), summaries, strict=True)
    )
    lines = result.table().splitlines()
    assert len(lines) == 4 and lines[0].split()[0] == "model"
    assert [line.split()[0] for line in lines[1:]] == ["SA", "USA", "Kuramoto"]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        (dict(models=("sa", "gpt")), "models must be one or more"),
        (dict(models=("sa", "sa")), "must not repeat"),
        (dict(models=()), "models must be one or more"),
        (dict(models=("sa", "usa"), coupling=2.0), "apply to model 'kuramoto'"),
        (dict(n=0), "n must be"),
        (dict(theta0=np.zeros(3)), "theta0 holds 3 tokens but n=10"),
        (dict(theta0=np.zeros((10, 3))), "theta0 must be"),
        (dict(omega="cauchy:1"), "omega must be"),
        (dict(save_times="log:0:1:3"), "save_times must be"),
        (dict(init="orthogonal"), "init must not be 'orthogonal'"),
    ],
)
def test_bad_arguments_are_refused_before_any_work(tmp_path, no_comparison_run, kwargs,
                                                    fragment):
    out = tmp_path / "bad.h5"
    with pytest.raises(ValueError, match=fragment):
        compare_models(beta=1.0, out=out, **{**SMALL, **kwargs})
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- the file
def test_file_layout_read_with_plain_h5py(result):
    with h5py.File(result.path, "r") as f:
        assert list(f["h5md"].attrs["version"]) == [1, 1]
        assert f["h5md/creator"].attrs["name"] == "particles"
        params = f["parameters"]
        assert params.attrs["kind"] == "comparison"
        assert json.loads(params.attrs["models"]) == list(MODELS)
        assert params.attrs["seed"] == "7" and params.attrs["complete"] == 1
        assert "numpy" in params["versions"].attrs
        assert sorted(f["particles"]) == sorted(MODELS)
        for m in MODELS:
            traj = result.trajectories[m]
            group = f[f"particles/{m}"]
            assert group["box"].attrs["dimension"] == 2
            assert list(group["box"].attrs["boundary"]) == ["none", "none"]
            pos = group["position"]
            np.testing.assert_array_equal(pos["value"][()], traj.positions)
            np.testing.assert_array_equal(pos["time"][()], traj.times)
            np.testing.assert_array_equal(pos["step"][()], traj.steps)
            for name, value in traj.observables.items():
                element = f[f"observables/{m}/{name}"]
                np.testing.assert_array_equal(element["value"][()], value)
                for key in ("step", "time"):  # hard links: the very same HDF5 object
                    assert element[key].id == pos[key].id
            config = json.loads(params[m].attrs["config"])
            assert config["model"] == m and config["seed"] == 7 and config["d"] == 2
            assert params[m].attrs["complete"] == 1


def test_every_model_is_an_h5md_particle_group(result):
    with pyh5md.File(result.path, "r") as f:
        for m in MODELS:
            position = pyh5md.element(f[f"particles/{m}"], "position")
            assert position.element_type == "TimeElement"
            assert position.value.shape == (5, 10, 2)
            for name in f[f"observables/{m}"]:
                element = pyh5md.element(f[f"observables/{m}"], name)
                assert element.element_type == "TimeElement"
                np.testing.assert_array_equal(element.step[:], position.step[:])


def test_load_comparison_round_trip(result):
    loaded = load_comparison(result.path)
    assert list(loaded) == list(MODELS)
    for m, traj in loaded.items():
        mine = result.trajectories[m]
        np.testing.assert_array_equal(traj.positions, mine.positions)
        assert traj.config == mine.config and traj.complete
        assert traj.observables.keys() == mine.observables.keys()
    assert ComparisonResult.from_file(result.path).seed == 7


def test_single_run_readers_and_comparison_reader_refuse_each_other(result, tmp_path):
    for read in (particles.load, particles.read_summary):
        with pytest.raises(TrajectoryFileError, match="load_comparison") as err:
            read(result.path)
        assert "\n" not in str(err.value) and "model comparison" in str(err.value)
    single = tmp_path / "single.h5"
    run_to_file(result.trajectories["sa"].config, single)
    with pytest.raises(TrajectoryFileError, match=r"particles\.load"):
        load_comparison(single)
    with pytest.raises(TrajectoryFileError, match="no such file"):
        load_comparison(tmp_path / "missing.h5")


@pytest.mark.parametrize(("schema", "fragment"), [(2, "newer particles"),
                                                  ("x", "invalid particles_schema")])
def test_comparison_files_of_other_schemas_are_refused(result, tmp_path, schema, fragment):
    """The same schema check as single-run files (particles.io.h5md.check_schema)."""
    copy = tmp_path / "other.h5"
    copy.write_bytes(result.path.read_bytes())
    with h5py.File(copy, "r+") as f:
        f["parameters"].attrs["particles_schema"] = schema
    with pytest.raises(TrajectoryFileError, match=fragment):
        load_comparison(copy)


def test_existing_output_is_never_overwritten_without_overwrite(tmp_path, monkeypatch):
    out, png = tmp_path / "c.h5", tmp_path / "c.png"
    out.write_bytes(b"old")
    with monkeypatch.context() as m:
        m.setattr(compare_module, "iter_frames", lambda *a, **k: pytest.fail("a run started"))
        with pytest.raises(OutputPathError, match="exists"):
            compare_models(beta=1.0, out=out, **SMALL)
        png.write_bytes(b"old png")
        with pytest.raises(OutputPathError, match="exists"):
            compare_models(beta=1.0, out=tmp_path / "new.h5", plot=png, **SMALL)
        with pytest.raises(OutputPathError, match="different files"):
            compare_models(beta=1.0, out=out, plot=out, overwrite=True, **SMALL)
    assert out.read_bytes() == b"old" and png.read_bytes() == b"old png"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.h5", "c.png"]
    res = compare_models(beta=1.0, out=out, plot=png, overwrite=True, **SMALL)
    assert list(load_comparison(out)) == list(MODELS) == list(res.models)
    assert png.read_bytes().startswith(PNG)


def test_interrupted_comparison_keeps_its_frames_marked_incomplete(tmp_path):
    out = tmp_path / "stop.h5"
    polls = []

    def stop_in_second_model() -> bool:
        polls.append(1)
        return len(polls) > 7  # 5 frames of SA, then 3 of USA

    with pytest.raises(ComparisonInterrupted) as err:
        compare_models(beta=1.0, out=out, should_stop=stop_in_second_model, **SMALL)
    assert err.value.kept == out
    loaded = load_comparison(out)
    assert list(loaded) == ["sa", "usa"]
    assert loaded["sa"].complete and not loaded["usa"].complete
    assert loaded["usa"].frames == 3
    with h5py.File(out, "r") as f:
        assert f["parameters"].attrs["complete"] == 0
    # an existing file is never replaced by an incomplete comparison
    with pytest.raises(ComparisonInterrupted) as err:
        compare_models(beta=1.0, out=out, overwrite=True, should_stop=lambda: True, **SMALL)
    assert err.value.kept is None
    assert list(load_comparison(out)) == ["sa", "usa"]
    assert [p.name for p in tmp_path.iterdir()] == ["stop.h5"]


@pytest.mark.parametrize(
    ("error", "raised"),
    [(KeyboardInterrupt, ComparisonInterrupted), (IntegrationError, ComparisonFailed)],
)
def test_a_model_failing_before_its_first_frame(tmp_path, monkeypatch, error, raised):
    def frames(config, *args, **kwargs):
        if config.model == "usa":
            raise error("stop")
        yield from iter_frames(config, *args, **kwargs)

    monkeypatch.setattr(compare_module, "iter_frames", frames)
    out = tmp_path / "f.h5"
    with pytest.raises(raised, match="holds the frames so far") as err:
        compare_models(beta=1.0, out=out, **SMALL)
    assert err.value.kept == out
    loaded = load_comparison(out)  # usa has its groups but no frame: left out
    assert list(loaded) == ["sa"] and loaded["sa"].complete


# ---------------------------------------------------------------- the plot
def test_plot_is_a_png_from_a_result_or_a_path(result, tmp_path):
    a = plot_comparison(result, tmp_path / "a.png")
    b = plot_comparison(result.path, tmp_path / "b.png")
    for png in (a, b):
        data = png.read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000
    with pytest.raises(FileExistsError, match="exists"):
        plot_comparison(result, a)
    assert plot_comparison(result.trajectories, a, overwrite=True) == a


def test_figure_panels(result):
    fig = compare_module.comparison_figure(result)
    axes = fig.get_axes()
    lines, circles = axes[:3], axes[3:]
    assert len(circles) == 3
    for ax in lines:
        assert len(ax.get_lines()) >= 3 and ax.get_xscale() == "linear"  # 0.1 .. 0.4: no decade
    assert [t.get_text() for t in lines[0].get_legend().get_texts()] == [
        "SA",
        "USA",
        "Kuramoto (c=1.5, ω~gaussian:0.3)",
    ]
    assert [ax.get_title().split()[0] for ax in circles] == ["SA", "USA", "Kuramoto"]
