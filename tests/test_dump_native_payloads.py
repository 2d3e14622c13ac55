"""dump-segments' native renderer writes payloads that are not valid UTF-8 (issue 25).

``--key-decoder/--value-decoder utf8`` shows a payload as Python's ``bytes.decode("utf-8",
"backslashreplace")`` (text, jsonl) or ``"replace"`` (kafka: Kafka's StringDecoder, U+FFFD per
invalid sequence). Where an invalid sequence ends matters to ``replace`` (one U+FFFD each) and
to where decoding resumes: CPython ends it at the Unicode "maximal subpart", and so does the
native renderer. Every such batch is rendered natively, byte for byte as the python renderer
writes it, without a hand-back.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import run
from support.fuzz import fuzz

from klogtool.formats import engine, engine_stats, v2
from klogtool.formats.batch import Record
from klogtool.formats.records import SegmentScanner

needs_native = pytest.mark.skipif(not engine.native_available(), reason="no native engine")

T0 = 1_700_000_000_000

# sequences whose ends decoders disagree on: truncated multi-byte sequences, overlongs,
# surrogates, code points past U+10FFFF, lone continuation bytes, bytes never valid
TRICKY = [
    b"\xe2\x82",
    b"\xe2\x82A",
    b"\xf0\x9f\x98",
    b"\xf0\x9f\x98\xf0\x9f\x98\x80",
    b"\xc0\xaf",
    b"\xe0\x80\xaf",
    b"\xe0\x9f\x80",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80",
    b"\xf8\x88\x80\x80\x80",
    b"\x80\xbf",
    b"\xfe\xff",
    b"\xc2",
    b'a\xc2\x80b\xc2\x9b\x1b[31m\x7f\t\n\r"\\',
    "é😀\u2028\ufffd".encode(),
]

_byte = st.sampled_from(
    [0x00, 0x09, 0x0A, 0x1B, 0x22, 0x5C, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF]
    + [0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF]
)
# bytes around the UTF-8 boundaries (and so mostly invalid), valid text, or anything
_payload = st.one_of(
    st.lists(_byte, max_size=24).map(bytes),
    st.text(max_size=12).map(str.encode),
    st.binary(max_size=24),
    st.sampled_from(TRICKY),
)


def _compare(records: list[Record]) -> Counter:
    stats: Counter = Counter()
    batch = next(iter(SegmentScanner(v2.encode_batch(records, base_offset=records[0].offset))))
    with engine.using(engine.NATIVE):
        fuzz.compare_renderings(batch, stats)
    return stats


@needs_native
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.none() | _payload,
            st.none() | _payload,
            st.lists(st.tuples(st.sampled_from(["h", "é"]), st.none() | _payload), max_size=2),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_invalid_utf8_renders_identically_without_a_handback(rows: list) -> None:
    records = [
        Record(i, T0 + i, key, value, tuple(headers))
        for i, (key, value, headers) in enumerate(rows)
    ]
    before = engine_stats()
    stats = _compare(records)
    assert engine_stats() == before  # nothing handed back
    for r in ("jsonl", "text", "kafka", "jsonl-utf8", "text-utf8", "kafka-utf8"):
        assert stats[f"{r}-agreed"] == 1, stats


@settings(max_examples=2000, deadline=None)
@given(_payload)
def test_python_ends_an_invalid_sequence_at_its_maximal_subpart(data: bytes) -> None:
    """What the native renderer relies on: CPython's decoder takes the longest prefix of a
    valid sequence as one error (one U+FFFD under ``replace``, each of its bytes escaped under
    ``backslashreplace``) and resumes right after it, the Unicode "maximal subpart" rule
    (Rust's ``Utf8Chunks`` ends its invalid parts the same way)."""
    assert data.decode("utf-8", "replace") == _maximal_subparts(data, lambda bad: "\ufffd")
    assert data.decode("utf-8", "backslashreplace") == _maximal_subparts(
        data, lambda bad: "".join(f"\\x{b:02x}" for b in bad)
    )


def _maximal_subparts(data: bytes, replace) -> str:
    """A decoder written from the Unicode standard's table 3-7 (well-formed byte sequences)."""
    out = []
    i = 0
    while i < len(data):
        b = data[i]
        if b < 0x80:
            out.append(chr(b))
            i += 1
            continue
        if 0xC2 <= b <= 0xDF:
            need, lo, hi = 1, 0x80, 0xBF
        elif b == 0xE0:
            need, lo, hi = 2, 0xA0, 0xBF
        elif 0xE1 <= b <= 0xEC or 0xEE <= b <= 0xEF:
            need, lo, hi = 2, 0x80, 0xBF
        elif b == 0xED:
            need, lo, hi = 2, 0x80, 0x9F
        elif b == 0xF0:
            need, lo, hi = 3, 0x90, 0xBF
        elif 0xF1 <= b <= 0xF3:
            need, lo, hi = 3, 0x80, 0xBF
        elif b == 0xF4:
            need, lo, hi = 3, 0x80, 0x8F
        else:
            out.append(replace(data[i : i + 1]))
            i += 1
            continue
        j = i + 1
        for k in range(need):
            if j >= len(data) or not (lo if k == 0 else 0x80) <= data[j] <= (
                hi if k == 0 else 0xBF
            ):
                break
            j += 1
        else:
            out.append(data[i:j].decode("utf-8"))
            i = j
            continue
        out.append(replace(data[i:j]))
        i = j
    return "".join(out)


@pytest.mark.parametrize("fmt", ["text", "jsonl", "kafka"])
def test_dump_of_invalid_utf8_is_the_python_engines(
    tmp_path: Path, klogtool_engine: str, fmt: str
) -> None:
    """The CLI's lines of every tricky payload equal the python engine's, and nothing is
    handed back."""
    records = [Record(i, T0 + i, data, data[::-1], (("h", data),)) for i, data in enumerate(TRICKY)]
    part = tmp_path / "t-0"
    part.mkdir()
    seg = part / "00000000000000000000.log"
    seg.write_bytes(v2.encode_batch(records, base_offset=0))
    before = engine_stats()
    code, out, _ = run("dump-segments", "--print-data", "--format", fmt, str(seg))
    assert code == 0
    assert engine_stats() == before
    with engine.using(engine.PYTHON):
        code, expected, _ = run("dump-segments", "--print-data", "--format", fmt, str(seg))
    assert out == expected
