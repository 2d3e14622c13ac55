"""A large segment cut into parts at batch boundaries, for worker processes to walk each part
as the walk of the whole segment would (dump-segments ``--jobs``), and their scan results
joined back into the whole walk's.

The cut is found by a quick walk of the v2 batch headers (offset, length, magic and last
offset delta only): where it meets anything else (a v0/v1 entry, a length that cannot be, a
torn tail) it stops, and the rest of the segment is the last part. Each part's walk is the real
one (every check, from the last offset before the part, so that offsets must still increase
across a cut), so a cut in the wrong place cannot change what is reported: at worst a part
holds more than its share. The process that dumps a part finds the part's end itself, by a
walk of its headers in its own mapping (whose pages it reads next) before the real walk, and
so where the next part starts; only the first part is cut by the process that shares the work
out.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from typing import NamedTuple

from klogtool.formats import engine
from klogtool.formats.records import ENTRY_PREFIX, ScanResult
from klogtool.formats.v2 import MIN_LENGTH

_LAST_OFFSET_DELTA = struct.Struct(">i")  # at byte 23 of a v2 batch
_HEADER = 27  # bytes of a v2 batch up to and including its last offset delta


class Chunk(NamedTuple):
    start: int  # file position of its first batch
    end: int  # file position after its last byte
    last_offset: int | None  # the last offset of the batch before it (None: it starts the file)


def cut_part(
    buf: memoryview, start: int, last: int | None, chunk_bytes: int, path: str | None = None
) -> tuple[Chunk, int | None]:
    """The part of ``buf`` that starts at the batch boundary ``start`` (``last``: the last
    offset before it): up to the first batch that starts ``chunk_bytes`` or more past
    ``start``, or to the end of ``buf`` where the walk of headers stops first (the last part);
    and the last offset of the part's last batch the walk read. The native engine walks the
    headers (a Python step per batch cost ~0.15 s of CPU on a 2 GiB segment); :func:`_cut`
    is its reference, and what the python engine runs. ``path``: the file ``buf`` maps, whose
    headers the native walk then reads with ``pread``, for a process that will not read the
    part itself (touching the mapping faults its pages in)."""
    native = engine.native_module()
    chunk_bytes = max(chunk_bytes, 1)
    if native is None:
        end, after, at_cut = _cut(buf, start, chunk_bytes, last)
    else:
        step = min(chunk_bytes, len(buf) + 1)  # (the same cuts: it fits the native integer)
        if path is None:
            found = engine.call(f"byte {start}", native.chunk_cut, buf, start, step, last)
        else:
            try:
                found = engine.call(
                    f"byte {start}", native.chunk_cut_file, path, len(buf), start, step, last
                )
            except OSError as e:  # (its errno only)
                raise OSError(e.errno, os.strerror(e.errno or 0), path) from None
        assert found is not None  # (None: an argument past the native integers; none is)
        end, after, at_cut = found
    return Chunk(start, end if at_cut else len(buf), last), after


def _cut(
    buf: memoryview, start: int, chunk_bytes: int, last: int | None
) -> tuple[int, int | None, bool]:
    """The walk of :func:`cut_part` (``scan::chunk_cut`` natively): from ``start``, a batch
    boundary (``last``: the last offset of the batch before it), over v2 batch headers until
    a batch that starts ``chunk_bytes`` or more past ``start`` (the part ends there: ``True``)
    or until anything else (a v0/v1 entry, a length that cannot be, a negative last offset
    delta, a torn tail: ``False``, the rest is the last part). Returns ``(pos, last, cut)``
    where the walk stopped."""
    n = len(buf)
    pos = start
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
