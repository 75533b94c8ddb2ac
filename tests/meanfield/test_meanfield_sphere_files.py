"""Density files of solves on S^2 and axisymmetric on S^{d-1} (issue 42): the session's
rules (bit-for-bit files and resume, interruptions, a full disk), ``particles meanfield
--d``, ``info`` and ``plot --kind density``."""

from __future__ import annotations

import resource
import signal

import numpy as np
import pytest
from clitools import invoke, ok, usage_error

from particles.errors import OutputWriteError, RunInterrupted
from particles.io.density import load_density, read_density_summary
from particles.meanfield.sphere_config import SphereFieldConfig
from particles.meanfield.sphere_solver import solve_sphere_frames
from particles.runs.meanfield import run_meanfield_to_file

S2 = SphereFieldConfig(d=3, lmax=12, model="sa", beta=5.0, D=0.01, T=1.5, save_every=0.25,
                       init="perturbed:eps=0.2", seed=2)
S2_ARGS = ("--d", 3, "--lmax", 12, "--model", "sa", "--beta", 5, "--D", 0.01, "--T", 1.5,
           "--save-every", 0.25, "--init", "perturbed:eps=0.2", "--seed", 2)
AXIS = SphereFieldConfig(d=64, lmax=24, axisymmetric=True, model="sa", beta=9.0, D=0.005,
                         T=1.0, save_every=0.25, init="vonmises:kappa=4")


def stop_after(k: int):
    calls = []

    def should_stop() -> bool:
        calls.append(1)
        return len(calls) >= k

    return should_stop


def assert_same(path, frames) -> None:
    stored = load_density(path)
    np.testing.assert_array_equal(stored.times, [f.time for f in frames])
    np.testing.assert_array_equal(stored.rho, np.array([f.rho for f in frames]))
    np.testing.assert_array_equal(stored.energy, [f.energy for f in frames])
    assert stored.steps == frames[-1].state.steps and stored.complete


@pytest.mark.parametrize("config", [S2, AXIS], ids=["S2", "axisymmetric"])
def test_interrupted_twice_then_resumed_is_the_uninterrupted_solve(tmp_path, config):
    frames = list(solve_sphere_frames(config))
    path = tmp_path / "field.h5"
    for k in (2, 2):
        with pytest.raises(RunInterrupted):
            run_meanfield_to_file(config, path, resume=path.exists(), flush_interval=0.0,
                                  should_stop=stop_after(k))
        assert not read_density_summary(path).complete
    run_meanfield_to_file(None, path, resume=True)
    assert_same(path, frames)
    stored = load_density(path)
    assert stored.config == config and stored.weights.shape == (stored.rho.shape[1],)
    weights = stored.weights[:, None] if stored.rho.ndim == 3 else stored.weights
    mass = (stored.rho * weights).reshape(len(stored.times), -1).sum(1)
    assert np.abs(mass - 1).max() < 1e-13


def test_full_disk_stops_then_resumes_bit_for_bit(tmp_path):
    config = SphereFieldConfig(d=3, lmax=24, model="sa", beta=2.0, T=1.5, save_every=0.05,
                               init="vonmises:kappa=2")
    frames = list(solve_sphere_frames(config))
    path = tmp_path / "field.h5"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, hard))
    try:
        with pytest.raises(OutputWriteError) as exc:
            run_meanfield_to_file(config, path, flush_interval=0.0)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)
    assert "\n" not in str(exc.value) and exc.value.kept == path
    assert 1 < read_density_summary(path).frames < len(frames)
    run_meanfield_to_file(None, path, resume=True)
    assert_same(path, frames)


def test_cli_meanfield_on_the_sphere_info_and_plot(tmp_path):
    out = tmp_path / "s2.h5"
    result = invoke("meanfield", *S2_ARGS, "--out", out)
    ok(result)
    lines = result.stdout.splitlines()
    assert lines[0] == str(out) and lines[1].startswith("7 frames to t=1.5 (complete), mass 1")
    assert_same(out, list(solve_sphere_frames(S2)))
    usage_error(invoke("meanfield", *S2_ARGS, "--lmax", 16, "--out", out, "--resume"),
                "lmax")
    info = invoke("info", out)
    ok(info)
    assert "mean-field density on S^2" in info.stdout
    assert "lmax 12: Gauss-Legendre 20 x 40" in info.stdout
    ok(invoke("plot", out, "--kind", "density"))
    png = tmp_path / "s2_density.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    axis = tmp_path / "axis.h5"
    ok(invoke("meanfield", "--d", 128, "--axisymmetric", "--lmax", 16, "--beta", 9, "--T", 0.5,
              "--save-every", 0.25, "--init", "modes:l=2,eps=0.01", "--out", axis))
    assert "S^127, axisymmetric" in invoke("info", axis).stdout
    ok(invoke("plot", axis, "--kind", "density"))
    assert (tmp_path / "axis_density.png").stat().st_size > 1000


@pytest.mark.parametrize(("args", "fragments"), [
    (("--d", 3, "--modes", 64), ("--modes", "sphere")),
    (("--lmax", 16, "--coupling", 2), ("--coupling",)),
    (("--d", 5), ("--d", "axisymmetric")),
    (("--d", 3, "--lmax", 2), ("--lmax",)),
    (("--d", 3, "--model", "kuramoto"), ("--model",)),
    (("--d", 9, "--axisymmetric", "--init", "modes:l=2,m=1"), ("--init", "m = 0")),
    (("--d", 3, "--init", "modes:l=40"), ("--init", "lmax")),
    (("--modes", 64, "--lmax", 8), ("--modes",)),
    (("--d", 2, "--axisymmetric"), ("--d", "3..")),
    (("--d", 3, "--lmax", 2048, "--save-every", 1e-5), ("14 TiB", "--no-size-check")),
])
def test_cli_bad_input_is_one_line_exit_2(tmp_path, args, fragments):
    out = tmp_path / "f.h5"
    usage_error(invoke("meanfield", "--beta", 1, *args, "--out", out), *fragments)
    assert not out.exists()


@pytest.mark.processes
def test_sigkill_then_resume_is_bit_for_bit(tmp_path):
    """A real ``particles meanfield --d 3`` killed once its file is promoted, then resumed."""
    import subprocess
    import sys
    import time

    config = SphereFieldConfig(d=3, lmax=48, model="sa", beta=5.0, T=12.0, save_every=0.05)
    args = ("--d", 3, "--lmax", 48, "--model", "sa", "--beta", 5, "--T", 12,
            "--save-every", 0.05)
    out = tmp_path / "field.h5"
    cmd = [sys.executable, "-m", "particles_cli", "meanfield", *map(str, args), "--out", str(out)]
    p = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not out.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    s = read_density_summary(out)
    if p.returncode == 0 or s.complete:
        pytest.skip("the solve finished before the signal")
    r = subprocess.run([*cmd, "--resume"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert_same(out, list(solve_sphere_frames(config)))
