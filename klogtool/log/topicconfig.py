"""Topic configs for the rewriting commands: Kafka's defaults, broker-level names, overrides.

A value comes from (most specific first): a per-topic setting (``--config topic=key=value``,
or a ``topic=key=value`` line of a properties file), the command's own option (e.g.
``--retention-ms``), the KRaft metadata log of the host (:mod:`klogtool.log.metadata`: the
topic's own config, then this broker's dynamic default, then the cluster's dynamic default),
a plain ``key=value`` line of a properties file (a broker default, under its topic name
``retention.ms`` or its broker name ``log.retention.ms``: the static server.properties, which
Kafka's dynamic configs override too), Kafka's default. Explicit flags beat what the host
holds: the operator asked for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from klogtool.codes import Code
from klogtool.errors import InputError, RefusedError
from klogtool.formats import checkpoint
from klogtool.formats.errors import FormatError
from klogtool.log.metadata import METADATA_DIR_NAME

if TYPE_CHECKING:
    from klogtool.log.metadata import ClusterConfigs

LONG_MAX = (1 << 63) - 1
ASSUME_DEFAULTS = "--assume-defaults"
INTERNAL_COMPACTED = ("__consumer_offsets", "__transaction_state")


@dataclass(frozen=True)
class TopicConfig:
    """The settings retention and compaction read, with Kafka's defaults."""

    cleanup_policy: tuple[str, ...] = ("delete",)
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    segment_bytes: int = 1 << 30
    segment_index_bytes: int = 10 << 20
    index_interval_bytes: int = 4096
    producer_id_expiration_ms: int = 24 * 3600 * 1000  # a broker setting
    # the cleaner's offset map (broker settings): 24 bytes a slot, filled to the load factor
    dedupe_buffer_size: int = 128 << 20
    dedupe_load_factor: float = 0.9
    # tiered storage (KIP-405, KIP-950): -2 = the whole log's limit (retention.ms / .bytes)
    remote_storage_enable: bool = False
    remote_log_copy_disable: bool = False
    local_retention_ms: int = -2
    local_retention_bytes: int = -2

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def tiered(self) -> bool:
        """Segments are copied to remote storage, and local retention holds for the disk
        (``remoteLogEnabledAndRemoteCopyEnabled``)."""
        return self.remote_storage_enable and not self.remote_log_copy_disable

    @property
    def disk_retention_ms(self) -> int:
        """The time limit of the segments on the disk: ``local.retention.ms`` of a tiered
        topic (-2: ``retention.ms``), else ``retention.ms``."""
        if self.tiered and self.local_retention_ms != -2:
            return self.local_retention_ms
        return self.retention_ms

    @property
    def disk_retention_bytes(self) -> int:
        """As :attr:`disk_retention_ms`, for ``local.retention.bytes``."""
        if self.tiered and self.local_retention_bytes != -2:
            return self.local_retention_bytes
        return self.retention_bytes

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy


# topic config name -> (field, parser); broker names map onto the same fields
def _int(text: str) -> int:
    return int(text.strip())


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"expected true or false, not {text!r}")
    return value == "true"


def _policy(text: str) -> tuple[str, ...]:
    parts = tuple(p.strip() for p in text.split(",") if p.strip())
    if not parts or any(p not in ("delete", "compact") for p in parts):
        raise ValueError(f"cleanup.policy must be delete, compact or both, not {text!r}")
    return parts


_TOPIC_KEYS: dict[str, tuple[str, Callable[[str], object]]] = {
    "cleanup.policy": ("cleanup_policy", _policy),
    "retention.ms": ("retention_ms", _int),
    "retention.bytes": ("retention_bytes", _int),
    "delete.retention.ms": ("delete_retention_ms", _int),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _int),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", _int),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", float),
    "segment.bytes": ("segment_bytes", _int),
    "segment.index.bytes": ("segment_index_bytes", _int),
    "index.interval.bytes": ("index_interval_bytes", _int),
    "producer.id.expiration.ms": ("producer_id_expiration_ms", _int),
    "log.cleaner.dedupe.buffer.size": ("dedupe_buffer_size", _int),
    "log.cleaner.io.buffer.load.factor": ("dedupe_load_factor", float),
    "remote.storage.enable": ("remote_storage_enable", _bool),
    "remote.log.copy.disable": ("remote_log_copy_disable", _bool),
    "local.retention.ms": ("local_retention_ms", _int),
    "local.retention.bytes": ("local_retention_bytes", _int),
}
_BROKER_KEYS = {
    "log.cleanup.policy": "cleanup.policy",
    "log.retention.ms": "retention.ms",
    "log.retention.bytes": "retention.bytes",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.segment.bytes": "segment.bytes",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.local.retention.ms": "local.retention.ms",
    "log.local.retention.bytes": "local.retention.bytes",
}
# log.retention.ms wins over minutes, which wins over hours (LogConfig)
_RETENTION_UNITS = {"log.retention.minutes": 60_000, "log.retention.hours": 3_600_000}


def known_keys() -> list[str]:
    return sorted(_TOPIC_KEYS)


def _apply(cfg: TopicConfig, key: str, value: str, where: str) -> TopicConfig:
    name, parse = _TOPIC_KEYS[key]
    try:
        parsed = parse(value)
    except ValueError:
        raise InputError(
            f"bad value {value!r} for {key}", path=where, code=Code.BAD_CONFIG
        ) from None
    return replace(cfg, **{name: parsed})  # type: ignore[arg-type]


@dataclass
class ConfigSource:
    """Where topic configs come from; :meth:`for_topic` resolves one topic's."""

    defaults: dict[str, str] = field(default_factory=dict)  # topic config name -> value
    topics: dict[str, dict[str, str]] = field(default_factory=dict)
    where: dict[tuple[str | None, str], str] = field(default_factory=dict)  # for messages
    units: dict[str, tuple[str, str]] = field(default_factory=dict)  # log.retention.hours/min

    def add_topic(self, topic: str, key: str, value: str, where: str) -> None:
        key = _BROKER_KEYS.get(key, key)
        if key not in _TOPIC_KEYS:
            raise InputError(
                f"unknown topic config {key!r} (known: {', '.join(known_keys())})",
                path=where,
                code=Code.BAD_CONFIG,
            )
        self.topics.setdefault(topic, {})[key] = value
        self.where[(topic, key)] = where

    def add_default(self, key: str, value: str, where: str) -> bool:
        """A broker-level or topic-level default; False when the key is not one we use."""
        if key in _RETENTION_UNITS:
            self.units[key] = (value, where)
            return True
        key = _BROKER_KEYS.get(key, key)
        if key not in _TOPIC_KEYS:
            return False
        self.defaults[key] = value
        self.where[(None, key)] = where
        return True

    def for_topic(
        self,
        topic: str | None,
        overrides: Mapping[str, object] | None = None,
        host: ClusterConfigs | None = None,
    ) -> TopicConfig:
        """The resolved config of ``topic``: per-topic > ``overrides`` (field name -> value,
        None = not given) > the host's metadata (``host``) > defaults > Kafka's defaults."""
        return self.resolve(topic, overrides, host)[0]

    def resolve(
        self,
        topic: str | None,
        overrides: Mapping[str, object] | None = None,
        host: ClusterConfigs | None = None,
    ) -> tuple[TopicConfig, dict[str, str]]:
        """:meth:`for_topic` and, per topic config name, where its value came from (a key
        missing: Kafka's default, or klogtool's rule for the internal compacted topics)."""
        sources: dict[str, str] = {}
        cfg = TopicConfig()
        if topic in INTERNAL_COMPACTED:
            cfg = replace(cfg, cleanup_policy=("compact",))
        if "retention.ms" not in self.defaults:
            for unit in ("log.retention.minutes", "log.retention.hours"):  # minutes win
                if unit in self.units:
                    value, where = self.units[unit]
                    try:
                        ms = int(value.strip()) * _RETENTION_UNITS[unit]
                    except ValueError:
                        raise InputError(
                            f"bad value {value!r} for {unit}", path=where, code=Code.BAD_CONFIG
                        ) from None
                    cfg = replace(cfg, retention_ms=ms)
                    sources["retention.ms"] = where
                    break
        for key, value in self.defaults.items():
            cfg = _apply(cfg, key, value, self.where.get((None, key), "config"))
            sources[key] = self.where.get((None, key), "config")
        if host is not None:
            layers = [host.defaults()]
            if topic is not None:
                layers.append(host.topics.get(topic, {}))
            for layer in layers:
                for raw_key, v in layer.items():
                    key = _BROKER_KEYS.get(raw_key, raw_key)
                    if key in _TOPIC_KEYS:
                        cfg = _apply(cfg, key, v.value, v.where)
                        sources[key] = v.where
        given = {k: v for k, v in (overrides or {}).items() if v is not None}
        if given:
            cfg = replace(cfg, **given)  # type: ignore[arg-type]
            by_field = {f: k for k, (f, _p) in _TOPIC_KEYS.items()}
            for f in given:
                sources[by_field.get(f, f)] = "--" + f.replace("_", "-")
        if topic is not None:
            for key, value in self.topics.get(topic, {}).items():
                cfg = _apply(cfg, key, value, self.where.get((topic, key), "config"))
                sources[key] = self.where.get((topic, key), "config")
        return cfg, sources


def parse_config_args(values: Iterable[str]) -> ConfigSource:
    """``--config`` values: ``topic=key=value``, or the path of a properties file."""
    src = ConfigSource()
    for value in values:
        path = Path(value)
        if value.count("=") >= 2 and not path.is_file():
            topic, key, v = value.split("=", 2)
            if not topic or not key:
                raise InputError(
                    f"expected TOPIC=KEY=VALUE or a properties file, not {value!r}",
                    path="--config",
                    code=Code.BAD_CONFIG,
                )
            src.add_topic(topic, key.strip(), v, f"--config {value}")
            continue
        if not path.is_file():
            raise InputError(
                "no such properties file (and not TOPIC=KEY=VALUE)",
                path=value,
                code=Code.NOT_FOUND,
            )
        _read_properties(src, path)
    return src


def _read_properties(src: ConfigSource, path: Path) -> None:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=str(path), code=Code.UNREADABLE) from e
    try:
        props = checkpoint.parse_properties(raw)
    except FormatError as e:
        raise InputError(str(e), path=str(path), position=e.position, code=e.code) from None
    for key, (pos, value) in props.items():
        where = f"{path}:{pos}"
        if "=" in value and (key not in _TOPIC_KEYS and key not in _BROKER_KEYS):
            # ``topic=key=value``: a per-topic setting
            k, v = value.split("=", 1)
            src.add_topic(key, k.strip(), v, where)
        else:
            src.add_default(key, value, where)  # unknown broker settings are ignored


# the topic configs explain reports, with where each value came from
EXPLAINED_KEYS = (
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "delete.retention.ms",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "min.cleanable.dirty.ratio",
    "segment.bytes",
    "remote.storage.enable",
    "local.retention.ms",
    "local.retention.bytes",
)


def unknown_because(topic: str | None, host: ClusterConfigs | None) -> str | None:
    """Why the host cannot vouch for ``topic``'s configs (None: it can): no KRaft metadata log
    was found (a ZooKeeper host keeps them in ZooKeeper), or the log does not hold the topic."""
    if host is None:
        return f"no KRaft metadata log ({METADATA_DIR_NAME}) found"
    if topic is not None and not host.knows(topic):
        return f"the metadata log {host.path} does not hold topic {topic}"
    return None


def config_sources(
    topic: str | None,
    cfg: TopicConfig,
    sources: Mapping[str, str],
    host: ClusterConfigs | None,
    keys: Iterable[str] = EXPLAINED_KEYS,
) -> list[dict[str, object]]:
    """Per key: ``{"key", "value", "source", "assumed"}``. A value no flag, file or metadata
    log set is Kafka's default; where the host cannot vouch for the topic
    (:func:`unknown_because`) it is *assumed*: the topic may be configured otherwise, and the
    source says how to set it."""
    why = unknown_because(topic, host)
    out: list[dict[str, object]] = []
    for key in keys:
        raw = getattr(cfg, _TOPIC_KEYS[key][0])
        if isinstance(raw, tuple):
            value = ",".join(raw)
        else:
            value = str(raw).lower() if isinstance(raw, bool) else str(raw)
        source = sources.get(key)
        assumed = False
        if source is None:
            if key == "cleanup.policy" and topic in INTERNAL_COMPACTED:
                source = "Kafka's rule for an internal topic"
            elif why is None:
                source = "Kafka's default (not set in the metadata log)"
            else:
                assumed = True
                source = (
                    f"Kafka's default, assumed: {why}; set it with "
                    f"--config {topic or 'TOPIC'}={key}=VALUE or --metadata-dir"
                )
        out.append({"key": key, "value": value, "source": source, "assumed": assumed})
    return out


def refuse_assumed(
    topic: str | None, assumed: list[str], host: ClusterConfigs | None, path: str
) -> RefusedError:
    """The one-line refusal of a rewrite that would decide by assumed configs."""
    name = topic or "TOPIC"
    return RefusedError(
        f"{' and '.join(assumed)} of {name} would only be assumed ({unknown_because(topic, host)}):"
        f" nothing deleted or compacted by a guess; give --metadata-dir DIR, "
        f"--config {name}={assumed[0]}=VALUE, or {ASSUME_DEFAULTS} to take Kafka's defaults",
        path=path,
        code=Code.CONFIG_ASSUMED,
    )
