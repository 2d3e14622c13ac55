"""``klogtool describe``: the offline kafka-log-dirs.sh --describe (issue 10)."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.cli import jsonl, run, run_on_terminal
from support.paths import CORPUS, CORRUPT, LOGS, needs_corpus

from klogtool.log.read.describe import describe


def test_a_log_dir_gives_one_line_per_partition() -> None:
    code, out, err = run("describe", "--format", "jsonl", "logdir")
    assert code == 0, err
    parts = {o["path"]: o for o in jsonl(out)}
    assert len(parts) == 12
    v2 = parts["logdir/v2-none-0"]
    assert (v2["topic"], v2["partition"], v2["segments"]) == ("v2-none", 0, 2)
    assert (v2["log_start_offset"], v2["log_end_offset"]) == (0, 27)
    assert v2["newest_timestamp"] == 1700000026000 and v2["timestamp_source"] == "timeindex"
    assert v2["indexes"] == "ok" and v2["log_end_clean"] is True
    assert v2["size"] > v2["log_bytes"] > 0


def test_damage_shows() -> None:
    (torn,) = describe([str(CORRUPT / "torn-tail-0")])
    assert torn.log_end_clean is False
    (missing,) = describe([str(CORRUPT / "missing-index-0")])
    assert missing.indexes == "1 missing"


def test_an_index_failing_the_brokers_sanity_check_is_bad(tmp_path: Path) -> None:
    part = tmp_path / "v2-none-0"
    shutil.copytree(LOGS / "logdir" / "v2-none-0", part)
    (part / "00000000000000000000.index").write_bytes(b"\0" * 12)  # not a multiple of 8
    (summary,) = describe([str(part)])
    assert summary.indexes == "1 bad"


def test_text_is_a_table_and_a_directory_of_log_dirs_works(tmp_path: Path) -> None:
    for d in ("data1", "data2"):
        shutil.copytree(LOGS / "logdir", tmp_path / "kafka" / d)
    code, out, err = run("describe", str(tmp_path / "kafka"), cwd=tmp_path)
    assert code == 0, err
    assert out.startswith("klogtool describe: 24 partitions")
    # offsets 0 to 26 (inclusive, as every a..b klogtool prints), the next one to write 27
    assert "data2/v2-none-0" in out and "0..26 (log end 27)" in out and "0..27" not in out


def test_offset_ranges_are_inclusive_with_the_log_end_said() -> None:
    from klogtool.log.labels import log_offsets

    assert log_offsets(0, 200) == "0..199 (log end 200)"
    assert log_offsets(5, 6) == "5..5 (log end 6)"
    assert log_offsets(200, 200) == "empty (log end 200)"
    assert log_offsets(0, 12345, commas=True) == "0..12,344 (log end 12,345)"
    code, out, _ = run("describe", "logdir/txn-0")
    assert code == 0 and "0..14 (log end 15)" in out


def test_nothing_to_describe_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, _out, err = run("describe", str(tmp_path / "empty"), cwd=tmp_path)
    assert code == 3 and err.strip().endswith("(not-a-log-dir)")


@needs_corpus
def test_every_real_log_dir_describes() -> None:
    roots = sorted({p.parent.parent for p in CORPUS.rglob("*.log")})
    for root in roots:
        code, out, err = run("describe", "--format", "jsonl", str(root))
        assert code == 0, (root, err)
        assert all(o["log_end_offset"] >= o["log_start_offset"] for o in jsonl(out))


def test_long_partition_names_wrap_whole_at_80_columns(tmp_path: Path) -> None:
    """On an 80-column terminal the partition column was cut to ``kafka-logs/anoth…``: the
    name folds onto further lines instead, whole. Fails before the change."""
    names = ["another-really-quite-long-topic-name-for-orders-12", "transactions-with-a-long-0"]
    for name in names:
        shutil.copytree(LOGS / "logdir" / "v2-none-0", tmp_path / "kafka-logs" / name)
    code, out, _err, rows = run_on_terminal("describe", "kafka-logs", cwd=tmp_path)
    assert code == 0
    assert all(len(row) <= 80 for row in rows), rows
    assert "…" not in out
    for name in names:
        assert f"kafka-logs/{name}" in column(rows, 1)
    assert "1700000026000(2023-11-14T22:13:46.000Z)" in column(rows, 5)


def column(rows: list[str], k: int) -> str:
    """The text of a boxed table's column ``k`` (1 is the first), row by row, joined."""
    return "".join(r.split("│")[k].strip() for r in rows if r.startswith("│"))


def test_compact_and_diff_say_the_log_range_alike(tmp_path: Path) -> None:
    part = tmp_path / "logdir" / "__transaction_state-0"
    shutil.copytree(LOGS / "logdir" / "__transaction_state-0", part)
    code, out, err = run("compact", "--assume-defaults", "--dry-run", str(part), cwd=tmp_path)
    assert code == 0, err
    assert "; log 0..4 (log end 5), now " in out  # was 0..5
    code, out, _ = run("diff", str(part), str(part), cwd=tmp_path)
    assert "  offsets 0..4 (log end 5)  " in out


def test_epochs_agree_with_kafka_pythons_reading_of_every_batch(tmp_path: Path) -> None:
    """describe --epochs against a reference: each batch read by kafka-python (an independent
    decoder), its epoch from the header bytes, runs cut where the epoch changes."""
    import struct

    from kafka.record.default_records import DefaultRecordBatch
    from support.rewrite import write_partition

    from klogtool.formats.batch import Record
    from klogtool.formats.checkpoint import EpochEntry, encode_leader_epoch_checkpoint
    from klogtool.formats.v2 import encode_batch

    part = tmp_path / "t-0"
    epochs = [0, 0, 1, 1, 1, 4, 4, 6]  # epochs 2, 3 and 5 wrote nothing
    raws, offset = [], 0
    for b, e in enumerate(epochs):  # b + 1 records each: offsets 0, 1-2, 3-5, 6-9, 10-14, ...
        recs = [
            Record(o, 1_700_000_000_000 + o, b"k", b"v" * o) for o in range(offset, offset + b + 1)
        ]
        raws.append(encode_batch(recs, partition_leader_epoch=e))
        offset += b + 1
    write_partition(part, [(0, raws[:4]), (10, raws[4:])])
    ckpt = [EpochEntry(0, 0), EpochEntry(1, 6), EpochEntry(2, 14), EpochEntry(4, 16)]
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint(ckpt))
    want: list[list[int]] = []  # [epoch, start, last, batches, records, bytes]
    for raw in raws:
        b = DefaultRecordBatch(raw)
        epoch = struct.unpack_from(">i", raw, 12)[0]
        offsets = [r.offset for r in b]
        if want and want[-1][0] == epoch:
            want[-1][2:] = [offsets[-1], want[-1][3] + 1, want[-1][4] + len(offsets),
                            want[-1][5] + len(raw)]  # fmt: skip
        else:
            want.append([epoch, offsets[0], offsets[-1], 1, len(offsets), len(raw)])
    code, out, err = run("describe", "--epochs", "--format", "jsonl", str(part))
    assert code == 0, err
    rows = [o for o in jsonl(out) if o["type"] == "epoch"]
    got = [[r[k] for k in ("epoch", "start_offset", "last_offset", "batches", "records", "bytes")]
           for r in rows if r["start_offset"] is not None]  # fmt: skip
    assert got == want
    # beside the checkpoint: epoch 1 starts at 6 there but its first batch is at 3; epoch 2
    # has no batch; epoch 6 has no checkpoint entry
    assert [(r["epoch"], r["checkpoint_start_offset"], r["start_offset"], r["same_start"])
            for r in rows] == [
        (0, 0, 0, True), (1, 6, 3, False), (2, 14, None, None), (4, 16, 15, False),
        (6, None, 28, False),
    ]  # fmt: skip
    code, out, _ = run("describe", "--epochs", str(part))
    assert "leader epochs (checkpoint present)" in out and "3 ≠" in out
    (part / "leader-epoch-checkpoint").unlink()
    code, out, _ = run("describe", "--epochs", "--format", "jsonl", str(part))
    assert {o["same_start"] for o in jsonl(out) if o["type"] == "epoch"} == {None}


def test_an_epoch_without_a_timestamp_shows_none(tmp_path: Path) -> None:
    """An epoch whose first batch has no timestamp (-1) shows none ("-"), not -1 (nor a date of
    1969, as the HTML report had it: issue 37); JSON Lines keeps Kafka's -1."""
    from support.rewrite import write_partition

    from klogtool.formats.batch import Record
    from klogtool.formats.v2 import encode_batch

    part = tmp_path / "t-0"
    batches = [
        encode_batch([Record(o, ts, b"k", b"v")], partition_leader_epoch=e)
        for o, (e, ts) in enumerate([(0, -1), (1, 1_700_000_000_000)])
    ]
    write_partition(part, [(0, batches)])
    code, out, err = run("describe", "--epochs", "--format", "jsonl", str(part))
    assert code == 0, err
    assert [o["first_timestamp"] for o in jsonl(out) if o["type"] == "epoch"] == [
        -1,
        1_700_000_000_000,
    ]
    code, out, err = run("describe", "--epochs", str(part))
    assert code == 0, err
    table = out.split("leader epochs", 1)[1]
    first = next(line.split() for line in table.splitlines() if line.split()[:1] == ["0"])
    assert first[:5] == ["0", "-", "0", "0", "-"], first  # epoch, checkpoint, offsets, time
    assert "-1" not in table.split() and "1969" not in table
    assert "1700000000000 (2023-11-14T22:13:20.000Z)" in table


@needs_corpus
def test_epochs_of_real_broker_partitions() -> None:
    """Every partition of the real brokers' log dirs: the batches' epochs run by run, and
    where a checkpoint is present, its starts are the first batches' (these brokers saw no
    unclean election)."""
    code, out, err = run("describe", "--epochs", "--format", "jsonl", str(CORPUS))
    assert code == 0, err
    rows = [o for o in jsonl(out) if o["type"] == "epoch"]
    assert len(rows) > 20
    for r in rows:
        if r["start_offset"] is not None:
            assert r["records"] >= r["batches"] > 0 and r["last_offset"] >= r["start_offset"]
    assert sum(r["same_start"] is True for r in rows) > 20
