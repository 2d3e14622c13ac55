"""PhaseProgress: reports inside a large segment every PHASE_STEP bytes, and the rest when it
is done, so a phase's reports add up to its total."""

from __future__ import annotations

from klogtool.log.segment import PHASE_STEP, PhaseProgress


def test_reports_add_up_to_the_total_with_steps_inside_a_segment() -> None:
    calls: list[tuple[str, int, int]] = []
    sizes = [3 * PHASE_STEP + 5, 100]
    walked = PhaseProgress(lambda *a: calls.append(a), "cleaning", sum(sizes))
    for size in sizes:
        for position in range(0, size, PHASE_STEP // 4):
            walked.at(position)
        walked.done(size)
    assert all(phase == "cleaning" and total == sum(sizes) for phase, _n, total in calls)
    assert sum(n for _p, n, _t in calls) == sum(sizes)
    assert len(calls) >= 4  # three steps inside the large segment, then its rest


def test_no_callback_no_reports() -> None:
    walked = PhaseProgress(None, "x", 10)
    walked.at(PHASE_STEP * 2)
    walked.done(10)
    assert walked.reported == 0
