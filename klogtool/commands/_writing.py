"""How the writing commands render what the pipeline (``klogtool/log/writing.py``) gives:
notices on stderr, each result by the command's own ``show``, and one summary at the end (a
table, or a ``summary`` object), then the exit status: 1 when a partition was skipped."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any, NoReturn, TypeAlias

import click

from klogtool import events
from klogtool.errors import EXIT_FINDINGS, EXIT_OK
from klogtool.log.writing import Notice, run_partitions, select_partitions
from klogtool.output import Output, label

# The summary objects of the writing commands: each command builds its own (its totals, which
# its ``show`` adds to) and hands it to WritingRun.summary.
Summary: TypeAlias = (
    events.CompactSummary | events.ConvertFormatSummary | events.RetentionSweepSummary
)


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
        obj: Summary,
        rows: list[list[str]] | None = None,
        *,
        labels: dict[str, str] | None = None,
        hidden: Collection[str] = (),
    ) -> None:
        """The last output: the ``summary`` object ``obj``; or, as text, a table of its
        fields but ``type``, ``dry_run`` and ``hidden`` (named by ``labels``, else from their
        keys) and extra text ``rows``."""
        out = self.out
        if out.fmt == "text":
            done = "dry run, nothing changed" if self.dry_run else "done"
            left_out = {"type", "dry_run", *hidden}
            if self.dry_run:  # files a dry run changed: none, whatever the plan
                left_out.add("files_changed")
            table = [
                [(labels or {}).get(k, label(k)), f"{v:,}" if isinstance(v, int) else str(v)]
                for k, v in obj.items()
                if k not in left_out
            ]
            out.table(f"klogtool {self.command}: {done}", ["", "count"], table + (rows or []))
        else:
            out.emit(obj)

    def partitions(
        self,
        paths: Iterable[str],
        step: Callable[..., Iterable[object]],
        show: Callable[[Any], None],
        totals: Summary,
        *,
        include: Callable[[Path, bool], Notice | None] | None = None,
    ) -> NoReturn:
        """The whole run of a command that works partition by partition: the pipeline of
        ``klogtool/log/writing.py`` over the partitions of ``paths`` (``step`` a partition
        step, ``include`` as for ``select_partitions``), each result to ``show`` (which adds
        to ``totals``, the command's summary object), the summary, the exit."""
        parts, notices = select_partitions(paths, include)
        self.notices(notices)
        self.results(run_partitions(parts, step, force=self.force, dry_run=self.dry_run), show)
        self.summary(totals)
        self.exit()

    def exit(self) -> NoReturn:
        self.out.close()
        click.get_current_context().exit(EXIT_FINDINGS if self.skipped else EXIT_OK)
        raise AssertionError("unreachable")  # Context.exit raises
