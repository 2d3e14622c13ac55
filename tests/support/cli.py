"""Running klogtool in tests: in-process (:func:`run`) or as a real process
(:func:`run_subprocess`); reading its JSON Lines; ``fixtures/generate.py``'s builders."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from klogtool.cli import run_captured
from support.paths import FIXTURES, LOGS

# docs/output.md: ``klogtool: error: <path>[:<position>]: <what> (<code>)``
ERROR_LINE = r"^klogtool: error: .+ \(.+\)$"


@cache
def default_sigint() -> None:
    """``preexec_fn`` of a child a test sends Ctrl-C: SIGINT at its default, as at an
    interactive prompt. A background job (CI's second run, any `... &`) inherits SIGINT
    ignored, and a child that ignores it never sees the Ctrl-C the test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def generator() -> ModuleType:
    """``fixtures/generate.py`` as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location(
        "klogtool_fixtures_generate", FIXTURES / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses need the module registered
    spec.loader.exec_module(module)
    return module


def run(*args: str, cwd: Path = LOGS) -> tuple[int, str, str]:
    """``klogtool ARGS`` in-process (fast): ``(exit code, stdout, stderr)``."""
    return run_captured(args, cwd)


class OnTerminal(NamedTuple):
    """What :func:`run_on_terminal` gives: the exit status, stdout and stderr as written
    (with their escape sequences), and ``screen``: both as an 80-column terminal shows them
    (see :func:`screen`)."""

    code: int
    stdout: str
    stderr: str
    screen: list[str]


def run_on_terminal(*args: str, cwd: Path = LOGS, columns: int = 80) -> OnTerminal:
    """``klogtool ARGS`` in-process as on a terminal ``columns`` wide (TTY_COMPATIBLE=1: Rich
    draws boxed tables and progress bars), stdout and stderr on the same screen."""
    from klogtool.cli import run_in_process

    env = {"NO_COLOR": "1", "COLUMNS": str(columns), "TTY_COMPATIBLE": "1", "FORCE_COLOR": None}
    # line-buffered as on a terminal (else stdout's buffer would keep its lines apart from
    # stderr's until the end)
    code, out, err, both = run_in_process(args, cwd, env, line_buffered=True)
    return OnTerminal(code, out, err, screen(both))


_CONTROL = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|[\r\n]")


def screen(text: str) -> list[str]:
    """The rows a terminal shows once ``text`` is written to it: a line feed starts a row, a
    carriage return goes back to its start, ESC[nA moves up, ESC[2K erases the row; other
    escape sequences (colours, the cursor shown or hidden) draw nothing. Rows do not wrap,
    so a row longer than the terminal is one that would wrap there."""
    rows = [""]
    row = col = 0
    pos = 0
    for m in [*_CONTROL.finditer(text), None]:
        chunk = text[pos : m.start() if m else len(text)]
        if chunk:
            line = rows[row].ljust(col)
            rows[row] = line[:col] + chunk + line[col + len(chunk) :]
            col += len(chunk)
        if m is None:
            break
        pos = m.end()
        if m.group(0) == "\n":
            row, col = row + 1, 0
            if row == len(rows):
                rows.append("")
        elif m.group(0) == "\r":
            col = 0
        elif m.group(2) == "A":
            row = max(0, row - int(m.group(1) or 1))
        elif m.group(2) == "K" and m.group(1) == "2":
            rows[row] = ""
    while rows and rows[-1] == "":
        rows.pop()
    return rows


def run_subprocess(
    *args: str,
    cwd: Path = LOGS,
    stdin: Any = None,
    module: bool = False,
    stdin_bytes: bytes | None = None,
) -> subprocess.CompletedProcess[str]:
    """``klogtool ARGS`` as a real process (for stdin, pipes, exit paths and memory)."""
    cmd = [sys.executable, "-m", "klogtool", *args]
    env = {**os.environ, "NO_COLOR": "1"}
    if stdin_bytes is not None:
        p = subprocess.run(
            cmd, cwd=cwd, input=stdin_bytes, capture_output=True, env=env, timeout=120
        )
        return subprocess.CompletedProcess(
            p.args, p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode()
        )
    return subprocess.run(
        cmd, cwd=cwd, stdin=stdin, capture_output=True, text=True, env=env, timeout=120
    )


def jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def findings(text: str) -> list[dict[str, Any]]:
    return [o for o in jsonl(text) if o["type"] == "finding"]


def errors(text: str) -> list[dict[str, Any]]:
    return [o for o in findings(text) if o["severity"] == "error"]
