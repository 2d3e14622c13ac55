"""The native engine's adapter for the log cleaner (:mod:`klogtool.log.rewrite.cleaner`): its
offset map and its retain decision, made in Rust (``native/src/compact.rs``) by the rules of
``Cleaner._retain``. Each answers None where the cleaner must decide in Python (the python
engine, a batch the native engine leaves alone); the module reaches the native engine only
through :func:`klogtool.formats.engine.native_module`.
"""

from __future__ import annotations

from typing import Protocol

from klogtool.formats import engine


class OffsetMap(Protocol):
    """The log cleaner's offset map: key digest (MD5, 16 bytes) -> the key's last offset."""

    def __len__(self) -> int: ...
    def __setitem__(self, key: bytes, offset: int, /) -> None: ...
    def get(self, key: bytes, default: int, /) -> int: ...


def offset_map() -> OffsetMap:
    """An empty offset map: the native engine's (which :func:`map_batch` and
    :func:`retain_batch` fill and read without a Python object per record), or a dict."""
    native = engine.native_module()
    if native is None:
        empty: dict[bytes, int] = {}
        return empty
    made: OffsetMap = native.OffsetMap()
    return made


def map_batch(
    omap: OffsetMap,
    data: memoryview,
    max_batch_bytes: int,
    first_dirty: int,
    capacity: int,
    where: str,
) -> tuple[bool, int | None] | None:
    """Put the keyed records of a whole v2 batch from ``first_dirty`` on into a native
    ``omap`` until it holds ``capacity`` keys: ``(the map filled up, offset of the last record
    put)``; None (nothing put): read the batch in Python."""
    native = engine.native_module()
    if native is None or not isinstance(omap, native.OffsetMap):
        return None  # the python engine, or a dict made under it
    return engine.call(where, omap.add, data, max_batch_bytes, first_dirty, capacity)


# keep (one byte per record), keyless, superseded, tombstones expired, tombstones kept
Retained = tuple[bytes, int, int, int, int]


def retain_batch(
    omap: OffsetMap,
    data: memoryview,
    max_batch_bytes: int,
    latest_offset: int,
    keep_tombstones: bool,
    where: str,
) -> Retained | None:
    """The cleaner's decision for every record of a whole v2 data batch against a native
    ``omap`` (see ``Cleaner._retain``); None: decide in Python."""
    native = engine.native_module()
    if native is None or not isinstance(omap, native.OffsetMap):
        return None  # the python engine, or a dict made under it
    return engine.call(where, omap.retain, data, max_batch_bytes, latest_offset, keep_tombstones)
