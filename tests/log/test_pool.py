"""klogtool.log.pool.spooled: item order, flat spooling and errors in their turn."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from klogtool.formats import engine
from klogtool.log import pool
from klogtool.log.context import ReadContext


def _count(n: int, times: int = 3) -> Iterator[tuple[int, int]]:
    if n == 13:
        raise ValueError("unlucky item")
    for i in range(times):
        yield n, i


def _items(n: int, fail_at: int | None = None) -> Iterator[int]:
    for i in range(n):
        if i == fail_at:
            raise KeyError("no such item")
        yield i


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_output_keeps_item_order(jobs: int) -> None:
    work = partial(_count, times=50)
    got = list(pool.spooled(ReadContext.of(), work, range(9), jobs))
    assert got == [(n, i) for n in range(9) for i in range(50)]
    assert list(pool.spooled(ReadContext.of(), work, [4], jobs)) == [(4, i) for i in range(50)]
    assert list(pool.spooled(ReadContext.of(), work, [], jobs)) == []


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("fail_at", [0, 1, 5])
def test_an_item_error_comes_after_what_precedes_it(jobs: int, fail_at: int) -> None:
    got: list[tuple[int, int]] = []
    with pytest.raises(KeyError, match="no such item"):
        for obj in pool.spooled(ReadContext.of(), _count, _items(9, fail_at), jobs):
            got.append(obj)
    assert got == [(n, i) for n in range(fail_at) for i in range(3)]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_worker_error_is_raised_in_its_turn(jobs: int) -> None:
    got: list[tuple[int, int]] = []
    with pytest.raises(ValueError, match="unlucky"):
        for obj in pool.spooled(ReadContext.of(), _count, range(10, 20), jobs):
            got.append(obj)
    assert got == [(n, i) for n in range(10, 13) for i in range(3)]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("per_task", [1, 4])
def test_threaded_keeps_order_and_raises_in_turn(threads: int, per_task: int) -> None:
    import random
    import time

    from klogtool.log.pool import threaded

    rng = random.Random(threads * 10 + per_task)
    delays = [rng.random() / 500 for _ in range(60)]

    def slow_square(i: int) -> int:
        time.sleep(delays[i])
        if i == 45:
            raise ValueError("item 45")
        return i * i

    got = []
    with pytest.raises(ValueError, match="item 45"):
        for item, result in threaded(slow_square, range(60), threads, per_task=per_task):
            got.append((item, result))
    assert got == [(i, i * i) for i in range(45)]


def _engine_and_mark() -> tuple[str, object]:
    return engine.name(), _MARK


_MARK: object = None


def _set_mark(value: object) -> None:
    global _MARK
    _MARK = value


@pytest.mark.parametrize("name", [engine.PYTHON, engine.NATIVE])
def test_workers_run_the_parents_engine_then_their_initializer(name: str) -> None:
    if name == engine.NATIVE and not engine.native_available():
        pytest.skip("the native engine is not built")
    with (
        engine.using(name),
        pool.processes(ReadContext.of(), 1, _set_mark, ("started",)) as workers,
    ):
        assert workers.submit(_engine_and_mark).result() == (name, "started")


def test_every_process_pool_comes_from_the_one_factory() -> None:
    """A pool made elsewhere would run whatever engine its workers start with."""
    package = Path(pool.__file__).resolve().parent.parent
    makers = [
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if "ProcessPoolExecutor(" in p.read_text()
    ]
    assert makers == ["log/pool.py"]
