"""Behavioural registries: each entry carries its behaviour, and the rules follow it."""

import ast
from pathlib import Path

import numpy as np
import pytest

from particles import sphere
from particles.config import INITS, KERNEL_PARAMETERS, OMEGA_DISTRIBUTIONS, SimulationConfig
from particles.fields import KERNELS, NORMALIZATIONS, check_usa_range, usa_log_bound
from particles.fields import frequencies as frequencies_module
from particles.fields.kernels import log_kernel_reference
from particles.fields.kuramoto import quantile_frequencies, resolve_frequencies
from particles.fields.weights import QK_WEIGHTS, V_WEIGHTS, is_random
from particles.models import build_field
from particles.runs.initial import initial_tokens
from particles.seeds import frequencies_rng
from particles.sphere import INITIAL_CONDITIONS

FIELDS = Path(frequencies_module.__file__).parent  # particles/fields/


# ---------------------------------------------------------------- kernels
def test_kernel_parameters_are_derived_from_the_registry():
    assert dict(KERNEL_PARAMETERS) == {k: v.parameter for k, v in KERNELS.items()}
    assert {str(v) for v in KERNELS.values()} == {v.formula for v in KERNELS.values()}


@pytest.mark.parametrize("name", [k for k, v in KERNELS.items() if v.logkappa is not None])
def test_pointwise_logkappa_matches_reference(name):
    kernel = KERNELS[name]
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 5, 4))
    want = log_kernel_reference(name, q, k, 0.7)
    got = np.array([[kernel.logkappa(q[i], k[j], 0.7) for j in range(5)] for i in range(5)])
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name", list(KERNELS))
def test_log_bound_bounds_the_kernel(name):
    kernel = KERNELS[name]
    d = 4
    rng = np.random.default_rng(1)
    Q, K = np.eye(d) + 0.5 * rng.standard_normal((2, d, d))
    cfg = SimulationConfig(n=3, d=d, beta=1.5, kernel=name, model="usa", Q=Q, K=K,
                           **({kernel.parameter: 0.8} if kernel.parameter != "beta" else {}))
    x = sphere.uniform(400, d, rng=rng)
    param = getattr(cfg, kernel.parameter)
    with np.errstate(divide="ignore"):
        worst = kernel.log_reference(x @ Q.T, x @ K.T, param).max()
    assert worst <= usa_log_bound(cfg, Q, K) + 1e-12


def test_one_usa_overflow_rule_and_message():
    given = pytest.raises(ValueError, match=r"^beta must be small enough that USA weights")
    with given as fixed:
        SimulationConfig(n=3, d=3, beta=800.0, model="usa")
    assert "usa_scale='n_exp_beta'" in str(fixed.value)
    cfg = SimulationConfig(n=3, d=3, beta=5000.0, model="usa", weights="gaussian", seed=0)
    with pytest.raises(ValueError, match=r"^beta must be small enough that USA weights") as drawn:
        build_field(cfg)
    assert "drawn weights" in str(drawn.value)
    # the same function decides for both
    with pytest.raises(ValueError, match=r"^beta must be small enough"):
        check_usa_range(cfg.replace(weights="given"), 3.0 * np.eye(3), np.eye(3))


def test_normalization_rules_live_on_the_entries():
    assert set(NORMALIZATIONS) == {"softmax", "sinkhorn"}
    cfg = SimulationConfig(n=3, d=3, beta=1.0, normalization="sinkhorn")
    NORMALIZATIONS["sinkhorn"].check(cfg)
    with pytest.raises(ValueError, match=r"^normalization must be 'softmax' unless kernel"):
        NORMALIZATIONS["sinkhorn"].check(cfg.replace(normalization="softmax", kernel="rbf"))
    assert build_field(cfg).name == "sinkhorn"


# ------------------------------------------------------ weight ensembles
def test_weight_ensembles_declare_randomness():
    assert {k for k, e in QK_WEIGHTS.items() if e.random} == {"gaussian", "goe"}
    assert {k for k, e in V_WEIGHTS.items() if e.random} == {"wwt"}
    cfg = SimulationConfig(n=3, d=3, beta=1.0)
    assert not is_random(cfg.replace(value_weights="qk"))
    assert is_random(cfg.replace(value_weights="wwt", seed=1))


# ----------------------------------------------------- initial conditions
def test_initial_conditions_merge_config_names_and_samplers():
    assert INITS == {k: c.description for k, c in INITIAL_CONDITIONS.items()}
    sampled = {k for k, c in INITIAL_CONDITIONS.items() if c.sample is not None}
    assert sampled == set(sphere.SAMPLERS)
    numeric = {k for k, c in INITIAL_CONDITIONS.items() if c.parameter and not c.text}
    assert numeric == {"cap", "vmf"}
    # a file the sessions read (particles.runs.initial), not a sampler of this layer
    assert {k for k, c in INITIAL_CONDITIONS.items() if c.text} == {"density"}


@pytest.mark.parametrize("init", ["uniform", "orthogonal", "equispaced", "cap:0.4", "vmf:3"])
def test_registry_sample_is_the_runs_initial_condition(init):
    name, _, arg = init.partition(":")
    d = 2 if name == "equispaced" else 4
    cfg = SimulationConfig(n=3, d=d, beta=1.0, init=init, seed=7, batch=2)
    from particles.seeds import init_rng

    x = INITIAL_CONDITIONS[name].sample(3, d, float(arg) if arg else None,
                                        rng=init_rng(7), batch=2)
    np.testing.assert_array_equal(x, initial_tokens(cfg))


def test_initial_condition_constraints():
    with pytest.raises(ValueError, match=r"^init must not be 'orthogonal' when n > d"):
        SimulationConfig(n=5, d=3, beta=1.0, init="orthogonal")
    with pytest.raises(ValueError, match=r"^init must not be 'equispaced' when d != 2"):
        SimulationConfig(n=5, d=3, beta=1.0, init="equispaced")
    with pytest.raises(ValueError, match=r"^init must be 'cap:EPS' with 0 < EPS <= pi"):
        SimulationConfig(n=5, d=3, beta=1.0, init="cap:4")
    INITIAL_CONDITIONS["orthogonal"].check(SimulationConfig(n=3, d=3, beta=1.0))


# ------------------------------------------------ frequency distributions
@pytest.mark.parametrize("name", list(OMEGA_DISTRIBUTIONS))
def test_frequency_draws_come_from_the_entries(name):
    assert OMEGA_DISTRIBUTIONS is frequencies_module.OMEGA_DISTRIBUTIONS
    w = resolve_frequencies(f"{name}:0.5:1", 50, seed=3)
    want = 1.0 + 0.5 * OMEGA_DISTRIBUTIONS[name].draw(frequencies_rng(3, None), 50)
    np.testing.assert_array_equal(w, want)
    q = quantile_frequencies(f"{name}:0.5", 9)
    u = (np.arange(9) + 0.5) / 9
    np.testing.assert_array_equal(q, 0.5 * OMEGA_DISTRIBUTIONS[name].quantile(u, np.inf))


# ------------------------------------------------------------- layering
def _runtime_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


@pytest.mark.parametrize("path", sorted(FIELDS.glob("*.py")), ids=lambda p: p.name)
def test_fields_never_import_config_at_runtime(path):
    upward = {"particles.config", "particles.engine", "particles.io", "particles.analysis"}
    assert not {m for m in _runtime_imports(path) if m.split(".")[:2] and
                ".".join(m.split(".")[:2]) in upward}
