"""A large segment cut into parts at batch boundaries, for worker processes to walk each part
as the walk of the whole segment would (dump-segments ``--jobs``), and their scan results
joined back into the whole walk's.

The cut is found by a quick walk of the v2 batch headers (offset, length, magic and last
offset delta only): where it meets anything else (a v0/v1 entry, a length that cannot be, a
torn tail) it stops, and the rest of the segment is the last part. Each part's walk is the real
one (every check, from the last offset before the part, so that offsets must still increase
across a cut), so a cut in the wrong place cannot change what is reported: at worst a part
holds more than its share.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from klogtool.formats import engine
from klogtool.formats.records import ENTRY_PREFIX, ReleaseBehind, ScanResult
from klogtool.formats.v2 import MIN_LENGTH

_LAST_OFFSET_DELTA = struct.Struct(">i")  # at byte 23 of a v2 batch
_HEADER = 27  # bytes of a v2 batch up to and including its last offset delta


class Chunk(NamedTuple):
    start: int  # file position of its first batch
    end: int  # file position after its last byte
    last_offset: int | None  # the last offset of the batch before it (None: it starts the file)


def plan_chunks(buf: memoryview, chunk_bytes: int) -> Iterator[Chunk]:
    """``buf`` cut at batch boundaries into parts of about ``chunk_bytes``, each yielded as
    soon as the walk of headers passes it (so that workers start on the first parts while the
    walk goes on). The native engine walks the headers between two cuts (a Python step per
    batch cost ~0.15 s of CPU on a 2 GiB segment, which the workers want); the walk below is
    the reference, and what the python engine runs."""
    native = engine.native_module()
    if native is None or chunk_bytes < 1:  # (< 1: a cut at every batch, the reference's)
        yield from _plan_python(buf, chunk_bytes)
        return
    step = min(chunk_bytes, len(buf) + 1)  # (the same cuts: it fits the native integer)
    start, before, last = 0, None, None
    pos = 0
    release = ReleaseBehind(buf)  # the pages of headers read leave this process (flat RSS)
    while True:
        cut = engine.call(f"byte {pos}", native.chunk_cut, buf, pos, start, step, last)
        if cut is None:  # (cannot be: every argument fits)
            yield from _plan_python(buf, chunk_bytes, (start, before, last, pos))
            return
        pos, last, at_cut = cut
        if not at_cut:
            break  # the last part's walk judges what stopped it
        release(pos)
        yield Chunk(start, pos, before)
        start, before = pos, last
    yield Chunk(start, len(buf), before)


def _plan_python(
    buf: memoryview,
    chunk_bytes: int,
    state: tuple[int, int | None, int | None, int] = (0, None, None, 0),
) -> Iterator[Chunk]:
    """:func:`plan_chunks` in Python, from ``state`` (the part's start, the last offset
    before it, the last offset before ``pos``, and ``pos``, a batch boundary in it)."""
    n = len(buf)
    unpack_prefix = ENTRY_PREFIX.unpack_from
    unpack_delta = _LAST_OFFSET_DELTA.unpack_from
    start, before, last, pos = state
    release = ReleaseBehind(buf)  # the pages of headers read leave this process (flat RSS)
    while n - pos >= _HEADER:
        offset, size, magic = unpack_prefix(buf, pos)
        (delta,) = unpack_delta(buf, pos + 23)
        end = pos + 12 + size
        if magic != 2 or size < MIN_LENGTH or end > n or delta < 0:
            break  # the last part's walk judges it
        if pos - start >= chunk_bytes:
            release(pos)
            yield Chunk(start, pos, before)
            start, before = pos, last
        last = offset + delta
        pos = end
    yield Chunk(start, n, before)


def joined(parts: Sequence[tuple[Chunk, ScanResult]], size: int) -> ScanResult:
    """The scan result of the walk of a whole segment of ``size`` bytes from those of its
    parts, walked in order up to the first that did not end cleanly (positions in a part's
    result are relative to its start; its errors' are the file's)."""
    first, (last_chunk, last) = parts[0][1], parts[-1]
    valid = next(
        (c.start + r.valid_bytes for c, r in parts if r.valid_bytes < c.end - c.start), None
    )
    stopped = last_chunk.start + last.stopped_at
    return ScanResult(
        size=size,
        valid_bytes=valid if valid is not None else stopped,
        stopped_at=stopped,
        end=last.end,
        error=next((r.error for _c, r in parts if r.error is not None), None),
        batches=sum(r.batches for _c, r in parts),
        first_offset=first.first_offset,
        last_offset=last.last_offset,  # (a part's walk starts from the one before it)
    )
