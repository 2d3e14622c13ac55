"""Verifier severities that depend on what the broker repairs by itself."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.progress import Steps

from klogtool.log import layout, segment_checks
from klogtool.log.check.verifier import Verifier
from klogtool.log.context import ReadContext

TXN = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "logdir" / "txn-0"


def _findings(part: Path) -> dict[str, str]:
    return {f.code: f.severity for f in Verifier(ReadContext.of()).verify([str(part)])}


def _copy(tmp_path: Path) -> Path:
    part = tmp_path / "txn-0"
    shutil.copytree(TXN, part)
    return part


def test_fixture_is_clean(tmp_path: Path) -> None:
    assert _findings(_copy(tmp_path)) == {}


def test_missing_txnindex_entry_is_an_error_when_the_broker_trusts_the_segment(
    tmp_path: Path,
) -> None:
    part = _copy(tmp_path)
    for p in part.glob("*.txnindex"):
        p.unlink()
    assert _findings(part).get("txnindex-missing-abort") == "error"


def test_missing_txnindex_entry_is_a_warning_when_the_broker_recovers_the_segment(
    tmp_path: Path,
) -> None:
    part = _copy(tmp_path)
    for p in [*part.glob("*.txnindex"), *part.glob("*.index")]:
        p.unlink()
    found = _findings(part)
    assert found.get("txnindex-missing-abort") == "warning"
    assert "error" not in found.values()


LOGDIR = TXN.parent


def test_checkpoints_beyond_the_log_end(tmp_path: Path) -> None:
    from klogtool.formats.checkpoint import encode_offset_checkpoint

    logdir = tmp_path / "logdir"
    shutil.copytree(LOGDIR, logdir)
    far = {("txn", 0): 10**6}
    for name in (
        "log-start-offset-checkpoint",
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
        "cleaner-offset-checkpoint",
    ):
        (logdir / name).write_bytes(encode_offset_checkpoint(far))
    found = {
        (f.code, f.severity, f.offset) for f in Verifier(ReadContext.of()).verify([str(logdir)])
    }
    assert ("log-start-beyond-log-end", "error", 10**6) in found
    assert ("recovery-point-beyond-log-end", "warning", 10**6) in found
    assert ("high-watermark-beyond-log-end", "warning", 10**6) in found
    assert ("cleaner-checkpoint-beyond-log-end", "warning", 10**6) in found


def test_progress_moves_inside_a_segment_and_adds_up_to_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segment_checks, "_PROGRESS_STEP", 100)
    part = _copy(tmp_path)
    steps = Steps()
    assert not list(Verifier(ReadContext.of(progress=steps)).verify([str(part)]))
    logs = sorted(part.glob("*.log"))
    assert sum(steps) == sum(p.stat().st_size for p in logs)
    assert len(steps) > 2 * len(logs) and max(steps) < max(p.stat().st_size for p in logs)


def test_an_index_file_alone_gets_the_brokers_sanity_check(tmp_path: Path) -> None:
    from klogtool.formats.index import AbortedTxn, encode_txn_index

    below_base = encode_txn_index([AbortedTxn(0, 1, 0, 5, 6)])  # ends below base offset 100
    for suffix, data, code in (
        (".index", b"\x01" * 7, "index-sanity"),  # not a whole number of entries
        (".timeindex", b"\x01" * 7, "timeindex-sanity"),
        (".txnindex", below_base, "txnindex-sanity"),
    ):
        lone = tmp_path / f"00000000000000000100{suffix}"
        lone.write_bytes(data)
        found = {f.code: f.severity for f in Verifier(ReadContext.of()).verify([str(lone)])}
        assert found == {code: "error", "log-missing": "warning"}, suffix
        lone.unlink()


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("partition.metadata", "partition-metadata-corrupt"),
        ("meta.properties", "meta-properties-corrupt"),
        ("quorum-state", "quorum-state-corrupt"),
        ("leader-epoch-checkpoint", "leader-epoch-checkpoint-corrupt"),
        ("recovery-point-offset-checkpoint", "offset-checkpoint-corrupt"),
    ],
)
def test_a_text_file_that_does_not_parse(tmp_path: Path, name: str, code: str) -> None:
    bad = tmp_path / name
    bad.write_bytes(b"\xff\xfe not a kafka file\n")
    found = [(f.code, f.severity) for f in Verifier(ReadContext.of()).verify([str(bad)])]
    assert found == [(code, "error")]


def test_a_tree_of_broker_directories_is_searched_for_log_dirs(tmp_path: Path) -> None:
    """An incident copy: notes beside two brokers' data dirs, one and two levels down."""
    (tmp_path / "NOTES.md").write_text("copied from the brokers at 3 a.m.\n")
    shutil.copytree(LOGDIR, tmp_path / "broker-1" / "kafka-logs")
    shutil.copytree(TXN, tmp_path / "broker2" / "txn-0")  # a partition dir, not a log dir
    (tmp_path / "broker2" / "meta.properties").write_text((LOGDIR / "meta.properties").read_text())
    v = Verifier(ReadContext.of())
    found = list(v.verify([str(tmp_path)]))
    assert v.stats.segments >= 13  # every partition of both brokers
    assert {f.path for f in found} <= {str(p) for p in tmp_path.rglob("*")}
    # a directory holding Kafka files of its own is itself checked, never searched below
    assert layout.log_dirs_under(tmp_path / "broker-1" / "kafka-logs") == []
    assert layout.log_dirs_under(tmp_path) == [
        tmp_path / "broker-1" / "kafka-logs",
        tmp_path / "broker2",
    ]
