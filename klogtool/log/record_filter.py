"""Which records a search keeps: the filters of ``find``, shared by ``export --where`` and the
``where`` option of the ``kafka-segments`` Spark source.

A :class:`RecordFilter` answers two questions. :meth:`RecordFilter.skips_batch` looks at a
batch header only (offsets, timestamps, producer id, control-ness), so a walk can pass over a
batch without decompressing it; :meth:`RecordFilter.matches` looks at one record. The
transactional state needs the whole partition (a header pass, see
:func:`klogtool.log.read.finder.transaction_states`): the walkers hold that, and the filter only
says which states it keeps (:attr:`RecordFilter.transactions`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from klogtool.formats.batch import LOG_APPEND_TIME, Batch, Record
from klogtool.formats.errors import FormatError

COMMITTED, ABORTED, OPEN, NONE = "committed", "aborted", "open", "none"
TXN_STATES = (COMMITTED, ABORTED, OPEN, NONE)
MAX_OFFSET = (1 << 63) - 1


@dataclass(frozen=True)
class RecordFilter:
    """All given conditions must hold. Times are milliseconds since the epoch; ranges are
    inclusive. Regexes are ``re`` patterns over the raw bytes (UTF-8 text patterns)."""

    from_time: int | None = None
    to_time: int | None = None
    offsets: tuple[int, int] | None = None
    key: bytes | None = None
    key_regex: str | None = None
    value_regex: str | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()  # (name, value or None = any value)
    producer_ids: frozenset[int] = frozenset()
    transactions: frozenset[str] = frozenset()  # subset of TXN_STATES; empty = any
    control: bool | None = None  # True: control records only; False: none; None: both

    def __post_init__(self) -> None:
        unknown = self.transactions - set(TXN_STATES)
        if unknown:
            raise ValueError(f"unknown transactional state {sorted(unknown)[0]!r}")

    @property
    def active(self) -> bool:
        """Whether anything is filtered at all."""
        return self != RecordFilter()

    @property
    def record_level(self) -> bool:
        """Whether a batch that passes :meth:`skips_batch` may still hold records that do not
        match (so each record must be looked at)."""
        return bool(
            self.key is not None
            or self.key_regex
            or self.value_regex
            or self.headers
            or self.offsets
            or self.from_time is not None
            or self.to_time is not None
        )

    @cached_property
    def _key_re(self) -> re.Pattern[bytes] | None:
        return re.compile(self.key_regex.encode()) if self.key_regex else None

    @cached_property
    def _value_re(self) -> re.Pattern[bytes] | None:
        return re.compile(self.value_regex.encode()) if self.value_regex else None

    def skips_batch(self, batch: Batch) -> bool:
        """True when no record of ``batch`` can match, judged from its header alone."""
        if self.offsets is not None:
            lo, hi = self.offsets
            if batch.last_offset < lo or past(batch, hi):
                return True
        if self.from_time is not None and batch.max_timestamp < self.from_time:
            return True
        if (
            self.to_time is not None
            and batch.timestamp_type == LOG_APPEND_TIME
            and batch.max_timestamp > self.to_time
        ):
            return True
        if self.producer_ids and batch.producer_id not in self.producer_ids:
            return True
        return self.control is not None and batch.is_control != self.control

    def matches(self, rec: Record) -> bool:
        """Whether one record of a batch that :meth:`skips_batch` kept matches."""
        if self.offsets is not None and not self.offsets[0] <= rec.offset <= self.offsets[1]:
            return False
        if self.from_time is not None and rec.timestamp < self.from_time:
            return False
        if self.to_time is not None and rec.timestamp > self.to_time:
            return False
        if self.key is not None and (rec.key is None or bytes(rec.key) != self.key):
            return False
        key_re, value_re = self._key_re, self._value_re
        if key_re is not None and (rec.key is None or key_re.search(bytes(rec.key)) is None):
            return False
        if value_re is not None and (
            rec.value is None or value_re.search(bytes(rec.value)) is None
        ):
            return False
        for name, value in self.headers:
            if not any(
                k == name and (value is None or (v is not None and bytes(v) == value))
                for k, v in rec.headers
            ):
                return False
        return True


def past(batch: Batch, offset: int) -> bool:
    """Whether every record of ``batch`` lies after ``offset`` (a legacy wrapper is decompressed
    for its first offset only when its own, the last, is past)."""
    return batch.last_offset > offset and first_offset(batch) > offset


def first_offset(batch: Batch) -> int:
    """A batch's first offset (a v0/v1 wrapper is decompressed to know it; when that fails,
    its own offset, the last)."""
    try:
        return batch.base_offset
    except FormatError:
        return batch.last_offset
