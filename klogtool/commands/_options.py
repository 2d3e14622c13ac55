"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from klogtool.output import FORMATS

F = Callable[..., Any]


def paths_argument(f: F) -> F:
    return click.argument("paths", nargs=-1, required=True, metavar="PATH...")(f)


def format_option(*extra: str) -> Callable[[F], F]:
    choices = FORMATS + extra
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default="text",
        show_default=True,
        help="Output format: text for people, jsonl/json for machines"
        + (", kafka for kafka-dump-log.sh's exact lines." if "kafka" in extra else "."),
    )


def parse_size(text: str) -> int:
    """``64M``, ``1G``, ``4096`` → bytes."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("b").removesuffix("i")
    mult = units.get(t[-1:], 1)
    digits = t[:-1] if t[-1:] in units else t
    if not digits.isdigit():
        raise click.BadParameter(f"not a size: {text!r} (e.g. 4096, 64M, 1G)")
    return int(digits) * mult


def max_batch_bytes_option(f: F) -> F:
    return click.option(
        "--max-batch-bytes",
        default="64M",
        show_default=True,
        metavar="SIZE",
        callback=lambda _c, _p, v: parse_size(v),
        help="Refuse to decompress a batch beyond this size (decompression-bomb guard).",
    )(f)
