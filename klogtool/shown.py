"""Paths shown as the user gave them (docs/output.md: "Paths").

The library works on absolute paths (``os.path.abspath`` of each PATH: the log dir and its
lock are the ones the user's path names), and those reached every line and object that names
a file: ``klogtool rebuild-index ri/first-0`` printed ``/tmp/t/ri/first-0/…``. Each PATH
argument is registered here when the command line is parsed (with the directories above it
that output names: a segment's partition and log dir, a partition's log dir, a quarantine
run's partition and log dir), and :func:`shown` writes every absolute path under one of them
the way the user wrote it: a relative PATH stays relative, an absolute one absolute.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_pairs: dict[str, str] = {}  # absolute directory or file -> as the user wrote it
_pattern: re.Pattern[str] | None = None


def reset() -> None:
    """Forget every PATH (a new command line)."""
    global _pattern
    _pairs.clear()
    _pattern = None


def _add(absolute: str, display: str) -> None:
    global _pattern
    if absolute != display and absolute not in _pairs:
        _pairs[absolute] = display
        alternatives = "|".join(re.escape(a) for a in sorted(_pairs, key=len, reverse=True))
        # a whole path or its leading directories: not inside a longer name or path
        _pattern = re.compile(rf"(?<![\w./-])({alternatives})(?=[/\s:,;'\")\]]|$)")


def _levels(path: Path) -> int:
    """How many directories above ``path`` output names: a segment file's partition and
    log dir, a partition dir's log dir, a quarantine run's partition and log dir."""
    if path.is_file():
        return 2
    if (path / "manifest.json").is_file():
        return 3
    name = path.name
    if re.fullmatch(r".+-[0-9]+", name) or any(path.glob("*.log")):
        return 1
    return 0


def register(args: Iterable[str | os.PathLike[str]]) -> None:
    """Remember the PATHs of a command line (relative ones: an absolute PATH is shown as it
    is anyway)."""
    for arg in args:
        text = os.fspath(arg)
        if not text or text == "-" or os.path.isabs(text) or "://" in text:
            continue
        display = text.rstrip("/") or text
        absolute = os.path.abspath(text)
        _add(absolute, display)
        parents = list(Path(display).parents)
        above = absolute
        for k in range(1, _levels(Path(text)) + 1):
            above = os.path.dirname(above)
            if k - 1 < len(parents):
                _add(above, str(parents[k - 1]))
            else:
                _add(above, os.path.join(*[".."] * (k - len(parents))))


def click_callback(ctx: Any, param: Any, value: Any) -> Any:
    """A Click callback for PATH arguments: registers them, returns them unchanged."""
    if value is not None:
        register([value] if isinstance(value, str | os.PathLike) else value)
    return value


def _as_given(m: re.Match[str]) -> str:
    return _pairs[m.group(1)]


def shown(text: str) -> str:
    """``text`` with every absolute path under a relative PATH written as the user did."""
    if _pattern is None or not any(a in text for a in _pairs):
        return text
    return _pattern.sub(_as_given, text)


# C0 controls, DEL and C1 controls (U+009B is a CSI on some terminals) would drive the
# terminal, and CR or LF would forge a line: show them escaped (\x1b, \x00, \u009b, ...).
TERMINAL_ESCAPES = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F] if c not in (0x09,)} | {
    c: f"\\u{c:04x}" for c in range(0x80, 0xA0)
}


def escaped(text: str) -> str:
    """One line of text for a person, its control characters shown escaped: the one rule for
    every name klogtool shows (a directory or object key holding ESC, CR or LF, a payload):
    text lines, table cells, warnings and error lines."""
    return text.translate(TERMINAL_ESCAPES)
