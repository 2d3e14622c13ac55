"""diff, find and stats on every partition directory of the real-broker corpus: they read what
real brokers wrote, agree with verify's record count, and find a partition identical to itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import jsonl, run
from support.paths import CORPUS, needs_corpus

from klogtool.log import layout


def _partition_dirs() -> list[Path]:
    if not (CORPUS / "MANIFEST.md").is_file():
        return []
    return sorted({p.parent for p in CORPUS.rglob("*.log")})


PARTITIONS = _partition_dirs()


@needs_corpus
@pytest.mark.parametrize("part", PARTITIONS, ids=[str(p.relative_to(CORPUS)) for p in PARTITIONS])
def test_corpus_partition(part: Path) -> None:
    rc, out, err = run("verify", "--deep", "--format", "jsonl", str(part))
    summary = jsonl(out)[-1]
    assert summary["type"] == "summary", out
    records = summary["records"]

    rc, out, err = run("stats", "--format", "jsonl", "--sample", "0", "--jobs", "1", str(part))
    assert rc == 0, err
    total = jsonl(out)[-1]
    assert total["type"] == "stats"
    assert total["volume"]["records"] >= records - total["volume"].get("control_records", 0) >= 0

    rc, out, err = run("find", "--format", "jsonl", "--jobs", "1", "--limit", "3", str(part))
    assert rc in (0, 1, 3), err  # 3: damaged data the corpus holds on purpose
    found = [o for o in jsonl(out) if o["type"] == "record"]
    assert len(found) <= 3
    if rc == 0:
        assert found

    rc, out, err = run("diff", "--format", "jsonl", str(part), str(part))
    verdicts = [o["verdict"] for o in jsonl(out) if o["type"] == "partition-diff"]
    assert verdicts == ["identical"] and rc == 0, (out, err)


@needs_corpus
def test_verify_and_describe_the_whole_corpus_tree(tmp_path: Path) -> None:
    """The corpus root holds a manifest and, two to six levels down, the brokers' log dirs:
    verify and describe find every partition dir named like one (``<topic>-<n>``)."""
    named = [p for p in PARTITIONS if layout.parse_partition_dir_name(p.name)]
    rc, out, err = run("verify", "--format", "jsonl", str(CORPUS))
    assert rc in (0, 1), err
    summary = jsonl(out)[-1]
    assert summary["partitions"] >= len(named), summary
    rc, out, err = run("describe", "--format", "jsonl", str(CORPUS))
    assert rc == 0, err
    described = {o["path"] for o in jsonl(out) if o["type"] == "partition"}
    assert len(described) >= len(named)
    # find, stats and transactions resolve directories the same way (files.partition_dirs_of)
    rc, out, err = run("stats", "--format", "jsonl", "--sample", "0", "--jobs", "1", str(CORPUS))
    assert rc == 0, err
    assert len([o for o in jsonl(out) if o["type"] == "stats"]) >= len(named)
    rc, out, err = run("transactions", "--format", "jsonl", str(CORPUS))
    assert rc in (0, 1), err
    assert jsonl(out)[-1]["partitions"] >= len(named)
    rc, out, err = run("find", "--format", "jsonl", "--jobs", "1", "--limit", "1", str(CORPUS))
    assert rc == 0, err
    # dump-segments and export list the files of the same tree (files.expand)
    rc, out, err = run("dump-segments", "--format", "jsonl", str(CORPUS))
    assert rc in (0, 1), err
    logs = {o["path"] for o in jsonl(out) if o["type"] == "file" and o["kind"] == "log"}
    assert len(logs) >= len(PARTITIONS)
    rc, out, err = run(
        "export", "--engine", "local", "--jobs", "1", "--on-corrupt", "skip", "--format", "jsonl",
        "--to", "jsonl", str(tmp_path / "out"), str(CORPUS),
    )  # fmt: skip
    assert rc == 0, err
    assert jsonl(out)[-1]["segments"] >= len(PARTITIONS)
