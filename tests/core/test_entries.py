"""Rules on entries: every registry entry carries its own ``check(spec)``, which
the configuration runs after its generic checks (:mod:`particles.rules`)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from particles import rules
from particles.config import SimulationConfig
from particles.errors import ConfigError
from particles.fields import KERNELS, NORMALIZATIONS
from particles.fields.summation import SUMMATIONS, Summation
from particles.integrators import INTEGRATORS
from particles.models import MODELS
from particles.observables import OBSERVERS
from particles.protocols import Entry
from particles.sphere import INITIAL_CONDITIONS

REGISTRIES = {"MODELS": MODELS, "INTEGRATORS": INTEGRATORS, "OBSERVERS": OBSERVERS,
              "KERNELS": KERNELS, "NORMALIZATIONS": NORMALIZATIONS,
              "INITIAL_CONDITIONS": INITIAL_CONDITIONS, "SUMMATIONS": SUMMATIONS}
CONFIG = Path(__file__).resolve().parents[2] / "particles" / "config.py"


@pytest.mark.parametrize("name", sorted(REGISTRIES))
def test_every_registry_entry_is_an_entry(name):
    for key, entry in REGISTRIES[name].items():
        assert isinstance(entry, Entry), f"{name}[{key!r}]"
        assert entry.name == key


@pytest.mark.parametrize("name", sorted(REGISTRIES))
def test_the_default_run_passes_the_checks_of_its_entries(name):
    cfg = SimulationConfig(n=4, d=2, beta=1.0, seed=0)
    chosen = {"MODELS": cfg.model, "INTEGRATORS": cfg.integrator, "OBSERVERS": "pairwise",
              "KERNELS": cfg.kernel, "NORMALIZATIONS": cfg.normalization,
              "INITIAL_CONDITIONS": "uniform", "SUMMATIONS": cfg.summation}[name]
    REGISTRIES[name][chosen].check(cfg)


def test_an_entry_refuses_with_the_field_to_change():
    cfg = SimulationConfig(n=4, d=3, beta=1.0, seed=0)
    with pytest.raises(ConfigError, match=r"^d must be 2 for model='kuramoto'") as info:
        MODELS["kuramoto"].check(cfg)
    assert info.value.field == "d"
    with pytest.raises(ConfigError) as info:
        INTEGRATORS["rk4"].check(dataclasses.replace(cfg, noise=0.1, integrator="heun"))
    assert info.value.field == "integrator"
    with pytest.raises(ConfigError, match=r"^init must not be 'orthogonal'") as info:
        INITIAL_CONDITIONS["orthogonal"].check(SimulationConfig(n=5, d=3, beta=1.0))
    assert info.value.field == "init"


def test_the_configuration_runs_the_check_of_the_entry_it_names(monkeypatch):
    # a rule added to an entry is a rule of every run naming it: nothing in config
    def refuse(spec):
        raise ConfigError("model refuses this run, got 'sa'", "model")

    monkeypatch.setitem(MODELS, "sa", dataclasses.replace(MODELS["sa"], rules=refuse))
    with pytest.raises(ConfigError, match=r"^model refuses this run"):
        SimulationConfig(n=4, d=2, beta=1.0)
    SimulationConfig(n=4, d=2, beta=1.0, model="usa")


def test_a_new_summation_is_one_entry(monkeypatch):
    # the summation= choices, its rules and its resolution come from the registry
    twin = Summation("twin", "direct under another name", lambda spec: None,
                     lambda spec: "direct")
    monkeypatch.setitem(SUMMATIONS, "twin", twin)
    assert SimulationConfig(n=4, d=2, beta=1.0, summation="twin").summation == "direct"
    with pytest.raises(ConfigError, match=r"^summation must be one of 'direct', 'spectral', "
                                          r"'auto', 'twin', got 'nope'"):
        SimulationConfig(n=4, d=2, beta=1.0, summation="nope")


def test_summations_resolve_and_refuse():
    spectral_run = SimulationConfig(n=64, d=2, beta=1.0, summation="spectral", tol=1e-10)
    assert SUMMATIONS["spectral"].degree(spectral_run) > 0
    assert SUMMATIONS["spectral"].series and not SUMMATIONS["direct"].series
    # both price a drift evaluation in seconds; the series is the cheaper at large n
    assert SUMMATIONS["direct"].cost(spectral_run, 64) > 0
    assert SUMMATIONS["spectral"].cost(spectral_run, 64) > 0
    assert SUMMATIONS["spectral"].cost(spectral_run, 10**6) < SUMMATIONS["direct"].cost(
        spectral_run, 10**6)
    assert SUMMATIONS["auto"].cost is None  # auto resolves before anything is priced
    # auto on a run the series cannot serve resolves to direct (d = 4)
    auto = SimulationConfig(n=64, d=4, beta=1.0, summation="auto", tol=1e-10)
    assert auto.summation == "direct"
    with pytest.raises(ConfigError, match=r"^summation must be 'direct' or 'auto' for this "
                                          r"run, since the spectral summation works on the "
                                          r"circle and S\^2 only") as info:
        SimulationConfig(n=64, d=4, beta=1.0, summation="spectral")
    assert info.value.field == "summation"
    with pytest.raises(ConfigError, match=r"^tol must be 1e-12") as info:
        SimulationConfig(n=64, d=2, beta=1.0, summation="direct", tol=1e-10)
    assert info.value.field == "tol"


def test_rules_name_every_entry_a_run_uses():
    cfg = SimulationConfig(n=4, d=2, beta=1.0, seed=0)
    names = [e.name for e in rules.entries(cfg)]
    assert names == ["uniform", "rk4", "edp", "weights", "softmax", "sa", "direct",
                     "collapse_tol", "merge_events"]
    assert [o.name for o in rules.observers(cfg)] == list(cfg.observables)


def test_config_imports_no_registry_inside_its_functions():
    tree = ast.parse(CONFIG.read_text())
    inner = sorted(
        (node.module or "") if isinstance(node, ast.ImportFrom) else node.names[0].name
        for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
        for node in ast.walk(fn) if isinstance(node, ast.Import | ast.ImportFrom))
    assert inner == ["particles"], inner  # only ``from particles import rules``
