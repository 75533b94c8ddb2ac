"""Mean-field density files (issue 13): layout, round trips, crash safety, bit-for-bit
resume, the session policy, ``particles meanfield``, ``info`` and ``plot``."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pyh5md
import pytest
from clitools import invoke, ok, usage_error
from filetools import digest, partials

import particles
from particles.config import SimulationConfig
from particles.errors import (
    OutputPathError,
    OutputWriteError,
    ResumeMismatch,
    RunFailed,
    RunInterrupted,
    TrajectoryFileError,
)
from particles.io import TrajectoryWriter, load, read_summary
from particles.io.density import (
    ELEMENT,
    KIND,
    DensityWriter,
    is_density_file,
    load_density,
    read_density_summary,
)
from particles.meanfield import DensityFrame, MeanFieldConfig, SolverState, solve
from particles.plotting.density import common_frames, w1_against_density
from particles.runs.meanfield import run_meanfield_to_file
from particles.runs.session import host_name
from particles.trajectory import Frame

ROOT = Path(__file__).resolve().parents[2]

# small and fast (0.1 s per solve): a mode-2 perturbation grows, steps are rejected
CONFIG = MeanFieldConfig(model="usa", beta=2.0, D=0.02, modes=64, T=3.0, save_every=0.25,
                         init="modes:k=2,eps=0.05", seed=3)
ARGS = ("--beta", 2, "--D", 0.02, "--modes", 64, "--T", 3, "--save-every", 0.25,
        "--init", "modes:k=2,eps=0.05", "--seed", 3)

# a solve of a few seconds, for real processes stopped by a signal: about 3.5 s
# alone, so a signal sent when the first timed flush (1 s) promotes the file lands
# with seconds to spare (T = 40 left under a second, and a warm run once missed it)
LONG = MeanFieldConfig(model="usa", beta=2.0, D=0.02, modes=512, T=60.0, save_every=0.25,
                       init="perturbed", seed=1)
LONG_ARGS = ("--beta", 2, "--D", 0.02, "--modes", 512, "--T", 60, "--save-every", 0.25,
             "--init", "perturbed", "--seed", 1)


def assert_same(stored, ref) -> None:
    """A stored density bit-identical to an in-memory solve."""
    np.testing.assert_array_equal(stored.times, ref.times)
    np.testing.assert_array_equal(stored.rho, ref.rho)
    for name in ("mass", "energy", "dissipation", "min_density"):
        np.testing.assert_array_equal(getattr(stored, name), getattr(ref, name))
    assert (stored.steps, stored.rejected) == (ref.steps, ref.rejected)
    assert stored.config == ref.config


@pytest.fixture(scope="module")
def reference():
    """The uninterrupted in-memory solve of CONFIG, with its frames' states."""
    frames: list[DensityFrame] = []
    result = solve(CONFIG, on_frame=frames.append)
    return result, frames


@pytest.fixture(scope="module")
def written(tmp_path_factory, reference):
    path = tmp_path_factory.mktemp("mf") / "field.h5"
    run_meanfield_to_file(CONFIG, path)
    return path


def stop_after(k: int):
    """A ``should_stop`` that asks to stop once it has been polled ``k`` times."""
    calls = []

    def should_stop() -> bool:
        calls.append(1)
        return len(calls) >= k

    return should_stop


# ---------------------------------------------------------------- layout, round trip
def test_file_holds_the_solve_bit_for_bit(written, reference):
    ref, _ = reference
    stored = load_density(written)
    assert_same(stored, ref)
    assert stored.complete and stored.path == written
    np.testing.assert_array_equal(stored.theta, ref.theta)
    assert stored.final.t == ref.final.t and stored.final.dt == ref.final.dt
    np.testing.assert_array_equal(stored.final.rho, ref.final.rho)
    s = read_density_summary(written)
    assert (s.frames, s.frames_expected, s.complete) == (len(ref.times), len(ref.times), True)
    assert s.time == CONFIG.T and s.step == ref.steps


def test_h5md_layout(written, reference):
    ref, frames = reference
    F, M = len(ref.times), CONFIG.modes
    with pyh5md.File(written, "r") as f:
        assert list(f["h5md"].attrs["version"]) == [1, 1]
        assert f["h5md/creator"].attrs["name"] == "particles"
        assert "particles" not in f  # a field, no particles
        density = pyh5md.element(f["observables"], "density")
        assert density.element_type == "TimeElement"
        assert density.value.shape == (F, M)
        np.testing.assert_array_equal(density.time[:], CONFIG.frame_times())
        np.testing.assert_array_equal(density.step[:], [fr.state.steps for fr in frames])
        np.testing.assert_array_equal(f[ELEMENT]["theta"][:], 2 * np.pi * np.arange(M) / M)
        for name in ("mass", "energy", "dissipation", "min_density", "step_size",
                     "rejected_steps"):
            element = pyh5md.element(f["observables"], name)
            assert element.value.shape == (F,)
            # hard links: sampled with the density
            assert f[f"observables/{name}/time"] == f[f"{ELEMENT}/time"]
            assert f[f"observables/{name}/step"] == f[f"{ELEMENT}/step"]
        np.testing.assert_array_equal(f["observables/step_size/value"][:],
                                      [fr.state.dt for fr in frames])
        params = f["parameters"]
        assert params.attrs["kind"] == KIND == "density"
        assert params.attrs["complete"] == 1 and params.attrs["particles_schema"] == 1
        assert MeanFieldConfig.from_dict(json.loads(params.attrs["config"])) == CONFIG
        assert params.attrs["seed"] == "3"
        assert {"particles", "numpy", "h5py", "python"} <= set(params["versions"].attrs)


def test_writer_of_synthetic_frames(tmp_path):
    config = MeanFieldConfig(modes=8, T=1.0, save_every=0.5)
    path = tmp_path / "syn.h5"
    w = DensityWriter.create(path, config, flush_interval=0.0)
    rho = np.linspace(1, 2, 8)
    for k, t in enumerate((0.0, 0.5)):
        r = rho + k
        w.append(DensityFrame(time=t, rho=r, mass=1.0 + k, energy=2.0, dissipation=0.0,
                              min_density=r.min(),
                              state=SolverState(t=t, rho=r, dt=0.1 * (k + 1), steps=5 * k,
                                                rejected=k)))
    with pytest.raises(ValueError, match="does not match modes=8"):
        w.append(DensityFrame(1.0, np.ones(4), 1, 1, 1, 1, SolverState(1.0, np.ones(4), 1)))
    with pytest.raises(ValueError, match="not the solver's state"):
        w.append(DensityFrame(1.0, rho, 1, 1, 1, 1, SolverState(0.9, rho, 1.0)))
    w.close(complete=False)
    s = read_density_summary(path)
    assert (s.frames, s.frames_expected, s.complete, s.step) == (2, 3, False, 5)
    np.testing.assert_array_equal(s.final, rho + 1)
    state = s.state()
    assert (state.t, state.dt, state.steps, state.rejected) == (0.5, 0.2, 5, 1)
    stored = load_density(path)
    np.testing.assert_array_equal(stored.mass, [1.0, 2.0])
    assert not stored.complete


def test_trajectory_readers_refuse_a_density_file_and_back(written, tmp_path):
    for read in (load, read_summary, particles.load):
        with pytest.raises(TrajectoryFileError, match="load_density") as exc:
            read(written)
        assert "mean-field density file" in str(exc.value) and "\n" not in str(exc.value)
    assert particles.load_density(written).complete
    run = synthetic_run(tmp_path / "run.h5", CONFIG.frame_times())
    with pytest.raises(TrajectoryFileError, match="not a mean-field density file"):
        load_density(run)
    assert is_density_file(written) and not is_density_file(run)
    assert not is_density_file(tmp_path / "missing.h5")


# ---------------------------------------------------------------- crash safety, resume
def test_interrupted_solve_keeps_a_readable_file_and_resumes_bit_for_bit(tmp_path, reference):
    ref, _ = reference
    path = tmp_path / "field.h5"
    for k in (3, 4):  # stop twice, at different frames
        with pytest.raises(RunInterrupted) as exc:
            run_meanfield_to_file(CONFIG, path, resume=path.exists(), flush_interval=0.0,
                                  should_stop=stop_after(k))
        s = exc.value.summary
        assert s is not None and not s.complete and exc.value.kept == path
        assert "holds" in str(exc.value) and "marked incomplete" in str(exc.value)
        stored = load_density(path)  # readable as it is
        assert not stored.complete and len(stored.times) == s.frames
        np.testing.assert_array_equal(stored.rho, ref.rho[: s.frames])
    assert s.frames == 7  # 3 frames, then 4 more
    result = run_meanfield_to_file(None, path, resume=True)
    assert result.complete
    assert_same(load_density(path), ref)
    assert partials(tmp_path) == []


def test_kill_in_the_middle_of_a_batch_is_cut_back_on_resume(tmp_path, written, reference):
    ref, _ = reference
    path = tmp_path / "killed.h5"
    path.write_bytes(written.read_bytes())
    k = 5
    with h5py.File(path, "r+") as f:  # value written for frame k, time and step not yet
        for name in f["observables"]:
            g = f["observables"][name]
            g["value"].resize(k + 1, axis=0)
        f[f"{ELEMENT}/time"].resize(k, axis=0)
        f[f"{ELEMENT}/step"].resize(k, axis=0)
        f["parameters"].attrs["complete"] = 0
    s = read_density_summary(path)
    assert (s.frames, s.complete) == (k, False)
    assert len(load_density(path).times) == k
    run_meanfield_to_file(CONFIG, path, resume=True)
    assert_same(load_density(path), ref)


@pytest.fixture(scope="module")
def long_reference():
    return solve(LONG)


@pytest.mark.processes
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_solve_stopped_by_a_signal_resumes_bit_for_bit(tmp_path, long_reference, sig):
    # a real process: frames flushed on the timer, a signal, then --resume
    out = tmp_path / "field.h5"
    cmd = [sys.executable, "-m", "particles_cli", "meanfield", *map(str, LONG_ARGS),
           "--out", str(out)]
    p = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    deadline = time.monotonic() + 120
    while not out.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    s = read_density_summary(out)  # promoted: the first solved frame is on disk
    if p.returncode == 0 or s.complete:
        pytest.skip("the solve finished before the signal")
    assert s.frames >= 2 and not s.complete
    if sig == signal.SIGINT:
        assert p.returncode == 130
        lines = err.strip().splitlines()
        assert lines[-1].startswith("Interrupted: ") and "Traceback" not in err
        assert f"continue with: particles meanfield --resume --out {out}" in lines[-1]
    r = subprocess.run([*cmd, "--resume"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "(complete)" in r.stdout
    assert_same(load_density(out), long_reference)
    assert partials(tmp_path) == []


def test_file_size_limit_stops_at_once_then_resumes(tmp_path):
    config = MeanFieldConfig(model="usa", beta=2.0, D=0.01, modes=256, T=20.0,
                             save_every=0.1, init="perturbed", seed=2)
    ref = solve(config)
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
    line = str(exc.value)
    assert "\n" not in line and "marked incomplete" in line and "--resume" in line
    assert exc.value.kept == path
    s = read_density_summary(path)
    assert not s.complete and 1 < s.frames < len(ref.times)
    np.testing.assert_array_equal(load_density(path).rho, ref.rho[: s.frames])
    run_meanfield_to_file(None, path, resume=True)
    assert_same(load_density(path), ref)


# an under-resolved solve (no diffusion, 32 points) that loses positivity at t = 0.75
UNRESOLVED = ("--beta", 4, "--modes", 32, "--T", 3, "--save-every", 0.25,
              "--init", "modes:k=2,eps=0.05", "--positivity", "raise")


def test_failed_solve_keeps_its_frames_and_says_so(tmp_path):
    out = tmp_path / "f.h5"
    config = MeanFieldConfig(model="usa", beta=4.0, modes=32, T=3.0, save_every=0.25,
                             init="modes:k=2,eps=0.05", positivity="raise")
    with pytest.raises(RunFailed, match="lost positivity") as exc:
        run_meanfield_to_file(config, out)
    s = exc.value.summary
    assert exc.value.kept == out and not s.complete and s.frames == 3  # t = 0, 0.25, 0.5
    assert load_density(out).min_density.min() > 0
    result = invoke("meanfield", *UNRESOLVED, "--out", tmp_path / "g.h5")
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "Traceback" not in result.output
    assert "lost positivity at t = 0.75" in errors[0] and "holds 3 of 13 frames" in errors[0]
    assert "--resume" not in errors[0]  # it would fail again


@pytest.mark.processes
def test_resume_adopts_the_temporary_file_of_a_killed_solve(tmp_path, reference):
    # killed before its first promotion: frame 0 is on disk in a hidden temporary file
    # whose process has ended; --resume adopts it under the target's name
    out = tmp_path / "field.h5"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    temp = tmp_path / f".field.h5.{dead}@{host_name()}.0123abcd.partial"
    w = DensityWriter.create(temp, CONFIG)
    w.append(reference[1][0])
    w.close(complete=False)
    run_meanfield_to_file(None, out, resume=True)
    assert_same(load_density(out), reference[0])
    assert partials(tmp_path) == []


def test_sessions_package_exports_the_mean_field_session():
    from particles import runs

    assert runs.run_meanfield_to_file is run_meanfield_to_file


# ---------------------------------------------------------------- session policy
def test_never_overwrites_without_overwrite(tmp_path, written, reference):
    path = tmp_path / "field.h5"
    path.write_bytes(b"precious")
    with pytest.raises(OutputPathError, match="exists"):
        run_meanfield_to_file(CONFIG, path)
    assert path.read_bytes() == b"precious"
    run_meanfield_to_file(CONFIG, path, overwrite=True)
    assert_same(load_density(path), reference[0])
    assert partials(tmp_path) == []


def test_stopped_before_promotion_leaves_an_existing_file_alone(tmp_path):
    path = tmp_path / "field.h5"
    path.write_bytes(b"precious")
    with pytest.raises(RunInterrupted) as exc:
        run_meanfield_to_file(CONFIG, path, overwrite=True, should_stop=stop_after(1))
    assert exc.value.kept is None and "not written" in str(exc.value)
    assert path.read_bytes() == b"precious" and partials(tmp_path) == []


def test_resume_refuses_another_configuration_and_keeps_a_complete_file(tmp_path, written):
    path = tmp_path / "field.h5"
    path.write_bytes(written.read_bytes())
    before = digest(path)
    other = MeanFieldConfig(**{**CONFIG.to_dict(), "beta": 5.0, "save_times": None})
    with pytest.raises(ResumeMismatch, match=r"beta=5\.0 \(file: 2\.0\)") as exc:
        run_meanfield_to_file(other, path, resume=True)
    assert set(exc.value.differences) == {"beta"}
    assert run_meanfield_to_file(CONFIG, path, resume=True).complete
    assert digest(path) == before
    with pytest.raises(OutputPathError, match="nothing to resume"):
        run_meanfield_to_file(None, tmp_path / "none.h5", resume=True)


# ---------------------------------------------------------------- command line
def test_cli_meanfield_writes_the_file_and_one_summary_line(tmp_path, reference):
    out = tmp_path / "f.h5"
    result = invoke("meanfield", *ARGS, "--out", out)
    ok(result)
    lines = result.stdout.splitlines()
    assert lines[0] == str(out) and len(lines) == 2
    assert lines[1].startswith("13 frames to t=3 (complete), mass 1")
    assert_same(load_density(out), reference[0])
    again = invoke("meanfield", "--beta", 4, "--out", out)
    usage_error(again, "--out", "exists")
    usage_error(invoke("meanfield", *ARGS, "--beta", 5, "--out", out, "--resume"),
                "--beta 5.0 (stored 2.0)")
    ok(invoke("meanfield", "--resume", "--out", out))  # complete: left as it is
    run = synthetic_run(tmp_path / "run.h5", CONFIG.frame_times())
    usage_error(invoke("meanfield", "--resume", "--out", run), "not a mean-field density file")
    usage_error(invoke("simulate", "--resume", "--out", out), "load_density")


@pytest.mark.parametrize(("args", "fragments"), [
    ((), ("--beta",)),
    (("--beta", "1", "--modes", "7"), ("--modes", "even")),
    (("--beta", "-1"), ("--beta", ">= 0")),
    (("--beta", "1", "--D", "-0.1"), ("--D",)),
    (("--beta", "1", "--T", "0"), ("--T",)),
    (("--beta", "1", "--model", "softmax"), ("--model",)),
    (("--beta", "1", "--save-every", "0.5", "--save-times", "0.1,0.2"), ("exclusive",)),
    (("--beta", "1", "--save-times", "a,b"), ("--save-times",)),
    (("--beta", "1", "--init", "nonsense"), ("init",)),
    (("--beta", "1", "--resume", "--overwrite"), ("exclude",)),
    (("--beta", "1", "--usa-scale", "e"), ("--usa-scale",)),
    (("--resume",), ("--out", "nothing to resume")),
])
def test_cli_bad_input_is_one_line_exit_2(tmp_path, args, fragments):
    out = tmp_path / "f.h5"
    usage_error(invoke("meanfield", *args, "--out", out), *fragments)
    assert not out.exists() and partials(tmp_path) == []


def test_cli_usa_scale_reaches_the_file(tmp_path):
    out = tmp_path / "f.h5"
    ok(invoke("meanfield", *ARGS, "--usa-scale", "n_exp_beta", "--out", out))
    assert read_density_summary(out).config.usa_scale == "n_exp_beta"


def test_cli_info_reads_a_density_file(written):
    result = invoke("info", written)
    ok(result)
    out = result.stdout
    assert "mean-field density" in out and "status       complete" in out
    assert "13 (t = 0 .. 3" in out and "grid         64 points" in out
    assert "beta" in out and "modes" in out


def test_cli_info_says_how_to_resume(tmp_path):
    path = tmp_path / "f.h5"
    with pytest.raises(RunInterrupted):
        run_meanfield_to_file(CONFIG, path, should_stop=stop_after(3))
    result = invoke("info", path)
    ok(result)
    assert f"particles meanfield --resume --out {path}" in result.stdout


# ---------------------------------------------------------------- plots
def synthetic_run(path: Path, times, n: int = 64, d: int = 2) -> Path:
    """A particle run on the circle written without running it: equispaced tokens
    drifting at unit speed (no compile needed)."""
    times = np.asarray(times, dtype=float)
    config = SimulationConfig(n=n, d=d, beta=4.0, model="usa", T=float(times[-1]),
                              save_times=tuple(times[1:]), seed=0)
    w = TrajectoryWriter.create(path, config)
    for f, t in enumerate(times):
        theta = 2 * np.pi * np.arange(n) / n + t
        x = np.stack([np.cos(theta), np.sin(theta), *([np.zeros(n)] * (d - 2))], axis=-1)
        w.append(Frame(f, f, float(t), x[None], {"order_parameter": np.zeros(1)}))
    w.close(complete=True)
    return path


def test_w1_of_equispaced_tokens_against_the_uniform_density(tmp_path):
    config = MeanFieldConfig(model="kuramoto", beta=0.0, modes=16, T=1.0, save_every=0.5,
                             init="uniform")
    field = tmp_path / "u.h5"
    run_meanfield_to_file(config, field)
    run = synthetic_run(tmp_path / "run.h5", [0.0, 0.5, 1.0], n=64)
    curve = w1_against_density(load(run), load_density(field))
    np.testing.assert_array_equal(curve.times, [0.0, 0.5, 1.0])
    # n equispaced atoms against the uniform density: W1 = pi / (2 n), whatever the shift
    np.testing.assert_allclose(curve.w1, np.pi / (2 * 64), rtol=1e-9)
    i, j = common_frames([0.0, 0.3, 0.5 + 1e-13], [0.0, 0.5])
    assert i.tolist() == [0, 2] and j.tolist() == [0, 1]


def test_cli_plot_density_and_compare(tmp_path, written):
    ok(result := invoke("plot", written, "--out", tmp_path / "d.png"))  # default: density
    assert result.stdout.strip() == str(tmp_path / "d.png")
    run = synthetic_run(tmp_path / "run.h5", CONFIG.frame_times())
    ok(invoke("plot", written, "--kind", "compare", "--with", run, "--out", tmp_path / "c.png",
              "--times", "0,1,3"))
    ok(invoke("plot", run, "--kind", "compare", "--with", written, "--out",
              tmp_path / "c2.png"))  # either order
    for name in ("d.png", "c.png", "c2.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    usage_error(invoke("plot", written, "--out", tmp_path / "d.png"), "--out", "exists")
    usage_error(invoke("plot", written, "--kind", "clusters"), "--kind", "density file")
    usage_error(invoke("plot", written, "--kind", "compare"), "--with")
    usage_error(invoke("plot", run, "--kind", "density"), "--kind", "particle run")
    usage_error(invoke("plot", written, "--kind", "density", "--with", run), "--with")
    usage_error(invoke("plot", written, "--times", "99", "--out", tmp_path / "e.png"),
                "times must lie in")
    sphere = synthetic_run(tmp_path / "s.h5", CONFIG.frame_times(), n=8, d=3)
    usage_error(invoke("plot", written, "--kind", "compare", "--with", sphere, "--out",
                       tmp_path / "x.png"), "circle (d = 2)")
    apart = synthetic_run(tmp_path / "a.h5", [0.1, 0.15], n=8)
    usage_error(invoke("plot", written, "--kind", "compare", "--with", apart, "--out",
                       tmp_path / "y.png"), "share no save time")
    assert not any((tmp_path / n).exists() for n in ("e.png", "x.png", "y.png"))


def test_library_plot_writers_check_the_output_first(tmp_path, written):
    from particles.plotting.density import plot_density_file

    out = tmp_path / "d.png"
    out.write_bytes(b"keep")
    with pytest.raises(OutputPathError):
        plot_density_file(written, "density", out)
    assert out.read_bytes() == b"keep"
    assert plot_density_file(written, "density", out, overwrite=True) == out
    with pytest.raises(ValueError, match="--with"):
        plot_density_file(written, "compare")


def test_the_docs_document_the_mean_field_commands():
    guide = (ROOT / "docs" / "guide" / "meanfield.md").read_text()
    assert guide.startswith("# Mean field")
    for fragment in ("particles meanfield", "--kind density", "--kind compare --with",
                     "particles.load_density"):
        assert fragment in guide
    assert "particles meanfield" in (ROOT / "README.md").read_text()



@pytest.mark.parametrize("damage", ["nan", "short time axis"])
def test_a_damaged_density_file_is_refused_in_one_line(written, tmp_path, damage):
    """Issue 25 item 9: a NaN density, and a 3-entry time axis beside every frame of a
    file marked complete, were read, plotted and 'resumed' as if whole."""
    import shutil

    path = tmp_path / "d.h5"
    shutil.copy(written, path)
    with h5py.File(path, "r+") as f:
        if damage == "nan":
            f["observables/density/value"][1, 3] = np.nan
        else:
            f["observables/density/time"].resize((3,))
    for read in (load_density, read_density_summary):
        with pytest.raises(TrajectoryFileError, match="a damaged file") as err:
            read(path)
        assert "\n" not in str(err.value)
    for args in (["info", path], ["plot", path, "--out", tmp_path / "p.png"],
                 ["meanfield", "--out", path, "--resume"]):
        usage_error(invoke(*args), "damaged file")


@pytest.mark.parametrize("args, option", [
    (["--save-times", "1e-320"], "--save-times"), (["--rtol", "2"], "--rtol"),
    (["--atol", "0"], "--atol"),
])
def test_meanfield_values_it_would_ignore_are_refused(tmp_path, args, option):
    """Issue 25 item 11: a subnormal save time, rtol >= 1 and atol = 0 ran (exit 0)."""
    out = tmp_path / "f.h5"
    usage_error(invoke("meanfield", "--beta", "1", *args, "--out", out), option)
    assert not out.exists()
