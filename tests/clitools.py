"""Helpers shared by the command-line tests: run a command in-process and
check its outcome."""

from __future__ import annotations

from click.testing import CliRunner, Result
from particles_cli.main import cli


def invoke(*args) -> Result:
    """Run ``particles ARGS...`` in-process (arguments converted to str)."""
    return CliRunner().invoke(cli, [str(a) for a in args])


def ok(result: Result) -> None:
    """Exit status 0 (the output and exception shown otherwise)."""
    assert result.exit_code == 0, result.output + repr(result.exception)


def usage_error(result: Result, *fragments: str) -> None:
    """Exit status 2, one ``Error:`` line saying what is wrong (containing
    every fragment), no traceback."""
    assert result.exit_code == 2, result.output + repr(result.exception)
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1, result.output
    for fragment in fragments:
        assert fragment in errors[0], result.output
