"""The CPU features the kernels compile for (``particles._numba.configure_cpu``):
the full vector width on AVX-512 hosts, a user's choice respected, a cache
entry never served to a process compiling for other features, and the same
bits at every vector width.

Every case runs in fresh processes: the choice is made once per process,
before Numba's code generator exists.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]

#: prints what the process compiled for (and, with RUN set, runs a small
#: simulation and reports its bytes, its compiles and its cache loads)
PROBE = """
import hashlib, json, os, sys
from numba.core import event
n = []
class L(event.Listener):
    def on_start(self, ev): n.append(1)
    def on_end(self, ev): pass
event.register('numba:compile', L())
if os.environ.get('EARLY'):  # Numba compiles before the package does
    import numba
    numba.njit(lambda x: x + 1)(1)
import particles
from particles import _numba
out = {}
if os.environ.get('RUN'):
    h = hashlib.sha256()
    # one run (each compile costs seconds): the attention tile's exp and fmas, rk4
    traj = particles.simulate(n=40, d=3, beta=4.0, model='sa', integrator='rk4', dt=0.05,
                              T=1.0, save_every=5, seed=3, observables=('order',))
    h.update(traj.positions.tobytes())
    out.update(digest=h.hexdigest(), compiles=len(n), loads=sum(_numba.LOADS.values()))
out.update(_numba.compile_target(), bits=_numba.kernel_vector_bits(),
           env=os.environ.get('NUMBA_CPU_FEATURES'))
print(json.dumps(out))
"""


def _host_features() -> str:
    from numba.core import codegen

    return codegen.get_host_cpu_features()


def _probe(tmp_path: Path, **env: str) -> dict:
    full = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CPU")}
    # one thread: the serial runners only (a parallel region doubles the compile)
    full.update(NUMBA_CACHE_DIR=str(tmp_path / "cache"), NUMBA_NUM_THREADS="1", **env)
    proc = subprocess.run([sys.executable, "-c", PROBE], env=full, cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_avx512_hosts_compile_for_the_full_width(tmp_path):
    host = _host_features()
    got = _probe(tmp_path)
    if "+avx512f" in host.split(","):
        assert got["choice"] == "wide"
        assert got["features"] == got["env"] == host + ",-prefer-256-bit"
        assert got["bits"] == 512
    else:
        assert got["choice"] == "host" and got["env"] is None
        assert got["features"] == host
        assert got["bits"] <= 256


def test_a_users_features_and_an_earlier_compile_are_respected(tmp_path):
    host = _host_features()
    mine = host + ",+prefer-256-bit"
    got = _probe(tmp_path, NUMBA_CPU_FEATURES=mine)
    assert (got["choice"], got["features"], got["env"]) == ("user", mine, mine)
    assert got["bits"] <= 256
    late = _probe(tmp_path, EARLY="1")
    assert late["choice"] == "late" and late["env"] is None
    assert late["features"] == host  # what Numba's code generator was made with


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the feature names are x86's")
def test_entries_are_per_feature_string_and_the_bits_are_the_same(tmp_path):
    """A process compiling for other features (here: no AVX, so 128-bit vectors
    and FMA by libm) loads nothing the first one cached and compiles its own
    entries; the runs give the same bytes at both widths; a third process like
    the first loads everything."""
    first = _probe(tmp_path, RUN="1")
    assert first["compiles"] > 0
    other = first["features"] + ",-avx"
    narrow = _probe(tmp_path, RUN="1", NUMBA_CPU_FEATURES=other)
    assert narrow["features"] == other and narrow["bits"] == 128 < first["bits"]
    assert narrow["loads"] == 0 and narrow["compiles"] > 0
    assert narrow["digest"] == first["digest"]
    again = _probe(tmp_path, RUN="1")
    assert again["features"] == first["features"]
    assert again["loads"] > 0 and again["compiles"] == 0
    assert again["digest"] == first["digest"]
