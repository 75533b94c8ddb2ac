"""Start-up cost of the command line and of light imports.

Prints, for each command, the median wall and CPU seconds over a few runs
(each in a fresh process, so nothing is warm but the OS file cache), whether
the process loaded Numba, h5py or matplotlib, and the target of issue 10
(``particles --help`` under 0.5 s, ``particles info run.h5`` under 1.5 s,
neither loading Numba's compiler nor compiling anything).

``--cache`` times the README's main command instead, command by command,
each in a fresh process: first with an empty kernel cache (a new
``NUMBA_CACHE_DIR``), then again with the cache that run filled.

Usage::

    python benchmarks/bench_startup.py            # 5 runs per command
    python benchmarks/bench_startup.py --runs 9
    python benchmarks/bench_startup.py --cache    # README commands, empty vs warm cache
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


#: the README's main command, as separate commands (OUT is the output directory).
README = [
    ["--help"],
    ["simulate", "--n", "32", "--d", "2", "--beta", "9", "--integrator", "dopri5", "--rtol",
     "1e-5", "--T", "2000", "--save-times", "log:0.01:2000:60", "--seed", "1", "--out",
     "OUT/run.h5", "--overwrite"],
    ["info", "OUT/run.h5"],
    ["analyze", "OUT/run.h5"],
    ["plot", "OUT/run.h5", "--kind", "clusters", "--out", "OUT/clusters.png", "--overwrite"],
    ["plot", "OUT/run.h5", "--kind", "histogram", "--out", "OUT/histogram.png", "--overwrite"],
    ["plot", "OUT/run.h5", "--kind", "sphere", "--out", "OUT/sphere.png", "--overwrite"],
]


def cache_case() -> None:
    """Wall time of each README command from a fresh process, empty then warm cache."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "NUMBA_NUM_THREADS": "2", "NUMBA_CACHE_DIR": f"{tmp}/numba"}
        print(f"{'command':<40} {'empty cache s':>14} {'warm cache s':>13}")
        times: dict[str, list[float]] = {}
        for _ in range(2):
            for argv in README:
                argv = [a.replace("OUT", tmp) for a in argv]
                t0 = time.perf_counter()
                subprocess.run(["particles", *argv], env=env, check=True, capture_output=True)
                label = f"particles {argv[0]}" + (
                    f" --kind {argv[argv.index('--kind') + 1]}" if "--kind" in argv else "")
                times.setdefault(label, []).append(time.perf_counter() - t0)
        for label, (cold, warm) in times.items():
            print(f"{label:<40} {cold:>14.2f} {warm:>13.2f}")
        total = [sum(t[i] for k, t in times.items() if k.split()[1] not in ("--help", "info"))
                 for i in range(2)]
        print(f"{'README main command (simulate..plot)':<40} {total[0]:>14.2f} {total[1]:>13.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache", action="store_true",
                        help="the README commands with an empty, then a warm kernel cache")
    args = parser.parse_args()
    if args.cache:
        cache_case()
        return
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
