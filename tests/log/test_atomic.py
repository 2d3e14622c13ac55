"""The write protocol survives a SIGKILL after any file operation (docs/kafka-rules.md: Loading and
recovery)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.processes import lock_held_by_another_process

from klogtool.errors import RefusedError
from klogtool.formats.batch import Record
from klogtool.formats.v2 import encode_batch
from klogtool.log.atomic import (
    CRASH_ENV,
    FileOps,
    NewSegment,
    complete_interrupted,
    log_dir_lock,
    replace_segments,
)

OLD = {0: [0, 1, 2], 3: [3, 4], 5: [5, 6, 7]}  # base offset -> record offsets
NEW = {0: [0, 2, 4, 7]}  # one compacted segment replacing all three


def _segment(offsets: list[int], tag: bytes) -> bytes:
    recs = [Record(o, 1000 + o, b"k%d" % o, tag) for o in offsets]
    return encode_batch(recs)


def _setup(part: Path) -> None:
    part.mkdir(parents=True)
    for base, offsets in OLD.items():
        (part / f"{base:020d}.log").write_bytes(_segment(offsets, b"old"))
        (part / f"{base:020d}.index").write_bytes(b"")


SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from klogtool.formats.batch import Record
    from klogtool.formats.v2 import encode_batch
    from klogtool.log.atomic import FileOps, NewSegment, replace_segments
    part = Path(sys.argv[1])
    recs = [Record(o, 1000 + o, b"k%d" % o, b"new") for o in (0, 2, 4, 7)]
    new = [NewSegment(0, {".log": [encode_batch(recs)], ".index": [b""]})]
    ops = FileOps()
    replace_segments(ops, part, new, [0, 3, 5])
    print(ops.count)
    """
)


def _contents(part: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(part.iterdir())}


def _run(part: Path, crash_after: int | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop(CRASH_ENV, None)
    if crash_after is not None:
        env[CRASH_ENV] = str(crash_after)
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, str(part)], env=env, capture_output=True, text=True
    )


def test_replace_segments_is_crash_safe_at_every_operation(tmp_path: Path) -> None:
    clean = tmp_path / "clean" / "t-0"
    _setup(clean)
    old_state = _contents(clean)
    r = _run(clean, None)
    assert r.returncode == 0, r.stderr
    total_ops = int(r.stdout)
    new_state = _contents(clean)
    assert set(new_state) == {"00000000000000000000.log", "00000000000000000000.index"}
    assert total_ops > 8
    outcomes = set()
    for n in range(1, total_ops + 1):
        part = tmp_path / f"crash{n}" / "t-0"
        _setup(part)
        r = _run(part, n)
        assert r.returncode == -9, (n, r.returncode, r.stderr)  # killed by SIGKILL
        complete_interrupted(FileOps(), part)
        state = _contents(part)
        # Either the old segments intact or the new one complete; an index deleted by the
        # loader's rule is rebuilt by recovery, so compare the logs.
        logs = {k: v for k, v in state.items() if k.endswith(".log")}
        if logs == {k: v for k, v in old_state.items() if k.endswith(".log")}:
            outcomes.add("old")
        elif logs == {k: v for k, v in new_state.items() if k.endswith(".log")}:
            outcomes.add("new")
        else:
            pytest.fail(f"crash after op {n} left a mixed directory: {sorted(state)}")
        assert not [k for k in state if k.endswith((".cleaned", ".swap", ".deleted"))]
    assert outcomes == {"old", "new"}


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    _setup(part)
    before = _contents(part)
    ops = FileOps(dry_run=True)
    target = part / "00000000000000000000.index"
    ops.replace_file(target, [b"x" * 8])
    assert _contents(part) == before
    assert any("rename" in line for line in ops.log)


def test_replace_file_leaves_old_or_new(tmp_path: Path) -> None:
    target = tmp_path / "00000000000000000000.index"
    target.write_bytes(b"old")
    (tmp_path / (target.name + ".cleaned")).write_bytes(b"stale junk from a crash")
    FileOps().replace_file(target, [b"new contents"])
    assert target.read_bytes() == b"new contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]


def test_broker_lock_held_by_another_process_is_refused(tmp_path: Path) -> None:
    with lock_held_by_another_process(tmp_path):
        with pytest.raises(RefusedError) as exc, log_dir_lock(tmp_path):
            pass
        assert exc.value.exit_code == 4 and exc.value.code == "broker-lock-held"
        with log_dir_lock(tmp_path, force=True):
            pass  # --force goes ahead
    with log_dir_lock(tmp_path):
        pass  # free again once the holder is gone


def test_dry_run_does_not_create_a_lock_file(tmp_path: Path) -> None:
    with log_dir_lock(tmp_path, dry_run=True):
        pass
    assert not (tmp_path / ".lock").exists()


def test_a_symlinked_lock_file_is_refused_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    (logdir / ".lock").symlink_to(target)
    with pytest.raises(RefusedError) as exc, log_dir_lock(logdir):
        pass
    assert exc.value.code == "lock-unavailable"
    assert not target.exists()


# -- security review (issue 11): no write through a link, errors name the file ---------------


def _victim(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    victim = outside / "victim"
    victim.write_bytes(b"precious " * 100)
    return victim


def test_every_write_refuses_a_link_in_place_of_the_file(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    part = tmp_path / "part"
    part.mkdir()
    link = part / "00000000000000000000.log"
    link.symlink_to(victim)
    ops = FileOps()
    with pytest.raises(RefusedError):
        ops.truncate(link, 3)
    with pytest.raises(RefusedError):
        ops.set_mtime(link, 0)
    with pytest.raises(RefusedError):
        ops.copy_range(link, 0, 5, part / "copy")
    with pytest.raises(RefusedError):
        ops.rename(link, part / "moved")
    with pytest.raises(OSError):
        ops.write(link, [b"x"])  # O_EXCL | O_NOFOLLOW: never created through the link
    assert victim.read_bytes() == b"precious " * 100
    assert not (part / "copy").exists()
    ops.unlink(link)  # removed as a link
    assert not os.path.lexists(link) and victim.read_bytes() == b"precious " * 100


def test_truncate_refuses_a_file_swapped_since_the_plan(tmp_path: Path) -> None:
    from klogtool.log.atomic import identity

    part = tmp_path / "part"
    part.mkdir()
    log = part / "00000000000000000000.log"
    log.write_bytes(b"a" * 100)
    planned = identity(log)
    other = part / "other"
    other.write_bytes(b"b" * 100)
    os.replace(other, log)  # the segment swapped for another file after planning
    with pytest.raises(RefusedError, match="not the file that was planned"):
        FileOps().truncate(log, 10, expect=planned)
    assert log.read_bytes() == b"b" * 100


def test_a_dangling_cleaned_link_is_removed_not_blocking(tmp_path: Path) -> None:
    victim_dir = tmp_path / "outside"
    victim_dir.mkdir()
    part = tmp_path / "part"
    part.mkdir()
    target = part / "leader-epoch-checkpoint"
    target.write_bytes(b"0\n0\n")
    (part / "leader-epoch-checkpoint.cleaned").symlink_to(victim_dir / "created-by-link")
    FileOps().replace_file(target, [b"0\n1\n0 0\n"])
    assert target.read_bytes() == b"0\n1\n0 0\n"
    assert not os.path.lexists(part / "leader-epoch-checkpoint.cleaned")
    assert list(victim_dir.iterdir()) == []
    # complete_interrupted removes leftover links as links too
    _setup(tmp_path / "p2")
    (tmp_path / "p2" / "00000000000000000000.log.cleaned").symlink_to(victim_dir / "nothing")
    (tmp_path / "p2" / "00000000000000000003.log.swap").symlink_to(victim_dir / "nothing")
    done = complete_interrupted(FileOps(), tmp_path / "p2")
    assert len(done) == 2 and list(victim_dir.iterdir()) == []
    assert not [p for p in (tmp_path / "p2").iterdir() if p.is_symlink()]


def test_remove_tree_never_follows_links(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "f").write_bytes(b"x")
    (tree / "link-to-dir").symlink_to(victim.parent, target_is_directory=True)
    (tree / "sub" / "link-to-file").symlink_to(victim)
    FileOps().remove_tree(tree)
    assert not tree.exists() and victim.read_bytes() == b"precious " * 100
    linked = tmp_path / "linked-tree"
    linked.symlink_to(victim.parent, target_is_directory=True)
    with pytest.raises(RefusedError):
        FileOps().remove_tree(linked)
    assert victim.read_bytes() == b"precious " * 100


def test_a_full_disk_names_the_file_and_leaves_no_partial_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    part = tmp_path / "part"
    part.mkdir()
    target = part / "00000000000000000000.index"
    target.write_bytes(b"old")
    ops = FileOps()
    ops.write(part / "00000000000000000000.log.cleaned", [b"first of the run"])
    real_write = os.write

    def full(fd: int, data: object) -> int:
        real_write(fd, b"ha")  # part of the data made it before the disk filled
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError) as e:
        ops.replace_file(target, [b"new contents"])
    monkeypatch.setattr(os, "write", real_write)
    assert e.value.filename == str(part / "00000000000000000000.index.cleaned")
    assert e.value.errno == errno.ENOSPC
    assert not (part / "00000000000000000000.index.cleaned").exists()
    assert target.read_bytes() == b"old"
    assert ops.discard_partial() == [part / "00000000000000000000.log.cleaned"]
    assert sorted(p.name for p in part.iterdir()) == ["00000000000000000000.index"]


def test_a_full_disk_in_a_writing_session_removes_its_cleaned_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from klogtool.log.writing import writing_session

    part = tmp_path / "logdir" / "t-0"
    _setup(part)
    before = _contents(part)
    real_write = os.write
    calls = []

    def full(fd: int, data: object) -> int:
        calls.append(1)
        if len(calls) > 1:
            raise OSError(errno.EFBIG, "File too large")
        return real_write(fd, data)  # type: ignore[arg-type]

    with pytest.raises(OSError) as e:
        with writing_session([part], force=False, dry_run=False) as s:
            monkeypatch.setattr(os, "write", full)
            s.ops.write(part / "00000000000000000000.log.cleaned", [b"one"])
            s.ops.write(part / "00000000000000000000.index.cleaned", [b"two"])
    monkeypatch.setattr(os, "write", real_write)
    assert e.value.filename == str(part / "00000000000000000000.index.cleaned")
    assert _contents(part) == before


def test_a_lock_file_klogtool_created_is_removed_and_a_brokers_is_kept(tmp_path: Path) -> None:
    with log_dir_lock(tmp_path):
        assert (tmp_path / ".lock").exists()  # held while klogtool works
    assert not (tmp_path / ".lock").exists()  # the broker had none: none is left (issue 10)
    (tmp_path / ".lock").write_bytes(b"")
    with log_dir_lock(tmp_path):
        pass
    assert (tmp_path / ".lock").exists()


@pytest.fixture
def sigint_handled() -> Iterator[None]:
    """SIGINT raising KeyboardInterrupt, as on a terminal (a background job, as CI's second
    run is, starts with it ignored, and a Ctrl-C never arrives)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_during_the_swap_finishes_it_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sigint_handled: None
) -> None:
    """Ctrl-C between the renames to .swap and the deletion of the originals: the swap
    completes (no .swap file, the new segment in place), then KeyboardInterrupt (it left .swap
    files and deleted originals, exit 130)."""
    part = tmp_path / "t-0"
    _setup(part)
    ops = FileOps()
    rename = ops.rename

    def interrupted_rename(src: Path, dst: Path) -> None:
        rename(src, dst)
        if dst.name.endswith(".swap"):
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(ops, "rename", interrupted_rename)
    recs = [Record(o, 1000 + o, b"k%d" % o, b"new") for o in (0, 2, 4, 7)]
    new = [NewSegment(0, {".log": [encode_batch(recs)], ".index": [b""]})]
    with pytest.raises(KeyboardInterrupt):
        replace_segments(ops, part, new, [0, 3, 5])
    assert sorted(_contents(part)) == ["00000000000000000000.index", "00000000000000000000.log"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
