"""Driver for tests/core/test_cache.py: many small runs in one process, results to an npz.

Run as ``python tests/core/cache_runs.py OUT.npz [NAME,NAME,...]`` (the runs
named, default all); the environment chooses the cache (``NUMBA_CACHE_DIR``)
and the threads (``NUMBA_NUM_THREADS``).  Every model, integrator (noise
included) and layout (serial, batch, rows, BLAS) runs once through
:func:`particles.simulate`; two of them also as a file run stopped half-way
and resumed.  The npz holds every run's frames and
observables, the layout each run took, and ``compiles``: how many functions
Numba compiled in this process (0 when everything came from the cache).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
from numba.core import event


class _CountCompiles(event.Listener):
    def __init__(self) -> None:
        self.count = 0

    def on_start(self, ev) -> None:
        self.count += 1

    def on_end(self, ev) -> None:
        pass


#: name -> keyword arguments of particles.simulate (small, short runs)
RUNS = {
    "sa_euler_serial": dict(n=12, d=3, beta=2.0, model="sa", integrator="euler", dt=0.05,
                            T=1.0, save_every=5),
    "usa_rk4_batch": dict(n=9, d=3, beta=1.5, model="usa", integrator="rk4", dt=0.05, T=1.0,
                          save_every=5, batch=3),
    "sa_dopri5_rows": dict(n=520, d=3, beta=4.0, model="sa", integrator="dopri5", dt=0.05,
                           T=0.3, save_times=(0.0, 0.1, 0.3)),
    "sa_geodesic_blas": dict(n=40, d=24, beta=3.0, model="sa", integrator="geodesic",
                             dt=0.05, T=0.5, save_every=5),
    "usa_dopri5_d5": dict(n=10, d=5, beta=1.0, model="usa", integrator="dopri5", dt=0.05,
                          T=1.0, save_times=(0.0, 0.5, 1.0), batch=2),
    "kuramoto_rk4": dict(n=16, d=2, beta=0.0, model="kuramoto", integrator="rk4", dt=0.05,
                         T=1.0, save_every=5, coupling=1.5, omega="gaussian:0.5"),
    "sa_d2_euler": dict(n=11, d=2, beta=5.0, model="sa", integrator="euler", dt=0.05,
                        T=1.0, save_every=5),
    "sa_em_noise": dict(n=8, d=3, beta=1.0, model="sa", integrator="em", dt=0.02, T=0.4,
                        save_every=5, noise=0.3),
    "usa_heun_noise_batch": dict(n=8, d=3, beta=1.0, model="usa", integrator="heun",
                                 dt=0.02, T=0.4, save_every=5, noise=0.3, batch=2),
}

#: runs also done as a file run to T/2, resumed to T
RESUMED = ("sa_euler_serial", "usa_heun_noise_batch")


def main(out: str, names: list[str]) -> None:
    counter = _CountCompiles()
    event.register("numba:compile", counter)
    import particles
    from particles.engine import execution_plan
    from particles.models import build_field

    results: dict[str, np.ndarray] = {}
    for name in names:
        traj = particles.simulate(seed=7, **RUNS[name])
        config = traj.config
        results[f"{name}/positions"] = traj.positions
        results[f"{name}/times"] = traj.times
        for key, value in traj.observables.items():
            results[f"{name}/obs/{key}"] = np.asarray(value)
        field = build_field(config)
        results[f"{name}/layout"] = np.array(execution_plan(config, field)[0])
        results[f"{name}/layout_field"] = np.array(field.name)
        if name in RESUMED:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "run.h5"
                particles.run_to_file(config.replace(T=config.T / 2), path)
                particles.run_to_file(config, path, resume=True)
                results[f"{name}/resumed_final"] = particles.load(path).positions[-1]
    results["compiles"] = np.array(counter.count)
    np.savez(out, **results)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2].split(",") if len(sys.argv) > 2 else list(RUNS))
