"""What every batch and record looks like, whatever its magic.

``v2.DefaultBatch`` and ``legacy.LegacyBatch`` both implement :class:`Batch`; callers dispatch
on nothing but the attributes defined here. Field names are Kafka's, in snake_case.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from klogtool.formats import engine

NO_TIMESTAMP_TYPE = -1
NO_TIMESTAMP = -1  # a record or batch without a time (RecordBatch.NO_TIMESTAMP)
CREATE_TIME = 0
LOG_APPEND_TIME = 1
TIMESTAMP_TYPE_NAMES = {
    NO_TIMESTAMP_TYPE: "NoTimestampType",
    CREATE_TIME: "CreateTime",
    LOG_APPEND_TIME: "LogAppendTime",
}

LOG_OVERHEAD = 12  # offset int64 + size int32 before every entry
HEADER_SIZE_UP_TO_MAGIC = 17
DEFAULT_MAX_BATCH_BYTES = 64 * 1024 * 1024

Header = tuple[str, "memoryview | bytes | None"]


class PyRecord:
    """One logical record. ``key``/``value`` are zero-copy views (``None`` = null).

    ``Record`` is the native module's class when it is built (``native/src/python/record.rs``:
    the native engine makes records directly, at C speed) and this pure-Python one when it is
    not; whichever it is, both engines make that one type. Both behave like a named tuple of
    the nine fields (unpacking, indexing, equality with records and tuples, hashing,
    ``_replace``, ``_asdict``, pickling) while reading a field costs what reading a slot
    does. Fields are read-only (the native class cannot assign them; type checkers reject an
    assignment to this one too): ``_replace`` makes a changed copy. No two decoded records
    share one object."""

    __match_args__ = (
        "offset",
        "timestamp",
        "key",
        "value",
        "headers",
        "sequence",
        "attributes",
        "crc",
        "crc_valid",
    )
    __slots__ = __match_args__
    _fields = __match_args__

    offset: int
    timestamp: int
    key: memoryview | bytes | None
    value: memoryview | bytes | None
    headers: tuple[Header, ...]
    sequence: int
    attributes: int
    crc: int | None  # legacy messages only
    crc_valid: bool | None  # legacy messages only

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: memoryview | bytes | None,
        value: memoryview | bytes | None,
        headers: tuple[Header, ...] = (),
        sequence: int = -1,
        attributes: int = 0,
        crc: int | None = None,
        crc_valid: bool | None = None,
    ):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.sequence = sequence
        self.attributes = attributes
        self.crc = crc
        self.crc_valid = crc_valid

    def _astuple(self) -> tuple[Any, ...]:
        fields: tuple[Any, ...] = _py_fields(self)
        return fields

    def __iter__(self) -> Iterator[Any]:
        return iter(_py_fields(self))

    def __len__(self) -> int:
        return 9

    def __getitem__(self, index: int | slice) -> Any:
        return _py_fields(self)[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PyRecord):
            return self._astuple() == other._astuple()
        if isinstance(other, tuple):
            return self._astuple() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._astuple())

    def __repr__(self) -> str:
        fields = ", ".join(map("{}={!r}".format, self._fields, self._astuple()))
        return f"Record({fields})"

    def _replace(self, **changes: Any) -> PyRecord:
        return PyRecord(**{**self._asdict(), **changes})

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self._astuple(), strict=True))

    def __reduce__(self) -> tuple[type[PyRecord], tuple[Any, ...]]:
        return PyRecord, self._astuple()


_py_fields = attrgetter(*PyRecord._fields)


def _py_make_record(
    offset: int,
    timestamp: int,
    key: memoryview | bytes | None,
    value: memoryview | bytes | None,
    headers: tuple[Header, ...],
    sequence: int,
    attributes: int,
    crc: int | None,
    crc_valid: bool | None,
    new: Any = object.__new__,
) -> PyRecord:
    """``PyRecord(...)`` with every field given, without an ``__init__`` call."""
    r: PyRecord = new(PyRecord)
    r.offset = offset
    r.timestamp = timestamp
    r.key = key
    r.value = value
    r.headers = headers
    r.sequence = sequence
    r.attributes = attributes
    r.crc = crc
    r.crc_valid = crc_valid
    return r


if TYPE_CHECKING:
    # the native class's stub (klogtool/_native.pyi) types every record; PyRecord matches it
    Record = engine.NativeRecord

    make_record: engine.MakeRecord

elif (_native_record := engine.native_record()) is not None:
    Record, make_record = _native_record
else:  # no native module: the pure-Python class
    Record, make_record = PyRecord, _py_make_record
# ``make_record(offset, timestamp, key, value, headers, sequence, attributes, crc, crc_valid)``
# makes a record with every field given, as the python engine's decode loops do: a function
# call, cheaper than calling the class.

# The nine fields of a record as a tuple, in C (what ``zip(*records)`` would give per record).
record_fields = attrgetter(*Record._fields)

NativeWrapper = engine.NativeWrapper


class Batch:
    """The interface shared by v2 record batches and v0/v1 shallow entries.

    ``position`` is the byte position of the entry in the buffer that was scanned (plus the
    caller's ``base_position``); ``size`` includes the 12-byte offset/length prefix; ``data`` is
    a view of exactly those ``size`` bytes.
    """

    __slots__ = ()

    position: int
    size: int

    # The header's fields, read-only. Each subclass gives them as it reads them fastest: v2 in
    # slots that one struct unpack fills, or as properties of its attributes; v0/v1 from its
    # message, or as class constants (a v0/v1 entry has no producer). A subclass's own slot,
    # property or constant is found before these properties, so declaring them here slows no
    # attribute read: they say what every batch has, and let mypy check the subclasses.
    @property
    def data(self) -> memoryview:
        raise NotImplementedError

    @property
    def magic(self) -> int:
        raise NotImplementedError

    @property
    def crc(self) -> int:
        raise NotImplementedError

    @property
    def attributes(self) -> int:
        raise NotImplementedError

    @property
    def compression(self) -> int:
        raise NotImplementedError

    @property
    def timestamp_type(self) -> int:
        raise NotImplementedError

    @property
    def max_timestamp(self) -> int:
        raise NotImplementedError

    @property
    def base_timestamp(self) -> int:
        raise NotImplementedError

    @property
    def partition_leader_epoch(self) -> int:
        raise NotImplementedError

    @property
    def producer_id(self) -> int:
        raise NotImplementedError

    @property
    def producer_epoch(self) -> int:
        raise NotImplementedError

    @property
    def base_sequence(self) -> int:
        raise NotImplementedError

    @property
    def is_transactional(self) -> bool:
        raise NotImplementedError

    @property
    def is_control(self) -> bool:
        raise NotImplementedError

    @property
    def delete_horizon_ms(self) -> int | None:
        raise NotImplementedError

    @property
    def last_offset(self) -> int:
        raise NotImplementedError

    @property
    def base_offset(self) -> int:
        raise NotImplementedError

    @property
    def header_offset(self) -> int:
        """The first offset the header tells without decompressing: a v2 batch's base offset,
        a plain v0/v1 message's offset, and for a compressed v0/v1 wrapper its own offset,
        which is its LAST inner offset (the first needs decompression: ``base_offset``)."""
        raise NotImplementedError

    @property
    def count(self) -> int:
        raise NotImplementedError

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        return -1

    def compute_crc(self) -> int:
        raise NotImplementedError

    @property
    def crc_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def records(self, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> Iterator[Record]:
        raise NotImplementedError

    def control_type(self, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> int | None:
        """A control batch's type, as Kafka's ``ControlRecordType.parse`` reads it from the key
        of the batch's first record (``version:int16`` + ``type:int16``): the type id (0 ABORT,
        1 COMMIT, ... in ``payloads.control``; an id Kafka does not know comes back as it is,
        Kafka's UNKNOWN). None when this is not a control batch (v0/v1 entries never are), when
        it has no record (an empty control batch, as the cleaner leaves them), or when the key
        is not valid (null, shorter than 4 bytes, a negative version). Errors reading the
        records (decompression, record structure, ``max_batch_bytes``) are raised."""
        return None

    def native_input(
        self, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    ) -> tuple[memoryview | bytes, NativeWrapper | None] | None:
        """What the native engine's renderers and column builder read of this batch (see
        ``log.read.native_render``): a v2 batch's bytes, or a v0/v1 wrapper's decompressed
        inner message set and how its records are made; None where there is nothing for it."""
        return self.data, None
