"""The console entry point: it imports nothing before it can catch Ctrl-C, so that an
interrupt while klogtool is still loading ends like any other: one line, exit status 130."""

import signal
import sys


def by_interrupt(e: BaseException) -> bool:
    """Whether `e` came of a Ctrl-C: Python 3.11 wraps a KeyboardInterrupt raised while a class
    is made (`__set_name__`, a lazily imported module) in a RuntimeError, and an error raised
    while the interrupt unwinds carries it as its context."""
    seen: set[int] = set()
    at: BaseException | None = e
    while at is not None and id(at) not in seen:
        if isinstance(at, KeyboardInterrupt):
            return True
        seen.add(id(at))
        at = at.__cause__ or at.__context__
    return False


def main() -> None:
    code: str | int | None = 130
    try:
        try:
            from klogtool.cli import main as run

            run()
        finally:
            # The command has ended and said how: a Ctrl-C from here on would only kill the
            # exit itself, by the signal and with no word.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    except SystemExit as e:
        code = e.code
    except Exception as e:
        if not by_interrupt(e):
            raise
        say_interrupted()
    except KeyboardInterrupt:
        say_interrupted()
    sys.exit(code)


def say_interrupted() -> None:
    """The one line a Ctrl-C ends with (none where stderr is closed)."""
    from klogtool.errors import INTERRUPTED  # only now: nothing loads before main's try

    try:
        sys.stderr.write(INTERRUPTED)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
