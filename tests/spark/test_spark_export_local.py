"""``klogtool export --engine local`` (pyarrow, no JVM): files read back to the dump's rows;
the destination protocol (refusals with exit 4, --overwrite, nothing left on failure); the
``--on-corrupt`` modes; and the fleet verifier's split/merge with an in-process runner."""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path

import pytest
from spark_env import require_pyarrow
from spark_expect import assert_int64_micros, dump_rows_for_compare, norm_dicts, table_rows
from support.cli import ERROR_LINE, run
from support.paths import CORPUS, CORRUPT, LOGDIR, LOGS, needs_corpus

from klogtool.log.check import fleet_verify
from klogtool.log.check.verifier import Verifier
from klogtool.log.context import ReadContext

pa = require_pyarrow()
import pyarrow.dataset as ds  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402


def read_parquet(dest: Path, partitioned: bool = False):
    files = sorted(p for p in dest.rglob("*.parquet"))
    assert files, f"no Parquet files under {dest}"
    if not partitioned:
        return pa.concat_tables(pq.read_table(f) for f in files)
    table = ds.dataset(dest, format="parquet", partitioning="hive").to_table()
    return table


def sort_rows(rows):
    return sorted(rows, key=lambda r: (str(r[0]), r[1], r[2], r[3]))


def test_parquet_reads_back_to_the_dump(tmp_path: Path) -> None:
    dest = tmp_path / "out"
    code, out, err = run("export", "logdir", "--engine", "local", "--to", "parquet", str(dest))
    assert code == 0, err
    assert "rows" in out and "190" in out
    table = read_parquet(dest)
    assert table_rows(table) == dump_rows_for_compare([str(LOGDIR)])
    assert (dest / "_SUCCESS").is_file()
    assert not list(tmp_path.glob(".out.klogtool-tmp-*"))
    assert_int64_micros(next(dest.glob("*.parquet")))
    # dictionaries only where values repeat (topic), not for nearly distinct ones (offset)
    meta = pq.ParquetFile(next(dest.glob("*.parquet"))).metadata
    names = meta.schema.names
    group = meta.row_group(0)
    dictionary = {n for i, n in enumerate(names) if "RLE_DICTIONARY" in group.column(i).encodings}
    assert "topic" in dictionary and not {"offset", "key", "value"} & dictionary


def test_jsonl_partitioned_with_processes(tmp_path: Path) -> None:
    dest = tmp_path / "json"
    code, out, err = run(
        "export",
        "logdir",
        "--engine",
        "local",
        "--jobs",
        "2",
        "--target-split-bytes",
        "1k",
        "--to",
        "jsonl",
        str(dest),
        "--partition-by",
        "topic,partition",
        "--format",
        "jsonl",
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["type"] == "summary" and summary["rows"] == 190
    assert summary["splits"] >= 2
    rows = []
    for f in sorted(dest.rglob("*.json")):
        topic = f.parent.parent.name.removeprefix("topic=")
        partition = int(f.parent.name.removeprefix("partition="))
        for line in f.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            assert "topic" not in obj and isinstance(obj["timestamp"], int)
            obj.update(topic=topic, partition=partition)
            rows.append(obj)
    assert sort_rows(norm_dicts(rows)) == sort_rows(dump_rows_for_compare([str(LOGDIR)]))


def test_destination_refusals_and_overwrite(tmp_path: Path) -> None:
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "keep.txt").write_text("not ours")
    args = ("export", "logdir/v2-none-0", "--engine", "local", "--to", "parquet", str(dest))
    code, out, err = run(*args)
    assert code == 4 and out == ""
    assert err.splitlines()[0].endswith("the destination is not empty (destination-not-empty)")
    code, out, err = run(*args, "--dry-run")
    assert code == 4  # refused before planning is shown
    code, _, err = run(*args, "--overwrite")
    assert code == 0, err
    assert not (dest / "keep.txt").exists() and list(dest.glob("*.parquet"))
    # inside an input directory: refused (it would end up in the log dir)
    inside = LOGS / "logdir" / "export-here"
    code, _, err = run("export", "logdir", "--engine", "local", "--to", "jsonl", str(inside))
    assert code == 4 and "inside an input" in err and not inside.exists()


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "a" / "b"
    code, out, err = run(
        "export", "logdir", "--to", "parquet", str(dest), "--dry-run", "--format", "jsonl"
    )
    assert code == 0, err
    objs = [json.loads(x) for x in out.splitlines()]
    assert objs[0]["type"] == "split" and objs[-1]["type"] == "summary"
    assert objs[-1]["rows"] is None and objs[-1]["segments"] == 17
    assert not (tmp_path / "a").exists()


def test_on_corrupt_modes(tmp_path: Path) -> None:
    base = ("export", "corrupt/crc-flip-0", "--engine", "local", "--to", "parquet")
    code, out, err = run(*base, str(tmp_path / "fail"))
    assert code == 3 and out == ""
    assert len(err.splitlines()) == 2  # the error line and its hint
    import re

    assert re.match(ERROR_LINE, err.splitlines()[0])
    assert ":242: batch CRC mismatch" in err and "(crc-mismatch)" in err
    assert not (tmp_path / "fail").exists() and not list(tmp_path.iterdir())

    code, _, err = run(*base, str(tmp_path / "skip"), "--on-corrupt", "skip")
    assert code == 0, err
    dump = dump_rows_for_compare([str(CORRUPT / "crc-flip-0")], allow_findings=True)
    expected = [r for r in dump if not (r[2] == 0 and r[10] == 242)]
    assert table_rows(read_parquet(tmp_path / "skip")) == expected

    code, out, err = run(*base, str(tmp_path / "report"), "--on-corrupt", "report")
    assert code == 1, err
    table = read_parquet(tmp_path / "report")
    errors = [r for r in table.to_pylist() if r["error_code"]]
    assert [(e["error_code"], e["position"]) for e in errors] == [("crc-mismatch", 242)]
    code, _, _ = run(*base, str(tmp_path / "nocrc"), "--no-verify")
    assert code == 0


def test_usage_errors(tmp_path: Path) -> None:
    x = str(tmp_path / "x")
    code, _, err = run(
        "export", "logdir", "--engine", "local", "--master", "local[2]", "--to", "parquet", x
    )
    assert code == 2 and "--engine spark" in err
    code, _, err = run("export", "logdir", "--to", "csv", x)
    assert code == 2
    code, _, err = run("export", "logdir", "--to", "parquet", x, "--partition-by", "key")
    assert code == 2
    code, _, err = run("export", "nope", "--to", "parquet", x)
    assert code == 3 and "no such file" in err


# -- fleet verify, in process ----------------------------------------------------------------
CASES = [
    ["logdir"],
    ["corrupt"],
    ["corrupt/torn-tail-0", "logdir/txn-0"],
    ["logdir/v2-none-0/00000000000000000017.log", "logdir/v1-gzip-0/00000000000000000000.index"],
    ["logdir", "hostile/random.bin", "logdir/txn-0"],  # an error after findings
    ["hostile/junk"],
]


@pytest.mark.parametrize("deep", [False, True])
@pytest.mark.parametrize("paths", CASES, ids=lambda p: "+".join(p))
def test_fleet_verifier_equals_the_verifier(paths: list[str], deep: bool, monkeypatch) -> None:
    monkeypatch.chdir(LOGS)

    def outcome(v):
        found, err = [], None
        try:
            found = list(v.verify(paths))
        except Exception as e:  # noqa: BLE001 (compared below)
            err = (type(e).__name__, str(e), getattr(e, "path", None))
        return found, vars(v.stats), err

    local = outcome(Verifier(ReadContext.of(), deep=deep))
    runner = partial(fleet_verify.run_splits_here, ctx=ReadContext.of(), deep=deep)
    for target in (1, 1 << 30):
        fleet = fleet_verify.FleetVerifier(
            runner, ReadContext.of(), deep=deep, target_split_bytes=target
        )
        assert outcome(fleet) == local


def test_fleet_rows_round_trip(tmp_path: Path) -> None:
    plan = fleet_verify.plan([str(CORRUPT)])
    splits = plan.splits(1)
    assert len(splits) == len(plan.units) == 10
    assert fleet_verify.splits_from_json(fleet_verify.splits_to_json(splits)) == splits
    rows = []
    for u in plan.units:
        rows += fleet_verify.result_rows(u, fleet_verify.run_unit(u, ReadContext.of()))
    back = fleet_verify.rows_to_results(rows)
    direct = fleet_verify.run_splits_here(splits, ReadContext.of())
    assert {i: (r.findings, r.stats, r.bounds) for i, r in back.items()} == {
        i: (r.findings, r.stats, r.bounds) for i, r in direct.items()
    }
    shutil.rmtree(tmp_path)


def test_missing_extras_are_one_line_errors(monkeypatch, tmp_path: Path) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "klogtool.spark", None)  # as if pyspark were missing
    code, out, err = run("verify", "--engine", "spark", "logdir")
    assert code == 3 and out == ""
    assert err.splitlines()[0].startswith("klogtool: error: the Spark engine is not installed")
    assert "pip install 'klogtool[spark]'" in err
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    never = tmp_path / "never"
    code, _, err = run("export", "logdir", "--engine", "local", "--to", "parquet", str(never))
    assert code == 3 and "pyarrow" in err.splitlines()[0]
    assert not never.exists()


def test_empty_input_still_writes_a_schema(tmp_path: Path) -> None:
    part = tmp_path / "empty-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(b"")
    dest = tmp_path / "out"
    code, out, err = run("export", str(part), "--engine", "local", "--to", "parquet", str(dest))
    assert code == 0, err
    table = read_parquet(dest)
    assert table.num_rows == 0 and table.schema.names[:3] == ["key", "value", "topic"]


@needs_corpus
def test_kraft_snapshots_are_exported_like_segments(tmp_path: Path) -> None:
    # issue 10: export left out every .checkpoint (3,832 rows against 5,006 records)
    for meta in sorted(CORPUS.rglob("__cluster_metadata-0")):
        logdir = meta.parent
        dest = tmp_path / logdir.parent.name
        code, _out, err = run(
            "export", str(logdir), "--engine", "local", "--to", "jsonl", str(dest)
        )
        assert code == 0, err
        rows = [json.loads(x) for f in dest.glob("part-*") for x in f.read_text().splitlines()]
        code, out, err = run("verify", "--deep", "--format", "jsonl", str(logdir))
        assert code in (0, 1), err
        assert len(rows) == json.loads(out.splitlines()[-1])["records"] > 0
        assert any(r["segment"] is None for r in rows)  # a snapshot's rows: no segment base
