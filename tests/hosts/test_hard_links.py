"""A segment with other hard links (issue 23): a backup made with ``cp -l``, or a snapshot
tool's, shares the file. truncate-recovery cut it in place, so the cut reached the file
outside the partition too; now the valid prefix is copied to a new file renamed over the
partition's name, and the other name keeps every byte."""

from __future__ import annotations

import os
from pathlib import Path

from support.cli import run
from support.repair import copy_scenario


def test_truncating_a_hard_linked_segment_leaves_the_other_name_whole(tmp_path: Path) -> None:
    part = copy_scenario("torn-tail", tmp_path / "logdir")
    torn = sorted(part.glob("*.log"))[-1]
    backup = tmp_path / "backup.log"
    os.link(torn, backup)
    whole = backup.read_bytes()
    code, _out, err = run("truncate-recovery", str(part), cwd=tmp_path)
    assert code == 0, err
    assert backup.read_bytes() == whole  # it was cut with the partition's copy
    assert len(torn.read_bytes()) < len(whole)
    assert os.stat(torn).st_nlink == 1 and os.stat(backup).st_nlink == 1
    code, _out, err = run("verify", str(part), cwd=tmp_path)
    assert code == 0, err
