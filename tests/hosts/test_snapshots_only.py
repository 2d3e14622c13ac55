"""A KRaft ``__cluster_metadata-0`` whose segments its snapshots replaced: snapshots
(``<end offset>-<epoch>.checkpoint``) and no ``.log``, as 3 of the real log dirs hold it
(issue 37): every command answers, none crashes (rebuild-index ended with exit 70), and the
log is where KafkaMetadataLog puts it: starting and ending at the latest snapshot's end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.cli import jsonl, run
from support.metadata import metadata_batch, topic_record
from support.paths import LOGDIR

from klogtool.formats.payloads.schema import uuid_to_text

pytestmark = pytest.mark.usefixtures("no_fsync")


def snapshots_only(root: Path) -> Path:
    logdir = root / "kafka-logs"
    logdir.mkdir()
    shutil.copy(LOGDIR / "meta.properties", logdir)
    meta = logdir / "__cluster_metadata-0"
    meta.mkdir()
    for end in (7752, 14926):
        records = [topic_record(f"t{i}", uuid_to_text(bytes([i + 1]) * 16)) for i in range(3)]
        (meta / f"{end:020d}-0000000001.checkpoint").write_bytes(metadata_batch(0, records))
    (meta / "leader-epoch-checkpoint").write_text("0\n1\n1 0\n")
    (meta / "quorum-state").write_text('{"leaderId":1,"leaderEpoch":1,"data_version":0}')
    return meta


@pytest.mark.parametrize(
    "args",
    [["rebuild-index"], ["rebuild-index", "--check"], ["truncate-recovery", "--dry-run"]],
    ids=lambda a: " ".join(a),
)
def test_the_repair_commands_have_nothing_to_do(tmp_path: Path, args: list[str]) -> None:
    meta = snapshots_only(tmp_path)
    before = {p.name: p.read_bytes() for p in meta.iterdir()}
    for path in (meta, meta.parent):
        code, _out, err = run(*args, str(path), cwd=tmp_path)
        assert code == 0, err
        assert "internal error" not in err
    assert {p.name: p.read_bytes() for p in meta.iterdir()} == before


def test_describe_puts_the_log_where_its_latest_snapshot_ends(tmp_path: Path) -> None:
    meta = snapshots_only(tmp_path)
    code, out, err = run("describe", "--format", "jsonl", str(meta), cwd=tmp_path)
    assert code == 0, err
    (part,) = jsonl(out)
    assert (part["segments"], part["log_start_offset"], part["log_end_offset"]) == (0, 14926, 14926)
    code, out, err = run("describe", str(meta), cwd=tmp_path)
    assert "empty (log end 14,926)" in out, out


def test_find_says_there_was_nothing_to_search(tmp_path: Path) -> None:
    meta = snapshots_only(tmp_path)
    code, out, err = run("find", "--key", "k", str(meta), cwd=tmp_path)
    assert out == ""
    assert code == 1, err
    assert err.count("no record matched") == 1, err
    assert "no segments to search" in err, err


def test_a_partition_named_dot_is_shown_by_its_name(tmp_path: Path) -> None:
    """`describe .` and `truncate-recovery --dry-run .` from inside a partition labelled it
    `.`; a partition is known by its name."""
    meta = snapshots_only(tmp_path)
    for args in (["describe"], ["truncate-recovery", "--dry-run"]):
        code, out, err = run(*args, ".", "--format", "jsonl", cwd=meta)
        assert code == 0, err
        paths = {o.get("path") for o in jsonl(out) if o.get("type") == "partition"}
        assert paths == {"__cluster_metadata-0"}, (args, out)
        code, out, err = run(*args, ".", cwd=meta)
        assert code == 0, err
        assert "__cluster_metadata-0" in out and "\n. " not in out and not out.startswith(". ")
