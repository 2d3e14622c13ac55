"""Small texts the commands share."""

from __future__ import annotations


def log_offsets(start: int | None, end: int | None, *, commas: bool = False) -> str:
    """A log's offsets for people: ``a..b`` inclusive, as every range klogtool prints, then
    the log end offset (exclusive, the next offset to be written): ``0..199 (log end 200)``,
    or ``empty (log end 200)``. ``commas``: thousands separators."""

    def n(v: int | None) -> str:
        return "?" if v is None else f"{v:,}" if commas else str(v)

    if start is None or end is None:
        return f"{n(start)}..? (log end {n(end)})"
    if end <= start:
        return f"empty (log end {n(end)})"
    return f"{n(start)}..{n(end - 1)} (log end {n(end)})"
