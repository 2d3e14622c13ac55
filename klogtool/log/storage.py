"""PATH arguments that are URIs: log dirs, partition dirs and segments in object storage.

``s3://``, ``gs://``, ``abfs://``, ``hdfs://`` (any scheme pyarrow's file systems know) become
a :class:`RemotePath`: a ``pathlib.Path`` whose directory questions are answered from a
listing made once per prefix, and whose bytes come in ranged reads. The rest of the log layer
walks it exactly like a local directory; only opening a file's bytes differs
(:func:`klogtool.log.segment.mapped`). ``file://`` URIs are plain local paths.

Requests are what a user pays for, so: a PATH's prefix is listed once, recursively
(``ListObjectsV2``, a thousand keys a request); a directory outside it is listed once, one
level; small files are one GET; a segment is read in :data:`CHUNK` ranges into a temporary
file (memory stays flat), whole or only the ranges a read touches (``find``'s index seeks).
Transient errors are retried with back-off; credentials come from the file system's standard
chain (environment, profile, instance metadata) and are never shown. Export writes its files
there with pyarrow (:func:`file_system`).
"""

from __future__ import annotations

import bisect
import datetime as _dt
import errno
import fnmatch
import io
import os
import re
import stat as statmod
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PosixPath
from typing import TYPE_CHECKING, Any, BinaryIO

from klogtool.codes import Code
from klogtool.errors import ArgumentError, InputError

if TYPE_CHECKING:
    import pyarrow.fs as pafs

CHUNK = 8 << 20  # bytes a walk's first ranged read of a segment fetches past what it needs
# The largest ranged read: a whole segment is fetched in FETCHERS reads of a quarter of it, up
# to this, and a walk that goes on reading doubles what it fetches ahead up to FETCHERS of
# them. Fewer, larger requests: a server that reads the whole object for every range (moto)
# pays per request; S3's own guidance is byte-range GETs in parallel (docs/storage.md). Memory:
# FETCHERS x PIECE at most in flight.
PIECE = 32 << 20
FETCHERS = 4  # ranged reads in flight while a whole segment or a walk's window is fetched
RETRIES = 4  # attempts of a ranged read after the file system's own retries gave up
BACKOFF = 0.25  # seconds before the first retry; doubled each time
SDK_ATTEMPTS = 3  # attempts of each request by the S3 SDK itself (its standard strategy)
TIMEOUT = 10.0  # seconds to connect, and that a request may move no byte (a stall)

_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# user info with a secret (``user:secret@``; a secret may hold an unescaped "/"), anywhere
_USER_INFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^\s/@'\"]*:[^\s@'\"]*@")
BUCKETS = frozenset({"s3", "gs", "gcs"})  # whose authority is a bucket's name, nothing more
_BUCKET_USER = re.compile(r"((?:s3|gs|gcs)://)[^\s/@'\"]*@", re.IGNORECASE)  # s3://KEY@bucket


def scheme(arg: str) -> str | None:
    """The URI scheme of a PATH argument (lower case), or None for a plain path."""
    m = _URI.match(arg)
    return m[1].lower() if m else None


def is_remote(arg: str | Path) -> bool:
    """True for a PATH in object storage or HDFS (a URI other than ``file://``)."""
    if isinstance(arg, RemotePath):
        return True
    s = scheme(str(arg)) if isinstance(arg, str) else None
    return s is not None and s != "file"


def credentials_in(uri: str) -> bool:
    """Whether a URI carries credentials in its user info (``s3://KEY:SECRET@bucket``,
    ``hdfs://user:password@host``): a bucket's name holds no ``@`` and no ``:``."""
    s = scheme(uri)
    if s is None or s == "file":
        return False
    authority = uri[len(s) + 3 :].partition("/")[0]
    if s in BUCKETS:
        return "@" in authority or ":" in authority
    user, _, host = authority.rpartition("@")
    port = host.rpartition(":")[2] if ":" in host and not host.endswith("]") else ""
    # "user:secret@host", or "user:sec/ret@host" whose authority ends in the secret
    return ":" in user or not port.isdigit() and port != ""


def redacted(text: str) -> str:
    """``text`` with the user info of every URI in it that has a secret shown as ``***``."""
    return _BUCKET_USER.sub(r"\1***@", _USER_INFO.sub(r"\1***@", text))


def refuse_credentials(uri: str) -> None:
    """Refuse (exit 2) a URI with credentials in it, showing it without them: credentials
    come from the standard chains only, and are never printed (docs/storage.md)."""
    if not credentials_in(uri):
        return
    s = scheme(uri)
    shown = f"{s}://***@{uri.rpartition('@')[2]}" if "@" in uri else f"{s}://***"
    raise ArgumentError(
        "credentials in a URI are refused (and never shown): give them as the file "
        "system's standard chain takes them (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
        "a profile, the instance's role; docs/storage.md)",
        path=shown,
        code=Code.CREDENTIALS_IN_URI,
    )


def path_of(arg: str) -> Path:
    """The path a PATH argument names: a :class:`RemotePath` for a URI, else a local path
    (``file:///x`` is ``/x``). Every reading command turns its PATHs into paths here; a
    remote PATH's whole tree is listed now, at once."""
    path = as_path(arg)
    if isinstance(path, RemotePath):
        path.store.prefetch(path.key)
    return path


def as_path(arg: str) -> Path:
    """The path a string names, as :func:`path_of` but listing nothing (a path made by
    klogtool: a display, a split's segment in a worker)."""
    s = scheme(arg)
    if s is None:
        return Path(arg)
    if s == "file":
        return Path(arg[len("file://") :] or "/")
    return _remote(arg)


def _remote(uri: str) -> RemotePath:
    refuse_credentials(uri)
    return RemotePath(uri)


def absolute(path: str | Path) -> str:
    """A path as a string another process can open: absolute, or the URI."""
    p = as_path(path) if isinstance(path, str) else path
    return str(p) if isinstance(p, RemotePath) else os.path.abspath(p)


WRITABLE = frozenset({"s3", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs"})


def writable(arg: str) -> bool:
    """A URI whose file system pyarrow writes (export's tasks write their files there)."""
    return scheme(arg) in WRITABLE


def file_system(uri: str) -> tuple[pafs.FileSystem, str]:
    """The file system of a URI and the path inside it (to write with pyarrow)."""
    path = _remote(uri)
    return path.store.fs, path.key


def delete_objects(uri: str, which: Callable[[str], bool]) -> None:
    """Delete the objects under ``uri`` whose path below it ``which`` picks (listed now)."""
    top = _remote(uri.rstrip("/"))
    store, key = top.store, top.key
    for k in sorted(store.objects_under(key)):
        if which(k[len(key) + 1 :]):
            _retrying(partial(store.fs.delete_file, k), f"{top}/{k[len(key) + 1 :]}", store.stats)
    forget()  # what was listed is stale now


def write_object(uri: str, data: bytes) -> None:
    """One object, written whole (retried)."""
    fs, key = file_system(uri)

    def put() -> None:
        with fs.open_output_stream(key) as out:
            out.write(data)

    _retrying(put, uri, _remote(uri).store.stats)
    forget()


def keys_left_out(paths: Iterable[str]) -> list[str]:
    """The keys under remote PATHs that their tree leaves out (:meth:`Store.odd`), as URIs:
    each reading command names them, as they are not read."""
    found: list[str] = []
    for arg in paths:
        if not is_remote(arg):
            continue
        try:
            path = path_of(arg)
        except OSError:
            continue  # the command says what is wrong with it
        if isinstance(path, RemotePath):
            store, under = path.store, path.key + "/"
            found += [store.uri(k) for k in sorted(store.left_out) if k.startswith(under)]
    return list(dict.fromkeys(found))


def named(display: str) -> str:
    """How to show a directory the user named ``display``: as named, but by its own name when
    the argument has none (``.``, ``..``, ``sub/..``): a partition is known by its name."""
    if is_remote(display) or Path(display).name not in ("", ".", ".."):
        return display
    return Path(os.path.abspath(display)).name or display


def child(display: str, name: str | Path) -> str:
    """How to show ``name`` (a name or relative path) inside the directory shown as
    ``display``."""
    return str(as_path(display) / name)


class RemotePath(PosixPath):
    """A file or directory in object storage, by its URI (``s3://bucket/key``).

    Questions about the tree (``exists``, ``is_dir``, ``iterdir``, ``stat``) are answered from
    the listing of its :class:`Store`; ``open``/``read_bytes`` read through it. Anything that
    would change the tree raises ``EROFS``: the commands read object storage through it (only
    export writes there, through pyarrow). Its string is the URI; an ``os`` call on it finds
    no local file (a URI is no local path)."""

    __slots__ = ()

    # parts are ("s3:", "bucket", "key", ...): the URI with its "//" collapsed
    def __str__(self) -> str:
        parts = self.parts
        return parts[0] + "//" + "/".join(parts[1:])

    def __fspath__(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"RemotePath({str(self)!r})"

    def as_posix(self) -> str:
        return str(self)

    def as_uri(self) -> str:
        return str(self)

    @property
    def store(self) -> Store:
        return Store.of(self.parts[0][:-1], self.parts[1] if len(self.parts) > 1 else "")

    @property
    def key(self) -> str:
        """The path inside the store's file system."""
        return self.store.key_of(self.parts[2:])

    # -- the tree, from listings --------------------------------------------------------------
    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        entry = self.store.entry(self.key)
        if entry is None:
            raise FileNotFoundError(errno.ENOENT, "no such object or prefix", str(self))
        return entry.stat()

    def lstat(self) -> os.stat_result:
        return self.stat()

    def is_symlink(self) -> bool:
        return False

    def iterdir(self) -> Generator[RemotePath, None, None]:
        for name in self.store.children(self.key, str(self)):
            yield self / name

    def glob(self, pattern: str) -> Iterator[RemotePath]:  # type: ignore[override]
        for name in self.store.children(self.key, str(self)):
            if fnmatch.fnmatchcase(name, pattern):
                yield self / name

    def rglob(self, pattern: str) -> Iterator[RemotePath]:  # type: ignore[override]
        for child_path in self.iterdir():
            if fnmatch.fnmatchcase(child_path.name, pattern):
                yield child_path
            if child_path.is_dir():
                yield from child_path.rglob(pattern)

    def resolve(self, strict: bool = False) -> RemotePath:
        return self

    def absolute(self) -> RemotePath:
        return self

    def expanduser(self) -> RemotePath:
        return self

    def samefile(self, other_path: Any) -> bool:
        return str(self) == str(other_path)

    # -- bytes --------------------------------------------------------------------------------
    def open(self, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if mode not in ("r", "rb"):
            raise _read_only(self)
        size = self.stat().st_size
        raw = _RangeFile(self.store.file(self.key, str(self)), size)
        if mode == "rb":
            return io.BufferedReader(raw, 1 << 16)
        return io.TextIOWrapper(io.BufferedReader(raw, 1 << 16), *args, **kwargs)

    def read_bytes(self) -> bytes:
        size = self.stat().st_size
        return bytes(self.store.file(self.key, str(self)).read(0, size))

    def read_text(self, encoding: str | None = None, errors: str | None = None) -> str:
        return self.read_bytes().decode(encoding or "utf-8", errors or "strict")

    # -- never written ------------------------------------------------------------------------
    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise _read_only(self)

    mkdir = touch = unlink = rmdir = rename = replace = chmod = lchmod = _refuse
    write_bytes = write_text = symlink_to = hardlink_to = owner = group = _refuse
    readlink = _refuse


def _read_only(path: Path) -> OSError:
    return OSError(errno.EROFS, "klogtool does not change files in object storage", str(path))


@dataclass
class Entry:
    """A listed object (``size``) or prefix (``size`` None)."""

    size: int | None
    mtime: float = 0.0

    def stat(self) -> os.stat_result:
        mode = statmod.S_IFDIR | 0o555 if self.size is None else statmod.S_IFREG | 0o444
        t, ns = int(self.mtime), int(self.mtime * 1e9)
        return os.stat_result(
            (mode, 0, 0, 1, 0, 0, self.size or 0, t, t, t, self.mtime, self.mtime, self.mtime)
            + (ns, ns, ns)
        )


@dataclass
class Stats:
    """What a process asked its stores for (:func:`stats_line`)."""

    listings: int = 0
    reads: int = 0
    bytes: int = 0
    retries: int = 0


@dataclass
class Store:
    """One bucket (or file system authority): its pyarrow file system and what was listed."""

    scheme: str
    authority: str
    fs: pafs.FileSystem
    root: str  # the file system's path of the bucket's top ("bucket" for s3 and gs)
    dirs: dict[str, dict[str, Entry]] = field(default_factory=dict)  # complete listings
    entries: dict[str, Entry] = field(default_factory=dict)  # every key seen
    left_out: set[str] = field(default_factory=set)  # keys no path can name (:func:`odd`)
    lock: threading.RLock = field(default_factory=threading.RLock)
    stats: Stats = field(default_factory=Stats)

    @staticmethod
    def of(scheme_name: str, authority: str) -> Store:
        refuse_credentials(f"{scheme_name}://{authority}/")  # a RemotePath made directly
        key = (scheme_name, authority)
        with _REGISTRY_LOCK:
            store = _REGISTRY.get(key)
            if store is None:
                store = _REGISTRY[key] = _open_store(scheme_name, authority)
        return store

    def key_of(self, parts: tuple[str, ...]) -> str:
        return "/".join((self.root.rstrip("/"), *parts)) if parts else self.root.rstrip("/")

    # -- listings -----------------------------------------------------------------------------
    def entry(self, key: str) -> Entry | None:
        """The object or prefix at ``key``, from a listing (its parent's, made now if none
        covers it)."""
        if key == self.root.rstrip("/"):
            return Entry(None)
        with self.lock:
            if key not in self.entries:
                parent = key.rpartition("/")[0]
                if parent not in self.dirs:
                    self._list(parent)
            return self.entries.get(key)

    def children(self, key: str, shown: str) -> list[str]:
        found = self.entry(key)
        if found is None:
            raise FileNotFoundError(errno.ENOENT, "no such object or prefix", shown)
        if found.size is not None:
            raise NotADirectoryError(errno.ENOTDIR, "an object, not a prefix", shown)
        with self.lock:
            if key not in self.dirs:
                self._list(key)
            return sorted(self.dirs[key])

    def prefetch(self, key: str) -> None:
        """List everything under ``key`` at once: a PATH argument's whole tree, in a
        thousand keys a request, instead of a listing per directory in it."""
        with self.lock:
            known = self.entries.get(key)
            # a prefix its parent's listing showed is listed whole too (not one level a time)
            if key not in self.dirs and (known is None or known.size is None):
                self._list(key, recursive=True)

    def objects_under(self, key: str) -> set[str]:
        """The keys of every object under ``key``, listed now."""
        import pyarrow.fs as pafs

        return {i.path for i in self._infos(key, True) if i.type == pafs.FileType.File}

    def _infos(self, key: str, recursive: bool) -> list[pafs.FileInfo]:
        """One listing of ``key`` (empty for an object's key: its parent's says what it is)."""
        import pyarrow.fs as pafs

        sel = pafs.FileSelector(key, allow_not_found=True, recursive=recursive)
        try:
            infos: list[pafs.FileInfo] = _retrying(
                lambda: self.fs.get_file_info(sel), key, self.stats
            )
            return infos
        except NotADirectoryError:
            return []
        finally:
            self.stats.listings += 1

    def _list(self, key: str, recursive: bool = False) -> None:
        import pyarrow.fs as pafs

        infos = self._infos(key, recursive)
        if not infos and recursive:
            return  # an object or nothing: the parent's listing will say
        self.dirs[key] = {}
        if infos and key != self.root.rstrip("/"):
            self.entries[key] = Entry(None)  # a prefix exists while keys are under it
        for info in infos:
            is_dir = info.type == pafs.FileType.Directory
            if self.odd(info.path):
                if not (is_dir and recursive):  # (a recursive listing names its objects)
                    self.left_out.add(info.path)
                continue
            parent, _, name = info.path.rpartition("/")
            mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
            entry = Entry(None if is_dir else info.size, mtime)
            self.entries[info.path] = entry
            self.dirs.setdefault(parent, {})[name] = entry
            if is_dir and recursive:
                self.dirs.setdefault(info.path, {})  # complete: listed with its parent

    def odd(self, key: str) -> bool:
        """A key with an empty, ``.`` or ``..`` segment (``a//b``, ``a/./b``): a path names
        no such thing (``a/./b`` is ``a/b``), and walking it as a directory would find
        itself again. Such keys are left out of the tree and named (:func:`keys_left_out`)."""
        return any(p in ("", ".", "..") for p in self.relative(key).split("/"))

    def relative(self, key: str) -> str:
        """A key below the bucket's top."""
        top = self.root.rstrip("/")
        return key[len(top) + 1 :] if top else key.lstrip("/")

    def uri(self, key: str) -> str:
        """How to show a key, as it is (a :class:`RemotePath` would collapse ``//``)."""
        return f"{self.scheme}://{self.authority}/{self.relative(key)}"

    # -- bytes --------------------------------------------------------------------------------
    def file(self, key: str, shown: str) -> RemoteFile:
        return RemoteFile(self, key, shown)


@dataclass(frozen=True)
class Version:
    """Which version of an object a HEAD saw (its headers: pyarrow's ``metadata()``)."""

    size: int | None
    etag: str | None
    modified: str | None  # Last-Modified, as the server said it (to the second)
    version_id: str | None  # of a versioned bucket

    @staticmethod
    def of(meta: Any) -> Version:
        def get(name: str) -> str | None:
            value = meta.get(name) if meta else None
            return value.decode("latin-1") if isinstance(value, bytes) else value

        size = get("Content-Length")
        return Version(
            int(size) if size and size.isdigit() else None,
            get("ETag"),
            get("Last-Modified"),
            get("VersionId") or get("x-amz-version-id"),
        )

    def seconds(self) -> float | None:
        try:
            return _dt.datetime.fromisoformat(self.modified or "").timestamp()
        except ValueError:
            return None

    def change_from(self, listed: Entry) -> str | None:
        """How this version differs from what the listing showed (None: it may be it)."""
        if listed.size is not None and self.size is not None and self.size != listed.size:
            return f"{listed.size:,} bytes when listed, {self.size:,} when read"
        at = self.seconds()
        if at is not None and listed.mtime and abs(at - listed.mtime) >= 1:
            return f"it was uploaded again after it was listed (at {self.modified})"
        return None

    def change_to(self, now: Version) -> str | None:
        """How ``now`` differs from this version (None: the same)."""
        for what, was, is_ in (
            ("its version", self.version_id, now.version_id),
            ("its ETag", self.etag, now.etag),
            ("its size", self.size, now.size),
            ("its time", self.modified, now.modified),
        ):
            if was != is_:
                return f"{what} was {was}, is {is_}"
        return None


def changed(why: str, shown: str) -> InputError:
    """The error of an object that changed while it was read (docs/storage.md)."""
    return InputError(
        f"the object changed while it was read ({why}): read it again once it is written",
        path=shown,
        code=Code.OBJECT_CHANGED,
    )


class RemoteFile:
    """An object's bytes by ranged reads through one handle (opening one costs a HEAD), all
    of one version: the one the listing showed and the open's HEAD saw (:meth:`confirm`)."""

    def __init__(self, store: Store, key: str, shown: str):
        self.store, self.key, self.shown = store, key, shown
        self.handle: Any = None
        self.opening = threading.Lock()  # one handle (one HEAD) for the fetching threads
        self.version: Version | None = None  # what the open's HEAD saw
        self.ranges = 0  # ranged reads made
        self.confirmed = 0  # ranges read when the version was last confirmed

    def read(self, start: int, end: int) -> memoryview:
        """Bytes ``[start, end)``, in one ranged read (retried), where pyarrow put them."""
        if end <= start:
            return memoryview(b"")
        stats = self.store.stats

        def once() -> memoryview:
            with self.opening:
                if self.handle is None:
                    self._open()
            return memoryview(self.handle.read_at(end - start, start))

        data: memoryview = _retrying(once, self.shown, stats)
        with self.store.lock:
            stats.reads += 1
            stats.bytes += len(data)
            self.ranges += 1
        if len(data) != end - start:
            why = f"{len(data):,} bytes at {start:,} where {end - start:,} were"
            raise changed(why, self.shown)
        return data

    def _open(self) -> None:
        handle = self.store.fs.open_input_file(self.key)
        version = Version.of(handle.metadata())
        listed = self.store.entries.get(self.key)
        why = version.change_from(listed) if listed is not None else None
        if why is not None:
            raise changed(why, self.shown)
        self.handle, self.version = handle, version

    def confirm(self) -> None:
        """After a ranged read but the first: a HEAD that shows the version the open saw
        still there, or :func:`changed`. Every range was read between the open's HEAD and
        this one; one range alone is one version by itself, and costs no HEAD. pyarrow
        sends no If-Match: this is how its ranges are tied together."""
        with self.opening:
            ranges = self.ranges
            if ranges < 2 or ranges == self.confirmed or self.version is None:
                return
            was = self.version
        if was.etag is None and was.version_id is None:
            return  # a store whose HEAD says nothing of its version (not S3)
        meta = _retrying(
            lambda: self.store.fs.open_input_file(self.key).metadata(), self.shown, self.store.stats
        )
        why = was.change_to(Version.of(meta))
        if why is not None:
            raise changed(why, self.shown)
        with self.opening:
            self.confirmed = max(self.confirmed, ranges)


_REGISTRY: dict[tuple[str, str], Store] = {}
_REGISTRY_LOCK = threading.Lock()


def _open_store(scheme_name: str, authority: str) -> Store:
    uri = f"{scheme_name}://{authority}/"
    try:
        import pyarrow.fs as pafs
    except ImportError:
        raise OSError(
            errno.ENOSYS, "reading URIs needs pyarrow: pip install 'klogtool[storage]'", uri
        ) from None
    try:
        fs, root = pafs.FileSystem.from_uri(uri)
        if isinstance(fs, pafs.S3FileSystem):
            fs = _bounded(fs)
    except (ValueError, OSError) as e:
        raise OSError(errno.EINVAL, f"cannot open this file system: {_one_line(e)}", uri) from e
    return Store(scheme_name, authority, fs, root)


def timeout() -> float:
    """:data:`TIMEOUT`, or ``KLOGTOOL_STORAGE_TIMEOUT`` (seconds) when set."""
    try:
        return max(0.1, float(os.environ.get("KLOGTOOL_STORAGE_TIMEOUT") or TIMEOUT))
    except ValueError:
        return TIMEOUT


def _bounded(fs: pafs.S3FileSystem) -> pafs.S3FileSystem:
    """The same S3 file system (region, endpoint: what ``from_uri`` found) with bounded
    waits: without them a server that sends its headers and then nothing, or never reads an
    upload, held a request for minutes (the SDK's default: 11 attempts)."""
    import pyarrow.fs as pafs

    options = dict(fs.__reduce__()[1][0])  # the options it was made with (as pickled)
    options.update(connect_timeout=timeout(), request_timeout=timeout())
    strategy = pafs.AwsStandardS3RetryStrategy(max_attempts=SDK_ATTEMPTS)
    return pafs.S3FileSystem(**options, retry_strategy=strategy)


def in_use() -> bool:
    """Whether this process opened a store (the entry point's Ctrl-C needs to know: a
    stalled request holds its thread until it times out)."""
    return bool(_REGISTRY)


def forget() -> None:
    """Drop every store, what it listed and what was fetched (a later read asks again)."""
    with _REGISTRY_LOCK:
        _REGISTRY.clear()
    with _SPOOLED_LOCK:
        while _SPOOLED:
            _SPOOLED.popitem()[1].file.close()


def stores_stats() -> Stats:
    """Requests and bytes of every store this process opened."""
    total = Stats()
    for store in list(_REGISTRY.values()):
        total.listings += store.stats.listings
        total.reads += store.stats.reads
        total.bytes += store.stats.bytes
        total.retries += store.stats.retries
    return total


def stats_line() -> str:
    """What ``KLOGTOOL_STORAGE_STATS=1`` prints on stderr at exit (this process's requests;
    a process pool's or Spark's workers count their own)."""
    t = stores_stats()
    return (
        f"klogtool storage: {t.listings} listings, {t.reads} ranged reads, "
        f"{t.bytes:,} bytes fetched, {t.retries} retries"
    )


def _print_stats() -> None:
    import sys

    try:
        print(stats_line(), file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed
        pass


if os.environ.get("KLOGTOOL_STORAGE_STATS", "").strip() not in ("", "0"):
    import atexit

    atexit.register(_print_stats)


# what pyarrow's S3, GCS and Azure errors say when retrying cannot help
_PERMANENT = ("ACCESS_DENIED", "AccessDenied", "Forbidden", "NO_SUCH_BUCKET", "InvalidAccessKeyId")


# what a request that timed out says (curl's code 28): the SDK has tried it SDK_ATTEMPTS times
_TIMED_OUT = ("curlCode: 28", "Timeout was reached", "timed out")


def _transient(e: OSError) -> bool:
    if isinstance(e, (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)):
        return False
    return not any(word in str(e) for word in (*_PERMANENT, *_TIMED_OUT))


def _why(e: OSError) -> str:
    """The one line an error of a request ends with."""
    if any(word in str(e) for word in _TIMED_OUT):
        return (
            f"the server did not answer: no byte moved for {timeout():g} s, {SDK_ATTEMPTS} "
            "times (KLOGTOOL_STORAGE_TIMEOUT)"
        )
    return _one_line(e)


def failed(e: OSError, shown: str) -> OSError:
    """An error of a request (pyarrow's, the SDK's) as one line naming the URI."""
    return OSError(e.errno or errno.EIO, _why(e), shown)


@contextmanager
def reporting(shown: str) -> Iterator[None]:
    """Requests made by pyarrow itself (an export's writes): their errors as :func:`failed`."""
    try:
        yield
    except OSError as e:
        raise failed(e, shown) from e


def _retrying(call: Callable[[], Any], shown: str, stats: Stats) -> Any:
    delay = BACKOFF
    for attempt in range(RETRIES):
        try:
            return call()
        except OSError as e:
            if not _transient(e) or attempt == RETRIES - 1:
                raise failed(e, shown) from e
            stats.retries += 1
            time.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")


def _one_line(e: Exception) -> str:
    """An error of pyarrow's (or of a cloud SDK under it) as one short line: its first."""
    text = (e.strerror if isinstance(e, OSError) else None) or str(e)
    first = " ".join((text.strip().splitlines() or [""])[0].split())
    return first if len(first) <= 300 else first[:297] + "..."


class _RangeFile(io.RawIOBase):
    """An object read through ranged reads (``open()`` of a :class:`RemotePath`)."""

    def __init__(self, remote: RemoteFile, size: int):
        self.remote, self.size = remote, size
        self.pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def readinto(self, b: Any) -> int:
        end = min(self.size, self.pos + len(b))
        data = self.remote.read(self.pos, end)
        self.remote.confirm()
        b[: len(data)] = data
        self.pos += len(data)
        return len(data)


# -- a segment's bytes in a temporary file ---------------------------------------------------------
KEPT_SPOOLS = 2  # the files last read, kept with what was fetched (checks read a file twice)
_SPOOLED: OrderedDict[str, Spool] = OrderedDict()
_SPOOLED_LOCK = threading.Lock()


def spool(path: RemotePath) -> Spool:
    """The spool of a remote file: the one kept since it was last read, or a new one (the
    oldest kept one is then dropped, its temporary file with it)."""
    with _SPOOLED_LOCK:
        found = _SPOOLED.pop(str(path), None)
        if found is None:
            found = Spool(path, tempfile.TemporaryFile(prefix="klogtool-"))
        _SPOOLED[str(path)] = found
        while len(_SPOOLED) > KEPT_SPOOLS:
            _SPOOLED.popitem(last=False)[1].file.close()  # a live mmap keeps its own handle
        return found


class Spool:
    """A remote object's bytes in a temporary file of its size, fetched in ranges: all at
    once (:meth:`fill`) or as a reader asks for them (:meth:`need`): a walk reads
    :data:`CHUNK` ahead of what it asks for, a peek (``ahead=False``: a segment's first batch)
    only what it asks for, so a read seeking by an index fetches only the chunks around what
    it reads."""

    def __init__(self, path: RemotePath, file: BinaryIO):
        self.path = path
        self.remote = path.store.file(path.key, str(path))
        self.size = path.stat().st_size
        self.file = file
        self.have: list[tuple[int, int]] = []  # fetched ranges, sorted and disjoint
        self.walked = -1  # where the last window a walk fetched ended
        self.window = CHUNK  # its size
        self.lock = threading.Lock()
        file.truncate(self.size)  # sparse: what is not fetched takes no disk

    def fill(self) -> None:
        """Fetch all of it, :data:`FETCHERS` ranges at a time (a request's latency, not the
        bandwidth, bounds one stream; each thread holds one range at most)."""
        self._fetch_all([p for gap in self._gaps(0, self.size) for p in _pieces(*gap)])
        self.remote.confirm()

    def need(self, start: int, end: int, ahead: bool = True, until: int | None = None) -> None:
        """Make bytes ``[start, end)`` (clipped to the object) present; with ``ahead`` what
        is missing is fetched up to a window past ``end`` (up to what is already there, and
        to ``until``, where the walk will stop, if it is given and further than ``end``): a
        chunk, doubled each time a walk asks for the bytes just after the last window, up to
        :data:`FETCHERS` pieces fetched together (a seek by an index fetches a chunk; a walk
        through the whole segment, a few large ranges)."""
        end = min(end, self.size)
        pieces = []
        for lo, hi in self._gaps(start, end):
            if ahead:
                self.window = min(2 * self.window, FETCHERS * PIECE) if lo == self.walked else CHUNK
                stop = self.size if until is None else min(until, self.size)
                hi = max(hi, min(lo + self.window, self._next_have(lo), stop))
                self.walked = hi
            pieces += _pieces(lo, hi)
        self._fetch_all(pieces)
        self.remote.confirm()  # before the bytes are read: no HEAD when nothing was fetched

    def _fetch_all(self, pieces: list[tuple[int, int]]) -> None:
        if len(pieces) <= 1:
            for lo, hi in pieces:
                self._fetch(lo, hi)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(FETCHERS, len(pieces))) as pool:
            for _ in pool.map(lambda p: self._fetch(*p), pieces):
                pass

    def _gaps(self, start: int, end: int) -> list[tuple[int, int]]:
        gaps = []
        at = start
        for lo, hi in self.have:
            if hi <= at:
                continue
            if lo >= end:
                break
            if lo > at:
                gaps.append((at, lo))
            at = max(at, hi)
        if at < end:
            gaps.append((at, end))
        return gaps

    def _next_have(self, pos: int) -> int:
        i = bisect.bisect_right(self.have, (pos, pos))
        return self.have[i][0] if i < len(self.have) else self.size

    def _fetch(self, lo: int, hi: int) -> None:
        data = self.remote.read(lo, hi)
        os.pwrite(self.file.fileno(), data, lo)
        with self.lock:
            self.have = _merged(sorted([*self.have, (lo, hi)]))


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted ranges with the touching and overlapping ones joined."""
    out: list[tuple[int, int]] = []
    for a, b in ranges:
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _pieces(lo: int, hi: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` in ranged reads of a :data:`FETCHERS`-th of it, each of :data:`CHUNK` at
    least (a small range is one read) and :data:`PIECE` at most (a large one is more reads)."""
    step = min(PIECE, max(CHUNK, -(-(hi - lo) // FETCHERS)))
    return [(a, min(a + step, hi)) for a in range(lo, hi, step)]
