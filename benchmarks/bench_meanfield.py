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
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from particles.meanfield import MeanFieldConfig, solve


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short runs only")
    args = ap.parse_args()
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
