"""``klogtool transactions``: every transaction of partitions, hanging ones and how to end them."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from klogtool.commands._options import (
    format_option,
    parse_now,
    paths_argument,
    read_limits_option,
    warn_if_a_broker_runs,
    warn_if_not_live_skipped,
)
from klogtool.errors import EXIT_FINDINGS, EXIT_OK
from klogtool.formats import ReadLimits
from klogtool.log.context import ReadContext
from klogtool.log.read.transactions import (
    BOOTSTRAP_PLACEHOLDER,
    EPOCH_PLACEHOLDER,
    TransactionScanner,
    TransactionsObject,
    format_duration,
    parse_duration,
)
from klogtool.output import Output

if TYPE_CHECKING:
    from klogtool import events
    from klogtool.cli import Settings


STATES = ("committed", "aborted", "open", "hanging")


def _parse_older_than(_ctx: click.Context, _param: click.Parameter, value: str) -> int:
    try:
        return parse_duration(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def _parse_now(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int:
    now = parse_now(value)
    return int(time.time() * 1000) if now is None else now


@click.command("transactions")
@paths_argument
@click.option(
    "--older-than",
    default="15m",
    show_default=True,
    metavar="DURATION",
    callback=_parse_older_than,
    help="An open transaction that started longer ago than this is hanging (900000 = ms, "
    "90s, 15m, 2h, 1d). The default is the broker's transaction.max.timeout.ms.",
)
@click.option(
    "--now",
    default=None,
    metavar="TIME",
    callback=_parse_now,
    help="The time ages are measured at: epoch milliseconds or ISO-8601 (UTC unless an offset "
    "is given) [default: the current time].",
)
@click.option(
    "--state",
    "states",
    type=click.Choice(STATES),
    multiple=True,
    help="Only list transactions in this state (repeatable); findings and partition lines "
    "are always shown.",
)
@click.option(
    "--bootstrap-server",
    default=BOOTSTRAP_PLACEHOLDER,
    show_default=True,
    metavar="HOST:PORT",
    help="Put into the printed kafka-transactions.sh commands.",
)
@format_option()
@read_limits_option
@click.pass_obj
def command(
    settings: Settings,
    paths: tuple[str, ...],
    older_than: int,
    now: int,
    states: tuple[str, ...],
    bootstrap_server: str,
    fmt: str,
    limits: ReadLimits,
) -> None:
    """List the transactions of partitions and find the hanging ones.

    PATH is a partition directory, a log directory (all its partitions) or one .log segment.
    Each transaction is rebuilt from the log the way the broker's producer state sees it: its
    producer id and epoch, first and last offset (the COMMIT/ABORT marker), state (committed,
    aborted, open), duration and record count. Only batch headers and control records are
    read.

    Reported: open transactions that started longer ago than --older-than before --now
    (hanging: they hold back the last stable offset, so read_committed consumers stop there),
    transactions without records, COMMIT/ABORT markers without data, aborted transactions
    missing from the .txnindex (read_committed consumers would see their records), and
    .txnindex entries that disagree with the log. For every partition: the last stable offset
    it would have (the first offset of its earliest open transaction, else the log end
    offset).

    For each hanging transaction the kafka-transactions.sh abort command is printed. Its
    coordinator epoch comes from the producer's last COMMIT/ABORT marker in the partition, else
    from the newest producer snapshot, else from the __transaction_state partitions in the same
    log dir (their leader epoch; the transactional id is shown too); when none has it the
    command holds <coordinator-epoch> (kafka-transactions.sh describe-producers shows it).

    Exit status: 0 nothing hanging and no errors, 1 hanging transactions or errors (such as an
    aborted transaction missing from the .txnindex) found, 3 an input cannot be read.
    """
    out = settings.output(fmt)
    warn_if_a_broker_runs(out, paths)
    warn_if_not_live_skipped(out, paths)
    scanner = TransactionScanner(
        now_ms=now,
        older_than_ms=older_than,
        ctx=ReadContext.of(limits),
        bootstrap_server=bootstrap_server,
    )
    text = TextReport(out) if fmt == "text" else None
    for obj in scanner.scan(list(paths)):
        listed = obj["type"] != "transaction" or _wanted(obj, states)
        if text is not None:
            text.add(obj, listed)  # abort commands are printed even for unlisted ones
        elif listed:
            out.emit(obj)
    out.close()
    s = scanner.summary
    code = EXIT_FINDINGS if s.hanging or s.errors else EXIT_OK
    click.get_current_context().exit(code)


def _wanted(obj: events.TransactionsTransaction, states: tuple[str, ...]) -> bool:
    if not states:
        return True
    if obj["state"] in states:
        return True
    return "hanging" in states and bool(obj.get("hanging"))


class TextReport:
    """Per partition: a table of transactions, its findings and the abort commands."""

    COLUMNS = ["producer", "epoch", "first", "last", "state", "duration", "records", "note"]

    def __init__(self, out: Output):
        self.out = out
        self.rows: list[list[str]] = []
        self.findings: list[events.TransactionsFinding] = []
        self.commands: list[str] = []
        self.quiet_partitions = 0

    def add(self, obj: TransactionsObject, listed: bool = True) -> None:
        if obj["type"] == "transaction":
            if listed:
                self.rows.append(self._row(obj))
            if obj.get("abort_command"):
                self.commands.append(obj["abort_command"])
        elif obj["type"] == "finding":
            self.findings.append(obj)
        elif obj["type"] == "partition":
            self._partition(obj)
        elif obj["type"] == "summary":
            self._summary(obj)

    @staticmethod
    def _row(t: events.TransactionsTransaction) -> list[str]:
        state = t["state"]
        note = ""
        if t.get("hanging"):
            state = "HANGING"
            note = f"open for {format_duration(t.get('age_ms'))}"
        elif state == "open":
            note = f"open for {format_duration(t.get('age_ms'))}"
        if t.get("transactional_id"):
            note = (note + "; " if note else "") + f"txn id {t['transactional_id']}"
        return [
            str(t["producer_id"]),
            str(t["producer_epoch"]),
            str(t["first_offset"]),
            str(t["last_offset"]),
            state,
            format_duration(t["duration_ms"]),
            f"{t['records']:,}",
            note,
        ]

    def _partition(self, p: events.TransactionsPartition) -> None:
        out = self.out
        if not self.rows and not self.findings:
            self.quiet_partitions += 1
            return
        name = p["path"]
        lso, leo = p["last_stable_offset"], p["log_end_offset"]
        if leo is None:
            offsets = "no readable batches"
        else:
            assert lso is not None  # a partition with a log end offset has a last stable one
            held = "" if lso == leo else f" (held back by {_n(leo - lso, 'offset')})"
            offsets = f"log end offset {leo}, last stable offset {lso}{held}"
        title = (
            f"{name}: {_n(p['transactions'], 'transaction')} ({p['committed']} committed, "
            f"{p['aborted']} aborted, {p['open']} open); {offsets}"
        )
        if self.rows:
            out.table(title, self.COLUMNS, self.rows, left=frozenset({"state", "note"}))
        else:
            out.line(title)
        for f in self.findings:
            out.line(
                f"{f['severity']}: {f['code']}: {f['path']}"
                + (f":{f['position']}" if f["position"] is not None else "")
                + (f" (offset {f['offset']})" if f["offset"] is not None else "")
                + f": {f['message']}"
            )
        if self.commands:
            out.line("To abort the hanging transactions:")
            for c in self.commands:
                out.line(f"  {c}")
            if any(EPOCH_PLACEHOLDER in c for c in self.commands):
                out.line(
                    f"  ({EPOCH_PLACEHOLDER}: not in this log dir; kafka-transactions.sh "
                    f"describe-producers --topic {p['topic']} --partition {p['partition']} "
                    "shows it)"
                )
        out.line("")
        self.rows, self.findings, self.commands = [], [], []

    def _summary(self, s: events.TransactionsSummary) -> None:
        quiet = (
            f"; {_n(self.quiet_partitions, 'partition')} without transactions or findings"
            if self.quiet_partitions
            else ""
        )
        verdict = "HANGING TRANSACTIONS" if s["hanging"] else "no hanging transactions"
        self.out.line(
            f"klogtool transactions: {verdict}: {_n(s['partitions'], 'partition')}, "
            f"{_n(s['transactions'], 'transaction')} ({s['committed']} committed, "
            f"{s['aborted']} aborted, {s['open']} open, {s['hanging']} hanging), "
            f"{_n(s['errors'], 'error')}, {_n(s['warnings'], 'warning')}{quiet}"
        )


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "Hanging transactions older than 15 minutes, with the command that aborts each:",
        [
            "klogtool transactions /var/lib/kafka/data --older-than 15m",
        ],
    ),
    (
        "Only the aborted ones of one partition, as JSON Lines:",
        [
            "klogtool transactions --state aborted --format jsonl orders-3",
        ],
    ),
]
