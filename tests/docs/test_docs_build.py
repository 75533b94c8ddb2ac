"""The documentation site (docs/) builds with no warning, and the README is its front door.

The build is Sphinx with warnings as errors (numpydoc's validation of every
public docstring and autosummary's pages included) and the gallery of
``figures/`` not executed: each example page shows the committed PNG.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from particles.gallery import FIGURES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.processes
def test_the_docs_build_with_no_warning(tmp_path):
    out = tmp_path / "html"
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs",
         str(out)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-5000:]
    for name in FIGURES:  # every figure has its page, which shows its committed picture
        page = (out / "gallery" / f"{name}.html").read_text()
        assert 0 < page.find(f"sphx_glr_{name}_001.png") < page.find("__future__"), name
        png = out / "_images" / f"sphx_glr_{name}_001.png"
        assert png.read_bytes() == (ROOT / "figures" / f"{name}.png").read_bytes(), name
    for guide in sorted((ROOT / "docs" / "guide").glob("*.md")):
        assert (out / "guide" / f"{guide.stem}.html").is_file(), guide.name
    assert (out / "api" / "particles.simulate.html").is_file()


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 300
    for name in FIGURES:  # the thumbnail grid shows every figure of the gallery
        assert f"figures/{name}.png" in readme, name
    linked = set(re.findall(r"\(docs/(guide/[\w-]+)\.md(?:#[\w-]+)?\)", readme))
    assert linked, "the README links no guide page"
    for page in linked:
        assert (ROOT / "docs" / f"{page}.md").is_file(), page
    for command in ("simulate", "analyze", "plot", "sweep", "meanfield", "figures"):
        assert re.search(rf"^particles {command} ", readme, re.M), command
