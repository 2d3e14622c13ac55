"""The ``klogtool`` command: global options, error handling and exit codes (docs/output.md)."""

from __future__ import annotations

import io
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import click

from klogtool import __version__
from klogtool.errors import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    KlogtoolError,
    StdoutClosed,
)
from klogtool.formats import FormatError
from klogtool.interrupted import by_interrupt, say_interrupted
from klogtool.shown import escaped, shown
from klogtool.shown import reset as reset_shown_paths

if TYPE_CHECKING:
    from klogtool.output import Output


@dataclass
class Settings:
    """Global options, handed to every command through ``ctx.obj``."""

    verbosity: int = 0
    progress: bool = True
    color: bool | None = None
    debug: bool = False

    def output(self, fmt: str, *, progress: bool = True) -> Output:
        """The command's :class:`Output` in ``fmt`` (no bars where ``progress`` is False)."""
        from klogtool.output import Output

        return Output(
            fmt, progress=progress and self.progress, color=self.color, verbosity=self.verbosity
        )


def _version_message() -> str:
    from klogtool.formats import available_codecs, engine

    return (
        f"klogtool {__version__} (engine: {engine.name()}; codecs: {', '.join(available_codecs())})"
    )


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_message())
        ctx.exit()


# One module per command in klogtool/commands/, each exposing ``command``, imported only when
# that command runs (start-up time: pyarrow, rich and the codecs load with the command that
# needs them). The short help is written here so that ``klogtool --help`` imports nothing;
# tests/test_startup.py holds it equal to each command's own.
COMMANDS: dict[str, tuple[str, str]] = {
    "dump-segments": (
        "dump_segments",
        "Print the contents of Kafka log files: batches by default, records with "
        "--deep-iteration, payloads with --print-data.",
    ),
    "verify": ("verify", "Check Kafka log files the way a demanding broker would."),
    "transactions": (
        "transactions",
        "List the transactions of partitions and find the hanging ones.",
    ),
    "export": (
        "export",
        "Export the records (or batches) of Kafka segments to Parquet or JSON Lines files.",
    ),
    "truncate-recovery": (
        "truncate_recovery",
        "Truncate damaged logs where the broker's recovery would, keeping every byte cut.",
    ),
    "rebuild-index": (
        "rebuild_index",
        "Rebuild .index, .timeindex and .txnindex exactly as the broker's recovery does.",
    ),
    "convert-format": (
        "convert_format",
        "Rewrite SRC to message format 0, 1 or 2 and/or another codec, keeping every offset.",
    ),
    "compact": ("compact", "Compact partitions the way the broker's log cleaner does."),
    "restore-tier": (
        "restore_tier",
        "Write a partition directory the broker can load from a tiered partition's remote "
        "segments.",
    ),
    "retention-sweep": (
        "retention_sweep",
        "Delete old segments the way the broker's retention does.",
    ),
    "find": (
        "find",
        "Find records across segments, partitions or whole log dirs: the offline kcat.",
    ),
    "man": ("man", "Show the manual page of klogtool, or of one of its commands."),
    "describe": (
        "describe",
        "One line per partition: size, segments, offset range, newest timestamp, index health.",
    ),
    "groups": (
        "groups",
        "Consumer groups as a broker's disk left them: kafka-consumer-groups.sh --describe, "
        "offline.",
    ),
    "diff": (
        "diff",
        "Compare two copies of a partition, or two log dirs, and say where they diverge.",
    ),
    "stats": (
        "stats",
        "What is in these partitions: volume, sizes, time, producers, keys, what-if codecs.",
    ),
    "explain": (
        "explain",
        "Explain one partition: why it is not being compacted or deleted, and what makes the "
        "broker slow to load it.",
    ),
}
COMMAND_MODULES = tuple(module for module, _ in COMMANDS.values())


class LazyGroup(click.Group):
    """A group whose commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        import importlib

        module = importlib.import_module(f"klogtool.commands.{COMMANDS[cmd_name][0]}")
        command: click.Command = module.command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        width = formatter.width - 6 - max(len(n) for n in COMMANDS)
        rows = [
            (name, _shorten(short, width)) for name, (_module, short) in sorted(COMMANDS.items())
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _shorten(text: str, width: int) -> str:
    """``text`` cut at a word to fit ``width`` with "...", as click lists commands."""
    if len(text) <= width:
        return text
    words: list[str] = []
    for word in text.split():
        if len(" ".join(words + [word])) > width - 3:
            break
        words.append(word)
    return " ".join(words) + "..."


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version, the engine in use and the available codecs.",
)
@click.option("-v", "--verbose", count=True, help="More diagnostics on stderr (repeatable).")
@click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr.")
@click.option("--no-progress", is_flag=True, help="Never show progress bars.")
@click.option(
    "--color/--no-color",
    default=None,
    help="Force colour on or off (default: on a terminal, off if NO_COLOR is set).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks for unexpected errors.")
@click.pass_context
def cli(
    ctx: click.Context,
    verbose: int,
    quiet: bool,
    no_progress: bool,
    color: bool | None,
    debug: bool,
) -> None:
    """Read, check, repair and rewrite Apache Kafka log segment directories offline.

    PATH arguments may be segment files (.log, .index, .timeindex, .txnindex, .snapshot,
    checkpoint files), partition directories (<topic>-<partition>) or whole log directories.
    The commands that only read also take them in object storage or HDFS: s3://, gs://,
    abfs://, hdfs:// URIs (credentials from the standard chains; see docs/storage.md).
    """
    ctx.obj = Settings(
        verbosity=-1 if quiet else verbose, progress=not no_progress, color=color, debug=debug
    )


def _check_engine() -> None:
    """KLOGTOOL_ENGINE names an engine that is here (a usage error otherwise)."""
    try:
        from klogtool.formats import engine  # noqa: F401  (it reads KLOGTOOL_ENGINE)
    except ValueError as e:
        raise click.UsageError(str(e)) from None


def main(argv: list[str] | None = None) -> None:
    """Console entry point: maps every outcome to a documented exit code."""
    args = list(argv if argv is not None else sys.argv[1:])
    # Before pyarrow loads (export imports it lazily): Arrow then allocates with malloc, which
    # gives the record batches' memory back at once, where its default pool (mimalloc) keeps
    # it. Measured exporting a 1 GiB segment: max RSS 208 -> 184 MB at the same speed. Set by
    # the program, not at import by the library; a user's own setting wins.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    reset_shown_paths()  # a new command line: its PATHs are registered as Click parses them
    debug = "--debug" in args
    try:
        _check_engine()
        # click's own main() would print a blank line on Ctrl-C: invoke the context directly
        with cli.make_context("klogtool", args) as ctx:
            code = cli.invoke(ctx)
    except click.exceptions.Exit as e:
        code = e.exit_code
    except click.ClickException as e:
        from klogtool.log.storage import redacted

        # the message may quote a PATH or option value (click >= 8.5 makes it read-only)
        text = io.StringIO()
        e.show(file=text)
        sys.stderr.write(redacted(text.getvalue()))
        code = EXIT_USAGE if isinstance(e, click.UsageError) else e.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        say_interrupted()
        code = EXIT_INTERRUPTED
    except KlogtoolError as e:
        _flush_quietly()
        click.echo(escaped(shown(e.one_line())), err=True)
        if e.hint:
            click.echo(escaped(shown(f"hint: {e.hint}")), err=True)
        code = e.exit_code
    except FormatError as e:  # a format error no command anticipated: still one line
        _flush_quietly()
        # no file is known: docs/output.md's line without its <path>
        at = f" at byte {e.position}" if e.position is not None else ""
        click.echo(escaped(shown(f"klogtool: error: {e}{at} ({e.code})")), err=True)
        code = EXIT_BAD_INPUT
    except (BrokenPipeError, StdoutClosed):
        code = EXIT_BROKEN_PIPE
    except OSError as e:
        where = f"{os.fsdecode(e.filename)}: " if e.filename else ""
        click.echo(
            escaped(shown(f"klogtool: error: {where}{e.strerror or e} (io-error)")), err=True
        )
        code = EXIT_BAD_INPUT
    except Exception as e:
        if by_interrupt(e):
            say_interrupted()
            code = EXIT_INTERRUPTED
        else:  # a bug: say so in one line, traceback only with --debug
            code = _internal_error(e, debug)
    if code == EXIT_BROKEN_PIPE:
        # stdout's reader went away (e.g. `| head`): silence the final flush of stdout.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(code or 0)


def _internal_error(e: Exception, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    click.echo(
        f"klogtool: internal error: {type(e).__name__}: {e} "
        "(please report it; --debug shows the traceback)",
        err=True,
    )
    return EXIT_INTERNAL


def _flush_quietly() -> None:
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        pass


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "What is in a segment; is anything wrong in a log dir; the page of one command:",
        [
            "klogtool dump-segments --deep-iteration orders-3/00000000000000000000.log",
            "klogtool verify /var/lib/kafka/data",
            "klogtool man truncate-recovery",
        ],
    ),
]


class Captured(NamedTuple):
    """What :func:`run_captured` gives: the exit status and both outputs."""

    code: int
    stdout: str
    stderr: str


def run_captured(args: Sequence[str], cwd: str | os.PathLike[str] | None = None) -> Captured:
    """``klogtool ARGS`` in this process, from ``cwd``, with its output captured: for scripts,
    tests and benchmarks. No colour, 100 columns, no terminal (so no progress bars)."""
    code, out, err, _both = run_in_process(args, cwd, {"NO_COLOR": "1", "COLUMNS": "100"})
    return Captured(code, out, err)


def run_in_process(
    args: Sequence[str],
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str | None],
    *,
    line_buffered: bool = False,
) -> tuple[int, str, str, str]:
    """``klogtool ARGS`` in this process with ``env``: (exit status, stdout, stderr, both as
    they were interleaved). ``line_buffered``: each line written when it ends, as on a
    terminal."""
    from click.testing import CliRunner

    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        with CliRunner().isolation(env=env) as streams:
            if line_buffered:
                for stream in (sys.stdout, sys.stderr):
                    stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]
            try:
                main(list(args))
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            sys.stdout.flush()
            sys.stderr.flush()
            out, err, both = (x.getvalue().decode("utf-8") for x in streams)
    finally:
        os.chdir(old)
    return code, out, err, both
