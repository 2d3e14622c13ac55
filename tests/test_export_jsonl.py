"""export's JSON Lines, made a column at a time (``exporter.jsonl_bytes``, issue 42.2), against
the row-at-a-time reference: ``json.dumps`` of each row's Python objects (``jsonl_lines``), on
generated batches of every column type export writes, sliced and with nulls everywhere, and on
the rows of the fixture log dir."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import LOGS

pa = pytest.importorskip("pyarrow", reason="export needs the `spark` extra (pyarrow)")

from klogtool.log.export import exporter  # noqa: E402

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)  # controls, quotes, é, emoji


def reference(batch: Any) -> bytes:
    return b"".join(line.encode() + b"\n" for line in exporter.jsonl_lines(batch))


def columns(n: int) -> st.SearchStrategy[dict[str, Any]]:
    def nullable(s: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
        return st.lists(st.none() | s, min_size=n, max_size=n)

    header = st.tuples(TEXT, st.none() | st.binary(max_size=6))
    return st.fixed_dictionaries(
        {
            "key": nullable(st.sampled_from([b"", b"k", b"\x00\xff"]) | st.binary(max_size=9)),
            "value": nullable(st.binary(max_size=20)),
            "topic": nullable(st.sampled_from(["t", 'q"uote', "back\\slash"]) | TEXT),
            "offset": nullable(st.integers(-(1 << 63), (1 << 63) - 1)),
            "partition": nullable(st.integers(-(1 << 31), (1 << 31) - 1)),
            "headers": nullable(st.lists(header, max_size=3)),
            "is_control": nullable(st.booleans()),
            "value_decoded": nullable(TEXT),
        }
    )


def batch_of(cols: dict[str, list[Any]], n: int) -> Any:
    types = {
        "key": pa.binary(),
        "value": pa.binary(),
        "topic": pa.string(),
        "offset": pa.int64(),
        "partition": pa.int32(),
        "headers": HEADERS,
        "is_control": pa.bool_(),
        "value_decoded": pa.string(),
    }
    arrays = []
    for name, t in types.items():
        values = cols[name]
        if name == "headers":
            values = [None if h is None else [{"key": k, "value": v} for k, v in h] for h in values]
        arrays.append(pa.array(values, t))
    arrays.append(pa.array([1_700_000_000_000_123 + i for i in range(n)], pa.int64()))
    arrays[-1] = arrays[-1].cast(pa.timestamp("us", tz="UTC"))
    return pa.RecordBatch.from_arrays(arrays, names=[*types, "timestamp"])


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), columns(n))), st.data())
def test_column_at_a_time_is_the_rows_json(case: tuple[int, dict[str, Any]], data: Any) -> None:
    n, cols = case
    batch = batch_of(cols, n)
    start = data.draw(st.integers(0, n - 1))
    length = data.draw(st.integers(0, n - start))
    for part in (batch, batch.slice(start, length)):  # a slice: its arrays start at an offset
        got = exporter.jsonl_bytes(part)
        assert got == reference(part)
        assert [json.loads(line) for line in got.splitlines()] == [
            json.loads(line) for line in exporter.jsonl_lines(part)
        ]


def test_a_type_it_does_not_write_goes_the_row_way() -> None:
    """Floats (json.dumps's repr), a null struct in a list: the whole batch by rows."""
    batch = pa.RecordBatch.from_pydict(
        {
            "offset": pa.array([1, None], pa.int64()),
            "score": pa.array([0.1, float("inf")], pa.float64()),
        }
    )
    assert exporter.jsonl_bytes(batch) == reference(batch)
    assert b"0.1" in exporter.jsonl_bytes(batch)
    structs = pa.array([[None, {"key": "a", "value": b"x"}], None, []], HEADERS)
    batch = pa.RecordBatch.from_arrays([structs], names=["headers"])
    assert exporter.jsonl_bytes(batch) == reference(batch)
    assert exporter.jsonl_bytes(batch).startswith(b'{"headers":[null,{"key":"a","value":"eA=="}]}')


def test_the_fixture_log_dirs_rows(tmp_path: Path) -> None:
    """Every row export reads of the fixtures (each kind of partition, decoded internal topics
    too), read back from Parquet: the same lines both ways."""
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "out"
    for decoder in ("utf8", "internal"):
        shutil.rmtree(out, ignore_errors=True)
        args = ["export", "--jobs", "1", "--value-decoder", decoder, "--to", "parquet", str(out)]
        p = subprocess.run(
            [sys.executable, "-m", "klogtool", *args, str(LOGS / "logdir")],
            capture_output=True,
            text=True,
        )
        assert p.returncode in (0, 1), p.stderr
        files = sorted(out.rglob("*.parquet"))
        assert files
        for f in files:
            for batch in pq.read_table(f).to_batches():
                assert exporter.jsonl_bytes(batch) == reference(batch)
