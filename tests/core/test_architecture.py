"""The package's import structure: imports only point down (DESIGN.md section 3).

Every module of ``particles`` and ``particles_cli`` belongs to a declared
layer; a module may import only from its own layer or a lower one, at module
level, inside functions (function-level imports used to hide cycles) *and*
under ``if TYPE_CHECKING:`` (a type hint naming an upper layer is a cycle of
the design even if it never runs: the registries never name the
configuration) and through ``importlib.import_module("particles...")`` with
a literal name (the sweep's backends once imported each other that way,
unseen).  The import graph, type-level imports included, must have no
cycle, and no ``_``-prefixed name is imported from another module.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: layers, lowest first: module-name prefixes (the longest matching prefix wins).
LAYERS: list[tuple[str, ...]] = [
    ("particles.version", "particles._numba", "particles.fastexp", "particles.errors",
     "particles.paths", "particles.protocols", "particles.display",
     "particles.seeds", "particles.progress"),
    ("particles.sphere", "particles.trajectory"),
    ("particles.fields", "particles.integrators", "particles.observables"),
    # models build problems from a configuration, which validates against them
    ("particles.config", "particles.options", "particles.values", "particles.rules",
     "particles.models", "particles.plan"),
    ("particles.engine", "particles.events", "particles.circle", "particles.meanfield"),
    ("particles.io",),
    ("particles.analysis",),
    ("particles.plotting",),
    ("particles.runs", "particles.sweep",
     "particles.gallery"),
    ("particles_cli",),
    # the package root only re-exports lazily (module __getattr__)
    ("particles",),
]


def layer_of(module: str) -> int:
    best, level = -1, None
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, level = len(p), i
    if level is None:
        raise AssertionError(f"{module} has no declared layer: add it to LAYERS "
                             "(and to DESIGN.md section 3)")
    return level


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    names: tuple[str, ...]
    line: int


def module_files() -> dict[str, Path]:
    out = {}
    for pkg, top in (("particles", ROOT / "particles"), ("particles_cli", ROOT / "cli")):
        for path in sorted(top.rglob("*.py")):
            parts = list(path.relative_to(top).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([pkg, *parts])] = path
    return out


MODULES = module_files()


def _resolve(source: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = source.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports_by_name(call: ast.Call) -> bool:
    """``importlib.import_module("literal")`` or ``import_module("literal")``."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return (name == "import_module" and len(call.args) >= 1
            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str))


def imports_of(module: str, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[Import] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                found.append(Import(module, a.name, (), node.lineno))
        elif isinstance(node, ast.Call) and _imports_by_name(node):
            # importlib.import_module("particles.x"): an edge as real as an import
            found.append(Import(module, node.args[0].value, (), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node, path.name == "__init__.py")
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in MODULES:  # ``from pkg import submodule``
                    found.append(Import(module, sub, (), node.lineno))
                else:
                    found.append(Import(module, target, (a.name,), node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return [i for i in found if i.target.split(".")[0] in ("particles", "particles_cli")]


ALL_IMPORTS = [i for m, p in MODULES.items() for i in imports_of(m, p)]


def test_import_module_with_a_literal_name_is_an_import(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import importlib\n\ndef f():\n"
                      "    return importlib.import_module('particles.sweep')\n")
    assert [(i.target, i.line) for i in imports_of("particles.x", source)] == [
        ("particles.sweep", 4)]


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_imports_only_point_down():
    upward = sorted({
        f"{i.source} (layer {layer_of(i.source)}) imports {i.target} (layer "
        f"{layer_of(i.target)}) at line {i.line}"
        for i in ALL_IMPORTS
        if i.target in MODULES and layer_of(i.target) > layer_of(i.source)
    })
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_imports_name_existing_modules():
    missing = [f"{i.source}:{i.line} imports {i.target}" for i in ALL_IMPORTS
               if i.target not in MODULES]
    assert not missing, "\n".join(missing)


def test_no_import_cycles():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in ALL_IMPORTS:
        if i.target in MODULES and i.target != i.source:
            graph[i.source].add(i.target)
    # a package's __init__ importing its own submodules is how packages work; a
    # submodule importing its package back closes a cycle, which is what we catch
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def dfs(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                dfs(nxt, stack)
        stack.pop()
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            dfs(m, [])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_private_names_across_modules():
    leaks = [
        f"{i.source}:{i.line} imports {n} from {i.target}"
        for i in ALL_IMPORTS
        for n in i.names
        if n.startswith("_") and not n.startswith("__") and i.source != i.target
    ]
    assert not leaks, "private names imported from another module:\n" + "\n".join(leaks)


def test_library_never_imports_click():
    for module, path in MODULES.items():
        if module.startswith("particles."):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                        else [node.module or ""]
                    assert not any(n.split(".")[0] == "click" for n in names), module


def test_the_detector_finds_what_it_should(tmp_path):
    # the checks above are only worth something if the walker sees function-level
    # imports and those under TYPE_CHECKING
    src = tmp_path / "m.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from particles.io import load\n"
        "def f():\n    from particles.analysis import clusters\n    import particles.engine\n")
    found = {(i.target, i.names) for i in imports_of("particles.fields.demo", src)}
    assert ("particles.analysis.clusters", ()) in found
    assert ("particles.engine", ()) in found
    assert ("particles.io", ("load",)) in found


def test_a_type_level_cycle_is_refused(tmp_path):
    """The cycle of issue 24 (errors naming io.h5md.RunSummary under TYPE_CHECKING,
    fields naming config while config imports them) is what the walk must see."""
    src = tmp_path / "e.py"
    src.write_text("from typing import TYPE_CHECKING\n"
                   "if TYPE_CHECKING:\n    from particles.io.h5md import RunSummary\n")
    upward = [i for i in imports_of("particles.errors", src)
              if i.target in MODULES and layer_of(i.target) > layer_of("particles.errors")]
    assert [i.target for i in upward] == ["particles.io.h5md"]


@pytest.mark.parametrize("module", ["particles", "particles.sphere", "particles.errors",
                                    "particles.seeds", "particles.trajectory",
                                    "particles.config", "particles.fields",
                                    "particles.integrators", "particles.observables",
                                    "particles.models", "particles.protocols"])
def test_light_modules_load_neither_numba_nor_h5py(module):
    code = (f"import sys, {module}\n"
            "heavy = [m for m in ('numba', 'h5py', 'matplotlib') if m in sys.modules]\n"
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.strip()
    assert out == "", f"import {module} loaded {out}"


def test_public_api_is_lazy_and_complete():
    import particles

    for name in particles.__all__:
        assert getattr(particles, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        particles.nope  # noqa: B018


def test_every_package_is_installed():
    # pyproject lists the packages (cli/ installs as particles_cli): a package
    # missing there works in an editable checkout and is absent from a wheel
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    packages = {m for m, p in MODULES.items() if p.name == "__init__.py"}
    assert packages <= listed, f"add to pyproject.toml packages: {sorted(packages - listed)}"


def _figure_imports(path: Path) -> list[tuple[str, str | None, int]]:
    """``(module, name or None, line)`` of every particles import of a figure script."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found += [(node.module or "", a.name, node.lineno) for a in node.names]
    return [f for f in found if f[0].split(".")[0] == "particles"]


def _public_problem(module: str, name: str | None) -> str | None:
    """Why ``from module import name`` is not public API, or None."""
    import importlib
    import inspect

    if any(part.startswith("_") for part in module.split(".")):
        return f"{module} is a private module"
    mod = importlib.import_module(module)
    if name is None:
        return None
    if name.startswith("_"):
        return f"{name} is private"
    if not hasattr(mod, name):
        return f"{module} has no {name}"
    listed = getattr(mod, "__all__", None)
    if listed is not None and name not in listed and f"{module}.{name}" not in MODULES:
        return f"{name} is not in {module}.__all__"
    obj = getattr(mod, name)
    if (inspect.isfunction(obj) or inspect.isclass(obj)) and not inspect.getdoc(obj):
        return f"{module}.{name} has no docstring"
    return None


FIGURE_SCRIPTS = sorted((ROOT / "figures").glob("*.py"))


@pytest.mark.parametrize("script", FIGURE_SCRIPTS, ids=lambda p: p.name)
def test_figure_scripts_use_only_public_names(script):
    # issue 27: a figure needing a private helper shows a missing public feature
    problems = [f"{script.name}:{line}: {why}" for module, name, line in _figure_imports(script)
                if (why := _public_problem(module, name))]
    tree = ast.parse(script.read_text())
    problems += [f"{script.name}:{node.lineno}: attribute {node.attr}" for node in ast.walk(tree)
                 if isinstance(node, ast.Attribute) and node.attr.startswith("_")
                 and not node.attr.startswith("__")]
    assert not problems, "\n".join(problems)


def test_the_figure_check_finds_private_names(tmp_path):
    src = tmp_path / "f.py"
    src.write_text("from particles._numba import x\nfrom particles.plotting import _arcs\n"
                   "from particles.plotting import plot_tokens\nimport particles.engine\n")
    found = _figure_imports(src)
    assert [_public_problem(m, n) for m, n, _ in found] == [
        "particles._numba is a private module", "_arcs is private", None, None]
