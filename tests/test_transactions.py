"""``klogtool transactions``: generated transactional partitions with known answers.

Every partition here is written by the test with klogtool's own encoders (v2 batches, END_TXN
markers, .txnindex, producer snapshots, __transaction_state records), so the expected
transactions, findings and last stable offsets are known by construction.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest
from support.cli import ERROR_LINE, jsonl, run

from klogtool.formats.batch import Record
from klogtool.formats.checkpoint import EpochEntry, encode_leader_epoch_checkpoint
from klogtool.formats.index import AbortedTxn, encode_txn_index
from klogtool.formats.payloads.control import ABORT, COMMIT, encode_end_txn_marker
from klogtool.formats.payloads.schema import encode
from klogtool.formats.payloads.transaction_state import TRANSACTION_LOG_VALUE
from klogtool.formats.snapshot import ProducerEntry, encode_snapshot
from klogtool.formats.v2 import encode_batch
from klogtool.log.context import ReadContext
from klogtool.log.read.transactions import (
    TransactionScanner,
    abort_command,
    format_duration,
    parse_duration,
)

T0 = 1_700_000_000_000
MINUTE = 60_000


def name(base: int, suffix: str) -> str:
    return f"{base:020d}{suffix}"


def data(pid: int, epoch: int, first: int, count: int, ts: int, *, txn: bool = True) -> bytes:
    records = [
        Record(o, ts, f"k{o}".encode(), f"v{o}".encode()) for o in range(first, first + count)
    ]
    return encode_batch(
        records,
        is_transactional=txn,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=0,
    )


def empty_data(pid: int, epoch: int, offset: int, ts: int) -> bytes:
    """A transactional data batch with no records left (as the cleaner leaves one)."""
    return encode_batch(
        [],
        base_offset=offset,
        last_offset_delta=0,
        is_transactional=True,
        producer_id=pid,
        producer_epoch=epoch,
        base_timestamp=-1,
        max_timestamp=ts,
    )


def marker(pid: int, epoch: int, offset: int, kind: int, coordinator_epoch: int, ts: int) -> bytes:
    key, value = encode_end_txn_marker(kind, coordinator_epoch)
    return encode_batch(
        [Record(offset, ts, key, value)],
        is_transactional=True,
        is_control=True,
        producer_id=pid,
        producer_epoch=epoch,
    )


def write_partition(
    d: Path,
    segments: dict[int, list[bytes]],
    txn_index: dict[int, list[AbortedTxn]] | None = None,
    snapshots: dict[int, list[ProducerEntry]] | None = None,
) -> Path:
    d.mkdir(parents=True)
    for base, batches in segments.items():
        (d / name(base, ".log")).write_bytes(b"".join(batches))
    for base, entries in (txn_index or {}).items():
        (d / name(base, ".txnindex")).write_bytes(encode_txn_index(entries))
    for offset, entries in (snapshots or {}).items():
        (d / name(offset, ".snapshot")).write_bytes(encode_snapshot(entries))
    return d


# ---------------------------------------------------------------------------------------------
# The main scenario: committed, aborted, interleaved producers, an empty transaction, a marker
# without data, a missing .txnindex entry and a transaction left open.
#
# segment 0:  0-1 P1 data | 2-3 P2 data | 4 COMMIT P1 | 5-6 P3 data | 7 ABORT P2 (LSO 5: P3 open)
#             8 COMMIT P4 without data | 9 P5 empty batch | 10 COMMIT P5 | .txnindex: P2 entry
# segment 11: 11-12 P1 data | 13 ABORT P1 (LSO 5; NOT in the .txnindex) | 14 idempotent P6
# P3 (5-6) stays open: the last stable offset is 5, the log end offset 15.

P1, P2, P3, P4, P5, P6 = 100, 200, 300, 400, 500, 600


def orders(root: Path) -> Path:
    seg0 = [
        data(P1, 0, 0, 2, T0),
        data(P2, 3, 2, 2, T0 + 100),
        marker(P1, 0, 4, COMMIT, 5, T0 + 400),
        data(P3, 1, 5, 2, T0 + 500),
        marker(P2, 3, 7, ABORT, 5, T0 + 700),
        marker(P4, 0, 8, COMMIT, 5, T0 + 800),
        empty_data(P5, 0, 9, T0 + 900),
        marker(P5, 0, 10, COMMIT, 5, T0 + 1000),
    ]
    seg11 = [
        data(P1, 0, 11, 2, T0 + 1100),
        marker(P1, 0, 13, ABORT, 6, T0 + 1300),
        data(P6, 0, 14, 1, T0 + 1400, txn=False),
    ]
    return write_partition(
        root / "orders-0",
        {0: seg0, 11: seg11},
        txn_index={0: [AbortedTxn(0, P2, 2, 7, 5)]},
    )


def scan(paths: list[Path], now: int = T0 + 20 * MINUTE, older: int = 15 * MINUTE) -> list[dict]:
    scanner = TransactionScanner(now_ms=now, older_than_ms=older, ctx=ReadContext.of())
    return list(scanner.scan([str(p) for p in paths]))


def of(objs: list[dict], kind: str) -> list[dict]:
    return [o for o in objs if o["type"] == kind]


def test_known_answers(tmp_path: Path) -> None:
    objs = scan([orders(tmp_path)])
    txns = [
        (t["producer_id"], t["producer_epoch"], t["first_offset"], t["last_offset"], t["state"])
        for t in of(objs, "transaction")
    ]
    assert txns == [
        (P1, 0, 0, 4, "committed"),
        (P2, 3, 2, 7, "aborted"),
        (P5, 0, 9, 10, "committed"),
        (P1, 0, 11, 13, "aborted"),
        (P3, 1, 5, 6, "open"),
    ]
    by_first = {t["first_offset"]: t for t in of(objs, "transaction")}
    assert by_first[0]["records"] == 2 and by_first[0]["batches"] == 1
    assert by_first[0]["duration_ms"] == 400 and by_first[0]["coordinator_epoch"] == 5
    assert by_first[0]["marker_offset"] == 4 and by_first[0]["end_timestamp"] == T0 + 400
    assert by_first[9]["records"] == 0
    assert by_first[11]["coordinator_epoch"] == 6
    open_txn = by_first[5]
    assert open_txn["marker_offset"] is None and open_txn["end_timestamp"] is None
    assert open_txn["age_ms"] == 20 * MINUTE - 500 and open_txn["hanging"] is True
    assert open_txn["coordinator_epoch"] is None
    assert open_txn["coordinator_epoch_source"] == "unknown"
    assert open_txn["abort_command"] == (
        "kafka-transactions.sh --bootstrap-server <bootstrap-server> abort --topic orders "
        "--partition 0 --producer-id 300 --producer-epoch 1 --coordinator-epoch "
        "<coordinator-epoch>"
    )

    found = {(f["severity"], f["code"], f["offset"]) for f in of(objs, "finding")}
    assert found == {
        ("warning", "marker-without-data", 8),
        ("warning", "empty-transaction", 9),
        ("error", "txnindex-missing-abort", 13),
        ("warning", "hanging-transaction", 5),
    }
    missing = next(f for f in of(objs, "finding") if f["code"] == "txnindex-missing-abort")
    assert (missing["first_offset"], missing["last_offset"], missing["last_stable_offset"]) == (
        11,
        13,
        5,
    )
    assert missing["path"].endswith(name(11, ".log"))  # no .txnindex at all for segment 11

    (part,) = of(objs, "partition")
    assert part["topic"] == "orders" and part["partition"] == 0
    assert (part["log_start_offset"], part["log_end_offset"], part["last_stable_offset"]) == (
        0,
        15,
        5,
    )
    assert (part["committed"], part["aborted"], part["open"], part["hanging"]) == (2, 2, 1, 1)
    summary = objs[-1]
    assert summary["type"] == "summary"
    assert (summary["transactions"], summary["errors"], summary["warnings"]) == (5, 1, 3)


def test_open_but_not_hanging(tmp_path: Path) -> None:
    objs = scan([orders(tmp_path)], now=T0 + 2 * MINUTE)
    (open_txn,) = [t for t in of(objs, "transaction") if t["state"] == "open"]
    assert open_txn["hanging"] is False and "abort_command" not in open_txn
    assert "hanging-transaction" not in {f["code"] for f in of(objs, "finding")}
    assert of(objs, "partition")[0]["last_stable_offset"] == 5  # still held back


def test_all_committed_partition_has_lso_at_log_end(tmp_path: Path) -> None:
    d = write_partition(
        tmp_path / "t-3",
        {
            0: [
                data(1, 0, 0, 3, T0),
                marker(1, 0, 3, COMMIT, 0, T0 + 1),
                data(2, 0, 4, 1, T0, txn=False),
            ]
        },
    )
    objs = scan([d])
    assert not of(objs, "finding")
    (part,) = of(objs, "partition")
    assert part["last_stable_offset"] == part["log_end_offset"] == 5


def test_txnindex_mismatch_and_stray_entry(tmp_path: Path) -> None:
    d = write_partition(
        tmp_path / "t-0",
        {
            0: [
                data(7, 0, 0, 2, T0),
                data(8, 0, 2, 1, T0),
                marker(7, 0, 3, ABORT, 1, T0 + 5),  # LSO at the abort: 2 (producer 8 open)
                marker(8, 0, 4, COMMIT, 1, T0 + 6),
            ]
        },
        txn_index={0: [AbortedTxn(0, 7, 0, 3, 4), AbortedTxn(0, 9, 1, 4, 5)]},
    )
    found = {(f["code"], f["offset"], f["position"]) for f in of(scan([d]), "finding")}
    assert found == {("txnindex-mismatch", 3, 0), ("txnindex-marker-not-found", 4, 34)}


def test_interleaved_producers_and_segments(tmp_path: Path) -> None:
    """Three producers interleaving across two segments; the transaction of producer 2 starts
    in the first segment and aborts in the second, where its .txnindex entry belongs."""
    d = write_partition(
        tmp_path / "t-1",
        {
            0: [data(1, 0, 0, 1, T0), data(2, 0, 1, 1, T0), data(3, 0, 2, 1, T0)],
            3: [
                data(1, 0, 3, 1, T0),
                marker(1, 0, 4, COMMIT, 2, T0 + 10),
                data(2, 0, 5, 2, T0),
                marker(2, 0, 7, ABORT, 2, T0 + 20),  # producer 3 (first 2) still open: LSO 2
                marker(3, 0, 8, COMMIT, 2, T0 + 30),
            ],
        },
        txn_index={3: [AbortedTxn(0, 2, 1, 7, 2)]},
    )
    objs = scan([d])
    assert [
        (t["producer_id"], t["first_offset"], t["last_offset"], t["records"])
        for t in of(objs, "transaction")
    ] == [
        (1, 0, 4, 2),
        (2, 1, 7, 3),
        (3, 2, 8, 1),
    ]
    assert not of(objs, "finding")
    assert of(objs, "partition")[0]["last_stable_offset"] == 9


def test_coordinator_epoch_sources(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    # a: producer 10 committed once (marker epoch 4), then hangs -> "marker"
    write_partition(
        logdir / "a-0",
        {0: [data(10, 2, 0, 1, T0), marker(10, 2, 1, COMMIT, 4, T0), data(10, 2, 2, 1, T0)]},
    )
    # b: producer 20 hangs; the snapshot says coordinator epoch 8 -> "producer-snapshot"
    write_partition(
        logdir / "b-0",
        {0: [data(20, 1, 0, 1, T0)]},
        snapshots={1: [ProducerEntry(20, 1, 0, 0, 0, T0, 8, 0)]},
    )
    # c: producer 30 hangs; only __transaction_state knows it -> "transaction-state"
    write_partition(logdir / "c-0", {0: [data(30, 5, 0, 1, T0)]})
    # d: producer 40 hangs, nobody knows its coordinator epoch -> "unknown"
    write_partition(logdir / "d-0", {0: [data(40, 0, 0, 1, T0)]})
    # __transaction_state-7 at leader epoch 11: transactional id "app-30" -> producer 30
    value = struct.pack(">h", 0) + encode(
        TRANSACTION_LOG_VALUE,
        {
            "producerId": 30,
            "producerEpoch": 5,
            "transactionTimeoutMs": 60000,
            "transactionStatus": 1,
            "transactionPartitions": [{"topic": "c", "partitionIds": [0]}],
            "transactionLastUpdateTimestampMs": T0,
            "transactionStartTimestampMs": T0,
        },
        0,
    )
    key = struct.pack(">hh", 0, 6) + b"app-30"
    ts_dir = write_partition(
        logdir / "__transaction_state-7",
        {0: [encode_batch([Record(0, T0, key, value)], partition_leader_epoch=11)]},
    )
    (ts_dir / "leader-epoch-checkpoint").write_bytes(
        encode_leader_epoch_checkpoint([EpochEntry(11, 0)])
    )
    objs = scan([logdir])
    hanging = {t["topic"]: t for t in of(objs, "transaction") if t.get("hanging")}
    assert {
        k: (v["coordinator_epoch"], v["coordinator_epoch_source"]) for k, v in hanging.items()
    } == {
        "a": (4, "marker"),
        "b": (8, "producer-snapshot"),
        "c": (11, "transaction-state"),
        "d": (None, "unknown"),
    }
    assert hanging["c"]["transactional_id"] == "app-30"
    assert hanging["c"]["coordinator_state"] == "Ongoing"
    assert hanging["c"]["abort_command"].endswith(
        "--topic c --partition 0 --producer-id 30 --producer-epoch 5 --coordinator-epoch 11"
    )
    assert of(objs, "summary")[0]["partitions"] == 5


def test_helpers() -> None:
    assert parse_duration("15m") == 900_000
    assert parse_duration("900000") == parse_duration("900000ms") == 900_000
    assert parse_duration("1.5h") == 5_400_000 and parse_duration("2d") == 172_800_000
    with pytest.raises(ValueError):
        parse_duration("soon")
    assert [format_duration(v) for v in (850, 12_300, 245_000, 7_380_000, 273_600_000)] == [
        "850ms",
        "12.3s",
        "4m05s",
        "2h03m",
        "3d04h",
    ]
    assert abort_command("t", 1, 2, 3, 4, "b:9092") == (
        "kafka-transactions.sh --bootstrap-server b:9092 abort --topic t --partition 1 "
        "--producer-id 2 --producer-epoch 3 --coordinator-epoch 4"
    )


def test_fixture_txn_partition() -> None:
    """fixtures/logs/logdir/txn-0 (documented in fixtures/README.md): 2001 aborts 4..8 with
    LSO 2 in the .txnindex, 2000 commits 2..10; nothing is wrong."""
    from support.paths import LOGDIR

    objs = scan([LOGDIR / "txn-0"])
    assert [
        (t["producer_id"], t["first_offset"], t["last_offset"], t["state"])
        for t in of(objs, "transaction")
    ] == [
        (2001, 4, 8, "aborted"),
        (2000, 2, 10, "committed"),
    ]
    assert not of(objs, "finding")


# ---------------------------------------------------------------------------------------------
# CLI


NOW = str(T0 + 20 * MINUTE)


def test_cli_text(tmp_path: Path) -> None:
    orders(tmp_path)
    code, out, err = run("transactions", "orders-0", "--now", NOW, cwd=tmp_path)
    assert code == 1, err  # a hanging transaction
    assert "orders-0: 5 transactions (2 committed, 2 aborted, 1 open)" in out
    assert "last stable offset 5 (held back by 10 offsets)" in out
    assert "HANGING" in out and "committed" in out and "aborted" in out
    assert "error: txnindex-missing-abort:" in out
    assert "To abort the hanging transactions:" in out
    assert (
        "  kafka-transactions.sh --bootstrap-server <bootstrap-server> abort --topic orders "
        "--partition 0 --producer-id 300 --producer-epoch 1 --coordinator-epoch "
        "<coordinator-epoch>"
    ) in out
    assert "describe-producers --topic orders --partition 0 shows it" in out
    assert out.rstrip().splitlines()[-1].startswith("klogtool transactions: HANGING TRANSACTIONS")
    # only the aborted ones are listed, but the abort command of the hanging one is still shown
    code, out, _ = run("transactions", "orders-0", "--now", NOW, "--state", "aborted", cwd=tmp_path)
    # the table's rows (plain text when piped): producer epoch first last state ...
    rows = [line for line in out.splitlines() if re.match(r"\d+ +\d+ +\d+ +\d+ +[a-z]+ ", line)]
    assert code == 1 and len(rows) == 2 and all("aborted" in r for r in rows)
    assert "--producer-id 300 --producer-epoch 1" in out


def test_cli_jsonl_and_state_filter(tmp_path: Path) -> None:
    orders(tmp_path)
    code, out, _ = run(
        "transactions",
        "orders-0",
        "--now",
        NOW,
        "--format",
        "jsonl",
        "--state",
        "aborted",
        "--bootstrap-server",
        "kafka:9092",
        cwd=tmp_path,
    )
    assert code == 1
    objs = jsonl(out)
    assert [t["first_offset"] for t in of(objs, "transaction")] == [2, 11]
    hanging = next(f for f in of(objs, "finding") if f["code"] == "hanging-transaction")
    assert hanging["producer_id"] == P3
    assert objs[-1]["type"] == "summary" and objs[-1]["hanging"] == 1
    code, out, _ = run(
        "transactions",
        "orders-0",
        "--now",
        NOW,
        "--format",
        "json",
        "--state",
        "hanging",
        "--bootstrap-server",
        "kafka:9092",
        cwd=tmp_path,
    )
    (t,) = of(json.loads(out), "transaction")
    assert t["abort_command"].startswith("kafka-transactions.sh --bootstrap-server kafka:9092 ")


def test_cli_exit_codes(tmp_path: Path) -> None:
    orders(tmp_path)
    # --now as ISO-8601, early enough that P3 is not hanging: only the txnindex error remains
    code, out, _ = run(
        "transactions",
        "orders-0",
        "--now",
        "2023-11-14T22:15:00Z",
        "--format",
        "jsonl",
        cwd=tmp_path,
    )
    assert code == 1 and {f["code"] for f in of(jsonl(out), "finding")} >= {
        "txnindex-missing-abort"
    }
    write_partition(tmp_path / "ok-0", {0: [data(1, 0, 0, 1, T0), marker(1, 0, 1, COMMIT, 0, T0)]})
    code, out, _ = run("transactions", "ok-0", "--now", NOW, cwd=tmp_path)
    assert code == 0 and "no hanging transactions" in out
    # --older-than longer than the open transaction's age: not hanging
    write_partition(tmp_path / "slow-0", {0: [data(1, 0, 0, 1, T0)]})
    code, _, _ = run("transactions", "slow-0", "--now", NOW, "--older-than", "1h", cwd=tmp_path)
    assert code == 0
    code, _, _ = run("transactions", "slow-0", "--now", NOW, "--older-than", "10m", cwd=tmp_path)
    assert code == 1
    # usage errors
    assert run("transactions", "ok-0", "--older-than", "soon", cwd=tmp_path)[0] == 2
    assert run("transactions", "ok-0", "--now", "yesterday", cwd=tmp_path)[0] == 2
    # unreadable inputs: one line, exit 3
    for args in (["missing-0"], ["ok-0/" + name(0, ".index")]):
        (tmp_path / "ok-0" / name(0, ".index")).write_bytes(b"")
        code, out, err = run("transactions", *args, cwd=tmp_path)
        assert code == 3 and out == ""
        (line,) = err.strip().splitlines()
        assert __import__("re").match(ERROR_LINE, line), line
    # a file that is not a segment at all: exit 3, named alone or inside a partition, as in
    # every command (inside a partition it was an error finding, exit 1)
    (tmp_path / "bad.log").write_bytes(b"\x00" * 16 + b"\x07" + b"x" * 100)
    code, out, err = run("transactions", "bad.log", cwd=tmp_path)
    assert (code, out) == (3, "") and "not a Kafka log segment" in err and "(not-a-log)" in err
    write_partition(tmp_path / "bad-0", {0: [b"\x00" * 16 + b"\x07" + b"x" * 100]})
    code, _out, err = run("transactions", "bad-0", "--format", "jsonl", cwd=tmp_path)
    assert code == 3 and "(not-a-log)" in err
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("x")
    assert run("transactions", "junk", cwd=tmp_path)[0] == 3


def test_cli_single_segment_file(tmp_path: Path) -> None:
    orders(tmp_path)
    code, out, _ = run(
        "transactions",
        "orders-0/" + name(0, ".log"),
        "--now",
        NOW,
        "--format",
        "jsonl",
        cwd=tmp_path,
    )
    objs = jsonl(out)
    assert [t["first_offset"] for t in of(objs, "transaction")] == [0, 2, 9, 5]
    assert of(objs, "partition")[0]["last_stable_offset"] == 5
    assert code == 1


def test_empty_control_batch_does_not_end_a_transaction(tmp_path: Path) -> None:
    """The cleaner leaves a 61-byte empty control batch once a marker's transaction is gone;
    like the broker's producer state, the scan ignores it (docs/kafka-rules.md: Compaction)."""
    empty_control = encode_batch(
        [],
        base_offset=1,
        last_offset_delta=0,
        is_transactional=True,
        is_control=True,
        producer_id=1,
        producer_epoch=0,
        base_timestamp=-1,
        max_timestamp=T0,
    )
    d = write_partition(
        tmp_path / "c-0",
        {0: [data(1, 0, 0, 1, T0), empty_control, marker(1, 0, 2, COMMIT, 0, T0 + 5)]},
    )
    objs = scan([d])
    assert [(t["first_offset"], t["last_offset"], t["state"]) for t in of(objs, "transaction")] == [
        (0, 2, "committed")
    ]
    assert not of(objs, "finding")
