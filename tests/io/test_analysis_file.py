"""The analysis sidecar as a file kind (``particles.io.analysis.ANALYSIS``): named by
``kind_of``, refused in one line by the readers of every other kind, and refusing them."""

from __future__ import annotations

from pathlib import Path

import h5py
import pytest
from synthetic import collapsing, write_file

from particles.analysis import analyze, read_analysis, write_analysis
from particles.io import FILE_KINDS, TrajectoryFileError, kind_of
from particles.io.analysis import ANALYSIS, analysis_path, read_analysis_summary

OTHERS = [k for k in FILE_KINDS.values() if k is not ANALYSIS]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A trajectory and its sidecar."""
    path = tmp_path_factory.mktemp("analysed") / "run.h5"
    traj = collapsing(2, batch=3)
    write_file(path, traj)
    write_analysis(path, analyze(traj))
    return path


def written(kind, path: Path) -> Path:
    """The kind's example written whole into ``path``."""
    example = kind.example()
    writer = kind.create(path, example.spec, flush_interval=0.0)
    for item in example.items(None):
        writer.append(item)
    writer.close(complete=True)
    return path


def test_kind_of_names_the_sidecar_and_its_summary_says_what_it_holds(run):
    sidecar = analysis_path(run)
    assert kind_of(sidecar) is ANALYSIS and kind_of(run).name == "trajectory"
    s = read_analysis_summary(sidecar)
    assert s.complete and s.items == s.items_expected > 10 and s.frames == 7
    assert s.trajectory == "run.h5" and int(s.attrs["batch"]) == 3


def test_a_sidecar_written_before_it_was_a_kind_is_still_one(run, tmp_path):
    old = tmp_path / "old.analysis.h5"
    with h5py.File(analysis_path(run), "r") as src, h5py.File(old, "w") as dst:
        src.copy("analysis", dst)  # no header: only the /analysis group
    assert kind_of(old) is ANALYSIS and read_analysis_summary(old).complete
    assert (read_analysis(old).counts == read_analysis(run).counts).all()
    # a trajectory holding /analysis itself (analysed before sidecars) stays a trajectory
    inside = tmp_path / "inside.h5"
    inside.write_bytes(run.read_bytes())
    with h5py.File(analysis_path(run), "r") as src, h5py.File(inside, "a") as dst:
        src.copy("analysis", dst)
    assert kind_of(inside).name == "trajectory"


@pytest.mark.parametrize("kind", OTHERS, ids=[k.name for k in OTHERS])
def test_every_other_reader_refuses_the_sidecar_in_one_line(run, kind):
    sidecar = analysis_path(run)
    for read in (kind.summarize, kind.load):
        with pytest.raises(kind.error) as info:
            read(sidecar)
        text = str(info.value)
        assert "\n" not in text and str(sidecar) in text, text
    if kind.name in ("trajectory", "density"):  # the readers that name the kind they met
        assert "is a trajectory analysis file (particles analyze)" in text
        assert "read it with particles.analysis.read_analysis" in text


@pytest.mark.parametrize("kind", [k for k in OTHERS if k.name != "trajectory"],
                         ids=lambda k: k.name)
def test_the_analysis_reader_refuses_a_file_of_another_kind_in_one_line(kind, tmp_path):
    path = written(kind, tmp_path / "other.h5")
    for read in (read_analysis, ANALYSIS.summarize):
        with pytest.raises(TrajectoryFileError) as info:
            read(path)
        text = str(info.value)
        assert "\n" not in text and str(path) in text
        assert f"is a {kind.description} file ({kind.command}), not analysis results" in text


def test_a_file_without_results_is_still_a_key_error(tmp_path):
    empty = tmp_path / "empty.h5"
    h5py.File(empty, "w").close()
    with pytest.raises(KeyError, match="particles analyze"):
        read_analysis(empty)
