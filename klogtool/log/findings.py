"""A finding: something wrong (or worth a warning) at a place in a file (docs/output.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from klogtool import codes

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

    def as_obj(self, **extra: Any) -> dict[str, Any]:
        return {
            "type": "finding",
            "severity": self.severity,
            "code": self.code,
            "path": self.path,
            "position": self.position,
            "offset": self.offset,
            "message": self.message,
            **extra,
        }


class FindingCounts:
    """Mixin for a stats dataclass with ``errors`` and ``warnings`` fields."""

    errors: int
    warnings: int

    def count(self, f: Finding) -> None:
        if f.severity == ERROR:
            self.errors += 1
        else:
            self.warnings += 1
