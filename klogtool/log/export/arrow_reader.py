"""Segments to Arrow record batches: the split planner and reader behind ``export`` and the
``kafka-segments`` Spark data source (the README's Export section).

This module (with :mod:`~klogtool.log.export.spec`, the options and columns, and
:mod:`~klogtool.log.splits`, the splits) is the one core both engines run: the Spark
source (``klogtool/spark``) calls ``splits.plan_splits`` on the driver and :func:`read_split`
in its tasks; ``export --engine local`` calls the same two functions from a process pool. It
reads through the format layer's :class:`~klogtool.formats.records.SegmentScanner` and
``Batch.records()``; nothing here parses bytes itself. pyarrow is imported lazily, so the core
install works without the ``spark`` extra; pyspark is never imported here.

**Columns.** ``spec.columns`` gives the ``(name, kind)`` list for a set of options; the Arrow
schema (``spec.arrow_schema``) and the Spark schema (``klogtool.spark``) are both derived from
it. Records: Spark's Kafka source columns first (``key, value, topic, partition, offset,
timestamp, timestampType, headers``), then klogtool's extras in the JSON field names
(``segment, position, magic, compression, producer_id, producer_epoch, sequence,
partition_leader_epoch, is_transactional, is_control``). ``headers`` is null for a record
without headers (as in Spark's Kafka source). ``onCorrupt=report`` adds ``error_code`` and
``error_message``.

**Splits.** Segments (``.log`` files) are listed in dump order; segments smaller than the
target are bin-packed into one split, larger ones are cut into byte ranges. A range owns the
batches that *start* inside it, so cuts need no planning-time reads: a task whose range starts
mid-segment walks the batch headers from the segment start (no CRCs, no records) to its first
batch. The walk stops where the scanner stops, so every split size gives the same rows.

**Corruption** (``on_corrupt``): ``fail`` raises :class:`CorruptSegmentError`; ``skip`` leaves out
what cannot be read (a batch with a CRC mismatch when ``verify``, a batch whose records do not
decode, the unreadable tail of a segment: torn, garbage or structurally invalid; a zero-filled
tail is not corruption); ``report`` leaves it out too but emits one row saying what and where.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, islice
from typing import TYPE_CHECKING, Any

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import codecs, payloads
from klogtool.formats.batch import Batch, NativeWrapper, Record, record_fields
from klogtool.formats.errors import FormatError
from klogtool.formats.payloads import auto_decoder_for_topic, decode_internal
from klogtool.formats.payloads.confluent import CONFLUENT_DECODER, decode_confluent
from klogtool.formats.records import CORRUPT, TORN_TAIL, SegmentScanner, not_a_log
from klogtool.log.export import native_columns
from klogtool.log.export.spec import INTERNAL_DECODER, ReadOptions, arrow_schema
from klogtool.log.objects import batch_object
from klogtool.log.seek import load_index
from klogtool.log.segment import fetcher, mapped
from klogtool.log.splits import SegmentRange, Split, plan_splits
from klogtool.log.storage import as_path
from klogtool.log.txnstates import TransactionStates, segment_transaction_states

if TYPE_CHECKING:
    import pyarrow as pa


BATCH_ROWS = 16384  # rows per Arrow record batch


BATCH_PAYLOAD_BYTES = 32 << 20  # ... or fewer when the payloads add up to this


# -- reading --------------------------------------------------------------------------------
class CorruptSegmentError(Exception):
    """Unreadable data met with ``on_corrupt=fail``. Its text carries a marker that survives
    Spark's exception wrapping, so the driver can turn a failed job back into one line."""

    MARKER = "klogtool-corrupt:"

    def __init__(self, path: str, position: int | None, code: str, message: str):
        self.path = path
        self.position = position
        self.code = code
        self.message = message
        payload = json.dumps(
            {"path": path, "position": position, "code": code, "message": message}
        ).encode()
        tag = base64.b64encode(payload).decode("ascii")
        super().__init__(f"{path}:{position}: {message} ({code}) [{self.MARKER}{tag}]")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across a process pool
        return (type(self), (self.path, self.position, self.code, self.message))

    def to_input_error(self, display: str | None = None) -> InputError:
        return InputError(
            self.message,
            path=display or self.path,
            position=self.position,
            code=self.code,
            hint="--on-corrupt skip leaves unreadable data out, --on-corrupt report adds a "
            "row for each problem (the kafka-segments source: option onCorrupt)",
        )

    @classmethod
    def find(cls, text: str) -> CorruptSegmentError | None:
        """The error whose marker appears in ``text`` (e.g. a Spark job failure), if any."""
        at = text.find("[" + cls.MARKER)
        if at < 0:
            return None
        start = at + 1 + len(cls.MARKER)
        end = text.find("]", start)
        try:
            d = json.loads(base64.b64decode(text[start:end]))
        except ValueError:
            return None
        return cls(d["path"], d["position"], d["code"], d["message"])


def read_split(
    split: Split, opts: ReadOptions, schema: pa.Schema | None = None
) -> Iterator[pa.RecordBatch]:
    """Arrow record batches of one split, in file order, with exactly ``schema`` (default:
    every column of :func:`columns`); each batch holds rows of one segment range."""
    if schema is None:
        schema = arrow_schema(opts)
    for rng in split.ranges:
        yield from _RangeReader(rng, opts, schema).batches()


def read_paths(
    paths: Sequence[str], opts: ReadOptions, schema: pa.Schema | None = None
) -> Iterator[pa.RecordBatch]:
    """Every segment of PATHs as Arrow batches, in one process (tests, small jobs)."""
    for split in plan_splits(paths):
        yield from read_split(split, opts, schema)


def _ms_to_us(values: Sequence[int] | pa.Array) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        arr = values if isinstance(values, pa.Array) else pa.array(values, pa.int64())
        us = pc.multiply_checked(arr, 1000)
    except (pa.ArrowInvalid, OverflowError):
        # absurd timestamps (past 2^63 - 1 us, or a base plus a delta past 2^63 - 1 ms, which
        # Kafka's reader wraps around): null rather than a wrapped-around value
        limit = (1 << 63) // 1000
        plain = values.to_pylist() if isinstance(values, pa.Array) else values
        us = pa.array([v * 1000 if -limit < v < limit else None for v in plain], pa.int64())
    return us.cast(pa.timestamp("us", tz="UTC"))


def _binary_array(items: Sequence[Any], typ: pa.DataType) -> pa.Array:
    """A binary array from memoryviews/bytes/None, built from one joined buffer (far faster
    than ``pa.array`` over memoryviews)."""
    import pyarrow as pa

    lengths = [-1 if x is None else len(x) for x in items]
    nulls = lengths.count(-1)
    validity = None
    if nulls:
        validity = pa.array([n >= 0 for n in lengths], pa.bool_()).buffers()[1]
        lengths = [0 if n < 0 else n for n in lengths]
    offsets = pa.array([0, *accumulate(lengths)], pa.int32())
    data = pa.py_buffer(b"".join(filter(None, items)))
    return pa.Array.from_buffers(
        typ, len(items), [validity, offsets.buffers()[1], data], null_count=nulls
    )


def _payload_array(items: Sequence[Any], decoder: str, typ: pa.DataType) -> pa.Array:
    import pyarrow as pa

    if decoder == "binary":
        return _binary_array(items, typ)
    return pa.array([payloads.decode_bytes(decoder, x) for x in items], typ)


def _confluent_array(items: Sequence[Any], opts: ReadOptions) -> pa.Array:
    """The ``*_decoded`` column: each payload decoded from Confluent's wire format, as JSON
    text (null for a null payload)."""
    import pyarrow as pa

    texts = []
    for x in items:
        obj = decode_confluent(x, opts.schemas)
        texts.append(None if obj is None else json.dumps(obj, ensure_ascii=False))
    return pa.array(texts, pa.string())


def _internal_arrays(
    topic: str | None, keys: Sequence[Any], values: Sequence[Any], opts: ReadOptions
) -> dict[str, pa.Array]:
    """The ``key_decoded`` and ``value_decoded`` columns of ``--*-decoder internal``: each
    record of an internal topic decoded as kafka-dump-log decodes it, as JSON text (null for
    another topic, or a null part; a record that does not decode: its error)."""
    import pyarrow as pa

    if INTERNAL_DECODER not in (opts.key_decoder, opts.value_decoder):
        return {}
    name = auto_decoder_for_topic(topic or "")
    out: dict[str, list[str | None]] = {"key": [], "value": []}
    for k, v in zip(keys, values, strict=True):
        if name is None:
            decoded: tuple[Any, Any] = (None, None)
        else:
            try:
                decoded = decode_internal(name, k, v)
            except FormatError as e:
                decoded = ({"error": str(e)}, {"error": str(e)})
        for part, obj in zip(("key", "value"), decoded, strict=True):
            out[part].append(None if obj is None else json.dumps(obj, ensure_ascii=False))
    return {part: pa.array(texts, pa.string()) for part, texts in out.items()}


def _headers_array(headers: Sequence[tuple[Any, ...]], decoder: str, typ: pa.DataType) -> pa.Array:
    import pyarrow as pa

    counts = [len(h) for h in headers]
    offsets = pa.array([0, *accumulate(counts)], pa.int32())
    flat = [kv for h in headers for kv in h]
    struct_type = typ.value_type
    keys = pa.array([k for k, _ in flat], pa.string())
    vals = [v for _, v in flat]
    value_type = struct_type.field("value").type
    if value_type == pa.binary():
        values = _binary_array(vals, value_type)
    else:
        values = pa.array(
            [payloads.decode_bytes(decoder, v) for v in vals], value_type
        )  # decoded text
    struct = pa.StructArray.from_arrays([keys, values], fields=list(struct_type))
    mask = pa.array([c == 0 for c in counts], pa.bool_()) if 0 in counts else None
    return pa.ListArray.from_arrays(offsets, struct, type=typ, mask=mask)


def _native_arrays(cols: Mapping[str, Any], schema: pa.Schema) -> dict[str, pa.Array]:
    """The record columns from the native engine's buffers (``Columns.take()``: objects with
    the buffer protocol, moved out of the engine whole), wrapped without a copy."""
    import pyarrow as pa

    n = cols["length"]

    def buf(name: str) -> pa.Buffer:
        return pa.py_buffer(cols[name])

    def binary(name: str, typ: pa.DataType) -> pa.Array:
        nulls = cols[f"{name}_nulls"]
        return pa.Array.from_buffers(
            typ,
            cols[f"{name}_length"],
            [
                buf(f"{name}_validity") if nulls else None,
                buf(f"{name}_offsets"),
                buf(f"{name}_data"),
            ],
            null_count=nulls,
        )

    arrays = {
        "offset": pa.Array.from_buffers(pa.int64(), n, [None, buf("offset")]),
        "timestamp": _ms_to_us(pa.Array.from_buffers(pa.int64(), n, [None, buf("timestamp")])),
        "sequence": pa.Array.from_buffers(pa.int32(), n, [None, buf("sequence")]),
        "batch_index": pa.Array.from_buffers(pa.int32(), n, [None, buf("batch_index")]),
    }
    for name in ("key", "value"):
        if name in schema.names:
            arrays[name] = _as_type(binary(name, pa.binary()), schema.field(name).type)
    if "headers" in schema.names:
        typ = schema.field("headers").type
        value_type = typ.value_type.field("value").type
        struct = pa.StructArray.from_arrays(
            [
                binary("header_key", pa.string()),
                _as_type(binary("header_value", pa.binary()), value_type),
            ],
            fields=list(typ.value_type),
        )
        nulls = cols["headers_nulls"]
        arrays["headers"] = pa.Array.from_buffers(
            typ,
            n,
            [buf("headers_validity") if nulls else None, buf("headers_offsets")],
            null_count=nulls,
            children=[struct],
        )
    return arrays


# Key/value renderings the native engine's columns give (the others are text made by the
# payload decoders, in Python, from records as objects): the bytes, and base64 text made of
# them a column at a time (JSON Lines' default).
_NATIVE_DECODERS = ("binary", "none", "base64")


def _as_type(payloads_column: pa.Array, typ: pa.DataType) -> pa.Array:
    """The native engine's bytes as the column's type: themselves, or (a string column: the
    base64 decoder, the only text one :data:`_NATIVE_DECODERS` admits) their base64 text, as
    ``payloads.decode_bytes`` writes it."""
    import pyarrow as pa

    if typ == payloads_column.type:
        return payloads_column
    assert pa.types.is_string(typ), typ
    base64 = payloads.get_byte_decoder("base64")
    assert base64 is not None
    texts = [None if v is None else base64(v) for v in payloads_column.to_pylist()]
    return pa.array(texts, typ)


@dataclass
class _Pending:
    """Rows gathered for the next Arrow batch: records (or rows held by the native engine's
    builder) plus, per batch, its header fields."""

    records: list[Record] = field(default_factory=list)
    native_rows: int = 0
    batch_index: list[int] = field(default_factory=list)  # per record: index into batches
    batches: list[dict[str, Any]] = field(default_factory=list)  # _batch_fields of each
    batch_rows: list[dict[str, Any]] = field(default_factory=list)  # level=batches
    payload_bytes: int = 0

    @property
    def full(self) -> bool:
        """Enough for one Arrow batch: rows or payload bytes."""
        rows = max(len(self.records), self.native_rows, len(self.batch_rows))
        return rows >= BATCH_ROWS or self.payload_bytes >= BATCH_PAYLOAD_BYTES


class _RangeReader:
    def __init__(self, rng: SegmentRange, opts: ReadOptions, schema: pa.Schema):
        self.rng = rng
        self.opts = opts
        self.schema = schema
        self.pending = _Pending()
        self.native = None
        self.where = opts.where if opts.where is not None and opts.where.active else None
        self.txns: TransactionStates | None = None
        if (
            opts.level == "records"
            and (self.where is None or not self.where.record_level)
            and opts.key_decoder in _NATIVE_DECODERS
            and opts.value_decoder in _NATIVE_DECODERS
        ):
            self.native = native_columns.record_columns(opts.ctx.limits.max_batch_bytes)

    # -- problems ------------------------------------------------------------------------
    def _problem(
        self,
        position: int | None,
        offset: int | None,
        code: str,
        message: str,
        batch: Batch | None = None,
    ) -> Iterator[pa.RecordBatch]:
        mode = self.opts.on_corrupt
        if mode == "fail":
            raise CorruptSegmentError(self.rng.path, position, code, message)
        if mode == "skip":
            return
        yield from self._flush()
        row: dict[str, Any] = {}
        if batch is not None:  # what is known of the batch (its header decoded)
            if self.opts.level == "batches":
                row.update(self._batch_row(batch, True if self.opts.verify else None))
            else:
                row.update(self._batch_fields(batch))
        row.update(
            {
                "topic": self.rng.topic,
                "partition": self.rng.partition,
                "segment": self.rng.segment,
                "position": position,
                "offset": offset,
                "error_code": code,
                "error_message": message,
            }
        )
        if code == Code.CRC_MISMATCH and self.opts.level == "batches":
            row["crc_valid"] = False
        yield self._rows_to_batch([row])

    def _rows_to_batch(self, rows: list[dict[str, Any]]) -> pa.RecordBatch:
        import pyarrow as pa

        arrays = []
        for f in self.schema:
            vals = [r.get(f.name) for r in rows]
            if pa.types.is_timestamp(f.type):
                arrays.append(pa.array(vals, pa.int64()).cast(f.type))
            else:
                arrays.append(pa.array(vals, f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    # -- walking ---------------------------------------------------------------------------
    def batches(self) -> Iterator[pa.RecordBatch]:
        rng = self.rng
        try:
            if self._below_timestamps():
                return
            # a segment in object storage: fetched as far as this range's walk goes
            with mapped(rng.path, lazy=True) as whole:
                buf = whole[: min(rng.size, len(whole))]
                yield from self._walk(buf)
                yield from self._flush()
        except OSError as e:
            yield from self._problem(None, None, Code.IO_ERROR, f"cannot read: {e.strerror or e}")

    def _walk(self, buf: memoryview) -> Iterator[pa.RecordBatch]:
        rng = self.rng
        opts = self.opts
        start = 0
        if rng.start > 0:
            found = yield from self._range_start(buf)
            if found is None:
                return
            start = found
        scanner = SegmentScanner(
            buf[start:],
            check_crc=opts.verify,
            stop_on_crc=False,
            base_position=start,
            need=fetcher(buf, until=rng.end),  # the next range's walk fetches its own bytes
        )
        lo, hi, min_ts_ms = self._bounds()
        for batch in scanner:
            pos = batch.position
            if pos >= rng.end:
                return  # the next range owns it
            magic2 = batch.magic >= 2
            if hi is not None and (magic2 or batch.compression == codecs.NONE):
                if batch.base_offset > hi:
                    return  # offsets increase within a segment (the scanner checks it)
            if lo is not None and batch.last_offset < lo:
                continue
            if min_ts_ms is not None and magic2 and batch.max_timestamp < min_ts_ms:
                continue
            if opts.verify and not scanner.crc_valid:
                yield from self._problem(
                    pos,
                    batch.header_offset,
                    Code.CRC_MISMATCH,
                    f"batch CRC mismatch (stored {batch.crc}, computed {batch.compute_crc()})",
                    batch,
                )
                continue
            if self.where is not None and not self._selects(batch):
                continue
            if opts.level == "batches":
                self.pending.batch_rows.append(self._batch_row(batch, opts.verify or None))
            elif not (self.native is not None and (yield from self._native(batch))):
                yield from self._python(batch)
            if self.pending.full:
                yield from self._flush()
        res = scanner.result
        if res is not None and rng.start <= res.stopped_at < rng.end:
            yield from self._scan_end(res)

    def _below_timestamps(self) -> bool:
        """True when a pushed-down timestamp is above every record of this rolled segment, by
        its time index (whose last entry the broker writes on roll: the segment's largest
        timestamp), so that it is never read (or fetched)."""
        rng = self.rng
        floors = (self._bounds()[2], self.where.from_time if self.where is not None else None)
        min_ts = max((t for t in floors if t is not None), default=None)
        if min_ts is None or not rng.rolled or rng.segment is None:
            return False
        times = load_index(as_path(rng.path).with_suffix(".timeindex"), rng.segment, time=True)
        if isinstance(times, str) or times.n == 0 or times.untrimmed:
            return False
        return times.key(times.n - 1) < min_ts

    def _range_start(self, buf: memoryview) -> Generator[pa.RecordBatch, None, int | None]:
        """The position of this range's first batch, found by walking the headers from the
        segment start; None when there is none (the walk's end is reported if it lies in this
        range)."""
        rng = self.rng
        finder = SegmentScanner(buf, check_crc=False, stop_on_crc=False, need=fetcher(buf))
        for b in finder:
            if b.position >= rng.start:
                return b.position
        res = finder.result
        if res is not None and rng.start <= res.stopped_at < rng.end:
            yield from self._scan_end(res)  # the walk ends in this range
        return None

    def _bounds(self) -> tuple[int | None, int | None, int | None]:
        """The offset bounds (pushed down, and ``where``'s) and the smallest timestamp (ms)."""
        opts = self.opts
        lo, hi = opts.min_offset, opts.max_offset
        if self.where is not None and self.where.offsets is not None:
            wlo, whi = self.where.offsets
            lo = wlo if lo is None else max(lo, wlo)
            hi = whi if hi is None else min(hi, whi)
        min_ts_us = opts.min_timestamp_us
        return lo, hi, None if min_ts_us is None else min_ts_us // 1000

    def _native(self, batch: Batch) -> Generator[pa.RecordBatch, None, bool]:
        """Add a batch's records through the native engine, BATCH_ROWS at a time (a batch of
        millions of tiny records never becomes millions of rows at once); False: read it in
        Python."""
        source = batch.native_input(self.opts.ctx.limits.max_batch_bytes)
        if source is None:
            return False
        if self.pending.records:  # keep an Arrow batch to rows of one engine
            yield from self._flush()
        skip = 0
        while True:
            total = self._add_native(batch, *source, (skip, BATCH_ROWS))
            if total is None:
                # read it in Python; a later window decodes the same bytes the same way
                assert skip == 0, "the native engine refused a batch it had read"
                return False
            skip += BATCH_ROWS
            if skip >= total:
                return True
            yield from self._flush()

    def _python(self, batch: Batch) -> Iterator[pa.RecordBatch]:
        """Add the records of ``batch`` that ``where`` keeps, decoded in Python and checked (a
        problem, reported as ``on_corrupt`` says, gives no records). A batch of more than
        BATCH_ROWS records is checked whole, then read again BATCH_ROWS at a time: a batch of
        millions of tiny records never becomes millions of objects at once."""
        opts = self.opts
        if self.pending.native_rows:
            yield from self._flush()
        recs = yield from self._python_records(batch)
        if recs is None:
            return
        rest: Iterator[Record] = iter(())
        if len(recs) == BATCH_ROWS:
            rest = islice(batch.records(opts.ctx.limits.max_batch_bytes), BATCH_ROWS, None)
        where = self.where if self.where is not None and self.where.record_level else None
        while recs:
            kept = recs if where is None else [r for r in recs if where.matches(r)]
            if kept:
                self._add(batch, kept)
            recs = list(islice(rest, BATCH_ROWS))
            if recs and self.pending.full:
                yield from self._flush()

    def _python_records(self, batch: Batch) -> Generator[pa.RecordBatch, None, list[Record] | None]:
        """The first BATCH_ROWS records of ``batch``, every record checked (the rest are
        decoded and dropped); None after a problem."""
        opts = self.opts
        inner_crcs = opts.verify and batch.magic < 2 and batch.compression != codecs.NONE
        bad: Record | None = None
        try:
            it = batch.records(opts.ctx.limits.max_batch_bytes)
            recs = list(islice(it, BATCH_ROWS))
            for r in chain(recs, it):  # the rest are decoded (to find a problem), not kept
                if inner_crcs and bad is None and r.crc_valid is False:
                    bad = r
        except FormatError as e:
            yield from self._problem(
                e.position if e.position is not None else batch.position,
                batch.header_offset,
                e.code,
                f"records cannot be decoded: {e}",
                batch,
            )
            return None
        if bad is not None:
            yield from self._problem(
                batch.position,
                bad.offset,
                Code.INNER_CRC_MISMATCH,
                f"message at offset {bad.offset} inside the wrapper has a bad CRC",
                batch,
            )
            return None
        return recs

    def _scan_end(self, res: Any) -> Iterator[pa.RecordBatch]:
        invalid = res.size - res.stopped_at
        if res.end == TORN_TAIL:
            yield from self._problem(
                res.stopped_at,
                None,
                Code.TORN_TAIL,
                f"the last {invalid} bytes are an incomplete batch (an interrupted write)",
            )
        elif (bad := not_a_log(res)) is not None:  # as every command says of such a file
            yield from self._problem(0, None, Code.NOT_A_LOG, f"not a Kafka log segment: {bad}")
        elif res.end == CORRUPT:
            err = res.error
            yield from self._problem(
                res.stopped_at,
                None,
                err.code if err is not None else Code.CORRUPT,
                f"{err}; the {invalid} bytes from here to the end cannot be read",
            )

    def _selects(self, batch: Batch) -> bool:
        """Whether ``where`` keeps any record of ``batch``, judged from its header (and the
        partition's transactions, read once per reader when that filter is used)."""
        assert self.where is not None
        if self.where.skips_batch(batch):
            return False
        if not self.where.transactions:
            return True
        if self.txns is None:
            self.txns = segment_transaction_states(self.rng.path, self.opts.ctx.limits)
        return self.txns.state(batch) in self.where.transactions

    # -- building ------------------------------------------------------------------------
    def _batch_fields(self, b: Batch) -> dict[str, Any]:
        return {
            "position": b.position,
            "magic": b.magic,
            "compression": codecs.CODEC_NAMES.get(b.compression, f"unknown({b.compression})"),
            "producer_id": b.producer_id,
            "producer_epoch": b.producer_epoch,
            "partition_leader_epoch": b.partition_leader_epoch,
            "is_transactional": b.is_transactional,
            "is_control": b.is_control,
            "timestampType": b.timestamp_type,
        }

    def _batch_row(self, b: Batch, crc_valid: bool | None) -> dict[str, Any]:
        # dump-segments' batch object; crc_valid is None when not checked
        return {
            **batch_object(b, False),
            "crc_valid": crc_valid,
            "topic": self.rng.topic,
            "partition": self.rng.partition,
            "segment": self.rng.segment,
        }

    def _add_native(
        self,
        batch: Batch,
        data: memoryview | bytes,
        wrapper: NativeWrapper | None,
        window: tuple[int, int],
    ) -> int | None:
        """Add the ``window`` of records that the native engine reads of ``batch`` (see
        ``Batch.native_input``): the batch's record count, or None: read it in Python."""
        p = self.pending
        assert self.native is not None
        where = f"{self.rng.path}:{batch.position}"
        if wrapper is None:
            got = self.native.add(memoryview(data), len(p.batches), where, window)
        else:
            got = self.native.add_legacy(data, wrapper, len(p.batches), where, window)
        if got is None:
            return None
        n, total = got
        if n:
            p.batches.append(self._batch_fields(batch))
            p.native_rows += n
            p.payload_bytes = self.native.payload_bytes
        return total

    def _add(self, batch: Batch, recs: list[Record]) -> None:
        if not recs:
            return
        p = self.pending
        i = len(p.batches)
        p.batches.append(self._batch_fields(batch))
        p.records.extend(recs)
        p.batch_index.extend([i] * len(recs))
        if batch.compression == codecs.NONE:
            p.payload_bytes += batch.size
        else:
            p.payload_bytes += sum(len(r.value) for r in recs if r.value is not None)

    def _flush(self) -> Iterator[pa.RecordBatch]:
        p = self.pending
        if p.records or p.native_rows:
            yield self._records_batch(p)
        elif p.batch_rows:
            yield self._rows_to_batch(p.batch_rows)
        self.pending = _Pending()

    def _record_arrays(self, p: _Pending) -> dict[str, pa.Array]:
        """The per-record columns (and ``batch_index``) of the pending rows."""
        import pyarrow as pa

        if p.native_rows:
            assert self.native is not None
            return _native_arrays(self.native.take(), self.schema)
        # offset, timestamp, key, value, headers, sequence, ...
        cols = list(zip(*map(record_fields, p.records), strict=True))
        opts = self.opts
        names = self.schema.names
        arrays = {
            "offset": pa.array(cols[0], pa.int64()),
            "timestamp": _ms_to_us(cols[1]),
            "sequence": pa.array(cols[5], pa.int32()),
            "batch_index": pa.array(p.batch_index, pa.int32()),
        }
        internal = _internal_arrays(self.rng.topic, cols[2], cols[3], opts)
        for name, decoder, items in (
            ("key", opts.key_decoder, cols[2]),
            ("value", opts.value_decoder, cols[3]),
        ):
            if decoder == CONFLUENT_DECODER:
                if f"{name}_decoded" in names:
                    arrays[f"{name}_decoded"] = _confluent_array(items, opts)
                decoder = "binary"
            elif decoder == INTERNAL_DECODER:
                if f"{name}_decoded" in names:
                    arrays[f"{name}_decoded"] = internal[name]
                decoder = "binary"
            if name in names:
                arrays[name] = _payload_array(items, decoder, self.schema.field(name).type)
        if "headers" in names:
            typ = self.schema.field("headers").type
            arrays["headers"] = _headers_array(cols[4], opts.value_decoder, typ)
        return arrays

    def _records_batch(self, p: _Pending) -> pa.RecordBatch:
        import pyarrow as pa

        records = self._record_arrays(p)
        n = len(records["offset"])
        idx = records["batch_index"]
        batch_col = p.batches[0]  # the names of the batch fields each row repeats
        constant = {
            "topic": self.rng.topic,
            "partition": self.rng.partition,
            "segment": self.rng.segment,
        }
        arrays = []
        for f in self.schema:
            name = f.name
            if name in records:
                arrays.append(records[name])
            elif name in batch_col:
                arrays.append(pa.array([b[name] for b in p.batches], f.type).take(idx))
            elif name in constant:
                arrays.append(
                    pa.nulls(n, f.type)
                    if constant[name] is None
                    else pa.repeat(pa.scalar(constant[name], f.type), n)
                )
            else:  # error columns: null on data rows
                arrays.append(pa.nulls(n, f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)
