"""``python -m particles_cli``: the ``particles`` command."""

from particles_cli.main import cli

if __name__ == "__main__":
    cli(prog_name="particles")
