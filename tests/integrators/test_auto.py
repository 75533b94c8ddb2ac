"""``integrator="auto"``: dopri5 while clusters form, sdirk4 from the save point at
which the run turns stiff; its spectral radius estimate against a dense NumPy
Jacobian, the switch on a metastable plateau, none on a short run, resumes bit
for bit around the switch, the record in the file, and its refusals."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from clitools import invoke, ok, usage_error
from filetools import interrupted
from kerneltools import linear_rows

from particles import simulate
from particles.config import SimulationConfig
from particles.engine import iter_frames
from particles.errors import ConfigError
from particles.events import cluster_counts
from particles.integrators import INTEGRATORS, auto, steppers
from particles.io import load, read_summary
from particles.io.h5md import SWITCHES, TrajectoryWriter, read_switches
from particles.models import build_field
from particles.runs import run_to_file

#: circle, SA, beta 9: clusters form by t ~ 30, then plateaus (the layout of
#: tests/integrators/test_stiff.py); auto switches at frame 5 (t = 100)
TIMES = np.concatenate([[0.0], np.geomspace(1, 1e4, 9)])
PLATEAU = dict(T=1e4, save_times=TIMES, seed=1, dt=0.1)
RUN = SimulationConfig(n=32, d=2, beta=9.0, integrator="auto", **PLATEAU)
SWITCH_FRAME = 5


def counts(tr, n=32):
    return [int(cluster_counts(X.reshape(1, n, 2))[0]) for X in tr.positions]


# ------------------------------------------------------------ the estimate
def dense_radius(f, X, sphere=True):
    """NumPy twin of :func:`auto.spectral_radius`: the eigenvalues of the central-
    difference Jacobian of ``f`` (n, d) -> (n, d), on the tangent spaces on the sphere."""
    n, d = X.shape
    N = X.size
    J = np.empty((N, N))
    for j in range(N):
        e = np.zeros(N)
        e[j] = 1e-6
        J[:, j] = (f(X + e.reshape(n, d)) - f(X - e.reshape(n, d))).ravel() / 2e-6
    if sphere:  # an orthonormal basis of the tangent spaces, token by token
        B = np.zeros((N, n * (d - 1)))
        for i in range(n):
            Q = np.linalg.svd(np.eye(d) - np.outer(X[i], X[i]))[0][:, : d - 1]
            B[i * d:(i + 1) * d, i * (d - 1):(i + 1) * (d - 1)] = Q
        J = B.T @ J @ B
    return np.abs(np.linalg.eigvals(J)).max()


def test_spectral_radius_of_a_non_normal_linear_field():
    # x' = A x row by row, eigenvalues -5 and -0.1, far from orthogonal eigenvectors
    P = np.array([[1.0, 0.9], [0.1, 1.0]])
    A = P @ np.diag([-5.0, -0.1]) @ np.linalg.inv(P)
    X = np.random.default_rng(0).normal(size=(4, 2))
    p = (A, np.zeros(1))
    rho = auto.spectral_radius(linear_rows, X, p, np.empty(1), sphere=False)
    assert rho == pytest.approx(dense_radius(lambda Y: Y @ A.T, X, sphere=False), rel=1e-5)
    assert rho == pytest.approx(5.0, rel=1e-5)
    assert p[1][0] == 1 + auto.POWER_ITERATIONS  # f(X), then one per iteration


@pytest.mark.parametrize("d", [2, 3])
def test_spectral_radius_of_clustered_tokens_on_the_sphere(d):
    # three tight clusters: the intra-cluster contraction (rate ~1) dominates
    rng = np.random.default_rng(1)
    X = np.repeat(rng.normal(size=(3, d)), 4, axis=0) + 1e-3 * rng.normal(size=(12, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    field = build_field(SimulationConfig(n=12, d=d, beta=9.0))

    def tangent(Y):
        V = field.reference(Y)
        return V - np.einsum("id,id->i", Y, V)[:, None] * Y

    rho = auto.spectral_radius(field.serial, X, field.params, np.empty(field.workspace(1)))
    want = dense_radius(tangent, X)
    assert 0.5 < want < 2.0
    if d == 2:  # the three largest moduli equal, the next 0.63: converged
        assert rho == pytest.approx(want, rel=1e-3)
    else:  # moduli 0.993, 0.984, 0.977, ...: slow, from below (the rule errs explicit)
        assert 0.9 * want < rho < want


def test_the_rule_needs_every_system_stiff_over_enough_steps():
    many, h = np.array([20, 30]), np.array([3.0, 2.5])
    assert auto.stiff(many, h, lambda b: 1.0) == pytest.approx(2.5)
    assert auto.stiff(many, h, lambda b: (1.0, 0.5)[b]) is None  # one system is not
    assert auto.stiff(np.array([20, auto.MIN_STEPS - 1]), h, lambda b: 1.0) is None
    assert auto.stiff(many, h, lambda b: np.nan) is None
    steps, mean = auto.mean_steps(10.0, 40.0, np.array([5, 7]), np.array([15, 7]))
    np.testing.assert_array_equal(steps, [10, 0])
    np.testing.assert_array_equal(mean, [3.0, 0.0])


def test_auto_is_registered_as_the_choice_between_two_steppers():
    entry = INTEGRATORS["auto"]
    assert entry.phases == ("dopri5", "sdirk4") and entry.adaptive and not entry.stochastic
    assert "auto" not in steppers() and {"dopri5", "sdirk4"} <= set(steppers())


# ------------------------------------------------------------ the runs
@pytest.fixture(scope="module")
def plateau():
    """auto, dopri5 at its own tolerance and dopri5 at rtol 1e-10 on the plateau."""
    return (simulate(32, 2, 9.0, integrator="auto", **PLATEAU),
            simulate(32, 2, 9.0, integrator="dopri5", **PLATEAU),
            simulate(32, 2, 9.0, integrator="dopri5", rtol=1e-10, atol=1e-12, **PLATEAU))


def test_auto_switches_on_a_plateau_with_dopri5s_cluster_counts(plateau):
    tr, explicit, ref = plateau
    (switch,) = tr.switches
    assert (switch.frame, switch.before, switch.after) == (SWITCH_FRAME, "dopri5", "sdirk4")
    assert tr.switch_time == switch.time == TIMES[SWITCH_FRAME]
    assert switch.stiffness >= auto.STIFF
    assert counts(tr) == counts(ref)
    assert 1 <= counts(tr)[-1] < 6
    # up to the switch: dopri5's bits
    k = SWITCH_FRAME + 1
    np.testing.assert_array_equal(tr.positions[:k], explicit.positions[:k])
    # then sdirk4 contracts each cluster to round-off (the collapse engages) and
    # crosses the plateau in far fewer steps than dopri5 at its stability limit
    assert len(np.unique(tr.positions[-1], axis=0)) == counts(tr)[-1]
    steps, explicit_steps = (t.observables["accepted_steps"][-1] for t in (tr, explicit))
    assert steps < explicit_steps / 5, (steps, explicit_steps)


def test_a_short_run_never_switches_and_is_dopri5_bit_for_bit():
    kw = dict(T=1.0, dt=0.1, save_every=2, seed=1)
    a = simulate(32, 2, 9.0, integrator="auto", **kw)
    b = simulate(32, 2, 9.0, integrator="dopri5", **kw)
    assert a.switches == () and a.switch_time is None
    np.testing.assert_array_equal(a.positions, b.positions)
    for name in b.observables:
        np.testing.assert_array_equal(a.observables[name], b.observables[name])


def test_an_ensemble_switches_when_every_system_is_stiff():
    # (a system alone would collapse its coincident tokens, an ensemble does not)
    tr = simulate(32, 2, 9.0, integrator="auto", batch=2, **PLATEAU)
    alone = [simulate(32, 2, 9.0, integrator="auto", x0=tr.positions[0, b], collapse_tol=0.0,
                      **PLATEAU) for b in range(2)]
    (switch,) = tr.switches
    assert switch.frame >= max(a.switches[0].frame for a in alone)
    k = min(a.switches[0].frame for a in alone) + 1
    for b in range(2):  # before any switch: each system as it runs alone
        np.testing.assert_array_equal(tr.positions[:k, b], alone[b].positions[:k])


# ------------------------------------------------------------ files and resumes
@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    path = tmp_path_factory.mktemp("auto") / "whole.h5"
    run_to_file(RUN, path)
    return path


def assert_same_file(a, b):
    ta, tb = load(a), load(b)
    assert ta.complete and tb.complete
    np.testing.assert_array_equal(ta.times, tb.times)
    np.testing.assert_array_equal(ta.steps, tb.steps)
    np.testing.assert_array_equal(ta.positions, tb.positions)
    assert ta.observables.keys() == tb.observables.keys()
    for name in ta.observables:
        np.testing.assert_array_equal(ta.observables[name], tb.observables[name], err_msg=name)
    assert ta.switches == tb.switches


def test_the_file_records_the_switch(whole, plateau):
    (switch,) = read_switches(whole)
    assert switch == plateau[0].switches[0]
    assert read_summary(whole).switches == (switch,) and load(whole).switches == (switch,)
    np.testing.assert_array_equal(load(whole).positions, plateau[0].positions)
    result = invoke("info", whole)
    ok(result)
    assert (f"switched     dopri5 -> sdirk4 after frame {SWITCH_FRAME} (t = 100;"
            in result.stdout)


@pytest.mark.parametrize("frames", [SWITCH_FRAME, SWITCH_FRAME + 1, SWITCH_FRAME + 3],
                         ids=["before", "at", "after"])
def test_a_resumed_run_equals_the_uninterrupted_one(tmp_path, whole, frames):
    """Interrupted before the frame it switches at (the resume decides again), just
    after it (the file says so: sdirk4 goes on), and later."""
    path = interrupted(tmp_path / "cut.h5", RUN, frames)
    assert len(read_switches(path)) == (frames > SWITCH_FRAME)
    assert "not yet" in invoke("info", path).stdout or frames > SWITCH_FRAME
    run_to_file(RUN, path, resume=True)
    assert_same_file(path, whole)


def test_a_switch_written_before_its_frame_is_cut_and_written_once_again(tmp_path, whole):
    # a kill between the switch's row and its frame: the row is past the last frame
    path = tmp_path / "killed.h5"
    path.write_bytes(whole.read_bytes())
    with h5py.File(path, "r+") as f:
        f["parameters"].attrs["complete"] = np.int8(0)
        for name in ("value", "time", "step"):
            f["particles/tokens/position"][name].resize(SWITCH_FRAME, axis=0)
        assert f[SWITCHES]["frame"].shape == (1,)
    assert read_switches(path) == ()
    run_to_file(RUN, path, resume=True)
    assert_same_file(path, whole)


def continued_frames(path, start, integrator=None):
    """The frames after ``start`` computed in memory from that frame of ``path``."""
    tr = load(path)
    counts_k = np.stack([tr.observables[n][start:start + 1]
                         for n in ("accepted_steps", "rejected_steps")], axis=-1)
    return list(iter_frames(RUN, tr.positions[start][None], start=start,
                            start_step=int(tr.steps[start]), step_counts=counts_k,
                            integrator=integrator))


def test_auto_chosen_anew_on_a_resume_starts_with_dopri5(tmp_path):
    """auto, switched; resumed with dopri5 for a frame; resumed with auto again: that
    segment starts afresh (dopri5, then its own switch), as a run started there."""
    path = interrupted(tmp_path / "r.h5", RUN, SWITCH_FRAME + 3)
    interrupted(path, RUN.replace(integrator="dopri5"), SWITCH_FRAME + 4, resume=True)
    run_to_file(RUN, path, resume=True)
    start = SWITCH_FRAME + 3
    fresh = continued_frames(path, start)
    tr = load(path)
    for fr in fresh:
        np.testing.assert_array_equal(tr.positions[fr.index], fr.positions[0])
    first, again = tr.switches
    assert first.frame == SWITCH_FRAME and again.frame > start
    assert again == next(fr.switch for fr in fresh if fr.switch is not None)


def test_a_resume_that_undoes_a_frameless_change_goes_on_with_sdirk4(tmp_path, whole):
    # killed before the first frame of a dopri5 segment: auto again folds it away,
    # and the switch before it stands
    path = interrupted(tmp_path / "r.h5", RUN, SWITCH_FRAME + 3)
    TrajectoryWriter.reopen(path, config=RUN.replace(integrator="dopri5")).close(complete=False)
    assert [s.changes for s in read_summary(path).segments] == [
        {"integrator": ("auto", "dopri5")}]
    run_to_file(RUN, path, resume=True)
    assert read_summary(path).segments == ()
    assert_same_file(path, whole)


def test_iter_frames_continues_with_a_phase_of_its_integrator(whole):
    tr = load(whole)
    k = SWITCH_FRAME
    frames = continued_frames(whole, k, "sdirk4")
    np.testing.assert_array_equal(frames[-1].positions[0], tr.positions[-1])
    with pytest.raises(ValueError, match="not a phase of 'auto'"):
        next(iter_frames(RUN, tr.positions[k][None], start=k, integrator="rk4"))


# ------------------------------------------------------------ refusals
def test_auto_refuses_noise_in_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"^integrator must be .*'auto'") as info:
        SimulationConfig(n=8, d=2, beta=1.0, integrator="auto", noise=0.1)
    assert info.value.field == "integrator" and "\n" not in str(info.value)
    usage_error(invoke("simulate", "--out", tmp_path / "x.h5", "--n", 8, "--d", 2, "--beta", 1,
                       "--integrator", "auto", "--noise", 0.1), "--integrator", "'auto'")
