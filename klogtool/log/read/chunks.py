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

import os
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


def plan_chunks(buf: memoryview, chunk_bytes: int, path: str | None = None) -> Iterator[Chunk]:
    """``buf`` cut at batch boundaries into parts of about ``chunk_bytes`` (at least one batch
    each), each yielded as soon as the walk of headers passes it (so that workers start on the
    first parts while the walk goes on). The native engine walks the headers between two cuts
    (a Python step per batch cost ~0.15 s of CPU on a 2 GiB segment, which the workers want);
    :func:`_cut` is its reference, and what the python engine runs. ``path``: the file ``buf``
    maps, whose headers the native walk then reads with ``pread`` instead: touching the
    mapping faulted in (and then released) a page range per batch, ~0.3 s of CPU more."""
    chunk_bytes = max(chunk_bytes, 1)
    native = engine.native_module()
    from_file = native is not None and path is not None

    def cut(pos: int, start: int, last: int | None) -> tuple[int, int | None, bool]:
        if native is None:
            return _cut(buf, pos, start, chunk_bytes, last)
        step = min(chunk_bytes, len(buf) + 1)  # (the same cuts: it fits the native integer)
        if not from_file:
            found = engine.call(f"byte {pos}", native.chunk_cut, buf, pos, start, step, last)
        else:
            assert path is not None
            try:
                found = engine.call(
                    f"byte {pos}", native.chunk_cut_file, path, len(buf), pos, start, step, last
                )
            except OSError as e:  # (its errno only)
                raise OSError(e.errno, os.strerror(e.errno or 0), path) from None
        assert found is not None  # (None: an argument past the native integers; none is)
        return found

    start, before, last = 0, None, None
    pos = 0
    release = ReleaseBehind(buf)  # the pages of headers read leave this process (flat RSS)
    while True:
        pos, last, at_cut = cut(pos, start, last)
        if not at_cut:
            break  # the last part's walk judges what stopped it
        if not from_file:
            release(pos)
        yield Chunk(start, pos, before)
        start, before = pos, last
    yield Chunk(start, len(buf), before)


def _cut(
    buf: memoryview, pos: int, start: int, chunk_bytes: int, last: int | None
) -> tuple[int, int | None, bool]:
    """One step of :func:`plan_chunks`' walk (``scan::chunk_cut`` natively): from ``pos``, a
    batch boundary of the part that starts at ``start`` (``last``: the last offset of the
    batch before ``pos``), over v2 batch headers until a batch that starts ``chunk_bytes``
    or more past ``start`` (the part ends there: ``True``) or until anything else (a v0/v1
    entry, a length that cannot be, a negative last offset delta, a torn tail: ``False``, the
    rest is the last part). Returns ``(pos, last, cut)`` where the walk stopped."""
    n = len(buf)
    unpack_prefix = ENTRY_PREFIX.unpack_from
    unpack_delta = _LAST_OFFSET_DELTA.unpack_from
    while n - pos >= _HEADER:
        offset, size, magic = unpack_prefix(buf, pos)
        (delta,) = unpack_delta(buf, pos + 23)
        end = pos + 12 + size
        if magic != 2 or size < MIN_LENGTH or end > n or delta < 0:
            break
        if pos - start >= chunk_bytes:
            return pos, last, True
        last = offset + delta
        pos = end
    return pos, last, False


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
