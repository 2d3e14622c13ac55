"""Work spread over processes whose output keeps its input order, with flat memory.

:func:`spooled` runs a generator function over items in a process pool. Each worker pickles
what its item yields into a temporary file; the caller reads the files back in item order, so
the output is the same as with one process, and neither side holds more than one object of a
result in memory. At most ``2 * jobs`` items run ahead of the one being read.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import tempfile
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from klogtool.formats import engine

T = TypeVar("T")


def fork_context() -> Any:
    """fork where there is one: workers start in milliseconds and inherit what is loaded."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def spooled(
    fn: Callable[[T], Iterator[Any]], items: Sequence[T], jobs: int, *, prefix: str = "klogtool-"
) -> Iterator[Any]:
    """Everything ``fn(item)`` yields, item after item, computed by ``jobs`` processes (in this
    one when ``jobs`` is 1 or there is one item). ``fn`` must be picklable (a module-level
    function, or a ``functools.partial`` of one). A worker's exception is raised here when its
    item's turn comes."""
    if jobs <= 1 or len(items) <= 1:
        for item in items:
            yield from fn(item)
        return
    with (
        tempfile.TemporaryDirectory(prefix=prefix) as spool,
        ProcessPoolExecutor(
            max_workers=min(jobs, len(items)),
            mp_context=fork_context(),
            initializer=engine.use,
            initargs=(engine.name(),),
        ) as pool,
    ):
        queue: deque[Future[str]] = deque()
        todo = iter(enumerate(items))

        def submit() -> None:
            nxt = next(todo, None)
            if nxt is not None:
                i, item = nxt
                queue.append(pool.submit(_spool, fn, item, os.path.join(spool, f"{i:08d}")))

        for _ in range(2 * jobs):
            submit()
        try:
            while queue:
                path = queue.popleft().result()
                submit()
                with open(path, "rb") as f:
                    while True:
                        try:
                            obj = pickle.load(f)
                        except EOFError:
                            break
                        yield obj
                os.unlink(path)
        finally:
            for fut in queue:
                fut.cancel()


def _spool(fn: Callable[[Any], Iterator[Any]], item: Any, path: str) -> str:
    with open(path, "wb") as f:
        for obj in fn(item):
            pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
    return path
