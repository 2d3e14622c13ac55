"""Tiered partitions on a broker's disk (KIP-405): the remote tier the host's
``__remote_log_metadata`` partitions describe, beside the local log, through the commands."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from support.aiven import as_aiven
from support.cli import jsonl, run
from support.s3 import S3Server, s3_server  # noqa: F401  (the fixture)
from support.tiered import (
    SEG_IDS,
    TOPIC_ID,
    Tp,
    high_watermark,
    kraft_metadata,
    local_partition,
    local_tiered_storage,
    segment_record,
    update_record,
    uploaded,
    write_metadata_partition,
)

TP = Tp("orders", TOPIC_ID, 3)


def _host(tmp_path: Path, local_start: int, local_end: int = 300) -> Path:
    """Remote: 0-99 and 100-249 uploaded (epochs 0, then 1 from 150), 250-260 an upload never
    finished, and an unreferenced copy of 0-99; local: ``local_start`` .. ``local_end - 1``."""
    log_dir = tmp_path / "kafka-logs-1"
    log_dir.mkdir()
    write_metadata_partition(
        log_dir,
        [
            *uploaded(TP, SEG_IDS[0], 0, 99, [(0, 0)]),
            *uploaded(TP, SEG_IDS[1], 0, 99, [(0, 0)]),  # a new leader's copy replaces it
            *uploaded(TP, SEG_IDS[2], 100, 249, [(0, 100), (1, 150)]),
            segment_record(TP, SEG_IDS[3], 250, 260, [(1, 250)]),
            update_record(TP, SEG_IDS[9], 1),  # an update for a segment never started here
        ],
        partition=7,
    )
    local_partition(log_dir, TP, local_start, local_end, epochs=((0, 0), (1, 150)))
    return log_dir


def test_describe_shows_the_remote_tier_beside_the_local_one(tmp_path: Path) -> None:
    log_dir = _host(tmp_path, 200)
    code, out, err = run("describe", "--format", "jsonl", str(log_dir), cwd=tmp_path)
    assert code == 0, err
    (tier,) = [o for o in jsonl(out) if o["type"] == "remote_tier"]
    assert tier["path"] == str(log_dir / "orders-3")
    assert (tier["topic"], tier["partition"], tier["topic_id"]) == ("orders", 3, TOPIC_ID)
    assert tier["metadata_partition"] == "__remote_log_metadata-7"
    assert (tier["segments"], tier["bytes"]) == (2, 100 * 100 + 100 * 150)
    assert (tier["start_offset"], tier["end_offset"]) == (0, 249)
    assert (tier["local_start_offset"], tier["local_end_offset"]) == (200, 300)
    assert tier["overlap"] == [200, 249] and tier["gap"] is None and tier["remote_gaps"] == []
    # the broker's findHighestRemoteOffset: epoch 1 (the newest local one) has 249 remotely
    assert tier["highest_uploaded_offset"] == 249
    assert (tier["uploads_unfinished"], tier["unreferenced"]) == (1, 1)
    assert len(tier["dropped_events"]) == 1 and SEG_IDS[9] in tier["dropped_events"][0]
    # the metadata partition itself has no remote tier
    parts = [o for o in jsonl(out) if o["type"] == "partition"]
    assert {p["topic"] for p in parts} == {"orders", "__remote_log_metadata"}


def test_a_gap_between_the_tiers_is_named(tmp_path: Path) -> None:
    log_dir = _host(tmp_path, 400, 450)
    code, out, err = run("describe", str(log_dir / "orders-3"), cwd=tmp_path)
    assert code == 0, err
    assert "remote tiers: 1 tiered partition" in out and "GAP 250..399" in out
    assert "gap: offsets 250-399 are neither remote nor local" in err
    assert f"upload never finished: segment {SEG_IDS[3]} (offsets 250-260)" in err
    assert f"unreferenced copy: segment {SEG_IDS[0]}" in err


def test_remote_segments_are_listed_on_request(tmp_path: Path) -> None:
    log_dir = _host(tmp_path, 200)
    args = ("describe", "--format", "jsonl", "--remote-segments", str(log_dir / "orders-3"))
    code, out, err = run(*args, cwd=tmp_path)
    assert code == 0, err
    segs = [o for o in jsonl(out) if o["type"] == "remote_segment"]
    assert [(s["segment_id"], s["state"], s["referenced"]) for s in segs] == [
        (SEG_IDS[0], "COPY_SEGMENT_FINISHED", False),
        (SEG_IDS[1], "COPY_SEGMENT_FINISHED", True),
        (SEG_IDS[2], "COPY_SEGMENT_FINISHED", True),
        (SEG_IDS[3], "COPY_SEGMENT_STARTED", False),
    ]
    assert segs[2]["leader_epochs"] == [[0, 100], [1, 150]]
    assert segs[2]["where"] == "__remote_log_metadata-7@5"
    code, out, err = run("describe", "--remote-segments", str(log_dir / "orders-3"), cwd=tmp_path)
    assert code == 0 and "remote segments (__remote_log_metadata-7)" in out


def test_metadata_in_another_log_dir_of_the_same_broker_holds(tmp_path: Path) -> None:
    """JBOD: the broker put the metadata partition on its other disk."""
    log_dir = _host(tmp_path, 200)
    other = tmp_path / "kafka-logs-2"
    other.mkdir()
    (log_dir / "__remote_log_metadata-7").rename(other / "__remote_log_metadata-7")
    for d in (log_dir, other):
        (d / "meta.properties").write_text("version=1\ncluster.id=c1\nnode.id=1\n")
    code, out, err = run("describe", "--format", "jsonl", str(log_dir / "orders-3"), cwd=tmp_path)
    assert code == 0, err
    assert [o["segments"] for o in jsonl(out) if o["type"] == "remote_tier"] == [2]
    # another broker's metadata does not
    (other / "meta.properties").write_text("version=1\ncluster.id=c1\nnode.id=2\n")
    code, out, err = run("describe", "--format", "jsonl", str(log_dir / "orders-3"), cwd=tmp_path)
    assert code == 0 and [o for o in jsonl(out) if o["type"] == "remote_tier"] == []


DAY = 24 * 3600 * 1000
TIERED = {"remote.storage.enable": "true", "local.retention.ms": "1000", "retention.ms": "-1"}


def _files(part: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(part.iterdir())}


def test_retention_of_a_tiered_topic_keeps_what_is_not_uploaded(tmp_path: Path) -> None:
    """The broker's deleteOldSegments on a tiered topic: local.retention.ms, and a segment goes
    only when its offsets are all in remote storage (249 here): 200-249 goes, 250-299 stays.
    The log start offset checkpoint and the leader epochs hold for the remote tier: kept."""
    log_dir = _host(tmp_path, 200)
    kraft_metadata(log_dir, TP, TIERED)
    high_watermark(log_dir, TP, 300)
    part = log_dir / "orders-3"
    kept = {n: b for n, b in _files(part).items() if n == "leader-epoch-checkpoint"}
    before = (log_dir / "log-start-offset-checkpoint").read_bytes()
    now = str(1_700_000_000_000 + 10 * DAY)
    args = ["retention-sweep", "--format", "jsonl", "--now", now, str(part)]
    code, out, err = run(*args, cwd=tmp_path)
    assert code == 0, err
    objs = jsonl(out)
    segs = {o["base_offset"]: o for o in objs if o["type"] == "segment"}
    assert (segs[200]["action"], segs[200]["rule"]) == ("delete", "local.retention.ms")
    assert (segs[250]["action"], segs[250]["rule"]) == ("keep", "not-uploaded")
    assert (
        "not all in remote storage (uploaded up to 249: __remote_log_metadata-7)"
        in (segs[250]["reason"])
    )
    (summary,) = [o for o in objs if o["type"] == "partition"]
    assert summary["tiered"] is True and summary["uploaded_up_to"] == 249
    assert summary["new_log_start_offset"] == 250
    assert not (part / "00000000000000000200.log").exists()
    assert (part / "00000000000000000250.log").exists()
    assert (log_dir / "log-start-offset-checkpoint").read_bytes() == before
    assert {n: b for n, b in _files(part).items() if n in kept} == kept


def test_without_its_remote_metadata_a_tiered_topic_loses_nothing(tmp_path: Path) -> None:
    log_dir = _host(tmp_path, 200)
    kraft_metadata(log_dir, TP, TIERED)
    high_watermark(log_dir, TP, 300)
    for p in (log_dir / "__remote_log_metadata-7").iterdir():
        p.unlink()
    (log_dir / "__remote_log_metadata-7").rmdir()
    part = log_dir / "orders-3"
    before = _files(part)
    now = str(1_700_000_000_000 + 10 * DAY)
    code, out, err = run("retention-sweep", "--format", "jsonl", "--now", now, str(part))
    assert code == 0, err
    segs = [o for o in jsonl(out) if o["type"] == "segment"]
    assert [s["action"] for s in segs] == ["keep", "keep"] and segs[0]["rule"] == "not-uploaded"
    assert "no __remote_log_metadata partition of this broker describes it" in segs[0]["reason"]
    assert _files(part) == before
    # the same topic without tiering: retention.ms -1 deletes nothing by time either, but the
    # size limit does, by the whole log's rule
    kraft_metadata(log_dir, TP, {"retention.ms": "-1", "retention.bytes": "1"})
    code, out, err = run("retention-sweep", "--format", "jsonl", "--now", now, str(part))
    assert code == 0, err
    segs = [o for o in jsonl(out) if o["type"] == "segment"]
    assert (segs[0]["action"], segs[0]["rule"]) == ("delete", "retention.bytes")


def test_a_tiered_topics_log_start_offset_is_not_moved(tmp_path: Path) -> None:
    log_dir = _host(tmp_path, 200)
    kraft_metadata(log_dir, TP, TIERED)
    high_watermark(log_dir, TP, 300)
    args = ("retention-sweep", "--log-start-offset", "250", str(log_dir / "orders-3"))
    code, _, err = run(*args, cwd=tmp_path)
    assert code == 4 and "klogtool deletes nothing from remote storage" in err


def test_explain_says_which_rule_holds_a_tiered_segment(tmp_path: Path) -> None:
    log_dir = _host(tmp_path, 200)
    kraft_metadata(log_dir, TP, TIERED)
    high_watermark(log_dir, TP, 300)
    now = str(1_700_000_000_000 + 10 * DAY)
    code, out, err = run("explain", "--format", "jsonl", "--now", now, str(log_dir / "orders-3"))
    assert code == 0, err
    (summary,) = [o for o in jsonl(out) if o["type"] == "partition_explain"]
    assert summary["retention_segments_deleted"] == 1
    assert any("tiered (remote.storage.enable=true)" in n for n in summary["notes"])
    configs = {c["key"]: c["value"] for c in summary["config_sources"]}
    assert configs["remote.storage.enable"] == "true" and configs["local.retention.ms"] == "1000"
    tier = summary["remote_tier"]
    assert (tier["segments"], tier["end_offset"], tier["uploads_unfinished"]) == (2, 249, 1)
    assert any(n.startswith("remote tier: upload never finished") for n in summary["notes"])


def test_compact_refuses_a_tiered_topic(tmp_path: Path) -> None:
    log_dir = _host(tmp_path, 200)
    kraft_metadata(log_dir, TP, {**TIERED, "cleanup.policy": "compact"})
    part = log_dir / "orders-3"
    before = _files(part)
    code, _, err = run("compact", str(part), cwd=tmp_path)
    assert code == 4, err
    assert "orders is a tiered topic (remote.storage.enable=true, metadata log at offset" in err
    assert err.rstrip().endswith("(tiered-topic)") and _files(part) == before


def test_verify_checks_the_remote_index_cache_as_the_broker_loads_it(tmp_path: Path) -> None:
    """remote-log-index-cache/: <offset>_<segment id>.index/.timeindex/.txnindex, each held to
    the broker's sanity check; a set missing one is deleted by the broker, leftovers too."""
    import struct

    log_dir = _host(tmp_path, 200)
    cache = log_dir / "remote-log-index-cache"
    cache.mkdir()

    def put(offset: int, seg: str, index: bytes = b"", time: bytes = b"", txn: bytes = b"") -> None:
        for kind, data in (("index", index), ("timeindex", time), ("txnindex", txn)):
            (cache / f"{offset}_{seg}.{kind}").write_bytes(data)

    put(0, SEG_IDS[1], struct.pack(">ii", 5, 0), struct.pack(">qi", 1_700_000_000_000, 5))
    # an aborted transaction ending below the segment's start: TransactionIndex.sanityCheck
    put(100, SEG_IDS[2], txn=struct.pack(">hqqqq", 0, 7, 10, 20, 20))
    (cache / f"250_{SEG_IDS[3]}.index").write_bytes(b"")  # alone
    (cache / f"300_{SEG_IDS[4]}.index.tmp").write_bytes(b"")
    code, out, err = run("verify", "--format", "jsonl", str(log_dir), cwd=tmp_path)
    assert code == 1, err
    found = {(o["code"], Path(o["path"]).name) for o in jsonl(out) if o["type"] == "finding"}
    assert found == {
        ("remote-index-corrupt", f"100_{SEG_IDS[2]}.txnindex"),
        ("remote-index-incomplete", f"250_{SEG_IDS[3]}.index"),
        ("leftover-file", f"300_{SEG_IDS[4]}.index.tmp"),
    }
    # a directory of that name holding something else is not the broker's cache
    (cache / "notes.txt").write_text("x")
    code, out, err = run("verify", "--format", "jsonl", str(log_dir), cwd=tmp_path)
    assert code == 0 and [o for o in jsonl(out) if o["type"] == "finding"] == []


def test_diff_says_a_replica_started_from_the_tiered_offset_misses_nothing(tmp_path: Path) -> None:
    """KIP-1023: a new replica of a tiered topic starts its local log at the tiered offset; its
    missing head (0..199) is in remote storage, which the leader's broker's metadata shows."""
    leader = _host(tmp_path, 0)  # holds 0..299 locally and the metadata
    follower = tmp_path / "follower"
    follower.mkdir()
    local_partition(follower, TP, 200, 300, epochs=((0, 0), (1, 150)))
    args = ("diff", "--format", "jsonl", str(leader / "orders-3"), str(follower / "orders-3"))
    code, out, err = run(*args, cwd=tmp_path)
    (pd,) = [o for o in jsonl(out) if o["type"] == "partition-diff"]
    assert pd["verdict"] == "different-start-offsets" and pd["lost"] is None, err
    assert any(
        "head 0..199 is in remote storage (__remote_log_metadata-7)" in n for n in pd["notes"]
    )
    # a head the remote tier does not hold whole (it ends at 249): no such note
    later = tmp_path / "later"
    later.mkdir()
    local_partition(later, TP, 260, 300, epochs=((0, 0), (1, 150)))
    code, out, err = run("diff", "--format", "jsonl", args[3], str(later / "orders-3"))
    (pd,) = [o for o in jsonl(out) if o["type"] == "partition-diff"]
    assert pd["verdict"] == "different-start-offsets" and pd["notes"] == []
    # without the metadata that says so, no such note
    shutil.rmtree(leader / "__remote_log_metadata-7")
    code, out, err = run(*args, cwd=tmp_path)
    (pd,) = [o for o in jsonl(out) if o["type"] == "partition-diff"]
    assert pd["verdict"] == "different-start-offsets" and pd["notes"] == []


# -- retention of a tiered topic held to a plain model of the broker's deleteOldSegments --------
def _model_deleted(
    segs: list[tuple[int, int, int]],
    leo: int,
    hw: int,
    uploaded: int,
    local_ms: int,
    local_bytes: int,
    now: int,
) -> list[int]:
    """UnifiedLog.deleteOldSegments with remote storage on, transcribed plainly: the size walk
    (local.retention.bytes), then the time walk (local.retention.ms), each over the segments
    left, from the oldest; a segment goes when its upper bound is uploaded and under the high
    watermark and the rule holds; an empty last segment stays."""
    left = list(segs)
    deleted: list[int] = []

    def walk(rule: Callable[[tuple[int, int, int]], bool]) -> None:
        nonlocal left
        n = 0
        for i, seg in enumerate(left):
            upper = left[i + 1][0] if i + 1 < len(left) else leo
            last_and_empty = i + 1 == len(left) and seg[1] == 0
            if not (0 < upper <= uploaded + 1 and hw >= upper and rule(seg)) or last_and_empty:
                break
            n += 1
        deleted.extend(s[0] for s in left[:n])
        left = left[n:]

    if local_bytes >= 0 and sum(s[1] for s in left) >= local_bytes:
        excess = sum(s[1] for s in left) - local_bytes

        def by_size(seg: tuple[int, int, int]) -> bool:
            nonlocal excess
            if excess - seg[1] < 0:
                return False
            excess -= seg[1]
            return True

        walk(by_size)
    if local_ms >= 0:
        walk(lambda seg: now - seg[2] > local_ms)
    return deleted


@settings(max_examples=300, deadline=None)
@given(
    layout=st.lists(
        st.tuples(st.integers(1, 50), st.integers(0, 300), st.integers(0, 1000)),
        min_size=1,
        max_size=8,
    ),
    tail=st.integers(0, 50),
    hw_cut=st.integers(0, 400),
    uploaded=st.integers(-1, 400),
    local_ms=st.sampled_from([-2, -1, 0, 100, 500, 2000]),
    local_bytes=st.sampled_from([-2, -1, 0, 100, 500, 2000]),
    retention=st.tuples(st.sampled_from([-1, 300]), st.sampled_from([-1, 400])),
)
def test_tiered_retention_is_the_brokers(
    layout, tail, hw_cut, uploaded, local_ms, local_bytes, retention
) -> None:
    from klogtool.log.layout import SegmentFiles
    from klogtool.log.partition import PartitionView, SegmentInfo
    from klogtool.log.rewrite.retention import plan_retention
    from klogtool.log.topicconfig import TopicConfig

    now = 10_000
    segs, base = [], 0
    for length, size, ts in layout:
        segs.append((base, size, ts))
        base += length
    leo = base + tail
    hw = min(hw_cut, leo)
    retention_ms, retention_bytes = retention
    config = TopicConfig(
        retention_ms=retention_ms,
        retention_bytes=retention_bytes,
        remote_storage_enable=True,
        local_retention_ms=local_ms,
        local_retention_bytes=local_bytes,
    )
    view = PartitionView(
        path=Path("/nowhere/orders-3"),
        topic="orders",
        partition=3,
        log_dir=Path("/nowhere"),
        segments=[
            SegmentInfo(b, SegmentFiles(b), size, 0, ts, "timeindex", 0, 0) for b, size, ts in segs
        ],
        orphans=[],
        snapshots=[],
        leader_epoch_checkpoint=None,
        log_end_offset=leo,
        log_end_clean=True,
    )
    plan = plan_retention(
        view, config, now=now, high_watermark=hw, uploaded_up_to=(uploaded, "the model")
    )
    effective_ms = retention_ms if local_ms == -2 else local_ms
    effective_bytes = retention_bytes if local_bytes == -2 else local_bytes
    expected = _model_deleted(segs, leo, hw, uploaded, effective_ms, effective_bytes, now)
    assert [d.base_offset for d in plan.deleted] == expected
    assert all(d.rule in ("local.retention.ms", "local.retention.bytes") for d in plan.deleted)


def test_stats_and_its_report_show_the_remote_tier(tmp_path: Path) -> None:
    log_dir = _host(tmp_path, 200)
    report = tmp_path / "report.html"
    args = ("stats", "--format", "jsonl", "--sample", "0", "--html", str(report), str(log_dir))
    code, out, err = run(*args, cwd=tmp_path)
    assert code == 0, err
    parts = {o["topic"]: o for o in jsonl(out) if o["type"] == "stats" and o["scope"] != "total"}
    tier = parts["orders"]["remote_tier"]
    assert (tier["segments"], tier["start_offset"], tier["end_offset"]) == (2, 0, 249)
    assert tier["overlap"] == [200, 249] and tier["uploads_unfinished"] == 1
    assert "remote_tier" not in parts["__remote_log_metadata"]
    page = report.read_text()
    assert "<h2>Remote tier</h2>" in page and "overlap 200..249" in page
    assert "1 unfinished uploads, 1 unreferenced copies, 1 dropped events" in page
    code, out, err = run("stats", "--sample", "0", str(log_dir), cwd=tmp_path)
    assert code == 0 and "remote tiers" in out and "overlap 200..249" in out


def test_a_metadata_record_that_does_not_decode_is_named(tmp_path: Path) -> None:
    log_dir = tmp_path / "kafka-logs"
    log_dir.mkdir()
    write_metadata_partition(
        log_dir,
        [*uploaded(TP, SEG_IDS[0], 0, 99, [(0, 0)]), b"\x01\x00\x00\x05"],  # truncated
        partition=7,
    )
    local_partition(log_dir, TP, 50, 120)
    code, out, err = run("describe", "--format", "jsonl", str(log_dir / "orders-3"))
    assert code == 0, err
    (tier,) = [o for o in jsonl(out) if o["type"] == "remote_tier"]
    (problem,) = tier["metadata_problems"]
    assert problem.startswith("__remote_log_metadata-7@2: ")
    code, out, err = run("describe", str(log_dir / "orders-3"))
    assert "metadata record that does not decode: __remote_log_metadata-7@2" in err


# -- a tiered partition read as one log (--remote-storage) --------------------------------------
def _remote_storage(tmp_path: Path) -> Path:
    """The remote segments _host's metadata names, in Kafka's LocalTieredStorage layout
    (batches as local_partition writes them: the same bytes as the local copies)."""
    root = tmp_path / "remote"
    local_tiered_storage(
        root,
        TP,
        [
            (SEG_IDS[0], 0, 99, [(0, 0)]),
            (SEG_IDS[1], 0, 99, [(0, 0)]),
            (SEG_IDS[2], 100, 249, [(0, 0), (1, 150)]),
            (SEG_IDS[3], 250, 260, [(0, 0), (1, 150)]),
        ],
        {0: 0, 1: 150},
    )
    return root


def _records(*args: str, cwd: Path) -> list[tuple[int, int, str, str]]:
    code, out, err = run("find", "--format", "jsonl", "--key-decoder", "utf8", *args, cwd=cwd)
    assert code == 0, err
    return [
        (o["offset"], o["timestamp"], o["key"], o["value"])
        for o in jsonl(out)
        if o["type"] == "record"
    ]


def test_a_tiered_partition_reads_as_the_same_records_as_one_local_partition(
    tmp_path: Path,
) -> None:
    """Remote 0-99 and 100-249 (the second cut where the local log starts), then local
    200-299: every offset once, as a partition holding 0-299 on disk gives them."""
    log_dir = _host(tmp_path, 200)
    root = _remote_storage(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    local_partition(plain, TP, 0, 300, epochs=((0, 0), (1, 150)))
    expected = _records(str(plain / "orders-3"), cwd=tmp_path)
    assert [r[0] for r in expected] == list(range(300))
    tiered = ("--remote-storage", str(root), str(log_dir / "orders-3"))
    assert _records(*tiered, cwd=tmp_path) == expected
    # a seek by offset lands in the remote tier
    got = _records("--offsets", "120:130", *tiered, cwd=tmp_path)
    assert got == [r for r in expected if 120 <= r[0] <= 130]
    # stats counts the whole log
    code, out, err = run("stats", "--format", "jsonl", "--sample", "0", *tiered, cwd=tmp_path)
    assert code == 0, err
    (part,) = [o for o in jsonl(out) if o["type"] == "stats" and o["scope"] != "total"]
    assert part["volume"]["records"] == 300 and part["keys"]["distinct"] == 7
    # without --remote-storage, only the local log
    assert [r[0] for r in _records(str(log_dir / "orders-3"), cwd=tmp_path)] == list(
        range(200, 300)
    )


def test_what_the_remote_tier_cannot_give_is_named(tmp_path: Path) -> None:
    log_dir = _host(tmp_path, 400, 450)  # offsets 250..399 are nowhere
    root = _remote_storage(tmp_path)
    args = ("find", "--format", "jsonl", "--remote-storage", str(root), str(log_dir / "orders-3"))
    code, out, err = run(*args, cwd=tmp_path)
    assert code == 0, err
    offsets = [o["offset"] for o in jsonl(out) if o["type"] == "record"]
    assert offsets == [*range(250), *range(400, 450)]
    assert "offsets 250..399 are in no segment" in err
    code, _, err = run(*args[:4], str(tmp_path / "nowhere"), str(log_dir / "orders-3"))
    assert code == 3 and "(not-found)" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run(*args[:4], str(empty), str(log_dir / "orders-3"), cwd=tmp_path)
    assert code == 0 and "its remote segments are not under" in err


def test_a_tiered_partition_reads_from_aivens_layout_in_object_storage(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    log_dir = _host(tmp_path, 200)
    local = _remote_storage(tmp_path) / "kafka-tiered-storage" / f"orders-3-{TOPIC_ID}"
    as_aiven(local, tmp_path / "bucket", TP.name, TP.id, TP.partition, None)
    uri = s3_server.upload(tmp_path / "bucket", f"tiered/{tmp_path.name}")
    plain = tmp_path / "plain"
    plain.mkdir()
    local_partition(plain, TP, 0, 300, epochs=((0, 0), (1, 150)))
    tiered = _records("--remote-storage", uri, str(log_dir / "orders-3"), cwd=tmp_path)
    assert tiered == _records(str(plain / "orders-3"), cwd=tmp_path)
