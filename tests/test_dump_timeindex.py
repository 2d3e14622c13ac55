"""``dump-segments`` of a ``.timeindex``: klogtool's own findings follow the broker's rule (an
entry's offset may be any offset in its batch, as verify accepts), ``--format kafka`` reports
what kafka-dump-log.sh's ``dumpTimeIndex`` reports (DumpLogSegments)."""

from __future__ import annotations

import struct
from pathlib import Path

from support.cli import jsonl, run
from support.paths import CORPUS, needs_corpus

from klogtool.formats.batch import Record
from klogtool.formats.index import OffsetIndexEntry, encode_offset_index
from klogtool.formats.v2 import encode_batch

LOG = "t-0/00000000000000000000.log"
INDEX = "t-0/00000000000000000000.index"
TIMEINDEX = "t-0/00000000000000000000.timeindex"


def _partition(tmp_path: Path, times: list[tuple[int, int]], *, max_ts_2: int | None = None,
               offsets: tuple[tuple[int, int], ...] = ((6, 1), (9, 2))) -> None:  # fmt: skip
    """t-0: batches 0..2, 3..6 and 7..9 (each's max timestamp on a record inside it: 1002 at
    offset 1, 2005 at 4; 3009 at 9, the last, where ``max_ts_2`` may set a header max the
    records do not have); its .index (``offsets``: (offset, batch number) pairs; by default
    the last two batches') and a .timeindex of ``times`` (timestamp, offset)."""
    part = tmp_path / "t-0"
    part.mkdir()
    stamps = [(0, 1000), (1, 1002), (2, 1001), (3, 2000), (4, 2005), (5, 2001), (6, 2002),
              (7, 3000), (8, 3001), (9, 3009)]  # fmt: skip
    records = [Record(o, ts, b"k", b"v") for o, ts in stamps]
    batches = [
        encode_batch(records[0:3], partition_leader_epoch=0),
        encode_batch(records[3:7], partition_leader_epoch=0),
        encode_batch(records[7:10], partition_leader_epoch=0, max_timestamp=max_ts_2),
    ]
    positions = [sum(len(b) for b in batches[:i]) for i in range(3)]
    (part / "00000000000000000000.log").write_bytes(b"".join(batches))
    (part / "00000000000000000000.index").write_bytes(
        encode_offset_index([OffsetIndexEntry(o, positions[b]) for o, b in offsets], 0)
    )
    # packed as they are (encode_time_index refuses timestamps that do not increase)
    (part / "00000000000000000000.timeindex").write_bytes(
        b"".join(struct.pack(">qi", t, o) for t, o in times)
    )


# the time index a broker before KAFKA-16310 (3.8) wrote: each entry at the offset of the
# max-timestamp record, inside its batch
OLD_BROKERS = [(1002, 1), (2005, 4), (3009, 9)]


def test_an_entry_inside_its_batch_is_valid(tmp_path: Path) -> None:
    _partition(tmp_path, OLD_BROKERS)
    code, out, err = run("verify", "--format", "jsonl", "t-0", cwd=tmp_path)
    assert code == 0 and not [o for o in jsonl(out) if o["type"] == "finding"]
    for fmt in ("jsonl", "text"):
        code, out, err = run("dump-segments", "--format", fmt, TIMEINDEX, cwd=tmp_path)
        assert code == 0, err
        assert "timeindex-" not in out + err, fmt
    code, out, _ = run("dump-segments", "--format", "jsonl", TIMEINDEX, cwd=tmp_path)
    entries = [(o["timestamp"], o["offset"]) for o in jsonl(out) if o["type"] == "timeindex_entry"]
    assert entries == OLD_BROKERS


def test_an_entry_past_the_log_is_still_not_found(tmp_path: Path) -> None:
    _partition(tmp_path, [*OLD_BROKERS, (4000, 12)])
    code, out, _ = run("dump-segments", "--format", "jsonl", TIMEINDEX, cwd=tmp_path)
    found = [o for o in jsonl(out) if o["type"] == "finding"]
    assert [(f["code"], f["offset"], f["position"]) for f in found] == [
        ("timeindex-offset-not-found", 12, 36)
    ]
    assert found[0]["log_offset"] == -1 and "past the last offset 9" in found[0]["message"]


def test_the_timestamp_is_checked_against_the_batch_holding_the_offset(tmp_path: Path) -> None:
    # 2004 at offset 4: its batch (3..6) reaches 2005
    _partition(tmp_path, [(1002, 1), (2004, 4), (3009, 9)])
    code, out, _ = run("dump-segments", "--format", "jsonl", TIMEINDEX, cwd=tmp_path)
    found = [o for o in jsonl(out) if o["type"] == "finding"]
    assert [(f["code"], f["index_timestamp"], f["log_timestamp"]) for f in found] == [
        ("timeindex-timestamp-mismatch", 2004, 2005)
    ]


def _kafka(tmp_path: Path, *args: str) -> tuple[list[str], list[str]]:
    code, out, err = run("dump-segments", "--format", "kafka", *args, TIMEINDEX, cwd=tmp_path)
    assert code in (0, 1), err
    return out.splitlines(), err.replace(str(tmp_path.resolve()), "<T>").splitlines()


def test_kafka_format_reports_an_entry_inside_a_batch_as_dump_log_segments_does(
    tmp_path: Path,
) -> None:
    """DumpLogSegments.dumpTimeIndex: the first batch from the offset index's position whose
    last offset is at or after the entry's; another last offset is "not found" with that last
    offset (-1: no such batch), and only the entry of a batch's last offset is checked: its
    timestamp against the max of the batch's record timestamps, and against the previous
    entry's (which every entry sets)."""
    times = [
        (2005, 4),  # inside 3..6: not found, 6
        (1500, 5),  # inside 3..6: not found, 6; not out of order (it is not checked)
        (1800, 6),  # 3..6's last: its records reach 2005; 1800 follows 1500: in order
        (3009, 9),  # 7..9's records reach 3009 (its header says 9999)
        (3009, 9),  # again: out of order
        (5000, 12),  # past the log: not found, -1
    ]
    _partition(tmp_path, times, max_ts_2=9999)
    out, err = _kafka(tmp_path)
    assert out == [f"Dumping {TIMEINDEX}"] + [f"timestamp: {t} offset: {o}" for t, o in times]
    path = "<T>/" + TIMEINDEX
    assert err == [
        f"Found timestamp mismatch in :{path}",
        "  Index timestamp: 1800, log timestamp: 2005",
        f"Found out of order timestamp in :{path}",
        "  Index timestamp: 3009, Previously indexed timestamp: 3009",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 4, found log offset: 6",
        "Indexed offset: 5, found log offset: 6",
        "Indexed offset: 12, found log offset: -1",
    ]
    # --verify-index-only: the same reports, no entry lines
    out, err2 = _kafka(tmp_path, "--verify-index-only")
    assert out == [f"Dumping {TIMEINDEX}"] and err2 == err


def test_kafka_format_old_brokers_time_index(tmp_path: Path) -> None:
    _partition(tmp_path, OLD_BROKERS)
    out, err = _kafka(tmp_path)
    assert err == [
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 1, found log offset: 2",
        "Indexed offset: 4, found log offset: 6",
    ]


def test_kafka_format_reads_from_the_offset_index_position(tmp_path: Path) -> None:
    """The batches are read from where the offset index puts the entry's offset: an index
    entry (3, the third batch's position) sends offset 4 past its batch, to 7..9."""
    _partition(tmp_path, [(2005, 4), (3009, 9)], offsets=((3, 2),))
    out, err = _kafka(tmp_path)
    assert err == [
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 4, found log offset: 9",
    ]
    # without an .index (kafka-dump-log.sh would stop there), the log is read from its start
    (tmp_path / INDEX).unlink()
    out, err = _kafka(tmp_path)
    assert err == [
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 4, found log offset: 6",
    ]


def test_kafka_format_reads_from_an_offset_index_position_inside_a_batch(
    tmp_path: Path,
) -> None:
    """An offset index entry pointing 7 bytes into the second batch: Kafka's reader takes the
    bytes there for an entry (its length: the leader epoch's last byte 0, the magic 2 and two
    bytes of the CRC, 131,072 or more: longer than the log) and finds no batch."""
    _partition(tmp_path, [(2005, 4), (3009, 9)])
    code, out, _ = run("dump-segments", "--format", "jsonl", LOG, cwd=tmp_path)
    second = [o["position"] for o in jsonl(out) if o["type"] == "batch"][1]
    (tmp_path / INDEX).write_bytes(encode_offset_index([OffsetIndexEntry(3, second + 7)], 0))
    out, err = _kafka(tmp_path)
    assert err == [
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 4, found log offset: -1",
        "Indexed offset: 9, found log offset: -1",
    ]


def test_kafka_format_says_when_the_records_of_an_entrys_batch_do_not_decode(
    tmp_path: Path,
) -> None:
    """Their max timestamp is what kafka-dump-log.sh compares: a batch whose compressed records
    are damaged (kafka-dump-log.sh stops with an exception there) is an error on stderr."""
    from klogtool.formats import codecs

    part = tmp_path / "t-0"
    part.mkdir()
    batch = bytearray(encode_batch([Record(o, 1000 + o, b"k", b"v" * 50) for o in range(3)],
                                   compression=codecs.GZIP))  # fmt: skip
    batch[-12:-4] = bytes(8)  # the gzip stream's end (its CRC-32 and size stay)
    (part / "00000000000000000000.log").write_bytes(bytes(batch))
    (part / "00000000000000000000.timeindex").write_bytes(struct.pack(">qi", 1002, 2))
    code, out, err = run("dump-segments", "--format", "kafka", TIMEINDEX, cwd=tmp_path)
    assert code == 1 and out.splitlines() == [f"Dumping {TIMEINDEX}", "timestamp: 1002 offset: 2"]
    assert err.startswith(f"{TIMEINDEX}: time index entry offset 2: cannot decode the records")
    assert "Found timestamp mismatch" not in err
    # klogtool's own check needs the batch's header alone
    code, out, _ = run("dump-segments", "--format", "jsonl", TIMEINDEX, cwd=tmp_path)
    assert code == 0 and not [o for o in jsonl(out) if o["type"] == "finding"]


# -- the real partition (pinterest/tiered-storage's test_topic_a-0) ----------------------------
TOPIC_A = "pinterest__tiered-storage/ts-consumer/src/test/resources/log-files/test_topic_a-0"


@needs_corpus
def test_a_real_partitions_time_indexes_hold_offsets_inside_batches() -> None:
    """Its broker indexed the max-timestamp record's offset: 41 entries inside their batches.
    verify calls the partition valid, and the dump warns of none of them; kafka-dump-log.sh
    lists each with the last offset of its batch."""
    part = CORPUS / TOPIC_A
    files = sorted(str(p) for p in part.glob("*.timeindex"))
    assert len(files) == 40
    code, out, _ = run("verify", "--format", "jsonl", str(part))
    assert code == 0 and not [o for o in jsonl(out) if o["type"] == "finding"]
    code, out, err = run("dump-segments", "--format", "jsonl", *files)
    assert code == 0, err
    objs = jsonl(out)
    assert [o for o in objs if o["type"] == "finding"] == []
    entries = [o["offset"] for o in objs if o["type"] == "timeindex_entry"]
    assert len(entries) == 41
    code, out, _ = run("dump-segments", "--format", "jsonl", str(part))
    batches = [(o["base_offset"], o["last_offset"]) for o in jsonl(out) if o["type"] == "batch"]
    inside = {o: last for o in entries for base, last in batches if base <= o < last}
    assert len(inside) == 41
    code, out, err = run("dump-segments", "--format", "kafka", *files)
    lines = err.splitlines()
    found = [ln for ln in lines if ln.startswith("Indexed offset: ")]
    assert found == [f"Indexed offset: {o}, found log offset: {inside[o]}" for o in sorted(inside)]
    # a block for each of the 40 files, and nothing else: no timestamp mismatch, no disorder
    assert lines.count("The following indexed offsets are not found in the log.") == 40
    assert len(lines) == 40 + 41
