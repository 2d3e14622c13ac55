"""Every command's one-line errors have docs/output.md's single shape,
``klogtool: error: <path>[:<position>]: <what> (<code>)``, and name paths as the user gave
them: run on relative paths, no line or object of any command holds an absolute path."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from support.cli import ERROR_LINE, run, run_on_terminal
from support.paths import CORRUPT

S0 = "00000000000000000000"


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    """``ld/`` (a log dir: crc-flip-0, torn-tail-0) and ``ri/first-0`` (a partition whose
    first segment is not a Kafka file) under the working directory."""
    for name in ("crc-flip", "torn-tail"):
        shutil.copytree(CORRUPT / f"{name}-0", tmp_path / "ld" / f"{name}-0")
    (tmp_path / "ld" / "recovery-point-offset-checkpoint").write_bytes(
        b"0\n2\ncrc-flip 0 27\ntorn-tail 0 27\n"
    )
    shutil.copytree(CORRUPT / "garbage-tail-0", tmp_path / "ri" / "first-0")
    (tmp_path / "ri" / "first-0" / f"{S0}.log").write_bytes(b"garbage!" * 3)
    return tmp_path


COMMANDS = [
    ["describe"],
    ["stats"],
    ["dump-segments"],
    ["find", "--offsets", "3:5"],
    ["verify"],
    ["explain"],
    ["transactions"],
    ["truncate-recovery"],
    ["truncate-recovery", "--dry-run"],
    ["rebuild-index"],
    ["rebuild-index", "--check"],
    ["convert-format", "--in-place", "--to-magic", "1"],
    ["compact"],
    ["retention-sweep", "--assume-defaults", "--retention-ms", "1"],
    ["diff", "ld/torn-tail-0"],
    ["export", "--to", "jsonl", "out"],
]


def _check_lines(err: str, out: str, root: Path) -> None:
    for line in err.splitlines():
        if line.startswith("klogtool: error:"):
            assert re.match(ERROR_LINE, line), line
            assert not line.startswith("klogtool: error: /"), line
    assert str(root) not in out, out
    assert str(root) not in err, err


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_a_missing_relative_path_is_one_error_line_naming_it(cwd: Path, args: list[str]) -> None:
    command, *rest = args
    code, out, err = run(command, "missing/x-0", *rest, cwd=cwd)
    assert code == 3, err
    assert err.splitlines() == [
        "klogtool: error: missing/x-0: no such file or directory (not-found)"
    ], err
    _check_lines(err, out, cwd)


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
@pytest.mark.parametrize("path", ["ld/crc-flip-0", f"ld/torn-tail-0/{S0}.log", "ri/first-0", "ld"])
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_damaged_relative_partitions_are_named_relative(
    cwd: Path, args: list[str], path: str, fmt: str
) -> None:
    command, *rest = args
    code, out, err = run(command, "--format", fmt, path, *rest, cwd=cwd)
    assert "Traceback" not in err and "internal error" not in err, err
    _check_lines(err, out, cwd)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["rebuild-index", "ri/first-0"],
            f"klogtool: error: ri/first-0/{S0}.log:0: not a Kafka log segment: ",
        ),
        (
            ["compact", "--assume-defaults", "ld/crc-flip-0"],
            f"klogtool: error: ld/crc-flip-0/{S0}.log:242: Record is corrupt ",
        ),
        (
            ["convert-format", "--in-place", "--to-magic", "1", "ld/crc-flip-0"],
            f"klogtool: error: ld/crc-flip-0/{S0}.log:242: Record is corrupt ",
        ),
        (
            ["find", "--offsets", "3:5", "ld/crc-flip-0"],
            f"klogtool: error: ld/crc-flip-0/{S0}.log:242: batch 4..7: CRC mismatch ",
        ),
    ],
    ids=lambda a: a if isinstance(a, str) else a[0],
)
def test_an_error_line_names_the_file_as_given(cwd: Path, args: list[str], line: str) -> None:
    code, _, err = run(*args, cwd=cwd)
    assert code == 3, err
    errors = [x for x in err.splitlines() if x.startswith("klogtool: error:")]
    assert errors and errors[0].startswith(line), err
    assert re.match(ERROR_LINE, errors[0]) and re.search(r" \([a-z-]+\)$", errors[0])


def test_restore_names_the_quarantine_as_given(cwd: Path) -> None:
    code, _, err = run("truncate-recovery", "ld", cwd=cwd)
    assert code == 0, err
    (run_dir,) = (cwd / "ld" / "crc-flip-0" / ".klogtool-quarantine").iterdir()
    for path in ("ld", f"ld/crc-flip-0/.klogtool-quarantine/{run_dir.name}"):
        code, out, err = run("truncate-recovery", "--restore", "--dry-run", path, cwd=cwd)
        assert code == 0, err
        assert f"ld/crc-flip-0/.klogtool-quarantine/{run_dir.name}" in out
        _check_lines(err, out, cwd)
    code, out, err = run("truncate-recovery", "--restore", "--format", "jsonl", "ld", cwd=cwd)
    assert code == 0, err
    _check_lines(err, out, cwd)


def test_a_table_on_a_terminal_names_the_quarantine_as_given(cwd: Path) -> None:
    code, _, err = run("truncate-recovery", "ld", cwd=cwd)
    assert code == 0, err
    shown = run_on_terminal("truncate-recovery", "--restore", "--dry-run", "ld", cwd=cwd)
    assert shown.code == 0, shown.stderr
    # the table's quarantine cell (folded at 80 columns) starts with the path as given
    assert any("│ ld/crc-flip-0/" in row for row in shown.screen), shown.screen
    assert not any("│ /" in row for row in shown.screen), shown.screen
