"""How a Ctrl-C ends klogtool, wherever it lands: recognised (:func:`by_interrupt`) and said
once (:func:`say_interrupted`). Loaded before anything else (klogtool/_entry.py), so it imports
nothing of klogtool until an interrupt is said."""

import sys


def by_interrupt(e: BaseException) -> bool:
    """Whether `e` came of a Ctrl-C: Python 3.11 wraps a KeyboardInterrupt raised while a class
    is made (`__set_name__`, a lazily imported module) in a RuntimeError, and an error raised
    while the interrupt unwinds carries it as its context."""
    seen: set[int] = set()
    at: BaseException | None = e
    while at is not None and id(at) not in seen:
        if isinstance(at, KeyboardInterrupt):
            return True
        seen.add(id(at))
        at = at.__cause__ or at.__context__
    return False


_said: list[bool] = []


def say_interrupted() -> None:
    """The one line a Ctrl-C ends with, once (none where stderr is closed)."""
    from klogtool.errors import INTERRUPTED  # only now: nothing loads before main's try

    if _said:
        return
    _said.append(True)
    try:
        sys.stderr.write(INTERRUPTED)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
