"""``verify`` as a library: every check of a file, partition dir or log dir, as findings.

Verify accepts what the broker accepts (docs/kafka-rules.md: Loading and recovery, Index
rebuild). The checks are in three levels, each a class :class:`Verifier` inherits:
:mod:`~klogtool.log.segment_checks` (one pass over a segment's mmapped bytes, its index
files merged into the walk, so memory stays flat however large the segment),
:mod:`~klogtool.log.check.partition_checks` and :mod:`~klogtool.log.check.logdir_checks`.
Finding codes and their severities are in ``klogtool/codes.py``: an ``error`` means the data is
damaged or a broker would lose or mis-serve records, a ``warning`` something a broker repairs by
itself on load.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.log import layout, storage
from klogtool.log.check.logdir_checks import LogDirChecks
from klogtool.log.files import detect_kind, kafka_dirs
from klogtool.log.findings import Finding
from klogtool.log.segment_checks import SegmentSummary, Stats
from klogtool.log.txnreplay import TxnReplay

__all__ = ["SegmentSummary", "Stats", "Verifier"]


class Verifier(LogDirChecks):
    """Run :meth:`verify` over PATH arguments; findings stream out, :attr:`stats` adds up."""

    def verify(self, paths: list[str]) -> Iterator[Finding]:
        for arg in paths:
            files_before = self.stats.files
            for f in self._path(storage.path_of(arg)):
                self.stats.count(f)
                yield f
            if self.stats.files == files_before:
                # never "OK" about nothing: an empty x-0 dir, or one whose subdirs hold nothing
                raise InputError(
                    "no Kafka files in it: nothing was checked",
                    path=arg,
                    code=Code.NO_KAFKA_FILES,
                )

    def _path(self, path: Path) -> Iterator[Finding]:
        if not path.exists():
            raise InputError("no such file or directory", path=str(path), code=Code.NOT_FOUND)
        if path.is_dir():
            for d in kafka_dirs(path, str(path)):
                if d.logdir is None:
                    yield from self.verify_partition(d.path)
                else:
                    yield from self.verify_log_dir(d.logdir)
            return
        kind = detect_kind(path)
        if kind in (layout.LOG, layout.INDEX, layout.TIMEINDEX, layout.TXNINDEX):
            seg = layout.segment_files(path, kind)
            if kind != layout.LOG:  # the index file named, checked against its log alone
                seg = layout.SegmentFiles(seg.base_offset, log=seg.log, **{kind: path})
            if seg.log is None:
                yield from self._index_alone(path, kind, seg.base_offset)
                return
            yield from self.verify_segment(
                seg,
                SegmentSummary(seg.base_offset),
                TxnReplay(),
                active=True,
                missing_index_ok=True,
            )
        elif kind == layout.KRAFT_SNAPSHOT:
            yield from self._kraft_snapshot(path)
        elif kind == layout.SNAPSHOT:
            yield from self.check_snapshot(path, None)
        else:
            self.stats.files += 1
            yield from self._text_file(path, kind)
