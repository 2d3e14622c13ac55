"""``explain``: the per-segment answers are the planners' own (compact, retention-sweep,
verify), leftovers are reported and never touched, and the CLI's text/jsonl/json output."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from support.cli import jsonl, run, run_on_terminal
from support.paths import CORRUPT, LOGDIR
from support.rewrite import T0, generate, materialise, records, tree, write_partition

from klogtool.formats import codecs
from klogtool.formats.snapshot import encode_snapshot
from klogtool.formats.v2 import encode_batch
from klogtool.log.context import ReadContext
from klogtool.log.partition import load_partition
from klogtool.log.rewrite.cleaner import plan_compaction
from klogtool.log.rewrite.explain import PartitionExplain, explain_partition
from klogtool.log.rewrite.retention import DELETE, plan_retention
from klogtool.log.topicconfig import TopicConfig

NOW = T0 + 3_600_000


def _assert_reuses_planners(
    ex: PartitionExplain, part: Path, cfg: TopicConfig, hw: int | str | None = None
) -> None:
    view = load_partition(part)
    cplan = plan_compaction(
        view, cfg, now=NOW, high_watermark=hw, simulate=True, ctx=ReadContext.of()
    )
    rplan = plan_retention(view, cfg, now=NOW, high_watermark=hw)
    assert [s.base_offset for s in ex.segments] == [s.base_offset for s in cplan.segments]
    assert [s.base_offset for s in ex.segments] == [d.base_offset for d in rplan.decisions]
    for s, c, r in zip(ex.segments, cplan.segments, rplan.decisions, strict=True):
        assert s.compaction is not None and s.retention is not None
        assert (s.compaction.status, s.compaction.why, s.compaction.group) == (
            c.status,
            c.why,
            c.group,
        )
        assert s.compaction.counts() == c.counts()
        assert s.compaction.bytes_after == c.bytes_after
        assert s.retention == r
    assert ex.compaction is not None and ex.retention is not None
    assert ex.compaction.dirty_ratio == cplan.dirty_ratio
    assert ex.compaction.eligibility == cplan.eligibility
    assert ex.retention.new_log_start_offset == rplan.new_log_start_offset
    assert [s.active for s in ex.segments] == [False] * (len(ex.segments) - 1) + [True]


def test_fixture_partition_matches_planners() -> None:
    part = LOGDIR / "v2-none-0"
    cfg = dataclasses.replace(TopicConfig(), retention_ms=1_000)  # everything is old
    before = tree(part)
    ex = explain_partition(part, cfg, now=NOW, ctx=ReadContext.of())
    _assert_reuses_planners(ex, part, cfg)
    assert ex.retention is not None and ex.retention.deleted  # the rule is reported
    assert ex.segments[0].retention is not None
    assert ex.segments[0].retention.action == DELETE
    assert ex.segments[0].retention.rule == "retention.ms"
    assert all(s.index_health == "ok" for s in ex.segments)
    assert ex.snapshots == [17, 27] and ex.latest_snapshot == 27
    assert [s.snapshot_at_end for s in ex.segments] == [True, True]
    assert ex.leftovers == [] and ex.on_load == []
    assert tree(part) == before  # read-only


def test_generated_compacted_partition(tmp_path: Path) -> None:
    g = generate(seed=7, codec=codecs.LZ4, segments=4, batches_per_segment=6)
    part = materialise(g, tmp_path / "logdir", "orders-0")
    cfg = dataclasses.replace(TopicConfig(), cleanup_policy=("compact",))
    before = tree(tmp_path)
    ex = explain_partition(part, cfg, now=NOW, ctx=ReadContext.of())
    _assert_reuses_planners(ex, part, cfg)
    assert ex.compaction is not None and ex.compaction.eligible
    cleaned = [s for s in ex.segments if s.compaction and s.compaction.group is not None]
    assert cleaned and sum(s.compaction.removed for s in cleaned if s.compaction) > 0
    assert ex.segments[-1].compaction is not None
    assert ex.segments[-1].compaction.status == "active"
    assert not any("never compacts" in n for n in ex.notes)
    assert tree(tmp_path) == before
    # with the high watermark forced to 0 nothing is cleanable, and both planners agree
    ex0 = explain_partition(part, cfg, now=NOW, high_watermark=0, ctx=ReadContext.of())
    _assert_reuses_planners(ex0, part, cfg, hw=0)
    assert ex0.compaction is not None and ex0.compaction.why_not is not None


def test_leftover_swap_reported_not_applied() -> None:
    part = CORRUPT / "leftover-swap-0"
    before = tree(part)
    ex = explain_partition(part, TopicConfig(), now=NOW, ctx=ReadContext.of())
    assert "00000000000000000000.log.swap" in ex.leftovers
    assert "00000000000000000017.log.cleaned" in ex.leftovers
    assert any("completed swap" in w for w in ex.on_load)
    assert tree(part) == before


def test_index_health() -> None:
    ex = explain_partition(CORRUPT / "bad-index-0", TopicConfig(), now=NOW, ctx=ReadContext.of())
    first, last = ex.segments
    assert first.index_health == "bad"
    assert {f.code for f in first.index_findings} == {"index-not-on-batch", "index-not-increasing"}
    assert last.index_health == "ok" and not first.log_findings
    missing = explain_partition(
        CORRUPT / "missing-index-0", TopicConfig(), now=NOW, ctx=ReadContext.of()
    )
    assert missing.segments[0].index_health == "warning"
    assert [f.code for f in missing.segments[0].index_findings] == ["index-missing"]


def test_corrupt_log_is_explained_not_fatal() -> None:
    ex = explain_partition(CORRUPT / "torn-tail-0", TopicConfig(), now=NOW, ctx=ReadContext.of())
    assert ex.compaction is None and any("compaction cannot be planned" in n for n in ex.notes)
    assert ex.retention is not None
    assert [f.code for f in ex.segments[-1].log_findings] == ["torn-tail"]
    assert not ex.log_end_clean


def test_cli_text() -> None:
    code, out, err = run("explain", "corrupt/leftover-swap-0", "--now", str(NOW))
    assert code == 0, err
    assert "(active)" in out
    assert "leftover files: 00000000000000000000.log.swap" in out
    assert "Traceback" not in out + err
    code, out, _ = run("explain", "corrupt/bad-index-0", "--now", str(NOW))
    assert code == 0 and "index-not-on-batch" in out


def test_cli_jsonl_and_json() -> None:
    args = ("explain", "logdir/v2-none-0", "--now", str(NOW), "--config")
    code, out, err = run(*args, "v2-none=cleanup.policy=compact", "--format", "jsonl")
    assert code == 0, err
    objs = jsonl(out)
    assert [o["type"] for o in objs] == ["segment_explain", "segment_explain", "partition_explain"]
    assert [o["active"] for o in objs[:2]] == [False, True]
    assert objs[0]["compaction_status"] == "dirty" and objs[0]["compaction"]["superseded"] > 0
    summary = objs[-1]
    assert summary["cleanup_policy"] == "compact" and summary["compaction_eligible"] is True
    assert summary["high_watermark"] == 27
    code, out, _ = run(*args[:-1], "--format", "json", "--high-watermark", "0")
    assert code == 0
    arr = json.loads(out)
    assert arr[-1]["type"] == "partition_explain" and arr[-1]["high_watermark"] == 0


@pytest.mark.parametrize("path", ["logdir", "nowhere-0", "logdir/meta.properties"])
def test_cli_not_a_partition_dir(path: str) -> None:
    code, out, err = run("explain", path)
    assert code == 3
    assert err.startswith("klogtool: error: ") and "Traceback" not in err
    assert out == ""


def test_text_fits_80_columns_without_cutting(tmp_path: Path) -> None:
    """On an 80-column terminal the table cut its headers and cells (``segm…``, ``dele…``):
    nothing is cut now; the least useful columns are left out first, and named under the
    table, and text wraps. Fails before the change."""
    name = "orders-with-a-rather-long-topic-name-for-explain-0"
    shutil.copytree(LOGDIR / "v2-none-0", tmp_path / name)
    for cols in (80, 60):
        code, out, _err, rows = run_on_terminal(
            "explain", "--now", "2024-05-01T12:00:00Z", name, cwd=tmp_path, columns=cols
        )
        assert code == 0
        assert "…" not in out
        table = [r for r in rows if r and r[0] in "┏┃┡│└"]
        assert table and all(len(r) <= cols for r in table), table
        heads = [r.split("┃")[1:-1] for r in table if r.startswith("┃")]
        # each header, its lines joined without blanks ("largesttimestamp")
        headers = [
            "".join(h[k].strip() for h in heads).replace(" ", "") for k in range(len(heads[0]))
        ]
        (note,) = [r for r in rows if r.startswith("(not shown at")]
        assert headers[:2] == ["segment", "bytes"] and "compaction" in headers
        every = ("segment", "last", "bytes", "largest timestamp", "age", "compaction")
        for h in (*every, "retention", "indexes", "snapshot"):  # shown, or named as left out
            assert h.replace(" ", "") in headers or h in note, (h, headers, note)
        segments = "".join(r.split("│")[1].strip() for r in table if r.startswith("│"))
        assert segments == "017 (active)"
        retention = "".join(r.split("│")[-2].strip() for r in table if r.startswith("│"))
        assert retention == "keephigh-watermarkkeepafter-kept-segment"


def test_many_producer_snapshots_are_counted_not_listed(tmp_path: Path) -> None:
    """39 snapshot offsets were printed one by one: now their count, the first and the last
    few. Fails before the change (the line listed all 39)."""
    part = tmp_path / "t-0"
    bases = range(0, 3900, 100)
    write_partition(part, [(b, [encode_batch(records(range(b, b + 100)))]) for b in bases])
    for b in bases:
        (part / f"{b:020d}.snapshot").write_bytes(encode_snapshot([]))
    code, out, err = run("explain", str(part), "--now", str(NOW), cwd=tmp_path)
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if "producer snapshot" in x]
    assert line.startswith("  t-0: 39 producer snapshots: 0, 100, 200 ... 3,700, 3,800; ")
    assert "[" not in line and "1,000" not in line
    shutil.rmtree(part)
    write_partition(part, [(0, [encode_batch(records(range(5)))])])
    (part / f"{5:020d}.snapshot").write_bytes(encode_snapshot([]))
    code, out, err = run("explain", str(part), "--now", str(NOW), cwd=tmp_path)
    assert "  t-0: 1 producer snapshot: 5; loading" in out


def test_log_range_is_inclusive_and_a_deleted_segment_is_singular() -> None:
    """The title's a..b is inclusive like dump-segments' (was 0..15 for offsets 0 to 14), with
    the log end said; one segment to delete is '1 segment' (was '1 segment(s)')."""
    code, out, err = run(
        "explain", "logdir/txn-0", "--now", "1800000000000", "--config", "txn=retention.ms=1000"
    )
    assert code == 0, err
    assert out.startswith("txn-0: log 0..14 (log end 15), high watermark 15")
    assert "txn-0: retention: would delete 1 segment, 856 bytes" in out
