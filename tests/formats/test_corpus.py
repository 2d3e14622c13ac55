"""Every record-bearing file of the real-broker corpus scans, verifies and decodes, with the
record counts its MANIFEST.md states; re-encoding reproduces the broker's bytes; the
kafkalite golden files are matched exactly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.paths import CORPUS, needs_corpus
from support.records import careful_records, full_record, norm_record

from klogtool.formats import codecs, legacy, v2
from klogtool.formats.batch import CREATE_TIME, LOG_APPEND_TIME
from klogtool.formats.records import CLEAN, SegmentScanner

pytestmark = needs_corpus

_SECTION = re.compile(r"^## (\S+)/(\S+)\s*$")
_ROW = re.compile(r"^\| `([^`]+)` \| (\d+) \|[^|]*\| (.*) \|\s*$")


def parse_manifest(root: Path) -> dict[Path, tuple[int, str]]:
    """``{path: (size, contents)}`` for every table row under a ``## owner/repo`` section."""
    rows: dict[Path, tuple[int, str]] = {}
    repo = None
    manifest = root / "MANIFEST.md"
    if not manifest.is_file():
        return rows
    for line in manifest.read_text(encoding="utf-8").splitlines():
        m = _SECTION.match(line)
        if m:
            repo = f"{m[1]}__{m[2]}"
            continue
        m = _ROW.match(line)
        if m and repo:
            rows[root / repo / m[1]] = (int(m[2]), m[3])
    return rows


def expected_records(contents: str) -> int:
    if contents.startswith("empty (0-byte) segment"):
        return 0
    m = re.search(r"(\d+) logical messages", contents) or re.search(r"(\d+) records\b", contents)
    assert m, contents
    return int(m[1])


def is_record_file(p: Path) -> bool:
    if p.suffix == ".log":
        return True
    return p.suffix == ".checkpoint" and (p.name[0].isdigit() or p.name == "bootstrap.checkpoint")


MANIFEST = parse_manifest(CORPUS)
RECORD_FILES = sorted(p for p in MANIFEST if is_record_file(p))
IDS = [str(p.relative_to(CORPUS)) for p in RECORD_FILES]


def _magic(p: Path) -> int | None:
    with p.open("rb") as f:
        head = f.read(17)
    return head[16] if len(head) == 17 else None


V2_FILES = [p for p in RECORD_FILES if _magic(p) == 2]
LEGACY_FILES = [p for p in RECORD_FILES if _magic(p) in (0, 1)]


def test_manifest_parsed():
    assert len(MANIFEST) == 413  # MANIFEST.md: "413 files"
    assert all(p.is_file() and p.stat().st_size == size for p, (size, _) in MANIFEST.items())
    assert len(RECORD_FILES) == 100  # 84 .log + 11 snapshots + 5 bootstrap.checkpoint
    assert sum(p.suffix == ".checkpoint" for p in RECORD_FILES) == 16
    assert V2_FILES and LEGACY_FILES


@pytest.mark.parametrize("path", RECORD_FILES, ids=IDS)
def test_corpus_file_scans_and_decodes(path):
    buf = path.read_bytes()
    scanner = SegmentScanner(buf, stop_on_crc=False)
    total = 0
    for batch in scanner:
        assert scanner.crc_valid, batch.position
        assert batch.magic in (0, 1, 2)
        recs = list(batch.records())
        assert len(recs) == batch.count
        if recs:
            assert recs[0].offset == batch.base_offset and recs[-1].offset <= batch.last_offset
            offsets = [r.offset for r in recs]
            assert offsets == sorted(set(offsets))
        if batch.magic < 2:
            assert all(r.crc_valid for r in recs)  # inner CRCs too
        total += len(recs)
    res = scanner.result
    assert res.end == CLEAN and res.error is None
    assert res.valid_bytes == res.stopped_at == len(buf)
    assert total == expected_records(MANIFEST[path][1])


@pytest.mark.parametrize("path", V2_FILES, ids=[str(p.relative_to(CORPUS)) for p in V2_FILES])
def test_corpus_v2_reencode(path):
    kinds = set()
    for batch in SegmentScanner(path.read_bytes()):
        assert isinstance(batch, v2.DefaultBatch)
        original = bytes(batch.data)
        recs = [norm_record(r) for r in batch.records()]
        assert [full_record(r) for r in batch.records()] == careful_records(batch)
        again = v2.reencode(batch)
        if batch.compression == codecs.NONE and batch.timestamp_type == CREATE_TIME:
            assert again == original, batch.position  # byte for byte
            kinds.add("bytes")
            continue
        # LogAppendTime loses per-record deltas (every record reads as maxTimestamp), exactly
        # as Kafka's own rebuild does; compressed batches depend on the compressor's output.
        rebuilt = v2.DefaultBatch(memoryview(again), batch.position)
        assert rebuilt.crc_valid
        assert [norm_record(r) for r in rebuilt.records()] == recs
        for field in (
            "base_offset",
            "last_offset",
            "count",
            "compression",
            "timestamp_type",
            "max_timestamp",
            "partition_leader_epoch",
            "producer_id",
            "producer_epoch",
            "base_sequence",
            "is_transactional",
            "is_control",
            "delete_horizon_ms",
        ):
            assert getattr(rebuilt, field) == getattr(batch, field), field
        if batch.timestamp_type == LOG_APPEND_TIME:
            assert {r[1] for r in recs} <= {batch.max_timestamp}
            kinds.add("log-append-time")
        if batch.compression != codecs.NONE:
            # and the same payload through the codec is byte-stable with our compressor
            assert v2.reencode(rebuilt) == again
            kinds.add(codecs.CODEC_NAMES[batch.compression])
    assert kinds or path.stat().st_size == 0


@pytest.mark.parametrize(
    "path", LEGACY_FILES, ids=[str(p.relative_to(CORPUS)) for p in LEGACY_FILES]
)
def test_corpus_legacy_reencode(path):
    for batch in SegmentScanner(path.read_bytes()):
        assert isinstance(batch, legacy.LegacyBatch)
        recs = list(batch.records())
        if batch.compression == codecs.NONE:
            (r,) = recs
            again = legacy.encode_message(
                r.offset,
                r.key,
                r.value,
                magic=batch.magic,
                timestamp=r.timestamp,
                timestamp_type=batch.timestamp_type,
            )
            assert again == bytes(batch.data), batch.position
        else:
            again = legacy.encode_wrapper(
                recs,
                magic=batch.magic,
                compression=batch.compression,
                timestamp_type=batch.timestamp_type,
                log_append_time=batch.max_timestamp,
            )
            (rebuilt,) = SegmentScanner(again)
            assert rebuilt.last_offset == batch.last_offset
            assert [norm_record(x) for x in rebuilt.records()] == [norm_record(x) for x in recs]


# -- kafkalite golden files -----------------------------------------------------------------------
KAFKALITE = CORPUS / "asayers__kafkalite" / "tests" / "test-data"
_ASCII_NAMES = (
    "NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB "
    "CAN EM SUB ESC FS GS RS US"
).split()
_SIMPLE = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}


def haskell_show(data: bytes) -> str:
    """Haskell's ``show`` of a Char8 ByteString (the golden files' format)."""
    out = ['"']
    for i, c in enumerate(data):
        nxt = data[i + 1 : i + 2]
        if c == 0x22:
            out.append('\\"')
        elif c == 0x5C:
            out.append("\\\\")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        elif c in _SIMPLE:
            out.append(_SIMPLE[c])
        elif c == 0x7F:
            out.append("\\DEL")
        elif c > 0x7F:
            out.append(f"\\{c}" + ("\\&" if nxt and nxt.isdigit() else ""))
        elif c == 14:
            out.append("\\SO" + ("\\&" if nxt == b"H" else ""))
        else:
            out.append("\\" + _ASCII_NAMES[c])
    out.append('"')
    return "".join(out)


def test_haskell_show():
    assert haskell_show(b'a"b\\c\td') == '"a\\"b\\\\c\\td"'
    assert haskell_show(b"\xe9" + b"1\x0eH\x00") == '"\\233\\&1\\SO\\&H\\NUL"'


def golden_lines(topic: str) -> list[str]:
    log = KAFKALITE / "fs-data" / f"{topic}-0" / "00000000000000000000.log"
    return [
        f"{r.offset}: {haskell_show(bytes(r.value))}"
        for batch in SegmentScanner(log.read_bytes())
        for r in batch.records()
    ]


@pytest.mark.parametrize("topic", ["hamlet-none", "hamlet-gzip", "hamlet-snappy"])
def test_hamlet_matches_golden(topic):
    golden = (KAFKALITE / "golden" / "hamlet-none-0").read_text(encoding="ascii")
    assert "\n".join(golden_lines(topic)) + "\n" == golden


def test_numbers_matches_golden():
    golden = (KAFKALITE / "golden" / "numbers-0").read_text(encoding="ascii")
    assert "\n".join(golden_lines("numbers")) + "\n" == golden


def test_hamlet_wrappers_carry_their_last_offset():
    log = KAFKALITE / "fs-data" / "hamlet-gzip-0" / "00000000000000000000.log"
    first = next(iter(SegmentScanner(log.read_bytes())))
    assert first.magic == 0 and first.compression == codecs.GZIP
    recs = list(first.records())
    assert first.last_offset == 253 == recs[-1].offset
    assert first.base_offset == 0 == recs[0].offset
