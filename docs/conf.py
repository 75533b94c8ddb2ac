"""Sphinx configuration of the particles documentation.

Build (from the repository root)::

    pip install -e '.[docs]' && python -m sphinx -W -b html docs docs/_build/html

The API reference is generated from the docstrings (autosummary + numpydoc);
the gallery is sphinx-gallery over ``figures/``, not executed: each example
page shows the committed full-size PNG of its figure instead.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
FIGURES = ROOT / "figures"
sys.path.insert(0, str(ROOT))  # document the sources beside these pages, installed or not

import particles  # noqa: E402

project = "particles"
author = "particles developers"
copyright = "particles developers"
version = release = particles.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
templates_path = ["_templates"]
html_theme = "pydata_sphinx_theme"
html_title = f"particles {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}

# --- API reference: one page per public module, its __all__ (or its public names) ---
autosummary_generate = True
autosummary_ignore_module_all = False
autosummary_imported_members = False
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False
# Every numpydoc check except those the package does not (yet) follow: a See Also,
# Examples and Extended Summary everywhere (SA01, EX01, ES01), every parameter and
# return documented with a type and a description (PR01, PR04, PR07, RT01, RT03),
# and the summary's form (SS02, SS03, SS05, SS06, GL02; SS03 also flags the
# fields of NamedTuples, whose docstrings Python writes).
numpydoc_validation_checks = {"all", "SA01", "EX01", "ES01", "PR01", "PR04", "PR07", "RT01",
                              "RT03", "SS02", "SS03", "SS05", "SS06", "GL02"}

# --- Markdown guide pages ---
myst_heading_anchors = 3
myst_enable_extensions: list[str] = []

# --- gallery: the scripts of figures/, not executed (each runs for seconds to minutes) ---
sphinx_gallery_conf = {
    "examples_dirs": str(FIGURES),
    "gallery_dirs": "gallery",
    "plot_gallery": False,
    "filename_pattern": r"^$",  # nothing runs even with -D plot_gallery=1
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "write_computation_times": False,
}


def _prepare(app) -> None:
    """Start from no generated page, and give each example its committed PNG.

    The API pages (``api/``) and the gallery (``gallery/``) are generated anew
    by every build, so a page of a name that is gone does not linger.  The
    gallery is not executed: each committed ``figures/NAME.png`` is put where
    sphinx-gallery looks for an example's first image, which makes its
    thumbnail.  This runs before autosummary's and sphinx-gallery's own
    ``builder-inited``.
    """
    for generated in ("api", "gallery"):
        shutil.rmtree(DOCS / generated, ignore_errors=True)
    images = DOCS / "gallery" / "images"
    images.mkdir(parents=True, exist_ok=True)
    for png in sorted(FIGURES.glob("*.png")):
        shutil.copyfile(png, images / f"sphx_glr_{png.stem}_001.png")


def _with_title(text: str, name: str) -> str:
    """Give an example's page a title: its docstring's first line, less the issue number.

    The scripts' docstrings start with a plain sentence (``--help`` prints it),
    not with an RST heading, which a page and its toctree entry need.
    """
    label = f".. _sphx_glr_gallery_{name}.py:\n\n"
    at = text.find(label)
    if at < 0:
        return text
    start = at + len(label)
    first = text[start:text.find("\n", start)]
    title = re.sub(r"\s*\((issue \d+, )?fig(ure)?\.? \d+\)\.?$", "", first).rstrip(".")
    return f"{text[:start]}{title}\n{'=' * len(title)}\n\n{text[start:]}"


def _show_figure(app, docname: str, source: list[str]) -> None:
    """Insert the committed full-size PNG into each (unexecuted) example's page."""
    if not docname.startswith("gallery/") or docname == "gallery/index":
        return
    name = docname.split("/", 1)[1]
    if not (FIGURES / f"{name}.png").exists():
        return
    text = _with_title(source[0], name)
    marker = ".. GENERATED FROM PYTHON SOURCE LINES"
    first = text.find(marker)  # the code's first block, after the docstring
    figure = (f"\n.. figure:: /gallery/images/sphx_glr_{name}_001.png\n"
              f"   :alt: {name}\n   :width: 100%\n\n"
              f"   ``figures/{name}.png``, made by ``particles figures --only {name}``.\n\n")
    source[0] = text[:first] + figure + text[first:] if first > 0 else text + figure


def setup(app) -> None:
    app.connect("builder-inited", _prepare, priority=100)
    app.connect("source-read", _show_figure)
