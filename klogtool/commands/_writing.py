"""How the writing commands render what the pipeline (``klogtool/log/writing.py``) gives:
notices on stderr, each result by the command's own ``show``, and one summary at the end (a
table, or a ``summary`` object), then the exit status: 1 when a partition was skipped."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

import click

from klogtool.errors import EXIT_FINDINGS, EXIT_OK
from klogtool.log.writing import Notice, run_partitions, select_partitions
from klogtool.output import Output, label


class WritingRun:
    """One writing command's run and rendering: ``skipped`` counts the partitions left out."""

    def __init__(self, out: Output, command: str, *, dry_run: bool, force: bool = False):
        self.out = out
        self.command = command
        self.dry_run = dry_run
        self.force = force  # go ahead though a broker holds the log dir's lock
        self.skipped = 0

    def notice(self, n: Notice) -> None:
        if n.skipped:
            self.skipped += 1
        if n.level == "info":
            self.out.info(n.message)
        else:
            self.out.warn(n.message)

    def notices(self, notices: Iterable[Notice]) -> None:
        for n in notices:
            self.notice(n)

    def results(self, items: Iterable[object], show: Callable[[Any], None]) -> None:
        """Notices rendered here, every other item by ``show``."""
        for item in items:
            if isinstance(item, Notice):
                self.notice(item)
            else:
                show(item)

    def summary(
        self,
        totals: dict[str, Any],
        rows: list[list[str]] | None = None,
        *,
        labels: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """The last output: a table of ``totals`` (named by ``labels``, else from their keys)
        and extra text ``rows``; or a ``summary`` object with the totals and ``extra``."""
        out = self.out
        if out.fmt == "text":
            done = "dry run, nothing changed" if self.dry_run else "done"
            table = [
                [(labels or {}).get(k, label(k)), f"{v:,}" if isinstance(v, int) else str(v)]
                for k, v in totals.items()
            ]
            out.table(f"klogtool {self.command}: {done}", ["", "count"], table + (rows or []))
        else:
            out.emit({"type": "summary", "dry_run": self.dry_run, **totals, **(extra or {})})

    def partitions(
        self,
        paths: Iterable[str],
        step: Callable[..., Iterable[object]],
        show: Callable[[Any], None],
        totals: dict[str, Any],
        *,
        include: Callable[[Path, bool], str | None] | None = None,
    ) -> NoReturn:
        """The whole run of a command that works partition by partition: the pipeline of
        ``klogtool/log/writing.py`` over the partitions of ``paths`` (``step`` a partition
        step, ``include`` as for ``select_partitions``), each result to ``show`` (which adds
        to ``totals``), the summary of ``totals``, the exit."""
        parts, notices = select_partitions(paths, include)
        self.notices(notices)
        self.results(run_partitions(parts, step, force=self.force, dry_run=self.dry_run), show)
        self.summary(totals)
        self.exit()

    def exit(self) -> NoReturn:
        self.out.close()
        click.get_current_context().exit(EXIT_FINDINGS if self.skipped else EXIT_OK)
        raise AssertionError("unreachable")  # Context.exit raises
