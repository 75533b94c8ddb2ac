"""``python -m particles_cli``: the ``particles`` command.

The interrupt handlers are installed before anything heavy is imported
(:mod:`particles_cli.interrupts` needs only the standard library), so Ctrl-C
during start-up is one line too.
"""

import sys

from particles_cli import interrupts


def main() -> None:
    """Install the interrupt handling, then run the command group."""
    try:
        interrupts.install()
        from particles_cli.main import cli
    except KeyboardInterrupt:  # Ctrl-C while importing click
        interrupts.exit_now("Interrupted: stopped before any work; nothing written")
    try:
        cli(prog_name="particles")
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (exc.code is not None)
    signum = interrupts.held()
    if signum is not None and status == 0:  # a signal after the command had finished
        print("Interrupted: after the command had finished (its output is complete)",
              file=sys.stderr)
        status = 128 + signum
    interrupts.leaving(status)
    sys.exit(status)


if __name__ == "__main__":
    main()
