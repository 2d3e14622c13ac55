"""The ``klogtool`` command: global options, error handling and exit codes (DESIGN.md §3, §5)."""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass

import click

from klogtool import __version__
from klogtool.errors import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    KlogtoolError,
)
from klogtool.formats.errors import FormatError
from klogtool.output import StdoutClosed


@dataclass
class Settings:
    """Global options, handed to every command through ``ctx.obj``."""

    verbosity: int = 0
    progress: bool = True
    color: bool | None = None
    debug: bool = False


def _version_message() -> str:
    from klogtool.formats.codecs import available_codecs

    return f"klogtool {__version__} (codecs: {', '.join(available_codecs())})"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_message())
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and the available codecs.",
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
    """
    ctx.obj = Settings(
        verbosity=-1 if quiet else verbose, progress=not no_progress, color=color, debug=debug
    )


# One module per command in klogtool/commands/, each exposing ``command``.
COMMAND_MODULES = (
    "dump_segments",
    "verify",
    "transactions",
    "export",
    "truncate_recovery",
    "rebuild_index",
    "convert_format",
    "compact",
    "retention_sweep",
    "explain",
)


def _register() -> None:
    import importlib

    for name in COMMAND_MODULES:
        cli.add_command(importlib.import_module(f"klogtool.commands.{name}").command)


_register()


def main(argv: list[str] | None = None) -> None:
    """Console entry point: maps every outcome to a documented exit code."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        code = cli.main(args=argv, prog_name="klogtool", standalone_mode=False)
    except click.exceptions.Exit as e:
        code = e.exit_code
    except click.ClickException as e:
        e.show()
        code = EXIT_USAGE if isinstance(e, click.UsageError) else e.exit_code
    except click.exceptions.Abort:
        code = EXIT_INTERRUPTED
    except KlogtoolError as e:
        _flush_quietly()
        click.echo(e.one_line(), err=True)
        if e.hint:
            click.echo(f"hint: {e.hint}", err=True)
        code = e.exit_code
    except FormatError as e:  # a format error no command anticipated: still one line
        _flush_quietly()
        where = f"{e.position}: " if e.position is not None else ""
        click.echo(f"klogtool: error: {where}{e} ({e.code})", err=True)
        code = EXIT_BAD_INPUT
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    except (BrokenPipeError, StdoutClosed):
        code = EXIT_BROKEN_PIPE
    except OSError as e:
        click.echo(f"klogtool: error: {e.filename or ''}: {e.strerror or e} (io-error)", err=True)
        code = EXIT_BAD_INPUT
    except Exception as e:  # a bug: say so in one line, traceback only with --debug
        if debug:
            traceback.print_exc()
        click.echo(
            f"klogtool: internal error: {type(e).__name__}: {e} "
            "(please report it; --debug shows the traceback)",
            err=True,
        )
        code = EXIT_INTERNAL
    if code == EXIT_BROKEN_PIPE:
        # stdout's reader went away (e.g. `| head`): silence the final flush of stdout.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(code or 0)


def _flush_quietly() -> None:
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        pass
