"""A finding: something wrong (or worth a warning) at a place in a file (docs/output.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from klogtool import codes

if TYPE_CHECKING:
    from klogtool import events

ERROR = codes.Severity.ERROR
WARNING = codes.Severity.WARNING


@dataclass(frozen=True)
class Finding:
    severity: str  # ERROR | WARNING
    code: str  # stable, part of the JSON output
    path: str
    position: int | None
    offset: int | None
    message: str

    def __post_init__(self) -> None:
        codes.check(self.code, self.severity)

    def as_obj(self) -> events.FindingObject:
        """The ``finding`` object: every command's (verify, rebuild-index and truncate-recovery
        register it as theirs; dump-segments, transactions and find extend it)."""
        obj: events.FindingObject = {
            "type": "finding",
            "severity": self.severity,
            "code": self.code,
            "path": self.path,
            "position": self.position,
            "offset": self.offset,
            "message": self.message,
        }
        return obj


class FindingCounts:
    """Mixin for a stats dataclass with ``errors`` and ``warnings`` fields."""

    errors: int
    warnings: int

    def count(self, f: Finding) -> None:
        if f.severity == ERROR:
            self.errors += 1
        else:
            self.warnings += 1
