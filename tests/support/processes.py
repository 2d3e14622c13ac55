"""Processes in tests: the one crash runner (a forked ``klogtool`` that the crash harness
kills after N file operations) and a holder of a log dir's lock, as a running broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from klogtool.log.atomic import CRASH_ENV
from support.cli import run


def run_crashing(args: Sequence[str], cwd: Path, crash_after: int | None) -> int:
    """``klogtool ARGS`` in a forked child (cheap: everything is imported), killed by the
    crash harness after ``crash_after`` file operations. Returns the child's exit status
    (negative: killed by that signal)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child
        code = 99
        try:
            if crash_after is None:
                os.environ.pop(CRASH_ENV, None)
            else:
                os.environ[CRASH_ENV] = str(crash_after)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            code, _out, _err = run(*args, cwd=cwd)
        finally:
            os._exit(code)
    deadline = time.monotonic() + 300
    while True:  # a child that hangs fails the test instead of the whole run
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"klogtool {' '.join(args)} hung in the forked child")
        time.sleep(0.01)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


KILLED = -signal.SIGKILL  # run_crashing's status when the harness killed the child


@contextmanager
def lock_held_by_another_process(log_dir: Path) -> Iterator[None]:
    """Another process holds ``log_dir/.lock`` with an fcntl lock, as a running broker does."""
    lock = log_dir / ".lock"
    lock.touch()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, time\n"
            f"fd = os.open({str(lock)!r}, os.O_RDWR)\n"
            "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()
