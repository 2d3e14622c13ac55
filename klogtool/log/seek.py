"""A segment's index files as the broker seeks by them: the offset index gives the position
of the batch holding an offset, the time index the offset of a timestamp. An index that is
missing, fails the broker's sanity check or does not increase is not used (the reader walks
from the segment's start). ``find`` seeks by them (``--offsets``, ``--from-time``); the split
reader of export and the Spark source skips a rolled segment whose time index ends below a
pushed-down timestamp.
"""

from __future__ import annotations

import struct
from pathlib import Path

from klogtool.formats import index
from klogtool.formats.errors import FormatError
from klogtool.log.segment import read_small

TIME_ENTRY = struct.Struct(">qi")
OFFSET_ENTRY = struct.Struct(">ii")


class Index:
    """The usable entries of an ``.index`` or ``.timeindex``: trimmed of zero padding, sane and
    increasing, or a reason why not."""

    def __init__(self, buf: bytes, entry: struct.Struct, n: int, untrimmed: bool):
        self.buf = buf
        self.entry = entry
        self.n = n
        self.untrimmed = untrimmed

    def key(self, i: int) -> int:
        """The sort key of entry ``i`` (offset index: relative offset; time index: timestamp)."""
        value: int = self.entry.unpack_from(self.buf, i * self.entry.size)[0]
        return value

    def value(self, i: int) -> int:
        """The other field of entry ``i`` (offset index: position; time index: rel. offset)."""
        value: int = self.entry.unpack_from(self.buf, i * self.entry.size)[1]
        return value

    def floor(self, target: int) -> int:
        """The index of the largest entry whose key is at most ``target``, or -1."""
        lo, hi = 0, self.n
        while lo < hi:
            mid = (lo + hi) // 2
            if self.key(mid) <= target:
                lo = mid + 1
            else:
                hi = mid
        return lo - 1


def load_index(path: Path | None, base: int, time: bool) -> Index | str:
    """The usable entries of a segment's ``.timeindex`` (``time``) or ``.index``, or why it
    cannot be used."""
    what = ".timeindex" if time else ".index"
    if path is None or not path.is_file():
        return f"no {what}"
    buf = read_small(path, 1 << 31)
    entry = TIME_ENTRY if time else OFFSET_ENTRY
    slots = len(buf) // entry.size
    zeros = index.time_index_zero_tail(buf) if time else index.offset_index_zero_tail(buf)
    n = slots - zeros
    trimmed = buf[: n * entry.size]
    try:
        if time:
            index.sanity_check_time_index(trimmed + buf[slots * entry.size :], base)
        else:
            index.sanity_check_offset_index(trimmed + buf[slots * entry.size :], base)
    except FormatError as e:
        return f"the {what} fails the broker's sanity check: {e}"
    prev: int | None = None
    for k, _ in entry.iter_unpack(trimmed):
        if prev is not None and k <= prev:
            return f"the {what} entries do not increase"
        prev = k
    return Index(trimmed, entry, n, zeros > 0)
