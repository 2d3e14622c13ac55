"""Everything klogtool writes: data on stdout, diagnostics and progress on stderr.

Machine formats (jsonl, json, kafka) are written with plain ``write`` calls: never wrapped,
coloured or marked up. Rich is used for human tables and progress bars only, on a terminal.
"""

from __future__ import annotations

import base64
import codecs
import json
import math
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, TextIO

from klogtool.codes import STRICT
from klogtool.errors import StdoutClosed
from klogtool.log.labels import shorten_middle
from klogtool.shown import TERMINAL_ESCAPES, escaped, shown

if TYPE_CHECKING:
    from rich.console import Console

    from klogtool import events

FORMATS = ("text", "jsonl", "json")


def format_ts(ms: int | None, *, millis: bool = False) -> str:
    """``1700000000000 (2023-11-14T22:13:20Z)``: epoch milliseconds and UTC ISO-8601 (with
    ``millis``: ``...20.000Z``); a negative or missing timestamp as it is."""
    if ms is None or ms < 0:
        return str(ms)
    try:
        dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    frac = f".{ms % 1000:03d}" if millis else ""
    return f"{ms} ({dt.strftime('%Y-%m-%dT%H:%M:%S')}{frac}Z)"


def _maybe_terminal(stream: TextIO, color: bool | None) -> bool:
    """False where Rich would certainly not see a terminal (no tty, nothing forcing one), so
    that a run with nothing to draw never loads Rich (start-up time)."""
    env = os.environ
    if color or "FORCE_COLOR" in env or env.get("TTY_COMPATIBLE") == "1":
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


_BAR_MIN = 10  # the narrowest a progress bar is drawn


def plural(n: int, noun: str) -> str:
    """``1 segment``, ``3 segments``, ``1,024 snapshots``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def offsets_text(offsets: Sequence[int], noun: str, *, head: int = 3, tail: int = 2) -> str:
    """A list of offsets for people: how many, then all of them, or the first ``head`` and
    the last ``tail`` of a long list: ``39 snapshots: 0, 100, 200 ... 3,800, 3,900``."""
    shown = [f"{o:,}" for o in offsets]
    if len(shown) > head + tail + 1:
        shown = [*shown[:head], "...", *shown[-tail:]]
    listed = ", ".join(shown).replace(", ...,", " ...")
    return plural(len(offsets), noun) + (f": {listed}" if offsets else "")


def groups_text(groups: Sequence[Sequence[int]], *, head: int = 3, tail: int = 1) -> str:
    """Groups of segments (their base offsets) for people: ``3 groups: 0..644 (3 segments),
    1,000 (1 segment), 2,000..2,400 (2 segments)``; of a long list, the first ``head`` and
    the last ``tail`` groups. ASCII only (``...``, not an ellipsis): a pipe's encoding may
    have no ellipsis."""
    shown = [
        (f"{g[0]:,}" if len(g) == 1 else f"{g[0]:,}..{g[-1]:,}") + f" ({plural(len(g), 'segment')})"
        for g in groups
        if g
    ]
    if len(shown) > head + tail + 1:
        shown = [*shown[:head], "...", *shown[-tail:]]
    listed = ", ".join(shown).replace(", ...,", " ...")
    return plural(len(groups), "group") + (f": {listed}" if shown else "")


def label(key: str) -> str:
    """A JSON key as a text label: ``segments_unchanged`` -> ``segments unchanged``."""
    return key.replace("_", " ")


def _json_default(obj: object) -> object:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(obj)).decode("ascii")
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


# One encoder for the run: json.dumps with these arguments would build a new one per object.
# allow_nan=False: a bare NaN or Infinity token is not JSON (jq, Go, Jackson reject the line)
_JSON = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, default=_json_default, allow_nan=False
)


def _finite(v: Any) -> Any:
    """``v`` with every non-finite float as the string Protobuf's JSON mapping writes."""
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_finite(x) for x in v]
    return v


def to_json(obj: events.Event | dict[str, Any]) -> str:
    """One RFC 8259 JSON text (docs/output.md: non-finite numbers)."""
    try:
        return _JSON.encode(obj)
    except ValueError:  # a non-finite float somewhere: rare, so walked only then
        return _JSON.encode(_finite(obj))


def _write_through(stream: TextIO, on: bool) -> bool:
    """Set ``stream``'s write_through (a TextIOWrapper's); whether it could be."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is None:
        return False
    try:
        reconfigure(write_through=on)
    except (AttributeError, TypeError, ValueError, OSError):
        return False
    return True


def _is_utf8(encoding: str | None) -> bool:
    try:
        return encoding is not None and codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


class Output:
    """One command run's writer. ``emit`` takes the docs/output.md objects."""

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
        self._color = color
        # lines written as they are (a format whose contract is the bytes: kafka-dump-log's
        # in a pipe); else every line goes through escaped()
        self.raw_lines = False
        self._progress = progress
        self._json_count = 0
        self._live: Any = None  # the progress display being drawn on stderr, if any
        self._pending = ""  # stdout text after the last line feed, while it is routed
        # write_lines has made the text layer hand every write to the bytes' buffer at once
        # (write_through), so that lines written as bytes need no flush (a syscall) before them
        self._text_through = False

    # Rich consoles are made when first needed: a run that draws nothing does not load Rich.
    def _console(self, **kw: Any) -> Console:
        from rich.console import Console

        color = self._color
        return Console(
            markup=False,
            highlight=False,
            no_color=color is False or (color is None and "NO_COLOR" in os.environ),
            force_terminal=True if color else None,
            soft_wrap=True,  # one message, one line: a log file or a pipe gets no wrapping
            **kw,
        )

    @cached_property
    def err(self) -> Console:
        """Diagnostics and progress (stderr)."""
        return self._console(stderr=True)

    @cached_property
    def data(self) -> Console:
        """Tables (stdout)."""
        console = self._console(file=self.out)
        if not console.is_terminal:
            console.width = 10_000  # a file or a pipe has no screen to fit: never wrap a table
        return console

    @cached_property
    def data_is_terminal(self) -> bool:
        return _maybe_terminal(self.out, self._color) and self.data.is_terminal

    @cached_property
    def show_progress(self) -> bool:
        """Progress bars and spinners: on a terminal, unless --no-progress."""
        return self._progress and _maybe_terminal(sys.stderr, self._color) and self.err.is_terminal

    # -- data ---------------------------------------------------------------------------------
    def _write(self, text: str) -> None:
        text = shown(text)  # paths as the user gave them
        if self._live is not None and self._on_the_bars_screen:
            self._through_the_bar(text)
            return
        try:
            self.out.write(text)
        except BrokenPipeError:
            raise StdoutClosed() from None

    @cached_property
    def _on_the_bars_screen(self) -> bool:
        """Whether stdout shows on the terminal the progress bar is drawn on (stderr's): then
        a line written to it beside Rich's would be glued to the bar, or overwritten."""
        if not self.data_is_terminal:
            return False
        try:
            a, b = os.fstat(self.out.fileno()), os.fstat(sys.stderr.fileno())
        except (AttributeError, OSError, ValueError):
            return True  # a terminal forced (TTY_COMPATIBLE, --color): one screen
        return (a.st_dev, a.st_ino, a.st_rdev) == (b.st_dev, b.st_ino, b.st_rdev)

    def _through_the_bar(self, text: str) -> None:
        """Whole lines of stdout text printed by the bar's console, which clears the bar,
        prints them, and draws the bar again below them (the rest waits for its line feed)."""
        from rich.text import Text

        head, newline, self._pending = (self._pending + text).rpartition("\n")
        if newline:
            self.err.print(Text(head), soft_wrap=True)

    def _flush(self) -> None:
        try:
            self.out.flush()
        except BrokenPipeError:
            raise StdoutClosed() from None

    def _end_live(self) -> None:
        self._live = None
        if self._pending:
            pending, self._pending = self._pending, ""
            self._write(pending)

    def emit(self, obj: events.Event) -> None:
        if self.fmt == "json":
            if STRICT:  # the test suite: every object against its registered type
                _check_event(obj)
            self._write(("[\n" if self._json_count == 0 else ",\n") + to_json(obj))
            self._json_count += 1
        else:
            self._write(object_line(self.fmt, obj))

    def write_lines(self, data: Any) -> None:
        """Lines already rendered in this output's format (jsonl or text), as UTF-8 bytes (any
        object with the buffer protocol): written as they are to a UTF-8 stream's bytes,
        else decoded."""
        assert self.fmt in ("jsonl", "text")
        binary = getattr(self.out, "buffer", None)
        if binary is None or not self._takes_utf8_bytes():
            self._write(str(data, "utf-8"))
            return
        try:
            if not self._text_through:
                self.out.flush()  # what the text layer holds goes first
                self._text_through = _write_through(self.out, True)
            binary.write(data)
        except BrokenPipeError:
            raise StdoutClosed() from None

    def _takes_utf8_bytes(self) -> bool:
        """Whether lines rendered as UTF-8 may go to the stream's bytes as they are: a UTF-8
        stream, with no bar drawn on its screen."""
        on_the_bar = self._live is not None and self._on_the_bars_screen
        return _is_utf8(getattr(self.out, "encoding", None)) and not on_the_bar

    def descriptor(self) -> int | None:
        """The file descriptor of the data stream, once what was written is flushed, when
        other processes may write lines of this output (jsonl or text, UTF-8) to it directly;
        else None (another format or encoding, a stream without one, a bar on its screen)."""
        if self.fmt not in ("jsonl", "text") or not self._takes_utf8_bytes():
            return None
        try:
            fd = self.out.fileno()
        except (AttributeError, OSError, ValueError):
            return None
        self._flush()
        return fd

    def line(self, text: str) -> None:
        """One line of text, :func:`escaped` (unless ``raw_lines``)."""
        self._write((text if self.raw_lines else escaped(text)) + "\n")

    def close(self) -> None:
        if self.fmt == "json":
            self._write("[]\n" if self._json_count == 0 else "\n]\n")
        try:
            self.out.flush()
            if self._text_through:  # the stream as it was given
                self._text_through = not _write_through(self.out, False)
        except BrokenPipeError:
            raise StdoutClosed() from None

    def table(
        self,
        title: str,
        columns: list[str],
        rows: list[list[str]],
        left: frozenset[str] = frozenset(),
        lesser: tuple[str, ...] = (),
    ) -> None:
        """A human table: on stdout in text mode (it is the data), else not at all. The first
        column and those named in ``left`` are left-aligned, the others right-aligned.

        On a terminal the table fits its width (see :func:`fit_columns`): nothing is cut,
        text wraps, and the columns named in ``lesser`` (least useful first) are left out,
        and named under the table, where the others would not fit whole words otherwise."""
        if self.fmt != "text":
            return
        # paths as the user gave them (a table on a terminal is not written through _write)
        rows = [[escaped(shown(c)) if isinstance(c, str) else c for c in r] for r in rows]
        title = escaped(title)
        # Box drawing on a terminal; plain aligned columns for a file or a pipe.
        if self.data_is_terminal:
            self._terminal_table(title, columns, rows, left, lesser)
            return
        if _plain(title, columns, rows):
            self._write(plain_table(title, columns, rows, left))
            return
        from rich.table import Table  # loaded when a table is drawn (start-up time)

        t = Table(title=title, title_justify="left", box=None, show_edge=False, pad_edge=False)
        for i, c in enumerate(columns):
            right = not (i == 0 or c in left)
            # numbers are never cut or wrapped: the text columns give way instead
            width = max([len(c)] + [len(r[i]) for r in rows if i < len(r)]) if right else None
            t.add_column(c, justify="right" if right else "left", no_wrap=right, min_width=width)
        for r in rows:
            t.add_row(*r)
        with self.data.capture() as captured:
            self.data.print(t)
        self._write(strip_line_ends(captured.get()))

    def _terminal_table(
        self,
        title: str,
        columns: list[str],
        rows: list[list[str]],
        left: frozenset[str],
        lesser: tuple[str, ...],
    ) -> None:
        from rich import box as rich_box  # loaded when a table is drawn (start-up time)
        from rich.table import Table

        n = len(columns)
        cells = [[*r[:n], *[""] * (n - len(r))] for r in rows]
        texts = [i == 0 or c in left for i, c in enumerate(columns)]
        width = self.data.width
        shown, widths = fit_columns(columns, cells, texts, width, lesser)
        t = Table(title=title, title_justify="left", box=rich_box.HEAVY_HEAD)
        for i, w in zip(shown, widths, strict=True):
            # numbers are never cut or wrapped; text wraps, and a word too long for its
            # column (a path) is folded onto the next line, never cut to an ellipsis
            t.add_column(
                columns[i],
                justify="left" if texts[i] else "right",
                no_wrap=not texts[i],
                overflow="fold",
                width=w,
            )
        for r in cells:
            t.add_row(*(r[i] for i in shown))
        # while a bar is drawn on the same screen, through its console (see _through_the_bar)
        console = self.err if self._live is not None and self._on_the_bars_screen else self.data
        console.print(t)
        # a column without a header (stats' bar charts) is named for what it shows
        dropped = [c or "chart" for i, c in enumerate(columns) if i not in shown]
        if dropped:
            console.print(f"(not shown at {width} columns: {', '.join(dropped)})", style="dim")

    # -- diagnostics ------------------------------------------------------------------------
    def warn(self, message: str) -> None:
        if self.verbosity >= 0:
            self.err.print(escaped(shown(f"klogtool: warning: {message}")), style="yellow")

    def note(self, message: str) -> None:
        """What the user should hear though nothing is wrong (no record matched): shown but
        with -q."""
        if self.verbosity >= 0:
            self.err.print(escaped(shown(f"klogtool: {message}")))

    def info(self, message: str) -> None:
        if self.verbosity >= 1:
            self.err.print(escaped(shown(f"klogtool: {message}")), style="dim")

    def stderr_line(self, message: str) -> None:
        """Plain stderr text that is part of a format's contract (kafka-dump-log's blocks,
        which name files absolute as it does: written as it is); while a bar is drawn, through
        its console (which draws the bar again below it)."""
        self._flush()
        if not self.raw_lines:
            message = escaped(message)
        if self._live is not None:
            from rich.text import Text

            self.err.print(Text(message), soft_wrap=True)
            return
        sys.stderr.write(message + "\n")

    @contextmanager
    def status(self, message: str) -> Iterator[None]:
        """A spinner with ``message`` on a terminal while a step with no byte count runs."""
        if not self.show_progress:
            yield
            return
        with self._drawing(message), self.err.status(message):
            yield

    def _bar(self, *, records: bool = False) -> Any:
        """A transient Rich progress display on stderr (byte counts, time left), one line per
        task that fits the terminal: the bar takes the room the other columns leave, and a
        description too long is shortened in its middle."""
        from rich.progress import (  # loaded when a bar is shown (start-up time)
            BarColumn,
            DownloadColumn,
            Progress,
            ProgressColumn,
            TimeRemainingColumn,
        )
        from rich.table import Column
        from rich.text import Text

        class RecordsColumn(ProgressColumn):
            def render(self, task: Any) -> Text:
                n = task.fields.get("records", 0)
                elapsed = task.elapsed or 0.0
                rate = n / elapsed if elapsed > 0 else 0.0
                return Text(f"{n:,} records, {rate:,.0f}/s")

        # the room the other columns take at most (sizes like "999.9/999.9 MB", a time left
        # like "10:00:00", records like "1,234,567,890 records, 12,345,678/s"), one blank
        # between columns, and at least 10 cells of bar
        others = _BAR_MIN + 14 + 8 + 3 + (36 + 1 if records else 0)
        limit = max(12, self.err.width - others)

        class DescriptionColumn(ProgressColumn):
            def render(self, task: Any) -> Text:
                return Text(shorten_middle(task.description, limit))

        columns: list[Any] = [
            DescriptionColumn(table_column=Column(no_wrap=True)),
            BarColumn(bar_width=None, table_column=Column(ratio=1, min_width=_BAR_MIN)),
            DownloadColumn(table_column=Column(no_wrap=True, justify="right")),
            TimeRemainingColumn(table_column=Column(no_wrap=True)),
        ]
        if records:
            columns.append(RecordsColumn(table_column=Column(no_wrap=True)))
        return Progress(*columns, console=self.err, transient=True, expand=True)

    @contextmanager
    def _drawing(self, live: Any) -> Iterator[None]:
        """While ``live`` (a bar or a spinner) is drawn: stdout's lines go above it."""
        self._flush()  # what stdout holds is shown before the bar
        self._live = live
        try:
            yield
        finally:
            self._end_live()

    @contextmanager
    def progress(self, total: int, description: str, *, records: bool = False) -> Iterator[Bar]:
        """A byte-based progress bar on a terminal, a :class:`Bar` that shows nothing
        otherwise: the progress listener of a read (``klogtool.log.context.Progress``).

        With ``records``, the bar also shows the records read and the records per second."""
        if not self.show_progress or total <= 0:
            yield Bar()
            return
        bar = self._bar(records=records)
        with self._drawing(bar), bar:
            yield Bar(bar, bar.add_task(description, total=total, records=0))

    @contextmanager
    def phases(self, prefix: str = "") -> Iterator[Bar]:
        """Byte-based bars for work done in phases (reading, then building a map, then
        cleaning...): one bar at a time, ``prefix: phase``, for the phase being reported. A
        :class:`Bar` that shows nothing off a terminal."""
        if not self.show_progress:
            yield Bar()
            return
        bar = self._bar()
        with self._drawing(bar), bar:
            yield Bar(bar, prefix=prefix)


def object_line(fmt: str, obj: events.Event) -> str:
    """``obj`` as one line of ``jsonl`` or ``text`` (before :func:`shown`)."""
    if STRICT:  # the test suite: every object against its registered type
        _check_event(obj)
    return (to_json(obj) if fmt == "jsonl" else render_text(obj)) + "\n"


def object_bytes(fmt: str, obj: events.Event) -> bytes:
    """``obj`` as :meth:`Output.emit` writes it in ``jsonl`` or ``text``, as UTF-8: what a
    worker process writes, for this process to copy out as it is."""
    return shown(object_line(fmt, obj)).encode("utf-8", "surrogateescape")


class Bar:
    """What a read reports its progress to (``klogtool.log.context.Progress``): a Rich task
    for the whole read (:meth:`advance`) or one for the current phase (:meth:`phase`); without
    a Rich display, nothing."""

    def __init__(self, rich: Any = None, task: Any = None, *, prefix: str = "") -> None:
        self.rich = rich
        self.task = task
        self.prefix = prefix
        self.records = 0
        self.current: tuple[str, Any] | None = None  # the phase shown: (name, its task)

    def advance(self, walked: int, records: int = 0) -> None:
        if self.task is not None:
            self.records += records
            self.rich.update(self.task, advance=walked, records=self.records)

    def phase(self, name: str, walked: int, total: int) -> None:
        if self.rich is None:
            return
        if self.current is None or self.current[0] != name:
            if self.current is not None:  # the last phase is over (or failed): its bar goes
                self.rich.remove_task(self.current[1])
            label = f"{self.prefix}: {name}" if self.prefix else name
            self.current = (name, self.rich.add_task(label, total=total))
        self.rich.advance(self.current[1], walked)


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


def _plain(*texts: Any) -> bool:
    """Whether text is printable ASCII on one line, where :func:`plain_table` lays a table out
    as Rich does (wider characters and line breaks are left to Rich)."""
    stack = list(texts)
    while stack:
        t = stack.pop()
        if isinstance(t, str):
            if not (t.isascii() and t.isprintable()):
                return False
        else:
            stack.extend(t)
    return True


def plain_table(
    title: str, columns: list[str], rows: list[list[str]], left: frozenset[str] = frozenset()
) -> str:
    """A table for a file or a pipe, as Rich prints it without a box (a test holds the two
    equal): the title, then columns two spaces apart, the first column and those in ``left``
    left-aligned, the others right-aligned (trailing blanks dropped first); a missing cell is
    empty. No line ends in blanks (nor does Rich's once :func:`strip_line_ends` has run): a
    short last cell padded to the widest would wrap every row in an 80-column viewer. Unlike
    Rich it leaves ``:name:`` alone (Rich would draw an emoji in a path). Drawing it without
    Rich keeps Rich out of a run that prints nothing else (start-up time)."""
    n = len(columns)
    cells = [columns, *([*r[:n], *[""] * (n - len(r))] for r in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(n)]
    lefts = [i == 0 or c in left for i, c in enumerate(columns)]
    lines = [title] if title else []
    for row in cells:
        lines.append(
            "  ".join(
                c.ljust(w) if is_left else c.rstrip().rjust(w)
                for c, w, is_left in zip(row, widths, lefts, strict=True)
            )
        )
    return strip_line_ends("\n".join(lines) + "\n")


def strip_line_ends(text: str) -> str:
    """``text`` without the blanks that end its lines (Rich pads every row of a table)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return "".join(line.rstrip(" ") + "\n" for line in lines)


# A boxed table's columns: a border and a blank each side of each column, one border more.
_BOX_OVERHEAD = 3
# The narrowest a text column gets before columns are left out (the first column, the
# partition or path that names the row, gets more).
_FOLD_FLOOR, _FIRST_FOLD_FLOOR = 8, 12


def fit_columns(
    columns: list[str],
    rows: list[list[str]],
    texts: list[bool],
    width: int,
    lesser: tuple[str, ...] = (),
) -> tuple[list[int], list[int]]:
    """How a boxed table fits ``width`` terminal columns: the columns shown (indexes, in
    order) and each one's width. Number columns (not ``texts``) keep their full width; text
    columns give way, widest first (they wrap). In order, until the table fits: text columns
    narrowed down to their longest word (the first, identifying, column to 20), then the
    ``lesser`` columns left out one by one; then text columns narrowed further, folding
    words (to 8, the first column to 12), with every column and then leaving out the
    ``lesser`` ones; last, columns left out from the right. The first column is never left
    out nor cut: a name longer than its column folds onto further lines."""
    from rich.cells import cell_len

    def measure(text: str) -> int:
        return max((cell_len(line) for line in text.split("\n")), default=0)

    def longest_word(text: str) -> int:
        return max((cell_len(w) for w in text.split()), default=0)

    n = len(columns)
    natural = [max([measure(columns[i])] + [measure(r[i]) for r in rows]) for i in range(n)]
    words = [max([longest_word(columns[i])] + [longest_word(r[i]) for r in rows]) for i in range(n)]
    soft = [min(natural[i], 20 if i == 0 else words[i]) for i in range(n)]
    hard = [min(natural[i], _FIRST_FOLD_FLOOR if i == 0 else _FOLD_FLOOR) for i in range(n)]
    soft = [max(s, h) for s, h in zip(soft, hard, strict=True)]

    def fill(shown: list[int], floors: list[int]) -> list[int] | None:
        room = width - _BOX_OVERHEAD * len(shown) - 1
        fixed = sum(natural[i] for i in shown if not texts[i])
        flexible = [i for i in shown if texts[i]]
        if fixed + sum(floors[i] for i in flexible) > room:
            return None
        # the widest level every text column may take: columns narrower keep their width
        low, high = 0, max([natural[i] for i in flexible], default=0)
        while low < high:
            level = (low + high + 1) // 2
            used = sum(max(floors[i], min(natural[i], level)) for i in flexible)
            if fixed + used <= room:
                low = level
            else:
                high = level - 1
        return [max(floors[i], min(natural[i], low)) if texts[i] else natural[i] for i in shown]

    droppable = [columns.index(c) for c in lesser if c in columns[1:]]
    for floors in (soft, hard):
        shown = list(range(n))
        for drop in [None, *droppable]:
            if drop is not None:
                shown.remove(drop)
            widths = fill(shown, floors)
            if widths is not None:
                return shown, widths
    shown = [i for i in range(n) if i not in droppable]
    while len(shown) > 1:
        shown.pop()
        widths = fill(shown, hard)
        if widths is not None:
            return shown, widths
    return [0], [max(1, width - _BOX_OVERHEAD - 1)]


def render_text(obj: Mapping[str, Any]) -> str:
    """The human line for one object (docs/output.md objects, compactly)."""
    kind = obj.get("type", "")
    special = _TEXT_RENDERERS.get(kind)
    line = special(obj) if special is not None else _generic_text(obj)
    return line.translate(TERMINAL_ESCAPES)


def _generic_text(obj: Mapping[str, Any]) -> str:
    kind = obj.get("type", "")
    parts = []
    for k, v in obj.items():
        if k == "type" or v is None:
            continue
        parts.append(f"{k}: {_scalar(v)}")
    indent = "  " if kind in _INDENTED else ""
    return f"{indent}{kind} " + " ".join(parts) if parts else kind


def _scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, (dict, list)):
        return to_json(v)  # type: ignore[arg-type]
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _file_text(o: Mapping[str, Any]) -> str:
    base = f", base offset {o['base_offset']}" if "base_offset" in o else ""
    return f"== {o['path']} ({o['kind']}, {o['size']:,} bytes{base})"


def _batch_text(b: Mapping[str, Any]) -> str:
    first = "?" if b["base_offset"] is None else b["base_offset"]
    count = "?" if b["count"] is None else b["count"]
    parts = [
        f"batch @{b['position']} offsets {first}..{b['last_offset']} "
        f"({count} record{'' if count == 1 else 's'})",
        f"magic {b['magic']} {b['compression']} {b['size']} bytes",
        f"{b['timestamp_type']} {with_iso(b['max_timestamp'])}",
        f"crc {b['crc']} {'ok' if b['crc_valid'] else 'INVALID'}",
    ]
    if b["partition_leader_epoch"] >= 0:
        parts.append(f"leader epoch {b['partition_leader_epoch']}")
    if b["producer_id"] >= 0:
        parts.append(
            f"producer {b['producer_id']} epoch {b['producer_epoch']} "
            f"seq {b['base_sequence']}..{b['last_sequence']}"
        )
    if b["is_transactional"]:
        parts.append("transactional")
    if b["is_control"]:
        parts.append("control")
    if b["delete_horizon_ms"] is not None:
        parts.append(f"delete horizon {with_iso(b['delete_horizon_ms'])}")
    return "  ".join(parts)


def _record_text(r: Mapping[str, Any]) -> str:
    parts = [f"  offset {r['offset']}", f"ts {with_iso(r['timestamp'])}"]
    if r.get("sequence", -1) >= 0:
        parts.append(f"seq {r['sequence']}")
    parts.append(f"key {_size(r['key_size'])}, value {_size(r['value_size'])}")
    if r.get("crc_valid") is False:
        parts.append("CRC INVALID")
    ctl = r.get("control")
    if ctl is not None:
        fields = {k: v for k, v in ctl.items() if k not in ("type", "type_id")}
        parts.append(f"control {ctl['type']}" + (f" {to_json(fields)}" if fields else ""))
    headers = r.get("headers") or []
    if headers:
        shown = [
            h["key"] + (f"={_scalar(h['value'])}" if h.get("value") is not None else "")
            for h in headers
        ]
        parts.append("headers [" + ", ".join(shown) + "]")
    if "key" in r or "value" in r:
        parts.append(f"key: {_scalar(r.get('key'))}  value: {_scalar(r.get('value'))}")
    if "decode_error" in r:
        parts.append(f"(cannot decode: {r['decode_error']})")
    return "  ".join(parts)


def with_iso(ms: int | None) -> str:
    """``1700000002000 (2023-11-14T22:13:22.000Z)`` (see :func:`format_ts`)."""
    return format_ts(ms, millis=True)


def _size(n: int) -> str:
    return "null" if n < 0 else f"{n} B"


def _finding_text(f: Mapping[str, Any]) -> str:
    where = f["path"] + (f":{f['position']}" if f.get("position") is not None else "")
    offset = f" (offset {f['offset']})" if f.get("offset") is not None else ""
    return f"{f['severity']}: {f['code']}: {where}{offset}: {f['message']}"


def diagnostic_line(f: Mapping[str, Any]) -> str:
    """A finding reported on stderr beside the data (``find``): the one-line shape of
    docs/output.md's errors, ``klogtool: <severity>: <path>[:<position>]: <what> (<code>)``."""
    where = f["path"] + (f":{f['position']}" if f.get("position") is not None else "")
    return shown(f"klogtool: {f['severity']}: {where}: {f['message']} ({f['code']})")


_TEXT_RENDERERS = {
    "file": _file_text,
    "batch": _batch_text,
    "record": _record_text,
    "finding": _finding_text,
}


def _check_event(obj: Mapping[str, Any]) -> None:
    import click

    from klogtool import events

    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.info_name is not None:
        events.check(ctx.info_name, obj)
