"""Figures by file kind (``particles.plotting.kinds.FIGURES``) and the package's face."""

from __future__ import annotations

from pathlib import Path

import pytest

import particles.plotting as plotting
from particles.io import FILE_KINDS
from particles.plotting.density import DENSITY_KINDS
from particles.plotting.kinds import DEFAULT_FIGURES, FIGURES, figure_kind, figure_owner
from particles.plotting.sweep import DEFAULT_SWEEP_KIND, SWEEP_KINDS


def test_every_family_is_a_file_kind_with_its_default_among_its_figures():
    assert set(FIGURES) == {"trajectory", "sweep", "density"}
    for family, figures in FIGURES.items():
        assert family in FILE_KINDS
        assert DEFAULT_FIGURES[family] in figures
        assert all(name == k.name and k.description for name, k in figures.items())
    assert FIGURES["trajectory"] is plotting.KINDS
    assert FIGURES["sweep"] is SWEEP_KINDS and FIGURES["density"] is DENSITY_KINDS
    assert DEFAULT_FIGURES["trajectory"] == plotting.DEFAULT_KIND
    assert DEFAULT_FIGURES["sweep"] == DEFAULT_SWEEP_KIND
    # only the movie is an animation, written to a GIF
    assert [k.name for f in FIGURES.values() for k in f.values() if k.animated] == ["movie"]
    assert FIGURES["trajectory"]["movie"].suffix == ".gif"


@pytest.mark.parametrize(("path_kind", "name", "other", "owner"), [
    ("trajectory", None, False, "trajectory"),
    ("trajectory", "histogram", False, "trajectory"),
    ("trajectory", "phase-diagram", False, "trajectory"),  # refused there: not a sweep
    ("trajectory", "compare", False, "density"),  # a run against a density, asked of the run
    ("trajectory", None, True, "density"),
    (None, None, False, "trajectory"),  # no kind opens it: the trajectory reader says why
    ("comparison", "clusters", False, "trajectory"),
    ("sweep", "clusters", False, "sweep"),
    ("sweep", "movie", False, "sweep"),  # refused there: a trajectory's figure
    ("density", None, False, "density"),
    ("density", "clusters", False, "density"),
])
def test_the_owner_of_a_request(path_kind, name, other, owner):
    assert figure_owner(path_kind, name, other) == owner


def test_an_unknown_figure_is_refused_in_one_line():
    assert figure_kind("sweep", "curve").needs == ("stat",)
    with pytest.raises(ValueError, match=r"^kind must be one of density, compare, got 'pie'$"):
        figure_kind("density", "pie")


def test_the_package_is_a_face_re_exporting_its_public_names():
    face = Path(plotting.__file__).read_text().splitlines()
    assert len(face) < 60
    for name in plotting.__all__:
        assert getattr(plotting, name) is not None
    for name in ("make_figure", "save_plot", "plot_file", "save_movie", "plot_tokens",
                 "plot_histogram", "plot_angles", "plot_cluster_count", "plot_energy",
                 "principal_directions", "largest_gap_cut", "merge_label_groups",
                 "default_frames", "default_output", "KINDS", "DEFAULT_KIND", "BANDS"):
        assert name in plotting.__all__
