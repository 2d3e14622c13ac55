"""The native engine's adapter for export's record columns
(:mod:`klogtool.log.export.arrow_reader`): the records of many batches appended in Rust
(``native/src/columns.rs``) in Arrow's layout, handed over without a copy. None wherever the
reader must read a batch in Python; the module reaches the native engine only through
:func:`klogtool.formats.engine.native_module`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from klogtool.formats import engine
from klogtool.formats.batch import NativeWrapper

if TYPE_CHECKING:
    from klogtool.formats.engine import NativeModule

WHOLE = (0, 1 << 62)  # a window of RecordColumns.add: every record of the batch


class RecordColumns:
    """Record columns of many v2 batches and v0/v1 wrappers, built by the native engine in
    Arrow's layout."""

    def __init__(self, native: NativeModule, max_batch_bytes: int):
        self._columns = native.Columns(max_batch_bytes)
        self._max_batch_bytes = max_batch_bytes

    def add(
        self, data: memoryview, index: int, where: str, window: tuple[int, int] = WHOLE
    ) -> tuple[int, int] | None:
        """Append records ``skip .. skip + limit`` (``window``) of a v2 batch as batch number
        ``index`` (of the caller's own list), the whole batch checked: (rows appended, records
        in the batch), or None (nothing added) to read this batch with the python engine."""
        return engine.call(where, self._columns.add, data, index, *window)

    def add_legacy(
        self,
        raw: bytes | memoryview,
        wrapper: NativeWrapper,
        index: int,
        where: str,
        window: tuple[int, int] = WHOLE,
    ) -> tuple[int, int] | None:
        """As :meth:`add`, for the decompressed inner set of a v0/v1 wrapper (None also when a
        record's CRC fails)."""
        magic, shift, fixed_timestamp = wrapper
        add = self._columns.add_legacy
        return engine.call(where, add, raw, magic, shift, fixed_timestamp, index, *window)

    @property
    def payload_bytes(self) -> int:
        """Bytes of keys, values and headers held."""
        return self._columns.payload_bytes

    def take(self) -> Mapping[str, Any]:
        """The buffers and counts of every column (see ``arrow_reader._native_arrays``; the
        stub's ``ColumnBuffers``), leaving the builder empty."""
        return self._columns.take()


def record_columns(max_batch_bytes: int) -> RecordColumns | None:
    """A native builder of record columns, or None under the python engine."""
    native = engine.native_module()
    if native is None:
        return None
    return RecordColumns(native, max_batch_bytes)
