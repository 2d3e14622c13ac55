"""Verifier severities that depend on what the broker repairs by itself."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from klogtool.log import verifier
from klogtool.log.verifier import Verifier

TXN = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "logdir" / "txn-0"


def _findings(part: Path) -> dict[str, str]:
    return {f.code: f.severity for f in Verifier().verify([str(part)])}


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
    found = {(f.code, f.severity, f.offset) for f in Verifier().verify([str(logdir)])}
    assert ("log-start-beyond-log-end", "error", 10**6) in found
    assert ("recovery-point-beyond-log-end", "warning", 10**6) in found
    assert ("high-watermark-beyond-log-end", "warning", 10**6) in found
    assert ("cleaner-checkpoint-beyond-log-end", "warning", 10**6) in found


def test_progress_moves_inside_a_segment_and_adds_up_to_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verifier, "_PROGRESS_STEP", 100)
    part = _copy(tmp_path)
    steps: list[int] = []
    assert not list(Verifier(progress=steps.append).verify([str(part)]))
    logs = sorted(part.glob("*.log"))
    assert sum(steps) == sum(p.stat().st_size for p in logs)
    assert len(steps) > 2 * len(logs) and max(steps) < max(p.stat().st_size for p in logs)
