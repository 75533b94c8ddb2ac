"""A resumed sweep keeps the summation its file recorded per grid point, where
its description leaves it to ``auto`` (the default since it became one)."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from particles.config import SimulationConfig
from particles.errors import RunInterrupted
from particles.sweep import SweepSpec, run_sweep

#: n = 1024 on the circle: auto sums by the series; a file made when direct
#: was the default recorded direct.
BASE = {"n": 1024, "d": 2, "integrator": "euler", "dt": 0.1, "T": 0.2, "save_every": 1}


def spec(**base) -> SweepSpec:
    return SweepSpec(base={**BASE, **base}, axes=(("beta", (1.0, 2.0)),), runs=2, seed=5,
                     positions=True)


def test_a_resumed_sweep_made_with_direct_stays_direct(tmp_path):
    assert SimulationConfig(n=1024, d=2, beta=1.0).summation == "spectral"
    reference = tmp_path / "ref.h5"
    run_sweep(spec(summation="direct"), reference, chunk=1)
    path = tmp_path / "old.h5"
    polled = []
    with pytest.raises(RunInterrupted):
        run_sweep(spec(summation="direct"), path, chunk=1,
                  should_stop=lambda: polled.append(1) or len(polled) >= 1)
    with h5py.File(path, "r+") as f:  # as written before auto was the default
        params = f["parameters"].attrs
        stored = json.loads(params["sweep"])
        del stored["base"]["summation"]
        params["sweep"] = json.dumps(stored, sort_keys=True)
        assert json.loads(f["sweep/configs"].asstr()[0])["summation"] == "direct"
    result = run_sweep(None, path, resume=True, chunk=1)
    assert result.complete and result.systems_run == 3
    with h5py.File(path, "r") as a, h5py.File(reference, "r") as b:
        np.testing.assert_array_equal(a["sweep/systems/positions"][()],
                                      b["sweep/systems/positions"][()])
