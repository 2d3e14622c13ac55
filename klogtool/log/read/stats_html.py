"""``stats --html``: one self-contained HTML page (inline CSS and SVG, no script, nothing
loaded from the network) from the ``stats`` objects of :mod:`klogtool.log.read.stats`."""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import Any

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
td:first-child,th:first-child{text-align:left}td.l{text-align:left;white-space:normal;
word-break:break-all;max-width:520px;font-family:ui-monospace,"DejaVu Sans Mono",monospace}
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
    if ms is None:
        return "-"
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
    """A heaviest-key entry's key for people: control characters escaped (\\x0a), keys that
    are not UTF-8 as ``base64:...``."""
    if "key" not in heavy:
        return "base64:" + str(heavy.get("key_base64", ""))
    text = str(heavy["key"])
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text) or '""'


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
) -> str:
    """Horizontal bars, one per label (readable for long labels and many rows); with ``lows``
    a bar is solid up to its low value and pale from there to its value (a range)."""
    row, left, right = 22, 150, 110
    height = 30 + row * max(1, len(values))
    top = max(values, default=0) or 1
    inner = width - left - right
    parts = [
        *_svg_head(width, height, title),
    ]
    if not values:
        parts.append('<text x="0" y="40" font-size="12" fill="#5a6478">no data</text>')
    for i, (label, v) in enumerate(zip(labels, values, strict=True)):
        y = 26 + i * row
        w = max(1.0, inner * v / top) if v else 0
        text = value_text[i] if value_text else f"{v:,.0f}"
        short = label if len(label) <= 22 else label[:21] + "…"
        solid = w if lows is None else (inner * lows[i] / top if lows[i] else 0)
        parts.append(
            f'<text x="{left - 6}" y="{y + 14}" font-size="12" text-anchor="end" '
            f'fill="#1d2330">{escape(short)}</text>'
            + (
                f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{row - 6}" rx="2" '
                f'fill="{color}" fill-opacity="0.3"/>'
                if solid < w
                else ""
            )
            + f'<rect x="{left}" y="{y + 2}" width="{solid:.1f}" height="{row - 6}" rx="2" '
            f'fill="{color}"><title>{escape(label)}: {escape(text)}</title></rect>'
            f'<text x="{left + w + 5:.1f}" y="{y + 14}" font-size="12" fill="#3b4456">'
            f"{escape(text)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def histogram(hist: Obj, *, title: str, color: str = _BLUE) -> str:
    """Vertical bars over the log2 size buckets (every bucket from the smallest to the largest
    used, empty ones too, so the shape reads right)."""
    buckets = hist.get("buckets") or []
    if not buckets:
        return bar_chart([], [], title=title)
    by_from = {b["from"]: b["count"] for b in buckets}
    lo = buckets[0]["from"].bit_length()
    hi = buckets[-1]["from"].bit_length()
    cols = list(range(lo, hi + 1))
    counts = [by_from.get(0 if b == 0 else 1 << (b - 1), 0) for b in cols]
    width, height, left, bottom = 540, 220, 56, 46
    inner_w, inner_h = width - left - 10, height - 30 - bottom
    top = max(counts) or 1
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


def area_chart(start: int, width_ms: int, counts: list[int], *, title: str) -> str:
    """Records per time bucket: an area with a line, first and last times under the axis."""
    width, height, left, bottom = 1100, 240, 64, 40
    inner_w, inner_h = width - left - 16, height - 30 - bottom
    parts = [
        *_svg_head(width, height, title),
    ]
    if not counts:
        parts.append('<text x="0" y="40" font-size="12" fill="#5a6478">no timestamps</text>')
        return "".join(parts) + "</svg>"
    top = max(counts) or 1
    n = len(counts)
    base_y = 30 + inner_h

    def xy(i: int, c: int) -> tuple[float, float]:
        x = left + (inner_w * (i + 0.5) / n if n > 1 else inner_w / 2)
        return x, base_y - inner_h * c / top

    points = [xy(i, c) for i, c in enumerate(counts)]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    area = f"{points[0][0]:.1f},{base_y} {line} {points[-1][0]:.1f},{base_y}"
    parts += [
        f'<line x1="{left}" y1="{base_y}" x2="{left + inner_w}" y2="{base_y}" stroke="#8a94a6"/>',
        f'<line x1="{left}" y1="30" x2="{left}" y2="{base_y}" stroke="#8a94a6"/>',
        f'<text x="{left - 6}" y="36" font-size="11" text-anchor="end" fill="#5a6478">'
        f"{top:,}</text>",
        f'<text x="{left - 6}" y="{base_y}" font-size="11" text-anchor="end" '
        'fill="#5a6478">0</text>',
        f'<polygon points="{area}" fill="{_BLUE}" fill-opacity="0.25"/>',
        f'<polyline points="{line}" fill="none" stroke="{_BLUE}" stroke-width="2"/>',
    ]
    for i, (x, y) in enumerate(points):
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{_BLUE}"><title>'
            f"{escape(iso(start + i * width_ms))}: {counts[i]:,} records</title></circle>"
        )
    ticks = sorted({0, n // 2, n - 1})
    for i in ticks:
        anchor = "start" if i == 0 else "end" if i == n - 1 and n > 1 else "middle"
        x = points[i][0] if n > 1 else left + inner_w / 2
        parts.append(
            f'<text x="{x:.1f}" y="{base_y + 16}" font-size="11" text-anchor="{anchor}" '
            f'fill="#3b4456">{escape(iso(start + i * width_ms))}</text>'
        )
    parts.append(
        f'<text x="{left + inner_w / 2:.1f}" y="{height - 4}" font-size="11" '
        f'text-anchor="middle" fill="#5a6478">records per {escape(_duration(width_ms))} '
        "(record timestamps, UTC)</text></svg>"
    )
    return "".join(parts)


def _duration(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0 or ms >= 10 * size:
            return f"{ms / size:g} {unit}"
    return f"{ms} ms"


# -- the page ---------------------------------------------------------------------------------
def _table(head: list[str], rows: list[list[str]], left: frozenset[int] = frozenset()) -> str:
    out = ["<table><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr>"]
    for r in rows:
        out.append("<tr>")
        for i, c in enumerate(r):
            cls = ' class="l"' if i in left else ""
            out.append(f"<td{cls}>{escape(c)}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _kpis(items: list[tuple[str, str]]) -> str:
    return (
        '<div class="kpi">'
        + "".join(f"<div><b>{escape(v)}</b><span>{escape(k)}</span></div>" for k, v in items)
        + "</div>"
    )


def render(
    total: Obj,
    partitions: list[Obj],
    what_if: Obj | None,
    *,
    title: str,
    generated: str,
) -> str:
    """The whole page for the ``total`` stats object, its ``partitions`` and the what-if."""
    v, s, t, p, k = (total[x] for x in ("volume", "sizes", "time", "producers", "keys"))
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
        h.append(
            f'<div class="card">{histogram(s[name], title=f"{name} sizes", color=color)}</div>'
        )
    h.append("</div>")
    # time
    h.append("<h2>Time</h2>")
    h.append(area_chart(t["bucket_start"], t["bucket_ms"], t["buckets"], title="records over time"))
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
            [f"producer {x['producer_id']}" for x in largest],
            [x["records"] for x in largest],
            title="largest producers (records)",
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
            _table(
                ["partition", "records", "on disk", "ratio", "distinct keys", "compaction", "last"],
                prow,
                left=frozenset({0}),
            )
        )
    h.append("</body></html>\n")
    return "".join(h)


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"
