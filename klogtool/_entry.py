"""The console entry point: it imports nothing before it can catch Ctrl-C, so that an
interrupt while klogtool is still loading ends like any other: one line, exit status 130."""

import os
import signal
import sys

from klogtool.interrupted import by_interrupt, say_interrupted

GRACE = 2.0  # seconds a Ctrl-C gives a command reading object storage to end by itself


def _watch_interrupts() -> None:
    """End the process GRACE seconds after a Ctrl-C if it has not ended and has read or
    written object storage: a request the server stalls holds its thread (and the exit,
    which waits for it) until it times out, and no Python code runs there to be
    interrupted. The C-level handler writes the signal to the wakeup fd at once, wherever
    the main thread is blocked. Local commands are never cut short (a writing command
    defers Ctrl-C around its renames)."""
    import threading

    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except ValueError:  # not the main thread
        return

    def watch() -> None:
        import time

        while signal.SIGINT not in os.read(read, 64):
            pass
        time.sleep(GRACE)
        if _storage_in_use():
            say_interrupted()
            os._exit(130)

    threading.Thread(target=watch, name="klogtool-interrupt", daemon=True).start()


def main() -> None:
    code: str | int | None = 130
    try:
        _watch_interrupts()
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
    if code == 130 and _storage_in_use():
        # a stalled request still holds a thread, and the exit would wait for it (pyarrow's
        # S3 finalizer, the SDK's threads): nothing is left to do, so do not wait
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(130)
    sys.exit(code)


def _storage_in_use() -> bool:
    storage = sys.modules.get("klogtool.log.storage")
    return storage is not None and bool(storage.in_use())
