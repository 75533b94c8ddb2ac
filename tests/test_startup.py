"""Start-up: ``particles --help`` imports no command and none of the heavy libraries.

Times are measured in ``benchmarks/bench_startup.py``; these tests only check
what gets loaded, which is what makes the start fast.
"""

from __future__ import annotations

import subprocess
import sys

from particles_cli.main import COMMANDS, cli


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
