"""Real producers' bytes (fixtures/producers/, written by its capture.py through a minimal Kafka
endpoint): every file decodes through klogtool's format API to the records the producer was
given (count and sha256 in manifest.json), with valid CRCs; ``verify --deep`` passes it; and
kafka-python's own reader (``kafka.record.MemoryRecords``) reads the same records.

Under the native engine, which batches the engine decodes itself and which it hands back to
the python engine is recorded (:func:`hand_backs`, ``python tests/formats/test_producers.py``
prints the table), not asserted: the native engine is being taught these shapes (issue 25).
What is asserted is that whatever it decodes, it decodes as the python engine does."""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from klogtool.formats import (
    CODEC_IDS,
    DEFAULT_MAX_BATCH_BYTES,
    Batch,
    SegmentScanner,
    engine,
)

PRODUCERS = Path(__file__).resolve().parents[2] / "fixtures" / "producers"
MANIFEST = PRODUCERS / "manifest.json"

if not MANIFEST.is_file():
    pytest.skip(
        f"{MANIFEST} is missing: the producers' fixtures are committed with the project "
        "(python fixtures/producers/capture.py writes them)",
        allow_module_level=True,
    )

FILES: dict[str, dict[str, Any]] = json.loads(MANIFEST.read_text())["files"]
NAMES = sorted(FILES)

Header = tuple[str, Any]


def _nullable(b: bytes | memoryview | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + bytes(b)


def canonical(records: Iterable[tuple[Any, Any, Iterable[Header]]]) -> tuple[int, str]:
    """``(count, sha256)`` of ``(key, value, headers)`` in the canonical encoding of
    fixtures/producers/README.md: key and value as int32 length + bytes (-1 for null), the
    header count as int32, then each header's UTF-8 name and its value the same way."""
    h = hashlib.sha256()
    n = 0
    for key, value, headers in records:
        hs = list(headers)
        h.update(_nullable(key) + _nullable(value) + struct.pack(">i", len(hs)))
        for name, hvalue in hs:
            h.update(_nullable(name.encode()) + _nullable(hvalue))
        n += 1
    return n, h.hexdigest()


@cache
def data(name: str) -> bytes:
    return (PRODUCERS / name).read_bytes()


def batches(name: str) -> Iterator[Batch]:
    scanner = SegmentScanner(data(name))
    yield from scanner
    assert scanner.result is not None and scanner.result.end == "clean", scanner.result


def test_manifest_lists_every_file_and_stays_small() -> None:
    on_disk = sorted(str(p.relative_to(PRODUCERS)) for p in PRODUCERS.glob("*/*.log"))
    assert on_disk == NAMES
    assert {FILES[n]["client"] for n in NAMES} >= {"kafka-python", "aiokafka", "confluent-kafka"}
    total = sum(p.stat().st_size for p in PRODUCERS.rglob("*") if p.is_file())
    assert total <= 4 << 20, f"{total} bytes under {PRODUCERS}"


@pytest.mark.parametrize("name", NAMES)
def test_records_are_what_the_producer_sent(name: str) -> None:
    entry = FILES[name]
    assert entry["bytes"] == len(data(name))
    codec = CODEC_IDS[entry["codec"]]
    records: list[tuple[Any, Any, Any]] = []
    next_offset = 0
    found = list(batches(name))
    assert len(found) == entry["batches"]
    for batch in found:
        assert batch.magic == 2
        assert batch.crc_valid, f"{name}: CRC of the batch at byte {batch.position}"
        assert batch.compute_crc() == batch.crc
        assert batch.compression == codec
        assert batch.partition_leader_epoch == 0
        assert batch.base_offset == next_offset
        if entry["idempotent"]:
            assert batch.producer_id >= 1000 and batch.producer_epoch == 0
            assert batch.base_sequence == next_offset  # one producer, one partition
        else:
            assert batch.producer_id == -1
        timestamps = []
        for record in batch.records():
            assert record.offset == next_offset
            records.append((record.key, record.value, record.headers))
            timestamps.append(record.timestamp)
            next_offset += 1
        assert next_offset == batch.next_offset
        assert batch.max_timestamp == max(timestamps)  # as a broker leaves it
    assert canonical(records) == (entry["records"], entry["sha256"])


@pytest.mark.parametrize("name", NAMES)
def test_verify_deep_passes(name: str) -> None:
    from support.cli import run

    code, out, err = run("verify", "--deep", "--format", "jsonl", str(PRODUCERS / name))
    assert code == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["type"] == "summary"
    assert (summary["errors"], summary["warnings"]) == (0, 0), out
    assert (summary["batches"], summary["records"]) == (
        FILES[name]["batches"],
        FILES[name]["records"],
    )


@pytest.mark.parametrize("name", NAMES)
def test_kafka_python_reader_agrees(name: str) -> None:
    """kafka-python's reader, an independent implementation, reads the same records (offset,
    timestamp, key, value, headers) as klogtool's format layer, and finds the CRCs valid."""
    from kafka.record import MemoryRecords

    theirs = []
    memory = MemoryRecords(data(name))
    while (batch := memory.next_batch()) is not None:
        assert batch.validate_crc()
        for r in batch:
            theirs.append((r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]))
    ours = [
        (
            r.offset,
            r.timestamp,
            None if r.key is None else bytes(r.key),
            None if r.value is None else bytes(r.value),
            [(k, None if v is None else bytes(v)) for k, v in r.headers],
        )
        for b in batches(name)
        for r in b.records()
    ]
    assert ours == theirs
    assert canonical((k, v, h) for _, _, k, v, h in theirs) == (
        FILES[name]["records"],
        FILES[name]["sha256"],
    )


def _stopped(pos: int, done: int) -> Iterator[Any]:
    """records_v2's ``rest``: it stopped at a record it does not read (none are, here)."""
    return iter(())


def hand_backs(name: str) -> tuple[int, int, int, dict[str, int]]:
    """``(batches, handed back by check_v2, handed back by records_v2, reasons)`` of a file
    under the native engine: the batches ``verify --deep``'s check and the record decoder
    leave to the python engine, and the reasons the engine counted (``engine.engine_stats()``
    where this build has it). A batch ``records_v2`` stops in counts as handed back."""
    stats = getattr(engine, "engine_stats", dict)
    n = checked = decoded = 0
    with engine.using(engine.NATIVE):
        before = stats()
        for batch in batches(name):
            n += 1
            where = f"{name}: byte {batch.position}"
            checked += engine.check_v2(batch.data, DEFAULT_MAX_BATCH_BYTES, where) is None
            rows = engine.records_v2(batch.data, DEFAULT_MAX_BATCH_BYTES, batch.position, _stopped)
            decoded += rows is None or sum(1 for _ in rows) != batch.records_count
        after = stats()
    reasons = {r: c - before.get(r, 0) for r, c in after.items() if c != before.get(r, 0)}
    return n, checked, decoded, reasons


@pytest.mark.parametrize("name", NAMES)
def test_native_engine_decodes_as_python_or_hands_back(name: str, klogtool_engine: str) -> None:
    """Where the native engine decodes a batch itself, its records are the python engine's;
    where it hands the batch back (None) that is recorded, not failed (issue 25's work)."""
    if klogtool_engine != engine.NATIVE:
        pytest.skip("compares the native engine with the python engine: runs under [native]")
    for batch in batches(name):
        rows = engine.records_v2(batch.data, DEFAULT_MAX_BATCH_BYTES, batch.position, _stopped)
        checked = engine.check_v2(batch.data, DEFAULT_MAX_BATCH_BYTES, name)
        with engine.using(engine.PYTHON):
            reference = [
                (r.offset, r.timestamp, r.key, r.value, r.headers, r.sequence, r.attributes)
                for r in batch.records()
            ]
        if rows is not None:
            assert [row[:7] for row in rows] == [
                (
                    o,
                    t,
                    None if k is None else bytes(k),
                    None if v is None else bytes(v),
                    tuple((hk, None if hv is None else bytes(hv)) for hk, hv in h),
                    s,
                    a,
                )
                for o, t, k, v, h, s, a in reference
            ]
        if checked is not None:
            count, increasing, max_timestamp = checked
            assert count == len(reference) and increasing
            assert max_timestamp == max(r[1] for r in reference)


def main() -> int:
    """Print the hand-back table: per file, batches and those the native engine hands back."""
    if not engine.native_available():
        print("the native engine is not built", file=sys.stderr)
        return 1
    print(f"{'file':36} {'codec':6} {'batches':>7} {'check_v2':>8} {'records_v2':>10}  reasons")
    for name in NAMES:
        n, checked, decoded, reasons = hand_backs(name)
        why = ", ".join(f"{r} {c}" for r, c in sorted(reasons.items())) or "-"
        print(f"{name:36} {FILES[name]['codec']:6} {n:7} {checked:8} {decoded:10}  {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
