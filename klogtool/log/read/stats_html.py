"""``stats --html``: one self-contained HTML page (inline CSS and SVG, no script, nothing
loaded from the network) from the ``stats`` objects of :mod:`klogtool.log.read.stats`."""

from __future__ import annotations

import base64
import math
import unicodedata
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any

from klogtool.formats.batch import NO_TIMESTAMP
from klogtool.log.labels import (
    REMOTE_TIER_COLUMNS,
    distinct_labels,
    remote_tier_row,
    shorten_middle,
)
from klogtool.log.read.transactions import format_duration

if TYPE_CHECKING:
    from klogtool import events

Obj = dict[str, Any]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
margin:24px auto;max-width:1180px;color:#1d2330;background:#fff;padding:0 16px}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 8px;border-bottom:2px solid #dde3ee;padding-bottom:4px}
h3{font-size:14px;margin:12px 0 4px;color:#3b4456}
.sub{color:#5a6478;margin:0 0 16px}
table{border-collapse:collapse;margin:6px 0 12px}
td,th{padding:3px 10px;border-bottom:1px solid #e6eaf2;text-align:right;white-space:nowrap}
th{background:#f2f5fa;font-weight:600}
td:first-child,th:first-child{text-align:left}td.l{text-align:left;
font:13px/1.45 ui-monospace,"DejaVu Sans Mono",monospace}td.path{white-space:normal}
.seg{white-space:nowrap}
.wide{overflow-x:auto;max-width:100%}svg.chart{max-width:100%;height:auto}
.grid{display:flex;flex-wrap:wrap;gap:18px}.card{border:1px solid #dde3ee;border-radius:8px;
padding:10px 14px;background:#fbfcfe}
.kpi{display:flex;flex-wrap:wrap;gap:12px;margin:8px 0}.kpi div{border:1px solid #dde3ee;
border-radius:8px;padding:8px 14px;min-width:130px;background:#f7f9fc}.kpi b{display:block;
font-size:20px}.kpi span{color:#5a6478;font-size:12px}
svg text{font-family:system-ui,"DejaVu Sans",sans-serif}.note{color:#5a6478;font-size:12px}
.warn{color:#9a3412}
"""
_BLUE, _ORANGE, _GREEN, _GREY = "#3b6fd8", "#e07b39", "#2f9e6b", "#8a94a6"


def _svg_head(width: int, height: int, title: str) -> list[str]:
    """The opening ``<svg>`` tag of a chart and its title line."""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="0" y="16" font-size="13" font-weight="600" fill="#1d2330">'
        f"{escape(title)}</text>",
    ]


def iso(ms: int | None) -> str:
    """``2023-11-14 22:13:20.000Z``; ``-`` for no timestamp (None, or Kafka's -1), and any
    other negative number as it is (not a date of 1969)."""
    if ms is None or ms == NO_TIMESTAMP:
        return "-"
    if ms < 0:
        return str(ms)
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ms)


def human_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return str(n)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def display_key(heavy: Obj) -> str:
    """A heaviest-key entry's key for people: its text when it is printable; text with a few
    bytes or characters that are not escaped (``\\x0a``, ``\\u200b``); else, for binary keys,
    ``0x`` and the bytes in hex (of at most the key's first 64 bytes)."""
    if "key" in heavy:
        raw = str(heavy["key"]).encode("utf-8", "surrogatepass")
    else:
        raw = base64.b64decode(str(heavy.get("key_base64", "")))
    if not raw:
        return '""'
    text = raw.decode("utf-8", "surrogateescape")
    good = sum(1 for c in text if _printable(c))
    if good == len(text):
        return text
    if good >= 0.75 * len(text):
        return "".join(c if _printable(c) else _escaped(c) for c in text)
    return "0x" + raw.hex()


def _printable(c: str) -> bool:
    return c.isprintable() and c != "\ufffd" and not "\udc80" <= c <= "\udcff"


def _escaped(c: str) -> str:
    n = ord(c)
    if 0xDC80 <= n <= 0xDCFF:  # a byte that is not UTF-8 (surrogateescape)
        return f"\\x{n - 0xDC00:02x}"
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


# -- text widths (SVG text is laid out by the browser: its room is reserved from an estimate)
_MONO = 'font-family="ui-monospace,Menlo,Consolas,&quot;DejaVu Sans Mono&quot;,monospace"'


def text_width(text: str, size: float, *, mono: bool = False) -> float:
    """A generous estimate of ``text``'s width in pixels at font size ``size``: wide (CJK) and
    emoji characters 1.1 em, combining marks nothing, an ellipsis 1.02 em, others 0.62 em in a
    monospace font, and in a proportional one by the widths of DejaVu Sans and the usual sans
    fonts, rounded up."""
    width = 0.0
    for c in text:
        if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
            continue
        if unicodedata.east_asian_width(c) in ("W", "F") or ord(c) >= 0x1F000:
            width += 1.1
        elif c == "…":  # as wide as an m: a monospace font may not have it
            width += 1.02
        elif mono:
            width += 0.62
        elif c in " .,:;'|!il1()[]-/":
            width += 0.42
        elif c in "mwMW@%…×":
            width += 1.02
        elif c.isdigit():
            width += 0.66
        elif c.isupper():
            width += 0.8
        else:
            width += 0.66
    return width * size


def fit_text(text: str, room: float, size: float, *, mono: bool = False, suffix: str = "") -> str:
    """``text`` and ``suffix``, or as much of its start and its end around an ellipsis as
    :func:`text_width` fits in ``room`` pixels with the suffix (names that share a start, as
    keys do, differ at their end)."""
    if text_width(text + suffix, size, mono=mono) <= room:
        return text + suffix
    lo, hi = 1, len(text) - 1
    while lo < hi:  # the most characters kept (ellipsis included) that fit
        mid = (lo + hi + 1) // 2
        if text_width(shorten_middle(text, mid) + suffix, size, mono=mono) <= room:
            lo = mid
        else:
            hi = mid - 1
    return shorten_middle(text, lo) + suffix


def fit_labels(
    texts: list[str], room: float, size: float, *, mono: bool = False, each: bool = False
) -> list[str]:
    """:func:`fit_text` of each text, never alike for different texts (``each``: for any two
    of them, as bars are different things even when their texts are not, such as keys cut to
    their first 64 bytes)."""
    return distinct_labels(
        texts,
        lambda text, suffix: fit_text(text, room, size, mono=mono, suffix=suffix),
        ids=range(len(texts)) if each else None,
    )


def heavy_count(heavy: Obj) -> str:
    """A heaviest-key entry's record count: the number when exact, else the range that holds
    the true count (``records_min..records``)."""
    n, low = heavy["records"], heavy.get("records_min", heavy["records"])
    return f"{n:,}" if low == n else f"{low:,}..{n:,}"


def heavy_note(keys: Obj) -> str:
    """What the heaviest keys' counts are: exact, or space-saving ranges and their bound."""
    if keys["heaviest_exact"]:
        return "exact counts"
    return (
        f"space-saving estimate, {keys['heaviest_counters']:,} counters: each true count lies "
        f"in the range shown, off by at most {keys['heaviest_floor']:,} records "
        "(≤ keyed records / counters)"
    )


# -- SVG charts -------------------------------------------------------------------------------
def bar_chart(
    labels: list[str],
    values: list[float],
    *,
    title: str,
    width: int = 540,
    color: str = _BLUE,
    value_text: list[str] | None = None,
    lows: list[float] | None = None,
    mono: bool = False,
) -> str:
    """Horizontal bars, one per label (readable for long labels and many rows); with ``lows``
    a bar is solid up to its low value and pale from there to its value (a range). The label
    column is as wide as the longest label needs, up to 40 % of the width (longer labels end
    in an ellipsis; ``mono``: in a monospace font, for labels from the data), and the room
    right of the bars as wide as the longest value's text."""
    row, size = 22, 12
    texts = value_text or [f"{v:,.0f}" for v in values]
    need = max((text_width(x, size, mono=mono) for x in labels), default=0)
    # rounded up: a label that just fits must not lose its last character to the rounding
    left = math.ceil(min(0.4 * width, max(60.0, need + 12)))
    right = math.ceil(max((text_width(x, size) for x in texts), default=0) + 12)
    shorts = fit_labels(labels, left - 12, size, mono=mono, each=True)
    height = 30 + row * max(1, len(values))
    top = max(values, default=0) or 1
    inner = max(40, width - left - right)
    font = f" {_MONO}" if mono else ""
    parts = [
        *_svg_head(width, height, title),
    ]
    if not values:
        parts.append('<text x="0" y="40" font-size="12" fill="#5a6478">no data</text>')
    for i, (label, v) in enumerate(zip(labels, values, strict=True)):
        y = 26 + i * row
        w = max(1.0, inner * v / top) if v else 0
        text = texts[i]
        short = shorts[i]
        solid = w if lows is None else (inner * lows[i] / top if lows[i] else 0)
        parts.append(
            f'<text x="{left - 6}" y="{y + 14}" font-size="{size}" text-anchor="end" '
            f'fill="#1d2330"{font}><title>{escape(label)}</title>{escape(short)}</text>'
            + (
                f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{row - 6}" rx="2" '
                f'fill="{color}" fill-opacity="0.3"/>'
                if solid < w
                else ""
            )
            + f'<rect x="{left}" y="{y + 2}" width="{solid:.1f}" height="{row - 6}" rx="2" '
            f'fill="{color}"><title>{escape(label)}: {escape(text)}</title></rect>'
            f'<text x="{left + w + 5:.1f}" y="{y + 14}" font-size="{size}" fill="#3b4456">'
            f"{escape(text)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _empty_chart(title: str, text: str, width: int = 540) -> str:
    """A chart with nothing to draw: its title and ``text`` on one short line."""
    return "".join(
        [
            *_svg_head(width, 48, title),
            f'<text x="0" y="40" font-size="12" fill="#5a6478">{escape(text)}</text></svg>',
        ]
    )


def _axis_room(top: int, size: float = 11) -> int:
    """The room left of a chart for its y-axis labels (``top`` is the longest)."""
    return round(max(40.0, text_width(f"{top:,}", size) + 14))


def histogram(hist: Obj, *, title: str, color: str = _BLUE, empty: str = "no data") -> str:
    """Vertical bars over the log2 size buckets (every bucket from the smallest to the largest
    used, empty ones too, so the shape reads right); ``empty`` when there is no size."""
    buckets = hist.get("buckets") or []
    if not buckets:
        return _empty_chart(title, empty)
    by_from = {b["from"]: b["count"] for b in buckets}
    lo = buckets[0]["from"].bit_length()
    hi = buckets[-1]["from"].bit_length()
    cols = list(range(lo, hi + 1))
    counts = [by_from.get(0 if b == 0 else 1 << (b - 1), 0) for b in cols]
    top = max(counts) or 1
    width, height, left, bottom = 540, 220, _axis_room(top), 46
    inner_w, inner_h = width - left - 10, height - 30 - bottom
    bw = inner_w / len(cols)
    parts = [
        *_svg_head(width, height, title),
        f'<line x1="{left}" y1="{30 + inner_h}" x2="{width - 10}" y2="{30 + inner_h}" '
        'stroke="#8a94a6"/>',
        f'<text x="{left - 6}" y="36" font-size="11" text-anchor="end" fill="#5a6478">'
        f"{top:,}</text>",
        f'<text x="{left - 6}" y="{30 + inner_h}" font-size="11" text-anchor="end" '
        'fill="#5a6478">0</text>',
    ]
    step = max(1, -(-len(cols) // 12))
    for i, (b, n) in enumerate(zip(cols, counts, strict=True)):
        h = inner_h * n / top
        x = left + i * bw
        lo_b = 0 if b == 0 else 1 << (b - 1)
        label = _size_label(lo_b)
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{30 + inner_h - h:.1f}" width="{max(1.0, bw - 2):.1f}" '
            f'height="{h:.1f}" fill="{color}"><title>{escape(label)}+: {n:,} records</title>'
            "</rect>"
        )
        if i % step == 0:
            parts.append(
                f'<text x="{x + bw / 2:.1f}" y="{30 + inner_h + 14}" font-size="11" '
                f'text-anchor="middle" fill="#3b4456">{escape(label)}</text>'
            )
    parts.append(
        f'<text x="{left + inner_w / 2:.1f}" y="{height - 8}" font-size="11" '
        'text-anchor="middle" fill="#5a6478">size in bytes (log2 buckets: from)</text></svg>'
    )
    return "".join(parts)


def _size_label(n: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift:
            return f"{n >> shift}{unit}"
    return str(n)


def covered(start: int, width_ms: int, n: int, first: int | None, last: int | None) -> list[float]:
    """The share of each of ``n`` time buckets (from ``start``, ``width_ms`` wide) that lies
    between the first and the last timestamp: 1.0 but for the first and the last bucket,
    which the data usually covers in part."""
    shares = [1.0] * n
    if n < 2 or first is None or last is None:
        return shares
    end0 = start + width_ms
    shares[0] = max(0.0, min(1.0, (end0 - max(first, start)) / width_ms))
    start_n = start + (n - 1) * width_ms
    shares[-1] = max(0.0, min(1.0, (min(last + 1, start_n + width_ms) - start_n) / width_ms))
    return shares


PARTIAL_SCALED = 0.25  # a partial bucket covering at least this share is drawn scaled up


def area_chart(
    start: int,
    width_ms: int,
    counts: list[int],
    *,
    title: str,
    first: int | None = None,
    last: int | None = None,
) -> str:
    """Records per time bucket: an area with a line, first and last times under the axis.

    The first and the last bucket hold only the records from the first timestamp on and up
    to the last: drawn as they are they would read as traffic starting and stopping. They are
    drawn dashed, at their count scaled up to a whole bucket (``count / covered share``), or
    left out when they cover less than :data:`PARTIAL_SCALED` of their width (their counts
    are in the circles' tooltips and the note under the chart)."""
    n = len(counts)
    shares = covered(start, width_ms, n, first, last)
    partial = sum(1 for x in shares if x < 1.0)
    width, height, bottom = 1100, 256 + 14 * partial, 56 + 14 * partial
    parts = [
        *_svg_head(width, height, title),
    ]
    if not counts:
        parts.append('<text x="0" y="40" font-size="12" fill="#5a6478">no timestamps</text>')
        return "".join(parts) + "</svg>"
    drawn: list[float | None] = []
    for c, share in zip(counts, shares, strict=True):
        drawn.append(c if share >= 1.0 else c / share if share >= PARTIAL_SCALED else None)
    top = round(max((d for d in drawn if d is not None), default=0)) or 1
    left = _axis_room(top)
    inner_w, inner_h = width - left - 16, height - 30 - bottom
    base_y = 30 + inner_h

    def x_of(i: int) -> float:
        return left + (inner_w * (i + 0.5) / n if n > 1 else inner_w / 2)

    def y_of(v: float) -> float:
        return base_y - inner_h * v / top

    whole = [i for i in range(n) if shares[i] >= 1.0]
    parts += [
        f'<line x1="{left}" y1="{base_y}" x2="{left + inner_w}" y2="{base_y}" stroke="#8a94a6"/>',
        f'<line x1="{left}" y1="30" x2="{left}" y2="{base_y}" stroke="#8a94a6"/>',
        f'<text x="{left - 6}" y="36" font-size="11" text-anchor="end" fill="#5a6478">'
        f"{top:,}</text>",
        f'<text x="{left - 6}" y="{base_y}" font-size="11" text-anchor="end" '
        'fill="#5a6478">0</text>',
    ]
    if whole:
        points = [(x_of(i), y_of(counts[i])) for i in whole]
        line = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        area = f"{points[0][0]:.1f},{base_y} {line} {points[-1][0]:.1f},{base_y}"
        parts += [
            f'<polygon points="{area}" fill="{_BLUE}" fill-opacity="0.25"/>',
            f'<polyline points="{line}" fill="none" stroke="{_BLUE}" stroke-width="2"/>',
        ]
    notes = []
    for i, (c, share, d) in enumerate(zip(counts, shares, drawn, strict=True)):
        x = x_of(i)
        when = escape(iso(start + i * width_ms))
        if share >= 1.0:
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y_of(c):.1f}" r="2.5" fill="{_BLUE}"><title>'
                f"{when}: {c:,} records</title></circle>"
            )
            continue
        which = "first" if i == 0 else "last"
        if d is None:
            notes.append(
                f"The {which} bucket is partial ({c:,} records in {100 * share:.1f} % of it): "
                "left out."
            )
            continue
        notes.append(
            f"The {which} bucket is partial ({c:,} records in {100 * share:.0f} % of it): "
            "dashed, scaled to a whole bucket."
        )
        near = whole[0] if i == 0 and whole else whole[-1] if whole else None
        if near is not None:
            parts.append(
                f'<line x1="{x_of(near):.1f}" y1="{y_of(counts[near]):.1f}" x2="{x:.1f}" '
                f'y2="{y_of(d):.1f}" stroke="{_BLUE}" stroke-width="2" stroke-dasharray="5 4"/>'
            )
        parts.append(
            f'<circle class="partial" cx="{x:.1f}" cy="{y_of(d):.1f}" r="3.5" fill="#fff" '
            f'stroke="{_BLUE}" stroke-width="1.5"><title>{when}: {c:,} records in '
            f"{100 * share:.1f} % of the bucket (partial), drawn as {d:,.0f}</title></circle>"
        )
    ticks = sorted({0, n // 2, n - 1})
    for i in ticks:
        anchor = "start" if i == 0 else "end" if i == n - 1 and n > 1 else "middle"
        x = x_of(i) if anchor == "middle" else left if i == 0 else left + inner_w
        parts.append(
            f'<text x="{x:.1f}" y="{base_y + 16}" font-size="11" text-anchor="{anchor}" '
            f'fill="#3b4456">{escape(iso(start + i * width_ms))}</text>'
        )
    parts.append(
        f'<text x="{left + inner_w / 2:.1f}" y="{base_y + 34}" font-size="11" '
        f'text-anchor="middle" fill="#5a6478">records per {escape(_duration(width_ms))} '
        "(record timestamps, UTC)</text>"
    )
    for j, note in enumerate(notes):
        parts.append(
            f'<text class="partial-note" x="{left}" y="{base_y + 50 + 14 * j}" '
            f'font-size="11" fill="#9a3412">{escape(note)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _duration(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0 or ms >= 10 * size:
            return f"{ms / size:g} {unit}"
    return f"{ms} ms"


# -- the page ---------------------------------------------------------------------------------
# Tables fit the page (no script measures them): the columns of names (partition paths, groups,
# topics, client ids) share the width the other columns leave, from a generous estimate of
# theirs, and a longer name keeps its start and its end, the whole of it in a tooltip.
PAGE_WIDTH = 1180  # the body's max-width (_CSS)
CELL_FONT = 13  # px: names in a table (td.l), in a monospace font; numbers: 14 px
_CELL_PAD = 20  # a cell's padding, left and right
MIN_NAME_ROOM = 120  # below that a table scrolls rather than its names become unreadable


def _table(
    head: list[str],
    rows: list[list[str]],
    left: frozenset[int] = frozenset(),
    *,
    names: frozenset[int] = frozenset(),
    paths: bool = False,
) -> str:
    """A table; the columns in ``left`` hold text, in a monospace font, those in ``names``
    names fitted to the width the others leave (:func:`_name_rooms`), on one line each, or
    with ``paths`` in the first column partition paths on two (:func:`_paths_html`)."""
    rooms = _name_rooms(head, rows, left, names, paths)
    text = left | names
    shown = {
        i: (_paths_html if paths and i == 0 else _names_html)([r[i] for r in rows], room)
        for i, room in rooms.items()
    }
    out = ["<table><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr>"]
    for j, r in enumerate(rows):
        out.append("<tr>")
        for i, c in enumerate(r):
            cls = ' class="l path"' if paths and i == 0 else ' class="l"' if i in text else ""
            out.append(f"<td{cls}>{shown[i][j] if i in shown else escape(c)}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _name_rooms(
    head: list[str],
    rows: list[list[str]],
    left: frozenset[int],
    names: frozenset[int],
    paths: bool,
) -> dict[int, float]:
    """The room of each column of names: the page's width less the other columns' (each its
    longest text, its header's included), in equal shares; a column whose longest name needs
    less takes that, and leaves the rest to the others."""
    free = float(PAGE_WIDTH - _CELL_PAD * len(head) - 24)  # 24: borders, a margin for error
    need: dict[int, float] = {}
    for i, title in enumerate(head):
        column = [r[i] for r in rows]
        if i in names:
            parts = [x for p in column for x in (_path_parts(p) if paths and i == 0 else (p,))]
            need[i] = max([text_width(title, 14)] + [_cell_width(x) for x in parts])
        else:
            widths = [_cell_width(x) if i in left else text_width(x, 14) for x in column]
            free -= max([text_width(title, 14), *widths])
    rooms: dict[int, float] = {}
    pending = set(names)
    while pending:  # the columns that need less than a share first
        share = max(0.0, free) / len(pending)
        small = {i for i in pending if need[i] <= share}
        for i in small or pending:
            rooms[i] = max(MIN_NAME_ROOM, need[i] if small else share)
            free -= rooms[i]
        pending = pending - small if small else set()
    return rooms


def _cell_width(text: str) -> float:
    return text_width(text, CELL_FONT, mono=True)


def _shortened(text: str, shown: str) -> str:
    """``shown`` as HTML, with the whole ``text`` in a tooltip when it was cut."""
    return (
        escape(shown) if shown == text else f'<span title="{escape(text)}">{escape(shown)}</span>'
    )


def _names_html(names: list[str], room: float) -> list[str]:
    """Names that each fit one line of ``room`` pixels, different names never alike."""
    shown = fit_labels(names, room, CELL_FONT, mono=True)
    return [_shortened(n, x) for n, x in zip(names, shown, strict=True)]


def _path_parts(path: str) -> tuple[str, str]:
    """A partition's directory (with its last ``/``) and its name."""
    folder, slash, name = path.rpartition("/")
    return folder + slash, name


def _paths_html(paths: list[str], room: float) -> list[str]:
    """Partition paths on at most two lines, the directory then the partition's name, each
    unbroken (a line breaks only after the directory's last ``/``, never inside a name) and
    fitted to ``room`` pixels; different paths never alike."""

    def fit(path: str, suffix: str) -> tuple[str, str]:
        folder, name = _path_parts(path)
        return (
            fit_text(folder, room, CELL_FONT, mono=True),
            fit_text(name, room, CELL_FONT, mono=True, suffix=suffix),
        )

    out = []
    for path, parts in zip(paths, distinct_labels(paths, fit), strict=True):
        html = "<wbr>".join(f'<span class="seg">{escape(x)}</span>' for x in parts if x)
        out.append(
            html if "".join(parts) == path else f'<span title="{escape(path)}">{html}</span>'
        )
    return out


def _kpis(items: list[tuple[str, str]]) -> str:
    return (
        '<div class="kpi">'
        + "".join(f"<div><b>{escape(v)}</b><span>{escape(k)}</span></div>" for k, v in items)
        + "</div>"
    )


def render(
    total: events.StatsStats,
    partitions: list[events.StatsStats],
    what_if: Obj | None,
    *,
    title: str,
    generated: str,
    groups: list[events.GroupsOffset] | None = None,
) -> str:
    """The whole page for the ``total`` stats object, its ``partitions`` and the what-if;
    with ``groups``, where each consumer group stood (``klogtool groups``' offsets)."""
    v, s, t, p, k = (
        total["volume"],
        total["sizes"],
        total["time"],
        total["producers"],
        total["keys"],
    )
    comp = k["compaction"]
    h: list[str] = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="sub">{escape(generated)}</p>',
        _kpis(
            [
                ("partitions", f"{total['partitions']:,}"),
                ("records", f"{v['records']:,}"),
                ("on disk", human_bytes(v["bytes_on_disk"])),
                ("uncompressed", human_bytes(v["bytes_uncompressed"])),
                ("compression ratio", f"{v['compression_ratio'] or 0:.2f}×"),
                ("distinct keys", ("" if k["distinct_exact"] else "≈") + f"{k['distinct']:,}"),
                ("compaction potential", pct(comp["share"])),
            ]
        ),
    ]
    if total["problems"]:
        h.append("<h2>Problems</h2><ul>")
        h += [f'<li class="warn">{escape(x)}</li>' for x in total["problems"][:50]]
        h.append("</ul>")
    # volume
    h.append("<h2>Volume</h2>")
    rows = [
        [name, f"{c['batches']:,}", f"{c['records']:,}", f"{c['bytes']:,}"]
        for name, c in v["codecs"].items()
    ]
    h.append(
        _table(["codec", "batches", "records", "bytes on disk"], rows)
        + f'<p class="note">{v["batches"]:,} batches, {v["control_records"]:,} control records, '
        f"message formats {escape(', '.join('v' + m for m in v['magics']))}; "
        f"{v['unreadable_bytes']:,} unreadable bytes.</p>"
    )
    # sizes
    h.append("<h2>Sizes</h2>")
    size_rows = []
    for name in ("key", "value", "headers"):
        d = s[name]
        size_rows.append(
            [
                name,
                f"{d['count']:,}",
                f"{d['nulls']:,}",
                _num(d["min"]),
                _num(d["p50"]),
                _num(d["p90"]),
                _num(d["p99"]),
                _num(d["max"]),
                _num(d["mean"]),
                f"{d['bytes']:,}",
            ]
        )
    h.append(
        _table(["", "count", "null", "min", "p50", "p90", "p99", "max", "mean", "bytes"], size_rows)
        + '<p class="note">Percentiles from log2 buckets, interpolated inside a bucket.</p>'
    )
    h.append('<div class="grid">')
    for name, color in (("key", _BLUE), ("value", _GREEN), ("headers", _ORANGE)):
        hist = s[name]
        if name == "headers" and not (s.get("header_count") or {}).get("max"):
            hist = {**hist, "buckets": []}  # sizes of 0: no record has a header
        chart = histogram(hist, title=f"{name} sizes", color=color, empty=f"no {name}")
        h.append(f'<div class="card">{chart}</div>')
    h.append("</div>")
    # time
    h.append("<h2>Time</h2>")
    h.append(
        area_chart(
            t["bucket_start"],
            t["bucket_ms"],
            t["buckets"],
            title="records over time",
            first=t["first_timestamp"],
            last=t["last_timestamp"],
        )
    )
    h.append(
        _table(
            ["", "value"],
            [
                ["first (smallest) timestamp", iso(t["first_timestamp"])],
                ["last (largest) timestamp", iso(t["last_timestamp"])],
                ["out of order (timestamp below the previous record's)", f"{t['out_of_order']:,}"],
                ["in the future", f"{t['future']:,}"],
                ["no timestamp", f"{t['no_timestamp']:,}"],
                ["CreateTime records", f"{t['create_time']:,}"],
                ["LogAppendTime records", f"{t['log_append_time']:,}"],
            ],
        )
    )
    # producers
    h.append("<h2>Producers</h2>")
    h.append(
        _kpis(
            [
                ("producers", f"{p['count']:,}" + ("+" if p["count_truncated"] else "")),
                ("idempotent", pct(p["idempotent_share"])),
                ("transactional", pct(p["transactional_share"])),
            ]
        )
    )
    largest = p["largest"]
    h.append(
        bar_chart(
            [str(x["producer_id"]) for x in largest],
            [x["records"] for x in largest],
            title="largest producers (records by producer id)",
            color=_ORANGE,
        )
    )
    # keys
    h.append("<h2>Keys and compaction</h2>")
    err = k["distinct_standard_error"]
    h.append(
        _kpis(
            [
                (
                    "distinct keys" + ("" if err is None else f" (±{100 * err:.2f} % std. error)"),
                    ("" if k["distinct_exact"] else "≈") + f"{k['distinct']:,}",
                ),
                ("keyless", pct(k["keyless_share"])),
                ("tombstones", pct(k["tombstone_share"])),
                ("compaction potential", pct(comp["share"])),
            ]
        )
    )
    h.append(
        _table(
            ["a compaction now would remove", "records"],
            [
                ["superseded (key appears again later)", f"{comp['superseded']:,}"],
                ["keyless", f"{comp['keyless']:,}"],
                ["tombstones past their delete horizon", f"{comp['tombstones_expired']:,}"],
                ["records of aborted transactions", f"{comp['aborted']:,}"],
                ["total" + (" (estimated)" if comp["estimated"] else ""), f"{comp['removable']:,}"],
            ],
        )
    )
    heavy = k["heaviest"]
    h.append(
        bar_chart(
            [display_key(x) for x in heavy],
            [x["records"] for x in heavy],
            title="heaviest keys (records)",
            color=_GREEN,
            width=720,
            mono=True,
            value_text=[heavy_count(x) for x in heavy],
            lows=[x.get("records_min", x["records"]) for x in heavy],
        )
        + f'<p class="note">Heaviest keys: {escape(heavy_note(k))}'
        + ("" if k["heaviest_exact"] else " (pale: the range of the true count)")
        + ".</p>"
    )
    # what if
    if what_if is not None:
        rows_w = what_if["codecs"]
        smp = what_if["sample"]
        h.append("<h2>What if: each codec</h2>")
        h.append(
            f'<p class="note">Measured on a sample of {smp["batches"]:,} batches '
            f"({human_bytes(smp['bytes'])} of uncompressed records, {smp['records']:,} "
            "records), compressed batch by batch; the estimate scales the ratio to all the "
            "data.</p>"
        )
        ok = [r for r in rows_w if not r["error"]]
        h.append(
            bar_chart(
                [r["codec"] for r in ok],
                [r["estimated_bytes"] for r in ok],
                title="estimated size on disk",
                value_text=[f"{human_bytes(r['estimated_bytes'])} ({r['ratio']:.2f}×)" for r in ok],
                width=640,
            )
        )
        h.append(
            _table(
                ["codec", "sample bytes", "ratio", "seconds", "MB/s", "estimated size"],
                [
                    [
                        r["codec"],
                        f"{r['bytes']:,}",
                        f"{r['ratio']:.3f}",
                        f"{r['seconds']:.3f}",
                        _num(r["mb_per_s"]),
                        human_bytes(r["estimated_bytes"]) if not r["error"] else r["error"],
                    ]
                    for r in rows_w
                ],
            )
        )
    # partitions
    if len(partitions) > 1 or (partitions and partitions[0]["path"] != total["path"]):
        h.append("<h2>Partitions</h2>")
        prow = [
            [
                o["path"],
                f"{o['volume']['records']:,}",
                human_bytes(o["volume"]["bytes_on_disk"]),
                f"{o['volume']['compression_ratio'] or 0:.2f}",
                ("" if o["keys"]["distinct_exact"] else "≈") + f"{o['keys']['distinct']:,}",
                pct(o["keys"]["compaction"]["share"]),
                iso(o["time"]["last_timestamp"]),
            ]
            for o in partitions
        ]
        h.append(
            '<div class="wide">'
            + _table(
                ["partition", "records", "on disk", "ratio", "distinct keys", "compaction", "last"],
                prow,
                names=frozenset({0}),
                paths=True,
            )
            + "</div>"
        )
    h += _groups_section(groups or [])
    h += _epochs_section(partitions)
    h += _remote_tier_section(partitions)
    h.append("</body></html>\n")
    return "".join(h)


MAX_ROWS = 500  # of a table of the page (JSON Lines has them all)


def _groups_section(offsets: list[events.GroupsOffset]) -> list[str]:
    """Each consumer group's committed offsets beside the data (klogtool.log.read.groups)."""
    if not offsets:
        return []
    rows = [
        [
            o["group"],
            o["topic"],
            str(o["partition"]),
            f"{o['offset']:,}",
            _num(o["end_offset"]),
            _num(o["lag"]),
            format_duration(o["time_lag_ms"]),
            o["client_id"] or "-",
            " ".join(n for n, on in (("expired", o["expired"]), ("pending", o["pending"])) if on),
        ]
        for o in offsets[:MAX_ROWS]
    ]
    groups = len({o["group"] for o in offsets})
    note = (
        f"{groups:,} group{'' if groups == 1 else 's'} replayed from __consumer_offsets; lag "
        "against each data partition's high watermark, time lag from the newest record back "
        "to the one at the committed offset ('-': its data partition is not in these log dirs)."
    )
    if len(offsets) > MAX_ROWS:
        note += f" The first {MAX_ROWS:,} of {len(offsets):,} (klogtool groups shows all)."
    return [
        "<h2>Consumer groups</h2>",
        '<div class="wide">'
        + _table(
            [
                "group",
                "topic",
                "partition",
                "committed",
                "log end",
                "lag",
                "time lag",
                "client",
                "note",
            ],  # fmt: skip
            rows,
            left=frozenset({8}),
            names=frozenset({0, 1, 7}),
        )
        + "</div>",
        f'<p class="note">{escape(note)}</p>',
    ]


def _remote_tier_section(partitions: list[events.StatsStats]) -> list[str]:
    """Each tiered partition's remote tier beside its local log (klogtool.log.remote_tier)."""
    rows = [
        remote_tier_row(o["path"], o["remote_tier"])
        for o in partitions[:MAX_ROWS]
        if "remote_tier" in o
    ]
    if not rows:
        return []
    note = (
        "From the broker's __remote_log_metadata partitions, replayed as it loads them: the "
        "remote log (finished uploads that hold their offsets), where it overlaps the local "
        "log or the gap between them, the highest offset counted as uploaded, and what to "
        "look at (docs/tiered-storage.md)."
    )
    return [
        "<h2>Remote tier</h2>",
        '<div class="wide">'
        + _table(REMOTE_TIER_COLUMNS, rows, left=frozenset({5, 7}), paths=True)
        + "</div>",
        f'<p class="note">{escape(note)}</p>',
    ]


def _epochs_section(partitions: list[events.StatsStats]) -> list[str]:
    """Each whole partition's leader epochs: the leader-epoch-checkpoint's start beside the
    batches' own (klogtool.log.epochs); "≠" where they differ."""
    rows = [
        [
            o["path"],
            "-" if e["epoch"] < 0 else str(e["epoch"]),
            _num(e["checkpoint_start_offset"]),
            _num(e["start_offset"]) + (" ≠" if e["same_start"] is False else ""),
            _num(e["last_offset"]),
            iso(e["first_timestamp"]),
            f"{e['records']:,}",
            human_bytes(e["bytes"]),
        ]
        for o in partitions
        for e in o.get("epochs") or ()
    ]
    if not rows:
        return []
    more = len(rows) - MAX_ROWS
    note = (
        "The leader-epoch-checkpoint's start of each epoch beside its first batch's offset "
        "(the epoch every v2 batch carries); ≠ where they differ, - where one side has none."
    )
    if more > 0:
        note += f" The first {MAX_ROWS:,} rows of {len(rows):,} (all in JSON Lines)."
    return [
        "<h2>Leader epochs</h2>",
        '<div class="wide">'
        + _table(
            [
                "partition",
                "epoch",
                "checkpoint start",
                "first batch",
                "last offset",
                "first timestamp",
                "records",
                "on disk",
            ],  # fmt: skip
            rows[:MAX_ROWS],
            names=frozenset({0}),
            paths=True,
        )
        + "</div>",
        f'<p class="note">{escape(note)}</p>',
    ]


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"
