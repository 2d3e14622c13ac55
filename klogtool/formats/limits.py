"""What a read may cost, whatever the input claims: the bounds every reading path takes.

A hostile or corrupt segment can claim a 2 GiB batch or a decompression bomb; the readers
check each claim against these bounds before they allocate, and report a
``LimitExceededError`` at the batch's position instead. :class:`ReadLimits` travels whole
(in the log layer inside a ``ReadContext``), so a new bound is one field here, the check that
enforces it, and the command line option that sets it: no parameter threaded through every
module on the way.
"""

from __future__ import annotations

from dataclasses import dataclass

from klogtool.formats.batch import DEFAULT_MAX_BATCH_BYTES


@dataclass(frozen=True)
class ReadLimits:
    """``max_batch_bytes``: the largest batch (or decompressed records area, or legacy
    wrapper's inner set) a read accepts."""

    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES

    def __post_init__(self) -> None:
        if self.max_batch_bytes <= 0:
            raise ValueError(f"max_batch_bytes must be positive, not {self.max_batch_bytes}")


DEFAULT_LIMITS = ReadLimits()
