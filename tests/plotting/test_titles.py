"""Titles and figures that say what ran (issue 11, item 9): one function
builds the title from a config; merge labels never overprint; the angle panel
cuts the circle at the largest gap."""

from __future__ import annotations

import numpy as np
import pytest
from synthetic import collapsing

from particles.analysis import analyze
from particles.analysis.tracking import MergeEvent
from particles.config import SimulationConfig
from particles.plotting import (
    largest_gap_cut,
    make_figure,
    merge_label_groups,
    plot_angles,
    plot_cluster_count,
)
from particles.plotting.titles import run_title, time_label


def test_title_names_model_kernel_parameter_and_value_matrix():
    cfg = SimulationConfig(n=32, d=3, beta=4.0, kernel="rbf", tau=2.5, V="minus_identity", seed=7)
    title = run_title(cfg)
    assert title.startswith("SA, rbf kernel, τ=2.5")
    assert "n=32, d=3" in title and "V=-I (repulsive)" in title and "seed 7" in title
    quad = SimulationConfig(n=8, d=3, beta=1.0, model="usa", kernel="quadratic", gamma=0.5)
    assert "USA, quadratic kernel, \u03b3=0.5" in run_title(quad)
    edp = run_title(SimulationConfig(n=8, d=3, beta=9.0))
    assert "edp kernel, β=9" in edp and "V=" not in edp and "seed" not in edp


def test_title_names_weights_heads_layers_usa_scale_and_member():
    cfg = SimulationConfig(
        n=16, d=4, beta=2.0, model="usa", usa_scale="n_exp_beta", weights="gaussian",
        heads=3, layer_time=0.5, batch=8, seed=2**120 + 1,
    )
    title = run_title(cfg, system=3).replace("\n", " ")
    for part in ("usa_scale=n_exp_beta (time e^β t)", "weights gaussian", "3 heads",
                 "layers of 0.5 time units", "system 3 of 8", "seed: see file"):
        assert part in title, title
    assert str(2**120 + 1) not in title
    assert "ensemble of 8" in run_title(cfg)
    assert time_label(cfg) == r"time $e^{\beta} t$ (usa_scale=n_exp_beta)"
    assert time_label(SimulationConfig(n=4, d=3, beta=1.0)) == "time t"


def test_kuramoto_title_names_coupling_and_frequencies():
    cfg = SimulationConfig(n=10, d=2, beta=0.0, model="kuramoto", coupling=2.0,
                           omega="lorentzian:0.5", seed=3)
    title = run_title(cfg)
    assert title.startswith("Kuramoto, c=2, ω~lorentzian:0.5") and "kernel" not in title


def test_figures_use_the_title_and_name_the_member_drawn():
    traj = collapsing(3, batch=3)
    a = analyze(traj)
    sphere = make_figure(traj, "sphere", analysis=a, system=2)
    assert "system 2 of 3" in sphere.axes[0].get_title()
    clusters = make_figure(traj, "clusters", analysis=a)
    assert clusters._suptitle.get_text() == run_title(traj.config)


def test_merge_labels_never_overprint():
    t = np.array([1.0, 10.0, 100.0, 101.0, 103.0, 1000.0])
    assert merge_label_groups(t[2:], 1.0, 1000.0) == [[0, 1, 2], [3]]
    merges = [MergeEvent(k, float(tt), 0, 0, (k + 1,), (4, 4)) for k, tt in enumerate(t[2:])]
    ax = plot_cluster_count(np.geomspace(1, 1000, 30), np.full(30, 3), merges=merges,
                            formation_time=2.0)
    texts = [x.get_text() for x in ax.texts]
    assert texts == ["merges 4+4, 4+4, 4+4", "merge 4+4"]


def test_angle_panel_cuts_the_circle_at_the_largest_gap():
    # a cluster straddling 0 = 2 pi and one at pi: the cut must fall between them
    theta = np.array([-0.1, -0.05, 0.0, 0.05, 0.1, np.pi - 0.05, np.pi + 0.05])
    cut = largest_gap_cut(theta)
    assert 0.1 < cut < np.pi - 0.05 or np.pi + 0.05 < cut < 2 * np.pi - 0.1
    x = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    ax = plot_angles(np.array([1.0, 2.0]), np.stack([x, x]))
    lo, hi = ax.get_ylim()
    assert hi - lo == np.float64(2 * np.pi) and lo == cut
    # the cluster around 0 is drawn as one band, not split at the axis ends
    ys = np.array([ln.get_ydata()[-1] for ln in ax.get_lines()[:5]])
    assert np.ptp(ys) < 0.25


@pytest.mark.parametrize("ext", ["png", "pdf", "svg"])
def test_a_figure_records_what_made_it_in_its_metadata(tmp_path, ext):
    """Issue 28 item 5: the record (seed, configuration) is inside the image file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from particles.plotting.record import read_record
    from particles.plotting.save import save_figure

    fig = plt.figure()
    out = save_figure(fig, tmp_path / f"f.{ext}", record={"seed": "123456789012345678901234567"})
    plt.close(fig)
    if ext == "png":
        assert read_record(out)["seed"] == "123456789012345678901234567"
    else:  # PDF Subject, SVG Description: the record as JSON text
        assert b"123456789012345678901234567" in out.read_bytes()


def test_compare_title_names_each_files_seed():
    """Issue 38 item 8: ``--kind compare`` titled a particle run drawn with seed 5
    with the field's seed 3 only, as if both came from seed 3."""
    from particles.meanfield import MeanFieldConfig, solve
    from particles.plotting.density import compare_figure
    from particles.trajectory import Trajectory

    field = solve(MeanFieldConfig(model="usa", beta=2.0, modes=32, T=1.0, save_every=0.5,
                                  init="modes:k=2,eps=0.05", seed=3))
    theta = np.random.default_rng(0).uniform(0, 2 * np.pi, 16)
    x = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    times = np.asarray(field.times)
    run = Trajectory(times=times, steps=np.arange(times.size),
                     positions=np.repeat(x[None], times.size, axis=0), observables={},
                     config=SimulationConfig(n=16, d=2, beta=2.0, model="usa", seed=5))
    title = compare_figure(field, run).get_suptitle()
    particles_side, field_side = title.split("  vs  ")
    assert "seed 5" in particles_side and "seed 3" not in particles_side, title
    assert "seed 3" in field_side, title


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_failed_figure_write_leaves_the_old_file_and_no_temporary(tmp_path, overwrite):
    """A write that fails halfway (here the file size limit, as a full disk would)
    never leaves a half-written image, nor replaces an existing one: every writer
    goes through ``save_figure`` (``savefig`` onto the target truncated it first)."""
    import resource
    import signal

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from particles.errors import OutputPathError
    from particles.plotting.save import save_figure

    out = tmp_path / "f.png"
    out.write_bytes(b"the old figure")
    fig = Figure()
    fig.add_subplot().plot(np.random.default_rng(0).random(500))
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not death
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, limits[1]))
    try:
        with pytest.raises(OSError):
            save_figure(fig, out, overwrite=overwrite)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, handler)
    assert out.read_bytes() == b"the old figure"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png"]
    if overwrite:
        save_figure(fig, out, overwrite=True)
        assert out.read_bytes().startswith(b"\x89PNG")
    else:
        with pytest.raises(OutputPathError):
            save_figure(fig, out)
        assert out.read_bytes() == b"the old figure"
