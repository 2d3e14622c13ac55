"""Hostile inputs, usage errors, --version and --help: exit codes and one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from support.cli import ERROR_LINE, errors, jsonl, run, run_subprocess
from support.paths import LOGS

from klogtool.cli import cli

COMMANDS = ("dump-segments", "verify")


def _one_error_line(err: str, path: str, position: int | None) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert re.match(ERROR_LINE, line), line
    assert "Traceback" not in err
    where = f"{path}:{position}" if position is not None else path
    assert line.startswith(f"klogtool: error: {where}: "), line
    return line


# -- not Kafka files: exit 3, one line ------------------------------------------------------------
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    "path, position, code",
    [
        ("hostile/random.bin", 0, "unknown-file"),
        ("hostile/empty.bin", 0, "unknown-file"),
        ("hostile/junk", None, "not-a-log-dir"),
        ("hostile", None, "not-a-log-dir"),
        ("hostile/does-not-exist.log", None, "not-found"),
    ],
)
def test_unreadable_input_exits_3_with_one_line(
    command: str, path: str, position: int | None, code: str
) -> None:
    rc, _out, err = run(command, "--format", "jsonl", path)
    assert rc == 3
    line = _one_error_line(err, path, position)
    assert line.endswith(f"({code})")


def test_unreadable_input_in_a_real_process() -> None:
    proc = run_subprocess("dump-segments", "hostile/random.bin")
    assert proc.returncode == 3
    _one_error_line(proc.stderr, "hostile/random.bin", 0)
    assert proc.stdout == ""


def test_random_bytes_named_log_dump_exits_3() -> None:
    for fmt in ("text", "jsonl", "kafka"):
        rc, _out, err = run("dump-segments", "--format", fmt, "hostile/random.log")
        assert rc == 3
        assert _one_error_line(err, "hostile/random.log", 0).endswith("(not-a-log)")


def test_random_bytes_named_log_verify_reports_an_error_at_0() -> None:
    # not a Kafka file: exit 3 as in dump-segments (issue 10), the finding still in the jsonl
    rc, out, err = run("verify", "--format", "jsonl", "hostile/random.log")
    assert rc == 3
    assert _one_error_line(err, "hostile/random.log", 0).endswith("(not-a-log)")
    found = errors(out)
    assert found and found[0]["position"] == 0 and found[0]["path"] == "hostile/random.log"
    assert found[0]["code"] == "not-a-log"


@pytest.mark.parametrize(
    "command", [["stats"], ["find", "--transaction", "aborted"], ["transactions"]]
)
def test_random_bytes_named_log_ends_the_partition_commands(command: list[str]) -> None:
    """stats refused a .log that is no Kafka file only through the transactions scan it ran
    first; when that scan became a header replay (txnstates), stats said 'cannot be read' and
    exit 0. Each of these commands ends at such a file, exit 3, one line naming it."""
    rc, _out, err = run(*command, "hostile/random.log")
    assert rc == 3
    assert _one_error_line(err, "hostile/random.log", 0).endswith("(not-a-log)")


@pytest.mark.parametrize("command", COMMANDS)
def test_empty_segment_is_fine(command: str) -> None:
    rc, out, err = run(command, "--format", "jsonl", "hostile/empty.log")
    assert (rc, err) == (0, "")
    assert not errors(out)
    assert jsonl(out)[-1]["type"] == "summary"


def test_an_error_stops_before_later_paths_but_keeps_earlier_output() -> None:
    rc, out, err = run(
        "dump-segments", "--format", "jsonl", "logdir/v0-none-0", "hostile/random.bin"
    )
    assert rc == 3
    assert any(o["type"] == "batch" for o in jsonl(out))
    _one_error_line(err, "hostile/random.bin", 0)


# -- usage errors: exit 2 -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ("dump-segments", "--no-such-option", "logdir"),
        ("dump-segments",),
        ("verify",),
        ("verify", "--format", "yaml", "logdir"),
        ("dump-segments", "--max-bytes", "lots", "logdir"),
        ("dump-segments", "--max-batch-bytes", "12Q", "logdir"),
        ("no-such-command",),
        ("--no-such-global-option", "verify", "logdir"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    rc, out, err = run(*args)
    assert rc == 2, (out, err)
    assert out == ""
    assert "Usage:" in err and "Error:" in err and "Traceback" not in err


# -- version and help -----------------------------------------------------------------------------
def test_version_lists_codecs() -> None:
    rc, out, _ = run("--version")
    assert rc == 0
    assert re.match(
        r"^klogtool \d+\.\d+\.\d+\S* \(engine: (native|python); codecs: [a-z0-9, ]+\)$",
        out.strip(),
    ), out
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert codec in out


def test_python_dash_m_help() -> None:
    proc = run_subprocess("--help")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("Usage: ")
    for command in COMMANDS:
        assert command in proc.stdout


def test_every_command_has_help() -> None:
    ctx = click.Context(cli)
    names = cli.list_commands(ctx)
    assert set(COMMANDS) <= set(names)
    for name in names:
        for flag in ("--help", "-h"):
            rc, out, err = run(name, flag)
            assert (rc, err) == (0, ""), name
            assert out.startswith(f"Usage: klogtool {name} "), out
            assert "--format" in out or name == "man"  # man shows pages, it has no output format


def test_no_command_is_a_usage_error() -> None:
    rc, out, err = run()
    assert (rc, out) == (2, "")  # click shows the group's help on stderr
    assert err.startswith("Usage: klogtool [OPTIONS] COMMAND") and "Traceback" not in err


# -- garbage from byte 0 is "not a Kafka file" everywhere (issue 10) ---------------------------
JPEG_HEAD = bytes.fromhex("ffd8ffe000104a46494600010100000100010000ffdb0043")


def _garbage(kind: str) -> bytes:
    import random

    rnd = random.Random(7).randbytes
    return JPEG_HEAD + rnd(50_000) if kind == "jpeg" else rnd(1 << 20)


@pytest.mark.parametrize("kind", ["jpeg", "random"])
@pytest.mark.parametrize(
    "command",
    [
        ["dump-segments"],
        ["verify"],
        ["verify", "--deep"],
        ["rebuild-index", "--check"],
        ["rebuild-index"],
    ],
    ids=" ".join,
)
def test_garbage_from_byte_0_is_not_a_kafka_file(
    tmp_path: Path, kind: str, command: list[str]
) -> None:
    part = tmp_path / "photos-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(_garbage(kind))
    code, _out, err = run(*command, str(part), cwd=tmp_path)
    assert code == 3, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith("(not-a-log)"), err
    assert "00000000000000000000.log:0: not a Kafka log segment" in lines[0]


@pytest.mark.parametrize("kind", ["jpeg", "random"])
def test_garbage_on_stdin_exits_like_a_file(tmp_path: Path, kind: str) -> None:
    data = _garbage(kind)
    p = run_subprocess("dump-segments", "-", cwd=tmp_path, stdin_bytes=data)
    assert p.returncode == 3, p.stderr
    assert p.stderr.strip().endswith("(not-a-log)")
    assert f"== - (log, {len(data):,} bytes" in p.stdout  # the bytes are counted


def test_a_torn_tail_is_a_valid_prefix_and_exits_1(tmp_path: Path) -> None:
    seg = LOGS / "logdir" / "v2-none-0" / "00000000000000000000.log"
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / seg.name).write_bytes(seg.read_bytes() + seg.read_bytes()[:40])
    code, out, err = run("dump-segments", str(tmp_path / "t-0" / seg.name), cwd=tmp_path)
    assert code == 1, err  # the dump met an error in the data, and printed what it could
    assert "torn write after 6 complete batches" in out + err


def test_stdin_kind_reads_an_index(tmp_path: Path) -> None:
    idx = LOGS / "logdir" / "v2-none-0" / "00000000000000000000.index"
    p = run_subprocess(
        "dump-segments", "--kind", "index", "-", cwd=tmp_path, stdin_bytes=idx.read_bytes()
    )
    assert p.returncode == 0, p.stderr
    assert "(index, 24 bytes" in p.stdout and "offset 3 → position 147" in p.stdout
