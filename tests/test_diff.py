"""``klogtool diff A B``: replica divergence (issue: replica divergence).

Replica pairs are built batch by batch with ``encode_batch`` or, in the newer tests, with
kafka-python's builder (``kp_batch``, an encoder independent of klogtool's); the truncation
offsets expected here are worked out by hand from the broker's rule
(``LeaderEpochFileCache.endOffsetFor`` and ``AbstractFetcherThread.getOffsetTruncationState``;
docs/diff.md)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli import jsonl, run
from support.extras import needs_pyarrow
from support.records import kafka_python_batch
from support.rewrite import T0, generate, materialise, write_checkpoints, write_partition

from klogtool.formats import codecs
from klogtool.formats.batch import Record
from klogtool.formats.checkpoint import EpochEntry, encode_leader_epoch_checkpoint
from klogtool.formats.v2 import encode_batch
from klogtool.log.context import ReadContext
from klogtool.log.read.diff import (
    DIFFERENT_START,
    DIVERGED,
    IDENTICAL,
    MODULO_COMPACTION,
    PREFIX,
    DiffOptions,
    EpochCache,
    PartitionDiff,
    accepted,
    diff,
    elect,
    truncation_offset,
)

Spec = tuple[int, int, int, str]  # first offset, last offset, leader epoch, content tag


def batch(first: int, last: int, epoch: int, tag: str = "") -> bytes:
    recs = [
        Record(o, T0 + o, b"key-%d" % o, f"value-{o}{tag}".encode(), (("h", b"x"),))
        for o in range(first, last + 1)
    ]
    return encode_batch(
        recs,
        partition_leader_epoch=epoch,
        producer_id=1000,
        producer_epoch=0,
        base_sequence=first,
    )


def kp_batch(first: int, last: int, epoch: int, tag: str = "") -> bytes:
    """:func:`batch`'s records, encoded by kafka-python (an independent writer)."""
    rows = [
        (T0 + o, b"key-%d" % o, f"value-{o}{tag}".encode(), [("h", b"x")])
        for o in range(first, last + 1)
    ]
    return kafka_python_batch(
        first, epoch, rows, producer_id=1000, producer_epoch=0, base_sequence=first
    )


def replica(
    root: Path,
    specs: list[Spec],
    epochs: list[tuple[int, int]] | None,
    *,
    name: str = "t-0",
    segment_starts: tuple[int, ...] = (0,),
    build: Callable[[int, int, int, str], bytes] = batch,
) -> Path:
    """A partition dir under ``root`` holding the batches of ``specs`` (cut into segments at
    ``segment_starts``, each encoded by ``build``) and, unless None, a leader-epoch-checkpoint
    of ``epochs``."""
    part = root / name
    segments: list[tuple[int, list[bytes]]] = []
    for first, last, epoch, tag in specs:
        if not segments or (first in segment_starts and segments[-1][1]):
            segments.append((first, []))
        segments[-1][1].append(build(first, last, epoch, tag))
    write_partition(part, segments)
    if epochs is not None:
        (part / "leader-epoch-checkpoint").write_bytes(
            encode_leader_epoch_checkpoint([EpochEntry(e, s) for e, s in epochs])
        )
    return part


def verdict(a: Path, b: Path, **options: Any) -> PartitionDiff:
    (pd,) = [
        o
        for o in diff(str(a), str(b), DiffOptions(ctx=ReadContext.of(), **options))
        if isinstance(o, PartitionDiff)
    ]
    return pd


# -- the broker's truncation rule, worked by hand --------------------------------------------


def cache(*entries: tuple[int, int]) -> EpochCache:
    return EpochCache([EpochEntry(e, s) for e, s in entries])


def test_end_offset_for_follows_the_leader_epoch_cache() -> None:
    c = cache((0, 0), (1, 10), (3, 20))
    assert c.end_offset_for(3, 30) == (3, 30)  # the latest epoch ends at the log end offset
    assert c.end_offset_for(2, 30) == (1, 20)  # largest epoch <= 2 is 1, ending where 3 starts
    assert c.end_offset_for(1, 30) == (1, 20)
    assert c.end_offset_for(0, 30) == (0, 10)
    assert c.end_offset_for(4, 30) == (-1, -1)  # above every epoch: undefined
    assert cache((2, 5), (4, 9)).end_offset_for(1, 12) == (1, 5)  # below every epoch
    assert cache().end_offset_for(1, 12) == (-1, -1)


def test_assign_keeps_epochs_and_starts_increasing() -> None:
    c = EpochCache()
    for epoch, start in [(0, 0), (0, 5), (2, 10), (2, 12), (1, 15), (3, 8)]:
        c.assign(epoch, start)
    # (1, 15) removes (2, 10); (3, 8) removes every entry starting at or after 8
    assert c.as_list() == [[0, 0], [3, 8]]
    c = cache((0, 0), (1, 10), (3, 20))
    c.truncate_from_start(15)
    assert c.as_list() == [[1, 15], [3, 20]]
    c.truncate_from_end(20)
    assert c.as_list() == [[1, 15]]


def test_truncation_when_the_follower_has_an_epoch_the_leader_skipped() -> None:
    # Leader: epochs 0@0, 1@10, 3@20, LEO 30. Follower: 0@0, 1@10, 2@15, LEO 25.
    # The follower asks for 2; the leader's largest epoch <= 2 is 1, ending at 20 (where 3
    # starts). The follower has 1 too, ending at 15 (where its 2 starts): min(15, 20, 25) = 15.
    t = truncation_offset(
        cache((0, 0), (1, 10), (3, 20)), 30, cache((0, 0), (1, 10), (2, 15)), 25, 0
    )
    assert (t.offset, t.rule) == (15, "leader-epoch")
    assert t.steps == [
        {
            "follower_epoch": 2,
            "leader_epoch": 1,
            "leader_end_offset": 20,
            "follower_end_offset": 15,
            "truncate_to": 15,
        }
    ]


def test_truncation_takes_two_rounds_when_the_follower_lacks_the_leaders_epoch() -> None:
    # KIP-279. Leader: 0@0, 1@5, 3@15, LEO 20. Follower: 0@0, 2@8, LEO 12.
    # Round 1: the follower asks for 2; the leader answers (1, 15). The follower has no epoch
    # 1: its largest epoch <= 1 is 0, ending at 8 (where its 2 starts): it truncates to
    # min(8, 12) = 8, leaving it with epoch 0 only, and asks again.
    # Round 2: it asks for 0; the leader answers (0, 5) (its 1 starts at 5). The follower's 0
    # is its latest and ends at its log end offset 8: min(8, 5, 8) = 5.
    t = truncation_offset(cache((0, 0), (1, 5), (3, 15)), 20, cache((0, 0), (2, 8)), 12, 0)
    assert t.offset == 5
    assert [(s["follower_epoch"], s["leader_epoch"], s["truncate_to"]) for s in t.steps] == [
        (2, 1, 8),
        (0, 0, 5),
    ]


def test_without_an_answer_the_follower_falls_back_to_its_high_watermark() -> None:
    t = truncation_offset(cache((0, 0), (2, 15)), 25, cache((0, 0), (3, 20)), 30, 12)
    assert (t.offset, t.rule) == (12, "high-watermark")
    t = truncation_offset(cache((0, 0)), 25, EpochCache(), 30, 40)
    assert (t.offset, t.rule, t.steps) == (30, "high-watermark", [])  # at most its log end


# -- replica pairs ----------------------------------------------------------------------------

LEADER_1 = [(0, 4, 0, ""), (5, 9, 0, ""), (10, 14, 1, ""), (15, 19, 1, ""), (20, 29, 3, "")]
FOLLOWER_1 = [(0, 4, 0, ""), (5, 9, 0, ""), (10, 14, 1, ""), (15, 24, 2, "-b")]


def test_diverged_at_an_epoch_boundary(tmp_path: Path) -> None:
    a = replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)], segment_starts=(0, 10))
    b = replica(tmp_path / "b", FOLLOWER_1, [(0, 0), (1, 10), (2, 15)])
    pd = verdict(a, b)
    assert pd.verdict == DIVERGED and pd.diverged_at == 15
    assert pd.epochs_at_divergence == {
        "a": {"batch": 1, "cache": 1},
        "b": {"batch": 2, "cache": 2},
    }
    assert pd.truncation is not None
    assert (pd.truncation["leader"], pd.truncation["follower"]) == ("a", "b")
    assert pd.truncation["offset"] == 15 and pd.truncation["offsets_truncated"] == 10
    assert not pd.truncation_misses_divergence
    assert pd.common_batches == 3
    assert {k: v for k, v in pd.epochs["a"].items() if k != "timeline"} == {
        "source": "leader-epoch-checkpoint",
        "entries": [[0, 0], [1, 10], [3, 20]],
    }
    assert _timeline(pd.epochs["a"]) == [
        (0, 0, 0, 9, 10, True),
        (1, 10, 10, 19, 10, True),
        (3, 20, 20, 29, 10, True),
    ]
    assert _timeline(pd.epochs["b"]) == [
        (0, 0, 0, 9, 10, True),
        (1, 10, 10, 14, 5, True),
        (2, 15, 15, 24, 10, True),
    ]


def _timeline(epochs: dict[str, Any]) -> list[tuple[Any, ...]]:
    keys = ("epoch", "checkpoint_start_offset", "start_offset", "last_offset", "records")
    return [(*(r[k] for k in keys), r["same_start"]) for r in epochs["timeline"]]


def test_the_timeline_shows_where_checkpoint_and_batches_disagree(tmp_path: Path) -> None:
    """Epoch 1's batches have no checkpoint entry; the checkpoint's epoch 2 has no batch (a
    leader elected that wrote nothing, or whose writes were truncated); epoch 3 starts at 22
    in the checkpoint but its first batch is at 20. Both are shown, in offset order."""
    batches = [(0, 9, 0, ""), (10, 19, 1, ""), (20, 29, 3, "")]
    a = replica(tmp_path / "a", batches, [(0, 0), (2, 15), (3, 22)])
    b = replica(tmp_path / "b", batches, None)
    pd = verdict(a, b)
    assert _timeline(pd.epochs["a"]) == [
        (0, 0, 0, 9, 10, True),
        (1, None, 10, 19, 10, False),
        (2, 15, None, None, 0, None),
        (3, 22, 20, 29, 10, False),
    ]
    assert [r[-1] for r in _timeline(pd.epochs["b"])] == [None, None, None]  # no checkpoint
    code, out, _ = run("diff", str(a), str(b))
    assert (
        "leader epochs: 0 from 0 (10 records), 1 from 10 (10 records) not in the checkpoint, "
        "2 at 15 (no batch), 3 from 20 (10 records) ≠ checkpoint 22"
    ) in out


def test_epochs_come_from_the_batches_without_a_checkpoint(tmp_path: Path) -> None:
    a = replica(tmp_path / "a", LEADER_1, None)
    b = replica(tmp_path / "b", FOLLOWER_1, None)
    pd = verdict(a, b)
    assert pd.epochs["b"]["source"] == "batches"
    assert pd.epochs["b"]["entries"] == [[0, 0], [1, 10], [2, 15]]
    assert pd.truncation is not None and pd.truncation["offset"] == 15


def test_diverged_where_the_follower_lacks_the_leaders_epoch(tmp_path: Path) -> None:
    leader = [(0, 4, 0, ""), (5, 9, 1, ""), (10, 14, 1, ""), (15, 19, 3, "")]
    follower = [(0, 4, 0, ""), (5, 7, 0, "-b"), (8, 11, 2, "-b")]
    a = replica(tmp_path / "a", leader, [(0, 0), (1, 5), (3, 15)])
    b = replica(tmp_path / "b", follower, [(0, 0), (2, 8)])
    pd = verdict(a, b)
    assert (pd.verdict, pd.diverged_at) == (DIVERGED, 5)
    assert pd.truncation is not None and pd.truncation["offset"] == 5
    assert len(pd.truncation["steps"]) == 2


def test_b_as_leader_whose_latest_epoch_is_below_the_followers(tmp_path: Path) -> None:
    a = replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)])
    b = replica(tmp_path / "b", FOLLOWER_1, [(0, 0), (1, 10), (2, 15)])
    write_checkpoints(tmp_path / "a", replication_offset_checkpoint={("t", 0): 12})
    pd = verdict(a, b, leader="b")
    # B becomes leader: it caches a new epoch 4 (above A's 3 and its own 2) at its log end 25,
    # so its cache is 0@0, 1@10, 2@15, 4@25 (Partition.makeLeader). A asks for 3; B's largest
    # epoch <= 3 is 2, ending at 25 (where 4 starts). A has no 2: its largest below is 1,
    # ending at 20 (where its 3 starts): A truncates to min(20, 30) = 20 and asks for 1; B
    # answers (1, 15); A's 1 now ends at its log end 20: min(20, 15, 20) = 15. Not the high
    # watermark (12), which a leader that caches its epoch never makes the follower fall to.
    assert pd.truncation is not None
    assert (pd.truncation["follower"], pd.truncation["rule"], pd.truncation["offset"]) == (
        "a",
        "leader-epoch",
        15,
    )
    assert pd.truncation["election"] == {"epoch": 4, "start_offset": 25, "source": "assumed"}
    assert [
        (s["follower_epoch"], s["leader_epoch"], s["truncate_to"]) for s in pd.truncation["steps"]
    ] == [(3, 2, 20), (1, 1, 15)]


def test_same_epoch_different_records_is_the_case_the_broker_cannot_see(tmp_path: Path) -> None:
    a = replica(tmp_path / "a", [(0, 4, 0, ""), (5, 9, 0, "")], [(0, 0)])
    b = replica(tmp_path / "b", [(0, 4, 0, ""), (5, 9, 0, "-b")], [(0, 0)])
    items = list(diff(str(a), str(b), DiffOptions(ctx=ReadContext.of(), deep=True)))
    pd = items[-1]
    assert isinstance(pd, PartitionDiff)
    assert (pd.verdict, pd.diverged_at) == (DIVERGED, 5)
    assert pd.truncation is not None and pd.truncation["offset"] == 10
    assert pd.truncation_misses_divergence
    (d,) = items[:-1]
    assert d.kind == "changed" and d.fields == ["crc", "size"] and d.first_differing_offset == 5
    assert d.records is not None and len(d.records) == 5
    assert d.records[0] == {
        "offset": 5,
        "fields": [{"field": "value", "a": "value-5", "b": "value-5-b"}],
    }


def test_a_different_leader_epoch_alone_is_divergence(tmp_path: Path) -> None:
    # the same records at 5..9, written by leader A in epoch 2 and by B (leader of epoch 1)
    a = replica(tmp_path / "a", [(0, 4, 0, ""), (5, 9, 2, "")], [(0, 0), (2, 5)])
    b = replica(tmp_path / "b", [(0, 4, 0, ""), (5, 9, 1, "")], [(0, 0), (1, 5)])
    items = list(diff(str(a), str(b), DiffOptions(ctx=ReadContext.of())))
    pd = items[-1]
    assert isinstance(pd, PartitionDiff) and (pd.verdict, pd.diverged_at) == (DIVERGED, 5)
    assert items[0].fields == ["partition_leader_epoch"]  # type: ignore[union-attr]
    assert items[0].first_differing_offset is None  # type: ignore[union-attr]
    # B asks for 1; A's largest epoch <= 1 is 0, ending at 5 (where A's 2 starts). B has 0
    # too, ending at 5 (where its 1 starts): min(5, 5, 10) = 5.
    assert pd.truncation is not None and pd.truncation["offset"] == 5
    assert pd.truncation["rule"] == "leader-epoch"
    # The other way round, the leader's latest epoch (1) is below the follower's (2). Elected,
    # it caches epoch 3 at its log end 10: 0@0, 1@5, 3@10. The follower asks for 2; the leader
    # answers (1, 10). The follower has no 1: it truncates to the end of its 0, min(5, 10) = 5,
    # and asks for 0; the leader answers (0, 5): min(5, 5, 5) = 5.
    pd = verdict(b, a)
    assert pd.truncation is not None
    assert (pd.truncation["rule"], pd.truncation["offset"]) == ("leader-epoch", 5)


def test_identical_and_prefix(tmp_path: Path) -> None:
    a = replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)])
    same = replica(tmp_path / "same", LEADER_1, [(0, 0), (1, 10), (3, 20)])
    lag = replica(tmp_path / "lag", LEADER_1[:3], [(0, 0), (1, 10)])
    assert verdict(a, same).verdict == IDENTICAL
    pd = verdict(a, lag)
    assert (pd.verdict, pd.lagging, pd.lag_offsets, pd.lag_records) == (PREFIX, "b", 15, 15)
    assert pd.lag_bytes == len(batch(15, 19, 1)) + len(batch(20, 29, 3))
    assert pd.truncation is not None and pd.truncation["offset"] == 15  # nothing to cut
    assert verdict(lag, a).lagging == "a"


def test_different_start_offsets(tmp_path: Path) -> None:
    a = replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)], segment_starts=(0, 10))
    b = replica(tmp_path / "b", LEADER_1[2:], [(1, 10), (3, 20)])
    pd = verdict(a, b)
    assert pd.verdict == DIFFERENT_START
    assert pd.start_offsets == {"a": 0, "b": 10} and pd.differences == 0


def test_a_torn_tail_is_reported_and_cut_like_recovery(tmp_path: Path) -> None:
    a = replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)])
    b = replica(tmp_path / "b", LEADER_1, [(0, 0), (1, 10), (3, 20)])
    log = b / "00000000000000000000.log"
    size = log.stat().st_size
    with log.open("ab") as f:
        f.write(batch(30, 34, 3)[:40])  # a few bytes of the next batch
    items = list(diff(str(a), str(b), DiffOptions(ctx=ReadContext.of())))
    pd = items[-1]
    assert isinstance(pd, PartitionDiff) and pd.verdict == IDENTICAL
    assert pd.torn_tail["b"] is not None and pd.torn_tail["b"]["position"] == size
    assert pd.torn_tail["b"]["bytes"] == 40 and pd.torn_tail["a"] is None
    assert [d.kind for d in items[:-1]] == ["torn-tail"]  # type: ignore[union-attr]
    # a lagging copy whose last batch is torn
    c = replica(tmp_path / "c", LEADER_1[:4], [(0, 0), (1, 10)])
    with (c / "00000000000000000000.log").open("ab") as f:
        f.write(batch(20, 29, 3)[:30])
    pd = verdict(a, c)
    assert (pd.verdict, pd.lagging, pd.lag_offsets) == (PREFIX, "b", 10)
    assert pd.torn_tail["b"] is not None and pd.torn_tail["b"]["bytes"] == 30


# -- compaction -------------------------------------------------------------------------------


def test_a_compacted_copy_is_equal_modulo_compaction(tmp_path: Path) -> None:
    g = generate(seed=11, codec=codecs.GZIP)
    a = materialise(g, tmp_path / "a")
    b = materialise(g, tmp_path / "b")
    now = T0 + 3_600_000
    code, _out, err = run("compact", "--assume-defaults", str(b), "--now", str(now), cwd=tmp_path)
    assert code == 0, err
    assert (b / "00000000000000000000.log").read_bytes() != (
        a / "00000000000000000000.log"
    ).read_bytes()
    pd = verdict(a, b)
    assert (pd.verdict, pd.compacted) == (MODULO_COMPACTION, "b"), pd
    assert pd.differences > 0 and pd.diverged_at is None
    # and the other way round
    assert verdict(b, a).compacted == "a"
    code, _out, err = run("diff", str(a), str(b), cwd=tmp_path)
    assert code == 1, err
    code, out, err = run("diff", "--allow-compaction", str(a), str(b), cwd=tmp_path)
    assert code == 0, err
    assert "equal modulo compaction (b is compacted)" in out


def _keyed(o: int, key: bytes, value: bytes | None) -> Record:
    return Record(o, T0 + o, key, value)


def test_a_removed_record_that_nothing_supersedes_is_divergence(tmp_path: Path) -> None:
    full = [_keyed(0, b"k1", b"v0"), _keyed(1, b"k2", b"v1"), _keyed(2, b"k1", b"v2")]
    write_partition(tmp_path / "a" / "t-0", [(0, [encode_batch(full)])])
    # the cleaner may drop offset 0 (k1 comes again at 2), not offset 1 (k2 never comes again)
    ok = encode_batch([full[1], full[2]], base_offset=0, last_offset_delta=2)
    bad = encode_batch([full[0], full[2]], base_offset=0, last_offset_delta=2)
    write_partition(tmp_path / "ok" / "t-0", [(0, [ok])])
    write_partition(tmp_path / "bad" / "t-0", [(0, [bad])])
    a = tmp_path / "a" / "t-0"
    assert verdict(a, tmp_path / "ok" / "t-0").verdict == MODULO_COMPACTION
    pd = verdict(a, tmp_path / "bad" / "t-0")
    assert (pd.verdict, pd.diverged_at) == (DIVERGED, 1)


def test_a_changed_value_in_a_compacted_copy_is_divergence(tmp_path: Path) -> None:
    full = [_keyed(0, b"k1", b"v0"), _keyed(1, b"k1", b"v1"), _keyed(2, b"k2", None)]
    write_partition(tmp_path / "a" / "t-0", [(0, [encode_batch(full)])])
    changed = encode_batch([_keyed(1, b"k1", b"XX")], base_offset=0, last_offset_delta=2)
    write_partition(tmp_path / "b" / "t-0", [(0, [changed])])
    pd = verdict(tmp_path / "a" / "t-0", tmp_path / "b" / "t-0")
    assert (pd.verdict, pd.diverged_at) == (DIVERGED, 0)


# -- inputs and the command line --------------------------------------------------------------


def test_unreadable_inputs_exit_3(tmp_path: Path) -> None:
    a = replica(tmp_path / "a", LEADER_1, None)
    code, _out, err = run("diff", str(a), str(tmp_path / "missing"), cwd=tmp_path)
    assert code == 3 and "(not-found)" in err
    garbage = tmp_path / "g" / "t-0"
    garbage.mkdir(parents=True)
    (garbage / "00000000000000000000.log").write_bytes(b"\x7f" * 200)
    code, _out, err = run("diff", str(a), str(garbage), cwd=tmp_path)
    assert code == 3 and err.startswith("klogtool: error:"), err
    code, _out, err = run("diff", str(a), str(tmp_path / "a"), cwd=tmp_path)
    assert code == 3 and "(mismatched-inputs)" in err


def test_log_dirs_pair_partitions_by_name(tmp_path: Path) -> None:
    replica(tmp_path / "a", LEADER_1, None)
    replica(tmp_path / "b", LEADER_1, None)
    replica(tmp_path / "a", LEADER_1[:2], None, name="u-0")
    code, out, err = run("diff", "--format", "jsonl", "a", "b", cwd=tmp_path)
    assert code == 1, err
    objs = jsonl(out)
    parts = {o["partition"]: o for o in objs if o["type"] == "partition-diff"}
    assert parts["t-0"]["verdict"] == "identical" and parts["t-0"]["ok"] is True
    assert parts["u-0"]["verdict"] == "only-in-a" and parts["u-0"]["b"] is None
    assert objs[-1] == {
        "type": "summary",
        "partitions": 2,
        "identical": 1,
        "prefix": 0,
        "diverged": 0,
        "equal_modulo_compaction": 0,
        "different_start_offsets": 0,
        "only_in_a": 1,
        "only_in_b": 0,
        "differences": 0,
        "ok": False,
    }
    shutil.rmtree(tmp_path / "a" / "u-0")
    code, out, err = run("diff", "a", "b", cwd=tmp_path)
    assert code == 0, err
    assert out.splitlines()[-1] == "klogtool diff: 1 partition: 1 identical"


def test_cli_text_and_jsonl_for_a_diverged_pair(tmp_path: Path) -> None:
    replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)])
    replica(tmp_path / "b", FOLLOWER_1, [(0, 0), (1, 10), (2, 15)])
    code, out, err = run("diff", "a/t-0", "b/t-0", cwd=tmp_path)
    assert code == 1, err
    assert "t-0: diverged at offset 15" in out
    assert "leader epoch at 15: batch 1, cache 1" in out
    assert "leader a: follower b truncates by its leader epochs to offset 15" in out
    assert "  only in b: offsets 15..24 (10 records" in out
    code, out, err = run(
        "diff", "--format", "jsonl", "--max-differences", "1", "a/t-0", "b/t-0", cwd=tmp_path
    )
    assert code == 1, err
    objs = jsonl(out)
    assert [o["type"] for o in objs] == ["difference", "partition-diff", "summary"]
    pd = objs[1]
    assert (pd["verdict"], pd["diverged_at"], pd["truncation"]["offset"]) == ("diverged", 15, 15)
    assert pd["differences"] == 3 and pd["differences_shown"] == 1
    assert objs[0]["kind"] == "only-in-a" and objs[0]["a"]["base_offset"] == 15
    code, _out, _err = run("diff", "--allow-lag", "a/t-0", "b/t-0", cwd=tmp_path)
    assert code == 1  # divergence is never allowed


def test_allow_lag(tmp_path: Path) -> None:
    replica(tmp_path / "a", LEADER_1, None)
    replica(tmp_path / "b", LEADER_1[:4], None)
    assert run("diff", "a/t-0", "b/t-0", cwd=tmp_path)[0] == 1
    code, out, err = run("diff", "--allow-lag", "a/t-0", "b/t-0", cwd=tmp_path)
    assert code == 0, err
    assert "b lags by 10 offsets (10 records" in out


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_machine_formats_parse(tmp_path: Path, fmt: str) -> None:
    replica(tmp_path / "a", LEADER_1, None)
    replica(tmp_path / "b", FOLLOWER_1, None)
    code, out, _err = run("diff", "--deep", "--format", fmt, "a/t-0", "b/t-0", cwd=tmp_path)
    assert code == 1
    import json

    objs = jsonl(out) if fmt == "jsonl" else json.loads(out)
    assert objs[-1]["type"] == "summary" and objs[-1]["diverged"] == 1


def test_batches_of_an_overlapping_segment_are_skipped_as_corruption(tmp_path: Path) -> None:
    first = [batch(0, 4, 0), batch(5, 9, 0)]
    write_partition(tmp_path / "a" / "t-0", [(0, first), (10, [batch(10, 14, 0)])])
    write_partition(tmp_path / "b" / "t-0", [(0, first), (10, [batch(5, 9, 0), batch(10, 14, 0)])])
    items = list(
        diff(
            str(tmp_path / "a" / "t-0"),
            str(tmp_path / "b" / "t-0"),
            DiffOptions(ctx=ReadContext.of()),
        )
    )
    pd = items[-1]
    assert isinstance(pd, PartitionDiff) and pd.verdict == IDENTICAL
    (d,) = items[:-1]
    assert d.kind == "corrupt" and d.b is not None  # type: ignore[union-attr]
    assert "do not increase" in d.b["message"]  # type: ignore[union-attr]


def test_jobs_give_the_same_output_in_partition_order(tmp_path: Path) -> None:
    for i in range(4):
        replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)], name=f"t-{i}")
        follower = (FOLLOWER_1, LEADER_1, LEADER_1[:2], LEADER_1)[i]
        replica(tmp_path / "b", follower, [(0, 0), (1, 10), (2, 15)], name=f"t-{i}")
    outs = []
    for jobs in ("1", "2"):
        code, out, err = run("diff", "--deep", "--jobs", jobs, "a", "b", cwd=tmp_path)
        assert code == 1, err
        outs.append(out)
    assert outs[0] == outs[1]
    assert [line for line in outs[0].splitlines() if line.startswith("== ")][:4] == [
        f"== t-{i}" for i in (0, 1, 2, 3)
    ]
    # an unreadable partition is the same one-line error, whatever the number of processes
    (tmp_path / "b" / "t-2" / "00000000000000000000.log").write_bytes(b"\x7f" * 200)
    errs = []
    for jobs in ("1", "2"):
        code, _out, err = run("diff", "--jobs", jobs, "a", "b", cwd=tmp_path)
        assert code == 3, err
        errs.append(err)
    assert errs[0] == errs[1] and errs[0].startswith("klogtool: error:")


def test_every_json_object_fits_its_declared_type(tmp_path: Path) -> None:
    # The suite runs with KLOGTOOL_STRICT_CODES=1: an object that does not fit its TypedDict in
    # klogtool/events.py is exit 70. These objects carry what the types once declared always
    # null: a changed pair's first differing record, a difference compaction explains, the
    # compacted side, a torn tail (no offsets), a partition only in log dir B (no path A).
    replica(tmp_path / "a", [(0, 4, 0, ""), (5, 9, 0, "")], [(0, 0)])
    replica(tmp_path / "b", [(0, 4, 0, ""), (5, 9, 0, "-b")], [(0, 0)])
    code, out, err = run("diff", "--deep", "--format", "jsonl", "a/t-0", "b/t-0", cwd=tmp_path)
    assert code == 1, err
    objs = jsonl(out)
    assert objs[0]["kind"] == "changed" and objs[0]["first_differing_offset"] == 5
    assert objs[1]["verdict"] == "diverged"

    g = generate(seed=11, codec=codecs.GZIP)
    full = materialise(g, tmp_path / "full")
    compacted = materialise(g, tmp_path / "compacted")
    assert (
        run(
            "compact",
            "--assume-defaults",
            str(compacted),
            "--now",
            str(T0 + 3_600_000),
            cwd=tmp_path,
        )[0]
        == 0
    )
    code, out, err = run("diff", "--format", "jsonl", str(full), str(compacted), cwd=tmp_path)
    assert code == 1, err
    objs = jsonl(out)
    assert any(o.get("explained_by") == "compaction" for o in objs)
    assert objs[-2]["compacted"] == "b"

    with (tmp_path / "b" / "t-0" / "00000000000000000000.log").open("ab") as f:
        f.write(batch(10, 14, 0)[:40])
    replica(tmp_path / "b", [(0, 4, 0, "")], None, name="u-0")
    code, out, err = run("diff", "--format", "jsonl", "a", "b", cwd=tmp_path)
    assert code == 1, err
    objs = jsonl(out)
    torn = [o for o in objs if o.get("kind") == "torn-tail"]
    assert len(torn) == 1 and torn[0]["base_offset"] is None
    parts = {o["partition"]: o for o in objs if o["type"] == "partition-diff"}
    assert parts["u-0"]["verdict"] == "only-in-b" and parts["u-0"]["a"] is None


# -- the leader's election: the epoch it caches at its log end before it answers ------------
#
# Partition.makeLeader caches the new leader epoch at the leader's log end offset before any
# follower asks ("a follower may have entries in its log from a later epoch than any entry in
# the new leader's log"): the epoch is above every epoch either side has, so the follower's
# OffsetsForLeaderEpoch request always has an answer, the largest epoch <= the one it asks for
# (LeaderEpochFileCache.endOffsetFor). The follower then truncates by
# AbstractFetcherThread.getOffsetTruncationState: to min(its end of that epoch, the leader's,
# its log end) when it has the epoch, else to the end of its largest epoch below it, and asks
# again with its new latest epoch.


def test_elect_caches_an_epoch_above_both_sides_at_the_leaders_log_end() -> None:
    leader, follower = cache((0, 0), (1, 100)), cache((0, 0), (2, 100))
    elected, election = elect(leader, 150, follower)
    assert elected.as_list() == [[0, 0], [1, 100], [3, 150]]
    assert election == {"epoch": 3, "start_offset": 150, "source": "assumed"}
    assert leader.as_list() == [[0, 0], [1, 100]]  # the leader's own cache is left alone
    # an epoch seen but dropped by the load (5, at the follower's log end) is passed over
    assert elect(leader, 150, follower, epochs_seen=5)[1]["epoch"] == 6
    # the checkpoint already shows the election: epoch 3 at the leader's log end
    _, election = elect(leader, 150, follower, cached_at_end=EpochEntry(3, 150))
    assert election == {"epoch": 3, "start_offset": 150, "source": "leader-epoch-checkpoint"}
    # ... but not one that is not above the follower's epochs: a new election
    _, election = elect(leader, 150, follower, epochs_seen=2, cached_at_end=EpochEntry(2, 150))
    assert election == {"epoch": 3, "start_offset": 150, "source": "assumed"}


def test_leader_b_behind_the_follower_one_round(tmp_path: Path) -> None:
    # A: 0@0, 1@100, 2@150, LEO 200. B: 0@0, 1@100, LEO 150 (it never saw epoch 2).
    # B elected: 0@0, 1@100, 3@150. A asks for 2; B's largest epoch <= 2 is 1, ending at 150
    # (where 3 starts). A has 1, ending at 150 (where its 2 starts): min(150, 150, 200) = 150.
    # (Was: "b answers epoch -1 ending at -1", the high watermark, offset 0.)
    a = replica(
        tmp_path / "a",
        [(0, 99, 0, ""), (100, 149, 1, ""), (150, 199, 2, "-a")],
        [(0, 0), (1, 100), (2, 150)],
    )
    b = replica(tmp_path / "b", [(0, 99, 0, ""), (100, 149, 1, "")], [(0, 0), (1, 100)])
    pd = verdict(a, b, leader="b")
    assert pd.truncation is not None
    assert (pd.truncation["rule"], pd.truncation["offset"]) == ("leader-epoch", 150)
    assert pd.truncation["offsets_truncated"] == 50
    assert [
        (s["follower_epoch"], s["leader_epoch"], s["leader_end_offset"])
        for s in pd.truncation["steps"]
    ] == [(2, 1, 150)]


def _two_rounds(tmp_path: Path, b_epochs: list[tuple[int, int]]) -> PartitionDiff:
    a = replica(
        tmp_path / "a",
        [(0, 49, 0, ""), (50, 99, 0, ""), (100, 199, 2, "-a")],
        [(0, 0), (2, 100)],
    )
    b = replica(tmp_path / "b", [(0, 49, 0, ""), (50, 99, 0, ""), (100, 149, 1, "-b")], b_epochs)
    return verdict(a, b, leader="b")


def test_leader_b_behind_the_follower_two_rounds(tmp_path: Path) -> None:
    # A: 0@0, 2@100, LEO 200. B: 0@0, 1@100, LEO 150. B elected: 0@0, 1@100, 3@150.
    # Round 1: A asks for 2; B answers (1, 150). A has no 1: its largest epoch below is 0,
    # ending at 100 (where its 2 starts): A truncates to min(100, 200) = 100, keeping 0@0.
    # Round 2: A asks for 0; B answers (0, 100) (where its 1 starts). A has 0, ending at its log
    # end 100: min(100, 100, 100) = 100, where the copies diverged. (Was: the high watermark,
    # offset 0, 200 offsets cut.)
    pd = _two_rounds(tmp_path, [(0, 0), (1, 100)])
    assert (pd.verdict, pd.diverged_at) == (DIVERGED, 100)
    t = pd.truncation
    assert t is not None and (t["rule"], t["offset"], t["offsets_truncated"]) == (
        "leader-epoch",
        100,
        100,
    )
    assert t["election"] == {"epoch": 3, "start_offset": 150, "source": "assumed"}
    assert t["steps"] == [
        {
            "follower_epoch": 2,
            "leader_epoch": 1,
            "leader_end_offset": 150,
            "follower_end_offset": 100,
            "truncate_to": 100,
        },
        {
            "follower_epoch": 0,
            "leader_epoch": 0,
            "leader_end_offset": 100,
            "follower_end_offset": 100,
            "truncate_to": 100,
        },
    ]
    assert not pd.truncation_misses_divergence
    code, out, err = run("diff", "--leader", "b", "a/t-0", "b/t-0", cwd=tmp_path)
    assert code == 1, err
    assert "leader b: follower a truncates by its leader epochs to offset 100" in out
    assert "b becomes leader in epoch 3 at its log end offset 150" in out
    assert "answers epoch -1" not in out


def test_the_leaders_checkpoint_already_holds_its_election(tmp_path: Path) -> None:
    # B's leader-epoch-checkpoint holds "3 150", at its log end: B was elected in epoch 3 and
    # has written nothing since. The load drops that entry, the election keeps it: the same
    # exchange as above, with epoch 3 taken from the checkpoint (not a new epoch 4).
    pd = _two_rounds(tmp_path, [(0, 0), (1, 100), (3, 150)])
    t = pd.truncation
    assert t is not None and (t["rule"], t["offset"]) == ("leader-epoch", 100)
    assert t["election"] == {
        "epoch": 3,
        "start_offset": 150,
        "source": "leader-epoch-checkpoint",
    }
    assert pd.epochs["b"]["entries"] == [[0, 0], [1, 100]]  # as the broker loads it


def test_several_unclean_elections_take_three_rounds(tmp_path: Path) -> None:
    # A history of unclean elections between two brokers, each leader writing 20 offsets:
    # epoch 0: B leads, writes 0..19; A copies 0..9. Epoch 1: A leads from its end 10 (B down),
    # writes 10..29. Epoch 2: B leads from 20, writes 20..39. Epoch 3: A from 30, 30..49.
    # Epoch 4: B from 40, 40..59. Epoch 5: A from 50, 50..69. Now B is elected (epoch 6):
    # A: 0@0, 1@10, 3@30, 5@50, LEO 70. B elected: 0@0, 2@20, 4@40, 6@60.
    # Round 1: A asks for 5; B's largest <= 5 is 4, ending at 60. A has no 4: its largest
    #   below is 3, ending at 50: A truncates to min(50, 70) = 50 (0@0, 1@10, 3@30 left).
    # Round 2: A asks for 3; B answers (2, 40). A has no 2: its 1 ends at 30: truncate to 30.
    # Round 3: A asks for 1; B answers (0, 20). A has 0, ending at 10 (where its 1 starts):
    #   min(10, 20, 30) = 10, where the copies diverged.
    a = replica(
        tmp_path / "a",
        [(0, 9, 0, ""), (10, 29, 1, "-a"), (30, 49, 3, "-a"), (50, 69, 5, "-a")],
        [(0, 0), (1, 10), (3, 30), (5, 50)],
    )
    b = replica(
        tmp_path / "b",
        [(0, 9, 0, ""), (10, 19, 0, ""), (20, 39, 2, "-b"), (40, 59, 4, "-b")],
        [(0, 0), (2, 20), (4, 40)],
    )
    pd = verdict(a, b, leader="b")
    assert (pd.verdict, pd.diverged_at) == (DIVERGED, 10)
    t = pd.truncation
    assert t is not None and (t["rule"], t["offset"], t["offsets_truncated"]) == (
        "leader-epoch",
        10,
        60,
    )
    assert t["election"] == {"epoch": 6, "start_offset": 60, "source": "assumed"}
    assert [
        (s["follower_epoch"], s["leader_epoch"], s["leader_end_offset"], s["truncate_to"])
        for s in t["steps"]
    ] == [(5, 4, 60, 50), (3, 2, 40, 30), (1, 0, 20, 10)]
    assert not pd.truncation_misses_divergence


def test_allow_lag_does_not_accept_a_lagging_leader(tmp_path: Path) -> None:
    # A (the leader by default) ends at 20 (0@0, 1@10), B at 30 (0@0, 1@10, 3@20). A elected:
    # 0@0, 1@10, 4@20. B asks for 3; A answers (1, 20); B has 1, ending at 20: it truncates to
    # min(20, 20, 30) = 20 and discards 20..29, records no replica keeps. Not agreement.
    replica(tmp_path / "a", LEADER_1[:4], [(0, 0), (1, 10)])
    replica(tmp_path / "b", LEADER_1, [(0, 0), (1, 10), (3, 20)])
    note = (
        "the leader (a) lags: follower b truncates to 20 and discards 10 offsets (20..29) that "
        "a does not have"
    )
    code, out, err = run("diff", "--allow-lag", "a/t-0", "b/t-0", cwd=tmp_path)
    assert code == 1, err  # was 0
    assert "a is a prefix of b" in out and note in out
    code, out, err = run("diff", "--allow-lag", "--format", "jsonl", "a/t-0", "b/t-0", cwd=tmp_path)
    assert code == 1, err
    pd = jsonl(out)[-2]
    assert (pd["verdict"], pd["lagging"], pd["leader"], pd["ok"]) == ("prefix", "a", "a", False)
    assert pd["truncation"]["offset"] == 20 and pd["truncation"]["offsets_truncated"] == 10
    assert any(n.startswith(note) for n in pd["notes"])
    assert jsonl(out)[-1]["ok"] is False
    # B as the leader: A is a follower catching up, which --allow-lag accepts
    code, out, err = run("diff", "--allow-lag", "--leader", "b", "a/t-0", "b/t-0", cwd=tmp_path)
    assert code == 0, err
    assert "lags:" not in out


def test_allow_compaction_and_lag_do_not_accept_a_lagging_leader() -> None:
    pd = PartitionDiff("t-0", "a", "b", MODULO_COMPACTION, "a", {}, {}, compacted="b")
    pd.lagging = "b"  # the follower lags
    assert accepted(pd, allow_lag=True, allow_compaction=True)
    assert not accepted(pd, allow_lag=False, allow_compaction=True)
    pd.lagging = "a"  # the leader lags
    assert not accepted(pd, allow_lag=True, allow_compaction=True)


def test_a_batch_failing_its_crc_is_named_a_corrupt_copy(tmp_path: Path) -> None:
    # B's copy of 5..9 has one byte flipped on disk (its stored CRC no longer matches): that is
    # a corrupt copy, which the text said nothing of (only the JSON's crc_valid did).
    replica(tmp_path / "a", [(0, 4, 0, ""), (5, 9, 0, "")], [(0, 0)])
    b = replica(tmp_path / "b", [(0, 4, 0, ""), (5, 9, 0, "")], [(0, 0)])
    log = b / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    position = len(batch(0, 4, 0))
    data[position + len(batch(5, 9, 0)) - 1] ^= 0x01  # the last header value of offset 9
    log.write_bytes(bytes(data))
    code, out, err = run("diff", "a/t-0", "b/t-0", cwd=tmp_path)
    assert code == 1, err
    assert (
        f"b: CRC mismatch at b/t-0/00000000000000000000.log:{position}, a corrupt copy, not a "
        "divergence"
    ) in out
    assert "a: CRC mismatch" not in out
    assert "note: b: 1 batch fails its CRC" in out
    code, out, err = run("diff", "--format", "jsonl", "a/t-0", "b/t-0", cwd=tmp_path)
    objs = jsonl(out)
    assert objs[0]["b"]["crc_valid"] is False and objs[0]["a"]["crc_valid"] is True
    assert any("1 batch fails its CRC" in n for n in objs[-2]["notes"])


# -- what the follower loses (issue 27) -------------------------------------------------------
def _reference_lost(part: Path, start: int) -> list[tuple[int, bytes, bytes, int]]:
    """The follower's records from ``start`` on, read by kafka-python (an independent reader)
    from its segment bytes: (offset, key, value, producer id)."""
    from kafka.record import MemoryRecords

    out = []
    for log in sorted(part.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while (b := records.next_batch()) is not None:
            out += [(r.offset, r.key, r.value, b.producer_id) for r in b if r.offset >= start]
    return out


@pytest.mark.parametrize("to", ["jsonl", "parquet"])
@needs_pyarrow
def test_export_lost_writes_what_the_follower_truncates(tmp_path: Path, to: str) -> None:
    a = replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)], segment_starts=(0, 10))
    b = replica(tmp_path / "b", FOLLOWER_1, [(0, 0), (1, 10), (2, 15)])
    dest = tmp_path / "lost"
    code, out, err = run(
        "diff", "--format", "jsonl", "--export-lost", to, str(dest), str(a), str(b)
    )
    assert code == 1, err
    (pd,) = [o for o in jsonl(out) if o["type"] == "partition-diff"]
    assert pd["lost"] == {
        "side": "b", "replica": "b", "path": str(b), "from_offset": 15, "to_offset": 24,
        "offsets": 10,
    }  # fmt: skip
    assert pd["refetched"] is None  # the truncation is at the divergence
    (summary,) = [o for o in jsonl(out) if o["type"] == "summary"]
    assert summary["lost_export"] == {
        "dest": str(dest), "format": to, "records": 10, "lost": 10, "refetched": 0,
        "partitions": 1,
    }  # fmt: skip
    want = _reference_lost(b, 15)
    if to == "jsonl":
        import base64
        import json

        rows = [
            json.loads(x) for f in sorted(dest.glob("*.json")) for x in f.read_text().splitlines()
        ]
        got = [(r["offset"], base64.b64decode(r["key"]), base64.b64decode(r["value"]),
                r["producer_id"]) for r in rows]  # fmt: skip
        labels = [(r["replica"], r["outcome"]) for r in rows]
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(dest)
        got = list(
            zip(
                *(table.column(c).to_pylist() for c in ("offset", "key", "value", "producer_id")),
                strict=True,
            )
        )
        labels = list(
            zip(*(table.column(c).to_pylist() for c in ("replica", "outcome")), strict=True)
        )
    assert sorted(got) == want and len(want) == 10
    assert labels == [("b", "lost")] * 10  # each row names its follower
    assert (dest / "_SUCCESS").exists()
    # a DEST that holds something is refused, before anything is written
    code, _, err = run("diff", "--export-lost", to, str(dest), str(a), str(b))
    assert code == 4 and "not empty" in err


@needs_pyarrow
def test_nothing_lost_is_an_empty_dataset(tmp_path: Path) -> None:
    a = replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)])
    b = replica(tmp_path / "b", LEADER_1[:3], [(0, 0), (1, 10)])  # a lagging follower
    code, out, err = run("diff", "--export-lost", "parquet", str(tmp_path / "l"), str(a), str(b))
    assert code == 1 and "0 records that the leader does not hold" in out
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "l")
    assert table.num_rows == 0 and table.column_names[-2:] == ["replica", "outcome"]


def test_three_replicas_each_against_the_leader(tmp_path: Path) -> None:
    """a leads; b diverged (truncates to 15, loses 15..24); c lags (loses nothing). With b
    named leader, a and c are judged against b."""
    a = replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)])
    b = replica(tmp_path / "b", FOLLOWER_1, [(0, 0), (1, 10), (2, 15)])
    c = replica(tmp_path / "c", LEADER_1[:3], [(0, 0), (1, 10)])
    code, out, _ = run("diff", "--format", "jsonl", str(a), str(b), str(c))
    verdicts = [o for o in jsonl(out) if o["type"] == "partition-diff"]
    assert [(o["b"], o["verdict"], o["truncation"]["offset"]) for o in verdicts] == [
        (str(b), DIVERGED, 15),
        (str(c), PREFIX, 15),
    ]
    code, out, _ = run("diff", str(a), str(b), str(c))
    assert f"=== leader a: {a}  follower b: {b}" in out and f"follower c: {c}" in out
    table = out[out.index("against leader a") :]
    assert "b" in table and "15" in table and str(c) not in table
    code, out, _ = run("diff", "--leader", "b", "--format", "jsonl", str(a), str(b), str(c))
    verdicts = [o for o in jsonl(out) if o["type"] == "partition-diff"]
    # sides in the command line's order (was: the leader always as side a, b's pair swapped)
    assert [(o["a"], o["b"]) for o in verdicts] == [(str(a), str(b)), (str(b), str(c))]
    assert [o["truncation"]["leader"] for o in verdicts] == ["b", "a"]  # the leader's side
    code, _, err = run("diff", "--leader", "d", str(a), str(b), str(c))
    assert code == 2 and "one of a, b, c" in err
    code, _, err = run("diff", str(a))
    assert code == 2 and "2 to 26 replicas" in err


def test_three_replicas_keep_the_command_lines_order_and_count_a_partition_once(
    tmp_path: Path,
) -> None:
    """Issue 37, item 7: with --leader b, the pair of a and b had b as side a (the labels
    swapped against the command line's), and the summary counted partition t-0 once per
    follower. Within each pair the replica named first is side a; the summary counts t-0
    once, by its worst verdict (a diverged, c lags)."""
    a = replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)], build=kp_batch)
    b = replica(tmp_path / "b", FOLLOWER_1, [(0, 0), (1, 10), (2, 15)], build=kp_batch)
    c = replica(tmp_path / "c", LEADER_1[:3], [(0, 0), (1, 10)], build=kp_batch)
    code, out, err = run("diff", "--leader", "b", "--format", "jsonl", str(a), str(b), str(c))
    assert code == 1, err
    objs = jsonl(out)
    verdicts = [o for o in objs if o["type"] == "partition-diff"]
    assert [(o["a"], o["b"], o["leader"]) for o in verdicts] == [
        (str(a), str(b), "b"),
        (str(b), str(c), "a"),
    ]
    assert [o["replicas"] for o in verdicts] == [{"a": "a", "b": "b"}, {"a": "b", "b": "c"}]
    assert [(o["truncation"]["leader"], o["truncation"]["follower"]) for o in verdicts] == [
        ("b", "a"),
        ("a", "b"),
    ]
    summary = objs[-1]
    assert (summary["partitions"], summary["diverged"], summary["prefix"]) == (1, 1, 0)
    code, out, err = run("diff", str(a), str(b), str(c))
    assert code == 1, err
    assert out.splitlines()[-1] == "klogtool diff: 1 partition: 1 diverged"


# -- a missing leader-epoch-checkpoint: what the broker's load leaves in the cache ------------
#
# LogLoader (Kafka 3.x/4.x, storage/.../log/LogLoader.java) rebuilds leader epochs only in the
# segments it recovers (LogSegment.recover assigns a batch's epoch when it is above the cache's
# latest): after an unclean shutdown the segments from the recovery point on, and whatever the
# shutdown a segment whose offset index is missing. A missing checkpoint file is created empty
# (CheckpointFile), so after a clean shutdown the cache starts empty and the follower, with no
# epoch to send, truncates to its high watermark (AbstractFetcherThread.truncateToHighWatermark).

CLEAN_SHUTDOWN = b'{"version":0,"brokerEpoch":7}'


def _no_checkpoint_follower(tmp_path: Path, *, clean: bool) -> tuple[Path, Path]:
    a = replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)], build=kp_batch)
    b = replica(tmp_path / "b", FOLLOWER_1, None, segment_starts=(0, 10), build=kp_batch)
    write_checkpoints(tmp_path / "b", replication_offset_checkpoint={("t", 0): 12})
    if clean:
        (tmp_path / "b" / ".kafka_cleanshutdown").write_bytes(CLEAN_SHUTDOWN)
    return a, b


def test_no_checkpoint_after_a_clean_shutdown_leaves_the_follower_its_high_watermark(
    tmp_path: Path,
) -> None:
    # Was: epochs rebuilt from every batch (0@0, 1@10, 2@15), truncation to 15 by the epochs.
    a, b = _no_checkpoint_follower(tmp_path, clean=True)
    pd = verdict(a, b)
    assert pd.epochs["b"]["source"] == "none" and pd.epochs["b"]["entries"] == []
    t = pd.truncation
    assert t is not None and (t["rule"], t["offset"], t["steps"]) == ("high-watermark", 12, [])
    assert any("clean shutdown" in n for n in pd.notes)


def test_no_checkpoint_after_an_unclean_shutdown_rebuilds_from_the_recovery_point(
    tmp_path: Path,
) -> None:
    a, b = _no_checkpoint_follower(tmp_path, clean=False)
    assert verdict(a, b).epochs["b"]["entries"] == [[0, 0], [1, 10], [2, 15]]  # recovery from 0
    # segments below the recovery point (10) are not walked: their epoch 0 is not rebuilt
    write_checkpoints(tmp_path / "b", recovery_point_offset_checkpoint={("t", 0): 10})
    pd = verdict(a, b)
    assert pd.epochs["b"]["source"] == "batches"
    assert pd.epochs["b"]["entries"] == [[1, 10], [2, 15]]
    t = pd.truncation
    assert t is not None and (t["rule"], t["offset"]) == ("leader-epoch", 15)


def test_a_segment_without_its_offset_index_is_recovered_even_after_a_clean_shutdown(
    tmp_path: Path,
) -> None:
    a, b = _no_checkpoint_follower(tmp_path, clean=True)
    (b / "00000000000000000010.index").unlink()
    pd = verdict(a, b)
    assert pd.epochs["b"]["entries"] == [[1, 10], [2, 15]]
    t = pd.truncation
    assert t is not None and (t["rule"], t["offset"]) == ("leader-epoch", 15)


def test_a_leader_without_checkpoint_after_a_clean_shutdown_has_only_its_election(
    tmp_path: Path,
) -> None:
    # A leads with no epochs but the one it is elected in (4, cached at its log end 30): B asks
    # for 2, which is below every epoch A has, and A answers (2, 30), its first start offset.
    # B's 2 ends at its log end 25: min(25, 30, 25) = 25, nothing cut, above the divergence at
    # 15. (Was: A's epochs rebuilt from its batches, the answer (1, 20), truncation to 15.)
    a = replica(tmp_path / "a", LEADER_1, None, build=kp_batch)
    (tmp_path / "a" / ".kafka_cleanshutdown").write_bytes(CLEAN_SHUTDOWN)
    b = replica(tmp_path / "b", FOLLOWER_1, [(0, 0), (1, 10), (2, 15)], build=kp_batch)
    pd = verdict(a, b)
    assert pd.epochs["a"]["source"] == "none"
    t = pd.truncation
    assert t is not None and (t["rule"], t["offset"]) == ("leader-epoch", 25)
    assert t["election"] == {"epoch": 4, "start_offset": 30, "source": "assumed"}
    assert [(s["leader_epoch"], s["leader_end_offset"]) for s in t["steps"]] == [(2, 30)]
    assert pd.truncation_misses_divergence
    assert any("no epoch but the one it is elected in" in n for n in pd.notes)


def _exported_rows(dest: Path) -> list[dict[str, Any]]:
    import json

    return [json.loads(x) for f in sorted(dest.glob("*.json")) for x in f.read_text().splitlines()]


@needs_pyarrow
def test_export_lost_tells_lost_records_from_re_fetched_ones_and_names_the_follower(
    tmp_path: Path,
) -> None:
    """Issue 37, item 7. Leader a; b diverged at 15 and, with no leader-epoch-checkpoint after a
    clean shutdown, truncates to its high watermark 12: 12..14 are re-fetched (a holds them the
    same), 15..24 lost. c diverged too and truncates to 15 by its epochs: 15..24 lost. d lags
    (0..14) and truncates to its high watermark 5: 5..14 re-fetched, nothing lost. Before,
    12..14 and 5..14 were exported as lost, and no row said which follower it came from.
    Every replica is written by kafka-python's encoder."""
    a = replica(tmp_path / "a", LEADER_1, [(0, 0), (1, 10), (3, 20)], build=kp_batch)
    b = replica(tmp_path / "b", FOLLOWER_1, None, build=kp_batch)
    c = replica(tmp_path / "c", FOLLOWER_1, [(0, 0), (1, 10), (2, 15)], build=kp_batch)
    d = replica(tmp_path / "d", LEADER_1[:3], None, build=kp_batch)
    for r, hw in (("b", 12), ("d", 5)):
        write_checkpoints(tmp_path / r, replication_offset_checkpoint={("t", 0): hw})
        (tmp_path / r / ".kafka_cleanshutdown").write_bytes(CLEAN_SHUTDOWN)
    dest = tmp_path / "lost"
    code, out, err = run(
        "diff", "--format", "jsonl", "--export-lost", "jsonl", str(dest), *map(str, (a, b, c, d))
    )
    assert code == 1, err
    objs = jsonl(out)
    pds = [o for o in objs if o["type"] == "partition-diff"]
    assert [o["truncation"]["offset"] for o in pds] == [12, 15, 5]

    def span(r: str, side: str, first: int, last: int) -> dict[str, Any]:
        path = str({"b": b, "c": c, "d": d}[r])
        return {"side": side, "replica": r, "path": path, "from_offset": first,
                "to_offset": last, "offsets": last - first + 1}  # fmt: skip

    assert [(o["lost"], o["refetched"]) for o in pds] == [
        (span("b", "b", 15, 24), span("b", "b", 12, 14)),
        (span("c", "b", 15, 24), None),
        (None, span("d", "b", 5, 14)),
    ]
    assert objs[-1]["lost_export"] == {
        "dest": str(dest), "format": "jsonl", "records": 33, "lost": 20, "refetched": 13,
        "partitions": 3,
    }  # fmt: skip
    rows = _exported_rows(dest)
    got = sorted((r["replica"], r["outcome"], r["offset"]) for r in rows)
    want = sorted(
        [("b", "re-fetched", o) for o in range(12, 15)]
        + [("b", "lost", o) for o in range(15, 25)]
        + [("c", "lost", o) for o in range(15, 25)]
        + [("d", "re-fetched", o) for o in range(5, 15)]
    )
    assert got == want
    # the records are the follower's, as kafka-python reads its segments
    import base64

    for r, part in (("b", b), ("d", d)):
        mine = sorted(
            (x["offset"], base64.b64decode(x["value"])) for x in rows if x["replica"] == r
        )
        ref = _reference_lost(part, 12 if r == "b" else 5)
        assert mine == [(o, value) for o, _key, value, _pid in ref]
    # the text says the same
    code, out, err = run("diff", str(a), str(b))
    assert code == 1, err
    assert (
        "b loses 10 offsets (15..24) that a does not hold; it re-fetches 3 (12..14) that a "
        "holds the same"
    ) in out
