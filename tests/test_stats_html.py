"""``klogtool stats --html`` in a real browser: headless Chromium renders the report to a PNG,
which must have the window's size and be far from blank; the page holds its SVG charts and
escapes what the data says. Skipped without Chromium unless KLOGTOOL_REQUIRE_BROWSER is set."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from support.cli import run
from support.rewrite import write_partition

from klogtool.formats import encode_batch
from klogtool.formats.batch import Record
from klogtool.formats.codecs import ZSTD

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
