"""Text files of a Kafka log dir (docs/kafka-rules.md, Partition directory files).

* offset checkpoints (``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
  ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``) and ``leader-epoch-checkpoint``:
  Kafka's ``CheckpointFile`` format (version line, count line, one entry per line);
* ``partition.metadata`` (``version: 0`` / ``topic_id: <uuid>``, no trailing newline);
* ``meta.properties`` (Java properties);
* ``.kafka_cleanshutdown`` and KRaft ``quorum-state`` (JSON).

Every parser takes ``str`` or bytes. Bytes are decoded as UTF-8 strictly (as Kafka's readers do);
a ``str`` is encoded to UTF-8 first, so positions are always UTF-8 byte positions. Lines are
split like Java's ``BufferedReader.readLine`` (``\\n``, ``\\r`` or ``\\r\\n``; a final line
without a terminator counts; a final terminator does not start an empty line). Every error is a
:class:`FormatError` (or subclass) whose position is the byte position of the offending line (or
token). Encoders raise ``ValueError`` for values Kafka could not have written.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from klogtool.formats.errors import FormatError, TruncatedError, UnsupportedError

Text = str | bytes | bytearray | memoryview

CHECKPOINT_VERSION = 0
PARTITION_METADATA_VERSION = 0
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid.METADATA_TOPIC_ID, used by __cluster_metadata

OFFSET_CHECKPOINT_NAMES = frozenset(
    {
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
    }
)
LEADER_EPOCH_CHECKPOINT_NAME = "leader-epoch-checkpoint"
PARTITION_METADATA_NAME = "partition.metadata"
META_PROPERTIES_NAME = "meta.properties"
CLEAN_SHUTDOWN_NAME = ".kafka_cleanshutdown"
QUORUM_STATE_NAME = "quorum-state"

# Kinds returned by sniff_checkpoint_kind
KIND_OFFSET_CHECKPOINT = "offset-checkpoint"
KIND_LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
KIND_PARTITION_METADATA = "partition-metadata"
KIND_META_PROPERTIES = "meta-properties"
KIND_CLEAN_SHUTDOWN = "clean-shutdown"
KIND_QUORUM_STATE = "quorum-state"

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

_MALFORMED = "malformed-line"
_VERSION = "unsupported-version"

_EOL = re.compile(rb"\r\n|\r|\n")
_JAVA_WS = re.compile(r"[ \t\n\x0b\f\r]+")  # Java regex \s
_COLON_WS = re.compile(r":[ \t\n\x0b\f\r]+")  # PartitionMetadataReadBuffer's ":\s+"
_INT_RE = re.compile(r"[+-]?[0-9]+")  # Integer.parseInt / Long.parseLong (ASCII digits)
_UUID_RE = re.compile(r"[A-Za-z0-9_-]{22}")

T = TypeVar("T")


# --------------------------------------------------------------------------------------------
# shared helpers


def _to_bytes(data: Text) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    return bytes(data)


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(
            f"invalid UTF-8 at byte {e.start}: {e.reason}", e.start, "bad-encoding"
        ) from None


def _lines(raw: bytes) -> list[tuple[int, str]]:
    """(byte position, text) of each line, split like ``BufferedReader.readLine``."""
    _decode(raw)  # whole-buffer strict check first: splitting on ASCII bytes is then safe
    out: list[tuple[int, str]] = []
    pos = 0
    size = len(raw)
    while pos < size:
        m = _EOL.search(raw, pos)
        if m is None:
            out.append((pos, raw[pos:].decode("utf-8")))
            break
        out.append((pos, raw[pos : m.start()].decode("utf-8")))
        pos = m.end()
    return out


def _java_split(pattern: re.Pattern[str], s: str) -> list[str]:
    """Java's ``String.split(regex)``: trailing empty strings removed, leading kept."""
    parts = pattern.split(s)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _parse_int(s: str, bounds: tuple[int, int]) -> int | None:
    if not _INT_RE.fullmatch(s):
        return None
    # Java's parseLong takes any number of leading zeros; more than 19 digits after them is
    # out of any bound here, and converted would pass Python's limit of 4,300 digits
    digits = s.lstrip("+-").lstrip("0")
    if len(digits) > 19:
        return None
    value = int(digits or "0") * (-1 if s.startswith("-") else 1)
    if not bounds[0] <= value <= bounds[1]:
        return None
    return value


def _byte_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def _malformed(line: str, pos: int) -> FormatError:
    if len(line) > 100:  # one line on a terminal, however long the file's
        line = f"{line[:60]}... ({len(line):,} characters)"
    return FormatError(f"Malformed line in checkpoint file: '{line}'", pos, _MALFORMED)


def _check_int(name: str, value: int, bounds: tuple[int, int]) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, not {value!r}")
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"{name} {value} is out of range")


# --------------------------------------------------------------------------------------------
# CheckpointFile format (offset checkpoints, leader-epoch-checkpoint)


def _read_checkpoint(
    data: Text, parse_entry: Callable[[list[str]], T | None]
) -> tuple[int | None, list[tuple[int, T]]]:
    """Kafka's ``CheckpointReadBuffer.read``: returns (version or None if empty, entries with
    their line positions)."""
    lines = _lines(_to_bytes(data))
    if not lines:
        return None, []
    pos, line = lines[0]
    version = _parse_int(line, _INT32)
    if version is None:
        raise _malformed(line, pos)
    if version != CHECKPOINT_VERSION:
        raise UnsupportedError(
            f"Unrecognised version: {version}, expected version: {CHECKPOINT_VERSION} in "
            f"checkpoint file",
            pos,
            _VERSION,
        )
    if len(lines) < 2:
        return version, []
    count_pos, line = lines[1]
    expected = _parse_int(line, _INT32)
    if expected is None or expected < 0:
        raise _malformed(line, count_pos)
    entries: list[tuple[int, T]] = []
    for pos, line in lines[2:]:
        entry = parse_entry(_java_split(_JAVA_WS, line))
        if entry is None:
            raise _malformed(line, pos)
        entries.append((pos, entry))
    if len(entries) != expected:
        raise FormatError(
            f"Expected {expected} entries in checkpoint file, but found {len(entries)}",
            count_pos,
            "count-mismatch",
        )
    return version, entries


def _encode_checkpoint(lines: list[str]) -> bytes:
    text = f"{CHECKPOINT_VERSION}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
    return text.encode("utf-8")


TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class OffsetCheckpoint:
    """``version`` is None for an empty file (which Kafka reads as no entries). ``entries`` keep
    file order; a repeated partition keeps its last offset (as Kafka's map does) and is listed
    in ``duplicates``."""

    version: int | None
    entries: dict[TopicPartition, int]
    duplicates: tuple[TopicPartition, ...] = ()


def _offset_entry(parts: list[str]) -> tuple[TopicPartition, int] | None:
    if len(parts) != 3:
        return None
    partition = _parse_int(parts[1], _INT32)
    offset = _parse_int(parts[2], _INT64)
    if partition is None or offset is None:
        return None
    return (parts[0], partition), offset


def parse_offset_checkpoint(data: Text) -> OffsetCheckpoint:
    """An offset checkpoint (``<topic> <partition> <offset>`` lines)."""
    version, items = _read_checkpoint(data, _offset_entry)
    entries: dict[TopicPartition, int] = {}
    duplicates: list[TopicPartition] = []
    for _, (tp, offset) in items:
        if tp in entries:
            duplicates.append(tp)
        entries[tp] = offset
    return OffsetCheckpoint(version, entries, tuple(duplicates))


def encode_offset_checkpoint(entries: Mapping[TopicPartition, int]) -> bytes:
    """Version 0, count, then ``topic partition offset`` lines sorted by (topic, partition)."""
    lines = []
    for (topic, partition), offset in sorted(entries.items()):
        if not isinstance(topic, str) or not topic or _JAVA_WS.search(topic):
            raise ValueError(f"topic {topic!r} cannot be written to a checkpoint file")
        _check_int("partition", partition, _INT32)
        _check_int("offset", offset, _INT64)
        lines.append(f"{topic} {partition} {offset}")
    return _encode_checkpoint(lines)


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class EpochProblem(NamedTuple):
    entry_index: int  # 0-based index of the entry the problem was found at
    message: str


def _epoch_entry(parts: list[str]) -> EpochEntry | None:
    if len(parts) != 2:
        return None
    epoch = _parse_int(parts[0], _INT32)
    start_offset = _parse_int(parts[1], _INT64)
    if epoch is None or start_offset is None:
        return None
    return EpochEntry(epoch, start_offset)


def parse_leader_epoch_checkpoint(data: Text) -> list[EpochEntry]:
    """A ``leader-epoch-checkpoint`` (``<epoch> <start offset>`` lines). Ordering is not checked
    here; see :func:`validate_leader_epochs`."""
    _, items = _read_checkpoint(data, _epoch_entry)
    return [entry for _, entry in items]


def encode_leader_epoch_checkpoint(entries: Iterable[EpochEntry]) -> bytes:
    """Version 0, count, ``epoch start_offset`` lines in the order given."""
    lines = []
    for epoch, start_offset in entries:
        _check_int("epoch", epoch, _INT32)
        _check_int("start offset", start_offset, _INT64)
        lines.append(f"{epoch} {start_offset}")
    return _encode_checkpoint(lines)


def validate_leader_epochs(entries: Iterable[EpochEntry]) -> list[EpochProblem]:
    """Problems with a leader epoch list: negative values, epochs or start offsets not strictly
    increasing (the leader epoch cache keeps both strictly increasing)."""
    problems: list[EpochProblem] = []
    prev: EpochEntry | None = None
    for i, entry in enumerate(entries):
        if entry.epoch < 0:
            problems.append(EpochProblem(i, f"epoch {entry.epoch} is negative"))
        if entry.start_offset < 0:
            problems.append(EpochProblem(i, f"start offset {entry.start_offset} is negative"))
        if prev is not None:
            if entry.epoch <= prev.epoch:
                problems.append(
                    EpochProblem(
                        i, f"epoch {entry.epoch} does not increase (previous epoch {prev.epoch})"
                    )
                )
            if entry.start_offset <= prev.start_offset:
                problems.append(
                    EpochProblem(
                        i,
                        f"start offset {entry.start_offset} of epoch {entry.epoch} does not "
                        f"increase (previous start offset {prev.start_offset} of epoch "
                        f"{prev.epoch})",
                    )
                )
        prev = entry
    return problems


# --------------------------------------------------------------------------------------------
# uuids and partition.metadata


def uuid_text_to_bytes(text: str) -> bytes:
    """16 bytes of a Kafka uuid text (URL-safe base64, no padding, 22 chars). Only the
    canonical form Kafka writes is accepted (no padding, unused low bits zero). Errors are
    positioned relative to the start of ``text`` (re-anchor with ``.at()``)."""
    if not _UUID_RE.fullmatch(text):
        raise FormatError(
            f"'{text}' is not a uuid (22 characters of URL-safe base64 without padding)",
            0,
            "bad-uuid",
        )
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError):  # pragma: no cover - regex already guarantees it
        raise FormatError(f"'{text}' is not valid base64", 0, "bad-uuid") from None
    if uuid_bytes_to_text(raw) != text:
        raise FormatError(f"'{text}' is not the canonical encoding of a uuid", 21, "bad-uuid")
    return raw


def uuid_bytes_to_text(raw: bytes) -> str:
    """Kafka's text form of 16 uuid bytes."""
    if len(raw) != 16:
        raise ValueError(f"a uuid is 16 bytes, not {len(raw)}")
    return base64.urlsafe_b64encode(bytes(raw)).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class PartitionMetadata:
    version: int
    topic_id: str  # the base64 text form


def _colon_value(line: str, pos: int, key: str) -> tuple[str, int]:
    parts = _java_split(_COLON_WS, line)
    if len(parts) != 2 or parts[0] != key:
        raise FormatError(
            f"Malformed line in partition metadata file: '{line}' (expected '{key}: <value>')",
            pos,
            _MALFORMED,
        )
    m = _COLON_WS.search(line)
    value_pos = pos + _byte_len(line[: m.end()]) if m else pos
    return parts[1], value_pos


def parse_partition_metadata(data: Text) -> PartitionMetadata:
    """``version: N`` then ``topic_id: <uuid>`` (Kafka's PartitionMetadataReadBuffer: lines split
    on ``:\\s+``; version >= 0; the zero uuid is invalid; lines after the second are ignored).
    Stricter than the broker in one respect: the key names must be ``version`` and
    ``topic_id``."""
    lines = _lines(_to_bytes(data))
    if not lines:
        raise TruncatedError("partition metadata file is empty", 0)
    pos, line = lines[0]
    text, value_pos = _colon_value(line, pos, "version")
    version = _parse_int(text, _INT32)
    if version is None:
        raise FormatError(
            f"Malformed line in partition metadata file: '{line}'", value_pos, _MALFORMED
        )
    if version < PARTITION_METADATA_VERSION:
        raise UnsupportedError(
            f"Unrecognized version of partition metadata file: {version}", value_pos, _VERSION
        )
    if len(lines) < 2:
        raise TruncatedError(
            "partition metadata file ends before the topic_id line", _byte_len(line) + pos
        )
    pos, line = lines[1]
    topic_id, value_pos = _colon_value(line, pos, "topic_id")
    try:
        uuid_text_to_bytes(topic_id)
    except FormatError as e:
        raise e.at(value_pos) from None
    if topic_id == ZERO_UUID:
        raise FormatError("Invalid topic ID in partition metadata file", value_pos, "bad-uuid")
    return PartitionMetadata(version, topic_id)


def encode_partition_metadata(topic_id: str, *, version: int = PARTITION_METADATA_VERSION) -> bytes:
    """Exactly ``version: 0\\ntopic_id: <id>`` with no trailing newline."""
    try:
        uuid_text_to_bytes(topic_id)
    except FormatError as e:
        raise ValueError(str(e)) from None
    if topic_id == ZERO_UUID:
        raise ValueError("the zero uuid is not a valid topic id")
    _check_int("version", version, (0, _INT32[1]))
    return f"version: {version}\ntopic_id: {topic_id}".encode("ascii")


# --------------------------------------------------------------------------------------------
# meta.properties


_KNOWN_META_KEYS = ("version", "cluster.id", "node.id", "broker.id", "directory.id")
_PROP_WS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


@dataclass(frozen=True)
class MetaProperties:
    """``node_id`` / ``broker_id`` are the raw ``node.id`` / ``broker.id`` properties (Kafka
    uses node.id for v1, broker.id for v0). ``extra`` holds every other property."""

    version: int
    cluster_id: str | None = None
    node_id: int | None = None
    broker_id: int | None = None
    directory_id: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


def _logical_lines(raw: bytes) -> list[tuple[int, str]]:
    """Java ``Properties`` logical lines: leading whitespace skipped, blank and comment lines
    dropped, backslash-continued lines joined."""
    out: list[tuple[int, str]] = []
    natural = _lines(raw)
    i = 0
    while i < len(natural):
        pos, line = natural[i]
        i += 1
        stripped = line.lstrip(_PROP_WS)
        if not stripped or stripped[0] in "#!":
            continue
        logical = stripped
        while _odd_trailing_backslashes(logical):
            logical = logical[:-1]
            if i >= len(natural):
                break
            logical += natural[i][1].lstrip(_PROP_WS)
            i += 1
        out.append((pos + _byte_len(line) - _byte_len(stripped), logical))
    return out


def _odd_trailing_backslashes(s: str) -> bool:
    n = len(s) - len(s.rstrip("\\"))
    return n % 2 == 1


def _unescape(s: str, pos: int) -> str:
    out: list[str] = []
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        i += 1
        if c != "\\" or i >= n:
            out.append(c)
            continue
        c = s[i]
        i += 1
        if c == "u":
            digits = s[i : i + 4]
            if len(digits) != 4 or not re.fullmatch(r"[0-9A-Fa-f]{4}", digits):
                raise FormatError("Malformed \\uxxxx encoding.", pos, _MALFORMED)
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    result = "".join(out)
    try:  # join UTF-16 surrogate pairs written as two \\u escapes
        return result.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        raise FormatError("unpaired surrogate in \\u escape", pos, _MALFORMED) from None


def _split_property(line: str) -> tuple[str, str]:
    key_len = 0
    value_start = len(line)
    has_sep = False
    backslash = False
    while key_len < len(line):
        c = line[key_len]
        if c in "=:" and not backslash:
            value_start = key_len + 1
            has_sep = True
            break
        if c in _PROP_WS and not backslash:
            value_start = key_len + 1
            break
        backslash = (not backslash) if c == "\\" else False
        key_len += 1
    while value_start < len(line):
        c = line[value_start]
        if c not in _PROP_WS:
            if not has_sep and c in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return line[:key_len], line[value_start:]


def parse_properties(data: Text) -> dict[str, tuple[int, str]]:
    """Java properties text → {key: (byte position of its line, value)}; the last duplicate
    wins. Escapes ``\\t \\n \\r \\f \\uXXXX`` and ``\\<char>`` are decoded."""
    props: dict[str, tuple[int, str]] = {}
    for pos, line in _logical_lines(_to_bytes(data)):
        key, value = _split_property(line)
        props[_unescape(key, pos)] = (pos, _unescape(value, pos))
    return props


def _meta_int(props: dict[str, tuple[int, str]], key: str) -> int | None:
    if key not in props:
        return None
    pos, text = props[key]
    value = _parse_int(text, _INT32)
    if value is None:
        raise FormatError(f"Unable to read {key} '{text}' as a base-10 int", pos, "bad-property")
    return value


def parse_meta_properties(data: Text) -> MetaProperties:
    """``meta.properties``, validated as ``MetaProperties.Builder`` does: version 0 (default
    when absent) or 1; v1 requires ``cluster.id`` and ``node.id``; ids that Kafka reads must be
    ints; ``directory.id`` must be a uuid. A property Kafka ignores for this version (node.id in
    v0, broker.id in v1) is kept as an int when it is one, else left in ``extra``."""
    props = parse_properties(data)
    version = 0
    if "version" in props:
        pos, text = props["version"]
        parsed = _parse_int(text.strip(), _INT32)
        if parsed is None:
            raise FormatError(
                f"Invalid meta.properties version string '{text}'", pos, "bad-property"
            )
        if parsed not in (0, 1):
            raise UnsupportedError(
                f"Unknown meta.properties version number {parsed}", pos, _VERSION
            )
        version = parsed
    extra = {k: v for k, (_, v) in props.items() if k not in _KNOWN_META_KEYS}
    required_int = "node.id" if version == 1 else "broker.id"
    ignored_int = "broker.id" if version == 1 else "node.id"
    ids: dict[str, int | None] = {required_int: _meta_int(props, required_int)}
    try:
        ids[ignored_int] = _meta_int(props, ignored_int)
    except FormatError:
        ids[ignored_int] = None
        extra[ignored_int] = props[ignored_int][1]
    cluster_id = props["cluster.id"][1] if "cluster.id" in props else None
    if version == 1:
        end = len(_to_bytes(data))
        if cluster_id is None:
            raise FormatError("cluster.id was not found.", end, "missing-property")
        if ids["node.id"] is None:
            raise FormatError("node.id was not found.", end, "missing-property")
    directory_id = None
    if "directory.id" in props:
        pos, directory_id = props["directory.id"]
        try:
            uuid_text_to_bytes(directory_id)
        except FormatError as e:
            raise FormatError(f"directory.id: {e.message}", pos, "bad-uuid") from None
    return MetaProperties(
        version, cluster_id, ids["node.id"], ids["broker.id"], directory_id, extra
    )


def _escape_property(s: str, *, is_key: bool) -> str:
    """Java ``Properties.saveConvert`` (characters outside ASCII kept, written as UTF-8)."""
    out: list[str] = []
    for i, c in enumerate(s):
        if c == "\\":
            out.append("\\\\")
        elif c == " ":
            out.append("\\ " if i == 0 or is_key else " ")
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\f":
            out.append("\\f")
        elif c in "=:#!":
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return "".join(out)


def encode_meta_properties(meta: MetaProperties, *, date_comment: str | None = None) -> bytes:
    """Java properties text: a ``#`` line (and ``#<date_comment>`` if given, as
    ``Properties.store`` writes), then version, cluster.id, node.id/broker.id, directory.id and
    ``extra`` sorted by key. The result must be valid per :func:`parse_meta_properties`."""
    if meta.version not in (0, 1):
        raise ValueError(f"meta.properties version must be 0 or 1, not {meta.version}")
    if meta.version == 1 and (meta.cluster_id is None or meta.node_id is None):
        raise ValueError("meta.properties version 1 requires cluster.id and node.id")
    for name, id_value in (("node.id", meta.node_id), ("broker.id", meta.broker_id)):
        if id_value is not None:
            _check_int(name, id_value, _INT32)
    if meta.directory_id is not None:
        try:
            uuid_text_to_bytes(meta.directory_id)
        except FormatError as e:
            raise ValueError(f"directory.id: {e.message}") from None
    clash = set(meta.extra) & set(_KNOWN_META_KEYS)
    if clash:
        raise ValueError(f"extra properties clash with known keys: {sorted(clash)}")
    pairs: list[tuple[str, str]] = [("version", str(meta.version))]
    if meta.cluster_id is not None:
        pairs.append(("cluster.id", meta.cluster_id))
    if meta.node_id is not None:
        pairs.append(("node.id", str(meta.node_id)))
    if meta.broker_id is not None:
        pairs.append(("broker.id", str(meta.broker_id)))
    if meta.directory_id is not None:
        pairs.append(("directory.id", meta.directory_id))
    pairs.extend(sorted(meta.extra.items()))
    lines = ["#"]
    if date_comment is not None:
        if _EOL.search(date_comment.encode("utf-8")):
            raise ValueError("date_comment must be a single line")
        lines.append("#" + date_comment)
    for key, value in pairs:
        lines.append(
            _escape_property(key, is_key=True) + "=" + _escape_property(value, is_key=False)
        )
    return ("\n".join(lines) + "\n").encode("utf-8")


# --------------------------------------------------------------------------------------------
# JSON files: .kafka_cleanshutdown, quorum-state


def _json_object(data: Text, what: str) -> dict[str, Any]:
    raw = _to_bytes(data)
    text = _decode(raw)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise FormatError(
            f"{what} is not valid JSON: {e.msg}", _byte_len(text[: e.pos]), "bad-json"
        ) from None
    except RecursionError:
        raise FormatError(f"{what} nests too deeply", 0, "bad-json") from None
    if not isinstance(value, dict):
        raise FormatError(f"{what} is not a JSON object", 0, "bad-json")
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class CleanShutdown:
    """``version``/``broker_epoch`` are None for an empty file (what brokers before KIP-966
    wrote; the file's existence is what matters)."""

    version: int | None
    broker_epoch: int | None


def parse_clean_shutdown(data: Text) -> CleanShutdown:
    """``.kafka_cleanshutdown``: empty, or ``{"version":0,"brokerEpoch":N}``."""
    if not _to_bytes(data).strip():
        return CleanShutdown(None, None)
    obj = _json_object(data, "clean shutdown file")
    version = obj.get("version")
    epoch = obj.get("brokerEpoch")
    if not _is_int(version) or not _is_int(epoch):
        raise FormatError(
            "clean shutdown file needs integer 'version' and 'brokerEpoch' fields", 0, "bad-json"
        )
    if version != 0:
        raise UnsupportedError(f"Unknown clean shutdown file version {version}", 0, _VERSION)
    return CleanShutdown(version, epoch)


_QUORUM_INT_FIELDS = ("leaderId", "leaderEpoch", "votedId", "appliedOffset")


def parse_quorum_state(data: Text) -> dict[str, Any]:
    """KRaft ``quorum-state`` (QuorumStateData JSON): an object with an integer
    ``data_version`` >= 0 and integer ``leaderEpoch``; the id/offset fields, when present, must be
    integers and ``currentVoters``, when present and not null, a list. Returned as parsed."""
    obj = _json_object(data, "quorum-state")
    data_version = obj.get("data_version")
    if not isinstance(data_version, int) or isinstance(data_version, bool) or data_version < 0:
        raise FormatError("quorum-state has no integer data_version", 0, "bad-json")
    if "leaderEpoch" not in obj:
        raise FormatError("quorum-state has no leaderEpoch", 0, "bad-json")
    for name in _QUORUM_INT_FIELDS:
        if name in obj and not _is_int(obj[name]):
            raise FormatError(f"quorum-state field {name} is not an integer", 0, "bad-json")
    voters = obj.get("currentVoters")
    if voters is not None and not isinstance(voters, list):
        raise FormatError("quorum-state field currentVoters is not a list", 0, "bad-json")
    return obj


# --------------------------------------------------------------------------------------------
# sniffing


def _parses(fn: Callable[[Text], object], data: bytes) -> bool:
    try:
        fn(data)
    except FormatError:
        return False
    return True


_BY_NAME: dict[str, tuple[str, Callable[[Text], object]]] = {
    **{n: (KIND_OFFSET_CHECKPOINT, parse_offset_checkpoint) for n in OFFSET_CHECKPOINT_NAMES},
    LEADER_EPOCH_CHECKPOINT_NAME: (KIND_LEADER_EPOCH_CHECKPOINT, parse_leader_epoch_checkpoint),
    PARTITION_METADATA_NAME: (KIND_PARTITION_METADATA, parse_partition_metadata),
    META_PROPERTIES_NAME: (KIND_META_PROPERTIES, parse_meta_properties),
    CLEAN_SHUTDOWN_NAME: (KIND_CLEAN_SHUTDOWN, parse_clean_shutdown),
    QUORUM_STATE_NAME: (KIND_QUORUM_STATE, parse_quorum_state),
}


def _sniff_content(data: bytes) -> str | None:
    if _parses(parse_partition_metadata, data):
        return KIND_PARTITION_METADATA
    stripped = data.lstrip()
    if stripped.startswith(b"{"):
        if _parses(parse_quorum_state, data):
            return KIND_QUORUM_STATE
        if b"brokerEpoch" in data and _parses(parse_clean_shutdown, data):
            return KIND_CLEAN_SHUTDOWN
        return None
    try:
        _, offsets = _read_checkpoint(data, _offset_entry)
        if offsets:
            return KIND_OFFSET_CHECKPOINT
    except FormatError:
        pass
    try:
        _, epochs = _read_checkpoint(data, _epoch_entry)
        if epochs:
            return KIND_LEADER_EPOCH_CHECKPOINT
    except FormatError:
        pass
    if _is_meta_properties(data, by_name=False):
        return KIND_META_PROPERTIES
    return None


_BINARY = re.compile(rb"[\x00-\x08\x0e-\x1f\x7f]")


def _is_meta_properties(data: bytes, *, by_name: bool) -> bool:
    """Parses as meta.properties and names a version or an id (an arbitrary ``key=value``
    file would otherwise pass as a v0 file with nothing in it); without the name to go on,
    both a version and an id."""
    if b"version" not in data and b".id" not in data:
        return False
    try:
        props = parse_properties(data)
        parse_meta_properties(data)
    except FormatError:
        return False
    has_id = bool({"node.id", "broker.id"} & props.keys())
    if by_name:
        return has_id or "version" in props
    return has_id and "version" in props


def sniff_checkpoint_kind(name: str, data: bytes) -> str | None:
    """Which text file this is: one of the ``KIND_*`` strings, or None.

    Contents with control characters other than tab/CR/LF/VT/FF are never a text file. A
    known file name (the last path component) gives the candidate, which is returned only if
    the contents parse as that kind (meta.properties must also name a version or an id). For
    other names the contents alone decide, and only when unambiguous (an offset or leader
    epoch checkpoint needs at least one entry).
    """
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    raw = _to_bytes(data)
    if _BINARY.search(raw):
        return None
    if base == META_PROPERTIES_NAME:
        return KIND_META_PROPERTIES if _is_meta_properties(raw, by_name=True) else None
    known = _BY_NAME.get(base)
    if known is not None:
        kind, parser = known
        return kind if _parses(parser, raw) else None
    return _sniff_content(raw)
