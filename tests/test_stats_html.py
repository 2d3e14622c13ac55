"""``klogtool stats --html`` in a real browser: headless Chromium renders the report to a PNG,
which must have the window's size and be far from blank; the page holds its SVG charts and
escapes what the data says. Skipped without Chromium unless KLOGTOOL_REQUIRE_BROWSER is set."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from support.cli import jsonl, run
from support.rewrite import write_partition

from klogtool.formats import encode_batch
from klogtool.formats.batch import Record
from klogtool.formats.checkpoint import EpochEntry, encode_leader_epoch_checkpoint
from klogtool.formats.codecs import NONE, ZSTD
from klogtool.log.read.stats_html import area_chart, bar_chart, render

WIDTH, HEIGHT = 1280, 2000


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("KLOGTOOL_REQUIRE_BROWSER"):
        pytest.fail("KLOGTOOL_REQUIRE_BROWSER is set but chromium is not installed")
    pytest.skip("chromium is not installed (apt-get install chromium)")


def read_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """A tiny PNG decoder (8-bit RGB/RGBA, not interlaced): width, height, unfiltered rows."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos : pos + 4]), data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, [bytes(r) for r in rows]


def _logdir(root: Path) -> Path:
    part = root / "logdir" / "payments-0"
    batches = []
    for b in range(30):
        recs = [
            Record(
                b * 10 + i,
                1_700_000_000_000 + b * 60_000 + i,
                b"<user-%d>" % (i % 4) if i % 5 else None,
                b"payload " * (i * b % 40) if (i + b) % 7 else None,
                (("trace", b"t" * i),),
            )
            for i in range(10)
        ]
        batches.append(
            encode_batch(
                recs, compression=ZSTD, producer_id=7, producer_epoch=0, base_sequence=b * 10
            )
        )
    write_partition(part, [(0, batches)])
    return root / "logdir"


def test_the_report_renders_in_chromium(tmp_path: Path) -> None:
    browser = _browser()
    logdir = _logdir(tmp_path)
    report = tmp_path / "report.html"
    code, _out, err = run("stats", "--html", str(report), str(logdir), cwd=tmp_path)
    assert code == 0, err
    page = report.read_text()
    # the charts: three size histograms, records over time, producers, keys, codec sizes
    assert page.count("<svg") == 7, page.count("<svg")
    for label in ("key sizes", "value sizes", "records over time", "estimated size on disk"):
        assert f'aria-label="{label}"' in page
    assert "&lt;user-1&gt;" in page and "<user-1>" not in page  # keys are escaped
    assert "<script" not in page and "<link" not in page
    shot = tmp_path / "report.png"
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={shot}",
            f"--window-size={WIDTH},{HEIGHT}",
            report.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    width, height, rows = read_png(shot.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)
    colours = {row[i : i + 3] for row in rows[::4] for i in range(0, len(row), 12)}
    assert len(colours) > 50, len(colours)  # text, bars in three colours, the area chart
    # the chart colours are there (bars of the histograms, the time area, the line)
    blue = bytes.fromhex("3b6fd8")
    assert any(blue in row for row in rows), "no blue bar or line in the screenshot"
    if os.environ.get("KLOGTOOL_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["KLOGTOOL_KEEP_SCREENSHOT"])


# -- layout: checked by the browser's own boxes -------------------------------------------------
# Run in the page: every SVG text inside its chart's viewBox, every chart inside its box, no
# table cell overflowing, no path wrapping inside a word, no raw bytes drawn; and, over every
# piece of text drawn (HTML text and SVG labels alike): no two overlap, none is cut by a box that
# clips it (a scrolling table's hidden columns) or by the page, no table cell wraps over
# MAX_LINES lines, and no label shortened to fit (its whole text in a tooltip) reads like
# another's: different tooltips under the same text, or two labels of one chart alike.
MAX_LINES = 2
_LAYOUT_CHECK = r"""
(function () {
  const bad = [];
  const tol = 0.5;
  const MAX_LINES = __MAX_LINES__;
  const shownText = (el) => Array.from(el.childNodes)
    .filter((n) => n.nodeType === Node.TEXT_NODE)
    .map((n) => n.data)
    .join("");
  const where = (r) => `x ${r.left.toFixed(1)}..${r.right.toFixed(1)}, ` +
    `y ${r.top.toFixed(1)}..${r.bottom.toFixed(1)}`;
  for (const svg of document.querySelectorAll("svg")) {
    const vb = svg.viewBox.baseVal;
    const name = svg.getAttribute("aria-label");
    for (const t of svg.querySelectorAll("text")) {
      const b = t.getBBox();
      const shown = shownText(t);
      if (b.x < vb.x - tol || b.y < vb.y - tol || b.x + b.width > vb.x + vb.width + tol ||
          b.y + b.height > vb.y + vb.height + tol) {
        bad.push(`${name}: "${shown}" at x ${b.x.toFixed(1)}..${(b.x + b.width).toFixed(1)}, ` +
                 `y ${b.y.toFixed(1)}..${(b.y + b.height).toFixed(1)} leaves its viewBox ` +
                 `${vb.width}x${vb.height}`);
      }
      if (/[\u0000-\u001f\u007f-\u009f\ufffd]/.test(shown)) {
        bad.push(`${name}: raw bytes drawn: ${JSON.stringify(shown)}`);
      }
    }
    const r = svg.getBoundingClientRect();
    const p = svg.parentElement.getBoundingClientRect();
    if (r.left < p.left - tol || r.right > p.right + tol) {
      bad.push(`${name}: the chart (${r.left}..${r.right}) leaves its box (${p.left}..${p.right})`);
    }
  }
  for (const cell of document.querySelectorAll("td, th")) {
    if (cell.scrollWidth > cell.clientWidth + 1) {
      bad.push(`cell "${cell.textContent}" overflows its box`);
    }
  }
  for (const cell of document.querySelectorAll("td.l")) {  // lines break after "/" or a space
    const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    let top = null, before = null;
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (let i = 0; i < n.length; i++) {
        const range = document.createRange();
        range.setStart(n, i);
        range.setEnd(n, i + 1);
        const rects = range.getClientRects();
        if (!rects.length) continue;
        if (top !== null && rects[0].top > top + 2 && !/[\/\s]/.test(before)) {
          const next = n.data.slice(i, i + 12);
          bad.push(`"${cell.textContent}" wraps inside a word, before "${next}"`);
        }
        top = rects[0].top;
        before = n.data[i];
      }
    }
  }
  if (document.documentElement.scrollWidth > window.innerWidth) {
    bad.push(`the page (${document.documentElement.scrollWidth} px) is wider than the window`);
  }
  // every piece of text drawn, with its boxes (one per line): HTML text nodes, SVG texts
  const pieces = [];
  const html = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = html.nextNode(); n; n = html.nextNode()) {
    if (!n.data.trim() || n.parentElement.closest("svg, title, style, script")) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    const rects = Array.from(range.getClientRects()).filter((r) => r.width > 0 && r.height > 0);
    pieces.push({el: n.parentElement, text: n.data, rects});
  }
  for (const t of document.querySelectorAll("svg text")) {
    const r = t.getBoundingClientRect();
    if (r.width > 0) pieces.push({el: t, text: shownText(t), rects: [r]});
  }
  const page = document.documentElement.clientWidth;
  const boxes = [];
  for (const piece of pieces) {
    for (const r of piece.rects) {
      boxes.push({piece, r});
      if (r.left < -tol || r.right > page + tol) {
        bad.push(`"${piece.text}" (${where(r)}) is cut by the page (0..${page})`);
      }
      for (let a = piece.el.parentElement; a; a = a.parentElement) {  // boxes that clip
        const style = getComputedStyle(a);
        if (style.overflowX === "visible" && style.overflowY === "visible") continue;
        const c = a.getBoundingClientRect();
        if (r.left < c.left - tol || r.right > c.right + tol ||
            r.top < c.top - tol || r.bottom > c.bottom + tol) {
          bad.push(`"${piece.text}" (${where(r)}) is cut by its <${a.localName}> (${where(c)})`);
        }
      }
    }
  }
  for (const a of document.querySelectorAll("body *")) {  // a box scrolled: text hidden
    const style = getComputedStyle(a);
    if (a.localName !== "svg" && /auto|scroll|hidden/.test(style.overflowX) &&
        a.scrollWidth > a.clientWidth + 1) {
      bad.push(`<${a.localName} class="${a.className}"> holds ${a.scrollWidth} px in ` +
               `${a.clientWidth} px: "${a.textContent.slice(0, 60)}..." is cut`);
    }
  }
  boxes.sort((x, y) => x.r.top - y.r.top);
  for (let i = 0; i < boxes.length; i++) {  // no two pieces of text overlap
    const x = boxes[i];
    for (let j = i + 1; j < boxes.length && boxes[j].r.top < x.r.bottom - 1; j++) {
      const y = boxes[j];
      if (y.piece === x.piece) continue;
      const w = Math.min(x.r.right, y.r.right) - Math.max(x.r.left, y.r.left);
      const h = Math.min(x.r.bottom, y.r.bottom) - Math.max(x.r.top, y.r.top);
      if (w > 1 && h > 1) {
        bad.push(`"${x.piece.text}" (${where(x.r)}) overlaps "${y.piece.text}" (${where(y.r)})`);
      }
    }
  }
  for (const cell of document.querySelectorAll("td, th")) {  // lines a cell wraps over
    const range = document.createRange();
    range.selectNodeContents(cell);
    const tops = [];
    for (const r of range.getClientRects()) {
      if (r.width > 0 && !tops.some((t) => Math.abs(t - r.top) < 3)) tops.push(r.top);
    }
    if (tops.length > MAX_LINES) {
      bad.push(`cell "${cell.textContent}" wraps over ${tops.length} lines`);
    }
  }
  // a label shortened to fit: its whole text in its tooltip (an SVG <title>, a title attribute)
  const full = (el) => el.localName === "text"
    ? (el.querySelector("title") || {}).textContent : el.getAttribute("title");
  const byShown = new Map();
  for (const el of document.querySelectorAll("svg text, [title]")) {
    const whole = full(el);
    if (whole == null) continue;
    const shown = el.localName === "text" ? shownText(el) : el.textContent;
    if (!byShown.has(shown)) byShown.set(shown, new Set());
    byShown.get(shown).add(whole);
  }
  for (const [shown, wholes] of byShown) {
    if (wholes.size > 1) {
      bad.push(`"${shown}" labels ${wholes.size} different texts: ` +
               JSON.stringify(Array.from(wholes)));
    }
  }
  for (const svg of document.querySelectorAll("svg")) {  // one chart's labels: one per thing
    const seen = new Set();
    for (const t of svg.querySelectorAll("text")) {
      if (!t.querySelector("title")) continue;
      const shown = shownText(t);
      if (seen.has(shown)) {
        bad.push(`${svg.getAttribute("aria-label")}: two labels read "${shown}"`);
      }
      seen.add(shown);
    }
  }
  const out = document.createElement("pre");
  out.id = "layout-check";
  out.textContent = JSON.stringify(bad);
  document.body.appendChild(out);
})();
""".replace("__MAX_LINES__", str(MAX_LINES))


def layout_problems(browser: str, page: str, where: Path, width: int = WIDTH) -> list[str]:
    """What is wrong with the layout of ``page`` in a window ``width`` pixels wide (see
    ``_LAYOUT_CHECK``): found by a script run in the page by headless Chromium (``--dump-dom``)."""
    checked = where / "checked.html"
    checked.write_text(page.replace("</body>", f"<script>{_LAYOUT_CHECK}</script></body>"))
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--window-size={width},{HEIGHT}",
            "--dump-dom",
            checked.as_uri(),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    problems: list[str] = json.loads(unescape(found.group(1)))
    return problems


_BROKEN = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:8px">
<table><tr><td style="max-width:90px"><span style="white-space:nowrap">orders-settlement-0</span>
</td><td>12,345</td></tr></table>
<div style="overflow-x:auto;width:200px"><table><tr><td>aaaaaaaaaaaaaaaaaaaa</td>
<td>bbbbbbbbbbbbbbbbbbbb</td></tr></table></div>
<p style="white-space:nowrap;margin-left:1300px">past the window</p>
<table><tr><td style="width:60px;white-space:normal">one two three four five</td></tr></table>
<svg viewBox="0 0 200 40" width="200" height="40">
<text x="0" y="14"><title>key-0001</title>key-0…</text>
<text x="0" y="32"><title>key-0002</title>key-0…</text></svg>
</body></html>"""


def test_the_layout_check_finds_each_kind_of_fault(tmp_path: Path) -> None:
    """The layout check, on a page with one fault of each kind: text over text (a name
    overflowing its cell onto the number beside it), text cut by a scrolling box and by the
    page, a cell of too many lines, two different keys under one label."""
    problems = layout_problems(_browser(), _BROKEN, tmp_path)
    kinds = {
        "over": r'"orders-settlement-0" .* overlaps "12,345"',
        "box": r'"b+" .* is cut by its <div>',
        "scrolled": r"<div .* holds \d+ px in 200 px",
        "page": r'"past the window" .* is cut by the page',
        "lines": r'cell "one two three four five" wraps over [3-9] lines',
        "alike": r'"key-0…" labels 2 different texts',
    }
    found = {k: [p for p in problems if re.search(pattern, p)] for k, pattern in kinds.items()}
    assert all(found.values()), (found, problems)


def _hard_logdir(root: Path) -> Path:
    """Two partitions whose names are long paths, keys long, binary, of control characters and
    in CJK, no headers, and a last time bucket the data covers in part."""
    logdir = root / "var" / "lib" / "kafka" / "data-volume-primary-datacenter-eu-west" / "logdir"
    keys = [
        b"customer-account-settlement-ledger-entry-0000001",
        bytes(range(40)),
        b"\xff\xfe\x00\x01binary\x80\x81" * 3,
        "日本語のキー名前テスト長いキー名前テスト".encode(),
        b"line\nbreak",
        b"short",
    ]
    for p in range(2):
        part = logdir / f"payments-settlement-events-eu-west-1-{p}"
        batches = []
        for b in range(41):
            n = 10 if b < 40 else 2
            recs = [
                Record(
                    b * 10 + i,
                    1_700_000_000_000 + b * 60_000 + i * 1000,
                    keys[(i + b) % len(keys)],
                    b"payload " * (i * b % 40),
                    (),
                )
                for i in range(n)
            ]
            batches.append(
                encode_batch(
                    recs, compression=ZSTD if b % 2 else NONE, partition_leader_epoch=b // 10
                )
            )
        write_partition(part, [(0, batches)])
        (part / "leader-epoch-checkpoint").write_bytes(
            encode_leader_epoch_checkpoint([EpochEntry(e, e * 100) for e in range(4)])
            if p == 0
            else b"junk\n"  # unreadable: the batches' epochs alone
        )
    return logdir


def _inflated(objs: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]], Any]:
    """The stats objects of a big log: counts and sizes in the millions and terabytes."""
    *parts, total = objs
    for o in (total, *parts):
        for name in ("key", "value", "headers", "header_count"):
            for bucket in o["sizes"][name]["buckets"]:
                bucket["count"] *= 31_419
        o["time"]["buckets"] = [c * 31_419 for c in o["time"]["buckets"]]
        for x in o["keys"]["heaviest"]:
            x["records"] = x["records"] * 1_234_567 + 9_999
            x["records_min"] = x["records"] - 123_456_789
    for r in total["what_if"]["codecs"]:
        r["estimated_bytes"] *= 987_654_321
    return total, parts, total["what_if"]


def test_every_label_fits_its_chart_in_chromium(tmp_path: Path) -> None:
    """The report of long partition paths, binary and long keys and counts in the millions,
    laid out by Chromium: no label leaves its chart's viewBox (y-axis maxima, key labels,
    the what-if values were cut), no chart its box, no path wraps inside a word, no key is
    drawn as raw bytes; the report of the same data as written by the command too."""
    browser = _browser()
    logdir = _hard_logdir(tmp_path)
    report = tmp_path / "report.html"
    code, out, err = run(
        "stats", "--format", "jsonl", "--html", str(report), str(logdir), cwd=tmp_path
    )
    assert code == 0, err
    assert layout_problems(browser, report.read_text(), tmp_path) == []
    total, parts, what_if = _inflated(jsonl(out))
    page = render(total, parts, what_if, title=f"klogtool stats: {logdir}", generated="now")
    assert layout_problems(browser, page, tmp_path) == []
    assert "no headers" in page
    assert "0x00010203" in page and "0xfffe0001" in page  # binary keys in hex
    assert "customer-account-settlement" in page and "…" in page  # long ones cut short


REPORT_WIDTH = 1400  # the window issue 37 was screenshotted in
LONG_TOPIC = (
    "payments.settlement.events.processed-by-the-reconciliation-service.primary-datacenter"
    ".eu-west-1.for-the-quarterly-audit-of-merchant-accounts"
)
HEAVY_PREFIX = "customer-account-settlement-ledger-entry-for-merchant-"


def _crowded_logdir(root: Path) -> Path:
    """Two partitions of a topic with a long name (under a deep path), written by 12 producers
    with 19-digit ids, whose 10 heaviest keys share a long prefix and differ at the end (five
    in each partition, beside 1,100 keys seen once: more than 16 counters hold), and whose
    first epoch's batches have no timestamp (-1)."""
    logdir = root / "srv" / "kafka" / "broker-data-volume-primary-datacenter-eu-west" / "logdir"
    for p in range(2):
        part = logdir / f"{LONG_TOPIC}-{p}"
        keys = [b"%s%04d" % (HEAVY_PREFIX.encode(), 5 * p + i) for i in range(5) for _ in range(40)]
        keys += [b"one-off-%d-%d" % (p, i) for i in range(1_100)]
        batches = []
        for b, start in enumerate(range(0, len(keys), 100)):
            ts = -1 if b < 2 else 1_700_000_000_000 + b * 60_000
            recs = [
                Record(i, ts, key, b"value", ())
                for i, key in enumerate(keys[start : start + 100], start)
            ]
            batches.append(
                encode_batch(
                    recs,
                    partition_leader_epoch=b // 4,
                    producer_id=9_223_372_036_854_775_000 + b % 12,
                    producer_epoch=0,
                    base_sequence=start,
                )
            )
        write_partition(part, [(0, batches)])
        (part / "leader-epoch-checkpoint").write_bytes(
            encode_leader_epoch_checkpoint([EpochEntry(e, e * 400) for e in range(4)])
        )
    return logdir


def _client_offsets(n: int) -> list[dict[str, Any]]:
    """Committed offsets of consumers with long group names and client ids, far into their
    partitions (offsets of 11 digits)."""
    return [
        {
            "type": "offset",
            "group": "reconciliation-service-settlement-consumers-eu-west-1",
            "topic": LONG_TOPIC,
            "partition": i % 2,
            "offset": 98_765_432_100 + i,
            "leader_epoch": 3,
            "metadata": "",
            "commit_timestamp": 1_700_000_000_000,
            "expire_timestamp": None,
            "expired": False,
            "pending": i == 0,
            "end_offset": 98_765_432_400,
            "end_source": "replication-offset-checkpoint",
            "lag": 300 - i,
            "committed_timestamp": 1_700_000_000_000,
            "newest_timestamp": 1_700_000_900_000,
            "time_lag_ms": 900_000,
            "member_id": f"member-{i}",
            "client_id": "reconciliation-service-settlement-consumer-eu-west-1-instance-"
            f"{i}-3f2a9c1e-7b4d-4e8a-9f12-0123456789a{i}",
            "client_host": "/10.0.0.1",
        }
        for i in range(n)
    ]


def test_a_crowded_report_lays_out_in_chromium(tmp_path: Path) -> None:
    """Issue 37's report at 1400 px: long partition names were drawn over the numbers, the last
    column hid behind a scrollbar, producer labels were cut, 7 of 10 heaviest keys read alike,
    client ids wrapped over 6-7 lines. Chromium lays out the report of data built to provoke
    each (as the command writes it, and with consumer groups and relative paths) and finds no
    text over text, none cut by its box or the page, no cell of more than MAX_LINES lines, no
    two labels alike."""
    browser = _browser()
    logdir = _crowded_logdir(tmp_path)
    report = tmp_path / "report.html"
    code, out, err = run(
        "stats", "--format", "jsonl", "--html", str(report), str(logdir), cwd=tmp_path
    )
    assert code == 0, err
    *parts, total = jsonl(out)
    assert [len(x["key"]) for x in total["keys"]["heaviest"]] == [len(HEAVY_PREFIX) + 4] * 10
    assert len(total["producers"]["largest"]) == 10
    for o in parts:  # as `klogtool stats logdir` shows them: the partition's name is most of it
        o["path"] = os.path.relpath(o["path"], logdir.parent)
    page = render(
        total,
        parts,
        total["what_if"],
        title=f"klogtool stats: {logdir}",
        generated="now",
        groups=_client_offsets(6),
    )
    problems = {
        "report": layout_problems(browser, report.read_text(), tmp_path, REPORT_WIDTH),
        "with groups": layout_problems(browser, page, tmp_path, REPORT_WIDTH),
    }
    assert problems == {"report": [], "with groups": []}
    # the total's keys are ranges (a key one partition did not count): not "exact counts"
    assert total["keys"]["heaviest_exact"] is False
    assert {x["error"] for x in total["keys"]["heaviest"]} == {1}
    assert "exact counts" not in page and "space-saving estimate" in page
    # the first epoch has no timestamp: none shown, not a date of 1969
    section = page[page.index("<h2>Leader epochs</h2>") :]
    cells = re.findall(r"<td>([^<]*)</td>", section)  # the path cells (class "l") left out
    assert cells[:7] == ["0", "0", "0", "399", "-", "400", "19.0 KiB"], cells[:7]
    assert "1969" not in page


def test_labels_of_different_keys_never_read_alike() -> None:
    """Keys cut to fit keep their start and their end (keys that share a prefix differ there);
    two that still read alike (they differ only in the middle, or are the same first 64 bytes
    of two keys) each get their place among them; the whole key is in the tooltip."""
    middle = ["order-" + "x" * 30 + c + "y" * 30 + "-end" for c in "ab"]
    same = ["z" * 64] * 2
    tails = [f"{HEAVY_PREFIX}{i:04d}" for i in range(3)]
    keys = [*middle, *same, *tails]
    svg = bar_chart(keys, [9, 8, 7, 6, 5, 4, 3], title="t", width=400, mono=True)
    found = re.findall(r'text-anchor="end"[^>]*><title>([^<]*)</title>([^<]*)</text>', svg)
    assert [whole for whole, _ in found] == keys
    shown = [x for _, x in found]
    assert len(set(shown)) == len(keys), shown
    assert [x[-4:] for x in shown] == [" (1)", " (2)", " (1)", " (2)", "0000", "0001", "0002"]
    assert all("…" in x and x.startswith(k[:6]) for x, k in zip(shown, keys, strict=True))


def test_no_headers_is_said_not_drawn() -> None:
    """Records without headers have header sizes of 0: the page says "no headers" instead of
    one full-height bar at 0."""
    from klogtool.log.read.stats import PartitionStats

    st = PartitionStats("p")
    for _ in range(5):
        st.header_sizes.add(0)
        st.header_counts.add(0)
        st.key_sizes.add(3)
        st.value_sizes.add(10)
    st.finish()
    page = render(st.as_obj("total"), [], None, title="t", generated="g")
    card = page.split('aria-label="headers sizes"', 1)[1].split("</svg>", 1)[0]
    assert "no headers" in card and "<rect" not in card


def test_a_partial_time_bucket_is_not_drawn_as_traffic_stopping() -> None:
    """The data ends half way through the last bucket: that bucket is drawn dashed at its
    count scaled to a whole bucket (level with the rest here), and said to be partial; one
    covered less than a quarter is left out rather than drawn as a fall to nothing."""
    counts = [100] * 9 + [50]
    svg = area_chart(0, 1000, counts, title="t", first=0, last=9_499)
    ys = [float(y) for y in re.findall(r'<circle cx="[\d.]+" cy="([\d.]+)"', svg)]
    partial = re.search(r'<circle class="partial" cx="[\d.]+" cy="([\d.]+)"', svg)
    assert partial and float(partial.group(1)) == ys[0], svg  # 50 in half a bucket: 100
    assert "The last bucket is partial (50 records in 50 % of it)" in svg
    svg = area_chart(0, 1000, [100] * 9 + [5], title="t", first=0, last=9_049)
    assert "left out" in svg and 'class="partial"' not in svg
    line = re.search(r'<polyline points="([^"]+)"', svg)
    assert line and len(line.group(1).split()) == 9  # the whole buckets only


def test_the_leader_epochs_section(tmp_path: Path) -> None:
    """Each whole partition's epochs, the checkpoint's start beside the first batch's."""
    logdir = _hard_logdir(tmp_path)
    report = tmp_path / "report.html"
    code, out, err = run("stats", "--format", "jsonl", "--html", str(report), str(logdir))
    assert code == 0, err
    first = jsonl(out)[0]
    assert [(e["epoch"], e["checkpoint_start_offset"], e["start_offset"], e["records"])
            for e in first["epochs"]] == [
        (0, 0, 0, 100), (1, 100, 100, 100), (2, 200, 200, 100), (3, 300, 300, 100),
        (4, None, 400, 2),  # not in the checkpoint
    ]  # fmt: skip
    assert {e["same_start"] for e in jsonl(out)[1]["epochs"]} == {None}  # junk checkpoint
    page = report.read_text()
    section = page[page.index("<h2>Leader epochs</h2>") :]
    cells = re.findall(r"<td>([^<]*)</td>", section)  # the path cell (HTML) left out
    assert cells[:6] == ["0", "0", "0", "99", "2023-11-14 22:13:20.000Z", "100"]
    assert cells[7 * 4 : 7 * 4 + 3] == ["4", "-", "400 ≠"]  # epoch 4: not in the checkpoint


def test_the_consumer_groups_section(tmp_path: Path) -> None:
    """With a __consumer_offsets partition among its inputs the report shows where each group
    stood: the same offsets klogtool groups gives."""
    from test_groups import scenario

    logdir, _ = scenario(tmp_path)
    report = tmp_path / "report.html"
    code, _, err = run("stats", "--html", str(report), str(logdir))
    assert code == 0, err
    page = report.read_text()
    section = page[page.index("<h2>Consumer groups</h2>") : page.index("<h2>Leader epochs</h2>")]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", section)
    assert cells[:9] == ["g1", "t", "0", "30", "35", "5", "4.0s", "client-m1", ""]
    assert "pending" in cells and "expired" in cells
    code, out, _ = run("groups", "--format", "jsonl", str(logdir))
    assert section.count("<tr>") - 1 == sum(o["type"] == "offset" for o in jsonl(out))
    assert layout_problems(_browser(), page, tmp_path) == []  # laid out by Chromium
