"""The index checks give the same findings from verify's walk (CRCs checked, records decoded)
and from rebuild-index's own walk (headers only), on fixtures, real broker files and damaged
index files."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from support.paths import CORPUS, LOGDIR, needs_corpus

from klogtool.formats import DEFAULT_LIMITS
from klogtool.log import layout
from klogtool.log.check.verifier import SegmentSummary, Verifier
from klogtool.log.context import ReadContext
from klogtool.log.findings import Finding
from klogtool.log.indexcheck import about_index, check_segment_indexes
from klogtool.log.txnreplay import TxnReplay


def _key(f: Finding) -> tuple[object, ...]:
    return (f.severity, f.code, f.path, f.position, f.offset, f.message)


def _both(part_dir: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    part = layout.scan_partition_dir(part_dir)
    segs = [s for s in part.segments if s.log is not None]
    verified, walked = [], []
    txns = TxnReplay()
    for i, seg in enumerate(segs):
        active = i == len(segs) - 1
        open_at_start = dict(txns.open)
        found = Verifier(ReadContext.of()).verify_segment(
            seg, SegmentSummary(seg.base_offset), txns, active=active, missing_index_ok=True
        )
        verified += [_key(f) for f in found if about_index(f.code)]
        own = check_segment_indexes(
            seg, active=active, open_txns=open_at_start, limits=DEFAULT_LIMITS
        )
        walked += [_key(f) for f in own]
    return verified, walked


def _partitions(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*") if p.is_dir() and layout.parse_partition_dir_name(p.name)
    )


def _agree(root: Path, at_least: int) -> None:
    parts = _partitions(root)
    assert len(parts) >= at_least
    for part in parts:
        verified, walked = _both(part)
        assert walked == verified, part


def test_fixtures() -> None:
    _agree(LOGDIR, 12)


@needs_corpus
def test_real_broker_files() -> None:
    _agree(CORPUS, 1)


@pytest.mark.parametrize("seed", range(12))
def test_damaged_index_files(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    part = tmp_path / "txn-0"
    shutil.copytree(LOGDIR / ("txn-0" if seed % 2 else "v2-none-0"), part)
    for idx in sorted(part.glob("*index")):
        data = bytearray(idx.read_bytes())
        if not data:
            continue
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data) + 1)]
        idx.write_bytes(bytes(data))
    verified, walked = _both(part)
    assert walked == verified
