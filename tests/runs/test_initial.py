"""Initial conditions read from files (issue 28 item 6): tokens drawn from a density
file's initial density (``init="density:FILE"``), and a mean-field density from a
trajectory's first frame (``init="particles:file=PATH"``)."""

from __future__ import annotations

import numpy as np
import pytest
from clitools import invoke, ok, usage_error

from particles.config import SimulationConfig
from particles.engine import run
from particles.io import load, load_density
from particles.meanfield import MeanFieldConfig, sample_density, w1_circle_density
from particles.meanfield.kde import kde_density
from particles.runs import run_meanfield_to_file, run_to_file
from particles.runs.initial import initial_tokens
from particles.seeds import init_rng

FIELD = MeanFieldConfig(model="usa", beta=3.0, D=0.05, modes=64, T=0.5, save_every=0.25,
                        init="modes:k=2,eps=0.6")


@pytest.fixture(scope="module")
def field(tmp_path_factory):
    path = tmp_path_factory.mktemp("density") / "field.h5"
    run_meanfield_to_file(FIELD, path)
    return path


def angles(x: np.ndarray) -> np.ndarray:
    x = x.reshape(-1, 2)
    return np.arctan2(x[:, 1], x[:, 0])


def test_tokens_are_drawn_from_the_files_first_frame_with_the_seed(field):
    config = SimulationConfig(n=3000, d=2, beta=3.0, model="usa", init=f"density:{field}",
                              seed=4, batch=2)
    x = initial_tokens(config)
    rho0 = load_density(field).rho[0]
    assert x.shape == (2, 3000, 2)
    np.testing.assert_allclose(np.linalg.norm(x, axis=-1), 1.0, rtol=1e-15)
    drawn = sample_density(rho0, 6000, init_rng(4))  # system b holds draws b n .. (b+1) n - 1
    np.testing.assert_allclose(angles(x[1]), np.angle(np.exp(1j * drawn[3000:])), atol=1e-12)
    assert initial_tokens(config).tobytes() == x.tobytes()
    assert initial_tokens(config.replace(seed=5)).tobytes() != x.tobytes()
    assert w1_circle_density(angles(x), rho0) < 3 / np.sqrt(6000)  # of the file's density
    with pytest.raises(ValueError, match="drawn from a file"):
        run(config)  # the engine reads no file


def test_a_runs_initial_tokens_have_one_home():
    """Issue 39 item 2: every caller above the engine takes a run's initial tokens
    from :func:`particles.runs.initial.initial_tokens`; the engine's own draw
    (``initial_positions``) is used by the engine and by that home only."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    homes = {root / "particles" / "engine" / "__init__.py",
             root / "particles" / "runs" / "initial.py", Path(__file__).resolve()}
    users = [str(path.relative_to(root))
             for top in ("particles", "cli", "benchmarks", "figures", "tests")
             for path in sorted((root / top).rglob("*.py"))
             if path not in homes and re.search(r"\binitial_positions\b", path.read_text())]
    assert users == []
    config = SimulationConfig(n=5, d=3, beta=1.0, seed=2, batch=2, init="cap:0.5")
    np.testing.assert_array_equal(initial_tokens(config), run(config.replace(T=0.0)).positions[0])


def test_a_run_records_the_density_init_and_extends_bit_for_bit(field, tmp_path):
    config = SimulationConfig(n=200, d=2, beta=3.0, model="usa", init=f"density:{field}",
                              seed=9, T=0.2, dt=0.01, save_every=5, integrator="rk4")
    run_to_file(config, tmp_path / "short.h5")
    short = load(tmp_path / "short.h5")
    assert short.config.init == f"density:{field}" and short.config.seed == 9
    np.testing.assert_array_equal(short.positions[0], initial_tokens(config)[0])
    run_to_file(config.replace(T=0.4), tmp_path / "short.h5", resume=True)
    run_to_file(config.replace(T=0.4), tmp_path / "long.h5")
    a, b = load(tmp_path / "short.h5"), load(tmp_path / "long.h5")
    assert a.positions.tobytes() == b.positions.tobytes() and a.config == b.config


def test_a_missing_or_wrong_density_file_is_refused_before_any_file(field, tmp_path):
    out = tmp_path / "r.h5"
    for init in (f"density:{tmp_path / 'missing.h5'}", f"density:{tmp_path / 'r0.h5'}"):
        if "r0" in init:
            run_to_file(SimulationConfig(n=4, d=2, beta=1.0, T=0.1, seed=1), tmp_path / "r0.h5")
        with pytest.raises(ValueError, match="init='density:"):
            run_to_file(SimulationConfig(n=4, d=2, beta=1.0, T=0.1, init=init), out)
        assert not out.exists()
    with pytest.raises(ValueError, match="d != 2"):
        SimulationConfig(n=4, d=4, beta=1.0, init=f"density:{field}")


def test_a_mean_field_solve_starts_from_a_trajectorys_first_frame(tmp_path):
    run = tmp_path / "run.h5"
    run_to_file(SimulationConfig(n=500, d=2, beta=3.0, T=0.1, dt=0.05, seed=2,
                                 save_every=1, integrator="euler", batch=2), run)
    config = MeanFieldConfig(model="usa", beta=3.0, modes=64, T=0.2, save_every=0.1,
                             init=f"particles:file={run}")
    out = tmp_path / "field.h5"
    run_meanfield_to_file(config, out)
    stored = load_density(out)
    first = load(run).positions[0]
    h = 4 * np.pi / 64
    assert stored.config.init == f"particles:file={run},bandwidth={h!r}"  # recorded
    assert stored.rho[0].tobytes() == kde_density(angles(first), 64, h).tobytes()
    assert w1_circle_density(angles(first), stored.rho[0]) < h  # both systems pooled
    again = run_meanfield_to_file(config, out, resume=True)  # the original config resumes
    assert again.complete


def test_a_particles_init_needs_a_circle_run_with_its_first_frame(tmp_path):
    sphere, final = tmp_path / "sphere.h5", tmp_path / "final.h5"
    run_to_file(SimulationConfig(n=8, d=3, beta=1.0, T=0.1, seed=1), sphere)
    run_to_file(SimulationConfig(n=8, d=2, beta=1.0, T=0.1, seed=1, positions="final"), final)
    for path, fragment in ((sphere, "d = 2"), (final, "no first frame"),
                           (tmp_path / "none.h5", "cannot be read")):
        out = tmp_path / "f.h5"
        with pytest.raises(ValueError, match=fragment):
            run_meanfield_to_file(MeanFieldConfig(modes=16, init=f"particles:file={path}"), out)
        assert not out.exists()


def test_cli_draws_tokens_from_a_density_file_and_a_density_from_a_run(field, tmp_path):
    run, out = tmp_path / "run.h5", tmp_path / "back.h5"
    args = ["--n", 64, "--d", 2, "--beta", 3, "--T", 0.1, "--dt", 0.05,
            "--save-every", 1, "--integrator", "euler", "--seed", 3]
    ok(invoke("simulate", *args, "--init", f"density:{field}", "--out", run))
    assert load(run).config.init == f"density:{field}"
    ok(invoke("meanfield", "--beta", 3, "--model", "usa", "--modes", 32, "--T", 0.1,
              "--init", f"particles:file={run}", "--out", out))
    assert load_density(out).config.init.startswith(f"particles:file={run},bandwidth=")
    bad = tmp_path / "bad.h5"
    usage_error(invoke("simulate", *args, "--init", f"density:{tmp_path / 'no.h5'}", "--out",
                       bad), "--init", "cannot be read")
    usage_error(invoke("meanfield", "--beta", 3, "--init", f"particles:file={field}", "--out",
                       bad), "--init", "cannot be read")
    assert not bad.exists()
