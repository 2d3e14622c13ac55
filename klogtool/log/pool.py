"""Work spread over processes or threads whose output keeps its input order, with flat memory.

:func:`spooled` runs a generator function over items in a process pool. Each worker pickles
what its item yields into a temporary file; the caller reads the files back in item order, so
the output is the same as with one process, and neither side holds more than one object of a
result in memory. At most ``2 * jobs`` items run ahead of the one being read.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import chain, islice
from typing import TYPE_CHECKING, Any, TypeVar, cast

from klogtool.errors import WorkerDied
from klogtool.formats import engine
from klogtool.log.context import ReadContext

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

T = TypeVar("T")
R = TypeVar("R")


def fork_context() -> Any:
    """fork where there is one: workers start in milliseconds and inherit what is loaded."""
    import multiprocessing  # here: a command that runs no pool does not pay for the import

    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def processes(
    ctx: ReadContext,
    jobs: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> ProcessPoolExecutor:
    """The one way klogtool starts worker processes: ``jobs`` of them, forked where fork
    exists, each running ``ctx``'s engine (python or native) and then
    ``initializer(*initargs)``."""
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=fork_context(),
        initializer=_start_worker,
        initargs=(os.getpid(), ctx.engine, initializer, initargs),
    )


def _start_worker(
    parent: int,
    engine_name: str,
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
) -> None:
    _die_with(parent)
    engine.use(engine_name)
    if initializer is not None:
        initializer(*initargs)


def _die_with(parent: int) -> None:
    """End this worker when ``parent`` ends, however (SIGKILL, the OOM killer): a worker whose
    parent is gone would run on for ever, holding its segment open. Linux only."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the prctl
        os._exit(1)


@contextmanager
def worker_deaths(part: Callable[[], str], path: str | None = None) -> Iterator[None]:
    """Around the work of a pool: a worker that died (``BrokenProcessPool``, raised by a
    ``result()`` or by a ``submit()`` after it) is a :class:`WorkerDied` naming ``part()``,
    the part being waited for (of ``path``), not an internal error."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        yield
    except BrokenProcessPool:
        raise WorkerDied(part(), path) from None


def spooled(
    ctx: ReadContext,
    fn: Callable[[T], Iterator[Any]],
    items: Iterable[T],
    jobs: int,
    *,
    prefix: str = "klogtool-",
    part: Callable[[T], str] = str,
) -> Iterator[Any]:
    """Everything ``fn(item)`` yields, item after item, computed by ``jobs`` processes (in this
    one when ``jobs`` is 1 or there is one item). ``fn`` must be picklable (a module-level
    function, or a ``functools.partial`` of one). ``items`` is read lazily, a few ahead; an
    exception raised by it, or by a worker, is raised here when its turn comes, after
    everything before it was yielded."""
    todo = iter(items)
    ahead: list[T] = []
    error: Exception | None = None
    if jobs > 1:
        try:
            ahead.extend(islice(todo, 2))
        except Exception as e:  # raised in its turn
            error = e
    if len(ahead) <= 1 or error is not None:
        for item in ahead:
            yield from fn(item)
        if error is not None:
            raise error
        for item in todo:
            yield from fn(item)
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as spool, processes(ctx, jobs) as pool:
        queue: deque[tuple[T, Future[str]] | BaseException] = deque()
        numbered = enumerate(chain(ahead, todo))

        def submit() -> None:
            if queue and isinstance(queue[-1], BaseException):
                return  # items ended with an error
            try:
                nxt = next(numbered, None)
            except Exception as e:  # raised in its turn
                queue.append(e)
                return
            if nxt is not None:
                i, item = nxt
                path = os.path.join(spool, f"{i:08d}")
                queue.append((item, pool.submit(_spool, fn, item, path)))

        def waiting() -> str:
            head = queue[0] if queue else None
            return part(head[0]) if isinstance(head, tuple) else "a part"

        try:
            with worker_deaths(waiting):
                for _ in range(2 * jobs):
                    submit()
                while queue:
                    head = queue[0]
                    if isinstance(head, BaseException):
                        raise head
                    path = head[1].result()
                    queue.popleft()
                    submit()
                    yield from _unspooled(path)
        finally:
            for queued in queue:
                if not isinstance(queued, BaseException):
                    queued[1].cancel()


def _unspooled(path: str) -> Iterator[Any]:
    """What a worker spooled to ``path``, object by object; the file is removed after."""
    with open(path, "rb") as f:
        while True:
            try:
                obj = pickle.load(f)
            except EOFError:
                break
            yield obj
    os.unlink(path)


def _spool(fn: Callable[[Any], Iterator[Any]], item: Any, path: str) -> str:
    with open(path, "wb") as f:
        for obj in fn(item):
            pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
    return path


def threaded(
    fn: Callable[[T], R],
    items: Iterable[T],
    threads: int,
    *,
    per_task: int = 32,
    weigh: Callable[[T], int] | None = None,
) -> Iterator[tuple[T, R]]:
    """``(item, fn(item))`` for every item, in order, ``fn`` running in ``threads`` threads
    ahead of the caller, two tasks a thread at most: for work that releases the GIL, such as
    the native engine's. A task takes items until their weight (``weigh``, else 1 an item)
    reaches ``per_task``: several items, because a thread handing back each would wait for the
    GIL as often, and a bounded weight, so that what runs ahead stays small. An exception
    raised by ``fn`` is raised here in its item's turn."""
    if threads <= 1:
        for item in items:
            yield item, fn(item)
        return
    from concurrent.futures import ThreadPoolExecutor

    def each(task: list[T]) -> list[tuple[R | None, Exception | None]]:
        done: list[tuple[R | None, Exception | None]] = []
        for item in task:
            try:
                done.append((fn(item), None))
            except Exception as e:  # raised in its item's turn, after the items before it
                done.append((None, e))
                break
        return done

    todo = iter(items)

    def next_task() -> list[T]:
        task: list[T] = []
        weight = 0
        for item in todo:
            task.append(item)
            weight += weigh(item) if weigh is not None else 1
            if weight >= per_task:
                break
        return task

    with ThreadPoolExecutor(max_workers=threads) as pool:
        window: deque[tuple[list[T], Future[list[tuple[R | None, Exception | None]]]]] = deque()
        while True:
            task = next_task()
            if task:
                window.append((task, pool.submit(each, task)))
            if window and (not task or len(window) > 2 * threads):
                head, fut = window.popleft()
                # (a task's results end at its first error)
                for item, (result, error) in zip(head, fut.result(), strict=False):
                    if error is not None:
                        raise error
                    yield item, cast(R, result)
            elif not task:
                return
