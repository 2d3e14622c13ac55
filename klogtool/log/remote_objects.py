"""Remote segments as Aiven's tiered-storage plugin for Apache Kafka writes them
(github.com/Aiven-Open/tiered-storage-for-apache-kafka, ``core/``), read offline.

The plugin stores each remote segment as three objects under one key (``ObjectKeyFactory``)::

    <prefix><topic>-<topic id>/<partition>/<start offset, 20 digits>-<segment id>.<suffix>

where the ids are Kafka's ``Uuid.toString()`` (22 characters of URL-safe base64) and the
prefix is the plugin's ``key.prefix`` as is (it usually ends in ``/``):

* ``.log``: the segment's bytes cut into chunks of ``originalChunkSize`` bytes, each chunk
  transformed on its own: zstd compressed (one frame, its content size in the header), then
  AES-256-GCM encrypted (a 12-byte IV, the ciphertext, the 16-byte tag), or left as is;
* ``.indexes``: the segment's offset index, time index, producer snapshot, leader-epoch
  checkpoint and transaction index (if any) one after the other, each encrypted as one chunk
  when encryption is on and never compressed;
* ``.rsm-manifest``: JSON (``SegmentManifestV1``): the chunk index (``fixed``: every
  transformed chunk but the last of one size; ``variable``: the sizes, binary-packed, zstd
  compressed and base64'd), where each index sits in ``.indexes``, the compression flag, the
  encryption (the AES data key wrapped with the operator's RSA key by
  ``RSA/NONE/OAEPWithSHA3-512AndMGF1Padding`` under BouncyCastle, so SHA3-512 for OAEP and for
  MGF1, no label; as ``<key id>:<base64>``; and the AES-GCM additional data in base64), and
  the broker's ``RemoteLogSegmentMetadata`` for information.

A broker may also record, in the segment's ``customMetadata``, the prefix and the main path
its objects were written under (:func:`parse_custom_metadata`): those then name the ``.log``
and ``.indexes`` objects. The plugin itself looks the manifest up under its current prefix and
the standard path (:meth:`SegmentObjectKey.keys`).

Reading never needs more memory than a chunk: :meth:`RemoteSegmentReader.iter_log` fetches
and yields one chunk at a time, :meth:`RemoteSegmentReader.read_log` only the chunks a byte
range needs, through a ``fetch(start, length) -> bytes`` ranged read the caller gives (a
local file's: :class:`FileFetch`). A chunk never decompresses beyond the size the manifest
gives it. Every bad input is one :class:`~klogtool.errors.InputError` naming the object and
the byte position in it.

Not read: segments written with ``segment.format=iceberg`` (their manifest is an Iceberg
Puffin file, refused as such), and the plugin's builds before October 2023 (commit 107d1653:
one object per index, ``.index``, ``.timeindex``, ``.snapshot``, ``.txnindex``,
``.leader-epoch-checkpoint``, and no ``segmentIndexes`` in the manifest).

``cryptography`` (for AES-GCM and loading the RSA key) is imported only when a segment is
encrypted. Its RSA OAEP does not take SHA-3 digests, so the data key's OAEP is undone here
(RFC 8017, 7.1.2) on top of the private key's numbers.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import struct
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from klogtool.codes import Code
from klogtool.errors import InputError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

Fetch = Callable[[int, int], bytes]
"""A ranged read of one object: ``fetch(start, length)`` gives its bytes ``start`` to
``start + length`` (fewer if the object ends before)."""

SUFFIX_LOG: Final = "log"
SUFFIX_INDEXES: Final = "indexes"
SUFFIX_MANIFEST: Final = "rsm-manifest"
SUFFIXES: Final = (SUFFIX_LOG, SUFFIX_INDEXES, SUFFIX_MANIFEST)

# The indexes in the order the plugin packs them into ``.indexes`` (its manifest's names).
INDEX_KINDS: Final = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")
_REQUIRED_INDEXES: Final = INDEX_KINDS[:4]  # a segment may have no transaction index

IV_SIZE: Final = 12  # SegmentEncryptionMetadataV1.IV_SIZE
TAG_SIZE: Final = 16  # AesEncryptionProvider.GCM_TAG_LENGTH, 128 bits
_GCM_OVERHEAD: Final = IV_SIZE + TAG_SIZE
_JAVA_INT_MAX: Final = 2**31 - 1
_JAVA_LONG_MAX: Final = 2**63 - 1
MAX_MANIFEST_BYTES: Final = 16 << 20  # a manifest is a few hundred bytes
_MAX_CHUNK_SIZES_BYTES: Final = 10 << 20  # TransformedChunksDeserializer.MAX_DECOMPRESSED_SIZE
_JSON_DEPTH: Final = 32

_UUID_RE: Final = re.compile(r"[A-Za-z0-9_-]{22}")
_FILE_RE: Final = re.compile(r"(\d{20})-([A-Za-z0-9_-]{22})\.([a-z-]+)")


# -- object keys ------------------------------------------------------------------------------


def kafka_uuid(value: str | uuid.UUID | bytes) -> str:
    """Kafka's text for an id (``Uuid.toString()``: 22 characters of URL-safe base64), from a
    :class:`uuid.UUID`, its 16 bytes, or that text (checked)."""
    if isinstance(value, uuid.UUID):
        raw = value.bytes
    elif isinstance(value, bytes):
        raw = value
    else:
        if not _UUID_RE.fullmatch(value):
            raise ValueError(f"not a Kafka id (22 characters of URL-safe base64): {value!r}")
        raw = base64.urlsafe_b64decode(value + "==")
    if len(raw) != 16:
        raise ValueError(f"an id is 16 bytes, not {len(raw)}")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class CustomMetadata:
    """The plugin's ``RemoteLogSegmentMetadata.customMetadata``, tagged fields 0, 1 and 2
    (``SegmentCustomMetadataField``); a field the broker was not configured to keep is None."""

    remote_size: int | None = None  # the three objects' bytes together
    object_prefix: str | None = None
    object_key: str | None = None  # the main path, without prefix or suffix


@dataclass(frozen=True)
class ObjectKeys:
    log: str
    indexes: str
    manifest: str


@dataclass(frozen=True)
class SegmentObjectKey:
    """The names of one remote segment's objects (``ObjectKeyFactory``)."""

    topic: str
    topic_id: str  # Kafka's text form, kafka_uuid()
    partition: int
    start_offset: int
    segment_id: str  # Kafka's text form
    prefix: str = ""

    @property
    def main_path(self) -> str:
        """``<topic>-<topic id>/<partition>/<start offset, 20 digits>-<segment id>``."""
        return (
            f"{self.topic}-{self.topic_id}/{self.partition}/"
            f"{self.start_offset:020d}-{self.segment_id}"
        )

    def key(self, suffix: str) -> str:
        if suffix not in SUFFIXES:
            raise ValueError(f"suffix {suffix!r} is not one of {', '.join(SUFFIXES)}")
        return f"{self.prefix}{self.main_path}.{suffix}"

    def keys(self, custom: CustomMetadata | None = None) -> ObjectKeys:
        """The three keys. ``custom`` (the segment's custom metadata) overrides the prefix and
        the main path of ``.log`` and ``.indexes``, as the plugin's fetches do; its manifest
        key is always its configured prefix's standard one (``KafkaRemoteStorageManager``
        builds it without the custom metadata)."""
        prefix, main = self.prefix, self.main_path
        if custom is not None:
            prefix = prefix if custom.object_prefix is None else custom.object_prefix
            main = main if custom.object_key is None else custom.object_key
        return ObjectKeys(
            log=f"{prefix}{main}.{SUFFIX_LOG}",
            indexes=f"{prefix}{main}.{SUFFIX_INDEXES}",
            manifest=self.key(SUFFIX_MANIFEST),
        )


def parse_object_key(key: str, prefix: str | None = None) -> tuple[SegmentObjectKey, str]:
    """An object key the plugin wrote, split into its parts and its suffix (``log``,
    ``indexes`` or ``rsm-manifest``). Without ``prefix``, whatever comes before the last three
    ``/``-separated parts is the prefix."""
    rest = key
    if prefix is not None:
        if not key.startswith(prefix):
            raise _key_error(key, 0, f"does not start with the prefix {prefix!r}")
        rest = key[len(prefix) :]
    parts = rest.split("/")
    if len(parts) < 3 or (prefix is not None and len(parts) != 3):
        raise _key_error(key, 0, "is not <prefix><topic>-<topic id>/<partition>/<file>")
    topic_dir, partition_text, name = parts[-3:]
    head = len(key) - len("/".join(parts[-3:]))
    found_prefix = key[:head]
    topic_id = topic_dir[-22:]
    if len(topic_dir) < 24 or topic_dir[-23] != "-" or not _UUID_RE.fullmatch(topic_id):
        raise _key_error(key, head, "does not end its first part in -<topic id>")
    at = head + len(topic_dir) + 1
    if not partition_text.isascii() or not partition_text.isdigit():
        raise _key_error(key, at, f"has {partition_text!r} where the partition goes")
    match = _FILE_RE.fullmatch(name)
    at += len(partition_text) + 1
    if match is None or match.group(3) not in SUFFIXES:
        raise _key_error(key, at, "does not name <offset>-<segment id>.<log|indexes|rsm-manifest>")
    return (
        SegmentObjectKey(
            topic=topic_dir[:-23],
            topic_id=topic_id,
            partition=int(partition_text),
            start_offset=int(match.group(1)),
            segment_id=match.group(2),
            prefix=found_prefix,
        ),
        match.group(3),
    )


def _key_error(key: str, position: int, what: str) -> InputError:
    return InputError(
        f"object key {what} (Aiven's tiered storage)",
        path=key,
        position=position,
        code=Code.BAD_INPUT,
    )


def parse_custom_metadata(data: bytes, *, path: str = "customMetadata") -> CustomMetadata:
    """The bytes of a ``RemoteLogSegmentMetadata``'s custom metadata, as the plugin writes them
    (``SegmentCustomMetadataSerde``: a Kafka schema of tagged fields only: remote_size, a
    varlong, tag 0; object_prefix, tag 1, and object_key, tag 2, compact strings). Unknown
    tags are skipped, as Kafka's reader keeps them raw."""
    if not data:
        return CustomMetadata()
    reader = _Bytes(data, path)
    fields: dict[int, Any] = {}
    count = reader.uvarint()
    for _ in range(count):
        tag_at = reader.pos
        tag = reader.uvarint()
        size = reader.uvarint()
        start = reader.pos
        body = reader.take(size, f"tagged field {tag}")
        if tag in fields:
            raise _meta_error(path, tag_at, f"tagged field {tag} twice")
        sub = _Bytes(body, path, base=start)
        if tag == 0:
            fields[tag] = sub.varlong()
        elif tag in (1, 2):
            length = sub.uvarint() - 1
            if length < 0:
                raise _meta_error(path, start, f"tagged field {tag} is a null string")
            fields[tag] = sub.take(length, f"tagged field {tag}").decode("utf-8", "replace")
        else:
            continue
        if sub.pos != len(body):
            raise _meta_error(path, start + sub.pos, f"tagged field {tag} has bytes after it")
    if reader.pos != len(data):
        raise _meta_error(path, reader.pos, "bytes after the tagged fields")
    return CustomMetadata(
        remote_size=fields.get(0), object_prefix=fields.get(1), object_key=fields.get(2)
    )


def _meta_error(path: str, position: int, what: str, code: str = Code.BAD_INPUT) -> InputError:
    return InputError(
        f"custom metadata of a remote segment: {what}", path=path, position=position, code=code
    )


class _Bytes:
    def __init__(self, data: bytes, path: str, base: int = 0):
        self.data, self.path, self.base, self.pos = data, path, base, 0

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise InputError(
                f"custom metadata of a remote segment: {what} ends past its end",
                path=self.path,
                position=self.base + len(self.data),
                code=Code.TRUNCATED,
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def uvarint(self) -> int:
        value = shift = 0
        at = self.pos
        while True:
            (byte,) = self.take(1, "a varint")
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise _meta_error(
                    self.path, self.base + at, "a varint longer than 10 bytes", Code.BAD_VARINT
                )

    def varlong(self) -> int:
        raw = self.uvarint()
        return (raw >> 1) ^ -(raw & 1)


# -- the manifest -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    """One chunk: where its original bytes are in the segment and its transformed bytes in
    the ``.log`` object."""

    index: int
    original_position: int
    original_size: int
    transformed_position: int
    transformed_size: int


@dataclass(frozen=True)
class ChunkIndex:
    """``FixedSizeChunkIndex`` (``kind == "fixed"``: ``transformed_chunk_size`` for every
    chunk but the last) or ``VariableSizeChunkIndex`` (``"variable"``: ``transformed_sizes``)."""

    kind: str
    original_chunk_size: int
    original_file_size: int
    final_transformed_chunk_size: int
    transformed_chunk_size: int | None = None
    transformed_sizes: tuple[int, ...] | None = None
    _starts: tuple[int, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind == "variable" and self.transformed_sizes is not None:
            starts, at = [], 0
            for size in self.transformed_sizes:
                starts.append(at)
                at += size
            starts.append(at)
            object.__setattr__(self, "_starts", tuple(starts))

    @property
    def count(self) -> int:
        return -(-self.original_file_size // self.original_chunk_size)

    @property
    def transformed_file_size(self) -> int:
        """The bytes of the ``.log`` object the chunks take, together."""
        if self.count == 0:
            return 0
        return self._transformed_start(self.count - 1) + self.final_transformed_chunk_size

    def _transformed_start(self, i: int) -> int:
        if self.kind == "variable":
            return self._starts[i]
        assert self.transformed_chunk_size is not None
        return i * self.transformed_chunk_size

    def chunk(self, i: int) -> Chunk:
        count = self.count
        if not 0 <= i < count:
            raise IndexError(f"chunk {i} of {count}")
        last = i == count - 1
        original = self.original_chunk_size
        if last:
            original = self.original_file_size - i * self.original_chunk_size
        if self.kind == "variable":
            assert self.transformed_sizes is not None
            transformed = self.transformed_sizes[i]
        else:
            assert self.transformed_chunk_size is not None
            transformed = self.final_transformed_chunk_size if last else self.transformed_chunk_size
        return Chunk(
            i, i * self.original_chunk_size, original, self._transformed_start(i), transformed
        )

    def chunks(self, start: int = 0, length: int | None = None) -> Iterator[Chunk]:
        """The chunks that hold original bytes ``start`` to ``start + length`` (to the end of
        the segment without ``length``)."""
        end = self.original_file_size if length is None else start + length
        end = min(end, self.original_file_size)
        if start < 0 or end <= start:
            return
        first = start // self.original_chunk_size
        last = (end - 1) // self.original_chunk_size
        for i in range(first, last + 1):
            yield self.chunk(i)


@dataclass(frozen=True)
class IndexRange:
    """Where one index is in the ``.indexes`` object (its transformed bytes)."""

    position: int
    size: int


@dataclass(frozen=True)
class Encryption:
    key_id: str  # the RSA key pair's id in the operator's key ring
    wrapped_key: bytes  # the AES data key, RSA-OAEP encrypted
    aad: bytes  # AES-GCM's additional authenticated data
    data_key_position: int  # of the dataKey string in the manifest, for error messages


@dataclass(frozen=True)
class SegmentMetadata:
    """The broker's ``RemoteLogSegmentMetadata`` the manifest carries (not read back by the
    plugin; manifests written before it was added lack it)."""

    topic: str
    topic_id: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_leader_epochs: Mapping[int, int]

    def object_key(self, prefix: str = "") -> SegmentObjectKey:
        return SegmentObjectKey(
            self.topic, self.topic_id, self.partition, self.start_offset, self.segment_id, prefix
        )


@dataclass(frozen=True)
class SegmentManifest:
    version: int
    chunk_index: ChunkIndex
    indexes: Mapping[str, IndexRange | None]  # INDEX_KINDS -> range; transaction may be None
    compression: bool
    encryption: Encryption | None
    segment: SegmentMetadata | None
    path: str = SUFFIX_MANIFEST
    chunk_index_position: int = 0  # of chunkIndex in the manifest, for error messages


@dataclass
class _Node:
    value: Any  # dict[str, _Node] | list[_Node] | str | int | float | bool | None
    pos: int  # in characters


class _Manifest:
    """Parses one manifest's JSON, keeping each value's position for the messages."""

    def __init__(self, data: bytes, path: str):
        self.data, self.path = data, path
        try:
            self.text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.error(f"is not UTF-8 ({e.reason})", e.start, Code.BAD_ENCODING) from None
        self.decoder = json.JSONDecoder(parse_constant=self._no_constant)

    def error(self, what: str, pos: int, code: str = Code.BAD_JSON) -> InputError:
        return InputError(
            f"remote segment manifest {what}", path=self.path, position=pos, code=code
        )

    def byte_pos(self, char_pos: int) -> int:
        return len(self.text[:char_pos].encode("utf-8"))

    def _no_constant(self, name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    # A small JSON reader: the standard decoder for strings, numbers and literals.
    def parse(self) -> _Node:
        node, end = self._value(self._skip(0), 0)
        end = self._skip(end)
        if end != len(self.text):
            raise self.error("does not parse: bytes after the JSON value", self.byte_pos(end))
        return node

    def _skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in " \t\r\n":
            i += 1
        return i

    def _value(self, i: int, depth: int) -> tuple[_Node, int]:
        if depth > _JSON_DEPTH:
            raise self.error(f"does not parse: nested deeper than {_JSON_DEPTH}", self.byte_pos(i))
        ch = self.text[i : i + 1]
        if ch == "{":
            return self._object(i, depth)
        if ch == "[":
            return self._array(i, depth)
        try:
            value, end = self.decoder.raw_decode(self.text, i)
        except ValueError as e:
            where = getattr(e, "pos", i)
            reason = getattr(e, "msg", str(e)).removesuffix(" at").lower()
            raise self.error(f"does not parse: {reason}", self.byte_pos(where)) from None
        return _Node(value, i), end

    def _expect(self, i: int, chars: str, what: str) -> int:
        i = self._skip(i)
        if self.text[i : i + 1] not in tuple(chars):
            raise self.error(f"does not parse: expected {what}", self.byte_pos(i))
        return i

    def _object(self, start: int, depth: int) -> tuple[_Node, int]:
        out: dict[str, _Node] = {}
        i = self._skip(start + 1)
        if self.text[i : i + 1] == "}":
            return _Node(out, start), i + 1
        while True:
            i = self._expect(i, '"', "a property name")
            key, i = self._value(i, depth + 1)
            i = self._expect(i, ":", "':'") + 1
            value, i = self._value(self._skip(i), depth + 1)
            out[key.value] = value
            i = self._expect(i, ",}", "',' or '}'")
            if self.text[i] == "}":
                return _Node(out, start), i + 1
            i += 1

    def _array(self, start: int, depth: int) -> tuple[_Node, int]:
        out: list[_Node] = []
        i = self._skip(start + 1)
        if self.text[i : i + 1] == "]":
            return _Node(out, start), i + 1
        while True:
            value, i = self._value(self._skip(i), depth + 1)
            out.append(value)
            i = self._expect(i, ",]", "',' or ']'")
            if self.text[i] == "]":
                return _Node(out, start), i + 1
            i += 1

    # Fields, typed.
    def field(self, obj: _Node, name: str, where: str, *, optional: bool = False) -> _Node | None:
        assert isinstance(obj.value, dict)
        node: _Node | None = obj.value.get(name)
        if node is None or (node.value is None and not optional):
            if optional:
                return None
            raise self.error(f"lacks {where}{name}", self.byte_pos(obj.pos), Code.BAD_JSON)
        if node.value is None:
            return None
        return node

    def obj(self, obj: _Node, name: str, where: str, *, optional: bool = False) -> _Node | None:
        node = self.field(obj, name, where, optional=optional)
        if node is not None and not isinstance(node.value, dict):
            raise self.error(f"has {where}{name} that is not an object", self.byte_pos(node.pos))
        return node

    def integer(
        self, obj: _Node, name: str, where: str, low: int = 0, high: int = _JAVA_INT_MAX
    ) -> int:
        node = self.field(obj, name, where)
        assert node is not None
        value = node.value
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(f"has {where}{name} that is not an integer", self.byte_pos(node.pos))
        if not low <= value <= high:
            raise self.error(
                f"has {where}{name} {value}, outside {low}..{high}", self.byte_pos(node.pos)
            )
        return value

    def string(self, obj: _Node, name: str, where: str) -> tuple[str, int]:
        node = self.field(obj, name, where)
        assert node is not None
        if not isinstance(node.value, str):
            raise self.error(f"has {where}{name} that is not a string", self.byte_pos(node.pos))
        return node.value, self.byte_pos(node.pos)


def parse_manifest(data: bytes, *, path: str = SUFFIX_MANIFEST) -> SegmentManifest:
    """A ``.rsm-manifest`` object's bytes, checked: its JSON, its fields and their types, and
    that a variable chunk index has as many sizes as the segment's size needs chunks (each
    transformed size against its transformation: :func:`check_chunk_sizes`). ``path`` names
    the object in messages. Unknown fields are ignored (the plugin's Jackson would refuse
    them); the data key stays wrapped (:func:`unwrap_data_key`)."""
    if len(data) > MAX_MANIFEST_BYTES:
        raise InputError(
            f"remote segment manifest larger than {MAX_MANIFEST_BYTES} bytes",
            path=path,
            position=MAX_MANIFEST_BYTES,
            code=Code.TOO_LARGE,
        )
    if data.startswith(b"PFA1"):
        raise InputError(
            "remote segment manifest is an Iceberg Puffin file: a segment the plugin wrote"
            " with segment.format=iceberg, which klogtool does not read",
            path=path,
            position=0,
            code=Code.UNSUPPORTED,
        )
    m = _Manifest(data, path)
    root = m.parse()
    if not isinstance(root.value, dict):
        raise m.error("is not a JSON object", m.byte_pos(root.pos))
    version_node = m.field(root, "version", "")
    assert version_node is not None
    if version_node.value not in ("1", 1) or isinstance(version_node.value, bool):
        raise m.error(
            f"version {json.dumps(version_node.value)}: only version 1 is known",
            m.byte_pos(version_node.pos),
            Code.UNSUPPORTED_VERSION,
        )
    compression_node = m.field(root, "compression", "")
    assert compression_node is not None
    if not isinstance(compression_node.value, bool):
        raise m.error("has compression that is not true or false", m.byte_pos(compression_node.pos))
    encryption = _encryption(m, root)
    chunk_node = m.obj(root, "chunkIndex", "")
    assert chunk_node is not None
    chunk_index = _chunk_index(m, chunk_node)
    indexes_node = m.obj(root, "segmentIndexes", "")
    assert indexes_node is not None
    indexes: dict[str, IndexRange | None] = {}
    for kind in INDEX_KINDS:
        where = f"segmentIndexes.{kind}"
        node = m.obj(indexes_node, kind, "segmentIndexes.", optional=kind == "transaction")
        if node is None:
            indexes[kind] = None
            continue
        size = m.integer(node, "size", where + ".")
        indexes[kind] = IndexRange(m.integer(node, "position", where + "."), size)
    segment_node = m.obj(root, "remoteLogSegmentMetadata", "", optional=True)
    segment = None if segment_node is None else _segment_metadata(m, segment_node)
    return SegmentManifest(
        version=1,
        chunk_index=chunk_index,
        indexes=indexes,
        compression=compression_node.value,
        encryption=encryption,
        segment=segment,
        path=path,
        chunk_index_position=m.byte_pos(chunk_node.pos),
    )


def _encryption(m: _Manifest, root: _Node) -> Encryption | None:
    node = m.obj(root, "encryption", "", optional=True)
    if node is None:
        return None
    text, at = m.string(node, "dataKey", "encryption.")
    key_id, colon, b64 = text.partition(":")
    if not colon or ":" in b64 or not key_id.strip():
        raise m.error("has encryption.dataKey that is not <key id>:<base64>", at)
    wrapped = _b64(m, b64, at, "encryption.dataKey")
    if not wrapped:
        raise m.error("has an empty encryption.dataKey", at)
    aad_text, aad_at = m.string(node, "aad", "encryption.")
    return Encryption(key_id, wrapped, _b64(m, aad_text, aad_at, "encryption.aad"), at)


def _b64(m: _Manifest, text: str, at: int, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise m.error(f"has {what} that is not base64", at) from None


def _chunk_index(m: _Manifest, node: _Node) -> ChunkIndex:
    kind, kind_at = m.string(node, "type", "chunkIndex.")
    chunk_size = m.integer(node, "originalChunkSize", "chunkIndex.", low=1)
    file_size = m.integer(node, "originalFileSize", "chunkIndex.")
    count = -(-file_size // chunk_size)
    if kind == "fixed":
        index = ChunkIndex(
            kind,
            chunk_size,
            file_size,
            final_transformed_chunk_size=m.integer(
                node, "finalTransformedChunkSize", "chunkIndex."
            ),
            transformed_chunk_size=m.integer(node, "transformedChunkSize", "chunkIndex."),
        )
    elif kind == "variable":
        text, at = m.string(node, "transformedChunks", "chunkIndex.")
        sizes = _chunk_sizes(m, _b64(m, text, at, "chunkIndex.transformedChunks"), at)
        if len(sizes) != count:
            raise m.error(
                f"has {len(sizes)} transformed chunk sizes, but {file_size} bytes in chunks of"
                f" {chunk_size} are {count} chunks",
                at,
            )
        index = ChunkIndex(
            kind,
            chunk_size,
            file_size,
            final_transformed_chunk_size=sizes[-1] if sizes else 0,
            transformed_sizes=tuple(sizes),
        )
    else:
        raise m.error(f"has chunkIndex.type {kind!r}: not fixed or variable", kind_at)
    return index


def check_chunk_sizes(manifest: SegmentManifest) -> None:
    """That each chunk's transformed size is what the plugin's transformation makes of it,
    where that is known: the same size as is, 28 bytes more encrypted (an IV and a tag), at
    least a byte more than that compressed. :class:`RemoteSegmentReader` checks it before it
    reads; :func:`parse_manifest` does not (the plugin reads such a manifest)."""
    index = manifest.chunk_index
    if index.count == 0:
        return
    encrypted = manifest.encryption is not None
    chunks = [index.chunk(0), index.chunk(index.count - 1)]
    if index.kind == "variable":
        chunks = list(index.chunks())
    for chunk in chunks:
        if manifest.compression:
            least = _GCM_OVERHEAD + 1 if encrypted else 1
            if chunk.transformed_size >= least:
                continue
            what = (
                f"{chunk.transformed_size} bytes: a compressed"
                f"{' and encrypted' if encrypted else ''} chunk takes at least {least}"
            )
        else:
            expected = chunk.original_size + (_GCM_OVERHEAD if encrypted else 0)
            if chunk.transformed_size == expected:
                continue
            what = (
                f"{chunk.transformed_size} bytes, but its {chunk.original_size} bytes"
                f" {'encrypted take' if encrypted else 'as they are take'} {expected}"
            )
        raise InputError(
            f"remote segment manifest gives chunk {chunk.index} {what}",
            path=manifest.path,
            position=manifest.chunk_index_position,
            code=Code.BAD_JSON,
        )


def _chunk_sizes(m: _Manifest, packed: bytes, at: int) -> list[int]:
    """``ChunkSizesBinaryCodec`` inside zstd: an int32 count; one value as an int32; more as
    an int32 base, a byte of bytes per value, count - 1 big-endian values above the base, and
    the last value as an int32."""
    raw = _bounded_zstd(
        packed,
        _MAX_CHUNK_SIZES_BYTES,
        exact=False,
        error=lambda what, code: m.error(f"has chunkIndex.transformedChunks that {what}", at, code),
    )

    def bad(what: str) -> InputError:
        return m.error(f"has chunkIndex.transformedChunks that {what}", at)

    if len(raw) < 4:
        raise bad("is shorter than its count")
    (count,) = struct.unpack_from(">i", raw)
    if count < 0:
        raise bad(f"has a negative count {count}")
    if count == 0:
        sizes: list[int] = []
        used = 4
    elif count == 1:
        if len(raw) < 8:
            raise bad("ends before its value")
        sizes = [struct.unpack_from(">i", raw, 4)[0]]
        used = 8
    else:
        if len(raw) < 9:
            raise bad("ends before its base")
        base, width = struct.unpack_from(">iB", raw, 4)
        if not 1 <= width <= 4:
            raise bad(f"has {width} bytes per value")
        used = 9 + (count - 1) * width + 4
        if len(raw) < used:
            raise bad(f"ends before its {count} values")
        sizes = [
            int.from_bytes(raw[p : p + width], "big") + base
            for p in range(9, 9 + (count - 1) * width, width)
        ]
        sizes.append(struct.unpack_from(">i", raw, used - 4)[0])
    if used != len(raw):
        raise bad(f"has {len(raw) - used} bytes after its values")
    for size in sizes:
        if not 0 <= size <= _JAVA_INT_MAX:
            raise bad(f"has a chunk size {size}")
    return sizes


def _segment_metadata(m: _Manifest, node: _Node) -> SegmentMetadata:
    w = "remoteLogSegmentMetadata."
    rlsid = m.obj(node, "remoteLogSegmentId", w)
    assert rlsid is not None
    tip = m.obj(rlsid, "topicIdPartition", w + "remoteLogSegmentId.")
    assert tip is not None
    tp = m.obj(tip, "topicPartition", w + "remoteLogSegmentId.topicIdPartition.")
    assert tp is not None
    topic_id, topic_id_at = m.string(tip, "topicId", w + "remoteLogSegmentId.topicIdPartition.")
    segment_id, segment_id_at = m.string(rlsid, "id", w + "remoteLogSegmentId.")
    for text, at in ((topic_id, topic_id_at), (segment_id, segment_id_at)):
        if not _UUID_RE.fullmatch(text):
            raise m.error(f"has an id {text!r} that is not Kafka's", at, Code.BAD_UUID)
    epochs_node = m.obj(node, "segmentLeaderEpochs", w)
    assert epochs_node is not None
    epochs: dict[int, int] = {}
    for epoch, offset in epochs_node.value.items():
        if not epoch.lstrip("-").isdigit() or not isinstance(offset.value, int):
            raise m.error(f"has a leader epoch {epoch!r}: {offset.value!r}", m.byte_pos(offset.pos))
        epochs[int(epoch)] = offset.value
    long_range = {"low": -(2**63), "high": _JAVA_LONG_MAX}
    return SegmentMetadata(
        topic=m.string(tp, "topic", w + "remoteLogSegmentId.topicIdPartition.topicPartition.")[0],
        topic_id=topic_id,
        partition=m.integer(
            tp, "partition", w + "remoteLogSegmentId.topicIdPartition.topicPartition."
        ),
        segment_id=segment_id,
        start_offset=m.integer(node, "startOffset", w, **long_range),
        end_offset=m.integer(node, "endOffset", w, **long_range),
        max_timestamp_ms=m.integer(node, "maxTimestampMs", w, **long_range),
        broker_id=m.integer(node, "brokerId", w, low=-(2**31)),
        event_timestamp_ms=m.integer(node, "eventTimestampMs", w, **long_range),
        segment_leader_epochs=epochs,
    )


# -- decryption and decompression -------------------------------------------------------------


def _bounded_zstd(
    data: bytes, size: int, *, exact: bool, error: Callable[[str, str], InputError]
) -> bytes:
    """One zstd frame's content, never more than ``size`` bytes (exactly ``size`` if
    ``exact``): a frame that declares more is refused before it is decompressed."""
    import zstandard

    try:
        declared = zstandard.get_frame_parameters(data).content_size
    except zstandard.ZstdError as e:
        raise error(f"is not a zstd frame ({e})", Code.DECOMPRESSION_FAILED) from None
    if declared != zstandard.CONTENTSIZE_UNKNOWN and (
        declared > size or (exact and declared != size)
    ):
        raise error(
            f"declares {declared} bytes decompressed, {'not' if exact else 'more than'} {size}",
            Code.LIMIT_EXCEEDED if declared > size else Code.FORMAT_ERROR,
        )
    trailing = 0
    try:
        if declared == zstandard.CONTENTSIZE_UNKNOWN:
            out = zstandard.ZstdDecompressor().decompress(data, max_output_size=max(size, 1))
        else:  # bounded by the size the frame declares, which zstd holds it to
            frame = zstandard.ZstdDecompressor().decompressobj()
            out = frame.decompress(data)
            trailing = len(frame.unused_data) if frame.eof else -1
    except zstandard.ZstdError as e:
        raise error(f"does not decompress ({e})", Code.DECOMPRESSION_FAILED) from None
    if trailing:
        what = "ends inside its zstd frame" if trailing < 0 else f"has {trailing} bytes after"
        raise error(f"{what} (one frame)", Code.DECOMPRESSION_FAILED)
    if len(out) > size or (exact and len(out) != size):
        raise error(f"decompresses to {len(out)} bytes, not {size}", Code.FORMAT_ERROR)
    return out


def _load_private_key(key: bytes | RSAPrivateKey) -> RSAPrivateKey:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    if isinstance(key, bytes):
        loaded = load_pem_private_key(key, password=None)
        if not isinstance(loaded, RSAPrivateKey):
            raise ValueError("the private key is not an RSA key")
        return loaded
    return key


def _mgf1_sha3_512(seed: bytes, length: int) -> bytes:
    out = bytearray()
    counter = 0
    while len(out) < length:
        out += hashlib.sha3_512(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return bytes(out[:length])


def _oaep_sha3_512_decrypt(key: RSAPrivateKey, ciphertext: bytes) -> bytes | None:
    """RSAES-OAEP decryption (RFC 8017, 7.1.2) with SHA3-512 and MGF1(SHA3-512), an empty
    label: BouncyCastle's ``OAEPWithSHA3-512AndMGF1Padding``. None when it does not decode."""
    numbers = key.private_numbers()
    n = numbers.public_numbers.n
    k = (n.bit_length() + 7) // 8
    h = 64
    if len(ciphertext) != k or k < 2 * h + 2:
        return None
    c = int.from_bytes(ciphertext, "big")
    if c >= n:
        return None
    # RSADP with the CRT values of the private key
    m1 = pow(c, numbers.dmp1, numbers.p)
    m2 = pow(c, numbers.dmq1, numbers.q)
    m = m2 + ((numbers.iqmp * (m1 - m2)) % numbers.p) * numbers.q
    em = m.to_bytes(k, "big")
    masked_seed, masked_db = em[1 : 1 + h], em[1 + h :]
    seed = bytes(a ^ b for a, b in zip(masked_seed, _mgf1_sha3_512(masked_db, h), strict=True))
    db = bytes(a ^ b for a, b in zip(masked_db, _mgf1_sha3_512(seed, k - h - 1), strict=True))
    label_ok = db[:h] == hashlib.sha3_512(b"").digest()
    rest = db[h:].lstrip(b"\x00")
    if em[0] != 0 or not label_ok or not rest or rest[0] != 1:
        return None
    return rest[1:]


def unwrap_data_key(
    manifest: SegmentManifest, keys: Mapping[str, bytes | RSAPrivateKey]
) -> bytes | None:
    """The segment's AES data key (None for a segment not encrypted), unwrapped with the
    private key of its key id in ``keys`` (key id -> PEM bytes, PKCS#8 as the plugin reads
    them or PKCS#1, or a loaded key)."""
    enc = manifest.encryption
    if enc is None:
        return None

    def fail(what: str) -> InputError:
        return InputError(
            f"the data key of this encrypted remote segment {what}",
            path=manifest.path,
            position=enc.data_key_position,
            code=Code.DECRYPTION_FAILED,
        )

    if enc.key_id not in keys:
        have = ", ".join(sorted(keys)) or "none"
        raise fail(f"is wrapped with RSA key {enc.key_id!r}: no private key of that id ({have})")
    try:
        private = _load_private_key(keys[enc.key_id])
    except ImportError:
        raise _no_cryptography(manifest.path) from None
    except (ValueError, TypeError) as e:
        raise fail(f"needs RSA key {enc.key_id!r}, which does not load: {e}") from None
    data_key = _oaep_sha3_512_decrypt(private, enc.wrapped_key)
    if data_key is None:
        raise fail(f"does not unwrap with the RSA key given as {enc.key_id!r} (a wrong key?)")
    if len(data_key) not in (16, 24, 32):
        raise fail(f"unwraps to {len(data_key)} bytes, not an AES key")
    return data_key


def _no_cryptography(path: str) -> InputError:
    return InputError(
        "an encrypted remote segment needs the 'cryptography' package "
        "(pip install 'klogtool[storage]')",
        path=path,
        position=0,
        code=Code.CODEC_UNAVAILABLE,
    )


# -- reading ----------------------------------------------------------------------------------


class FileFetch:
    """A ranged read of a local file, for objects copied out of the bucket; a context
    manager that closes it."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        self.fd = os.open(self.path, os.O_RDONLY)

    def __call__(self, start: int, length: int) -> bytes:
        return os.pread(self.fd, length, start)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> FileFetch:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class RemoteSegmentReader:
    """Reads one remote segment's ``.log`` and ``.indexes`` objects back to the broker's
    bytes, by its manifest. ``keys`` (key id -> RSA private key) is needed for an encrypted
    segment; ``log_path`` and ``indexes_path`` name the objects in messages."""

    def __init__(
        self,
        manifest: SegmentManifest,
        *,
        keys: Mapping[str, bytes | RSAPrivateKey] | None = None,
        log_path: str = SUFFIX_LOG,
        indexes_path: str = SUFFIX_INDEXES,
    ):
        self.manifest = manifest
        self.log_path = log_path
        self.indexes_path = indexes_path
        check_chunk_sizes(manifest)
        self._aead: Any = None
        self._aad = b"" if manifest.encryption is None else manifest.encryption.aad
        if manifest.encryption is not None:
            data_key = unwrap_data_key(manifest, keys or {})
            assert data_key is not None
            try:
                from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            except ImportError:
                raise _no_cryptography(manifest.path) from None
            self._aead = AESGCM(data_key)

    @property
    def size(self) -> int:
        """The segment's size: its original bytes."""
        return self.manifest.chunk_index.original_file_size

    def check_log_size(self, object_size: int) -> None:
        """That the ``.log`` object is as long as its chunks, together."""
        expected = self.manifest.chunk_index.transformed_file_size
        if object_size != expected:
            raise InputError(
                f"remote segment object of {object_size} bytes: its manifest's chunks take"
                f" {expected}",
                path=self.log_path,
                position=min(object_size, expected),
                code=Code.TRUNCATED if object_size < expected else Code.FORMAT_ERROR,
            )

    def iter_log(self, fetch: Fetch, start: int = 0, length: int | None = None) -> Iterator[bytes]:
        """The segment's bytes ``start`` to ``start + length`` (to its end without ``length``),
        one chunk's at a time: only the chunks that hold them are fetched, one ``fetch`` each."""
        if start < 0 or (length is not None and length < 0):
            raise ValueError("a negative start or length")
        end = self.size if length is None else min(self.size, start + length)
        for chunk in self.manifest.chunk_index.chunks(start, end - start):
            data = self._log_chunk(fetch, chunk)
            lo = max(start - chunk.original_position, 0)
            hi = min(end - chunk.original_position, chunk.original_size)
            yield data if (lo, hi) == (0, chunk.original_size) else data[lo:hi]

    def read_log(self, fetch: Fetch, start: int, length: int) -> bytes:
        """The segment's bytes ``start`` to ``start + length`` (fewer past its end)."""
        return b"".join(self.iter_log(fetch, start, length))

    def _log_chunk(self, fetch: Fetch, chunk: Chunk) -> bytes:
        raw = self._fetch(
            fetch,
            chunk.transformed_position,
            chunk.transformed_size,
            self.log_path,
            f"chunk {chunk.index}",
        )
        where = f"chunk {chunk.index}"
        if self._aead is not None:
            raw = self._decrypt(raw, chunk.transformed_position, self.log_path, where)
        if self.manifest.compression:

            def error(what: str, code: str) -> InputError:
                return InputError(
                    f"remote segment {where} {what}",
                    path=self.log_path,
                    position=chunk.transformed_position,
                    code=code,
                )

            return _bounded_zstd(raw, chunk.original_size, exact=True, error=error)
        if len(raw) != chunk.original_size:
            raise InputError(
                f"remote segment {where} decrypts to {len(raw)} bytes, not {chunk.original_size}",
                path=self.log_path,
                position=chunk.transformed_position,
                code=Code.FORMAT_ERROR,
            )
        return raw

    def read_index(self, kind: str, fetch: Fetch) -> bytes | None:
        """One index's bytes, as the broker wrote its file (``kind`` one of
        :data:`INDEX_KINDS`; ``leaderEpoch`` is the segment's leader-epoch checkpoint text,
        ``producerSnapshot`` its ``.snapshot`` file), cut out of ``.indexes``: one fetch.
        None for a transaction index the segment has not."""
        if kind not in INDEX_KINDS:
            raise ValueError(f"index kind {kind!r} is not one of {', '.join(INDEX_KINDS)}")
        where = self.manifest.indexes.get(kind)
        if where is None:
            return None
        if where.size == 0:
            return b""
        raw = self._fetch(fetch, where.position, where.size, self.indexes_path, f"the {kind} index")
        if self._aead is not None:
            raw = self._decrypt(raw, where.position, self.indexes_path, f"the {kind} index")
        return raw

    def read_indexes(self, fetch: Fetch) -> dict[str, bytes | None]:
        return {kind: self.read_index(kind, fetch) for kind in INDEX_KINDS}

    def _fetch(self, fetch: Fetch, start: int, size: int, path: str, what: str) -> bytes:
        data = fetch(start, size)
        if len(data) > size:
            raise ValueError(f"fetch({start}, {size}) gave {len(data)} bytes")
        if len(data) < size:
            state = "is missing" if not data else f"is short ({len(data)} of {size} bytes)"
            raise InputError(
                f"remote segment {what} (bytes {start}..{start + size - 1}) {state}: the"
                f" object ends at byte {start + len(data)}",
                path=path,
                position=start + len(data),
                code=Code.TRUNCATED,
            )
        return data

    def _decrypt(self, raw: bytes, position: int, path: str, what: str) -> bytes:
        from cryptography.exceptions import InvalidTag

        if len(raw) < _GCM_OVERHEAD:
            raise InputError(
                f"remote segment {what}: {len(raw)} bytes, fewer than an IV and a tag",
                path=path,
                position=position,
                code=Code.FORMAT_ERROR,
            )
        try:
            out: bytes = self._aead.decrypt(raw[:IV_SIZE], raw[IV_SIZE:], self._aad)
        except InvalidTag:
            raise InputError(
                f"remote segment {what} does not decrypt: its AES-GCM tag does not match"
                " (altered bytes, or another segment's key)",
                path=path,
                position=position,
                code=Code.DECRYPTION_FAILED,
            ) from None
        return out


def read_manifest(fetch: Fetch, *, path: str = SUFFIX_MANIFEST) -> SegmentManifest:
    """A manifest object read whole through ``fetch`` (refused past
    :data:`MAX_MANIFEST_BYTES`), parsed."""
    data = fetch(0, MAX_MANIFEST_BYTES + 1)
    return parse_manifest(data, path=path)
