"""``export --engine spark`` and ``verify --engine spark`` through the CLI (in process, on the
session fixture's ``local[2]``): Spark's files hold the same rows as the local engine's and
the dump's; fleet verify prints exactly what local verify prints, with the same exit status.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spark_env import require_spark
from spark_expect import assert_int64_micros, dump_rows_for_compare, norm_dicts, table_rows
from support.cli import run
from support.paths import LOGDIR

require_spark()

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

SPARK = ("--engine", "spark", "--master", "local[2]")


def files_of(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_export_parquet_same_rows_as_local_engine(spark, tmp_path: Path) -> None:
    code, out, err = run(
        "export", "logdir", *SPARK, "--to", "parquet", str(tmp_path / "s"), "--format", "jsonl"
    )
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["rows"], summary["segments"]) == (190, 17)
    assert summary["files"] >= 1 and summary["bytes"] > 0
    code, _, err = run(
        "export", "logdir", "--engine", "local", "--to", "parquet", str(tmp_path / "l")
    )
    assert code == 0, err

    def rows(root: Path) -> list:
        files = sorted(root.glob("*.parquet"))
        for f in files:
            assert_int64_micros(f)
        return table_rows(pa.concat_tables(pq.read_table(f) for f in files))

    spark_rows = rows(tmp_path / "s")
    assert spark_rows == rows(tmp_path / "l") == dump_rows_for_compare([str(LOGDIR)])
    names = files_of(tmp_path / "s")
    assert "_SUCCESS" in names and not [n for n in names if n.endswith(".crc")]
    assert not list(tmp_path.glob(".*klogtool-tmp*"))


def test_export_jsonl_partitioned(spark, tmp_path: Path) -> None:
    dest = tmp_path / "j"
    # the --where string is handed to the Spark source as its where option
    opts = ("--partition-by", "topic,partition", "--where", "--no-control --offsets 2:")
    code, _, err = run("export", "logdir", *SPARK, "--to", "jsonl", str(dest), *opts)
    assert code == 0, err
    local = tmp_path / "lj"
    code, _, err = run("export", "logdir", "--engine", "local", "--to", "jsonl", str(local), *opts)
    assert code == 0, err

    def rows(root: Path) -> list:
        out = []
        for f in sorted(root.rglob("*.json")):
            topic = f.parent.parent.name.removeprefix("topic=")
            partition = int(f.parent.name.removeprefix("partition="))
            for line in f.read_text(encoding="utf-8").splitlines():
                obj = json.loads(line)
                obj.update(topic=topic, partition=partition)
                out.append(obj)
        return sorted(norm_dicts(out), key=lambda r: (r[0], r[1], r[2], r[3]))

    spark_dirs = {p.parent.relative_to(dest) for p in dest.rglob("*.json")}
    assert spark_dirs == {p.parent.relative_to(local) for p in local.rglob("*.json")}
    assert rows(dest) == rows(local)
    offsets = [r[3] for r in rows(dest)]
    assert offsets and min(offsets) == 2 and len(offsets) < 190


def test_export_failure_is_one_line_and_leaves_nothing(spark, tmp_path: Path) -> None:
    dest = tmp_path / "x"
    code, out, err = run("export", "corrupt/crc-flip-0", *SPARK, "--to", "parquet", str(dest))
    assert code == 3 and out == ""
    first = err.splitlines()[0]
    assert first.startswith("klogtool: error: ") and first.endswith(
        "00000000000000000000.log:242: batch CRC mismatch (stored 21935478, computed "
        "2267112965) (crc-mismatch)"
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "paths",
    [["logdir", "corrupt"], ["corrupt/torn-tail-0", "hostile/random.bin", "logdir"]],
    ids=["findings", "bad-input"],
)
def test_verify_spark_prints_what_local_prints(spark, paths: list[str]) -> None:
    for fmt in ("text", "jsonl"):
        local = run("verify", *paths, "--format", fmt)
        fleet = run("verify", *paths, "--format", fmt, *SPARK)
        assert fleet == local
        assert local[0] in (1, 3)


def test_no_java_is_a_one_line_error(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    bindir = tmp_path / "bin"  # only Python on the PATH (apt puts java beside /usr/bin/python3)
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(bindir), "NO_COLOR": "1"}
    env.pop("JAVA_HOME", None)
    r = subprocess.run(
        [sys.executable, "-m", "klogtool", "verify", "--engine", "spark", str(LOGDIR)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 3 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert lines[0] == (
        "klogtool: error: no Java runtime found (Spark needs Java 17 or newer on PATH or in "
        "JAVA_HOME) (java-missing)"
    )
    assert lines[1].startswith("hint: install a Java 17+ runtime")


def test_export_defaults_to_the_local_engine_without_java(tmp_path: Path) -> None:
    # issue 10: export started a JVM by default (82 s against 4.6 s on 0.5 MB); now Spark runs
    # only when asked for (--engine spark, --master, --remote or --conf)
    import os
    import subprocess
    import sys

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(bindir), "NO_COLOR": "1"}
    env.pop("JAVA_HOME", None)
    dest = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "klogtool", "export", str(LOGDIR), "--to", "jsonl", str(dest)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr == "" and any(p.name.startswith("part-") for p in dest.iterdir())


def test_engine_follows_the_spark_options() -> None:
    import click

    from klogtool.commands._options import chosen_engine

    assert chosen_engine(None, None, None, {}) == "local"
    assert chosen_engine(None, "local[2]", None, {}) == "spark"
    assert chosen_engine(None, None, "sc://h:1", {}) == "spark"
    assert chosen_engine(None, None, None, {"spark.x": "1"}) == "spark"
    assert chosen_engine("spark", None, None, {}) == "spark"
    with pytest.raises(click.UsageError):
        chosen_engine("local", "local[2]", None, {})
