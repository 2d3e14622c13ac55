"""Text a person reads says each thing once, in one style (issue 10)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.cli import run
from support.paths import LOGS

LOGDIR = LOGS / "logdir"


def _partition(tmp_path: Path) -> Path:
    part = tmp_path / "data" / "v2-none-0"
    shutil.copytree(LOGDIR / "v2-none-0", part)
    return part


def test_nothing_to_clean_is_said_once(tmp_path: Path) -> None:
    code, out, err = run("compact", "--assume-defaults", str(_partition(tmp_path)), cwd=tmp_path)
    assert code == 0, err
    assert out.count("nothing to clean") == 1
    assert "nothing cleanable" not in out and "nothing to compact" not in out
    assert "the broker starts from the log start offset" in out  # explained once, in the note
    assert out.count("the broker starts from the log start offset") == 1
    assert "))" not in out.replace("(s)", "")  # no parentheses inside parentheses


def test_help_shows_no_doubled_percent() -> None:
    code, out, _err = run("compact", "--assume-defaults", "--help")
    assert code == 0 and "90%" in out and "90%%" not in out


@pytest.mark.parametrize(
    "args",
    [
        [
            "compact",
            "--assume-defaults",
            "--high-watermark",
            "log-end",
            "--min-cleanable-dirty-ratio",
            "0",
        ],
        ["retention-sweep", "--assume-defaults", "--retention-ms", "1", "--dry-run"],
        ["convert-format", "--in-place", "--compression", "gzip"],
    ],
    ids=lambda a: a[0],
)
def test_summary_labels_are_words(tmp_path: Path, args: list[str]) -> None:
    code, out, err = run(args[0], str(_partition(tmp_path)), *args[1:], cwd=tmp_path)
    assert code == 0, err
    labels = [m.group(1) for m in re.finditer(r"^([a-z][a-z_ ]*[a-z]) +[\d,]+$", out, re.M)]
    assert labels and not [x for x in labels if "_" in x]


def test_a_dry_run_does_not_say_written(tmp_path: Path) -> None:
    part = _partition(tmp_path)
    for f in part.glob("*.index"):
        f.unlink()
    code, out, err = run("rebuild-index", "--dry-run", str(part), cwd=tmp_path)
    assert code == 0, err
    assert "index files to write" in out and "written" not in out


def test_an_op_is_not_repeated(tmp_path: Path) -> None:
    part = _partition(tmp_path)
    for f in part.glob("*.index"):
        f.unlink()
    code, out, err = run("truncate-recovery", "--dry-run", str(part), cwd=tmp_path)
    assert code == 0, err
    assert "would create" in out and "create: create" not in out


def test_explain_and_compact_show_byte_progress_by_phase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 10: explain (44.6 s on 1.6 GB) and compact (35-38 s) showed nothing while working,
    # then only a spinner: now a bar per phase, by bytes, that reaches each phase's total
    from klogtool import output

    seen: dict[tuple[str, str], list[int]] = {}  # (the bars' prefix, a phase) -> done, total

    class Phases(output.Bar):
        def __init__(self, prefix: str) -> None:
            super().__init__(prefix=prefix)

        def phase(self, name: str, walked: int, total: int) -> None:
            done = seen.setdefault((self.prefix, name), [0, total])
            assert done[1] == total and walked >= 0
            done[0] += walked

    class Recorder(output.Output):
        def __init__(self, *a: object, **k: object) -> None:
            super().__init__(*a, **k)  # type: ignore[arg-type]
            self.show_progress = True

        @contextmanager
        def phases(self, prefix: str = "") -> Iterator[output.Bar]:
            yield Phases(prefix)

    part = _partition(tmp_path)
    monkeypatch.setattr("klogtool.output.Output", Recorder)  # what Settings.output builds
    assert run("explain", str(part), cwd=tmp_path)[0] == 0
    assert (
        run("compact", "--assume-defaults", str(part), "--high-watermark", "log-end", cwd=tmp_path)[
            0
        ]
        == 0
    )
    # compact titles each phase with the partition and the pass ("t-0: pass 1: cleaning")
    phases = {name.rsplit(": ", 1)[-1] for _prefix, name in seen}
    assert {"reading segments", "building the offset map", "cleaning"} <= phases
    assert any(prefix.startswith("explaining") for prefix, _ in seen)
    assert any(name.startswith(f"{part.name}: pass 1: ") for prefix, name in seen if not prefix)
    assert all(done == total and total > 0 for done, total in seen.values()), seen


def _counts(out: str) -> dict[str, int]:
    return {
        m.group(1): int(m.group(2).replace(",", ""))
        for m in re.finditer(r"^([a-z][a-z ]*[a-z]) +([\d,]+)$", out, re.M)
    }


def test_a_dry_run_counts_what_the_real_run_would_do(tmp_path: Path) -> None:
    """truncate-recovery --dry-run listed its file operations and counted 0 of them, and
    said "would mkdir: create the quarantine directory"; compact --dry-run said "would
    compact" beside "partitions compacted 0". The counts are those of the real run, in words."""
    from support.repair import copy_scenario

    part = copy_scenario("torn-tail", tmp_path / "data")
    code, out, err = run("truncate-recovery", "--dry-run", str(part), cwd=tmp_path)
    assert code == 0, err
    planned = _counts(out)["file operations"]
    assert "mkdir" not in out and "would create the quarantine directory" in out
    code, out, err = run("truncate-recovery", str(part), cwd=tmp_path)
    assert code == 0, err
    assert planned == _counts(out)["file operations"] > 0
    gzip = tmp_path / "data" / "v2-gzip-0"
    shutil.copytree(LOGDIR / "v2-gzip-0", gzip)
    args = ("compact", "--assume-defaults", "--high-watermark", "log-end", str(gzip))
    code, out, err = run(*args, "--dry-run", cwd=tmp_path)
    assert code == 0 and "would compact" in out, err
    would = _counts(out)
    code, out, err = run(*args, cwd=tmp_path)
    assert code == 0, err
    assert would == _counts(out) and would["partitions compacted"] == 1
