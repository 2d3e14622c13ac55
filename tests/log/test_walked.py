"""Walked / phase_walk: progress inside a large segment every PHASE_STEP bytes, the rest when
it is done, never a byte twice, so the reports of a phase add up to its total."""

from __future__ import annotations

from klogtool.log.context import Quiet
from klogtool.log.segment import PHASE_STEP, Walked, phase_walk


class Phases(Quiet):
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def phase(self, name: str, walked: int, total: int) -> None:
        self.calls.append((name, walked, total))


def test_reports_add_up_to_the_total_with_steps_inside_a_segment() -> None:
    sizes = [3 * PHASE_STEP + 5, 100]
    heard = Phases()
    calls = heard.calls
    walked = phase_walk(heard, "cleaning", sum(sizes))
    for size in sizes:
        for position in range(0, size, PHASE_STEP // 4):
            walked.at(position)
        walked.done(size)
    assert all(phase == "cleaning" and total == sum(sizes) for phase, _n, total in calls)
    assert sum(n for _p, n, _t in calls) == sum(sizes)
    assert len(calls) >= 4  # three steps inside the large segment, then its rest


def test_a_second_walk_reports_nothing_twice() -> None:
    seen: list[int] = []
    walked = Walked(seen.append)
    for position in range(0, 4 * PHASE_STEP, PHASE_STEP):
        walked.at(position)  # a fast walk that gives up...
    for position in range(0, 6 * PHASE_STEP, PHASE_STEP):
        walked.at(position)  # ...and the careful walk from the start
    walked.add(5)
    walked.done(6 * PHASE_STEP + 10)
    assert sum(seen) == 6 * PHASE_STEP + 10


def test_no_sink_no_reports() -> None:
    walked = Walked(None)
    walked.at(PHASE_STEP * 2)
    assert walked.reported == 0  # (checked before done(), which resets it whatever happened)
    walked.done(10)
    assert walked.reported == 0
