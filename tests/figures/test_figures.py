"""``particles figures`` and the gallery (issue 27): the scripts in figures/ write
readable pictures, ``--only`` selects, bad input is one line and exit 2 before any
work, and every script also runs alone."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import invoke, ok, usage_error
from matplotlib.image import imread
from PIL import Image

import particles.gallery as gallery
from particles.errors import UnknownFigureError
from particles.gallery import FIGURES, figures_dir, select_figures

ROOT = Path(__file__).resolve().parents[2]

#: the figures the quick run below makes: every one (issue 27's acceptance).
QUICK = tuple(FIGURES)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("gallery")
    result = invoke("figures", "--quick", "--only", ",".join(QUICK), "--out", out)
    return out, result


def _png_size(path: Path) -> tuple[int, int]:
    image = imread(path)  # raises on anything but a readable picture
    assert image.ndim == 3 and image.shape[2] in (3, 4), image.shape
    return image.shape[1], image.shape[0]


def test_quick_run_writes_readable_pictures(quick):
    out, result = quick
    ok(result)
    for name in QUICK:
        width, height = _png_size(out / f"{name}.png")
        assert 600 <= width <= 4000 and 400 <= height <= 3000, (name, width, height)
        assert (out / f"{name}.png").stat().st_size < 300_000
    with Image.open(out / "tokens.gif") as gif:
        assert gif.format == "GIF"
        assert gif.n_frames > 5
        assert min(gif.size) >= 100


def test_one_line_per_file_with_its_seconds(quick):
    out, result = quick
    lines = result.stdout.splitlines()
    expected = [p for name in QUICK for p in FIGURES[name].outputs(out)]
    assert len(lines) == len(expected), result.stdout
    for line, path in zip(lines, expected, strict=True):
        assert line.startswith(f"{path.stem}: {path} (") and line.endswith(" s)"), line


def test_only_selects(quick):
    out, _ = quick
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(p.name for name in QUICK for p in FIGURES[name].outputs(out))


def test_unknown_names_are_listed():
    result = invoke("figures", "--only", "tokens,nope,nada")
    usage_error(result, "unknown figures 'nope', 'nada'", "known: " + ", ".join(FIGURES))
    with pytest.raises(UnknownFigureError, match="no figure named"):
        select_figures(" , ")
    assert select_figures("histograms,tokens") == ["tokens", "histograms"]  # gallery order


def test_an_existing_output_is_refused_before_any_work(tmp_path):
    (tmp_path / "tokens.gif").write_bytes(b"GIF89a")  # the figure's second file
    result = invoke("figures", "--quick", "--only", "histograms,tokens", "--out", tmp_path)
    usage_error(result, "tokens.gif exists", "--overwrite")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokens.gif"]  # nothing ran


def test_out_must_be_a_directory(tmp_path):
    (tmp_path / "file").write_text("")
    usage_error(invoke("figures", "--only", "tokens", "--out", tmp_path / "file"),
                "is not a directory")


def test_a_missing_figures_directory_is_one_line(tmp_path, monkeypatch):
    # an installed wheel: the package without the source tree beside it
    monkeypatch.setattr(gallery, "__file__", str(tmp_path / "particles" / "gallery.py"))
    result = invoke("figures", "--only", "tokens", "--out", tmp_path / "out")
    usage_error(result, "no figures/ directory", "source checkout")
    assert not (tmp_path / "out").exists()


def test_every_script_is_registered_and_has_main():
    scripts = {p.stem for p in figures_dir().glob("*.py")}
    assert scripts == set(FIGURES)
    for name in FIGURES:
        source = (figures_dir() / f"{name}.py").read_text()
        tree = ast.parse(source)
        mains = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
        assert mains and mains[0].args.args[0].arg == "argv", name
        assert "--quick" in source and "--out" in source, name
        assert "plt.show" not in source and "pyplot" not in source, name
        assert len(source.splitlines()) <= 180, f"{name}.py is long"


@pytest.mark.processes
def test_a_script_runs_alone(tmp_path):
    out = tmp_path / "h.png"
    proc = subprocess.run([sys.executable, str(ROOT / "figures" / "histograms.py"), "--quick",
                           "--out", str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert str(out) in proc.stdout
    _png_size(out)


def test_overwrite_replaces_an_existing_picture(tmp_path):
    png = tmp_path / "histograms.png"
    png.write_bytes(b"old")
    usage_error(invoke("figures", "--quick", "--only", "histograms", "--out", tmp_path),
                "histograms.png exists")
    assert png.read_bytes() == b"old"
    ok(invoke("figures", "--quick", "--only", "histograms", "--out", tmp_path, "--overwrite"))
    _png_size(png)
