"""Types of ``klogtool._native``, the native engine's PyO3 module (``native/src/python/``).

Only ``klogtool/formats/engine.py`` imports it; the adapters beside their python twins
(``log/rewrite/native_clean``, ``log/read/native_render``, ``log/export/native_columns``) reach
it through ``engine.native_module()``. Every entry point answers None where the python engine
must read the batch itself. The aliases and the TypedDict below exist for type checkers only.
"""

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, TypeAlias, TypedDict, final, overload

from typing_extensions import Buffer as _Readable

__version__: str

# -- aliases of what the functions return (type checkers only) -------------------------------
# (byte position, CRC-32C) of each v2 batch walked, then where the walk stopped
CrcAhead: TypeAlias = tuple[list[tuple[int, int]], int]
# where a walk of v2 batch headers stopped, the last offset of the batch before, a cut there
Cut: TypeAlias = tuple[int, int | None, bool]
# records, offsets increase inside the batch's range, largest record timestamp
Checked: TypeAlias = tuple[int, bool, int]
# a record header: (key, value)
Header: TypeAlias = tuple[str, bytes | None]
# count, first offset, last offset of a v0/v1 inner message set
LegacyScan: TypeAlias = tuple[int, int, int]
# records area, records, largest record timestamp, base timestamp of the deltas
Reencoded: TypeAlias = tuple[bytes, int, int | None, int | None]
# how a v0/v1 wrapper's inner records are made: magic, offset shift, fixed timestamp
Inner: TypeAlias = tuple[int, int, int | None]
# lines (UTF-8), records, first and last record offsets, non-consecutive (previous, next)
# record offsets (kafka only)
Rendered: TypeAlias = tuple[Buffer, int, int | None, int | None, list[tuple[int, int]]]
# render_run's: the lines of a stretch of batches (None: one batch handed back), the number of
# batches and of records, first and last record offsets, breaks
Piece: TypeAlias = tuple[Buffer | None, int, int, int | None, int | None, list[tuple[int, int]]]
# rows appended, records in the batch
Added: TypeAlias = tuple[int, int]
# the map filled up, offset of the last record put
Mapped: TypeAlias = tuple[bool, int | None]
# keep (one byte per record), keyless, superseded, tombstones expired, tombstones kept
Retained: TypeAlias = tuple[bytes, int, int, int, int]

# -- format kernels (formats/engine.py) ------------------------------------------------------
def crc32c(data: _Readable) -> int: ...
def crc_ahead(buf: _Readable, start: int, limit: int) -> CrcAhead: ...
def check_v2(batch: _Readable, max_batch_bytes: int) -> Checked | None: ...
def records_v2(batch: _Readable, max_batch_bytes: int) -> RecordsV2 | None: ...
def legacy_decompress(value: _Readable, codec: int, magic: int, limit: int) -> Buffer | None: ...
def legacy_scan(raw: _Readable, magic: int) -> LegacyScan | None: ...
def records_legacy(
    raw: _Readable, magic: int, shift: int, fixed_timestamp: int | None
) -> list[Record] | None: ...
def reencode_v2(
    batch: _Readable,
    max_batch_bytes: int,
    keep: _Readable | None,
    base_offset: int,
    base_timestamp: int | None,
) -> Reencoded | None: ...
def watch_mapping(view: _Readable, path: str) -> int | None: ...
def unwatch_mapping(slot: int) -> None: ...

# (reason, batches handed back) of every reason, in a fixed order
def handbacks() -> list[tuple[str, int]]: ...

# -- dump-segments' lines (log/read/native_render.py) ----------------------------------------
def render_records(
    batch: _Readable,
    max_batch_bytes: int,
    position: int,
    print_data: bool,
    key_decoder: str,
    value_decoder: str,
    format: str,
    inner: Inner | None = None,
    controls: str = "python",
) -> Rendered | None: ...
def render_run(
    batches: Sequence[tuple[_Readable, int, bool]],
    max_batch_bytes: int,
    print_data: bool,
    key_decoder: str,
    value_decoder: str,
    format: str,
    controls: str = "python",
) -> list[Piece]: ...
def render_batch_lines(
    batches: Sequence[tuple[_Readable, int, bool]], format: str
) -> bytes | None: ...

# -- dump-segments' parts for worker processes (log/read/chunks.py) -------------------------
def chunk_cut(buf: _Readable, start: int, chunk_bytes: int, last: int | None) -> Cut: ...
def chunk_cut_file(path: str, size: int, start: int, chunk_bytes: int, last: int | None) -> Cut: ...

# -- export's record columns (log/export/native_columns.py) ----------------------------------
@final
class Buffer:
    """Memory handed to Python without a copy, read-only through the buffer protocol."""

    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

class ColumnBuffers(TypedDict):
    """What ``Columns.take()`` returns: every column's buffers and counts (type checkers
    only; a plain dict at run time)."""

    length: int
    offset: Buffer
    timestamp: Buffer
    sequence: Buffer
    batch_index: Buffer
    key_nulls: int
    key_length: int
    key_validity: Buffer
    key_offsets: Buffer
    key_data: Buffer
    value_nulls: int
    value_length: int
    value_validity: Buffer
    value_offsets: Buffer
    value_data: Buffer
    header_key_nulls: int
    header_key_length: int
    header_key_validity: Buffer
    header_key_offsets: Buffer
    header_key_data: Buffer
    header_value_nulls: int
    header_value_length: int
    header_value_validity: Buffer
    header_value_offsets: Buffer
    header_value_data: Buffer
    headers_nulls: int
    headers_validity: Buffer
    headers_offsets: Buffer

@final
class Columns:
    """Record columns of many v2 batches and v0/v1 wrappers, in Arrow's layout."""

    def __init__(self, max_batch_bytes: int) -> None: ...
    def add(self, batch: _Readable, index: int, skip: int, limit: int) -> Added | None: ...
    def add_legacy(
        self,
        raw: _Readable,
        magic: int,
        shift: int,
        fixed_timestamp: int | None,
        index: int,
        skip: int,
        limit: int,
    ) -> Added | None: ...
    def __len__(self) -> int: ...
    @property
    def payload_bytes(self) -> int: ...
    def take(self) -> ColumnBuffers: ...

# -- records (formats/batch.py's Record when the module is built) ---------------------------
# a record's payload: bytes from the native engine, a zero-copy view from the python engine
_Payload: TypeAlias = memoryview | bytes | None

class Record:
    """One logical record, frozen, that behaves like a named tuple of its nine fields (see
    ``klogtool.formats.batch.PyRecord``, the same without the native module)."""

    __match_args__: ClassVar[tuple[str, ...]]
    _fields: ClassVar[tuple[str, ...]]

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: _Payload,
        value: _Payload,
        headers: tuple[tuple[str, _Payload], ...] = (),
        sequence: int = -1,
        attributes: int = 0,
        crc: int | None = None,
        crc_valid: bool | None = None,
    ) -> None: ...
    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def key(self) -> _Payload: ...
    @property
    def value(self) -> _Payload: ...
    @property
    def headers(self) -> tuple[tuple[str, _Payload], ...]: ...
    @property
    def sequence(self) -> int: ...
    @property
    def attributes(self) -> int: ...
    @property
    def crc(self) -> int | None: ...  # v0/v1 messages only
    @property
    def crc_valid(self) -> bool | None: ...  # v0/v1 messages only
    def _astuple(self) -> tuple[Any, ...]: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Any, ...]: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    def _replace(self, **changes: Any) -> Record: ...
    def _asdict(self) -> dict[str, Any]: ...

def make_record(
    offset: int,
    timestamp: int,
    key: _Payload,
    value: _Payload,
    headers: tuple[tuple[str, _Payload], ...],
    sequence: int,
    attributes: int,
    crc: int | None,
    crc_valid: bool | None,
    /,
) -> Record: ...

# -- find's record filters (formats/engine.py, for log/read/finder.py) -----------------------
# records in the batch, indexes of the matching records, those records
Matched: TypeAlias = tuple[int, list[int], list[Record]]

# a whole v2 batch's records, checked well formed, made a list of up to 64 at a time
@final
class RecordsV2(Iterator[list[Record]]):
    def __iter__(self) -> RecordsV2: ...
    def __next__(self) -> list[Record]: ...
    @property
    def stopped(self) -> tuple[int, int] | None: ...

@final
class FindFilter:
    """find's exact key, header, offset, time and size conditions and key and value regexes
    (``record_filter.native_regex``'s translations; all must hold), decided per record on
    whole v2 batches. A regex the crate does not compile raises ValueError."""

    def __init__(
        self,
        key: bytes | None,
        headers: list[tuple[str, bytes | None]],
        offsets: tuple[int, int] | None,
        from_time: int | None,
        to_time: int | None,
        min_size: int | None,
        max_size: int | None,
        key_regex: str | None,
        value_regex: str | None,
    ) -> None: ...
    def matches(self, batch: _Readable, max_batch_bytes: int) -> Matched | None: ...

# -- the cleaner's offset map (log/rewrite/native_clean.py) ----------------------------------
@final
class OffsetMap:
    """Key digest (MD5, 16 bytes) -> the key's last offset, with the decisions that read it."""

    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    def __setitem__(self, key: bytes, offset: int, /) -> None: ...
    def get(self, key: bytes, default: int, /) -> int: ...
    def add(
        self, batch: _Readable, max_batch_bytes: int, first_dirty: int, capacity: int
    ) -> Mapped | None: ...
    def retain(
        self, batch: _Readable, max_batch_bytes: int, latest_offset: int, keep_tombstones: bool
    ) -> Retained | None: ...

# -- stats' per-record aggregates (log/read/native_stats.py) ----------------------------------
# a record the python engine read: key, value length or None, timestamp, header count, header
# bytes (names in characters, values in bytes)
StatsRow: TypeAlias = tuple[bytes | None, int | None, int, int, int]

@final
class StatsRecords:
    """One partition's per-record stats aggregates (sizes, time, keys, heaviest keys)."""

    def __init__(self, now: int, exact_keys: int, heavy_counters: int) -> None: ...
    def batch(
        self, batch: _Readable, max_batch_bytes: int, aborted: bool, expired: bool
    ) -> tuple[int, int] | None: ...
    def area(self, limit: int) -> bytes: ...
    def add_rows(self, rows: list[StatsRow], aborted: bool, expired: bool) -> None: ...
    def finish(self) -> dict[str, object]: ...
