"""Seconds per step of ensembles with random weights: shared vs per-system draws.

``weight_draws="independent"`` hands every system of a batch its own Q, K, V
inside the one compiled call (``select_qkv``); this table measures what that
costs against one shared draw, and compares both with plain NumPy code that
applies per-system weights by batched matrix products (the papers' style).
All runs: model SA, kernel edp, ``weights="gaussian"``,
``value_weights="wwt"``, Euler layer, float64.

Usage::

    python benchmarks/bench_weight_draws.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_step import _time, numpy_layer
from particles.config import SimulationConfig
from particles.engine import _blas_guard, execution_plan
from particles.fields.weights import draw_layer
from particles.integrators.driver import fixed_runner
from particles.integrators.noise import no_keys
from particles.models import build_field

CASES = [
    # (n, d, batch)
    (32, 3, 1024),
    (32, 16, 256),
    (128, 32, 32),
]
BETA, H = 1.0, 0.01


def _config(n: int, d: int, batch: int, draws: str) -> SimulationConfig:
    return SimulationConfig(n=n, d=d, beta=BETA, integrator="euler", dt=H, batch=batch,
                            seed=0, weights="gaussian", value_weights="wwt",
                            weight_draws=draws)


def _positions(n: int, d: int, batch: int) -> np.ndarray:
    X = np.random.default_rng(0).normal(size=(batch, n, d))
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def particles_time(config: SimulationConfig, steps: int) -> float:
    """Seconds per Euler step of the whole batch through the compiled runner."""
    field = build_field(config)
    layout, drift, wsize = execution_plan(config, field)
    run = fixed_runner("euler", drift, layout, field.select)
    X = _positions(config.n, config.d, config.batch)

    def go():
        with _blas_guard(field, layout):
            run(X, 0.0, steps, H, field.params, wsize, no_keys(X.shape[0]), 0)

    return _time(go) / steps


def numpy_time(config: SimulationConfig) -> float:
    """Seconds per step of a NumPy Euler layer with per-system Q, K, V."""
    Q, K, V = (m[:, 0] for m in draw_layer(config))  # (batch, d, d), one head
    X = _positions(config.n, config.d, config.batch)
    return _time(lambda: numpy_layer(X, BETA, H, Q, K, V))


def main() -> None:
    print(f"numba threads: {numba.get_num_threads()}, beta={BETA}, float64, "
          "weights=gaussian, value_weights=wwt")
    header = (f"{'n':>5} {'d':>4} {'batch':>6} {'numpy indep.':>13} {'shared':>11} "
              f"{'independent':>12} {'indep./shared':>14} {'vs numpy':>9}")
    print(header)
    print("-" * len(header))
    for n, d, batch in CASES:
        steps = max(1, int(2e7 // (batch * n * n)))
        t_shared = particles_time(_config(n, d, batch, "shared"), steps)
        cfg = _config(n, d, batch, "independent")
        t_indep = particles_time(cfg, steps)
        t_np = numpy_time(cfg)
        print(f"{n:>5} {d:>4} {batch:>6} {t_np:>13.3e} {t_shared:>11.3e} {t_indep:>12.3e} "
              f"{t_indep / t_shared:>14.2f} {t_np / t_indep:>8.1f}x")


if __name__ == "__main__":
    main()
