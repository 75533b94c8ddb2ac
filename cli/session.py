"""The one place the commands turn a session's outcome into lines and an exit status.

Every command that runs a session (``simulate``, ``meanfield``, ``compare``,
``sweep``) calls :func:`run_session` with the library call; the exceptions
of :mod:`particles.runs.session` become:

==========================================  ==================================  ======
outcome                                     stderr                              status
==========================================  ==================================  ======
done                                        (stdout: the report lines)          0
Ctrl-C / SIGTERM (``RunInterrupted``), or   ``Interrupted: <what the file       128 +
a signal held while the file was finished   holds>; continue with: ... --resume`` signal
disk full (``OutputWriteError``)            ``Error: cannot write ...``         1
integration failed (``RunFailed``)          ``Error: <why>; <what it holds>``   1
bad target (``OutputPathError``)            click's one line naming the option  2
resume with other options (``ResumeMismatch``)  the options that differ          2
any other bad input (``ValueError``)        one line in option names            2
==========================================  ==================================  ======

What a file holds is said from its :class:`~particles.errors.Summary`
(:func:`kept_line`), the same way for every kind.
"""

from __future__ import annotations

import signal
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from particles_cli import interrupts
from particles_cli.options import CONFIG_KEYS, cli_message, named_files, option_name

from particles.errors import (
    IntegrationError,
    OutputPathError,
    OutputWriteError,
    ResumeMismatch,
    RunFailed,
    Summary,
    WorkersLost,
)
from particles.paths import check_not_input

__all__ = ["kept_line", "mismatch_line", "one_line_warnings", "run_session", "stop_on_signals"]


@contextmanager
def one_line_warnings() -> Iterator[None]:
    """Show warnings (e.g. StepSizeWarning) as one ``Warning: ...`` line on stderr."""

    def show(message, category, filename, lineno, file=None, line=None):
        click.echo(f"Warning: {message}", err=True)

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        yield


@contextmanager
def stop_on_signals() -> Iterator[list[int]]:
    """SIGINT (Ctrl-C) and SIGTERM stop the session cleanly; yields the signals received.

    The handler raises ``KeyboardInterrupt`` for the first signal only and
    records every signal, which the session polls after every item: an
    interrupt raised while Numba compiles can be swallowed inside llvmlite,
    and the record still stops the session at its next item.  A second signal
    never interrupts the clean stop the first one started.  Clear
    ``requested.running`` (the yielded list's attribute) once the session has
    returned: later signals are then only recorded.
    """

    class Requested(list):
        running = True

    requested = Requested()

    def handler(signum, frame):
        requested.append(signum)
        if len(requested) == 1 and requested.running:
            raise KeyboardInterrupt

    previous = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: leave signals alone
        pass
    try:
        yield requested
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def kept_line(out: Path, summary: Summary | None, *, command: str | None,
              unit: str = "frame") -> str:
    """What a stopped session left in ``out``, in words.

    Parameters
    ----------
    out : Path
    summary : Summary or None
        What the file holds (None: nothing was kept).
    command : str or None
        The command that continues it (``"particles simulate"``); None for a
        file that ``--resume`` would not help (a failed integration, a
        comparison).
    unit : str
        What the file's items are, singular (``"frame"``, ``"system"``).
    """
    if summary is None:
        return f"no {unit} was saved; {out} not written (an existing file is unchanged)"
    if summary.complete:
        return f"{out} is complete; it {summary.describe()}"
    line = f"{out} {summary.describe()}, marked incomplete"
    return line + (f"; continue with: {command} --resume --out {out}" if command else "")


def mismatch_line(out: Path, exc: ResumeMismatch) -> str:
    """One line naming each option whose value differs from the stored one (and
    why it cannot change, where the library says more)."""
    parts = [f"{option_name(k)} {given!r} (stored {stored!r})"
             for k, (given, stored) in exc.differences.items()]
    why = getattr(exc, "why", "")
    return (f"--resume continues the configuration stored in {out}; these options differ "
            f"from it: {', '.join(parts)}" + (f" ({cli_message(why)})" if why else ""))


def _bad_input(exc: ValueError, fields: Mapping[str, str]) -> click.ClickException:
    """A click error for a library ValueError: naming the option it is about."""
    message = cli_message(" ".join(str(exc).split()))
    field = getattr(exc, "field", None)
    if field in fields:
        return click.BadParameter(message, param_hint=f"'{fields[field]}'")
    if field in CONFIG_KEYS and field != "d":
        return click.BadParameter(message, param_hint=f"'{option_name(field)}'")
    return click.UsageError(message)


def _path_error(exc: OutputPathError, paths: Mapping[str, Path]) -> click.BadParameter:
    """``--out``, or the option that gave the refused path."""
    refused = getattr(exc, "path", None)
    hint = next((option for option, p in paths.items()
                 if refused is not None and Path(p) == refused), next(iter(paths)))
    return click.BadParameter(str(exc), param_hint=f"'{hint}'")


def _check_not_inputs(paths: Mapping[str, Path]) -> None:
    """Refuse an output that is a file the command's options name (``--init
    run.h5 --out run.h5 --overwrite`` destroyed the input)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return
    outputs = tuple(option.lstrip("-").replace("-", "_") for option in paths)
    inputs = named_files(ctx, outputs)
    for target in paths.values():
        try:
            check_not_input(target, inputs)
        except OutputPathError as exc:
            raise _path_error(exc, paths) from None


def run_session(
    start: Callable[[Callable[[], bool]], Any],
    *,
    out: Path,
    command: str,
    report: Callable[[Any], list[str]],
    resumable: bool = True,
    report_kept: bool = True,
    unit: str = "frame",
    paths: Mapping[str, Path] | None = None,
    fields: Mapping[str, str] | None = None,
    summary_of: Callable[[Any], Summary] | None = None,
) -> Any:
    """Run one session with clean stops and report it (see the module docstring).

    Parameters
    ----------
    start : callable
        ``start(should_stop)`` runs the session (the library call) and returns
        its result (what the finished file holds, or an object
        ``summary_of`` turns into that).
    out : Path
        The session's file.
    command : str
        The command, for ``continue with: COMMAND --resume --out OUT``.
    report : callable
        ``report(result)``: the lines printed on stdout after the path (also
        ``report(summary)`` of what a stopped session kept, with
        ``report_kept``).
    resumable : bool
        Whether a stopped session can be continued with ``--resume``.
    report_kept : bool
        Also report what a stopped session kept (not only a finished one).
    unit : str
        The file's items, singular, for the line when nothing was kept.
    paths : mapping of str to Path, optional
        Option -> path of every file the session writes (default
        ``{"--out": out}``), to name the option of a bad path.
    fields : mapping of str to str, optional
        Argument -> option of the library call's arguments that are not
        configuration fields (``{"theta0": "--init"}``), to name the option
        of a bad value.
    summary_of : callable, optional
        ``summary_of(result) -> Summary`` (default: the result is one).

    Returns
    -------
    object
        The session's result; the process exits (with the status of the
        table) on any other outcome.
    """
    continues = command if resumable else None
    _check_not_inputs(paths or {"--out": out})
    interrupts.on_forced_stop(interrupts.describe_output(out, command if resumable else None))
    status, summary, done = 0, None, None
    with one_line_warnings(), stop_on_signals() as requested:
        try:
            try:
                summary = done = start(lambda: bool(requested))
            finally:
                requested.running = False  # from here on signals are only recorded
        except KeyboardInterrupt as exc:  # RunInterrupted, or a signal before the session began
            summary = getattr(exc, "summary", None)
            signum = getattr(exc, "signum", None) or (requested[0] if requested else None)
            status = 128 + (signum or signal.SIGINT)
            click.echo("Interrupted: " + kept_line(out, summary, command=continues, unit=unit),
                       err=True)
            interrupts.reported()  # the watchdog, if it must end the process, adds no line
        except OutputWriteError as exc:
            summary, status = exc.summary, 1
            click.echo(f"Error: {' '.join(str(exc).split())}", err=True)
        except RunFailed as exc:
            summary, status = exc.summary, 1
            cause = exc.__cause__ if isinstance(exc.__cause__, IntegrationError) else exc
            why = " ".join(str(cause).split())
            # a failed integration fails again on resuming; lost workers need not
            again = continues if isinstance(cause, WorkersLost) else None
            click.echo(f"Error: {why}; " + kept_line(out, summary, command=again, unit=unit),
                       err=True)
        except OutputPathError as exc:
            raise _path_error(exc, paths or {"--out": out}) from None
        except ResumeMismatch as exc:
            raise click.UsageError(mismatch_line(out, exc)) from None
        except ValueError as exc:  # checked before any work
            raise _bad_input(exc, fields or {}) from None
        if summary is not None and (done is not None or report_kept):
            click.echo(str(out))
            for line in report(summary):
                click.echo(line)
        # the session is reported: from here a signal is held and reported at exit
        # (one between this check and the handler's restoring was lost, issue 38 item 4)
        interrupts.hold()
    if requested and not status:  # a signal after the session returned
        status = 128 + requested[0]
        kept = summary if summary_of is None else summary_of(summary)
        click.echo("Interrupted: " + kept_line(out, kept, command=continues, unit=unit),
                   err=True)
    if status:
        sys.exit(status)
    return done
