"""Everything klogtool writes: data on stdout, diagnostics and progress on stderr.

Machine formats (jsonl, json, kafka) are written with plain ``write`` calls: never wrapped,
coloured or marked up. Rich is used for human tables and progress bars only, on a terminal.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

FORMATS = ("text", "jsonl", "json")


class StdoutClosed(Exception):
    """The reader of stdout went away (``| head``). Not an OSError, so that Click lets it
    through to ``cli.main``, which exits quietly with status 141 like a SIGPIPE'd tool."""


def _json_default(obj: object) -> object:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(obj)).decode("ascii")
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def to_json(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=_json_default)


class Output:
    """One command run's writer. ``emit`` takes the DESIGN.md §4 objects."""

    def __init__(
        self,
        fmt: str = "text",
        *,
        progress: bool = True,
        color: bool | None = None,
        verbosity: int = 0,
        stdout: TextIO | None = None,
    ):
        self.fmt = fmt
        self.out: TextIO = stdout or sys.stdout
        self.verbosity = verbosity
        no_color = color is False or (color is None and "NO_COLOR" in os.environ)
        self.err = Console(
            stderr=True,
            markup=False,
            highlight=False,
            no_color=no_color,
            force_terminal=True if color else None,
        )
        self.data = Console(
            file=self.out,
            markup=False,
            highlight=False,
            no_color=no_color,
            soft_wrap=True,
            force_terminal=True if color else None,
        )
        self.show_progress = progress and self.err.is_terminal
        self._json_count = 0

    # -- data ---------------------------------------------------------------------------------
    def _write(self, text: str) -> None:
        try:
            self.out.write(text)
        except BrokenPipeError:
            raise StdoutClosed() from None

    def emit(self, obj: dict[str, Any]) -> None:
        if self.fmt == "jsonl":
            self._write(to_json(obj) + "\n")
        elif self.fmt == "json":
            self._write(("[\n" if self._json_count == 0 else ",\n") + to_json(obj))
            self._json_count += 1
        else:
            self._write(render_text(obj) + "\n")

    def line(self, text: str) -> None:
        self._write(text + "\n")

    def close(self) -> None:
        if self.fmt == "json":
            self._write("[]\n" if self._json_count == 0 else "\n]\n")
        try:
            self.out.flush()
        except BrokenPipeError:
            raise StdoutClosed() from None

    def table(self, title: str, columns: list[str], rows: list[list[str]]) -> None:
        """A human table: on stdout in text mode (it is the data), else not at all."""
        if self.fmt != "text":
            return
        t = Table(title=title, title_justify="left")
        for i, c in enumerate(columns):
            t.add_column(c, justify="left" if i == 0 else "right")
        for r in rows:
            t.add_row(*r)
        self.data.print(t)

    # -- diagnostics ------------------------------------------------------------------------
    def warn(self, message: str) -> None:
        if self.verbosity >= 0:
            self.err.print(f"klogtool: warning: {message}", style="yellow")

    def info(self, message: str) -> None:
        if self.verbosity >= 1:
            self.err.print(f"klogtool: {message}", style="dim")

    def stderr_line(self, message: str) -> None:
        """Plain stderr text that is part of a format's contract (kafka-dump-log's blocks)."""
        self.out.flush()
        sys.stderr.write(message + "\n")

    @contextmanager
    def progress(self, total: int, description: str) -> Iterator[Any]:
        """A byte-based progress bar on a terminal; a no-op advance function otherwise."""
        if not self.show_progress:
            yield lambda n: None
            return
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            console=self.err,
            transient=True,
        )
        with bar:
            task = bar.add_task(description, total=total)
            yield lambda n: bar.advance(task, n)


_INDENTED = {
    "record",
    "index_entry",
    "timeindex_entry",
    "txn_entry",
    "producer_entry",
    "checkpoint_entry",
    "epoch_entry",
    "partition_metadata",
    "meta_properties",
    "quorum_state",
    "clean_shutdown",
    "sanity_check",
}
# C0 controls and DEL would drive the terminal: show them escaped (\x1b, \x00, ...).
_CONTROL_ESCAPES = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F] if c not in (0x09,)}


def render_text(obj: dict[str, Any]) -> str:
    """The human line for one object: its type, then ``name: value`` pairs."""
    kind = obj.get("type", "")
    parts = []
    for k, v in obj.items():
        if k == "type" or v is None:
            continue
        if isinstance(v, (dict, list)):
            v = to_json(v)  # type: ignore[arg-type]
        elif isinstance(v, bool):
            v = "true" if v else "false"
        parts.append(f"{k}: {v}")
    indent = "  " if kind in _INDENTED else ""
    line = f"{indent}{kind} " + " ".join(parts) if parts else kind
    return line.translate(_CONTROL_ESCAPES)
