"""Topic configs from a KRaft host's ``__cluster_metadata-0``, replayed the way a broker does.

The latest snapshot (``<offset>-<epoch>.checkpoint``: the full state up to, not including,
``offset``) replaces everything before it; then the log records at offsets >= that offset are
applied in order. ConfigRecord (resourceType TOPIC = 2 by topic name, BROKER = 4 with an empty
name for cluster defaults or a broker id for per-broker defaults), TopicRecord and
RemoveTopicRecord (a removed topic's configs go) are replayed; a later record wins and a
ConfigRecord with a null value deletes the key. Every value remembers where it came from.
FeatureLevelRecords give the finalized features (``metadata.version``: the release the
cluster runs, as levels; ``group.version``, ``transaction.version``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import checkpoint
from klogtool.formats.errors import FormatError
from klogtool.formats.limits import DEFAULT_LIMITS
from klogtool.formats.payloads.cluster_metadata import decode_metadata_record
from klogtool.formats.records import SegmentScanner
from klogtool.log import storage
from klogtool.log.segment import mapped

METADATA_DIR_NAME = "__cluster_metadata-0"
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
CONFIG_RECORD, TOPIC_RECORD, REMOVE_TOPIC_RECORD, FEATURE_LEVEL_RECORD = 4, 2, 9, 12
_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_SEGMENT = re.compile(r"^(\d{20})\.log$")


@dataclass(frozen=True)
class Value:
    value: str
    where: str  # "metadata log at offset N" / "metadata snapshot <file>"


@dataclass
class ClusterConfigs:
    """The replayed state: topic configs by topic name, cluster and per-broker defaults."""

    path: Path
    topics: dict[str, dict[str, Value]] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)  # topic id -> name
    cluster_defaults: dict[str, Value] = field(default_factory=dict)
    broker_defaults: dict[str, dict[str, Value]] = field(default_factory=dict)  # id -> configs
    features: dict[str, int] = field(default_factory=dict)  # metadata.version, group.version...
    node_id: str | None = None  # of the log dir's meta.properties, when known
    snapshot: Path | None = None
    last_offset: int | None = None  # the last record applied from the log

    def knows(self, topic: str) -> bool:
        """Whether the metadata holds ``topic`` (created and not removed, or configured): a
        topic it does not hold has no config the host can vouch for."""
        return topic in self.topics

    def defaults(self) -> dict[str, Value]:
        """The dynamic broker defaults that hold on this broker: its own over the cluster's."""
        out = dict(self.cluster_defaults)
        if self.node_id is not None:
            out.update(self.broker_defaults.get(self.node_id, {}))
        return out

    def _apply(self, data: dict[str, Any], api_key: int, where: str) -> None:
        if api_key == FEATURE_LEVEL_RECORD:
            self.features[data["name"]] = data["featureLevel"]
        elif api_key == TOPIC_RECORD:
            name, tid = data["name"], data["topicId"]
            self.topic_ids[tid] = name
            self.topics.setdefault(name, {})
        elif api_key == REMOVE_TOPIC_RECORD:
            name = self.topic_ids.pop(data["topicId"], None)
            if name is not None:
                self.topics.pop(name, None)
        elif api_key == CONFIG_RECORD:
            rtype, rname = data["resourceType"], data["resourceName"]
            if rtype == TOPIC_RESOURCE:
                target = self.topics.setdefault(rname, {})
            elif rtype == BROKER_RESOURCE:
                target = (
                    self.cluster_defaults
                    if rname == ""
                    else self.broker_defaults.setdefault(rname, {})
                )
            else:
                return
            if data["value"] is None:
                target.pop(data["name"], None)
            else:
                target[data["name"]] = Value(data["value"], where)


def _records(path: Path, start: int = 0) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(offset, api key, data) of every decodable metadata record of a file from ``start``."""
    with mapped(path) as buf:  # mapped, not read whole: a metadata segment grows to 1 GiB
        for batch in SegmentScanner(buf, strict=False):
            if batch.is_control or batch.last_offset < start:
                continue
            # The default bounds, not a command's: configs are read before (and apart from)
            # the data the command's --max-batch-bytes is about, and metadata batches are small.
            for rec in batch.records(DEFAULT_LIMITS.max_batch_bytes):
                if rec.offset < start:
                    continue
                try:
                    meta = decode_metadata_record(rec.value)
                except FormatError:
                    continue
                if meta.data is not None:
                    yield rec.offset, meta.api_key, meta.data


def _meta_properties(log_dir: Path) -> dict[str, str]:
    try:
        props = checkpoint.parse_properties((log_dir / "meta.properties").read_bytes())
    except (OSError, FormatError):
        return {}
    return {k: v.strip() for k, (_pos, v) in props.items()}


def node_id_of(log_dir: Path) -> str | None:
    """``node.id`` (or ``broker.id``) of ``log_dir/meta.properties``, when readable."""
    props = _meta_properties(log_dir)
    return props.get("node.id", props.get("broker.id"))


def broker_of(log_dir: Path) -> tuple[str, str] | None:
    """(cluster.id, node id) of ``log_dir/meta.properties``: the same in every log dir of one
    broker (KIP-858 gives each its own directory.id); None when either is missing."""
    props = _meta_properties(log_dir)
    node = props.get("node.id", props.get("broker.id"))
    cluster = props.get("cluster.id")
    return (cluster, node) if cluster and node else None


def nearby_log_dirs(log_dir: Path) -> Iterator[Path]:
    """Directories that may be other log dirs of the same broker: the log dir's siblings
    (``/var/lib/kafka/data-1``, ``data-2``), and the same path on sibling mounts
    (``/data1/kafka-logs``, ``/data2/kafka-logs``; ``/mnt/d1/kafka/logs``, ``/mnt/d2/...``)."""
    path = Path(os.path.abspath(log_dir))
    for varying in [path, *path.parents][: min(3, len(path.parts) - 1)]:
        tail = path.relative_to(varying)  # varying: the component that differs between disks
        try:
            others = sorted(varying.parent.iterdir())
        except OSError:
            continue
        for other in others:
            if other != varying and (candidate := other / tail).is_dir():
                yield candidate


def log_dirs_named(paths: Iterable[str]) -> tuple[Path, ...]:
    """The log dirs of a command's PATH arguments (a log dir, or the log dir of a partition
    dir or segment named): the directories with a ``meta.properties`` among each PATH and its
    two parents. Their metadata logs hold for each other (:func:`metadata_dir_for`)."""
    found: dict[Path, None] = {}
    for arg in paths:
        candidates: tuple[Path, ...]
        if storage.is_remote(arg):  # only in the PATH's own listing: one above costs one more
            path = storage.path_of(arg)
            candidates = (path,) if path.is_dir() else ()
        else:
            path = Path(os.path.abspath(arg))
            candidates = (path, path.parent, path.parent.parent)
        for d in candidates:
            if (d / "meta.properties").is_file():
                found[d] = None
                break
    return tuple(found)


def metadata_dir_for(log_dir: Path, given: Iterable[Path] = ()) -> Path | None:
    """The ``__cluster_metadata-0`` whose configs hold for the partitions of ``log_dir``: its
    own, else that of another log dir of the same broker (same cluster.id and node id in
    meta.properties): one of ``given`` (the log dirs a command was given) or one nearby. A
    KRaft broker keeps the metadata log in one of its log dirs (``metadata.log.dir``)."""
    own = find_metadata_dir(log_dir)
    if own is not None:
        return own
    broker = broker_of(log_dir)
    if broker is None:
        return None
    for other in [*given, *nearby_log_dirs(log_dir)]:
        found = find_metadata_dir(other)
        if found is not None and broker_of(other) == broker:
            return found
    return None


def replay(path: Path, node_id: str | None = None) -> ClusterConfigs:
    """Replay the ``__cluster_metadata-0`` directory ``path`` (see the module docstring)."""
    state = ClusterConfigs(path=path, node_id=node_id)
    snapshots = sorted((int(m[1]), p) for p in path.iterdir() if (m := _SNAPSHOT.match(p.name)))
    start = 0
    if snapshots:
        start, snap = snapshots[-1]
        state.snapshot = snap
        for _off, key, data in _records(snap):
            state._apply(data, key, f"metadata snapshot {snap.name}")
    for p in sorted(p for p in path.iterdir() if _SEGMENT.match(p.name)):
        for off, key, data in _records(p, start):
            state._apply(data, key, f"metadata log at offset {off}")
            state.last_offset = off
    return state


def find_metadata_dir(log_dir: Path) -> Path | None:
    """``log_dir/__cluster_metadata-0`` when it is a directory."""
    d = log_dir / METADATA_DIR_NAME
    return d if d.is_dir() else None


def load_for(
    log_dir: Path, metadata_dir: Path | None = None, given: Iterable[Path] = ()
) -> ClusterConfigs | None:
    """The replayed metadata for partitions of ``log_dir``: ``metadata_dir`` when given, else
    :func:`metadata_dir_for`; None when there is none (ZooKeeper, or not found)."""
    d = metadata_dir if metadata_dir is not None else metadata_dir_for(log_dir, given)
    if d is None:
        return None
    node = node_id_of(log_dir)
    if node is None and metadata_dir is not None:
        node = node_id_of(metadata_dir.parent)
    try:
        return replay(d, node)
    except OSError as e:
        raise InputError(
            f"cannot read the metadata log: {e.strerror} (its topic configs are needed; "
            "--metadata-dir names another copy)",
            path=str(e.filename or d),
            code=Code.UNREADABLE,
        ) from e
