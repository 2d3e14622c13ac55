"""The console entry point: it imports nothing before it can catch Ctrl-C, so that an
interrupt while klogtool is still loading ends like any other: one line, exit status 130."""

import sys

INTERRUPTED = "klogtool: interrupted\n"


def main() -> None:
    try:
        from klogtool.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write(INTERRUPTED)
        sys.exit(130)
    run()
