"""Text shortened to fit a label, for the terminal's output and the HTML report alike: its
start and its end kept (where names differ: a partition's number, a key's id), and labels
of different things kept different."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

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
