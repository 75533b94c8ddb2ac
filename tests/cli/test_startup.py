"""Start-up: ``particles --help`` imports no command and none of the heavy libraries.

Times are measured in ``benchmarks/bench_startup.py``; these tests only check
what gets loaded, which is what makes the start fast.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from particles_cli.main import COMMANDS, cli

pytestmark = pytest.mark.processes


def test_stored_help_matches_each_command():
    for entry in COMMANDS:
        command = entry.load()
        assert command.name == entry.name
        assert command.get_short_help_str(limit=500) == entry.help, entry.name
        assert cli.commands[entry.name] is command


def test_help_lists_every_command_without_loading_them():
    code = ("import sys\nfrom particles_cli.main import cli\n"
            "try:\n    cli(['--help'], prog_name='particles')\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('numba', 'h5py', 'matplotlib', 'particles.fields',\n"
            "         'particles_cli.simulate') if m in sys.modules]\n"
            "print('LOADED', ','.join(heavy))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "LOADED \n" in out or out.rstrip().endswith("LOADED"), out
    for entry in COMMANDS:
        assert entry.name in out


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout


def test_writing_and_reading_a_file_load_no_compiler(tmp_path):
    # a file written by the I/O layer alone (no run), then `particles info` on it:
    # configuration checks, the registries they consult and the file layer stay
    # free of Numba (its kernels are created on first use)
    path = tmp_path / "run.h5"
    out = _run(
        "import sys\nimport numpy as np\n"
        "from particles.config import SimulationConfig\n"
        "from particles.io.h5md import TrajectoryWriter\n"
        "from particles.trajectory import Frame\n"
        "c = SimulationConfig(n=4, d=3, beta=1.0, model='usa', kernel='rbf', T=0.0, seed=0)\n"
        f"w = TrajectoryWriter.create({str(path)!r}, c)\n"
        "w.append(Frame(0, 0, 0.0, np.eye(3)[[0, 1, 2, 0]][None], {}))\n"
        "w.close(complete=True)\n"
        "print('numba' in sys.modules)\n")
    assert out.strip() == "False"
    out = _run(
        "import sys\nfrom particles_cli.main import cli\n"
        f"try:\n    cli(['info', {str(path)!r}], prog_name='particles')\n"
        "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        "print('NUMBA', 'numba' in sys.modules)\n")
    assert "status       complete" in out
    assert "NUMBA False" in out
