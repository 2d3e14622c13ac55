"""A progress listener for tests: every step a read reports, in order."""

from __future__ import annotations


class Steps(list[int]):
    """A ``klogtool.log.context.Progress`` that keeps the bytes of every step it hears."""

    def advance(self, walked: int, records: int = 0) -> None:
        self.append(walked)

    def phase(self, name: str, walked: int, total: int) -> None:
        self.append(walked)
