"""Texts for the terminal's output and the HTML report alike: text shortened to fit a label
(its start and its end kept, where names differ: a partition's number, a key's id; labels of
different things kept different), a log's offsets, a remote tier's row."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

Label = TypeVar("Label", bound=Hashable)


def shorten_middle(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: its start and its end, joined by ``…``."""
    if len(text) <= limit:
        return text
    keep = max(limit - 1, 2)
    return text[: (keep + 1) // 2] + "…" + text[len(text) - keep // 2 :]


def distinct_labels(
    texts: Sequence[str],
    fit: Callable[[str, str], Label],
    ids: Sequence[Hashable] | None = None,
) -> list[Label]:
    """``fit(text, "")`` for each text, but where things of different ``ids`` (default: the
    texts themselves) come out alike, each of them ``fit(text, " (n)")``, ``n`` its place among
    them: shortened names that differ only in the middle, or keys cut to the same first bytes,
    must not read as one."""
    keys = list(texts) if ids is None else list(ids)
    labels = [fit(t, "") for t in texts]
    owners: dict[Label, list[Hashable]] = {}
    for label, key in zip(labels, keys, strict=True):
        seen = owners.setdefault(label, [])
        if key not in seen:
            seen.append(key)
    for i, (label, key) in enumerate(zip(list(labels), keys, strict=True)):
        alike = owners[label]
        if len(alike) > 1:
            labels[i] = fit(texts[i], f" ({alike.index(key) + 1})")
    return labels


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


# A remote tier (describe's remote_tier object, stats' remote_tier field) as a table row
REMOTE_TIER_COLUMNS = [
    "partition",
    "remote segments",
    "bytes",
    "remote offsets",
    "local offsets",
    "between",
    "uploaded to",
    "look at",
]


def _span(a: int | None, b: int | None) -> str:
    return "-" if a is None or b is None else f"{a:,}..{b:,}"


def remote_tier_row(path: str, t: Mapping[str, Any]) -> list[str]:
    """The columns of :data:`REMOTE_TIER_COLUMNS` for one remote tier."""
    if t["overlap"] is not None:
        between = f"overlap {_span(*t['overlap'])}"
    elif t["gap"] is not None:
        between = f"GAP {_span(*t['gap'])}"
    else:
        between = "-"
    look = [
        f"{n:,} {what}"
        for n, what in (
            (t["uploads_unfinished"], "unfinished uploads"),
            (t["deletions_unfinished"], "unfinished deletions"),
            (t["unreferenced"], "unreferenced copies"),
            (len(t["remote_gaps"]), "remote gaps"),
            (len(t["dropped_events"]), "dropped events"),
            (len(t["metadata_problems"]), "undecodable metadata records"),
        )
        if n
    ]
    return [
        path,
        f"{t['segments']:,}",
        f"{t['bytes']:,}",
        _span(t["start_offset"], t["end_offset"]),
        log_offsets(t["local_start_offset"], t["local_end_offset"], commas=True),
        between,
        f"{t['highest_uploaded_offset']:,}",
        ", ".join(look) or "-",
    ]
