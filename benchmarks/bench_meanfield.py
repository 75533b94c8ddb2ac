"""Speed of the mean-field solver (issue 13): M = 1024 grid points, USA at beta = 9,
from a perturbed uniform density through cluster formation.

Usage::

    python benchmarks/bench_meanfield.py            # the table below
    python benchmarks/bench_meanfield.py --quick    # shorter runs

Prints, per run: the time scale (``usa_scale``), D, T, accepted/rejected steps,
wall time, cost per step, the last step size, the smallest density (relative
to the largest) and the spectral tail (``max |rho_hat_k|, k >= 0.8 M/2``
relative to ``rho_hat_0``): a run is *resolved* when the tail stays below 1e-6
and the density does not undershoot.  Also the share of a step spent in the
22 FFTs (the rest is NumPy arithmetic and Python per stage).

Why two time scales: with ``usa_scale="n"`` (the particles' default) USA
moves at speeds up to ~``e^beta`` = 8100, the clusters form by ``t ~ 0.05``
and the explicit advection then limits the step to ``~3 / (k_max v_max)``
(5e-5 at M = 1024), so ``T = 100`` is millions of steps: the table reports
the formation (``T = 0.1``) and extrapolates.  With ``usa_scale="n_exp_beta"``
(time ``e^beta t``) the same formation happens around ``t ~ 50``, and ``T =
100`` covers it.  At ``D = 0`` the clusters collapse to points, which no grid
resolves; the table shows the smallest diffusion that keeps them resolved.

On S^2 (``--sphere``, issue 42's acceptance): the command ``particles meanfield --d 3
--beta 5 --lmax 64 --T 20`` (USA, ``init perturbed``, D = 0) run under a wall-clock
limit, with frames every 0.1 to see how far it gets: the time reached, accepted and
rejected steps, ms per step and per right-hand side, and where the density first
goes negative (the clusters outgrow the grid).  Then the sliced W1 (particles.
meanfield.sliced) between the solve and ``n`` tokens drawn i.i.d. from its frame 0
(particles.meanfield.sphere_tokens.sample_sphere_density, the draw of ``simulate
--init density:FILE``) run by ``particles.simulate`` (dopri5, spectral sums) at every
0.1 while the solve stays resolved; ``--noise D`` runs both with diffusion D (tokens
with noise sqrt(2 D), Heun with ``--dt``: USA at beta 5 contracts a cluster at rate
~e^5, and dt = 0.004 already doubles the distance at t = 1) instead.

    python benchmarks/bench_meanfield.py --sphere [--n 100000] [--init SPEC] [--T-w1 10]
    python benchmarks/bench_meanfield.py --sphere --noise 1 --init perturbed:eps=0.3,lmax=4 --T-w1 2
"""

from __future__ import annotations

import argparse
import signal
import time

import numpy as np

from particles import simulate
from particles.errors import IntegrationError
from particles.meanfield import MeanFieldConfig, SphereFieldConfig, solve, solve_sphere_frames
from particles.meanfield.sliced import sliced_w1_density
from particles.meanfield.sphere import SphereSpace
from particles.meanfield.sphere_tokens import sample_sphere_density
from particles.seeds import init_rng


def _tail(rho: np.ndarray) -> float:
    rh = np.abs(np.fft.rfft(rho))
    return float(rh[int(0.8 * rh.size):].max() / rh[0])


def run(scale: str, D: float, T: float, *, M: int = 1024, beta: float = 9.0,
        init: str = "perturbed:eps=0.01", rtol: float = 1e-8) -> dict:
    """One solve; returns the row of the table."""
    cfg = MeanFieldConfig(model="usa", beta=beta, D=D, modes=M, T=T, save_every=T / 20,
                          init=init, usa_scale=scale, rtol=rtol, atol=1e-3 * rtol,
                          positivity="ignore", max_steps=2_000_000)
    worst = {"tail": 0.0, "undershoot": 0.0}

    def watch(frame) -> None:
        worst["tail"] = max(worst["tail"], _tail(frame.rho))
        worst["undershoot"] = min(worst["undershoot"], frame.min_density / frame.rho.max())

    t0 = time.perf_counter()
    try:
        res = solve(cfg, on_frame=watch)
        status = "ok"
        steps, rejected, dt = res.steps, res.rejected, res.final.dt
        peak = float(res.rho[-1].max())
    except Exception as exc:  # the step vanishes when the collapse is not resolved
        status = type(exc).__name__
        steps = rejected = 0
        dt = peak = float("nan")
    wall = time.perf_counter() - t0
    resolved = status == "ok" and worst["tail"] < 1e-6 and worst["undershoot"] > -1e-6
    return dict(scale=scale, D=D, T=T, steps=steps, rejected=rejected, wall=wall,
                ms_per_step=1e3 * wall / max(1, steps + rejected), dt=dt, peak=peak,
                tail=worst["tail"], undershoot=worst["undershoot"], status=status,
                resolved=resolved)


def fft_share(M: int = 1024, repeat: int = 2000) -> float:
    """Seconds of the 22 real FFTs of one step (7 stages x 3, plus the error)."""
    x = np.random.default_rng(0).random(M)
    u = np.fft.rfft(x)
    t0 = time.perf_counter()
    for _ in range(repeat):
        for _ in range(7):
            np.fft.irfft(u, M)
            np.fft.irfft(u, M)
            np.fft.rfft(x)
        np.fft.irfft(u, M)
    return (time.perf_counter() - t0) / repeat


def sphere_command(limit: float, T: float = 20.0, save_every: float = 0.1) -> None:
    """``particles meanfield --d 3 --beta 5 --lmax 64 --T 20`` with frames every
    ``save_every``, stopped after ``limit`` wall seconds: print how far it got."""
    config = SphereFieldConfig(d=3, beta=5.0, lmax=64, T=T, save_every=save_every,
                               positivity="ignore")
    space = SphereSpace(config)
    u = space.analyse(space.initial(config))
    t0 = time.perf_counter()
    for _ in range(50):
        space.rhs(u)
    rhs = (time.perf_counter() - t0) / 50
    print(f"S^2, lmax 64 (grid {space.ntheta} x {space.nphi}): {1e3 * rhs:.2f} ms per right-hand "
          "side (3 transforms)")
    t0, lost, frame = time.perf_counter(), None, None

    def stop(*_):
        raise TimeoutError

    signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, limit)  # a frame may take minutes once unresolved
    try:
        for frame in solve_sphere_frames(config, space=space):
            if lost is None and frame.min_density < -1e-6 * frame.rho.max():
                lost = frame
    except IntegrationError as exc:
        print(f"  stopped: {exc}")
    except TimeoutError:
        print(f"  stopped after {limit:g} s (the last frame below)")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    wall = time.perf_counter() - t0
    s = frame.state
    print(f"  last frame t = {frame.time:g} of {T:g} after {wall:.1f} s: {s.steps} steps + "
          f"{s.rejected} rejected by then, dt {s.dt:.2e}, max density {frame.rho.max():.3g}")
    if lost is not None:
        print(f"  the density first goes negative at t = {lost.time:g} (min {lost.min_density:.3g},"
              f" max {lost.rho.max():.3g}; step {lost.state.steps}): from there it is not resolved")


def sphere_w1(n: int, init: str, T: float, D: float = 0.0, dt: float = 0.001,
              seed: int = 0) -> None:
    """Sliced W1 between the S^2 solve (USA, beta 5, lmax 64) and n tokens from its start."""
    config = SphereFieldConfig(d=3, beta=5.0, lmax=64, T=T, save_every=0.1, init=init, D=D,
                               seed=seed, positivity="ignore")
    space = SphereSpace(config)
    t0, frames = time.perf_counter(), []
    try:
        for frame in solve_sphere_frames(config, space=space):
            frames.append(frame)
            if frame.min_density < -1e-6 * frame.rho.max():
                break  # the clusters outgrew the grid: no density to compare with
    except IntegrationError as exc:
        print(f"  PDE stopped: {exc}")
    pde = time.perf_counter() - t0
    times = np.array([f.time for f in frames])
    x0 = sample_sphere_density(frames[0].rho, 64, n, init_rng(seed))
    t0 = time.perf_counter()
    noisy = dict(noise=float(np.sqrt(2 * D)), dt=dt) if D else dict(integrator="dopri5")
    tr = simulate(n, 3, 5.0, model="usa", x0=x0, T=float(times[-1]), save_times=times,
                  summation="auto", observables=("order",), seed=seed, **noisy)
    run = time.perf_counter() - t0
    grid = space.theta, space.phi, space.cell[:, 0], 64
    w1 = [sliced_w1_density(x, f.rho, *grid) for x, f in zip(tr.positions, frames, strict=True)]
    print(f"S^2 sliced W1, n = {n}, init {init}, D = {D:g}: PDE {pde:.1f} s "
          f"({frames[-1].state.steps} steps), particles {run:.1f} s")
    print(f"{'t':>6} {'SW1':>8} {'PDE min':>9} {'PDE max':>9}")
    for t, w, f in zip(times, w1, frames, strict=True):
        print(f"{t:>6.2f} {w:>8.4f} {f.min_density:>9.3g} {f.rho.max():>9.3g}")
    print(f"  max SW1 over t in [0, {times[-1]:g}]: {max(w1):.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short runs only")
    ap.add_argument("--sphere", action="store_true", help="the S^2 acceptance runs")
    ap.add_argument("--limit", type=float, default=120.0, help="wall seconds of the command")
    ap.add_argument("--n", type=int, default=100_000, help="tokens of the W1 comparison")
    ap.add_argument("--init", default="perturbed:eps=0.05,lmax=4",
                    help="start of the W1 comparison")
    ap.add_argument("--T-w1", type=float, default=10.0, help="horizon of the W1 comparison")
    ap.add_argument("--noise", type=float, default=0.0, help="D of the W1 comparison")
    ap.add_argument("--dt", type=float, default=0.001, help="Heun step of the noisy tokens")
    args = ap.parse_args()
    if args.sphere:
        sphere_command(args.limit)
        sphere_w1(args.n, args.init, args.T_w1, args.noise, args.dt)
        return
    rows = []
    if args.quick:
        rows.append(run("n_exp_beta", 1e-4, 60.0))
        rows.append(run("n", 3.0, 0.02))
    else:
        for D in (0.0, 1e-5, 3e-5, 1e-4):
            rows.append(run("n_exp_beta", D, 100.0))
        for D in (1.0, 3.0):
            rows.append(run("n", D, 0.1))
    head = (f"{'usa_scale':>10} {'D':>7} {'T':>6} {'steps':>7} {'rej':>5} {'wall s':>7} "
            f"{'ms/step':>7} {'last dt':>8} {'peak':>7} {'tail':>8} {'min/max':>9} status")
    print(head)
    for r in rows:
        print(f"{r['scale']:>10} {r['D']:>7.0e} {r['T']:>6g} {r['steps']:>7d} {r['rejected']:>5d} "
              f"{r['wall']:>7.2f} {r['ms_per_step']:>7.3f} {r['dt']:>8.2e} {r['peak']:>7.3g} "
              f"{r['tail']:>8.1e} {r['undershoot']:>9.1e} {r['status']}"
              f"{' resolved' if r['resolved'] else ' NOT resolved'}")
    share = fft_share()
    print(f"22 FFTs of M = 1024: {1e3 * share:.3f} ms per step")
    for r in rows:
        if r["scale"] == "n" and r["status"] == "ok":
            est = (100.0 - r["T"]) / r["dt"] * r["ms_per_step"] / 1e3
            print(f"usa_scale='n', D={r['D']:g}: T = 100 needs ~{100.0 / r['dt']:.2g} more steps "
                  f"at dt = {r['dt']:.2g} (explicit advection limit), ~{est:.0f} s")


if __name__ == "__main__":
    main()
