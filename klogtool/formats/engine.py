"""The engine seam: the one module that imports the native engine (``klogtool._native``).

Two engines implement the format layer's hot paths. The **python** engine is the reference:
every decoder in this package. The **native** engine (Rust, ``native/`` in the source tree)
decodes well-formed message format v2 batches, and v0/v1 message sets (a wrapper's inner set,
which the python engine has decompressed, or a plain message), into records, columns or
rendered lines, and re-encodes v2 records for the rewriting commands. Wherever a batch is not
well-formed, or is one of the rare kinds it leaves alone (control batches, odd framings), it
answers ``None`` and the caller reads that batch with the python engine, so every error,
message and byte position comes from one place and the engines cannot disagree.

This module holds the format kernels' adapters (CRC, checks, records, re-encoding). The
kernels that carry other layers' rules have their adapters beside their python twins: the
cleaner's offset map and retain decision (``klogtool.log.rewrite.native_clean``),
dump-segments' renderings (``klogtool.log.read.native_render``) and export's Arrow columns
(``klogtool.log.export.native_columns``). They reach the native module only through
:func:`native_module` and :func:`call`.

``KLOGTOOL_ENGINE=python|native`` chooses at start-up (default: native when it is built);
:func:`use` switches at run time (the test suite runs every test under both).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from typing import TYPE_CHECKING, ParamSpec, Protocol, TypeVar

if TYPE_CHECKING:  # (batch.py imports this module: it takes its Record from native_record)
    from typing_extensions import Buffer as _Readable

    import klogtool._native as _stub  # its stub, klogtool/_native.pyi: types only

    NativeRecord = _stub.Record  # batch.Record, for type checkers

NATIVE = "native"
PYTHON = "python"

# How the records of a v0/v1 wrapper's inner set are made: its magic, the shift added to inner
# offsets, the timestamp of every record (LogAppendTime) or None (batch.NativeWrapper)
NativeWrapper = tuple[int, int, int | None]
ENGINES = (NATIVE, PYTHON)


class NativeModule(Protocol):
    """What klogtool uses of the native module, as its stub ``klogtool/_native.pyi`` types it
    (mypy checks the built module against this protocol where it is imported below): what
    :func:`native_module` hands to the adapters."""

    # the format kernels (this module)
    def crc32c(self, data: _Readable) -> int: ...
    def crc_ahead(self, buf: _Readable, start: int, limit: int) -> _stub.CrcAhead: ...
    def check_v2(self, batch: _Readable, max_batch_bytes: int) -> _stub.Checked | None: ...
    def records_v2(self, batch: _Readable, max_batch_bytes: int) -> _stub.RecordsV2 | None: ...
    def legacy_decompress(
        self, value: _Readable, codec: int, magic: int, limit: int
    ) -> _stub.Buffer | None: ...
    def legacy_scan(self, raw: _Readable, magic: int) -> _stub.LegacyScan | None: ...
    def records_legacy(
        self, raw: _Readable, magic: int, shift: int, fixed_timestamp: int | None
    ) -> list[_stub.Record] | None: ...
    def reencode_v2(
        self,
        batch: _Readable,
        max_batch_bytes: int,
        keep: _Readable | None,
        base_offset: int,
        base_timestamp: int | None,
    ) -> _stub.Reencoded | None: ...
    def watch_mapping(self, view: _Readable, path: str) -> int | None: ...
    def unwatch_mapping(self, slot: int) -> None: ...
    def handbacks(self) -> list[tuple[str, int]]: ...
    @property
    def FindFilter(self) -> type[_stub.FindFilter]: ...
    @property
    def Record(self) -> type[_stub.Record]: ...
    def make_record(
        self,
        offset: int,
        timestamp: int,
        key: _stub._Payload,
        value: _stub._Payload,
        headers: tuple[tuple[str, _stub._Payload], ...],
        sequence: int,
        attributes: int,
        crc: int | None,
        crc_valid: bool | None,
        /,
    ) -> _stub.Record: ...

    # the adapters': log/rewrite/native_clean, log/read/native_render, log/export/native_columns,
    # log/read/native_stats, log/read/chunks
    @property
    def OffsetMap(self) -> type[_stub.OffsetMap]: ...
    def render_records(
        self,
        batch: _Readable,
        max_batch_bytes: int,
        position: int,
        print_data: bool,
        key_decoder: str,
        value_decoder: str,
        format: str,
        inner: _stub.Inner | None = None,
        controls: str = "python",
    ) -> _stub.Rendered | None: ...
    def render_batch_lines(
        self, batches: Sequence[tuple[_Readable, int, bool]], format: str
    ) -> bytes | None: ...
    def render_run(
        self,
        batches: Sequence[tuple[_Readable, int, bool]],
        max_batch_bytes: int,
        print_data: bool,
        key_decoder: str,
        value_decoder: str,
        format: str,
        controls: str = "python",
    ) -> list[_stub.Piece]: ...
    def chunk_cut(
        self, buf: _Readable, start: int, chunk_bytes: int, last: int | None
    ) -> _stub.Cut: ...
    def chunk_cut_file(
        self, path: str, size: int, start: int, chunk_bytes: int, last: int | None
    ) -> _stub.Cut: ...
    @property
    def Columns(self) -> type[_stub.Columns]: ...
    @property
    def StatsRecords(self) -> type[_stub.StatsRecords]: ...


_native: NativeModule | None
try:
    import klogtool._native as _built
except ImportError:  # not built: a source checkout without Rust, or a pure-Python install
    _native = None
else:
    _native = _built

_active: NativeModule | None = None


class MakeRecord(Protocol):
    """``make_record(offset, timestamp, key, value, headers, sequence, attributes, crc,
    crc_valid)``: a record with every field given (``batch.make_record``)."""

    def __call__(
        self,
        offset: int,
        timestamp: int,
        key: memoryview | bytes | None,
        value: memoryview | bytes | None,
        headers: tuple[tuple[str, memoryview | bytes | None], ...],
        sequence: int,
        attributes: int,
        crc: int | None,
        crc_valid: bool | None,
        /,
    ) -> NativeRecord: ...


def native_record() -> tuple[type[NativeRecord], MakeRecord] | None:
    """The native module's ``Record`` class and its ``make_record`` when it is built (what
    ``batch.Record`` then is, whichever engine is in use: both engines make that type), else
    None."""
    return None if _native is None else (_native.Record, _native.make_record)


class EngineChoiceError(ValueError):
    """An unknown engine name, or ``native`` where the native engine is not built."""


class NativeEngineError(RuntimeError):
    """The native engine panicked (a bug): reported as an internal error (exit 70) naming
    where, never a crash."""

    def __init__(self, where: str, panic: BaseException):
        super().__init__(f"the native engine failed at {where}: {panic}")


P = ParamSpec("P")
R = TypeVar("R")


def call(where: str, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R | None:
    """``fn(*args)``, a native function or method; a Rust panic (PyO3's ``PanicException``,
    a BaseException) becomes :class:`NativeEngineError` naming ``where``. An argument that does
    not fit the native engine's integer types (hostile data: a negative magic byte, a v1
    offset shift or a base timestamp past 64 bits) is None, as for anything else the native
    engine leaves to the python engine: every caller's None means that."""
    try:
        return fn(*args, **kwargs)
    except OverflowError:  # PyO3's conversion of the arguments, before the function runs
        handed_back("argument-range")
        return None
    except BaseException as e:
        if type(e).__name__ == "PanicException":
            raise NativeEngineError(where, e) from None
        raise


def use(name: str) -> None:
    """Make ``name`` (``native`` or ``python``) the engine for what follows."""
    global _active
    if name not in ENGINES:
        raise EngineChoiceError(
            f"KLOGTOOL_ENGINE must be one of {', '.join(ENGINES)}, not {name!r}"
        )
    if name == NATIVE and _native is None:
        raise EngineChoiceError(
            "the native engine is not built in this installation (pip install -e . compiles "
            "it; it needs a Rust toolchain): use KLOGTOOL_ENGINE=python"
        )
    _active = _native if name == NATIVE else None


def name() -> str:
    """The engine in use."""
    return NATIVE if _active is not None else PYTHON


@contextmanager
def using(engine_name: str) -> Iterator[None]:
    """``use(engine_name)`` for the duration (the differential tests' reference runs)."""
    before = name()
    use(engine_name)
    try:
        yield
    finally:
        use(before)


def native_available() -> bool:
    return _native is not None


def native_module() -> NativeModule | None:
    """The native module when the native engine is in use, else None: how the adapters that
    sit beside their python twins outside the format layer (``log/rewrite/native_clean``,
    ``log/read/native_render``, ``log/export/native_columns``) reach it, so that this stays
    the one module that imports it. They call it through :func:`call`."""
    return _active


@contextmanager
def watched(view: memoryview, path: str) -> Iterator[None]:
    """While ``view``, a read-only mapping of the file ``path``, is read: if the file shrinks
    under the read (another process truncates it), the SIGBUS of the next page past its end
    ends the process with one line naming ``path`` and the byte position, exit status 3
    (the native module's guard, whichever engine decodes; without the native module the
    signal kills the process, as it does any program reading a mapped file)."""
    slot = None if _native is None or not len(view) else _native.watch_mapping(view, path)
    try:
        yield
    finally:
        if slot is not None:
            _native.unwatch_mapping(slot)  # type: ignore[union-attr]


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli) of ``data``: the native engine's (the CPU's CRC instructions), or
    the crc32c package's, imported when first used (the package reads its own metadata on
    import, a fifth of a small command's start-up)."""
    if _active is not None:
        value: int = _active.crc32c(data)
        return value
    import crc32c as package

    result: int = package.crc32c(data)
    return result


def crc_ahead(buf: memoryview, start: int, limit: int) -> tuple[list[tuple[int, int]], int] | None:
    """``(positions and CRC-32Cs of the v2 batches from start on, where the walk stopped)``,
    walking batch headers alone until ``limit`` or anything that is not a whole v2 entry; or
    None under the python engine. The native engine releases the GIL meanwhile."""
    if _active is None:
        return None
    where = f"byte {start}"
    return call(where, _active.crc_ahead, buf, start, limit)


def check_v2(data: memoryview, max_batch_bytes: int, where: str) -> tuple[int, bool, int] | None:
    """``(records, offsets increase inside the batch's range, largest timestamp)`` of a whole
    well-formed v2 batch, or None: read it with the python engine. ``where`` (file and byte
    position) names the batch if the engine fails."""
    if _active is None:
        return None
    result: tuple[int, bool, int] | None = call(where, _active.check_v2, data, max_batch_bytes)
    return result


def records_v2(
    data: memoryview,
    max_batch_bytes: int,
    position: int,
    rest: Callable[[int, int], Iterator[NativeRecord]],
) -> Iterator[NativeRecord] | None:
    """The records of a v2 batch (payloads as ``bytes``), made by the native engine as they
    are iterated, or None: decode it in Python. At a malformed record (the native engine
    checks each as it makes it) ``rest(pos, done)`` yields the records from ``pos`` of the
    records area on, after the ``done`` made (the python engine's decoder, which says what is
    wrong). ``position`` (the batch's) names it if the engine fails. The iterator holds
    ``data``'s buffer until it is freed."""
    if _active is None:
        return None
    where = f"byte {position}"
    chunks: _stub.RecordsV2 | None = call(where, _active.records_v2, data, max_batch_bytes)
    return None if chunks is None else chain.from_iterable(_guarded(chunks, where, rest))


def _guarded(
    chunks: _stub.RecordsV2, where: str, rest: Callable[[int, int], Iterator[NativeRecord]]
) -> Iterator[Iterable[NativeRecord]]:
    """``chunks`` as :func:`call` guards a call (a panic while a chunk is made names
    ``where``), then ``rest`` from where they stopped, if a record was malformed (a generator
    per batch; records are not yielded one by one through it)."""
    try:
        yield from chunks
    except BaseException as e:
        if type(e).__name__ == "PanicException":
            raise NativeEngineError(where, e) from None
        raise
    if chunks.stopped is not None:
        yield rest(*chunks.stopped)


# find's native conditions: key, headers, offsets, from_time, to_time, min_size, max_size, and
# the key and value regexes in the regex crate's syntax (record_filter.RecordFilter.native_spec)
FindSpec = tuple[
    bytes | None,
    list[tuple[str, bytes | None]],
    tuple[int, int] | None,
    int | None,
    int | None,
    int | None,
    int | None,
    str | None,
    str | None,
]


class FindMatcher:
    """find's record-level conditions held by the native engine (made once per search by
    :func:`find_matcher`): :meth:`matches` decides them per record on a whole v2 batch."""

    __slots__ = ("_filter",)

    def __init__(self, native_filter: _stub.FindFilter):
        self._filter = native_filter

    def matches(
        self, data: memoryview | bytes, max_batch_bytes: int, position: int
    ) -> tuple[int, list[int], list[NativeRecord]] | None:
        """``(records in the batch, indexes of the matching records, those records)`` of a
        whole well-formed v2 batch, or None: read it with the python engine (``position``,
        the batch's, names it if the engine fails)."""
        result: tuple[int, list[int], list[NativeRecord]] | None = call(
            f"byte {position}", self._filter.matches, data, max_batch_bytes
        )
        return result


def find_matcher(spec: FindSpec) -> FindMatcher | None:
    """A :class:`FindMatcher` of ``spec`` under the native engine, else None (also for a
    regex the regex crate does not compile: past its size or nesting limits)."""
    if _active is None:
        return None
    key, headers, offsets, from_time, to_time, min_size, max_size, key_rx, value_rx = spec
    try:
        native_filter = call(
            "find's filter",
            _active.FindFilter,
            key,
            headers,
            offsets,
            from_time,
            to_time,
            min_size,
            max_size,
            key_rx,
            value_rx,
        )
    except ValueError:  # the regex crate's refusal: RecordFilter.matches decides in Python
        return None
    return None if native_filter is None else FindMatcher(native_filter)


def legacy_decompress(
    codec: int, value: bytes | memoryview, magic: int, limit: int, where: str
) -> memoryview | None:
    """A v0/v1 wrapper's value (``codec`` gzip, snappy or lz4, ``magic`` 0 or 1) decompressed
    within ``limit`` bytes, exactly as ``codecs.decompress(codec, value, magic=magic,
    limit=limit)`` decompresses it (a read-only view of the native engine's memory, not a
    copy); None: decompress it in Python (the reference says what is wrong), or under the
    python engine."""
    if _active is None:
        return None
    raw = call(where, _active.legacy_decompress, value, codec, magic, limit)
    return None if raw is None else memoryview(raw)


def legacy_scan(raw: bytes | memoryview, magic: int, where: str) -> tuple[int, int, int] | None:
    """``(count, first offset, last offset)`` of a v0/v1 wrapper's decompressed inner message
    set whose messages all have ``magic``, no compression and consistent lengths; None for
    anything else (the python engine's careful walk then reads it), or under the python
    engine."""
    if _active is None:
        return None
    result: tuple[int, int, int] | None = call(where, _active.legacy_scan, raw, magic)
    return result


def records_legacy(
    raw: bytes | memoryview, wrapper: NativeWrapper, where: str
) -> list[NativeRecord] | None:
    """The records of an inner set :func:`legacy_scan` accepted (payloads as ``bytes``, the
    CRC judged), made by the native engine, or None: make them in Python."""
    if _active is None:
        return None
    records: list[NativeRecord] | None = call(where, _active.records_legacy, raw, *wrapper)
    return records


# records area, records, largest record timestamp, base timestamp of the deltas
Reencoded = tuple[bytes, int, int | None, int | None]


def reencode_v2(
    data: memoryview,
    max_batch_bytes: int,
    keep: bytes | bytearray | None,
    base_offset: int,
    base_timestamp: int | None,
    position: int,
) -> Reencoded | None:
    """The records area of a whole v2 batch re-encoded byte for byte as ``v2.encode_record``
    writes it: the records whose ``keep`` byte is not 0 (all without ``keep``), offset deltas
    from ``base_offset``, timestamp deltas from ``base_timestamp`` (the first kept record's
    timestamp when None). None: re-encode it in Python."""
    if _active is None:
        return None
    result: Reencoded | None = call(
        f"byte {position}",
        _active.reencode_v2,
        *(data, max_batch_bytes, keep, base_offset, base_timestamp),
    )
    return result


# -- hand-backs ------------------------------------------------------------------------------
# The native engine counts the batches its kernels answer None for, per reason (its `handback`
# module); the seam counts what never reaches a kernel: an argument past the native integer
# types, and an adapter's size rule (`handed_back`).
_py_handbacks: dict[str, int] = {}


def handed_back(reason: str) -> None:
    """Count a batch left to the python engine for ``reason`` where no kernel was asked (a
    rule of the seam or of an adapter): ``engine_stats`` shows it with the kernels' counts."""
    _py_handbacks[reason] = _py_handbacks.get(reason, 0) + 1


def engine_stats() -> dict[str, int]:
    """Batches the native engine has handed back to the python engine in this process, per
    reason (``control-batch``, ``lz4-block-checksum``, ``size-limit``, ``malformed``, ...;
    docs/engines.md lists them), reasons with a count only. Empty under the python engine
    or without the native module: nothing is handed back (every batch is read in Python)."""
    counts: dict[str, int] = {}
    if _native is not None:
        counts = {reason: n for reason, n in _native.handbacks() if n}
    for reason, n in _py_handbacks.items():
        counts[reason] = counts.get(reason, 0) + n
    return counts


def stats_line() -> str:
    """``klogtool engine: N batches handed back: reason n, ...`` (most first), what
    ``KLOGTOOL_ENGINE_STATS=1`` prints on stderr at exit."""
    if _active is None:
        return "klogtool engine: python (no native engine in use: nothing handed back)"
    counts = sorted(engine_stats().items(), key=lambda rn: (-rn[1], rn[0]))
    total = sum(n for _, n in counts)
    line = f"klogtool engine: {total} batch{'' if total == 1 else 'es'} handed back"
    if counts:
        line += ": " + ", ".join(f"{reason} {n}" for reason, n in counts)
    return line


def _print_stats() -> None:
    import sys

    try:
        print(stats_line(), file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed
        pass


if os.environ.get("KLOGTOOL_ENGINE_STATS", "").strip() not in ("", "0"):
    import atexit

    atexit.register(_print_stats)

_chosen = os.environ.get("KLOGTOOL_ENGINE", "").strip().lower()
if _chosen:
    use(_chosen)
elif _native is not None:
    _active = _native
