"""klogtool/log/remote_objects.py: remote segments as Aiven's tiered-storage plugin writes them.

The objects here are written the way the plugin writes them (``KafkaRemoteStorageManager``,
its transforms and serde, read in its sources), with ``zstandard`` and ``cryptography``
directly and the data key wrapped by the ``openssl`` command (RSA-OAEP with SHA3-512 for
the digest and MGF1, as BouncyCastle's ``OAEPWithSHA3-512AndMGF1Padding``): not with the
reader under test. The payload is a real segment: batches built by kafka-python.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard
from cryptography.hazmat.primitives.asymmetric import rsa
from support.aiven import (
    KEY_ID,
    SEGMENT_ID,
    TOPIC_ID,
    Keys,
    Uploaded,
    encode_chunk_sizes,
    make_rsa_keys,
    upload,
)
from support.records import kafka_python_batch

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.log import remote_objects as ro

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl command")


# -- the writer: the plugin's upload, step by step -------------------------------------------


def segment_bytes(batches: int = 40, rows: int = 20) -> bytes:
    """A real segment: v2 batches from kafka-python's builder, offsets following on."""
    out = []
    offset = 0
    for b in range(batches):
        recs = [
            (1_700_000_000_000 + offset + i, f"k{offset + i}".encode(), os.urandom(64), [])
            for i in range(rows)
        ]
        out.append(kafka_python_batch(offset, b // 10, recs))
        offset += rows
    return b"".join(out)


@pytest.fixture(scope="module")
def rsa_keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    return make_rsa_keys(tmp_path_factory.mktemp("rsa"))


INDEXES: dict[str, bytes | None] = {
    "offset": b"".join(struct.pack(">ii", i * 20, i * 1500) for i in range(1, 40)),
    "timestamp": b"".join(struct.pack(">qi", 1_700_000_000_000 + i, i) for i in range(0, 800, 20)),
    "producerSnapshot": b"\x00\x01" + os.urandom(30),
    "leaderEpoch": b"0\n4\n0 0\n1 200\n2 400\n3 600\n",
    "transaction": b"",  # an empty file: size 0, no bytes in .indexes
}


class Fetches:
    """A ranged read of bytes, recording each call."""

    def __init__(self, data: bytes):
        self.data = data
        self.calls: list[tuple[int, int]] = []

    def __call__(self, start: int, length: int) -> bytes:
        self.calls.append((start, length))
        return self.data[start : start + length]


def one_line_error(call: Callable[[], object]) -> InputError:
    with pytest.raises(InputError) as info:
        call()
    line = info.value.one_line()
    assert "\n" not in line, line
    assert info.value.path is not None and info.value.position is not None, line
    return info.value


MODES = ["plain", "compressed", "encrypted", "compressed+encrypted"]


@pytest.fixture(scope="module")
def segment() -> bytes:
    return segment_bytes()


def uploaded(mode: str, segment: bytes, keys: Keys, chunk_size: int = 4096) -> Uploaded:
    if "encrypted" in mode and shutil.which("openssl") is None:
        pytest.skip("no openssl command")
    return upload(
        segment,
        INDEXES,
        chunk_size=chunk_size,
        compress="compressed" in mode,
        keys=keys if "encrypted" in mode else None,
    )


def reader(up: Uploaded, keys: Keys) -> ro.RemoteSegmentReader:
    manifest = ro.parse_manifest(up.manifest, path="p/orders-x/3/0.rsm-manifest")
    return ro.RemoteSegmentReader(manifest, keys={KEY_ID: keys.private_pem})


# -- reading back -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_the_whole_segment_reads_back_chunk_by_chunk(
    mode: str, segment: bytes, rsa_keys: Keys
) -> None:
    up = uploaded(mode, segment, rsa_keys)
    r = reader(up, rsa_keys)
    r.check_log_size(len(up.log))
    m = r.manifest
    assert m.compression == ("compressed" in mode)
    assert (m.encryption is not None) == ("encrypted" in mode)
    assert m.chunk_index.kind == ("variable" if "compressed" in mode else "fixed")
    fetch = Fetches(up.log)
    pieces = list(r.iter_log(fetch))
    assert b"".join(pieces) == segment
    count = -(-len(segment) // up.chunk_size)
    assert len(pieces) == len(fetch.calls) == count > 10
    assert max(len(p) for p in pieces) == up.chunk_size  # one chunk in memory at a time
    # the chunks tile the object, in order
    assert fetch.calls[0][0] == 0
    assert all(a + n == b for (a, n), (b, _) in zip(fetch.calls, fetch.calls[1:], strict=False))
    assert sum(n for _, n in fetch.calls) == len(up.log)


@pytest.mark.parametrize("mode", MODES)
def test_a_byte_range_fetches_only_its_chunks(mode: str, segment: bytes, rsa_keys: Keys) -> None:
    up = uploaded(mode, segment, rsa_keys)
    r = reader(up, rsa_keys)
    cs = up.chunk_size
    for start, length in [(0, 1), (cs - 10, 20), (3 * cs + 5, 2 * cs), (len(segment) - 7, 100)]:
        fetch = Fetches(up.log)
        assert r.read_log(fetch, start, length) == segment[start : start + length]
        first, last = start // cs, (min(start + length, len(segment)) - 1) // cs
        chunks = [r.manifest.chunk_index.chunk(i) for i in range(first, last + 1)]
        assert fetch.calls == [(c.transformed_position, c.transformed_size) for c in chunks]
    fetch = Fetches(up.log)
    assert r.read_log(fetch, len(segment), 10) == b"" and fetch.calls == []


def test_the_bytes_read_back_are_kafka_batches(segment: bytes, rsa_keys: Keys) -> None:
    from kafka.record import MemoryRecords

    up = uploaded("compressed", segment, rsa_keys, chunk_size=1000)
    data = b"".join(reader(up, rsa_keys).iter_log(Fetches(up.log)))
    records = MemoryRecords(data)
    offsets = []
    while (batch := records.next_batch()) is not None:
        offsets += [rec.offset for rec in batch]
    assert offsets == list(range(800))


@pytest.mark.parametrize("mode", MODES)
def test_the_indexes_are_cut_out_of_the_packed_object(
    mode: str, segment: bytes, rsa_keys: Keys
) -> None:
    up = uploaded(mode, segment, rsa_keys)
    r = reader(up, rsa_keys)
    fetch = Fetches(up.indexes)
    assert r.read_indexes(fetch) == INDEXES
    assert len(fetch.calls) == 4  # the empty transaction index needs no fetch
    no_txn = dict(INDEXES, transaction=None)
    up2 = upload(segment, no_txn, chunk_size=4096, compress=False, keys=None)
    r2 = reader(up2, rsa_keys)
    assert r2.manifest.indexes["transaction"] is None
    assert r2.read_index("transaction", Fetches(up2.indexes)) is None


def test_an_empty_segment_reads_as_nothing(rsa_keys: Keys) -> None:
    # FixedSizeChunkIndex(chunkSize, 0, chunkSize, 0): the plugin's index of an empty file
    manifest = json.loads(upload(b"x", INDEXES, chunk_size=10, compress=False, keys=None).manifest)
    manifest["chunkIndex"] = {
        "type": "fixed",
        "originalChunkSize": 10,
        "originalFileSize": 0,
        "transformedChunkSize": 10,
        "finalTransformedChunkSize": 0,
    }
    r = ro.RemoteSegmentReader(ro.parse_manifest(json.dumps(manifest).encode()))
    fetch = Fetches(b"")
    assert list(r.iter_log(fetch)) == [] and fetch.calls == []


def test_the_manifest_metadata_and_a_local_file(
    tmp_path: Path, segment: bytes, rsa_keys: Keys
) -> None:
    up = uploaded("plain", segment, rsa_keys)
    (tmp_path / "m").write_bytes(up.manifest)
    (tmp_path / "l").write_bytes(up.log)
    with ro.FileFetch(tmp_path / "m") as f:
        m = ro.read_manifest(f, path="m")
    s = m.segment
    assert s is not None
    assert (s.topic, s.topic_id, s.partition, s.segment_id) == ("orders", TOPIC_ID, 3, SEGMENT_ID)
    assert (s.start_offset, s.end_offset, s.broker_id) == (0, 799, 2)
    assert s.segment_leader_epochs == {0: 0, 1: 200, 2: 400, 3: 600}
    assert s.object_key("pre/").keys().log == (
        f"pre/orders-{TOPIC_ID}/3/00000000000000000000-{SEGMENT_ID}.log"
    )
    with ro.FileFetch(tmp_path / "l") as f:
        assert ro.RemoteSegmentReader(m).read_log(f, 100, 50) == segment[100:150]


# -- the plugin's own examples (its unit tests' JSON) -----------------------------------------

PLUGIN_METADATA_JSON = (
    '{"remoteLogSegmentId":{"topicIdPartition":{"topicId":"lZ6vvmajTWKDBUTV6SQAtQ",'
    '"topicPartition":{"topic":"topic1","partition":42}},"id":"adh9f8BMS4anaUnD8KWfWg"},'
    '"startOffset":0,"endOffset":1000,"maxTimestampMs":1000000000,"brokerId":2,'
    '"eventTimestampMs":2000000000,"segmentLeaderEpochs":{"0":100,"1":200,"2":300}}'
)
# SegmentManifestV1SerdeTest.WITHOUT_ENCRYPTION_JSON and _WITHOUT_TXN_INDEX_JSON
PLUGIN_MANIFEST = (
    '{"version":"1","chunkIndex":{"type":"fixed","originalChunkSize":100,'
    '"originalFileSize":1000,"transformedChunkSize":110,"finalTransformedChunkSize":110},'
    '"segmentIndexes":{"offset":{"position":0,"size":1},"timestamp":{"position":1,"size":1},'
    '"producerSnapshot":{"position":2,"size":1},"leaderEpoch":{"position":3,"size":1},'
    '"transaction":TXN},"compression":false,"remoteLogSegmentMetadata":'
    + PLUGIN_METADATA_JSON
    + "}"
)
# ChunkIndexSerializationTest.ENCODED_CHUNKS: 10, 20, 30
PLUGIN_ENCODED_CHUNKS = "KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe"


def test_the_plugins_example_manifests_parse() -> None:
    m = ro.parse_manifest(PLUGIN_MANIFEST.replace("TXN", '{"position":4,"size":1}').encode())
    assert m.indexes["transaction"] == ro.IndexRange(4, 1)
    assert m.indexes["leaderEpoch"] == ro.IndexRange(3, 1)
    assert m.chunk_index.count == 10 and m.chunk_index.transformed_file_size == 1100
    assert m.segment is not None and m.segment.segment_leader_epochs == {0: 100, 1: 200, 2: 300}
    assert m.segment.partition == 42 and m.segment.end_offset == 1000
    assert (
        ro.parse_manifest(PLUGIN_MANIFEST.replace("TXN", "null").encode()).indexes["transaction"]
        is None
    )
    # 110-byte chunks of 100 bytes, neither compressed nor encrypted: a reader refuses
    e = one_line_error(lambda: ro.RemoteSegmentReader(m))
    assert e.code == Code.BAD_JSON and "chunk 0 110 bytes" in e.message


def test_the_plugins_example_chunk_indexes() -> None:
    fixed = ro.ChunkIndex("fixed", 100, 250, 30, transformed_chunk_size=110)
    assert [(c.index, c.original_position, c.original_size, c.transformed_position,
             c.transformed_size) for c in fixed.chunks()] == [
        (0, 0, 100, 0, 110), (1, 100, 100, 110, 110), (2, 200, 50, 220, 30)
    ]  # fmt: skip
    manifest = json.loads(PLUGIN_MANIFEST.replace("TXN", "null"))
    manifest["chunkIndex"] = {
        "type": "variable",
        "originalChunkSize": 100,
        "originalFileSize": 250,
        "transformedChunks": PLUGIN_ENCODED_CHUNKS,
    }
    m = ro.parse_manifest(json.dumps(manifest).encode())
    assert [(c.original_position, c.original_size, c.transformed_position,
             c.transformed_size) for c in m.chunk_index.chunks()] == [
        (0, 100, 0, 10), (100, 100, 10, 20), (200, 50, 30, 30)
    ]  # fmt: skip
    assert encode_chunk_sizes([10, 20, 30]) == PLUGIN_ENCODED_CHUNKS  # the test's writer, too


# -- object keys --------------------------------------------------------------------------------


def test_object_keys_as_the_plugin_names_them() -> None:
    # ObjectKeyFactoryTest: Uuid(0, 1) and Uuid(0, 0)
    key = ro.SegmentObjectKey("topic", ro.kafka_uuid(bytes(15) + b"\x01"), 7, 1234,
                              ro.kafka_uuid(bytes(16)), "prefix/")  # fmt: skip
    keys = key.keys()
    main = "topic-AAAAAAAAAAAAAAAAAAAAAQ/7/00000000000000001234-AAAAAAAAAAAAAAAAAAAAAA"
    assert keys == ro.ObjectKeys(
        f"prefix/{main}.log", f"prefix/{main}.indexes", f"prefix/{main}.rsm-manifest"
    )
    assert key.keys(ro.CustomMetadata(object_prefix="other/")).log == f"other/{main}.log"
    custom = ro.CustomMetadata(object_key="topic/7/file")
    assert key.keys(custom).indexes == "prefix/topic/7/file.indexes"
    assert key.keys(custom).manifest == f"prefix/{main}.rsm-manifest"  # the plugin's fetch
    # ObjectKeyFactory's javadoc example, a topic with '-' in it, a prefix of several parts
    doc = (
        "someprefix/topic-MWJ6FHTfRYy67jzwZdeqSQ/7/00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.log"
    )
    parsed, suffix = ro.parse_object_key(doc)
    assert (parsed.prefix, parsed.topic, parsed.topic_id, parsed.partition) == (
        "someprefix/",
        "topic",
        "MWJ6FHTfRYy67jzwZdeqSQ",
        7,
    )
    assert (parsed.start_offset, parsed.segment_id, suffix) == (
        1234,
        "tqimKeZwStOEOwRzT3L5oQ",
        "log",
    )
    assert parsed.key("log") == doc
    odd = (
        "a/b/my-topic--AAAAAAAAAAAAAAAAA-AAA/0/00000000000000000005-AAAAAAAAAAAAAAAAAAAAAA.indexes"
    )
    parsed, suffix = ro.parse_object_key(odd, prefix="a/b/")
    assert (parsed.topic, parsed.topic_id, suffix) == (
        "my-topic",
        "-AAAAAAAAAAAAAAAAA-AAA",
        "indexes",
    )
    for bad, position in [
        ("t-MWJ6FHTfRYy67jzwZdeqSQ/7/1234-tqimKeZwStOEOwRzT3L5oQ.log", 27),
        ("p/t-MWJ6FHTfRYy67jzwZdeqSQ/x/00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.log", 27),
        ("p/topic/7/00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.log", 2),
        ("p/t-MWJ6FHTfRYy67jzwZdeqSQ/7/00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.txt", 29),
    ]:
        e = one_line_error(lambda bad=bad: ro.parse_object_key(bad))
        assert (e.path, e.position, e.code) == (bad, position, Code.BAD_INPUT)


def test_custom_metadata_tagged_fields() -> None:
    def tagged(tag: int, body: bytes) -> bytes:
        return bytes([tag, len(body)]) + body

    size = 123_456  # zigzag varlong
    zz = size << 1
    varlong = bytes([(zz & 0x7F) | 0x80, ((zz >> 7) & 0x7F) | 0x80, zz >> 14])
    prefix, main = b"other/", b"orders-x/3/0001"
    data = (
        b"\x03"
        + tagged(0, varlong)
        + tagged(1, bytes([len(prefix) + 1]) + prefix)
        + tagged(2, bytes([len(main) + 1]) + main)
    )
    assert ro.parse_custom_metadata(data) == ro.CustomMetadata(123_456, "other/", "orders-x/3/0001")
    assert ro.parse_custom_metadata(b"") == ro.CustomMetadata()
    assert ro.parse_custom_metadata(b"\x01" + tagged(9, b"zz")) == ro.CustomMetadata()
    e = one_line_error(lambda: ro.parse_custom_metadata(data[:-3], path="md"))
    assert (e.path, e.position, e.code) == ("md", len(data) - 3, Code.TRUNCATED)


# -- every bad input: one line, what and where --------------------------------------------------


def manifest_error(text: bytes | str) -> InputError:
    data = text.encode() if isinstance(text, str) else text
    return one_line_error(lambda: ro.parse_manifest(data, path="m.rsm-manifest"))


def test_a_manifest_that_does_not_parse_or_lacks_fields() -> None:
    good = PLUGIN_MANIFEST.replace("TXN", "null")
    e = manifest_error(good[:50])  # ends inside the string "originalChunkSize"
    assert (e.position, e.code) == (good.index('"origi'), Code.BAD_JSON)
    assert e.one_line() == (
        "klogtool: error: m.rsm-manifest:44: remote segment manifest does not parse:"
        " unterminated string starting (bad-json)"
    )
    e = manifest_error(good + "x")
    assert (e.position, e.code) == (len(good), Code.BAD_JSON)
    e = manifest_error(good.replace('"offset":{"position":0,"size":1},', ""))
    assert e.code == Code.BAD_JSON and "lacks segmentIndexes.offset" in e.message
    assert e.position == good.index('{"offset"')  # the object that lacks it
    bad = good.replace('"originalChunkSize":100', '"originalChunkSize":"100"')
    e = manifest_error(bad)
    assert "originalChunkSize that is not an integer" in e.message
    assert e.position == bad.index('"100"')
    e = manifest_error(good.replace('"version":"1"', '"version":"2"'))
    assert e.code == Code.UNSUPPORTED_VERSION and e.position == good.index('"1"')
    e = manifest_error(good.replace('"type":"fixed"', '"type":"other"'))
    assert "chunkIndex.type 'other'" in e.message
    e = manifest_error(b"\xff" + good.encode())
    assert (e.position, e.code) == (0, Code.BAD_ENCODING)
    e = manifest_error(b"PFA1" + bytes(20))  # segment.format=iceberg: a Puffin file
    assert (e.position, e.code) == (0, Code.UNSUPPORTED) and "Iceberg" in e.message
    e = manifest_error("[" * 100)
    assert "nested deeper" in e.message
    e = manifest_error(good.replace('"compression":false', '"compression":NaN'))
    assert "does not parse" in e.message


def test_chunk_sizes_that_do_not_add_up(segment: bytes, rsa_keys: Keys) -> None:
    up = uploaded("compressed", segment, rsa_keys)
    manifest = json.loads(up.manifest)
    sizes_at = up.manifest.index(manifest["chunkIndex"]["transformedChunks"].encode())
    manifest["chunkIndex"]["transformedChunks"] = encode_chunk_sizes([100, 200])
    text = json.dumps(manifest, separators=(",", ":"))
    e = manifest_error(text)
    assert e.code == Code.BAD_JSON and "2 transformed chunk sizes" in e.message
    assert e.position == sizes_at - 1  # the string's opening quote
    manifest["chunkIndex"]["transformedChunks"] = base64.b64encode(b"not zstd").decode()
    e = manifest_error(json.dumps(manifest))
    assert e.code == Code.DECOMPRESSION_FAILED
    # the plain upload's fixed index, with the final chunk's size off by one
    plain = json.loads(uploaded("plain", segment, rsa_keys).manifest)
    plain["chunkIndex"]["finalTransformedChunkSize"] += 1
    m = ro.parse_manifest(json.dumps(plain).encode(), path="m")
    e = one_line_error(lambda: ro.RemoteSegmentReader(m))
    assert e.code == Code.BAD_JSON and "as they are take" in e.message


def test_a_missing_or_short_chunk_and_a_truncated_object(segment: bytes, rsa_keys: Keys) -> None:
    for mode in MODES:
        up = uploaded(mode, segment, rsa_keys)
        r = reader(up, rsa_keys)
        r.log_path = "x.log"
        cut = len(up.log) - 100
        e = one_line_error(lambda r=r, up=up, cut=cut: b"".join(r.iter_log(Fetches(up.log[:cut]))))
        assert (e.path, e.position, e.code) == ("x.log", cut, Code.TRUNCATED)
        assert "is short" in e.message
        last = r.manifest.chunk_index.chunk(r.manifest.chunk_index.count - 1)
        short = up.log[: last.transformed_position]
        e = one_line_error(lambda r=r, short=short: b"".join(r.iter_log(Fetches(short))))
        assert "is missing" in e.message and e.position == last.transformed_position
        e = one_line_error(lambda r=r, cut=cut: r.check_log_size(cut))
        assert (e.position, e.code) == (cut, Code.TRUNCATED)
        r.indexes_path = "x.indexes"
        e = one_line_error(lambda r=r, up=up: r.read_indexes(Fetches(up.indexes[:-3])))
        assert (e.path, e.position, e.code) == ("x.indexes", len(up.indexes) - 3, Code.TRUNCATED)
        assert "leaderEpoch index" in e.message


@needs_openssl
def test_a_wrong_rsa_key_or_an_altered_chunk(segment: bytes, rsa_keys: Keys) -> None:
    up = uploaded("compressed+encrypted", segment, rsa_keys)
    m = ro.parse_manifest(up.manifest, path="m")
    assert m.encryption is not None
    key_at = up.manifest.index(b'"key-1:')
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    e = one_line_error(lambda: ro.RemoteSegmentReader(m, keys={KEY_ID: other}))
    assert (e.path, e.position, e.code) == ("m", key_at, Code.DECRYPTION_FAILED)
    assert "a wrong key" in e.message
    e = one_line_error(lambda: ro.RemoteSegmentReader(m, keys={"key-2": rsa_keys.private_pem}))
    assert e.code == Code.DECRYPTION_FAILED and "no private key of that id" in e.message
    e = one_line_error(lambda: ro.RemoteSegmentReader(m))
    assert e.code == Code.DECRYPTION_FAILED
    r = ro.RemoteSegmentReader(m, keys={KEY_ID: rsa_keys.private_pem}, log_path="x.log")
    third = m.chunk_index.chunk(2)
    altered = bytearray(up.log)
    altered[third.transformed_position + 40] ^= 1
    e = one_line_error(lambda: b"".join(r.iter_log(Fetches(bytes(altered)))))
    assert (e.path, e.position, e.code) == (
        "x.log",
        third.transformed_position,
        Code.DECRYPTION_FAILED,
    )
    assert "chunk 2" in e.message and "tag does not match" in e.message
    altered_idx = bytearray(up.indexes)
    altered_idx[-1] ^= 1
    e = one_line_error(lambda: r.read_index("leaderEpoch", Fetches(bytes(altered_idx))))
    assert e.code == Code.DECRYPTION_FAILED and e.position == m.indexes["leaderEpoch"].position  # type: ignore[union-attr]
    # another segment's data key: same RSA key, another upload
    up2 = uploaded("compressed+encrypted", segment, rsa_keys)
    r2 = reader(up2, rsa_keys)
    e = one_line_error(lambda: r2.read_log(Fetches(up.log), 0, 10))
    assert (e.position, e.code) == (0, Code.DECRYPTION_FAILED)


def test_a_chunk_is_never_decompressed_beyond_its_size(segment: bytes, rsa_keys: Keys) -> None:
    up = uploaded("compressed", segment, rsa_keys, chunk_size=1000)
    m = ro.parse_manifest(up.manifest)
    first = m.chunk_index.chunk(0)
    # a frame declaring 100 MB where chunk 0 holds 1000 bytes
    bomb = zstandard.ZstdCompressor(write_content_size=True).compress(bytes(100_000_000))
    manifest = json.loads(up.manifest)
    sizes = [len(bomb)] + [c.transformed_size for c in m.chunk_index.chunks()][1:]
    manifest["chunkIndex"]["transformedChunks"] = encode_chunk_sizes(sizes)
    r = ro.RemoteSegmentReader(ro.parse_manifest(json.dumps(manifest).encode()), log_path="b")
    obj = bomb + up.log[first.transformed_size :]
    e = one_line_error(lambda: r.read_log(Fetches(obj), 0, 10))
    assert (e.path, e.position, e.code) == ("b", 0, Code.LIMIT_EXCEEDED)
    # no content size in the frame: the output is bounded all the same
    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(5000))
    sizes[0] = len(unsized)
    manifest["chunkIndex"]["transformedChunks"] = encode_chunk_sizes(sizes)
    r = ro.RemoteSegmentReader(ro.parse_manifest(json.dumps(manifest).encode()), log_path="b")
    e = one_line_error(
        lambda: r.read_log(Fetches(unsized + up.log[first.transformed_size :]), 0, 10)
    )
    assert e.code == Code.DECOMPRESSION_FAILED and e.position == 0
    # a frame and bytes after it, a frame cut short
    for chunk0, what in [
        (zstandard.ZstdCompressor().compress(segment[:1000]) + b"junk", "has 4 bytes after"),
        (zstandard.ZstdCompressor().compress(segment[:1000])[:-5], "ends inside"),
    ]:
        sizes[0] = len(chunk0)
        manifest["chunkIndex"]["transformedChunks"] = encode_chunk_sizes(sizes)
        r = ro.RemoteSegmentReader(ro.parse_manifest(json.dumps(manifest).encode()), log_path="b")
        obj = chunk0 + up.log[first.transformed_size :]
        e = one_line_error(lambda r=r, obj=obj: r.read_log(Fetches(obj), 0, 10))
        assert e.code == Code.DECOMPRESSION_FAILED and what in e.message, e.message
    # a frame of fewer bytes than the chunk's
    small = zstandard.ZstdCompressor().compress(segment[:999])
    sizes[0] = len(small)
    manifest["chunkIndex"]["transformedChunks"] = encode_chunk_sizes(sizes)
    r = ro.RemoteSegmentReader(ro.parse_manifest(json.dumps(manifest).encode()), log_path="b")
    e = one_line_error(lambda: r.read_log(Fetches(small + up.log[first.transformed_size :]), 0, 10))
    assert e.code == Code.FORMAT_ERROR and "not 1000" in e.message


def test_a_large_segment_reads_in_flat_memory(rsa_keys: Keys) -> None:
    import tracemalloc

    chunk = 16 << 10
    big = segment_bytes(batches=400, rows=40)  # about 1.3 MB
    up = upload(big, INDEXES, chunk_size=chunk, compress=True, keys=None)
    r = ro.RemoteSegmentReader(ro.parse_manifest(up.manifest))
    fetch = Fetches(up.log)
    total = 0
    tracemalloc.start()
    try:
        for piece in r.iter_log(fetch):
            total += len(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == len(big) > 50 * chunk
    assert peak < 16 * chunk < len(big) // 4, peak  # a chunk and zstd's buffers, not the segment
