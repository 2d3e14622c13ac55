"""``export`` as a library: the destination protocol, the local engine, and the summary.

Both engines write into a temporary directory beside DEST and rename it into place only when
the job succeeded, so an interrupted or failed export leaves nothing half-written
(Ctrl-C: exit 130). A DEST that exists and is not empty is refused (exit 4) unless ``overwrite``.

The output layout is Spark's: ``part-NNNNN-<uuid>-c000.snappy.parquet`` (or ``.json``) files,
hive-style ``topic=…/partition=…`` directories with ``partition_by`` (the partition columns
are then not in the files), and an empty ``_SUCCESS`` marker. The local engine
(:func:`export_local`) runs the same split reader as the Spark data source
(:mod:`klogtool.log.export.arrow_reader`) in a process pool and writes with pyarrow, so both engines
produce the same rows in the same files. JSON Lines follow klogtool's JSON conventions
(docs/output.md): timestamps are int64 milliseconds, payloads are text (base64 by default), and
nulls are written as ``null``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from klogtool.codes import Code
from klogtool.errors import InputError, RefusedError
from klogtool.log import storage
from klogtool.log.export.arrow_reader import read_split
from klogtool.log.export.spec import ReadOptions, arrow_schema
from klogtool.log.pool import processes, worker_deaths
from klogtool.log.record_filter import MAX_OFFSET, RecordFilter
from klogtool.log.splits import DEFAULT_TARGET_SPLIT_BYTES, Split, plan_splits, where_prune

if TYPE_CHECKING:
    import pyarrow as pa

    from klogtool import events

FORMATS = ("parquet", "jsonl")
# Columns with few distinct values: dictionary-encoded in Parquet. The others (offsets,
# timestamps, keys, values, ...) are nearly all distinct, where building a dictionary only to
# give it up costs a fifth of the writing time (1.63 -> 1.97 M rows/s measured).
DICTIONARY_COLUMNS = frozenset(
    (
        "topic",
        "partition",
        "segment",
        "timestampType",
        "timestamp_type",
        "magic",
        "compression",
        "producer_id",
        "producer_epoch",
        "partition_leader_epoch",
        "is_transactional",
        "is_control",
        "crc_valid",
        "error_code",
    )
)
PARTITION_COLUMNS = ("topic", "partition")
SUCCESS = "_SUCCESS"  # written last: the export is complete
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
# Characters Spark (Hive) escapes in partition directory names.
_ESCAPED = set("\"#%'*/:=?\\\x7f{[]^") | {chr(i) for i in range(32)}


def escape_path_name(value: object) -> str:
    if value is None:
        return HIVE_NULL
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in str(value))


@dataclass
class Destination:
    """Where an export goes: a temp dir beside DEST while writing, DEST once committed.

    DEST in object storage or HDFS (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``: what
    :mod:`klogtool.log.storage` reads and writes) is written by the tasks themselves, each
    file once under a name with this job's ``tag`` (a retried task replaces its files), with
    pyarrow, on whichever machine runs the task (``tasks_write``); :meth:`commit` then
    deletes what the export it replaces (``--overwrite``) left and writes ``_SUCCESS``;
    :meth:`abort` deletes this job's files. For another URI (``s3a://``…, only with Spark),
    or when the writer is elsewhere (``direct``: a Spark Connect server writes on its own
    file system), the job writes to DEST itself and Spark's own rules apply (it refuses an
    existing DEST unless overwriting).
    """

    dest: str
    overwrite: bool = False
    inputs: Sequence[str] = ()
    direct: bool = False
    final: str = ""
    work: str = ""
    local: bool = True
    tasks_write: bool = False
    tag: str = ""
    removed: list[tuple[Path, int]] = field(default_factory=list)  # stale temporaries, bytes
    _lock: int | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.direct and storage.writable(self.dest):
            self._remote()
            return
        if storage.is_remote(self.dest) or self.direct:
            self.local = False
            self.final = self.work = self.dest
            return
        path = self.dest.removeprefix("file://")
        self.final = os.path.abspath(path)
        final = Path(self.final)
        self._refuse_unsafe(final, "only once the export has succeeded")
        self.work = str(final.parent / f".{final.name}.klogtool-tmp-{secrets.token_hex(4)}")

    def _remote(self) -> None:
        self.tasks_write, self.local = True, False
        self.final = self.work = self.dest.rstrip("/")
        self.tag = str(uuid.uuid4())
        self._refuse_unsafe(storage.path_of(self.final), "its _SUCCESS goes first, its files last")

    def _refuse_unsafe(self, final: Path, replaced: str) -> None:
        """Refuse (exit 4) a DEST that is a file, that is not empty (unless ``overwrite``),
        that is inside an input directory, or that holds an input."""
        if final.exists() and not final.is_dir():
            raise RefusedError(
                "the destination exists and is not a directory",
                path=self.dest,
                code=Code.DESTINATION_NOT_A_DIRECTORY,
            )
        if final.is_dir() and any(final.iterdir()) and not self.overwrite:
            raise RefusedError(
                "the destination is not empty",
                path=self.dest,
                code=Code.DESTINATION_NOT_EMPTY,
                hint=f"--overwrite replaces it ({replaced})",
            )
        for arg in self.inputs:
            src = storage.as_path(storage.absolute(arg))
            if src.is_dir() and (final == src or src in final.parents):
                raise RefusedError(
                    "the destination is inside an input directory",
                    path=self.dest,
                    code=Code.DESTINATION_INSIDE_INPUT,
                )
            if final.is_dir() and (src == final or final in src.parents):
                raise RefusedError(
                    "an input lies inside the destination that --overwrite would replace",
                    path=arg,
                    code=Code.INPUT_INSIDE_DESTINATION,
                )

    def prepare(self) -> None:
        """Create DEST's parent directory, or take an old export's ``_SUCCESS`` away (nothing
        else is written before the job). A local DEST's temporaries that a killed export left
        are removed (``removed``), and this job's temporary is locked while it runs."""
        if self.tasks_write:
            storage.delete_objects(self.final, lambda name: name == SUCCESS)
        elif self.local:
            Path(self.final).parent.mkdir(parents=True, exist_ok=True)
            self.removed = _remove_stale(Path(self.final))
            # the lock is taken before the temporary exists: a temporary whose lock is free
            # is one no process writes (the kernel frees a killed process's locks)
            self._lock = _locked(Path(self.work + LOCK))

    def commit(self) -> None:
        if self.tasks_write:  # what is not this job's is the replaced export's
            storage.delete_objects(self.final, lambda name: self.tag not in name)
            storage.write_object(f"{self.final}/{SUCCESS}", b"")
            return
        if not self.local:
            return
        final = Path(self.final)
        old = None
        if final.exists():
            old = final.parent / f".{final.name}.klogtool-old-{secrets.token_hex(4)}"
            final.rename(old)
        os.rename(self.work, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        self._unlock()

    def abort(self) -> None:
        if self.local and os.path.isdir(self.work):
            shutil.rmtree(self.work, ignore_errors=True)
        if self.tasks_write:
            storage.delete_objects(self.final, lambda name: self.tag in name)
        self._unlock()

    def _unlock(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.work + LOCK)
            os.close(self._lock)
            self._lock = None


LOCK = ".lock"  # beside a temporary: held by the export that writes it
_STALE = re.compile(r"\.(?P<name>.+)\.klogtool-(?:tmp|old)-[0-9a-f]{8}(?:\.lock)?")


def _locked(path: Path) -> int:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _in_use(lock: Path) -> bool:
    """Whether an export holds ``lock`` (a missing lock: none)."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _remove_stale(final: Path) -> list[tuple[Path, int]]:
    """Remove what exports of ``final`` killed mid-run left beside it: their temporaries
    (``.DEST.klogtool-tmp-XXXXXXXX``, a new random name each run, so no later run would meet
    its own) and a replaced export a commit had moved aside (``-old-``), but any an export
    still running holds the lock of. Each one removed, with its size in bytes."""
    removed: list[tuple[Path, int]] = []
    try:
        entries = list(os.scandir(final.parent))
    except OSError:
        return removed
    for e in entries:
        m = _STALE.fullmatch(e.name)
        if m is None or m["name"] != final.name or e.is_symlink():
            continue
        path = Path(e.path)
        lock = path if e.name.endswith(LOCK) else Path(e.path + LOCK)
        if _in_use(lock):
            continue
        if e.is_dir():
            size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            shutil.rmtree(path, ignore_errors=True)
            removed.append((path, size))
        with contextlib.suppress(OSError):
            os.unlink(lock)
    return removed


@dataclass
class OutputCount:
    files: int = 0
    rows: int = 0
    bytes: int = 0
    error_rows: int = 0
    partitions: set[str] = field(default_factory=set)

    def add(self, other: OutputCount) -> None:
        self.files += other.files
        self.rows += other.rows
        self.bytes += other.bytes
        self.error_rows += other.error_rows
        self.partitions |= other.partitions


def split_obj(split: Split) -> events.ExportSplit:
    """The ``split`` object: one split of the plan (--dry-run)."""
    return {
        "type": "split",
        "index": split.index,
        "bytes": split.bytes,
        "ranges": len(split.ranges),
        "first": split.ranges[0].path,
        "last": split.ranges[-1].path,
    }


def summary_obj(
    *,
    destination: str,
    to: str,
    written: OutputCount | None,
    rows: int | None,
    report: bool,
    segments: int,
    input_bytes: int,
    splits: int,
    seconds: float,
) -> events.ExportSummary:
    """The ``summary`` object. ``written``: what the destination holds (None: not counted, a
    dry run or a remote destination, whose ``rows`` Spark counted); ``report``:
    --on-corrupt report, whose error rows are counted; ``splits`` shown when there are some;
    the rates when time was measured and the rows are known."""
    files, size = (written.files, written.bytes) if written is not None else (None, None)
    errors: events.ExportSummaryOptional = {}
    if report:
        errors["error_rows"] = written.error_rows if written is not None else 0
    tail: events.ExportSummaryOptional = {}
    if splits:
        tail["splits"] = splits
    if seconds > 0 and rows is not None:
        tail["records_per_second"] = round(rows / seconds)
        tail["input_mb_per_second"] = round(input_bytes / seconds / 1e6, 1)
    return {
        "type": "summary",
        "destination": destination,
        "format": to,
        "rows": rows,
        "files": files,
        "bytes": size,
        **errors,
        "segments": segments,
        "input_bytes": input_bytes,
        "seconds": round(seconds, 3),
        **tail,
    }


def data_files(root: str) -> Iterator[Path]:
    """The output files (not ``_SUCCESS``, Hadoop's ``.crc`` files or other hidden ones)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in sorted(filenames):
            if not name.startswith((".", "_")):
                yield Path(dirpath) / name


def count_output(root: str, to: str, report: bool = False) -> OutputCount:
    """Rows, files and bytes written under ``root`` (Parquet: from the footers)."""
    out = OutputCount()
    for f in data_files(root):
        out.files += 1
        out.bytes += f.stat().st_size
        if f.parent != Path(root):
            out.partitions.add(str(f.parent.relative_to(root)))
        if to == "parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(f)
            out.rows += pf.metadata.num_rows
            if report and pf.metadata.num_rows:
                col = pq.read_table(f, columns=["error_code"]).column(0)
                out.error_rows += len(col) - col.null_count
        elif not report:  # (every line a row: the writers write no blank line)
            with open(f, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    out.rows += chunk.count(b"\n")
        else:
            with open(f, "rb") as fh:
                for line in fh:
                    if line.strip():
                        out.rows += 1
                        if b'"error_code":null' not in line:
                            out.error_rows += 1
    return out


# -- the local engine -------------------------------------------------------------------------
def jsonl_table(batch: pa.RecordBatch) -> pa.RecordBatch:
    """What a JSON line holds: the timestamp as int64 milliseconds (docs/output.md)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "timestamp" not in batch.schema.names:
        return batch
    i = batch.schema.get_field_index("timestamp")
    ms = pc.divide(batch.column(i).cast(pa.int64()), 1000)
    return batch.set_column(i, pa.field("timestamp", pa.int64()), ms)


def _json_default(obj: object) -> object:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        import base64

        return base64.b64encode(bytes(obj)).decode("ascii")
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


JSONL_ROWS = 4096  # rows made JSON at a time (as Python objects, or as Arrow texts)


def jsonl_lines(batch: pa.RecordBatch) -> Iterator[str]:
    """The JSON lines of ``batch``, a row at a time (``json.dumps`` of each row's objects):
    the reference :func:`jsonl_bytes` is held to, and its fallback."""
    table = jsonl_table(batch)
    for start in range(0, table.num_rows, JSONL_ROWS):
        for row in table.slice(start, JSONL_ROWS).to_pylist():
            yield json.dumps(row, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def jsonl_bytes(batch: pa.RecordBatch) -> bytes:
    """:func:`jsonl_lines` of ``batch``, each ended by a newline, byte for byte, made a column
    at a time by Arrow's kernels (each column's values become their JSON texts, a line is
    the columns' texts joined): a row at a time, ``to_pylist`` and ``json.dumps`` were most
    of an export to JSON Lines (bench/README.md). A column of a type not handled here
    (floats, maps, structs) makes the whole batch go the row way."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = jsonl_table(batch)
    if table.num_rows == 0:
        return b""
    parts: list[Any] = []
    for i, f in enumerate(table.schema):
        text = _json_texts(table.column(i))
        if text is None:
            return b"".join(line.encode() + b"\n" for line in jsonl_lines(batch))
        parts += [pa.scalar(_member(i, f.name)), text]
    lines = pc.binary_join_element_wise(*parts, pa.scalar("}\n"), "")
    # the lines' text, end to end: from the first one's offset to the end of the last one's
    offsets = memoryview(lines.buffers()[1]).cast("i")
    start, end = offsets[lines.offset], offsets[lines.offset + len(lines)]
    data: bytes = lines.buffers()[2].slice(start, end - start).to_pybytes()
    return data


def _member(i: int, name: str) -> str:
    """What comes before the ``i``-th member's value in a JSON object: ``{"name":``."""
    return ("{" if i == 0 else ",") + json.dumps(name, ensure_ascii=False) + ":"


def _json_texts(col: pa.Array) -> pa.Array | None:
    """Each value of ``col`` as ``json.dumps`` writes it in a row (bytes as base64 text, as
    :func:`_json_default` does), a string array with no null; None for a type not handled."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = col.type
    if pa.types.is_integer(t):
        text = pc.cast(col, pa.string())
    elif pa.types.is_boolean(t):
        text = pc.if_else(col, "true", "false")
    elif pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_null(t):
        text = _distinct_texts(col)
    elif pa.types.is_list(t) and pa.types.is_struct(t.value_type):
        text = _list_of_struct_texts(col)
        if text is None:
            return None
    else:
        return None
    return pc.fill_null(text, "null")


# what json.dumps escapes in a string (ensure_ascii=False): the quote, the backslash, controls
_JSON_ESCAPED = r'["\\\x00-\x1f]'


def _distinct_texts(col: pa.Array) -> pa.Array:
    """Strings and bytes: a string that needs no escape quoted as it is, a column at a time
    (base64 payloads, topic names); the others ``json.dumps`` of each distinct value once
    (producers' keys repeat), then taken for every row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_null(col.type):
        return pa.nulls(len(col), pa.string())
    if pa.types.is_string(col.type):
        escaped = pc.fill_null(pc.match_substring_regex(col, _JSON_ESCAPED), False)
        quoted = pc.binary_join_element_wise('"', col, '"', "")
        if not pc.any(escaped).as_py():
            return quoted
        some = col.filter(escaped)
        return pc.replace_with_mask(quoted, escaped, _dumped(some))
    return _dumped(col)


def _dumped(col: pa.Array) -> pa.Array:
    """``json.dumps`` of each distinct value of ``col``, once, taken for every row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(col)
    values = encoded.dictionary.to_pylist()
    texts = [json.dumps(v, ensure_ascii=False, default=_json_default) for v in values]
    return pa.array(texts, pa.string()).take(encoded.indices)


def _list_of_struct_texts(col: pa.ListArray) -> pa.Array | None:
    """A list of structs (the headers: ``[{"key":...,"value":...}]``): the structs' fields as
    texts, joined into objects, then each list's objects joined into an array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    items = col.values  # every list's structs, one after another (from offset 0)
    if items.null_count or items.type.num_fields == 0:
        return None  # (a null struct is "null", not an object of nulls)
    parts: list[Any] = []
    for i, f in enumerate(items.type):
        text = _json_texts(pc.struct_field(items, i))
        if text is None:
            return None
        parts += [pa.scalar(_member(i, f.name)), text]
    objects = pc.binary_join_element_wise(*parts, pa.scalar("}"), "")
    # the lists again, over the objects (a null list stays null: "null")
    first, last = col.offsets[0].as_py(), col.offsets[-1].as_py()  # (col may be a slice)
    offsets = pc.subtract(col.offsets, pa.scalar(first, pa.int32()))
    lists = pa.ListArray.from_arrays(
        offsets, objects.slice(first, last - first), mask=col.is_null()
    )
    joined = pc.binary_join(lists, ",")
    return pc.binary_join_element_wise("[", joined, "]", "")


@dataclass(frozen=True)
class LocalJob:
    to: str
    work: str  # a local directory, or a URI the tasks write into (storage.writable)
    read: ReadOptions
    partition_by: tuple[str, ...] = ()
    columns: tuple[str, ...] | None = None
    # in every file name; a job whose tasks write DEST itself names it, so that a task's
    # retry replaces its first attempt's files instead of adding to them
    tag: str | None = None
    # string columns after the record's, one value for every row of the job (diff
    # --export-lost: which follower a record is of, and whether it is lost or re-fetched)
    labels: tuple[tuple[str, str], ...] = ()


def _file_schema(job: LocalJob, schema: pa.Schema) -> pa.Schema:
    """The columns of the files: the reader's (``schema``) but the partitioning ones, then the
    job's labels."""
    import pyarrow as pa

    fields = [schema.field(n) for n in schema.names if n not in job.partition_by]
    return pa.schema(fields + [pa.field(name, pa.string()) for name, _ in job.labels])


def _labelled(job: LocalJob, part: pa.RecordBatch, file_schema: pa.Schema) -> pa.RecordBatch:
    if not job.labels:
        return part
    import pyarrow as pa

    values = [pa.repeat(pa.scalar(v, pa.string()), part.num_rows) for _, v in job.labels]
    return pa.RecordBatch.from_arrays([*part.columns, *values], schema=file_schema)


def write_split(job: LocalJob, split: Split) -> int:
    """Read one split and write its files (one per partition directory); returns its rows."""
    return write_split_counted(job, split).rows


def write_split_counted(job: LocalJob, split: Split) -> OutputCount:
    """:func:`write_split`, saying what it wrote: rows, files, bytes, partition dirs, and
    the rows that report corruption."""

    schema = arrow_schema(job.read, job.columns)
    keep = [n for n in schema.names if n not in job.partition_by]
    file_schema = _file_schema(job, schema)
    outputs: dict[tuple[Any, ...], _Output] = {}
    count = OutputCount()
    tag = job.tag or uuid.uuid4()
    ext = "snappy.parquet" if job.to == "parquet" else "json"
    try:
        for batch in read_split(split, job.read, schema):
            if batch.num_rows == 0:
                continue
            key = tuple(batch.column(n)[0].as_py() for n in job.partition_by)
            out = outputs.get(key)
            if out is None:
                dirs = [
                    f"{c}={escape_path_name(v)}" for c, v in zip(job.partition_by, key, strict=True)
                ]
                if dirs:
                    count.partitions.add("/".join(dirs))
                name = f"part-{split.index:05d}-{tag}-c000.{ext}"
                out = outputs[key] = _Output("/".join([job.work, *dirs, name]), job.to, file_schema)
                count.files += 1
            part = _labelled(job, batch.select(keep), file_schema)
            out.write(part)
            count.rows += batch.num_rows
            if "error_code" in keep:
                col = part.column("error_code")
                count.error_rows += len(col) - col.null_count
    except BaseException:
        for out in outputs.values():
            out.discard()
        raise
    for out in outputs.values():
        count.bytes += out.close()
    return count


def parquet_options(schema: pa.Schema) -> dict[str, Any]:
    """How the Parquet files are written (``pq.ParquetWriter``'s options; bench/ writes the
    floor with the same): snappy, a dictionary only for :data:`DICTIONARY_COLUMNS`."""
    dictionary = [n for n in schema.names if n in DICTIONARY_COLUMNS]
    return {"compression": "snappy", "use_dictionary": dictionary}


class _Output:
    """One file an export writes: Parquet or JSON Lines, on the local disk or at a URI
    (through pyarrow's native streams either way). It appears whole or not at all, and a
    second writer of the same name (a task's retry, a speculative copy) replaces it whole:
    an object is stored once its upload completes; a local file is written under a hidden
    name of its own and renamed over ``name`` when closed."""

    def __init__(self, name: str, to: str, schema: pa.Schema):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.name = name
        self.temp: str | None = None
        if storage.writable(name):
            fs, key = storage.file_system(name)
            with storage.reporting(name):
                self.sink: Any = fs.open_output_stream(key)
        else:
            folder, base = os.path.split(name)
            os.makedirs(folder, exist_ok=True)
            self.temp = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.tmp")
            self.sink = pa.OSFile(self.temp, mode="wb")
        self.parquet = None
        self.text = None
        if to == "parquet":
            self.parquet = pq.ParquetWriter(self.sink, schema, **parquet_options(schema))
        else:
            self.text = pa.BufferedOutputStream(self.sink, 1 << 20)

    def _requests(self) -> contextlib.AbstractContextManager[None]:
        """What pyarrow's uploads say when they fail, as one line naming the object."""
        return storage.reporting(self.name) if self.temp is None else contextlib.nullcontext()

    def write(self, part: pa.RecordBatch) -> None:
        with self._requests():
            if self.parquet is not None:
                self.parquet.write_batch(part)
                return
            assert self.text is not None
            for start in range(0, part.num_rows, JSONL_ROWS):  # each slice's texts, then freed
                self.text.write(jsonl_bytes(part.slice(start, JSONL_ROWS)))

    def close(self) -> int:
        """Close it; the bytes written."""
        with self._requests():
            return self._close()

    def _close(self) -> int:
        if self.parquet is not None:
            self.parquet.close()
        if self.text is not None:
            self.text.flush()
        size: int = self.sink.tell()
        if self.text is not None:
            self.text.close()  # closes the sink too
        else:
            self.sink.close()
        if self.temp is not None:
            os.replace(self.temp, self.name)
        return size

    def discard(self) -> None:
        """Close it without making it appear: a local one is removed; a remote one, which
        pyarrow completes when closed (it has no abort), is deleted by the export's abort
        or replaced by the task's retry."""
        with contextlib.suppress(Exception):  # discarding while an error is on its way
            if self.parquet is not None:
                self.parquet.close()  # (else it would close itself when collected)
            (self.text or self.sink).close()
        if self.temp is not None:
            with contextlib.suppress(OSError):
                os.remove(self.temp)


SPLITS_PER_JOB = 4  # splits of unequal cost (codecs, record sizes) even out in the pool


def local_min_splits(jobs: int) -> int:
    """How many splits the local engine plans at least for ``jobs`` processes."""
    return jobs * SPLITS_PER_JOB if jobs > 1 else 1


def export_local(
    paths: Sequence[str],
    job: LocalJob,
    *,
    jobs: int = 1,
    target_split_bytes: int = DEFAULT_TARGET_SPLIT_BYTES,
) -> tuple[list[Split], OutputCount]:
    """Write every split of PATHs into ``job.work`` with ``jobs`` processes; returns the
    splits and what they wrote. Raises what the reader raises (:class:`CorruptSegmentError`
    with ``fail``); ``job.read.ctx.progress`` hears of each split's bytes."""
    ctx = job.read.ctx
    advance = ctx.progress.advance
    splits = plan_splits(
        paths,
        target_split_bytes=target_split_bytes,
        min_splits=local_min_splits(jobs),
        prune=where_prune(job.read.where),
    )
    written = OutputCount()
    if not storage.writable(job.work):
        os.makedirs(job.work, exist_ok=True)
    if jobs <= 1 or len(splits) <= 1:
        for s in splits:
            written.add(write_split_counted(job, s))
            advance(s.bytes)
    else:
        with processes(ctx, min(jobs, len(splits))) as pool:
            futures = {pool.submit(write_split_counted, job, s): s for s in splits}
            pending = set(futures)
            try:
                with worker_deaths(lambda: unwritten(futures)):
                    while pending:
                        done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                        for fut in done:
                            written.add(fut.result())  # re-raises a worker's error here
                            advance(futures[fut].bytes)
            except BaseException:
                for fut in pending:
                    fut.cancel()
                raise
    written.add(finish(job, empty=not splits))
    return splits, written


def unwritten(futures: dict[Future[OutputCount], Split]) -> str:
    """The splits a pool did not finish (a worker died: the ones it and those after lost)."""
    lost = [s for f, s in futures.items() if not f.done() or f.cancelled() or f.exception()]
    return "; ".join(s.described() for s in sorted(lost, key=lambda s: s.index)) or "a split"


@dataclass(frozen=True)
class ExportRange:
    """A partition dir's (or a segment's) records from ``first`` to ``last`` (inclusive),
    with the values of the job's labels for them."""

    path: str
    first: int
    last: int = MAX_OFFSET
    labels: tuple[str, ...] = ()


def export_ranges(ranges: Sequence[ExportRange], job: LocalJob) -> list[int]:
    """Write into ``job.work`` the records of each range, in one process, whatever
    ``job.read.where`` says (each range is its own offset filter); a range's ``labels`` give
    the values of ``job.labels``. The rows written per range. ``diff --export-lost`` writes
    the records a follower loses or re-fetches this way."""
    if not storage.writable(job.work):
        os.makedirs(job.work, exist_ok=True)
    rows: list[int] = []
    planned = 0
    for r in ranges:
        where = RecordFilter(offsets=(r.first, r.last))
        labels = tuple((name, v) for (name, _), v in zip(job.labels, r.labels, strict=True))
        one = replace(job, read=replace(job.read, where=where), labels=labels)
        rows.append(0)
        for split in plan_splits([r.path], prune=where_prune(where)):
            rows[-1] += write_split(one, replace(split, index=planned))
            planned += 1
    finish(job, empty=planned == 0)
    return rows


def finish(job: LocalJob, *, empty: bool) -> OutputCount:
    """An empty result's one file (Parquet: it still says what its columns are, as Spark's
    does), and a local job's ``_SUCCESS`` (a remote DEST's is its commit's); what it wrote."""

    written = OutputCount()
    if empty and job.to == "parquet":
        keep = _file_schema(job, arrow_schema(job.read, job.columns))
        tag = job.tag or uuid.uuid4()
        out = _Output(f"{job.work}/part-00000-{tag}-c000.snappy.parquet", job.to, keep)
        written.files = 1
        written.bytes = out.close()
    if not storage.writable(job.work):
        os.makedirs(job.work, exist_ok=True)
        Path(job.work, SUCCESS).touch()
    return written


def check_local_dest(dest: Destination) -> None:
    if not dest.local and not dest.tasks_write:
        raise InputError(
            "the local engine writes to local paths only",
            path=dest.dest,
            code=Code.REMOTE_DESTINATION,
            hint="use --engine spark for hdfs://, s3a://... destinations",
        )
