"""Transactions version 2 (KIP-890, Kafka 4.x): the coordinator bumps the producer epoch at
every commit or abort, so each transaction's markers carry its data's epoch + 1, and a
producer whose epoch is exhausted completes its transaction under a new producer id
(``TransactionMetadata.prepareAbortOrCommit`` / ``prepareComplete``). A healthy TV2 producer
is never flagged; a hanging transaction is still found, and named by the coordinator's
record that moved its transactional id to the new producer id.

Data batches are built with kafka-python's record builder; the ``__transaction_state``
record is written here from Kafka's ``TransactionLogValue`` JSON schema (version 1, flexible,
with its tagged fields), never by klogtool's encoder.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from support.cli import jsonl, run
from support.coordinator import Log, commit_key, commit_value, uvarint
from support.extras import needs_pyarrow
from support.records import kafka_python_batch
from support.rewrite import write_partition

from klogtool.formats.batch import Record
from klogtool.formats.payloads.control import ABORT, COMMIT, encode_end_txn_marker
from klogtool.formats.v2 import encode_batch

pytestmark = pytest.mark.usefixtures("no_fsync")

T0 = 1_700_000_000_000
DAY = 86_400_000
NOW = T0 + DAY
MAX_EPOCH = 32767  # Short.MAX_VALUE: the last epoch a marker may carry


def data(offset: int, pid: int, epoch: int, n: int, ts: int) -> bytes:
    rows = [(ts, b"k%d" % i, b"v", []) for i in range(n)]
    batch = kafka_python_batch(offset, 3, rows, producer_id=pid, producer_epoch=epoch,
                               base_sequence=0, transactional=True)  # fmt: skip
    return batch


def marker(offset: int, pid: int, epoch: int, commit: bool, ts: int) -> bytes:
    k, v = encode_end_txn_marker(COMMIT if commit else ABORT, 4)
    return encode_batch(
        [Record(offset, ts, k, v)],
        is_transactional=True,
        is_control=True,
        producer_id=pid,
        producer_epoch=epoch,
        partition_leader_epoch=3,
    )


def txn_index_entry(pid: int, first: int, last: int, lso: int) -> bytes:
    """A .txnindex entry: version int16 0, producer id, first offset, last offset, last
    stable offset (int64s)."""
    return struct.pack(">hqqqq", 0, pid, first, last, lso)


def tv2_partition(root: Path) -> Path:
    """Producer 1000 near the end of its epochs, then 2000 after the roll-over, and 3000:

    ==========  ========  =========================================================
    offsets     producer  what
    ==========  ========  =========================================================
    0-1, 2      1000 ep.  committed: data at epoch 32765, COMMIT at 32766
    3-4         1000      epoch 32766; its COMMIT (at 32767) never reached this
                          partition: hanging (the coordinator completed it as 2000)
    5-6, 7      2000      epoch 0, ABORT at 1
    8, 9        2000      epoch 1, COMMIT at 2
    10          3000      open, written a moment ago: not hanging
    ==========  ========  =========================================================
    """
    part = root / "logdir" / "t-0"
    batches = [
        data(0, 1000, MAX_EPOCH - 2, 2, T0),
        marker(2, 1000, MAX_EPOCH - 1, True, T0 + 1),
        data(3, 1000, MAX_EPOCH - 1, 2, T0 + 2),
        data(5, 2000, 0, 2, T0 + 3),
        marker(7, 2000, 1, False, T0 + 4),
        data(8, 2000, 1, 1, T0 + 5),
        marker(9, 2000, 2, True, T0 + 6),
        data(10, 3000, 5, 1, NOW - 1000),
    ]
    write_partition(part, [(0, batches)], txn_index={0: txn_index_entry(2000, 5, 7, 3)})
    return part


# -- __transaction_state, by TransactionLogValue's schema -----------------------------------------
def transaction_state_record(
    txn_id: str, pid: int, previous: int, epoch: int, status: int
) -> tuple[bytes, bytes]:
    """TransactionLogKey (key version 0: TransactionalId) and TransactionLogValue v1:
    ProducerId, ProducerEpoch, TransactionTimeoutMs, TransactionStatus,
    TransactionPartitions (compact nullable array: none), TransactionLastUpdateTimestampMs,
    TransactionStartTimestampMs, then tagged fields 0 PreviousProducerId, 2
    ClientTransactionVersion."""
    key = struct.pack(">hh", 0, len(txn_id)) + txn_id.encode()
    value = struct.pack(">hqhib", 1, pid, epoch, 60_000, status) + b"\x00"
    value += struct.pack(">qq", T0 + 10, T0 + 2)
    tags = [(0, struct.pack(">q", previous)), (2, struct.pack(">h", 2))]
    value += uvarint(len(tags)) + b"".join(uvarint(t) + uvarint(len(v)) + v for t, v in tags)
    return key, value


COMPLETE_COMMIT = 4  # TransactionState: Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3, ...


def test_a_healthy_tv2_producer_is_not_flagged_and_a_hanging_one_is(tmp_path: Path) -> None:
    part = tv2_partition(tmp_path)
    key, value = transaction_state_record("tx", 2000, 1000, 0, COMPLETE_COMMIT)
    write_partition(
        tmp_path / "logdir" / "__transaction_state-0",
        [(0, [encode_batch([Record(0, T0 + 10, key, value)])])],
    )
    code, out, err = run("transactions", "--now", str(NOW), "--format", "jsonl", str(part.parent))
    assert code == 1, err  # one hanging transaction
    objs = jsonl(out)
    txns = {(o["producer_id"], o["first_offset"]): o for o in objs if o["type"] == "transaction"}
    states = {k: (o["state"], o.get("hanging", False)) for k, o in txns.items()}
    assert states == {
        (1000, 0): ("committed", False),
        (1000, 3): ("open", True),
        (2000, 5): ("aborted", False),
        (2000, 8): ("committed", False),
        (3000, 10): ("open", False),
    }
    findings = [o["code"] for o in objs if o["type"] == "finding"]
    assert findings == ["hanging-transaction"], findings
    hanging = txns[(1000, 3)]
    assert hanging["producer_epoch"] == MAX_EPOCH - 1
    # the coordinator's record of its transactional id names it as the previous producer id
    assert hanging["transactional_id"] == "tx"
    assert hanging["coordinator_state"] == "CompleteCommit"
    assert "--producer-id 1000 --producer-epoch 32766" in hanging["abort_command"]
    (p,) = [o for o in objs if o["type"] == "partition" and o["topic"] == "t"]
    assert p["last_stable_offset"] == 3


def test_verify_and_read_committed_of_a_tv2_partition(tmp_path: Path) -> None:
    part = tv2_partition(tmp_path)
    code, out, err = run("verify", "--deep", "--format", "jsonl", str(part))
    assert code == 0, err
    assert [o for o in jsonl(out) if o["type"] == "finding"] == []
    # what a read_committed consumer reads: committed transactions' data, never the aborted
    # one's (5-6); the open ones (3-4, 10) are not committed
    args = ("find", "--transaction", "committed", "--transaction", "none", "--no-control")
    code, out, err = run(*args, "--format", "jsonl", str(part))
    assert code == 0, err
    assert [o["offset"] for o in jsonl(out) if o["type"] == "record"] == [0, 1, 8]


def test_groups_applies_transactional_commits_at_their_bumped_marker(tmp_path: Path) -> None:
    """A TxnOffsetCommit under TV2: data at epoch e, its COMMIT at e + 1."""
    log = Log()
    log.add([(commit_key("g", "t", 0), commit_value(5, T0))])
    log.batches.append(
        encode_batch(
            [Record(1, T0, commit_key("g", "t", 0), commit_value(9, T0))],
            is_transactional=True,
            producer_id=1000,
            producer_epoch=MAX_EPOCH - 1,
        )
    )
    k, v = encode_end_txn_marker(COMMIT, 0)
    log.batches.append(
        encode_batch(
            [Record(2, T0, k, v)],
            is_transactional=True,
            is_control=True,
            producer_id=1000,
            producer_epoch=MAX_EPOCH,
        )
    )
    write_partition(tmp_path / "logdir" / "__consumer_offsets-0", [(0, log.batches)])
    code, out, err = run("groups", "--format", "jsonl", str(tmp_path / "logdir"))
    assert code == 0, err
    offsets = [(o["offset"], o["pending"]) for o in jsonl(out) if o["type"] == "offset"]
    assert offsets == [(9, False)]


@needs_pyarrow
def test_export_read_committed_of_a_tv2_partition(tmp_path: Path) -> None:
    """export's read_committed rows (--where: committed and non-transactional records, no
    markers) are those a read_committed consumer gets."""
    import json

    part = tv2_partition(tmp_path)
    where = "--transaction committed --transaction none --no-control"
    code, _out, err = run(
        "export", "--to", "jsonl", str(tmp_path / "out"), "--where", where, str(part)
    )
    assert code == 0, err
    rows = [json.loads(x) for f in (tmp_path / "out").rglob("*.json*") for x in f.open()]
    assert sorted(r["offset"] for r in rows) == [0, 1, 8]
