"""An export's file appears whole or not at all, and a second writer of the same name (a
Spark task's retry, a speculative copy) replaces it whole (exporter._Output)."""

from __future__ import annotations

from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="export writes with pyarrow (the spark extra)")
pq = pytest.importorskip("pyarrow.parquet")

from klogtool.log.export import exporter  # noqa: E402

SCHEMA = pa.schema([("offset", pa.int64())])


def _batch(*offsets: int) -> pa.RecordBatch:
    return pa.record_batch([pa.array(offsets, pa.int64())], schema=SCHEMA)


def test_a_file_appears_only_when_closed_and_the_last_writer_wins(tmp_path: Path) -> None:
    name = str(tmp_path / "d" / "part-00000-t-c000.snappy.parquet")
    first = exporter._Output(name, "parquet", SCHEMA)
    second = exporter._Output(name, "parquet", SCHEMA)  # the retry, started meanwhile
    first.write(_batch(1, 2))
    second.write(_batch(1, 2, 3))
    assert not Path(name).exists()  # nothing half-written is visible
    assert first.close() > 0
    assert pq.read_table(name).column(0).to_pylist() == [1, 2]
    second.close()
    assert pq.read_table(name).column(0).to_pylist() == [1, 2, 3]
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [Path(name).name]


@pytest.mark.parametrize("to", ["parquet", "jsonl"])
def test_a_discarded_file_leaves_nothing(tmp_path: Path, to: str) -> None:
    out = exporter._Output(str(tmp_path / "part-00001-t-c000.x"), to, SCHEMA)
    out.write(_batch(7))
    out.discard()
    assert list(tmp_path.iterdir()) == []
