"""Verifier severities that depend on what the broker repairs by itself."""

from __future__ import annotations

import shutil
from pathlib import Path

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
