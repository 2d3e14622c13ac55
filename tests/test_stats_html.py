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
from klogtool.log.read.stats_html import area_chart, render

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


# -- layout: every label inside its chart, checked by the browser's own boxes ------------------
_LAYOUT_CHECK = r"""
(function () {
  const bad = [];
  const tol = 0.5;
  for (const svg of document.querySelectorAll("svg")) {
    const vb = svg.viewBox.baseVal;
    const name = svg.getAttribute("aria-label");
    for (const t of svg.querySelectorAll("text")) {
      const b = t.getBBox();
      const shown = Array.from(t.childNodes)
        .filter((n) => n.nodeType === Node.TEXT_NODE)
        .map((n) => n.data)
        .join("");
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
  const out = document.createElement("pre");
  out.id = "layout-check";
  out.textContent = JSON.stringify(bad);
  document.body.appendChild(out);
})();
"""


def layout_problems(browser: str, page: str, where: Path) -> list[str]:
    """The labels of ``page`` that leave their chart or box, its words broken across lines, raw
    bytes drawn: found by a script run in the page by headless Chromium (``--dump-dom``)."""
    checked = where / "checked.html"
    checked.write_text(page.replace("</body>", f"<script>{_LAYOUT_CHECK}</script></body>"))
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--window-size={WIDTH},{HEIGHT}",
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
