"""A particle run on S^2 against a density on S^2 (issue 42 item 4): the sliced W1 over
time, the tokens' equal-area histogram, and ``plot --kind compare`` of S^2 files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from clitools import invoke, ok, usage_error

from particles.config import SimulationConfig
from particles.io import TrajectoryWriter, load
from particles.io.density import load_density
from particles.meanfield.sliced import sliced_w1_density
from particles.meanfield.sphere_config import SphereFieldConfig
from particles.plotting.compare_sphere import sliced_against_density, token_histogram
from particles.runs.meanfield import run_meanfield_to_file
from particles.trajectory import Frame

S2 = SphereFieldConfig(d=3, lmax=12, model="sa", beta=1.0, D=0.05, T=1.0, save_every=0.5,
                       init="vonmises:kappa=2")
TIMES = (0.0, 0.5, 1.0)


@pytest.fixture(scope="module")
def field(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("s2") / "s2.h5"
    run_meanfield_to_file(S2, path)
    return path


def sphere_run(path: Path, times, n: int = 300, d: int = 3, seed: int = 0) -> Path:
    """A particle run written without running it: i.i.d. uniform tokens turning about
    e_z at unit speed."""
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal((n, d))
    x0 /= np.linalg.norm(x0, axis=1, keepdims=True)
    config = SimulationConfig(n=n, d=d, beta=1.0, model="usa", T=float(times[-1]),
                              save_times=tuple(times[1:]), seed=seed)
    w = TrajectoryWriter.create(path, config)
    for f, t in enumerate(times):
        c, s = np.cos(t), np.sin(t)
        x = x0.copy()
        x[:, 0], x[:, 1] = c * x0[:, 0] - s * x0[:, 1], s * x0[:, 0] + c * x0[:, 1]
        w.append(Frame(f, f, float(t), x[None], {"order_parameter": np.zeros(1)}))
    w.close(complete=True)
    return path


def test_the_distance_over_time_is_the_sliced_w1_of_each_frame(tmp_path, field):
    run, density = load(sphere_run(tmp_path / "r.h5", TIMES)), load_density(field)
    curve = sliced_against_density(run, density)
    np.testing.assert_array_equal(curve.times, TIMES)
    for k in range(3):
        x = run.positions[k].reshape(-1, 3)
        ref = sliced_w1_density(x, density.rho[k], density.theta, density.phi,
                                density.weights, S2.lmax)
        assert curve.distance[k] == pytest.approx(ref, rel=1e-12)
    # uniform tokens against a cap of kappa = 2: far, and more than sampling noise
    assert np.all(curve.distance > 0.1)
    apart = load(sphere_run(tmp_path / "a.h5", [0.1, 0.2]))
    with pytest.raises(ValueError, match="share no save time"):
        sliced_against_density(apart, density)


def test_the_histogram_is_relative_to_the_uniform_measure_on_equal_areas():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3200, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    lon, lat, values = token_histogram(x)
    assert values.shape == (lat.size - 1, lon.size - 1) == (10, 20)
    assert values.mean() == pytest.approx(1.0, rel=1e-12)
    assert 0.15 < values.std() < 0.35  # 16 tokens a cell: Poisson, 1/4
    lon, lat, values = token_histogram(np.array([[0, 0, 1.0], [0, 0, -1.0]]), np.array([3, 1]))
    assert values[0].sum() == pytest.approx(0.75 * 8) and values[-1].sum() == pytest.approx(2)
    assert lat[0] == pytest.approx(np.pi / 2) and lat[-1] == pytest.approx(-np.pi / 2)


def test_cli_plot_compare_on_the_sphere(tmp_path, field):
    run = sphere_run(tmp_path / "r.h5", TIMES)
    ok(result := invoke("plot", field, "--kind", "compare", "--with", run, "--out",
                        tmp_path / "c.png", "--times", "0,1", "--dpi", 40))
    assert result.stdout.strip() == str(tmp_path / "c.png")
    ok(invoke("plot", run, "--kind", "compare", "--with", field, "--out", tmp_path / "c2.png",
              "--dpi", 40))
    for name in ("c.png", "c2.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    circle = sphere_run(tmp_path / "d2.h5", TIMES, d=2)
    usage_error(invoke("plot", field, "--kind", "compare", "--with", circle, "--out",
                       tmp_path / "x.png"), "S^2 (d = 3)", "got d = 2")
    axis = tmp_path / "axis.h5"
    run_meanfield_to_file(SphereFieldConfig(d=3, lmax=8, axisymmetric=True, model="sa",
                                            beta=1.0, D=0.05, T=1.0, save_every=0.5), axis)
    usage_error(invoke("plot", axis, "--kind", "compare", "--with", run, "--out",
                       tmp_path / "y.png"), "axisymmetric")
    assert not any((tmp_path / n).exists() for n in ("x.png", "y.png"))
