"""Start-up cost of the command line and of light imports.

Prints, for each command, the median wall and CPU seconds over a few runs
(each in a fresh process, so nothing is warm but the OS file cache), whether
the process loaded Numba, h5py or matplotlib, and the target of issue 10
(``particles --help`` under 0.5 s, ``particles info run.h5`` under 1.5 s,
neither loading Numba's compiler nor compiling anything).

Usage::

    python benchmarks/bench_startup.py            # 5 runs per command
    python benchmarks/bench_startup.py --runs 9
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: probe appended to a command: which heavy modules did the process load.
_PROBE = (
    "import atexit, sys\n"
    "def _report():\n"
    "    heavy = [m for m in ('numba', 'h5py', 'matplotlib', 'scipy') if m in sys.modules]\n"
    "    compiled = 'numba.core.compiler' in sys.modules\n"
    "    sys.stderr.write('\\nPROBE ' + ','.join(heavy) + (' COMPILER' if compiled else '') "
    "+ '\\n')\n"
    "atexit.register(_report)\n"
)


def _timed(code: str, argv: list[str]) -> tuple[float, float, str]:
    """Run ``code`` with ``sys.argv = argv`` in a fresh interpreter: (wall, cpu, probe)."""
    script = _PROBE + f"import sys\nsys.argv = {argv!r}\n" + code
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "NUMBA_NUM_THREADS": "2"})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.strip().splitlines()[-1]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    probe = next((line[6:] for line in proc.stderr.splitlines() if line.startswith("PROBE")),
                 "")
    return wall, cpu, probe or "-"


_CLI = ("from particles_cli.main import cli\n"
        "try:\n    cli(prog_name='particles')\nexcept SystemExit as e:\n"
        "    if e.code not in (0, None): raise\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run.h5"
        subprocess.run([sys.executable, "-m", "particles_cli", "simulate", "--n", "8", "--d",
                        "3", "--beta", "1", "--T", "0.1", "--seed", "0", "--out", str(run)],
                       check=True, capture_output=True)
        cases = [
            ("import particles", "import particles\n", ["python"], None),
            ("import particles.sphere", "import particles.sphere\n", ["python"], None),
            ("particles --help", _CLI, ["particles", "--help"], 0.5),
            ("particles simulate --help", _CLI, ["particles", "simulate", "--help"], None),
            ("particles info run.h5", _CLI, ["particles", "info", str(run)], 1.5),
        ]
        print(f"{'command':<28} {'wall s':>8} {'cpu s':>8} {'target':>7}  loaded")
        for label, code, argv, target in cases:
            samples = [_timed(code, argv) for _ in range(args.runs)]
            wall = statistics.median(s[0] for s in samples)
            cpu = statistics.median(s[1] for s in samples)
            tgt = "-" if target is None else f"{target:g}"
            print(f"{label:<28} {wall:>8.3f} {cpu:>8.3f} {tgt:>7}  {samples[-1][2]}")


if __name__ == "__main__":
    main()
