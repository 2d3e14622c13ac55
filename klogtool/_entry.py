"""The console entry point: it imports nothing before it can catch Ctrl-C, so that an
interrupt while klogtool is still loading ends like any other: one line, exit status 130."""

import signal
import sys


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
    except KeyboardInterrupt:
        from klogtool.errors import INTERRUPTED  # only now: nothing loads before the try

        sys.stderr.write(INTERRUPTED)
    sys.exit(code)
