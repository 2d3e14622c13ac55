"""What a terminal shows while a progress bar is drawn: the lines printed meanwhile (stdout's
data, warnings) above the bar, never glued to it, and the bar on one line of the terminal's
width."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from support.cli import run_on_terminal
from support.paths import CORRUPT, LOGDIR

BAR = re.compile(r"━|[0-9.]+/[0-9.]+ (?:kB|bytes)|-:--:--|[0-9]:[0-9]{2}:[0-9]{2}")
# what Rich writes to redraw: back to the line's start, erase it, move up, show the cursor
REDRAW = re.compile(r"\r|\n|\x1b\[2K|\x1b\[[0-9]*A")
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def bar_frames(stderr: str) -> list[str]:
    """Every drawing of the bar: the stretches of stderr between Rich's line controls that
    hold a bar, a byte count or a time left."""
    pieces = (ESCAPES.sub("", p) for p in REDRAW.split(stderr))
    return [p for p in pieces if BAR.search(p)]


def test_lines_printed_while_the_bar_is_drawn_go_above_it(tmp_path: Path) -> None:
    """verify printed its findings on stdout while the bar was drawn on stderr: on the screen
    the warning followed the bar on its line ('-:--:--warning: index-missing...') and the
    bar's next drawing wrote over it. Fails before the change."""
    shutil.copytree(CORRUPT / "missing-index-0", tmp_path / "m-0")
    shutil.copytree(LOGDIR / "v2-none-0", tmp_path / "n-0")
    for p in (tmp_path / "n-0").glob("*.index"):
        p.unlink()
    code, _out, err, screen = run_on_terminal("verify", "m-0", "n-0", cwd=tmp_path)
    assert code == 0
    assert bar_frames(err), err  # a bar was drawn
    warnings = [row for row in screen if "warning:" in row]
    assert len(warnings) == 3, screen
    for row in screen:
        assert not (BAR.search(row) and "warning" in row), row
    for row in warnings:
        assert row.startswith("warning: index-missing: "), row
    for frame in bar_frames(err):
        assert len(frame) <= 80 and frame.startswith("verifying "), frame


def test_the_bar_fits_80_columns_on_one_line(tmp_path: Path) -> None:
    """explain's bar ('explaining <partition>: <phase>', the bar, bytes, time left) wrapped its
    unit onto a second line at 80 columns. Fails before the change."""
    name = "orders-with-a-rather-long-topic-name-for-explain-0"
    shutil.copytree(LOGDIR / "v2-none-0", tmp_path / name)
    code, _out, err, _screen = run_on_terminal("explain", name, cwd=tmp_path)
    assert code == 0
    frames = bar_frames(err)
    assert frames, err
    for frame in frames:
        # one line: the description, the byte count with its unit and the time left
        assert len(frame) <= 80, frame
        assert frame.startswith("explaining orders-"), frame
        assert re.search(r"kB -:--:--$|kB [0-9]:[0-9]{2}:[0-9]{2}$", frame), frame
