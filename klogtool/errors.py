"""Errors that end a command with a documented exit code (docs/output.md)."""

from __future__ import annotations

from klogtool.codes import Code, Severity, check

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_BAD_INPUT = 3
EXIT_REFUSED = 4
EXIT_INTERNAL = 70  # a bug: an unexpected exception
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

INTERRUPTED = "klogtool: interrupted\n"  # what a Ctrl-C prints, wherever it lands


class KlogtoolError(Exception):
    """Printed as one line: ``klogtool: error: <path>:<position>: <message> (<code>)``."""

    exit_code = EXIT_BAD_INPUT

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        position: int | None = None,
        code: str = Code.BAD_INPUT,
        hint: str | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.path = path
        self.position = position
        self.code = code
        self.hint = hint
        check(code, Severity.FATAL)

    def one_line(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path + (f":{self.position}" if self.position is not None else "") + ": "
        return f"klogtool: error: {where}{self.message} ({self.code})"


class ArgumentError(KlogtoolError):
    """A command line klogtool will not run (exit 2, a usage error), said in one line."""

    exit_code = EXIT_USAGE


class InputError(KlogtoolError):
    """An input cannot be read or is not a Kafka file (exit 3)."""


class RefusedError(KlogtoolError):
    """Refused for safety (exit 4)."""

    exit_code = EXIT_REFUSED


class WorkerDied(KlogtoolError):
    """A worker process died (killed by a signal: the kernel's OOM killer picks the largest
    process, often a worker): exit 3 like any read that failed, naming the part lost."""

    def __init__(self, part: str, path: str | None = None):
        super().__init__(
            f"a worker process died (killed, e.g. by the kernel's OOM killer): {part} was not "
            "read; what came before it was written",
            path=path,
            code=Code.WORKER_DIED,
        )


class StdoutClosed(Exception):
    """The reader of stdout went away (``| head``). Not an OSError, so that Click lets it
    through to ``cli.main``, which exits quietly with status 141 like a SIGPIPE'd tool."""
