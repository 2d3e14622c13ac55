"""PATH resolution: one resolver per need (files.kafka_dirs for reading, targets.resolve for
writing, layout.segment_files for a segment named by one of its files)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.paths import LOGS

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.log import layout, targets
from klogtool.log.files import kafka_dirs, partition_dirs_of
from klogtool.log.writing import select_partitions

LOGDIR = LOGS / "logdir"


def _tree(tmp_path: Path) -> Path:
    """/tree/brokers/{b1,b2}/<log dir>: two log dirs two levels under the PATH."""
    for b in ("b1", "b2"):
        shutil.copytree(LOGDIR / "v2-none-0", tmp_path / "brokers" / b / "v2-none-0")
        (tmp_path / "brokers" / b / "meta.properties").write_text("version=1\n")
    return tmp_path / "brokers"


def test_kafka_dirs_of_a_partition_a_log_dir_and_a_tree(tmp_path: Path) -> None:
    part = LOGDIR / "v2-none-0"
    assert [(d.path, d.logdir) for d in kafka_dirs(part, "p")] == [(part, None)]
    (d,) = kafka_dirs(LOGDIR, "L")
    assert d.logdir is not None and part in d.logdir.partitions
    tree = _tree(tmp_path)
    assert [(d.display, d.logdir is not None) for d in kafka_dirs(tree, "t")] == [
        ("t/b1", True),
        ("t/b2", True),
    ]
    assert [disp for _p, disp in partition_dirs_of(tree, "t")] == [
        "t/b1/v2-none-0",
        "t/b2/v2-none-0",
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError) as e:
        list(kafka_dirs(empty, "e"))
    assert e.value.code == Code.NOT_A_LOG_DIR


def test_writing_resolver_never_searches_a_tree(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        targets.resolve([str(_tree(tmp_path))])
    assert e.value.code == Code.NOT_A_LOG_DIR


def test_writing_resolver_files(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    shutil.copytree(LOGDIR / "v2-none-0", part)
    log = part / "00000000000000000000.log"
    index = log.with_suffix(".index")
    (t,) = targets.resolve([str(index)]).partitions
    assert (t.path, t.only_base, t.named) == (part, 0, True)
    with pytest.raises(InputError) as e:
        targets.resolve([str(index)], files=(layout.LOG,))
    assert e.value.code == Code.NOT_A_SEGMENT and "(<base offset>.log)" in str(e.value)
    with pytest.raises(InputError) as e:
        select_partitions([str(log)])
    assert e.value.code == Code.NOT_A_DIR
    # a log dir's partition is not "named"; the partition dir itself is
    (t,) = targets.resolve([str(tmp_path)]).partitions
    assert not t.named and t.display == str(tmp_path / "t-0")
    assert targets.resolve([str(part)]).partitions[0].named


def test_writing_resolver_skips_a_partition_linking_out(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "t-1"
    shutil.copytree(LOGDIR / "v2-none-0", outside)
    logdir = tmp_path / "data"
    shutil.copytree(LOGDIR / "v2-none-0", logdir / "t-0")
    (logdir / "t-1").symlink_to(outside)
    resolved = targets.resolve([str(logdir)])
    assert [t.path.name for t in resolved.partitions] == ["t-0"]
    assert [f.code for f in resolved.findings] == [Code.SYMLINK_OUTSIDE]
    parts, notices = select_partitions([str(logdir)])
    assert [p.name for p in parts] == ["t-0"]
    assert (
        len(notices) == 1
        and notices[0].skipped
        and "outside the log directory" in str(notices[0].message)
    )


def test_segment_files_from_any_of_its_files(tmp_path: Path) -> None:
    shutil.copytree(LOGDIR / "v2-none-0", tmp_path / "p")
    log = tmp_path / "p" / "00000000000000000000.log"
    for kind, path in (
        (layout.LOG, log),
        (layout.INDEX, log.with_suffix(".index")),
        (layout.TIMEINDEX, log.with_suffix(".timeindex")),
    ):
        seg = layout.segment_files(path, kind)
        assert (seg.log, seg.index, seg.timeindex) == (
            log,
            log.with_suffix(".index"),
            log.with_suffix(".timeindex"),
        )
    renamed = tmp_path / "p" / "copy.log"
    shutil.copy(log, renamed)
    seg = layout.segment_files(renamed, layout.LOG)
    assert (seg.base_offset, seg.log, seg.index) == (0, renamed, None)
