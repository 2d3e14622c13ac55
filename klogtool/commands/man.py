"""``klogtool man``: the manual pages, from the installed package (no MANPATH needed)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import click


@click.command("man")
@click.argument("command_name", metavar="[COMMAND]", required=False)
def command(command_name: str | None) -> None:
    """Show the manual page of klogtool, or of one of its commands.

    The pages are generated from the installed klogtool itself, so they always match it. On
    a terminal with man(1) they open in man; otherwise the page's roff source is printed
    (klogtool man verify > klogtool-verify.1 installs one). The same pages are in the
    source tree's man/ directory.

    Exit status: 0 shown, 2 no such command.
    """
    from klogtool import manpages  # generating the pages imports every command

    name = f"klogtool-{command_name}.1" if command_name else "klogtool.1"
    pages = manpages.generate()
    if name not in pages:
        raise click.UsageError(f"no such command: {command_name}")
    man = shutil.which("man")
    if man is not None and sys.stdout.isatty():
        subprocess.run([man, "-l", "-"], input=pages[name], text=True, check=False)
        return
    click.echo(pages[name], nl=False)


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "Read the page of verify; install every page where man finds them:",
        [
            "klogtool man verify",
            "for c in '' verify compact; do klogtool man $c > ~/.local/share/man/man1/"
            "klogtool${c:+-$c}.1; done",
        ],
    ),
]
