"""``dump-segments`` as a library: files in, docs/output.md objects out (a lazy stream).

The objects are plain dicts ready for JSON. Each file yields a ``file`` object, then its
batches / records / entries, and ``finding`` objects for what is wrong; the stream ends with a
``summary``. Memory stays flat: segments are mmapped and walked batch by batch.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import os
from collections import deque
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeAlias, TypedDict

from klogtool import events
from klogtool.codes import Code
from klogtool.errors import InputError, StdoutClosed
from klogtool.formats import checkpoint, engine, index, payloads
from klogtool.formats.batch import (
    Batch,
    Record,
)
from klogtool.formats.errors import FormatError
from klogtool.formats.payloads.confluent import CONFLUENT_DECODER, SchemaRegistry, decode_confluent
from klogtool.formats.payloads.control import decode_control_record
from klogtool.formats.records import (
    CLEAN,
    CORRUPT,
    TORN_TAIL,
    ZERO_FILL,
    ScanResult,
    SegmentScanner,
    kafka_entry_heads,
    not_a_log,
)
from klogtool.formats.snapshot import parse_snapshot
from klogtool.log import indexcheck, layout, pool, segment, storage
from klogtool.log.context import ReadContext
from klogtool.log.files import InputFile, expand
from klogtool.log.findings import Finding
from klogtool.log.objects import batch_object
from klogtool.log.pool import threaded
from klogtool.log.read import native_render
from klogtool.log.read.chunks import Chunk, cut_part, joined
from klogtool.log.segment import STDIN, Walked, mapped, read_small


class RenderedLines(TypedDict):
    """The records of a batch as lines of text the native engine rendered (DumpOptions
    .rendered_records): written as they are, never an object of the output."""

    type: Literal["lines"]
    text: Any  # bytes-like, the lines
    first_offset: int | None
    last_offset: int | None
    breaks: list[tuple[int, int]]


# What Dumper.objects yields: dump-segments' objects (events.EVENT_TYPES), and RenderedLines.
Obj: TypeAlias = (
    events.DumpSegmentsFile
    | events.DumpSegmentsBatch
    | events.DumpSegmentsRecord
    | events.DumpSegmentsFinding
    | events.DumpSegmentsIndexEntry
    | events.DumpSegmentsTimeindexEntry
    | events.DumpSegmentsTxnEntry
    | events.DumpSegmentsSanityCheck
    | events.DumpSegmentsProducerEntry
    | events.DumpSegmentsCheckpointEntry
    | events.DumpSegmentsEpochEntry
    | events.DumpSegmentsPartitionMetadata
    | events.DumpSegmentsMetaProperties
    | events.DumpSegmentsQuorumState
    | events.DumpSegmentsCleanShutdown
    | events.DumpSegmentsSummary
    | RenderedLines
)


@dataclass(frozen=True)
class DumpOptions:
    deep: bool = False  # --deep-iteration
    print_data: bool = False  # --print-data (implies deep)
    key_decoder: str = "utf8"
    value_decoder: str = "utf8"
    decoder: str = "auto"  # internal-topic decoder: auto | none | a payloads decoder name
    # internal decoders render as kafka-dump-log's text; index entries are checked by its rules
    kafka_text: bool = False
    max_bytes: int | None = None
    offsets: tuple[int, int] | None = None  # inclusive range
    index_sanity_check: bool = False
    verify_index_only: bool = False
    ctx: ReadContext = field(kw_only=True)
    stdin_kind: str = layout.LOG  # what `-` is read as
    # With "jsonl", "text" or "kafka", records may come as one {"type": "lines", "text": ...}
    # object per batch: their lines in that format, rendered by the native engine (the fast
    # path; see native_render.render_records for the other fields).
    rendered_records: str | None = None
    # With "jsonl", "text" or "kafka", a v2 batch's own line may come as such an object too (or
    # begin its records'), rendered by the native engine.
    rendered_batches: str | None = None
    # --jobs: threads rendering records natively (the GIL is released meanwhile), or for a
    # large segment worker processes rendering its parts (see PROCESS_MIN_BYTES)
    threads: int = 1
    # how the command writes an object (one line of jsonl or text, UTF-8): what worker
    # processes write a large segment's dump with; None: never in processes
    write_object: Callable[[Obj], bytes] | None = None
    # the schemas of the confluent key/value decoder (klogtool.log.schemas), None: none found
    schemas: SchemaRegistry | None = None

    @property
    def confluent(self) -> bool:
        """Whether keys or values decode as Confluent's wire format (not natively)."""
        return CONFLUENT_DECODER in (self.key_decoder, self.value_decoder)


def finding(
    severity: str,
    code: str,
    path: str,
    position: int | None,
    message: str,
    offset: int | None = None,
    *,
    index_offset: int | None = None,
    log_offset: int | None = None,
    index_timestamp: int | None = None,
    log_timestamp: int | None = None,
    previous_timestamp: int | None = None,
    invalid_bytes: int | None = None,
    cause: str | None = None,
) -> events.DumpSegmentsFinding:
    """dump-segments' ``finding`` object: a Finding's, and the extra fields given (in the
    order events.DumpSegmentsFinding lists them)."""
    f = Finding(severity, code, path, position, offset, message)  # checks the code
    details: events.DumpSegmentsFindingDetails = {}
    if index_offset is not None:
        details["index_offset"] = index_offset
    if log_offset is not None:
        details["log_offset"] = log_offset
    if index_timestamp is not None:
        details["index_timestamp"] = index_timestamp
    if log_timestamp is not None:
        details["log_timestamp"] = log_timestamp
    if previous_timestamp is not None:
        details["previous_timestamp"] = previous_timestamp
    if invalid_bytes is not None:
        details["invalid_bytes"] = invalid_bytes
    if cause is not None:
        details["cause"] = cause
    return {**f.as_obj(), **details}


SEGMENT_KINDS = (layout.LOG, layout.INDEX, layout.TIMEINDEX, layout.TXNINDEX)


def _first_offset(batch: Batch) -> int:
    """A batch's first offset; -1 where a legacy wrapper cannot be decompressed (it is then
    dumped, and its records' error reported)."""
    try:
        return batch.base_offset
    except FormatError:
        return -1


class Dumper:
    """Iterate :meth:`objects` for the whole run; counts feed the final summary."""

    def __init__(
        self,
        paths: list[str],
        options: DumpOptions,
        *,
        output: Callable[[], int | None] | None = None,
    ):
        """``output``: flushes what this process wrote and gives the file descriptor the
        dump goes to, which worker processes may then write a large segment's parts to, in
        turn (None: no such descriptor, the segment is dumped here)."""
        self.paths = paths
        self.opts = options
        self.output = output
        self.progress = options.ctx.progress.advance  # hears of the .log bytes dumped
        # the summary, counted along
        self.counts: events.DumpSegmentsSummary = {
            "type": "summary",
            "files": 0,
            "batches": 0,
            "records": 0,
            "bytes": 0,
            "errors": 0,
            "warnings": 0,
        }

    def objects(self) -> Iterator[Obj]:
        for f in expand(self.paths, stdin_kind=self.opts.stdin_kind):
            if self._beyond_offsets(f):
                continue
            for obj in self._file(f):
                if obj["type"] == "finding":
                    if obj["severity"] == "error":
                        self.counts["errors"] += 1
                    else:
                        self.counts["warnings"] += 1
                yield obj
        yield self.counts

    # -- per kind -----------------------------------------------------------------------------
    def _file(self, f: InputFile) -> Iterator[Obj]:
        self.counts["files"] += 1
        size = f.path.stat().st_size
        self.counts["bytes"] += size
        head: events.DumpSegmentsFile = {
            "type": "file",
            "path": f.display,
            "kind": f.kind,
            "size": size,
        }
        base = layout.offset_from_name(f.path)
        if f.kind in (
            layout.LOG,
            layout.INDEX,
            layout.TIMEINDEX,
            layout.TXNINDEX,
            layout.SNAPSHOT,
            layout.KRAFT_SNAPSHOT,
        ):
            head["base_offset"] = base if base is not None else 0
        yield head
        kind = f.kind
        if kind in (layout.LOG, layout.KRAFT_SNAPSHOT):
            yield from self._log(f)
        elif kind == layout.INDEX:
            yield from self._offset_index(f, base or 0)
        elif kind == layout.TIMEINDEX:
            yield from self._time_index(f, base or 0)
        elif kind == layout.TXNINDEX:
            yield from self._txn_index(f, base or 0)
        elif kind == layout.SNAPSHOT:
            yield from self._snapshot(f)
        else:
            yield from self._text_file(f)

    def _log(self, f: InputFile) -> Iterator[Obj]:
        opts = self.opts
        with mapped(f.path) as buf:
            first = self._first_part(f, buf)
            fd = self.output() if first is not None and self.output is not None else None
            result: ScanResult | None
            if first is not None and fd is not None:  # a large segment: its parts in processes
                result = self._in_processes(f, buf, first, fd)
            else:
                scanner = SegmentScanner(buf, stop_on_crc=False, max_bytes=opts.max_bytes)
                walked = Walked(self.progress)
                yield from self._walk(f, scanner, walked.at, opts.threads)
                walked.done(len(buf))
                result = scanner.result
        if result is not None:  # (None: the walk was cut short by --offsets)
            yield from self._ending(f, result)

    def _rendering(self, f: InputFile) -> native_render.Records | None:
        """How the native renderer writes this file's records (whole batches of plain
        records), or None."""
        opts = self.opts
        plain = self._internal_decoder(f) is None and opts.offsets is None and not opts.confluent
        rendering = opts.rendered_records
        if rendering is None or not (opts.deep or opts.print_data) or not plain:
            return None
        limit, kd, vd = opts.ctx.limits.max_batch_bytes, opts.key_decoder, opts.value_decoder
        return native_render.Records(limit, opts.print_data, kd, vd, rendering)

    def _walk(
        self, f: InputFile, scanner: SegmentScanner, at: Callable[[int], None], threads: int
    ) -> Iterator[Obj]:
        """Each batch ``scanner`` yields in range: its object, then its records (as lines the
        native renderer wrote, or as objects), or why they cannot be decoded. ``at`` hears the
        position reached."""
        opts = self.opts
        deep = opts.deep or opts.print_data
        decoder = self._internal_decoder(f)
        lo, hi = opts.offsets if opts.offsets else (None, None)
        how = self._rendering(f)
        # it releases the GIL: threads render the batches ahead, the output keeps its order
        if how is None or opts.ctx.engine != engine.NATIVE:
            threads = 1

        own_lines = opts.rendered_batches if opts.ctx.engine == engine.NATIVE else None

        def selected() -> Iterator[tuple[Batch, bool]]:
            """The batches in range, each with whether its CRC held."""
            for batch in scanner:
                at(batch.position)
                if hi is not None and _first_offset(batch) > hi:
                    break  # offsets increase (the scanner checks it): nothing more in range
                if lo is not None and batch.last_offset < lo:
                    continue
                self.counts["batches"] += 1
                if not scanner.crc_valid:
                    self.counts["errors"] += 1  # shown on the batch line; counted for the exit
                yield batch, scanner.crc_valid

        def render(item: Item) -> Any:
            """A run's pieces (``native_render.render_run``); or the batch's line rendered
            natively (None: not) and its records' lines (None: rendered in Python). (A v2
            batch comes alone only when its records are not native: too many of them, or none
            asked for natively.)"""
            if isinstance(item, list):
                assert own_lines is not None
                where = f"{f.display}:{item[0][0].position}"
                if how is None:  # (no --deep-iteration)
                    return native_render.batch_lines(item, own_lines, where)
                return native_render.render_run(item, how, where)
            batch, crc_valid = item
            own_line = own_lines is not None and batch.magic == 2
            where = f"{f.display}:{batch.position}"
            lines = None
            if how is not None:
                lines = native_render.render_records(batch, how, where)
            # (the kafka renderer's python record lines take the type and magic of the batch
            # object before them)
            if own_line and not (deep and lines is None and opts.kafka_text):
                assert own_lines is not None
                return native_render.batch_line(batch, crc_valid, own_lines, where), lines
            return None, lines

        # Batch lines native, and records too or none: v2 batches go to the engine a run at a
        # time, one call and one write for RUN_BYTES of them (a call and a write a batch cost
        # ~5 us of Python each: ~15% of a --print-data dump of 100-record batches).
        natively = own_lines is not None and (how is not None or not deep)
        max_records = native_render.MAX_RECORDS if deep else None
        items = _runs(selected(), RUN_BYTES if natively else 0, max_records)
        ahead = threaded(render, items, threads, per_task=RENDER_TASK_BYTES, weigh=_weight)
        for item, result in ahead:
            if isinstance(item, list):
                yield from self._run(f, item, result, decoder)
                continue
            batch, crc_valid = item
            line, lines = result
            yield batch_object(batch, crc_valid) if line is None else _lines(line)
            if not deep:
                continue
            if lines is not None:
                text, n, first, last, breaks = lines
                self.counts["records"] += n
                yield _lines(text, first, last, breaks)
                continue
            yield from self._python_records(f, batch, decoder)

    def _run(
        self,
        f: InputFile,
        run: list[tuple[Batch, bool]],
        pieces: list[native_render.Piece] | None,
        decoder: str | None,
    ) -> Iterator[Obj]:
        """The objects of a run of batches: the lines of each stretch the native engine
        rendered, and each batch it handed back (all of them, ``pieces`` None) in Python."""
        if pieces is None:
            pieces = [(None, 1, 0, None, None, [])] * len(run)
        deep = self.opts.deep or self.opts.print_data
        i = 0
        for text, batches, records, first, last, breaks in pieces:
            if text is None:
                batch, crc_valid = run[i]
                yield batch_object(batch, crc_valid)
                if deep:
                    yield from self._python_records(f, batch, decoder)
            else:
                self.counts["records"] += records
                yield _lines(text, first, last, breaks)
            i += batches

    def _python_records(self, f: InputFile, batch: Batch, decoder: str | None) -> Iterator[Obj]:
        """The record objects of ``batch`` in --offsets, or why they cannot be decoded."""
        lo, hi = self.opts.offsets if self.opts.offsets else (None, None)
        try:
            for rec in batch.records(self.opts.ctx.limits.max_batch_bytes):
                if lo is not None and not lo <= rec.offset <= hi:  # type: ignore[operator]
                    continue
                self.counts["records"] += 1
                obj = self._record(batch, rec, decoder)
                yield obj
                for msg in refused_payloads(obj):
                    yield finding(
                        "warning", Code.PAYLOAD_REFUSED, f.display, batch.position, msg, rec.offset
                    )
        except FormatError as e:
            yield finding(
                "error",
                e.code,
                f.display,
                e.position,
                f"cannot decode the records of this batch: {e}",
                batch.header_offset,
            )

    def _ending(self, f: InputFile, result: ScanResult) -> Iterator[Obj]:
        """The finding of a walk that did not end cleanly (none with --max-bytes)."""
        if result.end == CLEAN or self.opts.max_bytes is not None:
            return
        invalid = result.size - result.stopped_at
        why = not_a_log(result)
        if why is not None:
            yield finding(
                "error",
                Code.NOT_A_LOG,
                f.display,
                0,
                f"not a Kafka log segment: {why}",
                invalid_bytes=invalid,
                cause=why.code,
            )
            return
        sev = "warning" if result.end == ZERO_FILL else "error"
        msg = {
            ZERO_FILL: f"{invalid} zero bytes at the end (preallocated segment)",
            TORN_TAIL: f"{invalid} bytes at the end are an incomplete entry (a torn "
            f"write after {result.batches} complete batches)",
            CORRUPT: f"{invalid} invalid bytes at the end: {result.error}",
        }[result.end]
        code = (
            result.end
            if result.end != CORRUPT
            else (result.error.code if result.error else Code.CORRUPT)
        )
        yield finding(sev, code, f.display, result.stopped_at, msg, invalid_bytes=invalid)

    # -- a large segment in processes ---------------------------------------------------------
    def _first_part(self, f: InputFile, buf: memoryview) -> tuple[Chunk, int | None] | None:
        """The first of the parts a large segment's records are rendered in by ``--jobs``
        worker processes, and the last offset in it (:func:`cut_part`); None: the segment is
        rendered here (threads at most)."""
        opts = self.opts
        if (
            opts.threads < 2
            or opts.write_object is None
            or self.output is None
            or opts.max_bytes is not None
            or opts.ctx.engine != engine.NATIVE
            or self._rendering(f) is None
            or len(buf) < PROCESS_MIN_BYTES
            or storage.is_remote(f.path)
        ):
            return None
        first = cut_part(buf, 0, None, PROCESS_CHUNK_BYTES, str(f.path))
        if first[0].end == len(buf):
            return None  # one part: nothing to share
        return first

    def _in_processes(
        self, f: InputFile, buf: memoryview, first: tuple[Chunk, int | None], fd: int
    ) -> ScanResult:
        """The dump of ``f`` by worker processes (:func:`_dump_chunk`), part by part from
        ``first``: each cuts its part, renders it ahead and writes it to ``fd`` itself when its
        turn comes, up to the first part whose walk did not end cleanly; the bytes the walk of
        the whole segment here would write. Returns that walk's scan result."""
        opts = self.opts
        context = pool.fork_context()
        turn = context.Value("q", 0, lock=False)
        turns = context.Condition()
        chunk, after = first
        cut = context.Array("q", _Cut.of(1, chunk.end, after), lock=False)
        # the workers map the file this process has open (inherited), never its path again: a
        # segment replaced by rename meanwhile (the cleaner's .swap) must not be half read
        source = segment.descriptor(buf)
        assert source is not None  # (a local file: Dumper._first_part)
        work = functools.partial(_dump_chunk, source, f.display, opts, fd, len(buf))
        done: list[tuple[Chunk, ScanResult]] = []
        shared = (turn, turns, cut)
        with pool.processes(opts.ctx, opts.threads, _share_turns, shared) as workers:
            todo = itertools.count()
            ahead: deque[tuple[int, Future[_Part]]] = deque()

            def waiting() -> str:  # the part a worker's death loses (named, with its start)
                index = ahead[0][0] if ahead else len(done)
                return f"part {index} of the segment, from byte {done[-1][0].end if done else 0}"

            try:
                with pool.worker_deaths(waiting, f.display):
                    while True:
                        while len(ahead) < 2 * opts.threads:
                            index = next(todo)
                            job = workers.submit(work, index, chunk if index == 0 else None)
                            ahead.append((index, job))
                        part, result, counts = ahead[0][1].result()  # (an error: in its turn)
                        ahead.popleft()
                        assert part is not None and result is not None  # (None: past the end)
                        for k in ("batches", "records", "errors", "warnings"):
                            self.counts[k] += counts[k]
                        self.progress(part.end - part.start)
                        done.append((part, result))
                        if result.end != CLEAN or part.end == len(buf):
                            break  # (the walk of the whole segment stops there too)
            finally:
                for _index, fut in ahead:
                    fut.cancel()
        self.progress(len(buf) - sum(c.end - c.start for c, _r in done))  # (a walk stopped)
        return joined(done, len(buf))

    def _internal_decoder(self, f: InputFile) -> str | None:
        return internal_decoder(self.opts.decoder, f)

    def _record(self, batch: Batch, rec: Record, decoder: str | None) -> events.DumpSegmentsRecord:
        return record_object(batch, rec, decoder, self.opts)

    # -- index files --------------------------------------------------------------------------
    def _sibling_batches(
        self, f: InputFile, record_times: Collection[int] = ()
    ) -> list[BatchSummary] | None:
        """The batches of the sibling ``.log`` (for index checks), or None if it is missing;
        those whose last offset is in ``record_times`` with their records' max timestamp."""
        log = f.path.with_name(layout.segment_name(layout.offset_from_name(f.path) or 0, ".log"))
        if not log.is_file():
            return None
        limit = self.opts.ctx.limits.max_batch_bytes
        with mapped(log) as buf:
            return [
                BatchSummary(b.position, b.last_offset, b.max_timestamp)
                if b.last_offset not in record_times
                else _with_record_max(b, limit)
                for b in SegmentScanner(buf, stop_on_crc=False, check_crc=False)
            ]

    def _offset_index(self, f: InputFile, base: int) -> Iterator[Obj]:
        opts = self.opts
        buf = read_small(f.path, 1 << 31)
        if opts.index_sanity_check:  # an empty index passes it
            yield from self._sanity(f, index.sanity_check_offset_index, buf, base)
            return
        if len(buf) < 8:
            return  # an empty index (kafka-dump-log: "is empty.")
        batches = self._sibling_batches(f)
        if batches is None:
            yield _log_missing(f)
        by_pos = {b.position: b for b in batches or ()}
        for i, e in enumerate(index.iter_offset_index(buf, base, stop_at_zero_fill=True)):
            if not self._in_range(e.offset):
                continue
            if not opts.verify_index_only:
                yield {"type": "index_entry", "offset": e.offset, "position": e.position}
            if batches is None:
                continue
            b = by_pos.get(e.position)
            log_offset = b.last_offset if b is not None else -1
            if log_offset != e.offset:
                yield finding(
                    "warning",
                    Code.INDEX_MISMATCH,
                    f.display,
                    i * 8,
                    f"index entry offset {e.offset} at log position {e.position}: "
                    f"the batch there ends at offset {log_offset}",
                    e.offset,
                    index_offset=e.offset,
                    log_offset=log_offset,
                )

    def _beyond_offsets(self, f: InputFile) -> bool:
        """A segment file (or one of its indexes) of a segment that starts after --offsets."""
        if self.opts.offsets is None or f.kind not in SEGMENT_KINDS:
            return False
        base = layout.offset_from_name(f.path) if f.display != STDIN else None
        return base is not None and base > self.opts.offsets[1]

    def _in_range(self, offset: int) -> bool:
        """Whether ``offset`` is within --offsets (always, without it)."""
        if self.opts.offsets is None:
            return True
        lo, hi = self.opts.offsets
        return lo <= offset <= hi

    def _time_index(self, f: InputFile, base: int) -> Iterator[Obj]:
        opts = self.opts
        buf = read_small(f.path, 1 << 31)
        if opts.index_sanity_check:
            yield from self._sanity(f, index.sanity_check_time_index, buf, base)
            return
        if not buf:
            return
        entries = functools.partial(index.iter_time_index, buf, base, stop_at_zero_fill=True)
        # kafka-dump-log.sh compares an entry with the max of its batch's record timestamps
        wanted = {e.offset for e in entries()} if opts.kafka_text else ()
        batches = self._sibling_batches(f, wanted)
        if batches is None:
            yield _log_missing(f)
        check = _TimeIndexCheck(f, base, batches or [], opts.kafka_text)
        prev_ts = -1
        for i, e in enumerate(entries()):
            if self._in_range(e.offset):
                if not opts.verify_index_only:
                    yield {"type": "timeindex_entry", "timestamp": e.timestamp, "offset": e.offset}
                if batches is not None:
                    yield from check.entry(i * 12, e, prev_ts)
                elif e.timestamp <= prev_ts:
                    yield _out_of_order(f, i * 12, e, prev_ts)
            prev_ts = e.timestamp

    def _txn_index(self, f: InputFile, base: int) -> Iterator[Obj]:
        buf = read_small(f.path, 1 << 31)
        if self.opts.index_sanity_check:
            yield from self._sanity(f, index.sanity_check_txn_index, buf, base)
            return
        lo, hi = self.opts.offsets or (0, (1 << 63) - 1)
        try:
            for t in index.iter_txn_index(buf):
                if t.last_offset < lo or t.first_offset > hi:
                    continue  # no offset of this aborted transaction is in --offsets
                yield {
                    "type": "txn_entry",
                    "version": t.version,
                    "producer_id": t.producer_id,
                    "first_offset": t.first_offset,
                    "last_offset": t.last_offset,
                    "last_stable_offset": t.last_stable_offset,
                }
        except FormatError as e:
            yield finding("error", e.code, f.display, e.position, str(e))

    def _sanity(
        self, f: InputFile, check: Callable[[bytes, int], object], buf: bytes, base: int
    ) -> Iterator[Obj]:
        try:
            check(buf, base)
        except FormatError as e:
            yield finding("error", e.code, f.display, e.position, str(e))
            return
        yield {"type": "sanity_check", "path": f.display, "passed": True}

    # -- state files --------------------------------------------------------------------------
    def _snapshot(self, f: InputFile) -> Iterator[Obj]:
        try:
            snap = parse_snapshot(read_small(f.path), check_crc=False)
        except FormatError as e:
            yield finding("error", e.code, f.display, e.position, f"corrupt snapshot: {e}")
            return
        if not snap.crc_valid:
            yield finding(
                "error",
                Code.CRC_MISMATCH,
                f.display,
                2,
                f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {snap.crc}. "
                f"Computed crc: {snap.computed_crc}",
            )
        for entry in snap.entries:
            yield {
                "type": "producer_entry",
                "producer_id": entry.producer_id,
                "producer_epoch": entry.producer_epoch,
                "last_sequence": entry.last_sequence,
                "last_offset": entry.last_offset,
                "offset_delta": entry.offset_delta,
                "timestamp": entry.timestamp,
                "coordinator_epoch": entry.coordinator_epoch,
                "current_txn_first_offset": entry.current_txn_first_offset,
                "first_sequence": entry.first_sequence if entry.has_batch_metadata else -1,
            }

    def _text_file(self, f: InputFile) -> Iterator[Obj]:
        data = read_small(f.path)
        try:
            yield from _text_entries(f.kind, f.path.name, data)
        except FormatError as e:
            yield finding("error", e.code, f.display, e.position, str(e))


def internal_decoder(name: str, f: InputFile) -> str | None:
    """The internal-topic decoder for ``f`` under ``--decoder NAME`` (auto: by the partition
    directory's topic), or None for plain bytes."""
    if name == "none":
        return None
    if name != "auto":
        return name
    if f.kind == layout.KRAFT_SNAPSHOT:
        # <offset>-<epoch>.checkpoint and bootstrap.checkpoint hold metadata records only
        found: str | None = "cluster-metadata"
    else:
        parsed = (
            layout.parse_partition_dir_name(f.path.resolve().parent.name)
            if f.display != STDIN
            else None
        )
        if parsed is None:
            return None
        found = payloads.auto_decoder_for_topic(parsed[0])
    # A decoder not implemented yet: show the bytes rather than fail every record.
    return None if found in payloads.UNIMPLEMENTED_DECODERS else found


# A segment this large, dumped with --jobs N by the native renderer, is rendered in N worker
# processes, PROCESS_CHUNK_BYTES of it at a time (a spool file each, ~2x that); a smaller one in
# threads (its batch objects and the writing stay in this process, which then bounds the gain).
PROCESS_MIN_BYTES = 64 << 20
# Without --jobs, a dump runs in parallel (on the free CPUs: commands._options.free_cpus) only
# when a segment is this large: on two idle cores --jobs 2 took 0.81x the time of --jobs 1 for
# 17 % more CPU on 256 MiB, 0.67x for 5 % on 1 GiB, but 1.05x for 30 % on 64 MiB
# (bench/bench_jobs.py; bench/README.md).
PARALLEL_MIN_BYTES = 256 << 20
PROCESS_CHUNK_BYTES = 16 << 20
RENDER_TASK_BYTES = 2 << 20  # batch bytes a rendering thread takes at a time (--jobs)


RUN_BYTES = 256 << 10  # v2 batch bytes the native renderer takes in one call (Dumper._walk)

# What the renderer of Dumper._walk takes: a batch (with whether its CRC held), or a run of them
Item = tuple[Batch, bool] | list[tuple[Batch, bool]]


def _runs(
    items: Iterator[tuple[Batch, bool]], run_bytes: int, max_records: int | None
) -> Iterator[Item]:
    """``items``, their v2 batches (of at most ``max_records`` records) gathered into runs
    (lists) of about ``run_bytes`` of consecutive batches; each alone with 0."""
    run: list[tuple[Batch, bool]] = []
    weight = 0
    for item in items:
        batch = item[0]
        few = max_records is None or batch.count <= max_records
        if run_bytes and batch.magic == 2 and few:
            run.append(item)
            weight += batch.size
            if weight >= run_bytes:
                yield run
                run, weight = [], 0
            continue
        if run:
            yield run
            run, weight = [], 0
        yield item
    if run:
        yield run


def _weight(item: Item) -> int:
    return sum(b.size for b, _ in item) if isinstance(item, list) else item[0].size


def _lines(
    text: Any,
    first: int | None = None,
    last: int | None = None,
    breaks: list[tuple[int, int]] | None = None,
) -> Obj:
    """The object of lines the native engine rendered (see ``DumpOptions.rendered_records``)."""
    return {
        "type": "lines",
        "text": text,
        "first_offset": first,
        "last_offset": last,
        "breaks": breaks or [],
    }


def record_object(
    batch: Batch, rec: Record, decoder: str | None, opts: DumpOptions
) -> events.DumpSegmentsRecord:
    """The docs/output.md record object of ``rec`` (of ``batch``), as dump-segments shows it."""
    # header values are never in Confluent's wire format: with it they show in base64
    header_decoder = "base64" if opts.value_decoder == CONFLUENT_DECODER else opts.value_decoder
    obj: events.DumpSegmentsRecord = {
        "type": "record",
        "offset": rec.offset,
        "position": batch.position,
        "timestamp": rec.timestamp,
        "key_size": -1 if rec.key is None else len(rec.key),
        "value_size": -1 if rec.value is None else len(rec.value),
        "sequence": rec.sequence,
        "headers": [
            {"key": k, "value": payloads.decode_bytes(header_decoder, v)}
            if opts.print_data
            else {"key": k}
            for k, v in rec.headers
        ],
    }
    if batch.magic < 2:
        # A v0/v1 record always has its message's CRC (Record's are None for v2 records only):
        # no check here, a record's path is hot.
        obj["crc"] = rec.crc  # type: ignore[typeddict-item]
        obj["crc_valid"] = rec.crc_valid  # type: ignore[typeddict-item]
    # --decoder none decodes nothing: a control record's raw key and value show like any other
    if batch.is_control and opts.decoder != "none":
        try:
            ctl = decode_control_record(rec.key, rec.value)
            obj["control"] = {"type": ctl.type_name, "type_id": ctl.type_id, **ctl.fields}
        except FormatError as e:
            obj["control"] = {"type": "INVALID", "error": str(e)}
        return obj
    if not opts.print_data:
        return obj
    try:
        if decoder is None and opts.confluent:
            obj["key"] = _payload(opts.key_decoder, rec.key, opts)
            obj["value"] = _payload(opts.value_decoder, rec.value, opts)
        elif decoder is None and opts.kafka_text:
            # kafka-dump-log's StringDecoder: malformed UTF-8 becomes U+FFFD
            obj["key"] = payloads.kafka_dump_text(opts.key_decoder, rec.key, None, 0)[0]
            obj["value"] = payloads.kafka_dump_text(opts.value_decoder, None, rec.value, 0)[1]
        elif decoder is None:
            obj["key"] = payloads.decode_bytes(opts.key_decoder, rec.key)
            obj["value"] = payloads.decode_bytes(opts.value_decoder, rec.value)
        elif opts.kafka_text:
            obj["key"], obj["value"] = payloads.kafka_dump_text(
                decoder, rec.key, rec.value, rec.offset
            )
        else:
            obj["key"], obj["value"] = payloads.decode_internal(decoder, rec.key, rec.value)
    except FormatError as e:  # one undecodable payload is not a broken batch
        obj["key"] = obj["value"] = None
        obj["decode_error"] = f"{decoder or opts.value_decoder}: {e}"
    return obj


def refused_payloads(record: events.DumpSegmentsRecord) -> list[str]:
    """What the confluent decoder refused of a record's key and value (each a payload-refused
    finding; the record shows it undecoded, with its raw bytes)."""
    out = []
    for name, p in (("key", record.get("key")), ("value", record.get("value"))):
        if isinstance(p, dict) and p.get("code") == Code.PAYLOAD_REFUSED:
            out.append(f"record {record['offset']}: {name} not decoded: {p['error']}")
    return out


def _payload(name: str, data: Any, opts: DumpOptions) -> Any:
    """A key or value under a decoder that may be ``confluent`` (kafka text: compact JSON)."""
    if name == CONFLUENT_DECODER:
        return decode_confluent(data, opts.schemas)
    if opts.kafka_text:
        return payloads.kafka_dump_text(name, data, data, 0)[0]
    return payloads.decode_bytes(name, data)


def _text_entries(kind: str, name: str, data: bytes) -> Iterator[Obj]:
    if kind == layout.OFFSET_CHECKPOINT:
        cp = checkpoint.parse_offset_checkpoint(data)
        for (topic, partition), offset in cp.entries.items():
            entry: events.DumpSegmentsCheckpointEntry = {
                "type": "checkpoint_entry",
                "topic": topic,
                "partition": partition,
                "offset": offset,
            }
            yield entry
    elif kind == layout.LEADER_EPOCH_CHECKPOINT:
        for e in checkpoint.parse_leader_epoch_checkpoint(data):
            yield {"type": "epoch_entry", "epoch": e.epoch, "start_offset": e.start_offset}
    elif kind == layout.PARTITION_METADATA:
        pm = checkpoint.parse_partition_metadata(data)
        yield {"type": "partition_metadata", "version": pm.version, "topic_id": pm.topic_id}
    elif kind == layout.META_PROPERTIES:
        mp = checkpoint.parse_meta_properties(data)
        props: events.DumpSegmentsMetaProperties = {
            "type": "meta_properties",
            "version": mp.version,
            "cluster_id": mp.cluster_id,
            "node_id": mp.node_id,
            "broker_id": mp.broker_id,
            "directory_id": mp.directory_id,
        }
        yield events.open_object(props, dict(mp.extra))  # every other property, as a string
    elif kind == layout.QUORUM_STATE:
        fields = checkpoint.parse_quorum_state(data)
        state: events.DumpSegmentsQuorumState = {
            "type": "quorum_state",
            "data_version": fields["data_version"],
            "leaderEpoch": fields["leaderEpoch"],
        }
        yield events.open_object(state, fields)  # and every other field of its JSON
    elif kind == layout.CLEAN_SHUTDOWN:
        cs = checkpoint.parse_clean_shutdown(data)
        yield {"type": "clean_shutdown", "version": cs.version, "broker_epoch": cs.broker_epoch}


def _log_missing(f: InputFile) -> events.DumpSegmentsFinding:
    return finding(
        "warning",
        Code.LOG_MISSING,
        f.display,
        None,
        "no sibling .log: entries are not checked against the log",
    )


class BatchSummary(NamedTuple):
    """The header fields index checks need, detached from the file's mapping; for a time index
    entry's batch in kafka-dump-log's check, the max of its records' timestamps (-1 without
    records), or why its records do not decode."""

    position: int
    last_offset: int
    max_timestamp: int
    record_max_timestamp: int | None = None
    records_error: FormatError | None = None


def _with_record_max(batch: Batch, max_batch_bytes: int) -> BatchSummary:
    try:
        # (kafka-dump-log.sh starts from -1, RecordBatch.NO_TIMESTAMP)
        top = max(itertools.chain((-1,), (r.timestamp for r in batch.records(max_batch_bytes))))
    except FormatError as e:
        return BatchSummary(batch.position, batch.last_offset, batch.max_timestamp, None, e)
    return BatchSummary(batch.position, batch.last_offset, batch.max_timestamp, top)


def _out_of_order(
    f: InputFile, pos: int, e: index.TimeIndexEntry, prev_ts: int
) -> events.DumpSegmentsFinding:
    return finding(
        "error",
        Code.TIMEINDEX_OUT_OF_ORDER,
        f.display,
        pos,
        f"time index timestamp {e.timestamp} does not increase (previous {prev_ts})",
        e.offset,
        index_timestamp=e.timestamp,
        previous_timestamp=prev_ts,
    )


class _TimeIndexCheck:
    """The checks of a time index's entries against its segment's ``batches``: by the broker's
    rule (:func:`indexcheck.time_entry_batch`), or with ``kafka`` by kafka-dump-log.sh's
    (``DumpLogSegments.dumpTimeIndex``): the batch it reads is the first, from the position the
    offset index gives the entry's offset, whose last offset is at or after it; when that is
    not the entry's offset, the entry is "not found" (with that last offset, -1 for no batch)
    and nothing else is checked of it; else its timestamp is compared with the max of the
    batch's record timestamps and with the previous entry's."""

    def __init__(self, f: InputFile, base: int, batches: list[BatchSummary], kafka: bool):
        self.f = f
        self.base = base
        self.batches = batches
        self.lasts = [b.last_offset for b in batches]
        self.kafka = kafka
        self.positions = [b.position for b in batches] if kafka else []
        self.offset_index = b""
        path = f.path.with_name(layout.segment_name(base, ".index"))
        if kafka and path.is_file():
            # (without one kafka-dump-log.sh stops with an exception: the log is read from 0)
            self.offset_index = read_small(path, 1 << 31)

    def entry(self, pos: int, e: index.TimeIndexEntry, prev_ts: int) -> Iterator[Obj]:
        offset = e.offset
        last, b = self._kafka_batch(offset) if self.kafka else self._batch(offset)
        if last == -1:
            where = f"past the last offset {self.lasts[-1]}" if self.lasts else "in no batch"
            yield self._not_found(pos, offset, -1, f"{where} of the log")
            if self.kafka:
                return
        elif last != offset and self.kafka:
            why = f"not the last offset of the batch read for it (which ends at {last})"
            yield self._not_found(pos, offset, last, why)
            return
        elif b is not None:
            yield from self._timestamp(pos, e, b)
        if e.timestamp <= prev_ts:
            yield _out_of_order(self.f, pos, e, prev_ts)

    def _batch(self, offset: int, start: int = 0) -> tuple[int, BatchSummary | None]:
        """The last offset of the first batch from ``start`` on at or after ``offset`` (-1:
        none), and that batch."""
        i = indexcheck.time_entry_batch(self.lasts, offset, start)
        if i == len(self.batches):
            return -1, None
        return self.lasts[i], self.batches[i]

    def _kafka_batch(self, offset: int) -> tuple[int, BatchSummary | None]:
        """:meth:`_batch` as kafka-dump-log.sh finds it: read from the offset index's position
        for ``offset``. Where that is not a batch's start (an index entry pointing into a
        batch), the log is read from there as Kafka's reader reads it, up to a batch start."""
        at = index.offset_index_lookup(self.offset_index, self.base, offset)
        i = bisect.bisect_left(self.positions, at)
        if i < len(self.positions) and self.positions[i] == at:
            return self._batch(offset, i)
        log = self.f.path.with_name(layout.segment_name(self.base, ".log"))
        with mapped(log) as buf:
            for position, last in kafka_entry_heads(buf, at):
                i = bisect.bisect_left(self.positions, position)
                if i < len(self.positions) and self.positions[i] == position:
                    return self._batch(offset, i)
                if last >= offset:
                    return last, None  # (not a batch: no records to compare)
        return -1, None

    def _not_found(self, pos: int, offset: int, log_offset: int, why: str) -> Obj:
        return finding(
            "warning",
            Code.TIMEINDEX_OFFSET_NOT_FOUND,
            self.f.display,
            pos,
            f"time index entry offset {offset} is {why}",
            offset,
            index_offset=offset,
            log_offset=log_offset,
        )

    def _timestamp(self, pos: int, e: index.TimeIndexEntry, b: BatchSummary) -> Iterator[Obj]:
        """The entry's timestamp against its batch's max (the max of its records' with
        ``kafka``)."""
        f = self.f
        log_ts = b.record_max_timestamp if self.kafka else b.max_timestamp
        if b.records_error is not None:
            err = b.records_error
            yield finding(
                "error",
                err.code,
                f.display,
                pos,
                f"time index entry offset {e.offset}: cannot decode the records of its batch "
                f"(at position {b.position} of the log): {err}",
                e.offset,
            )
        elif log_ts is not None and log_ts != e.timestamp:
            yield finding(
                "warning",
                Code.TIMEINDEX_TIMESTAMP_MISMATCH,
                f.display,
                pos,
                f"time index entry timestamp {e.timestamp} but the batch holding offset "
                f"{e.offset} reaches {log_ts}",
                e.offset,
                index_timestamp=e.timestamp,
                log_timestamp=log_ts,
            )


_TURNS: Any = None  # in a worker: (the turn, its lock, the cut): see Dumper._in_processes
_DONE = -1  # the turn when no part writes any more (a walk stopped, a worker failed)


class _Cut(NamedTuple):
    """Where the next part of a segment starts, as the worker that cut the part before it
    found (shared by the workers as 64-bit integers, under the turns' lock)."""

    number: int  # the part's
    start: int  # its position (the segment's size: no part starts there, the last has ended)
    has_last: int
    # the last offset before it (when has_last), high * 2**62 + low: a batch's offset plus
    # its last offset delta can pass 64 bits in a hostile segment, and the walk after the
    # cut must see it as the walk of the whole segment does
    high: int
    low: int

    @classmethod
    def of(cls, number: int, start: int, last: int | None) -> _Cut:
        high, low = divmod(last or 0, 1 << 62)
        return cls(number, start, last is not None, high, low)

    @property
    def last(self) -> int | None:
        return (self.high << 62) + self.low if self.has_last else None


_Part: TypeAlias = "tuple[Chunk | None, ScanResult | None, events.DumpSegmentsSummary]"


def _share_turns(turn: Any, turns: Any, cut: Any) -> None:
    global _TURNS
    _TURNS = (turn, turns, cut)


def _dump_chunk(
    source: int, display: str, opts: DumpOptions, fd: int, size: int, index: int, part: Chunk | None
) -> _Part:
    """In a worker: the dump of part ``index`` of the first ``size`` bytes of a segment
    (objects as ``opts.write_object`` writes them, records as the native renderer's lines)
    written to ``fd`` in its turn: held until the parts before it are written, then as it is
    rendered. The part is ``part``, or else cut here from where the part before it ended (and
    where it ends is then shared at once, for the next part to start). The part, its scan
    result and counts. A part whose walk stops early, or fails, ends the turns: the parts after
    it write nothing (and stop: their result is None); so does a part past the last."""
    turn, turns, cut = _TURNS
    write = opts.write_object
    assert write is not None  # (Dumper._first_part)
    dumper = Dumper([], opts)
    f = InputFile(Path(display), layout.LOG, display)
    held = _Held()
    streaming = False  # the parts before are written: this one goes out as it is rendered

    def out(piece: Any) -> None:
        nonlocal streaming
        if not streaming and turn.value == index:
            held.write(fd)
            streaming = True
        if streaming:
            _write_all(fd, piece)
        else:
            held.add(piece)

    begin = None  # where this part starts, when it is to be cut here
    if part is None:
        with turns:
            turns.wait_for(lambda: cut[0] == index or cut[1] == size or turn.value == _DONE)
            begin = _Cut(*cut)
        if begin.number != index or begin.start == size or turn.value == _DONE:
            return None, None, dumper.counts  # past the last part (or the walk's end)

    result: ScanResult | None = None
    try:
        with segment.mapped_descriptor(source, display) as whole:
            if len(whole) < size:  # (as the SIGBUS guard says it of a mapping it reads)
                raise InputError(
                    "the file shrank while klogtool read it (another process truncated or "
                    "replaced it); run the command again",
                    path=display,
                    position=len(whole),
                    code=Code.FILE_SHRANK,
                )
            buf = whole[:size]
            if begin is not None:
                after: int | None = None
                try:
                    part, after = cut_part(buf, begin.start, begin.last, PROCESS_CHUNK_BYTES)
                finally:  # (a cut that failed: this part is the last)
                    end = part.end if part is not None else size
                    with turns:
                        cut[:] = _Cut.of(index + 1, end, after)
                        turns.notify_all()
            assert part is not None
            scanner = SegmentScanner(
                buf[part.start : part.end],
                stop_on_crc=False,
                base_position=part.start,
                last_offset=part.last_offset,
            )
            for obj in dumper._walk(f, scanner, lambda _position: None, 1):
                if turn.value == _DONE:
                    break  # a part before this one ended the walk
                if obj["type"] == "lines":
                    out(obj["text"])
                    continue
                if obj["type"] == "finding":
                    dumper.counts["errors" if obj["severity"] == "error" else "warnings"] += 1
                out(write(obj))
            else:
                result = scanner.result
    finally:
        with turns:
            turns.wait_for(lambda: turn.value in (index, _DONE))
            mine = turn.value == index
        try:
            if mine and not streaming:
                held.write(fd)
        finally:
            held.pieces.clear()
            if mine:
                with turns:
                    clean = result is not None and result.end == CLEAN
                    turn.value = index + 1 if clean else _DONE
                    turns.notify_all()
    return part, result, dumper.counts


class _Held:
    """A worker's output waiting for its turn: the pieces themselves (the native renderer's
    buffers, never changed once made, and the objects' lines), written with writev when the
    turn comes. Copying them into one buffer cost ~0.3 s of CPU on a 2 GiB segment's half."""

    def __init__(self) -> None:
        self.pieces: list[Any] = []

    def add(self, piece: Any) -> None:
        self.pieces.append(piece)

    def write(self, fd: int) -> None:
        pieces, self.pieces = self.pieces, []
        try:
            for i in range(0, len(pieces), _IOV_MAX):
                group = pieces[i : i + _IOV_MAX]
                written = os.writev(fd, group)
                for piece in group:
                    size = memoryview(piece).nbytes
                    if written < size:  # a short write: the rest of it (and of the group)
                        _write_all(fd, memoryview(piece)[written:])
                    written = max(written - size, 0)
        except BrokenPipeError:
            raise StdoutClosed() from None


def _iov_max() -> int:
    """How many buffers one writev takes (Linux: 1024; POSIX: at least 16)."""
    try:
        n = os.sysconf("SC_IOV_MAX")
    except (AttributeError, ValueError, OSError):
        return 16
    return n if n >= 16 else 16


_IOV_MAX = _iov_max()


def _write_all(fd: int, data: Any) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except BrokenPipeError:
        raise StdoutClosed() from None
