"""Remote storage's layouts of a tiered partition's segments (docs/tiered-storage.md): where
each remote segment's files are, by the plugin that wrote them.

* Kafka's reference plugin ``LocalTieredStorage`` (``RemoteLogSegmentFileset``): one directory
  per partition, ``<topic>-<partition>-<topic id>``, holding for each segment ``<start offset,
  20 digits>-<segment id>.log`` and beside it ``.index``, ``.timeindex``, ``.txnindex``
  (optional), ``.leader_epoch_checkpoint`` and ``.snapshot`` (the producer state at the
  segment's end);
* Aiven's tiered-storage plugin (:mod:`klogtool.log.remote_objects`): ``<topic>-<topic
  id>/<partition>/`` holding ``<offset>-<segment id>.rsm-manifest``, ``.log`` (chunks, maybe
  zstd-compressed and AES-GCM-encrypted) and ``.indexes`` (every index in one object); a
  segment asked for is decoded into a spool directory first (memory stays flat).

Either from a local directory or an object-storage URI (:mod:`klogtool.log.storage`).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.log import storage
from klogtool.log.layout import SegmentFiles

if TYPE_CHECKING:
    from klogtool.log.remote_tier import RemoteSegment, TierCache

# LocalTieredStorage's names (RemoteTopicPartitionDirectory, RemoteLogSegmentFileset)
_PARTITION_DIR = re.compile(
    r"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>\d+)-(?P<topic_id>[a-zA-Z0-9_-]{22})$"
)
_FILE = re.compile(r"^(?P<offset>\d+)-(?P<segment_id>[a-zA-Z0-9_-]{22})(?P<suffix>\.[a-z_-]+)$")
SUFFIXES = {
    ".log": "log",
    ".index": "index",
    ".timeindex": "timeindex",
    ".txnindex": "txnindex",
    ".leader_epoch_checkpoint": "epochs",
    ".snapshot": "snapshot",
}


@dataclass(frozen=True)
class RemoteFileset:
    """One remote segment's files."""

    start_offset: int
    segment_id: str
    files: dict[str, Path]  # kind (SUFFIXES' values) -> file
    shown: str  # the remote .log, as a person is shown it


class LocalTieredStorage:
    """Kafka's LocalTieredStorage layout of one partition (see the module docstring)."""

    name = "LocalTieredStorage"

    def __init__(self, path: Path, match: re.Match[str]):
        self.path = path
        self.topic, self.partition, self.topic_id = (
            match["topic"],
            int(match["partition"]),
            match["topic_id"],
        )
        found: dict[str, tuple[int, dict[str, Path]]] = {}
        for f in sorted(path.iterdir()):
            m = _FILE.match(f.name)
            if m is None or m["suffix"] not in SUFFIXES or not f.is_file():
                continue
            entry = found.setdefault(m["segment_id"], (int(m["offset"]), {}))
            entry[1][SUFFIXES[m["suffix"]]] = f
        self._sets = {
            i: RemoteFileset(o, i, files, str(files.get("log", path / i)))
            for i, (o, files) in found.items()
        }

    def starts(self) -> dict[str, int]:
        return {i: fs.start_offset for i, fs in self._sets.items()}

    def fileset(self, segment_id: str) -> RemoteFileset | None:
        return self._sets.get(segment_id)


class AivenLayout:
    """Aiven's tiered-storage layout of one partition: each segment decoded from its
    manifest, ``.log`` and ``.indexes`` objects into ``spool`` when first asked for."""

    name = "Aiven tiered storage"

    def __init__(
        self,
        path: Path,
        topic: str,
        topic_id: str,
        keys: Mapping[str, bytes],
        default_key: bytes | None,
        spool: Path,
    ):
        self.path, self.topic, self.topic_id = path, topic, topic_id
        self.partition = int(path.name)
        self.keys, self.default_key, self.spool = keys, default_key, spool
        self._starts: dict[str, int] = {}
        for f in sorted(path.iterdir()):
            m = _FILE.match(f.name)
            if m is not None and m["suffix"] == ".rsm-manifest":
                self._starts[m["segment_id"]] = int(m["offset"])
        self._sets: dict[str, RemoteFileset] = {}

    def starts(self) -> dict[str, int]:
        return dict(self._starts)

    def fileset(self, segment_id: str) -> RemoteFileset | None:
        if segment_id not in self._starts:
            return None
        if segment_id not in self._sets:
            self._sets[segment_id] = self._decoded(segment_id, self._starts[segment_id])
        return self._sets[segment_id]

    def _decoded(self, segment_id: str, start: int) -> RemoteFileset:
        from klogtool.log import remote_objects as ro

        stem = f"{start:020d}-{segment_id}"
        manifest_path = self.path / f"{stem}.{ro.SUFFIX_MANIFEST}"
        manifest = ro.parse_manifest(manifest_path.read_bytes(), path=str(manifest_path))
        keys = dict(self.keys)
        if manifest.encryption is not None and self.default_key is not None:
            keys.setdefault(manifest.encryption.key_id, self.default_key)
        log_obj = self.path / f"{stem}.{ro.SUFFIX_LOG}"
        indexes_obj = self.path / f"{stem}.{ro.SUFFIX_INDEXES}"
        reader = ro.RemoteSegmentReader(
            manifest, keys=keys, log_path=str(log_obj), indexes_path=str(indexes_obj)
        )
        if not log_obj.is_file() or not indexes_obj.is_file():
            missing = log_obj if not log_obj.is_file() else indexes_obj
            raise InputError(
                f"remote segment {segment_id} has no {missing.name} object",
                path=str(missing),
                code=Code.REMOTE_SEGMENT_MISSING,
            )
        reader.check_log_size(log_obj.stat().st_size)
        files: dict[str, Path] = {}
        with _fetcher(log_obj) as fetch:
            files["log"] = self.spool / f"{stem}.log"
            with open(files["log"], "wb") as out:
                for chunk in reader.iter_log(fetch):
                    out.write(chunk)
        with _fetcher(indexes_obj) as fetch:
            for kind, data in reader.read_indexes(fetch).items():
                if data is not None:
                    files[_AIVEN_INDEXES[kind]] = self.spool / f"{stem}.{_AIVEN_INDEXES[kind]}"
                    files[_AIVEN_INDEXES[kind]].write_bytes(data)
        return RemoteFileset(start, segment_id, files, str(log_obj))


# Aiven's index kinds (remote_objects.INDEX_KINDS) -> the files a fileset holds
_AIVEN_INDEXES = {
    "offset": "index",
    "timestamp": "timeindex",
    "transaction": "txnindex",
    "leaderEpoch": "epochs",
    "producerSnapshot": "snapshot",
}


@contextmanager
def _fetcher(path: Path) -> Iterator[Callable[[int, int], bytes]]:
    """Ranged reads of a local file or an object (the storage layer's, retried)."""
    from klogtool.log import remote_objects

    if isinstance(path, storage.RemotePath):
        size = path.stat().st_size
        handle = path.store.file(path.key, str(path))
        yield lambda start, length: bytes(handle.read(start, min(start + length, size)))
        return
    with remote_objects.FileFetch(path) as fetch:
        yield fetch


RemoteLayout = LocalTieredStorage | AivenLayout


def open_layout(
    path: Path,
    *,
    keys: Mapping[str, bytes] | None = None,
    default_key: bytes | None = None,
    spool: Path | None = None,
) -> RemoteLayout:
    """The remote layout SOURCE ``path`` holds: a LocalTieredStorage partition directory
    (named ``<topic>-<partition>-<topic id>``), or an Aiven partition prefix (``<topic>-<topic
    id>/<partition>/`` holding ``.rsm-manifest`` objects; ``spool``: where segments decode)."""
    if not path.is_dir():
        raise InputError("not a directory or prefix", path=str(path), code=Code.NOT_A_DIR)
    m = _PARTITION_DIR.match(path.name)
    if m is not None:
        return LocalTieredStorage(path, m)
    parent = path.parent.name
    if path.name.isdigit() and len(parent) > 23 and parent[-23] == "-":
        layout_ = AivenLayout(
            path,
            parent[:-23],
            parent[-22:],
            keys or {},
            default_key,
            spool if spool is not None else Path(tempfile.gettempdir()),
        )
        if layout_.starts():
            return layout_
    raise InputError(
        "not a remote partition of Kafka's LocalTieredStorage (<topic>-<partition>-<topic id>)"
        " or of Aiven's tiered storage (<topic>-<topic id>/<partition>/ with .rsm-manifest "
        "objects)",
        path=str(path),
        code=Code.NOT_A_PARTITION_DIR,
    )


def find_partition(
    root: Path,
    topic: str,
    partition: int,
    topic_id: str,
    *,
    keys: Mapping[str, bytes] | None = None,
    default_key: bytes | None = None,
    spool: Path | None = None,
) -> RemoteLayout | None:
    """A partition's remote segments under ``root``: LocalTieredStorage's
    ``[kafka-tiered-storage/]<topic>-<partition>-<topic id>``, or Aiven's ``<topic>-<topic
    id>/<partition>``; None when neither is there."""
    candidates = [
        root / f"{topic}-{partition}-{topic_id}",
        root / "kafka-tiered-storage" / f"{topic}-{partition}-{topic_id}",
        root / f"{topic}-{topic_id}" / str(partition),
    ]
    for c in candidates:
        if c.is_dir():
            return open_layout(c, keys=keys, default_key=default_key, spool=spool)
    return None


@dataclass
class RemoteSegments:
    """What a tiered partition's remote tier adds before its local segments: the remote log's
    segments below the local log start (one reaching into the local log cut where the local
    log starts: replicas copy batches byte for byte, so the local start is a batch boundary
    of the remote copy too), how to show each, and what could not be read."""

    segments: list[SegmentFiles] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    size: int = 0
    notes: list[str] = field(default_factory=list)


def remote_segments(
    remote: RemoteLayout,
    log: list[RemoteSegment],
    local_start: int,
    spool: Path,
) -> RemoteSegments:
    """The segments of the remote log ``log`` (``RemotePartition.remote_log()``, in offset
    order) to read before a local log that starts at ``local_start``."""
    out = RemoteSegments()
    reach: int | None = None
    for seg in log:
        if seg.start_offset >= local_start:
            break  # the local log holds it
        fs = remote.fileset(seg.segment_id)
        if fs is None or "log" not in fs.files:
            out.notes.append(
                f"remote segment {seg.segment_id} (offsets {seg.start_offset}..{seg.end_offset})"
                f" has no files in {remote.path}: its offsets are not read"
            )
            continue
        if reach is not None and seg.start_offset > reach + 1:
            out.notes.append(f"offsets {reach + 1}..{seg.start_offset - 1} are in no segment")
        files = SegmentFiles(
            seg.start_offset,
            fs.files["log"],
            fs.files.get("index"),
            fs.files.get("timeindex"),
            fs.files.get("txnindex"),
        )
        if seg.end_offset >= local_start:  # read up to where the local log starts
            files = SegmentFiles(seg.start_offset, _cut(fs.files["log"], local_start, spool))
        out.segments.append(files)
        out.shown.append(fs.shown)
        assert files.log is not None
        out.size += files.log.stat().st_size
        reach = min(seg.end_offset, local_start - 1)
    if reach is not None and reach + 1 < local_start:
        out.notes.append(f"offsets {reach + 1}..{local_start - 1} are in no segment")
    return out


def _cut(log: Path, local_start: int, spool: Path) -> Path:
    """The batches of ``log`` below offset ``local_start``, as a file in ``spool``."""
    from klogtool.formats.records import SegmentScanner
    from klogtool.log.segment import mapped

    cut = spool / f"{log.name}.below-{local_start}"
    with mapped(log) as buf:
        end = 0
        for batch in SegmentScanner(buf, strict=False):
            if batch.base_offset >= local_start:
                break
            end = batch.position + batch.size
        with open(cut, "wb") as f:
            for i in range(0, end, 1 << 20):
                f.write(buf[i : min(end, i + (1 << 20))])
    return cut


@dataclass
class TieredReads:
    """``--remote-storage``: where the remote segments of the tiered partitions read are
    (``root``), the replays that say which they are (``tiers``), where Aiven's segments and
    cut copies go (``spool``), the RSA keys of encrypted ones."""

    root: Path
    spool: Path
    tiers: TierCache
    keys: Mapping[str, bytes] = field(default_factory=dict)
    default_key: bytes | None = None

    def before(
        self, part_dir: Path, topic: str | None, partition: int | None, local_start: int
    ) -> RemoteSegments:
        """The remote segments to read before the partition dir's local ones."""
        remote = self.tiers.partition(part_dir, topic, partition)
        if remote is None:
            return RemoteSegments()
        found = find_partition(
            self.root,
            remote.topic,
            remote.partition,
            remote.topic_id,
            keys=self.keys,
            default_key=self.default_key,
            spool=self.spool,
        )
        if found is None:
            return RemoteSegments(
                notes=[
                    f"{remote.topic}-{remote.partition}: its remote segments are not under "
                    f"{self.root} (neither layout's directory is there): only the local log "
                    "is read"
                ]
            )
        return remote_segments(found, remote.remote_log(), local_start, self.spool)
