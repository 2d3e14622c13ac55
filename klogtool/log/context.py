"""What every read of the log layer runs under: one :class:`ReadContext`.

A command builds it once, from ``--max-batch-bytes``, the engine chosen and its progress bar,
and hands it to the library; the library passes it on whole, to its worker processes too. So
a new read setting is one field here (or in :class:`~klogtool.formats.ReadLimits`), never a
parameter threaded through every module, and no function of the log layer defaults it: a
missed pass is a type error, not a silent default. Per-batch helpers below the workflows
(``txnreplay``, ``indexcheck``, ...) take only ``ctx.limits``, the format layer's bounds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

from klogtool.formats import engine
from klogtool.formats.limits import DEFAULT_LIMITS, ReadLimits


class Progress(Protocol):
    """Hears how far a read has come (a command's progress bar listens)."""

    def advance(self, walked: int, records: int = 0) -> None:
        """``walked`` more bytes of input read, ``records`` more records decoded."""

    def phase(self, name: str, walked: int, total: int) -> None:
        """``walked`` more bytes of phase ``name`` (of ``total``), for work done in phases
        over the same segments (compact: reading, the offset map, cleaning)."""


class Quiet:
    """The :class:`Progress` nobody listens to: no bar, a worker process, a library call."""

    def advance(self, walked: int, records: int = 0) -> None:
        pass

    def phase(self, name: str, walked: int, total: int) -> None:
        pass


QUIET = Quiet()


class Tally(Quiet):
    """A :class:`Progress` that adds up the bytes it hears: a worker process's, handed to the
    parent's bar with the worker's result."""

    def __init__(self) -> None:
        self.walked = 0

    def advance(self, walked: int, records: int = 0) -> None:
        self.walked += walked


@dataclass(frozen=True)
class _Titled:
    progress: Progress
    title: str

    def advance(self, walked: int, records: int = 0) -> None:
        self.progress.advance(walked, records)

    def phase(self, name: str, walked: int, total: int) -> None:
        self.progress.phase(f"{self.title}: {name}", walked, total)


@dataclass(frozen=True)
class ReadContext:
    """``limits``: the bounds a read accepts; ``engine``: the engine reads run on (this
    process's already; worker processes start with it); ``progress``: who hears how far the
    read has come."""

    limits: ReadLimits
    engine: str
    progress: Progress

    def __reduce__(self) -> tuple[type[ReadContext], tuple[ReadLimits, str, Progress]]:
        # Crossing to another process (a pool's worker, a Spark task), a context leaves its
        # listener behind: the bar is this process's, and the worker's progress comes back
        # with its results.
        return (ReadContext, (self.limits, self.engine, QUIET))

    @classmethod
    def of(cls, limits: ReadLimits = DEFAULT_LIMITS, progress: Progress = QUIET) -> ReadContext:
        """A context for reads in this process, on the engine it runs: what a command or a
        library caller starts with (the log layer itself never makes one up)."""
        return cls(limits, engine.name(), progress)

    def reporting_to(self, progress: Progress) -> ReadContext:
        """This context with another listener (a worker's :class:`Tally`)."""
        return dataclasses.replace(self, progress=progress)

    def titled(self, title: str) -> ReadContext:
        """This context with each phase's name told as ``title: name``."""
        return self.reporting_to(_Titled(self.progress, title))

    def quiet(self) -> ReadContext:
        """This context without its listener: for a worker process (whose progress reaches
        the bar another way) or a read whose bytes are counted elsewhere."""
        return self.reporting_to(QUIET)
