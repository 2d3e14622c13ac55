"""Changing a log without ever leaving it half-written (docs/kafka-rules.md: Loading and recovery,
Compaction).

Every write goes through :class:`FileOps`, which counts operations so that the crash harness can
kill the process after the N-th one (``KLOGTOOL_CRASH_AFTER_OPS=N``) and prove that a re-run,
or the broker, completes the change. The protocols use the broker's own temporary suffixes, so
that a broker that starts after a crash cleans up exactly as it does after its own crashes:

* one file (an index, a checkpoint): write ``<name>.cleaned``, fsync, rename over ``<name>``,
  fsync the directory. A crash leaves either the old file or the new one, plus at most a
  ``.cleaned`` file that the broker (and :func:`complete_interrupted`) deletes.
* a group of segments (compaction, conversion): write every new file as ``.cleaned``, fsync,
  rename them to ``.swap`` from the highest offset down, fsync the directory, delete the
  replaced files, then strip ``.swap``. :func:`complete_interrupted` finishes or rolls back any
  state in between exactly as the broker's LogLoader does.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from klogtool.codes import Code
from klogtool.errors import InputError, RefusedError
from klogtool.log import layout, storage

CRASH_ENV = "KLOGTOOL_CRASH_AFTER_OPS"
LOCK_FILE = ".lock"
CLEANED = ".cleaned"
SWAP = ".swap"
DELETED = ".deleted"


NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
Identity = tuple[int, int]  # (st_dev, st_ino) of a file as planned


def identity(path: Path) -> Identity:
    """(device, inode) of ``path`` itself (a link is not followed)."""
    st = os.lstat(path)
    return (st.st_dev, st.st_ino)


def _named(e: OSError, path: Path) -> OSError:
    """The same error, naming the file (``error: : No space left on device`` named none)."""
    if e.filename:
        return e
    err = OSError(e.errno, e.strerror or str(e), str(path))
    return err


def open_dir(path: Path) -> int:
    """An fd of directory ``path``, refusing a link in its place (ELOOP/ENOTDIR)."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW)


@contextmanager
def _in_dir(path: Path) -> Iterator[tuple[int, str]]:
    """(fd of ``path``'s directory, ``path``'s name): operations relative to the directory
    fd act on the entry in the directory that was opened, never through a link."""
    try:
        fd = open_dir(path.parent)
    except OSError as e:
        raise _named(e, path.parent) from None
    try:
        yield fd, path.name
    finally:
        os.close(fd)


def open_nofollow(
    path: Path,
    flags: int,
    expect: Identity | None = None,
    mode: int = 0o644,
    *,
    in_dir: bool = True,
) -> int:
    """Open ``path`` without following a link in its place (and, with ``in_dir``, relative
    to its directory opened without following a link either); with ``expect``, refuse a
    file that is not the one planned (another device/inode: it was swapped since)."""
    try:
        if in_dir:
            with _in_dir(path) as (dfd, name):
                fd = os.open(name, flags | NOFOLLOW, mode, dir_fd=dfd)
        else:
            fd = os.open(path, flags | NOFOLLOW, mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise RefusedError(
                "is a symlink: klogtool does not write through links, nor copy from them",
                path=str(path),
                code=Code.SYMLINK,
            ) from None
        raise _named(e, path) from None
    st = os.fstat(fd)
    if expect is not None and (st.st_dev, st.st_ino) != expect:
        os.close(fd)
        raise RefusedError(
            "is not the file that was planned (replaced since): not touching it",
            path=str(path),
            code=Code.FILE_REPLACED,
        )
    return fd


def _template(path: Path, like: Path | None) -> os.stat_result | None:
    """What ``path`` takes its owner, group and mode from: ``like``; else the file it replaces
    (its name without ``.cleaned``/``.swap``); else a file of the same kind beside it (a new
    segment's: another segment's); else a segment (a first index where none was: the broker
    creates every file of a partition alike); else its directory (less its execute bits)."""
    name = path.name
    for suffix in (CLEANED, SWAP):
        name = name.removesuffix(suffix)
    kind = os.path.splitext(name)[1] or name
    candidates = [like] if like is not None else []
    if name != path.name:
        candidates.append(path.with_name(name))
    if like is None and not os.path.lexists(path.with_name(name)):
        # the first file of its kind the directory lists (not a sorted listing: a partition
        # may hold tens of thousands of files, and a conversion writes each of them)
        for suffix in dict.fromkeys((kind, ".log")):
            try:
                with os.scandir(path.parent) as entries:
                    found = next(
                        (e.path for e in entries if e.name.endswith(suffix) and e.name != name),
                        None,
                    )
            except OSError:
                found = None
            if found is not None:
                candidates.append(Path(found))
                break
    for c in candidates:
        try:
            st = os.lstat(c)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) or (c == like and stat.S_ISDIR(st.st_mode)):
            return st
    try:
        return os.lstat(path.parent)
    except OSError:
        return None


def adopt(fd: int, path: Path, like: Path | None = None) -> None:
    """Give the new file (or directory) open as ``fd`` at ``path`` the owner, group and mode
    of the file it replaces or stands beside (:func:`_template`), before it is renamed into
    place: run as root on the broker's files, klogtool leaves them the broker user's (a
    ``root:root 0644`` segment cannot be appended to by the broker, and exposes the data).
    Where ownership cannot be given (not root), the file stays the running user's."""
    st = _template(path, like)
    if st is None:
        return
    is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISDIR(st.st_mode) and not is_dir:
        mode &= 0o666  # a file beside nothing like it: the directory's permissions, no execute
    os.fchmod(fd, mode)
    with suppress(PermissionError):
        os.fchown(fd, st.st_uid, st.st_gid)


class FileOps:
    """Every mutating file-system call klogtool makes, counted for crash testing.

    ``dry_run`` records the plan (``self.log``) and changes nothing. Every call acts on the
    directory entry itself: files are opened ``O_NOFOLLOW`` relative to their directory's fd
    (itself opened ``O_NOFOLLOW``), created ``O_EXCL``; a link where a file is expected is
    refused, never followed. Errors name the file. The ``.cleaned`` temporaries this run
    created and did not rename yet are tracked, so that :meth:`discard_partial` can remove
    them when the run fails (a full disk must not keep a half-written copy).
    """

    def __init__(self, *, dry_run: bool = False):
        self.dry_run = dry_run
        self.count = 0
        crash = os.environ.get(CRASH_ENV)
        self.crash_after = int(crash) if crash and crash.isdigit() else None
        self.log: list[str] = []
        self.partial: list[Path] = []  # temporaries of this run, not yet renamed

    def _step(self, what: str) -> bool:
        """Record one operation; False in dry-run mode (the caller then does nothing, and
        ``count`` counts what a real run would do)."""
        self.log.append(what)
        if self.dry_run:
            self.count += 1
            return False
        return True

    def _done(self) -> None:
        self.count += 1
        if self.crash_after is not None and self.count >= self.crash_after:
            os.kill(os.getpid(), signal.SIGKILL)  # the crash harness: die like a power cut

    def write(
        self, path: Path, chunks: Iterable[bytes | memoryview], like: Path | None = None
    ) -> int:
        """Create ``path`` (must not exist) with ``chunks``, fsynced, with the owner, group and
        mode of ``like`` or of the file it replaces (:func:`adopt`). Returns bytes written.
        On an error (a full disk) the half-written file is removed and the error names it."""
        if not self._step(f"write {path}"):
            return sum(len(c) for c in chunks)
        n = 0
        fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode=0o600)
        if path.name.endswith(CLEANED):
            self.partial.append(path)
        try:
            adopt(fd, path, like)
            for c in chunks:
                view = memoryview(c)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                    n += written
            os.fsync(fd)
        except OSError as e:
            os.close(fd)
            self._discard(path)
            raise _named(e, path) from None
        except BaseException:
            os.close(fd)
            self._discard(path)
            raise
        os.close(fd)
        self._done()
        return n

    def _discard(self, path: Path) -> None:
        with suppress(OSError), _in_dir(path) as (dfd, name):
            os.unlink(name, dir_fd=dfd)
        if path in self.partial:
            self.partial.remove(path)

    def discard_partial(self) -> list[Path]:
        """Remove the ``.cleaned`` temporaries this run wrote and did not rename (called when
        the run fails); returns them. Never anything renamed into place."""
        gone = list(self.partial)
        for path in gone:
            self._discard(path)
        return gone

    def copy_range(
        self, src: Path, start: int, end: int, dst: Path, expect: Identity | None = None
    ) -> int:
        """Write bytes ``[start, end)`` of ``src`` to a new file ``dst``, fsynced. ``src`` is
        opened once, not through a link (and checked against ``expect``)."""
        if self.dry_run:
            self._step(f"copy {src}[{start}:{end}] -> {dst}")
            return end - start
        # read: the file itself is not a link (and is the one planned); the directories
        # above it may be (an operator may name a log dir through a link)
        fd = open_nofollow(src, os.O_RDONLY, expect, in_dir=False)
        try:
            return self.write(dst, _read_fd(fd, start, end), like=src)
        finally:
            os.close(fd)

    def rename(self, src: Path, dst: Path) -> None:
        """Rename the entry ``src`` (a file, never a link: a link is refused) to ``dst``."""
        if not self._step(f"rename {src} -> {dst}"):
            return
        with _in_dir(src) as (sfd, sname), _in_dir(dst) as (dfd, dname):
            try:
                st = os.lstat(sname, dir_fd=sfd)
                if stat.S_ISLNK(st.st_mode):
                    raise RefusedError(
                        "is a symlink: klogtool does not move links",
                        path=str(src),
                        code=Code.SYMLINK,
                    )
                os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
            except OSError as e:
                raise _named(e, src) from None
        if src in self.partial:
            self.partial.remove(src)
        self._done()

    def unlink(self, path: Path) -> None:
        """Remove the entry ``path`` (a link is removed as a link, never followed)."""
        if not self._step(f"delete {path}"):
            return
        with _in_dir(path) as (dfd, name):
            try:
                os.unlink(name, dir_fd=dfd)
            except FileNotFoundError:
                pass
            except OSError as e:
                raise _named(e, path) from None
        if path in self.partial:
            self.partial.remove(path)
        self._done()

    def truncate(self, path: Path, size: int, expect: Identity | None = None) -> None:
        """Cut ``path`` to ``size`` bytes. A file with other hard links (a backup made with
        ``cp -l``, a snapshot tool's) is not cut in place, which would cut every name of it:
        its first ``size`` bytes are copied to a new file renamed over this name."""
        if not self._step(f"truncate {path} to {size} bytes"):
            return
        fd = open_nofollow(path, os.O_WRONLY, expect)
        try:
            linked = os.fstat(fd).st_nlink > 1
            if not linked:
                os.ftruncate(fd, size)
                os.fsync(fd)
        except OSError as e:
            raise _named(e, path) from None
        finally:
            os.close(fd)
        if linked:
            self.replace_file(path, read_range(path, 0, size, expect))
            return
        self._done()

    def set_mtime(self, path: Path, mtime_ns: int) -> None:
        """Give ``path`` a modification time (the cleaner keeps the source segment's, which
        time retention falls back to)."""
        if not self._step(f"set mtime of {path}"):
            return
        fd = open_nofollow(path, os.O_RDONLY)
        try:
            os.utime(fd, ns=(mtime_ns, mtime_ns))
        except OSError as e:
            raise _named(e, path) from None
        finally:
            os.close(fd)
        self._done()

    def mkdir(self, path: Path) -> None:
        """Create directory ``path`` (and missing parents); an existing link in its place is
        refused."""
        if not os.path.lexists(path.parent):
            self.mkdir(path.parent)  # each one the broker user's too
        if not self._step(f"mkdir {path}"):
            return
        with _in_dir(path) as (dfd, name):
            try:
                os.mkdir(name, 0o700, dir_fd=dfd)
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW, dir_fd=dfd)
                try:  # the broker's user owns it, as it does the directory above
                    adopt(fd, path, path.parent)
                finally:
                    os.close(fd)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(name, dir_fd=dfd).st_mode):
                    raise RefusedError(
                        "exists and is not a plain directory (a link?): not using it",
                        path=str(path),
                        code=Code.SYMLINK,
                    ) from None
            except OSError as e:
                raise _named(e, path) from None
        self._done()

    def rmdir(self, path: Path) -> None:
        if not self._step(f"rmdir {path}"):
            return
        with _in_dir(path) as (dfd, name):
            try:
                os.rmdir(name, dir_fd=dfd)
            except FileNotFoundError:
                pass
            except OSError as e:
                raise _named(e, path) from None
        self._done()

    def remove_tree(self, path: Path) -> None:
        """Remove directory ``path`` and everything in it without following any link: the
        directory is opened ``O_NOFOLLOW`` and walked through fds, a link inside is unlinked
        as a link. A link in the place of ``path`` itself is refused."""
        if not self._step(f"remove tree {path}"):
            return
        with _in_dir(path) as (pfd, name):
            try:
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW, dir_fd=pfd)
            except FileNotFoundError:
                return
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise RefusedError(
                        "is not a plain directory (a link?): not removing through it",
                        path=str(path),
                        code=Code.SYMLINK,
                    ) from None
                raise _named(e, path) from None
            try:
                self._empty_dir(fd, path)
            finally:
                os.close(fd)
            try:
                os.rmdir(name, dir_fd=pfd)
            except OSError as e:
                raise _named(e, path) from None
        self._done()

    def _empty_dir(self, fd: int, path: Path) -> None:
        for entry in list(os.scandir(fd)):
            if entry.is_dir(follow_symlinks=False):
                sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW, dir_fd=fd)
                try:
                    self._empty_dir(sub, path / entry.name)
                finally:
                    os.close(sub)
                os.rmdir(entry.name, dir_fd=fd)
            else:
                os.unlink(entry.name, dir_fd=fd)
            self._done()

    def fsync_dir(self, path: Path) -> None:
        if self.dry_run:
            self.count += 1  # one of the real run's operations
            return
        try:
            fd = open_dir(path)
        except OSError as e:
            raise _named(e, path) from None
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._done()

    # -- protocols -------------------------------------------------------------------------------
    def replace_file(self, target: Path, chunks: Iterable[bytes | memoryview]) -> int:
        """Atomically give ``target`` new contents (``.cleaned`` then rename over)."""
        temp = target.with_name(target.name + CLEANED)
        if os.path.lexists(temp) and not self.dry_run:
            self.unlink(temp)  # left by an earlier crash (a link too): never trust it
        n = self.write(temp, chunks)
        self.rename(temp, target)
        self.fsync_dir(target.parent)
        return n


def _read_fd(fd: int, start: int, end: int) -> Iterator[bytes]:
    left = end - start
    pos = start
    while left > 0:
        block = os.pread(fd, min(left, 1 << 20), pos)
        if not block:
            return
        left -= len(block)
        pos += len(block)
        yield block


def read_range(path: Path, start: int, end: int, expect: Identity | None = None) -> Iterator[bytes]:
    """Bytes ``[start, end)`` of a file, in 1 MiB blocks (flat memory for any size); the file
    is opened without following a link."""
    fd = open_nofollow(path, os.O_RDONLY, expect, in_dir=False)
    try:
        yield from _read_fd(fd, start, end)
    finally:
        os.close(fd)


@dataclass
class NewSegment:
    """The files of one segment to be swapped in: suffix (".log", ".index", ...) -> bytes."""

    base_offset: int
    files: dict[str, Iterable[bytes | memoryview]] = field(default_factory=dict)
    mtime_ns: int | None = None  # given to the .log once written (None: the current time)


def replace_segments(
    ops: FileOps, part_dir: Path, new: list[NewSegment], old_bases: list[int]
) -> None:
    """Swap ``new`` segments in for the segments at ``old_bases`` (the cleaner's protocol)."""
    written: list[Path] = []
    for seg in new:
        for suffix, chunks in seg.files.items():
            path = part_dir / (layout.segment_name(seg.base_offset, suffix) + CLEANED)
            if os.path.lexists(path) and not ops.dry_run:
                ops.unlink(path)  # a leftover (a link too): removed, never followed
            ops.write(path, chunks)
            if suffix == ".log" and seg.mtime_ns is not None:
                ops.set_mtime(path, seg.mtime_ns)
            written.append(path)
    swap_in_cleaned(ops, part_dir, written, old_bases)


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Ctrl-C inside waits for the block to end, then raises: a swap once begun is finished
    (a re-run or the broker would complete it anyway, but an operator who sees ``.swap`` files
    and deleted originals thinks the data is lost). Only the main thread receives signals."""
    import threading

    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    pending: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if pending:
        raise KeyboardInterrupt


def swap_in_cleaned(
    ops: FileOps, part_dir: Path, written: list[Path], old_bases: list[int]
) -> None:
    """The second half of :func:`replace_segments`, for callers that wrote the ``.cleaned``
    files themselves (``written``, each ``<segment file name>.cleaned`` in ``part_dir``)."""
    with interrupts_deferred():
        _swap_in(ops, part_dir, written, old_bases)


def _swap_in(ops: FileOps, part_dir: Path, written: list[Path], old_bases: list[int]) -> None:
    ops.fsync_dir(part_dir)
    # Highest offset first: a crash in between leaves .cleaned files below every .swap file,
    # and the loader then deletes those swaps (an incomplete swap), keeping the originals.
    swaps: list[Path] = []
    for path in sorted(written, key=_offset_key, reverse=True):
        swap = path.with_name(path.name[: -len(CLEANED)] + SWAP)
        ops.rename(path, swap)
        swaps.append(swap)
    ops.fsync_dir(part_dir)
    new_names = {p.name[: -len(SWAP)] for p in swaps}
    for base in old_bases:
        for suffix in layout.SEGMENT_SUFFIXES:
            old = part_dir / layout.segment_name(base, suffix)
            if old.exists() and old.name not in new_names:
                ops.unlink(old)
    ops.fsync_dir(part_dir)
    for swap in sorted(swaps, key=_offset_key):
        ops.rename(swap, swap.with_name(swap.name[: -len(SWAP)]))
    ops.fsync_dir(part_dir)


def _offset_key(path: Path) -> tuple[int, str]:
    return (layout.offset_from_name(path) or 0, path.name)


def complete_interrupted(ops: FileOps, part_dir: Path) -> list[str]:
    """Finish or roll back an interrupted swap exactly as the broker's LogLoader does.

    Returns what was done (empty when the directory was clean). docs/kafka-rules.md: Loading and
    recovery steps 1-2:
    delete ``.deleted`` files; delete ``.swap`` files at or above the lowest ``.cleaned``
    offset, then every ``.cleaned`` file; an index ``.swap`` is deleted with the indexes of its
    segment (recovery rebuilds them); for each remaining ``.log.swap``, delete the non-swap
    files whose offsets fall in the swapped range, then strip ``.swap``.
    """
    done: list[str] = []
    children: list[Path] = []
    for p in sorted(part_dir.iterdir()):
        if p.is_symlink():
            # the broker never writes links: a leftover name that is one is removed as a
            # link (never followed); it would otherwise block the next write for good
            if p.name.endswith((CLEANED, SWAP, DELETED)):
                ops.unlink(p)
                done.append(f"deleted leftover link {p.name}")
        elif p.is_file():
            children.append(p)
    cleaned = [p for p in children if p.name.endswith(CLEANED)]
    swaps = [p for p in children if p.name.endswith(SWAP)]
    for p in children:
        if p.name.endswith(DELETED) and not p.name.endswith(".checkpoint" + DELETED):
            ops.unlink(p)
            done.append(f"deleted leftover {p.name}")
    min_cleaned = min((layout.offset_from_name(p) or 0 for p in cleaned), default=None)
    kept_swaps: list[Path] = []
    for p in swaps:
        offset = layout.offset_from_name(p) or 0
        if min_cleaned is not None and offset >= min_cleaned:
            ops.unlink(p)
            done.append(f"deleted incomplete swap {p.name}")
        else:
            kept_swaps.append(p)
    for p in cleaned:
        ops.unlink(p)
        done.append(f"deleted unfinished {p.name}")
    log_swaps: list[Path] = []
    for p in kept_swaps:
        base = p.with_name(p.name[: -len(SWAP)])
        kind = layout.file_kind(base)
        if kind in (layout.INDEX, layout.TIMEINDEX, layout.TXNINDEX):
            _delete_indexes(ops, base, done)
            ops.unlink(p)
            done.append(f"deleted index swap {p.name} (indexes are rebuilt)")
        elif kind == layout.LOG:
            _delete_indexes(ops, base, done)
            log_swaps.append(p)
    if log_swaps:
        from klogtool.formats.records import SegmentScanner
        from klogtool.log.segment import mapped

        lo = min(layout.offset_from_name(p) or 0 for p in log_swaps)
        hi = lo
        for p in log_swaps:
            with mapped(p) as buf:
                result = SegmentScanner(buf, check_crc=False, strict=False).scan()
            end = (result.last_offset + 1) if result.last_offset is not None else None
            hi = max(hi, end if end is not None else (layout.offset_from_name(p) or 0) + 1)
        swap_names = {p.name for p in log_swaps}
        for p in sorted(part_dir.iterdir()):
            if not p.is_file() or p.name in swap_names or p.name.endswith(SWAP):
                continue
            name_offset = layout.offset_from_name(p)
            kind = layout.file_kind(p)
            if (
                name_offset is not None
                and lo <= name_offset < hi
                and kind in layout.SEGMENT_SUFFIXES.values()
            ):
                ops.unlink(p)
                done.append(f"deleted {p.name}, replaced by an interrupted swap")
        for p in sorted(log_swaps, key=_offset_key):
            ops.rename(p, p.with_name(p.name[: -len(SWAP)]))
            done.append(f"completed swap of {p.name}")
    if done:
        ops.fsync_dir(part_dir)
    return done


def _delete_indexes(ops: FileOps, base_file: Path, done: list[str]) -> None:
    stem = base_file.name.split(".", 1)[0]
    for suffix in (".index", ".timeindex", ".txnindex"):
        p = base_file.with_name(stem + suffix)
        if p.exists():
            ops.unlink(p)
            done.append(f"deleted {p.name} (rebuilt after the swap)")


# -- the broker's lock ---------------------------------------------------------------------
def log_dir_of(path: Path) -> Path:
    """The log dir holding ``path`` (a segment file, a partition dir, or a log dir itself).

    The path is made absolute but never resolved: the broker locks the log dir it was
    configured with, so a partition dir named through a symlink belongs to the log dir the
    user's path names, not to wherever the link leads. What a directory is comes from its
    contents (:func:`~klogtool.log.layout.looks_like_partition_dir`): one holding segments is
    a partition dir (its parent is the log dir), whatever stray ``.lock`` or
    ``meta.properties`` it holds; a JBOD log dir named like a partition is a log dir.
    """
    path = storage.as_path(storage.absolute(path))
    if path.is_file():
        path = path.parent
    if path.is_dir() and layout.looks_like_partition_dir(path):
        return path.parent
    if not path.exists() and layout.parse_partition_dir_name(path.name) is not None:
        return path.parent  # a partition dir about to be written
    return path


@contextmanager
def log_dir_lock(
    log_dir: Path, *, force: bool = False, dry_run: bool = False, shared: bool = False
) -> Iterator[bool]:
    """Hold the log dir's ``.lock`` like a broker does (an fcntl lock), or refuse (exit 4).

    A running broker holds this lock exclusively for as long as it runs; klogtool's writers
    take it exclusively too, so two runs cannot interleave. ``shared`` is for a log dir that
    is only read but must stay stable (convert-format's SRC): readers exclude writers, not
    each other. ``force`` skips the refusal (the lock is still taken when free). In
    ``dry_run`` mode the lock is only tested and never refused (a dry run changes nothing:
    planning during an incident, beside the running broker, is allowed), and no ``.lock``
    file is created. A ``.lock`` that klogtool created (the broker had none) is removed again
    when done. Yields whether another process holds the lock (a dry run's warning).
    """
    lock = log_dir / LOCK_FILE
    holder = former_lock_holder(log_dir)
    if holder is not None and not force and not dry_run:
        raise RefusedError(
            f"process {holder} holds a lock on this directory's former .lock (deleted or "
            "replaced while it ran: a running broker keeps its lock on the old file)",
            path=str(lock),
            code=Code.BROKER_LOCK_HELD,
            hint="stop that process first; --force overrides this check at your own risk",
        )
    if dry_run and not os.path.lexists(lock):
        yield holder is not None
        return
    for _attempt in range(3):
        fd, created = _open_lock(lock, create=not dry_run, shared=shared)
        if fd is None:  # a read-only input on a file system where no .lock can be created
            yield False
            return
        try:
            mode = fcntl.LOCK_SH if dry_run or shared else fcntl.LOCK_EX
            held = _try_lock(fd, mode, lock, force=force or dry_run)
            if held and not _same_file(fd, lock):
                continue  # another run removed the .lock we opened: lock the one there now
            try:
                yield not held
            finally:
                if held:
                    _release_lock(fd, lock, created=created)
            return
        finally:
            os.close(fd)
    raise RefusedError(
        "the lock file keeps being replaced (another klogtool run?)",
        path=str(lock),
        code=Code.BROKER_LOCK_HELD,
    )


def lock_holder(log_dir: Path) -> int | None:
    """Another process that holds a POSIX lock on ``log_dir``'s ``.lock`` (a running broker),
    or on its former one (:func:`former_lock_holder`); None where ``/proc/locks`` shows none."""
    try:
        st = os.stat(log_dir / LOCK_FILE)
        locks = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return former_lock_holder(log_dir)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in locks:
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "POSIX" and "->" not in fields:
            if fields[5] == dev and fields[4].isdigit() and int(fields[4]) != os.getpid():
                return int(fields[4])
    return former_lock_holder(log_dir)


def former_lock_holder(log_dir: Path) -> int | None:
    """Another process that holds a POSIX lock on a ``.lock`` of ``log_dir`` that is no longer
    the one there (deleted or replaced while a broker ran: it keeps its lock on the old file,
    and locking the new one would succeed). Found through ``/proc/locks`` and the holder's
    open files (``/proc/PID/fd``: readable as root or as the broker's user); None where
    nothing shows one, or where ``/proc`` cannot tell (not Linux, another user's process
    without root)."""
    try:
        locks = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    name = str(Path(os.path.abspath(log_dir)) / LOCK_FILE)
    try:
        current: Identity | None = identity(Path(name))
    except OSError:
        current = None
    for line in locks:
        fields = line.split()
        if len(fields) < 6 or fields[1] != "POSIX" or "->" in fields:
            continue
        pid = int(fields[4]) if fields[4].isdigit() else -1
        if pid in (-1, os.getpid()):
            continue
        inode = int(fields[5].rsplit(":", 1)[-1])
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            link = f"/proc/{pid}/fd/{fd}"
            try:
                target = os.readlink(link)
                st = os.stat(link)
            except OSError:
                continue
            former = target in (name, name + " (deleted)") and (st.st_dev, st.st_ino) != current
            if former and st.st_ino == inode:
                return pid
    return None


def _open_lock(lock: Path, *, create: bool, shared: bool) -> tuple[int | None, bool]:
    """The lock file's fd (opened without following links) and whether this call created it."""
    existed = os.path.lexists(lock)
    # O_NOFOLLOW: a .lock symlinked elsewhere is refused, never followed (or created).
    flags = (os.O_RDWR | os.O_CREAT if create else os.O_RDONLY) | os.O_NOFOLLOW
    try:
        fd = os.open(lock, flags, 0o644)
        if not existed:  # the broker opens it at its next start: it must stay the broker's
            with suppress(OSError):
                adopt(fd, lock, lock.parent)
        return fd, not existed
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise RefusedError(
                "the lock file is a symbolic link: refused (never followed)",
                path=str(lock),
                code=Code.LOCK_UNAVAILABLE,
            ) from None
        if shared and not existed and e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return None, False  # nobody can create a lock there to write under either
        raise InputError(
            f"cannot open the lock file: {e.strerror}", path=str(lock), code=Code.IO_ERROR
        ) from e


def _try_lock(fd: int, mode: int, lock: Path, *, force: bool) -> bool:
    try:
        fcntl.lockf(fd, mode | fcntl.LOCK_NB)
        return True
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EAGAIN):
            raise InputError(
                f"cannot lock the lock file: {e.strerror}", path=str(lock), code=Code.IO_ERROR
            ) from e
    if force:
        return False
    raise RefusedError(
        "the log directory is locked by another process (a running Kafka broker, "
        "or another klogtool run)",
        path=str(lock),
        code=Code.BROKER_LOCK_HELD,
        hint="stop the broker first; --force overrides this check at your own risk",
    )


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    here = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino)


def _release_lock(fd: int, lock: Path, *, created: bool) -> None:
    # Remove a .lock we created only while holding it exclusively: a shared holder that
    # is still reading keeps it (and with it, writers out).
    if created:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _same_file(fd, lock):
                os.unlink(lock)
        except OSError:
            pass
    fcntl.lockf(fd, fcntl.LOCK_UN)
