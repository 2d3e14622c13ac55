"""Walking many segments in a process pool, results in input order, with the workers' progress
added to one shared counter the parent reads (small inputs stay in-process)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from typing import Any, TypeVar

from klogtool.log.context import ReadContext
from klogtool.log.pool import fork_context, processes, worker_deaths
from klogtool.log.segment import Walked

T = TypeVar("T")


R = TypeVar("R")


# Segments smaller than this in total are walked in-process: forking workers costs more.
POOL_MIN_BYTES = 8 << 20


def run_parallel(
    fn: Callable[[T, Walked], R],
    tasks: Sequence[T],
    *,
    jobs: int,
    sizes: Sequence[int],
    ctx: ReadContext,
) -> list[R]:
    """``[fn(t, walked) for t in tasks]``, across ``jobs`` worker processes when it pays off.

    Results come back in task order. ``ctx.progress`` hears of the bytes done, inside a task as
    ``fn`` reports them to its :class:`Walked` (from a worker through a shared counter that
    is read every 0.2 s), and all of a task's size when it ends. Workers only read files.
    """
    if jobs <= 1 or len(tasks) <= 1 or sum(sizes) < POOL_MIN_BYTES:
        out: list[R] = []
        for t, size in zip(tasks, sizes, strict=True):
            out.append(_walk_task(fn, t, size, Walked(ctx.progress.advance)))
        return out
    counter = fork_context().Value("q", 0)
    results: dict[int, R] = {}

    def lost() -> str:
        return ", ".join(_path_of(tasks[i]) for i in range(len(tasks)) if i not in results)

    with (
        processes(ctx, min(jobs, len(tasks)), _share_progress, (counter,)) as pool,
        worker_deaths(lost),
    ):
        futures = {
            pool.submit(_walk_task, fn, t, size): i
            for i, (t, size) in enumerate(zip(tasks, sizes, strict=True))
        }
        pending = set(futures)
        shown = 0
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for fut in done:
                results[futures[fut]] = fut.result()
            now = counter.value  # read once: a worker may add between two reads
            if now > shown:
                ctx.progress.advance(now - shown)
                shown = now
    return [results[i] for i in range(len(tasks))]


_SHARED_PROGRESS: Any = None  # a worker's counter of bytes done (multiprocessing.Value)


def _share_progress(counter: Any) -> None:
    global _SHARED_PROGRESS
    _SHARED_PROGRESS = counter


def _add_shared(n: int) -> None:
    with _SHARED_PROGRESS.get_lock():
        _SHARED_PROGRESS.value += n


def _walk_task(fn: Callable[[T, Walked], R], task: T, size: int, walked: Walked | None = None) -> R:
    """``fn(task, walked)``, then the rest of ``size`` reported (in a worker: to the shared
    counter)."""
    walked = walked or Walked(_add_shared if _SHARED_PROGRESS is not None else None)
    result = fn(task, walked)
    walked.done(size)
    return result


def _path_of(task: object) -> str:
    """The file a task reads (a ScanTask's ``path``), for the message of a worker lost."""
    return str(getattr(task, "path", task))
