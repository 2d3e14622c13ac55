"""``klogtool find`` (klogtool.log.read.finder): every filter against a brute-force scan, time seeks
with good, missing and wrong indexes, limit and newest-first, transactional states, formats,
the process pool and exit codes."""

from __future__ import annotations

import json
import shutil
import struct
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, get_args

import pytest
from support.cli import generator, jsonl, run
from support.paths import CORPUS, LOGDIR, LOGS, needs_corpus

from klogtool.formats import codecs
from klogtool.formats.batch import LOG_APPEND_TIME, Record
from klogtool.formats.engine import FindSpec
from klogtool.formats.index import encode_offset_index
from klogtool.formats.payloads.control import ABORT, COMMIT
from klogtool.formats.v2 import encode_batch
from klogtool.log.context import ReadContext
from klogtool.log.read.dumper import DumpOptions
from klogtool.log.read.finder import Finder, FindOptions
from klogtool.log.record_filter import BATCH_LEVEL, RECORD_LEVEL, RecordFilter

T0 = 1_700_000_000_000


@dataclass(frozen=True)
class Rec:
    topic: str
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    producer_id: int
    control: bool = False


def _record(offset: int) -> Record:
    # timestamps mostly increase, with some records older than the one before (CreateTime)
    ts = T0 + 1000 * offset - (2500 if offset % 7 == 3 else 0)
    key = None if offset % 11 == 4 else f"k-{offset % 6}".encode()
    value = None if offset % 13 == 5 else f"v-{offset}-{'even' if offset % 2 == 0 else 'odd'}"
    headers: tuple[tuple[str, bytes | None], ...] = ()
    if offset % 3 == 0:
        headers = (("trace", f"t{offset % 4}".encode()), ("flag", None))
    return Record(offset, ts, key, value.encode() if value else None, headers)


def write_partition(
    logdir: Path, topic: str = "events", partition: int = 0, segments: int = 3, batches: int = 8
) -> list[Rec]:
    """A partition of ``segments`` segments of ``batches`` batches of 3 records each, with
    indexes built as the broker's recovery builds them (an entry every ~128 bytes)."""
    gen = generator()
    d = logdir / f"{topic}-{partition}"
    d.mkdir(parents=True)
    truth: list[Rec] = []
    offset = 0
    for s in range(segments):
        base = offset
        data = b""
        for b in range(batches):
            recs = [_record(o) for o in range(offset, offset + 3)]
            pid = 100 + (offset // 3) % 4
            codec = (codecs.NONE, codecs.GZIP)[b % 2]
            data += encode_batch(
                recs, compression=codec, producer_id=pid, producer_epoch=0, base_sequence=offset
            )
            truth += [
                Rec(topic, r.offset, r.timestamp, r.key, r.value, tuple(r.headers), pid)
                for r in recs
            ]
            offset += 3
        gen.write_segment_files(d, base, data)
        del s
    return truth


@pytest.fixture
def logdir(tmp_path: Path) -> tuple[Path, list[Rec]]:
    d = tmp_path / "logdir"
    truth = write_partition(d)
    truth += write_partition(d, "other", 1, segments=2, batches=5)
    (d / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    return d, truth


def find(paths: list[Path | str], jobs: int = 1, **kw: Any) -> tuple[list[dict[str, Any]], Finder]:
    walk = {k: kw.pop(k) for k in list(kw) if k in FindOptions.__dataclass_fields__}
    walk.setdefault("dump", DumpOptions(deep=True, print_data=True, ctx=ReadContext.of()))
    finder = Finder(FindOptions(where=RecordFilter(**kw), **walk))
    objs = list(finder.objects([str(p) for p in paths], jobs=jobs))
    return objs, finder


def offsets(objs: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(o["topic"], o["offset"]) for o in objs if o["type"] == "record"]


def codes(objs: list[dict[str, Any]]) -> list[str]:
    return [o["code"] for o in objs if o["type"] == "finding"]


def expect(truth: list[Rec], pred: Any) -> list[tuple[str, int]]:
    return [(r.topic, r.offset) for r in truth if pred(r)]


# -- time seeks ---------------------------------------------------------------------------------
def test_time_seek_agrees_with_a_brute_force_scan(logdir: tuple[Path, list[Rec]]) -> None:
    d, truth = logdir
    last = max(r.timestamp for r in truth)
    for t in [
        T0 - 1,
        T0,
        T0 + 4000,
        T0 + 7500,
        T0 + 23_000,
        T0 + 40_000,
        T0 + 60_000,
        last,
        last + 1,
    ]:
        objs, finder = find([d], from_time=t)
        want = expect(truth, lambda r, t=t: r.timestamp >= t)
        assert offsets(objs) == want, t
        assert codes(objs) == []
        scanned, _ = find([d], from_time=t, use_indexes=False)
        assert offsets(scanned) == want
    # a late time skips whole segments by their .timeindex and reads fewer batch headers
    _, seek = find([d / "events-0"], from_time=T0 + 60_000)
    _, brute = find([d / "events-0"], from_time=T0 + 60_000, use_indexes=False)
    assert seek.counts.segments_skipped == 2
    assert seek.counts.batches < brute.counts.batches


def test_to_time_and_time_range(logdir: tuple[Path, list[Rec]]) -> None:
    d, truth = logdir
    lo, hi = T0 + 10_000, T0 + 30_000
    objs, _ = find([d], from_time=lo, to_time=hi)
    assert offsets(objs) == expect(truth, lambda r: lo <= r.timestamp <= hi)
    objs, _ = find([d], to_time=T0 + 5000)
    assert offsets(objs) == expect(truth, lambda r: r.timestamp <= T0 + 5000)


def test_missing_indexes_are_scanned_and_said(logdir: tuple[Path, list[Rec]]) -> None:
    d, truth = logdir
    part = d / "events-0"
    for f in part.glob("*.timeindex"):
        f.unlink()
    (part / "00000000000000000024.index").unlink()
    t = T0 + 30_000
    objs, finder = find([part], from_time=t)
    assert offsets(objs) == expect(truth, lambda r: r.topic == "events" and r.timestamp >= t)
    assert codes(objs) == ["timeindex-unusable"] * 3
    assert finder.counts.segments_scanned == 3
    assert all("scanned from its start" in o["message"] for o in objs if o["type"] == "finding")


def test_wrong_indexes_are_scanned_and_said(logdir: tuple[Path, list[Rec]]) -> None:
    d, truth = logdir
    part = d / "events-0"
    # a time index whose last timestamp is below its first fails the broker's sanity check
    entry = struct.Struct(">qi")
    (part / "00000000000000000000.timeindex").write_bytes(
        entry.pack(T0 + 5000, 2) + entry.pack(T0, 5)
    )
    # an offset index pointing into the middle of a batch
    (part / "00000000000000000024.index").write_bytes(encode_offset_index([(25, 7)], 24))
    want = expect(truth, lambda r: r.topic == "events" and r.timestamp >= T0 + 30_000)
    objs, _ = find([part], from_time=T0 + 30_000)
    assert offsets(objs) == want
    assert codes(objs) == ["timeindex-unusable", "index-unusable"]
    # --offsets seeks with the offset index too, and falls back the same way
    objs, _ = find([part], offsets=(35, 40))
    assert offsets(objs) == expect(truth, lambda r: r.topic == "events" and 35 <= r.offset <= 40)
    assert codes(objs) == ["index-unusable"]


def test_untrimmed_active_segment_index_still_seeks(logdir: tuple[Path, list[Rec]]) -> None:
    d, truth = logdir
    ti = d / "events-0" / "00000000000000000048.timeindex"
    ti.write_bytes(ti.read_bytes() + bytes(12 * 50))  # preallocated, as a crash leaves it
    for t in (T0 + 50_000, T0 + 70_000, T0 + 100_000):
        objs, _ = find([d / "events-0"], from_time=t)
        assert offsets(objs) == expect(
            truth, lambda r, t=t: r.topic == "events" and r.timestamp >= t
        )
        assert codes(objs) == []


def test_log_append_time_batches(tmp_path: Path) -> None:
    d = tmp_path / "lat-0"
    d.mkdir()
    data = b"".join(
        encode_batch(
            [Record(o, T0, b"k", b"v") for o in range(b * 2, b * 2 + 2)],
            timestamp_type=LOG_APPEND_TIME,
            max_timestamp=T0 + 1000 * b,
        )
        for b in range(10)
    )
    generator().write_segment_files(d, 0, data)
    objs, _ = find([d], from_time=T0 + 3000, to_time=T0 + 5000)
    assert [o for _, o in offsets(objs)] == [6, 7, 8, 9, 10, 11]
    assert {o["timestamp"] for o in objs if o["type"] == "record"} == {
        T0 + 3000,
        T0 + 4000,
        T0 + 5000,
    }


# -- the other filters ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw,pred",
    [
        ({"offsets": (5, 29)}, lambda r: 5 <= r.offset <= 29),
        ({"offsets": (40, 1 << 62)}, lambda r: r.offset >= 40),
        ({"key": b"k-3"}, lambda r: r.key == b"k-3"),
        ({"key_regex": "^k-[12]$"}, lambda r: r.key in (b"k-1", b"k-2")),
        ({"key_regex": "k-1"}, lambda r: r.key is not None and b"k-1" in r.key),
        ({"key_regex": "(?i)K-1"}, lambda r: r.key is not None and b"k-1" in r.key),  # in Python
        ({"headers": (("trace", None),)}, lambda r: any(k == "trace" for k, _ in r.headers)),
        ({"headers": (("trace", b"t2"),)}, lambda r: ("trace", b"t2") in r.headers),
        ({"headers": (("trace", b"t2"), ("flag", None))}, lambda r: ("trace", b"t2") in r.headers),
        ({"headers": (("nope", None),)}, lambda r: False),
        ({"producer_ids": frozenset({101, 103})}, lambda r: r.producer_id in (101, 103)),
        ({"control": True}, lambda r: False),
        ({"control": False}, lambda r: True),
        ({"key": b"k-0", "offsets": (0, 30)}, lambda r: r.key == b"k-0" and r.offset <= 30),
    ],
)
def test_filters_agree_with_a_brute_force_scan(
    logdir: tuple[Path, list[Rec]], kw: dict[str, Any], pred: Any
) -> None:
    d, truth = logdir
    objs, _ = find([d], **kw)
    assert offsets(objs) == expect(truth, pred)
    objs, _ = find([d], use_indexes=False, **kw)
    assert offsets(objs) == expect(truth, pred)


def test_value_regex_pattern_is_what_it_says(logdir: tuple[Path, list[Rec]]) -> None:
    d, truth = logdir
    import re

    objs, _ = find([d], value_regex=r"-1\d-even")
    assert offsets(objs) == expect(
        truth, lambda r: r.value is not None and re.search(rb"-1\d-even", r.value) is not None
    )
    assert offsets(objs)


def test_record_objects_carry_topic_partition_and_segment(logdir: tuple[Path, list[Rec]]) -> None:
    d, _ = logdir
    objs, _ = find([d / "events-0"], offsets=(25, 25))
    rec = next(o for o in objs if o["type"] == "record")
    assert (rec["topic"], rec["partition"], rec["offset"]) == ("events", 0, 25)
    assert rec["segment"] == str(d / "events-0" / "00000000000000000024.log")
    assert rec["key"] == "k-1" and rec["value"] == "v-25-odd"
    # the file and batch objects come before the first match in them
    assert [o["type"] for o in objs] == ["file", "batch", "record", "summary"]


# -- limit and order ---------------------------------------------------------------------------
def test_limit_and_newest_first(logdir: tuple[Path, list[Rec]]) -> None:
    d, truth = logdir
    events = [o for t, o in expect(truth, lambda r: r.topic == "events")]
    objs, finder = find([d], limit=5)
    assert [o for _, o in offsets(objs)] == events[:5]
    assert finder.counts.segments == 1  # stopped early
    objs, _ = find([d / "events-0"], newest_first=True)
    assert [o for _, o in offsets(objs)] == events[::-1]
    objs, finder = find([d / "events-0"], newest_first=True, limit=4)
    assert [o for _, o in offsets(objs)] == events[::-1][:4]
    assert finder.counts.segments == 1
    # newest first within each partition, partitions in PATH order
    objs, _ = find([d], newest_first=True, offsets=(20, 30))
    want = [(t, o) for t, o in expect(truth, lambda r: 20 <= r.offset <= 30)]
    by_topic = [x for x in want if x[0] == "events"][::-1] + [x for x in want if x[0] == "other"][
        ::-1
    ]
    assert offsets(objs) == by_topic
    objs, _ = find([d / "events-0"], newest_first=True, from_time=T0 + 40_000, key=b"k-2")
    assert (
        offsets(objs)
        == expect(
            truth, lambda r: r.topic == "events" and r.timestamp >= T0 + 40_000 and r.key == b"k-2"
        )[::-1]
    )


def test_process_pool_output_is_deterministic(tmp_path: Path) -> None:
    d = tmp_path / "logdir"
    truth: list[Rec] = []
    for p in range(4):
        truth += write_partition(d, "many", p, segments=2, batches=4)
    (d / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    serial, _ = find([d], jobs=1, value_regex="odd")
    parallel, finder = find([d], jobs=2, value_regex="odd")
    assert [o for o in serial if o["type"] != "summary"] == [
        o for o in parallel if o["type"] != "summary"
    ]
    assert finder.counts.matches == len(offsets(serial)) > 0
    limited, finder = find([d], jobs=2, limit=7)
    assert offsets(limited) == offsets(find([d], limit=7)[0])
    assert finder.counts.matches == 7


# -- transactions ---------------------------------------------------------------------------------
def _txn_partition(logdir: Path) -> Path:
    gen = generator()
    d = logdir / "tx-0"
    d.mkdir(parents=True)
    data = b"".join(
        [
            gen._txn_data(1, 0, 2, 0, transactional=True),  # 0-1: committed at 5
            gen._txn_data(2, 2, 2, 0, transactional=True),  # 2-3: aborted at 6
            gen._txn_data(9, 4, 1, 0, transactional=False),  # 4: not transactional
            gen._marker(1, 5, COMMIT),
            gen._marker(2, 6, ABORT),
            gen._txn_data(1, 7, 2, 2, transactional=True),  # 7-8: still open
            gen._txn_data(2, 9, 1, 2, transactional=True),  # 9: committed at 10
            gen._marker(2, 10, COMMIT),
        ]
    )
    gen.write_segment_files(d, 0, data)
    return d


@pytest.mark.parametrize(
    "states,want",
    [
        (("committed",), [0, 1, 5, 9, 10]),
        (("aborted",), [2, 3, 6]),
        (("open",), [7, 8]),
        (("none",), [4]),
        (("aborted", "open"), [2, 3, 6, 7, 8]),
    ],
)
def test_transactional_states(tmp_path: Path, states: tuple[str, ...], want: list[int]) -> None:
    d = _txn_partition(tmp_path)
    objs, _ = find([d], transactions=frozenset(states))
    assert [o for _, o in offsets(objs)] == want
    assert {o["transaction"] for o in objs if o["type"] == "record"} == set(states)
    objs, _ = find([d], transactions=frozenset(states), newest_first=True)
    assert [o for _, o in offsets(objs)] == want[::-1]


def test_transactions_of_the_fixture_partition_and_control_records() -> None:
    objs, _ = find([LOGDIR / "txn-0"], transactions=frozenset({"aborted"}))
    assert [o for _, o in offsets(objs)] == [4, 5, 6, 7, 8]
    objs, _ = find([LOGDIR / "txn-0"], control=True)
    recs = [o for o in objs if o["type"] == "record"]
    assert [(r["offset"], r["control"]["type"]) for r in recs] == [(8, "ABORT"), (10, "COMMIT")]


# -- formats and the command line ----------------------------------------------------------------
def test_kafka_format_is_what_dump_segments_prints() -> None:
    log = "logdir/v2-gzip-0/00000000000000000000.log"
    code, out, _ = run("find", "--format", "kafka", log)
    dcode, dump, _ = run(
        "dump-segments", "--format", "kafka", "--deep-iteration", "--print-data", log
    )
    assert (code, dcode) == (0, 0)
    assert out == dump


@pytest.mark.parametrize("decoder", ["base64", "hex", "utf8"])
def test_jsonl_records_are_dump_segments_records(decoder: str) -> None:
    log = "logdir/v2-none-0/00000000000000000000.log"
    code, out, _ = run("find", "--format", "jsonl", "--key-decoder", decoder, log)
    _, dump, _ = run(
        "dump-segments", "--format", "jsonl", "--print-data", "--key-decoder", decoder, log
    )
    found = jsonl(out)
    assert code == 0 and found
    batch_at = {o["position"]: o for o in jsonl(dump) if o["type"] == "batch"}
    for o in found:
        assert (o.pop("topic"), o.pop("partition")) == ("v2-none", 0)
        assert o.pop("segment") == log
        o.pop("size")  # what find adds: the payload size, and the batch's producer fields
        batch = batch_at[o["position"]]
        for field in ("producer_id", "producer_epoch", "partition_leader_epoch"):
            assert o.pop(field) == batch[field]
    assert found == [o for o in jsonl(dump) if o["type"] == "record"]


def test_text_and_json_formats(logdir: tuple[Path, list[Rec]]) -> None:
    d, _ = logdir
    code, out, _ = run("find", "--offsets", "2:4", "--key-regex", "k-", str(d / "events-0"))
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2  # offset 4 has no key
    assert lines[0].startswith("events-0  offset 2  ts ")
    assert "key: k-3  value: v-3-odd" in lines[1]
    code, out, _ = run("find", "--format", "json", "--limit", "3", str(d))
    assert code == 0
    assert [o["offset"] for o in json.loads(out)] == [0, 1, 2]
    code, out, _ = run("find", "--format", "json", "--key", "absent", str(d))
    assert code == 1 and json.loads(out) == []


def test_internal_topics_decode() -> None:
    code, out, _ = run("find", "--format", "jsonl", "--limit", "1", "logdir/__consumer_offsets-0")
    assert code == 0
    assert jsonl(out)[0]["key"]["data"]["group"] == "group-a"


def test_cli_options_and_exit_codes(logdir: tuple[Path, list[Rec]]) -> None:
    d, truth = logdir
    code, out, err = run(
        "find",
        "--format",
        "jsonl",
        "--from-time",
        "2023-11-14T22:13:50Z",  # T0 + 30 s
        "--header",
        "trace",
        "--producer-id",
        "100",
        "--producer-id",
        "102",
        str(d),
    )
    assert code == 0, err
    want = expect(
        truth,
        lambda r: (
            r.timestamp >= T0 + 30_000
            and any(k == "trace" for k, _ in r.headers)
            and r.producer_id in (100, 102)
        ),
    )
    assert [(o["topic"], o["offset"]) for o in jsonl(out)] == want
    code, out, _ = run("find", "--newest-first", "--limit", "2", "--format", "jsonl", str(d))
    assert [o["offset"] for o in jsonl(out)] == [71, 70]
    code, out, _ = run("find", "--transaction", "open", str(LOGDIR / "txn-0"))
    assert code == 1 and out == ""
    # with --transaction, each record object says which (checked against its registered type)
    code, out, _ = run(
        "find", "--transaction", "committed", "--format", "jsonl", str(LOGDIR / "txn-0")
    )
    records = [o for o in jsonl(out) if o["type"] == "record"]
    assert code == 0 and records and {o["transaction"] for o in records} == {"committed"}
    code, _, err = run("find", "nope-0")
    assert code == 3 and "not-found" in err
    code, _, err = run("find", "--key-regex", "(", str(d))
    assert code == 2 and "not a regular expression" in err
    code, _, err = run("find", "--from-time", "yesterday", str(d))
    assert code == 2
    code, out, err = run("find", "-j", "2", "--scan", "--no-print-data", "--limit", "1", str(d))
    assert code == 0 and "key:" not in out and "key 3 B" in out


def test_damaged_segments(tmp_path: Path) -> None:
    code, out, err = run("find", "corrupt/crc-flip-0")
    assert code == 3 and out
    assert "crc-mismatch" in err
    code, out, err = run("find", "corrupt/torn-tail-0")
    assert code == 0 and out
    assert "torn-tail" in err
    shutil.copytree(LOGS / "corrupt" / "missing-index-0", tmp_path / "m-0")
    code, out, err = run("find", "--from-time", str(T0 + 5000), str(tmp_path / "m-0"))
    assert code == 0 and "index-unusable" in err
    code, out, err = run("-q", "find", "--from-time", str(T0 + 5000), str(tmp_path / "m-0"))
    assert code == 0 and err == ""


def test_help_has_the_exit_status() -> None:
    code, out, _ = run("find", "--help")
    assert code == 0
    assert "0 when records were found; 1 when none were; 3 when an input" in " ".join(out.split())


# -- sizes, the largest records, producer fields, --merge (issue 27) ----------------------------
def _size(r: Rec) -> int:
    """The payload bytes of a record as written: key, value, header names and values."""
    return (
        len(r.key or b"")
        + len(r.value or b"")
        + sum(len(k.encode()) + len(v or b"") for k, v in r.headers)
    )


def test_size_filters_and_the_size_field(logdir: tuple[Path, list[Rec]]) -> None:
    d, truth = logdir
    sizes = sorted({_size(r) for r in truth})
    lo, hi = sizes[len(sizes) // 3], sizes[2 * len(sizes) // 3]
    objs, _ = find([d], min_size=lo, max_size=hi)
    assert offsets(objs) == expect(truth, lambda r: lo <= _size(r) <= hi)
    assert 0 < len(offsets(objs)) < len(truth)
    objs, _ = find([d], min_size=hi + 1)
    assert offsets(objs) == expect(truth, lambda r: _size(r) > hi)
    by_offset = {(r.topic, r.offset): _size(r) for r in truth}
    objs, _ = find([d])
    records = [o for o in objs if o["type"] == "record"]
    assert [o["size"] for o in records] == [by_offset[o["topic"], o["offset"]] for o in records]
    # the same options in --where (export, the Spark source) and on find's command line
    code, out, _ = run("find", "--format", "jsonl", "--min-size", f"{hi + 1}", str(d))
    assert [(o["topic"], o["offset"]) for o in jsonl(out)] == expect(truth, lambda r: _size(r) > hi)
    code, _, err = run("find", "--min-size", "lots", str(d))
    assert code == 2 and "not a size: 'lots'" in err


def test_largest_agrees_with_sorting_every_match(logdir: tuple[Path, list[Rec]]) -> None:
    d, truth = logdir
    ranked = sorted(truth, key=lambda r: -_size(r))  # stable: the first met first among equals
    for n in (1, 5, len(truth) + 3):
        objs, finder = find([d], largest=n)
        assert offsets(objs) == [(r.topic, r.offset) for r in ranked[:n]]
        assert finder.counts.matches == len(truth)  # all were looked at
    objs, _ = find([d], largest=4, key=b"k-1", jobs=2)
    assert offsets(objs) == [(r.topic, r.offset) for r in ranked if r.key == b"k-1"][:4]
    code, out, _ = run("find", "--largest", "2", "--format", "jsonl", str(d))
    assert code == 0 and [(o["topic"], o["offset"]) for o in jsonl(out)] == [
        (r.topic, r.offset) for r in ranked[:2]
    ]
    for bad in (["--largest", "2", "--limit", "3"], ["--largest", "2", "--format", "kafka"]):
        code, _, err = run("find", *bad, str(d))
        assert code == 2 and "--largest" in err


def test_records_carry_their_batch_producer_and_leader_epoch(tmp_path: Path) -> None:
    """Checked against kafka-python's reader of the same bytes (an independent decoder)."""
    from kafka.record.default_records import DefaultRecordBatch

    d = tmp_path / "t-0"
    d.mkdir()
    batches = [
        encode_batch(
            [Record(o, T0 + o, b"k", b"v")],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            partition_leader_epoch=leader,
        )
        for o, (pid, epoch, seq, leader) in enumerate(
            [(-1, -1, -1, 0), (42, 3, 0, 5), (42, 3, 1, 6), (9000, 0, 17, 6)]
        )
    ]
    (d / "00000000000000000000.log").write_bytes(b"".join(batches))
    objs, _ = find([d])
    got = [
        (o["producer_id"], o["producer_epoch"], o["sequence"], o["partition_leader_epoch"])
        for o in objs
        if o["type"] == "record"
    ]
    want = []
    for raw in batches:
        b = DefaultRecordBatch(raw)
        leader = struct.unpack_from(">i", raw, 12)[0]  # kafka-python does not expose it
        seq = [-1 if b.base_sequence < 0 else b.base_sequence + i for i, _ in enumerate(b)]
        want += [(b.producer_id, b.producer_epoch, s, leader) for s in seq]
    assert got == want


def _merge_dir(tmp_path: Path, stamps: list[list[int]]) -> Path:
    """Partitions m-0, m-1, ... whose records have the given timestamps, one batch each."""
    d = tmp_path / "merge"
    for p, ts in enumerate(stamps):
        part = d / f"m-{p}"
        part.mkdir(parents=True)
        data = b"".join(
            encode_batch([Record(o, t, b"p%d" % p, b"o%d" % o)]) for o, t in enumerate(ts)
        )
        (part / "00000000000000000000.log").write_bytes(data)
    return d


def test_merge_orders_partitions_by_timestamp(tmp_path: Path) -> None:
    stamps = [[T0 + x for x in s] for s in ([0, 5, 5, 9, 30], [1, 5, 6, 7], [], [2, 40, 41])]
    d = _merge_dir(tmp_path, stamps)
    parts = [d / f"m-{p}" for p in range(len(stamps))]
    every = [(t, p, o) for p, s in enumerate(stamps) for o, t in enumerate(s)]

    def got(objs: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
        return [
            (o["timestamp"], o["partition"], o["offset"]) for o in objs if o["type"] == "record"
        ]

    objs, finder = find(parts, merge=True)
    assert got(objs) == sorted(every)  # ties: the partition named first
    assert [o["type"] for o in objs] == ["record"] * len(every) + ["summary"]
    assert finder.counts.matches == len(every) and finder.counts.partitions == len(stamps)
    objs, _ = find(parts, merge=True, newest_first=True, limit=5)
    assert got(objs) == sorted(every, key=lambda x: (-x[0], x[1], -x[2]))[:5]
    objs, _ = find(parts, merge=True, from_time=T0 + 6)
    assert got(objs) == sorted(x for x in every if x[0] >= T0 + 6)
    code, out, _ = run("find", "--merge", "--format", "jsonl", *map(str, parts))
    assert code == 0 and got(jsonl(out)) == sorted(every)
    code, _, err = run("find", "--merge", "--format", "kafka", *map(str, parts))
    assert code == 2 and "--merge" in err


def test_merge_keeps_each_partitions_own_order(logdir: tuple[Path, list[Rec]]) -> None:
    """Timestamps that go back (CreateTime) inside a partition: every match is shown once, and
    each partition's records in its own order."""
    d, truth = logdir
    objs, _ = find([d / "events-0", d / "other-1"], merge=True, value_regex="odd")
    shown = offsets(objs)
    assert sorted(shown) == sorted(
        expect(truth, lambda r: r.value is not None and b"odd" in r.value)
    )
    for topic in ("events", "other"):
        mine = [o for t, o in shown if t == topic]
        assert mine == sorted(mine)


@needs_corpus
def test_largest_on_a_real_brokers_partition() -> None:
    """find --largest on records a real broker wrote, against kafka-python's reading of every
    record of the partition (sizes: key, value, header names and values)."""
    from kafka.record import MemoryRecords

    part = CORPUS / "iechenyb__data" / "kafka-logs" / "test-0921-0"
    sizes = []
    for log in sorted(part.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while (b := records.next_batch()) is not None:
            for r in b:
                head = sum(len(k.encode()) + len(v or b"") for k, v in r.headers)
                sizes.append(len(r.key or b"") + len(r.value or b"") + head)
    code, out, err = run("find", "--largest", "7", "--format", "jsonl", str(part))
    assert code == 0, err
    assert [o["size"] for o in jsonl(out)] == sorted(sizes, reverse=True)[:7]
    assert len(sizes) == 1521


# -- one declaration of each condition's kind (issue 39, item 2) --------------------------------
RECORD_SAMPLES: dict[str, Any] = {
    "key": b"k",
    "headers": (("h", b"v"),),
    "offsets": (1, 2),
    "from_time": 5,
    "to_time": 6,
    "min_size": 3,
    "max_size": 4,
    "key_regex": "a",
    "value_regex": "b",
}
BATCH_SAMPLES: dict[str, Any] = {
    "producer_ids": frozenset({7}),
    "transactions": frozenset({"committed"}),
    "control": False,
}


def test_a_condition_cannot_be_added_half_way() -> None:
    """Every field of RecordFilter is declared record-level or batch-level, once; each
    record-level one alone makes the filter record-level and reaches its own place in the
    native kernel's spec (the stub's FindSpec, in order), so that the native engine cannot
    silently ignore it; a batch-level one alone asks no record to be looked at."""
    assert sorted(f.name for f in fields(RecordFilter)) == sorted(RECORD_LEVEL + BATCH_LEVEL)
    assert list(RECORD_SAMPLES) == list(RECORD_LEVEL) and set(BATCH_SAMPLES) == set(BATCH_LEVEL)
    assert len(get_args(FindSpec)) == len(RECORD_LEVEL)
    empty = RecordFilter().native_spec()
    assert empty is not None
    for i, (name, sample) in enumerate(RECORD_SAMPLES.items()):
        where = RecordFilter(**{name: sample})
        assert where.record_level, name
        spec = where.native_spec()
        assert spec is not None and len(spec) == len(empty)
        assert [j for j in range(len(spec)) if spec[j] != empty[j]] == [i], name
    for name, sample in BATCH_SAMPLES.items():
        where = RecordFilter(**{name: sample})
        assert where.active and not where.record_level, name
        assert where.native_spec() == empty
