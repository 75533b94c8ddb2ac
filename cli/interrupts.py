"""Ctrl-C (SIGINT) and SIGTERM honoured within a second at any moment.

:func:`install` runs first thing in the ``particles`` entry point, before
click, NumPy, Numba or h5py are imported (this module imports only the
standard library):

* SIGINT and SIGTERM raise ``KeyboardInterrupt`` (SIGTERM too, so both stop
  the same clean way); the signal is recorded (:func:`received`).
* A ``KeyboardInterrupt`` that escapes a command (e.g. one raised while the
  library is being imported) is reported by :class:`particles_cli.main.LazyGroup`
  in one line, exit status 128 + signal.
* While Numba compiles, the ``KeyboardInterrupt`` can be raised inside a
  ctypes callback of llvmlite, which swallows it (printing an "Exception
  ignored" traceback) and the compile goes on for tens of seconds.  Those
  tracebacks are silenced (:func:`quiet_unraisable`), and a watchdog thread,
  woken by every signal through :func:`signal.set_wakeup_fd` (whatever
  Python handler is installed at the time), ends the process with
  ``os._exit(128 + signal)`` after one line when the interrupt was lost, or
  when the main thread has not moved since the signal because it is inside
  one long compiled call (:data:`GRACE` seconds), or when the clean
  stop has not ended the process within :data:`CLEAN_STOP` seconds.

Ending the process that way is as safe as a SIGKILL, which the writers are
built for: a trajectory file on disk always holds complete, flushed frames
(marked incomplete until the run ends), and a new run's file takes the
target's name only once its first integrated frame is on disk.  The line
says what the output holds (:func:`describe_output`).
"""

from __future__ import annotations

import atexit
import glob
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

#: seconds after a signal whose ``KeyboardInterrupt`` was swallowed before the process ends.
GRACE = 0.5
#: seconds a clean stop (interrupt delivered) may take before the process is ended anyway.
CLEAN_STOP = 5.0

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_received: list[int] = []
_swallowed: list[bool] = []
_installed: list[bool] = []


def _default_description() -> str:
    return "stopped at once; any output file holds only complete frames written before the stop"


_describe: list[Callable[[], str]] = [_default_description]


def nothing_written() -> str:
    """The description of a stop before the command opened any output."""
    return "stopped before any output was opened; nothing written"


def received() -> int | None:
    """The first SIGINT/SIGTERM received since :func:`install`, or None."""
    return _received[0] if _received else None


def exit_status() -> int:
    """128 + the signal received (SIGINT when none was recorded)."""
    return 128 + (received() or signal.SIGINT)


def exit_now(line: str) -> None:
    """Print ``line`` on stderr and end the process with :func:`exit_status`.

    In the installed entry point the process ends with ``os._exit`` after
    flushing stdout and stderr: an interrupt that passed through C code
    running Python (``PyRun_*``, as some extension modules do while being
    imported) makes the interpreter kill itself with SIGINT at exit, whatever
    the exit status asked for.  Elsewhere (in-process tests) it raises
    ``SystemExit``.
    """
    print(line, file=sys.stderr)
    if not _installed:
        raise SystemExit(exit_status())
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(exit_status())


def on_forced_stop(describe: Callable[[], str]) -> None:
    """Set what the watchdog's line says about the output (called at the stop)."""
    _describe[0] = describe


def describe_output(out: Path, command: str | None = "particles simulate"
                    ) -> Callable[[], str]:
    """A description of ``out`` after a forced stop, from its state now and then.

    Only ``os.stat`` is used (never HDF5, whose lock the stopped thread may
    hold): a target unchanged since this call was not written by the run.
    ``command`` continues the file (``particles sweep``; None: nothing does).
    """
    out = Path(out)
    again = f"; continue with: {command} --resume --out {out}" if command else ""

    def identity() -> tuple[int, int, int] | None:
        try:
            st = out.stat()
        except OSError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns

    before = identity()

    def describe() -> str:
        if identity() == before:
            # a run stopped before its first promotion keeps its frames (frame 0
            # at least) in its temporary file, which --resume adopts
            mine = sorted(out.parent.glob(f".{glob.escape(out.name)}.{os.getpid()}@*.partial"))
            if mine:
                return (
                    f"{out} not written yet (an existing file is unchanged); the frames "
                    f"flushed before the stop are in {mine[0].name}, marked incomplete"
                    + again
                )
            return f"no frame was saved; {out} not written (an existing file is unchanged)"
        return f"{out} holds the frames flushed before the stop, marked incomplete" + again

    return describe


_held: list[int] = []


def _handler(signum: int, frame) -> None:
    _received.append(signum)
    if _holding:
        _held.append(signum)  # the command has finished: nothing left to stop
        return
    raise KeyboardInterrupt


_holding: list[bool] = []


def hold() -> None:
    """From now on a signal is recorded, not raised: the command has finished, and
    an interrupt in the interpreter's exit window would kill the process with no
    line (:func:`held` tells at exit).  Only where :func:`install` ran."""
    if _installed:
        _holding.append(True)


def held() -> int | None:
    """The first signal received since :func:`hold`, or None."""
    return _held[0] if _held else None


_leaving: list[tuple[int, int]] = []


def leaving(status: int) -> None:
    """The process now exits with ``status``, having reported the signals held so far.

    The interpreter's finalisation puts the default action back for every
    signal with a Python handler, and a signal then killed the process with
    no line (5 of 5 in the ~0.2 s after a summary, issue 38 item 4); the
    teardown of the loaded modules takes that long.  So the last exit handler
    (:func:`_last_at_exit`) reports a signal held since this call and ends the
    process there, as :func:`exit_now` does: every other exit handler has run,
    the commands have closed their files, and nothing is left to finish.
    """
    _leaving.append((status, len(_held)))


def _last_at_exit() -> None:
    if not _leaving:  # not the entry point's normal exit
        return
    status, reported = _leaving[0]
    if status == 0 and len(_held) > reported:
        print("Interrupted: after the command had finished (its output is complete)",
              file=sys.stderr)
        status = 128 + _held[reported]
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def quiet_unraisable(previous: Callable) -> Callable:
    """An ``sys.unraisablehook`` that drops swallowed ``KeyboardInterrupt`` (noting it)."""

    def hook(unraisable) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            _swallowed.append(True)
            return
        previous(unraisable)

    return hook


def description() -> str:
    """What the output holds now, from the describer set by :func:`on_forced_stop`."""
    try:
        return _describe[0]()
    except Exception:  # the line must come out whatever happened
        return _default_description()


_reported: list[bool] = []


def reported() -> None:
    """The command has said what its output holds (its own ``Interrupted:`` line):
    a forced stop after this ends the process without a second line."""
    _reported.append(True)


def _end(signum: int) -> None:
    if _reported:
        os._exit(128 + signum)
    line = f"Interrupted: {description()}\n"
    try:
        os.write(2, line.encode(errors="replace"))
    finally:
        os._exit(128 + signum)


def _watch(fd: int) -> None:
    while True:
        try:
            data = os.read(fd, 64)
        except InterruptedError:
            continue
        except OSError:
            return
        signums = [b for b in data if b in _SIGNALS]
        if signums:
            break
    signum, start = signums[0], time.monotonic()
    at_signal = _main_position()
    while True:
        time.sleep(0.05)
        elapsed = time.monotonic() - start
        # the main thread has not moved since the signal: it is inside one long
        # call of compiled code (a step of 1e5 tokens, which releases the GIL),
        # and no Python handler, hence no clean stop, runs until the call returns
        stuck = at_signal is not None and _main_position() == at_signal
        if ((_swallowed or stuck) and elapsed >= GRACE) or elapsed >= CLEAN_STOP:
            _end(signum)


def _main_position() -> tuple | None:
    """The main thread's innermost Python frame and its last instruction."""
    frame = sys._current_frames().get(threading.main_thread().ident)
    return None if frame is None else (frame, frame.f_lasti)


def install() -> bool:
    """Install the handlers, the quiet unraisable hook and the watchdog (main thread only).

    Returns whether they were installed (False outside the main thread, or
    when already installed).
    """
    if _installed or threading.current_thread() is not threading.main_thread():
        return False
    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except ValueError:  # pragma: no cover - not the main thread
        return False
    for sig in _SIGNALS:
        signal.signal(sig, _handler)
    sys.unraisablehook = quiet_unraisable(sys.unraisablehook)
    atexit.register(_last_at_exit)  # the first registered: it runs last
    threading.Thread(target=_watch, args=(read,), daemon=True, name="interrupt-watchdog").start()
    _installed.append(True)
    return True
