"""Processes that fill one kernel cache at the same time lose no entry.

Numba's index update (read the index, take the first free data-file number,
write both back) raced: two processes compiling the same function at once
(the suite's two workers, a Dask cluster's workers on one file system) both
wrote data file 1, and the last index written dropped the other's entry (a
warm Dask worker then compiled, issue 38 item 2), or named the other's data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.processes

SCRIPT = textwrap.dedent("""
    import json, sys, time

    def kernel():  # the function whose cache the processes share
        pass

    from particles._numba import _robust_cache_class

    def key(who, k):
        return (f"signature {who} {k}", ("target", "cpu", "features"), ("code", ""))

    cache = _robust_cache_class()(kernel)._cache_file
    mode, workers, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if mode == "load":  # what each key loads: [who, k], or None when lost
        found = [[cache.load(key(w, k)) for k in range(count)] for w in range(workers)]
        print(json.dumps([[d and [d["who"], d["k"]] for d in row] for row in found]))
    else:
        start = float(sys.argv[4])
        while time.time() < start:  # all savers begin together
            pass
        for k in range(count):
            cache.save(key(mode, k), {"who": int(mode), "k": k})
""")


def test_concurrent_saves_keep_every_entry_under_its_own_key(tmp_path):
    script = tmp_path / "cache_filler.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    workers, count = 6, 40
    start = time.time() + 2.0  # after every interpreter has started
    procs = [subprocess.Popen([sys.executable, str(script), str(w), str(workers), str(count),
                               str(start)], env=env, cwd=tmp_path) for w in range(workers)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    loaded = subprocess.run([sys.executable, str(script), "load", str(workers), str(count)],
                            env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    found = json.loads(loaded.stdout)
    lost = sum(d is None for row in found for d in row)
    wrong = sum(d is not None and d != [w, k]
                for w, row in enumerate(found) for k, d in enumerate(row))
    assert (lost, wrong) == (0, 0)
