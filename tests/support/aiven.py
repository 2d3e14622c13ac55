"""Aiven's tiered-storage plugin's upload, step by step (``KafkaRemoteStorageManager``, its
transforms and serde, read in its sources), with ``zstandard`` and ``cryptography`` directly
and the data key wrapped by the ``openssl`` command (RSA-OAEP with SHA3-512 for the digest and
MGF1, as BouncyCastle's ``OAEPWithSHA3-512AndMGF1Padding``): never with klogtool's reader."""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import zstandard
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from klogtool.log import remote_objects as ro

TOPIC_ID = "lZ6vvmajTWKDBUTV6SQAtQ"
SEGMENT_ID = "adh9f8BMS4anaUnD8KWfWg"
KEY_ID = "key-1"


@dataclass
class Keys:
    private_pem: bytes
    public_pem_path: Path


def openssl_wrap(data_key: bytes, public_pem: Path) -> bytes:
    """RsaEncryptionProvider.encryptDataKey, by OpenSSL's OAEP (SHA3-512, MGF1 SHA3-512)."""
    return subprocess.run(
        [
            "openssl", "pkeyutl", "-encrypt", "-pubin", "-inkey", str(public_pem),
            "-pkeyopt", "rsa_padding_mode:oaep",
            "-pkeyopt", "rsa_oaep_md:sha3-512",
            "-pkeyopt", "rsa_mgf1_md:sha3-512",
        ],
        input=data_key, capture_output=True, check=True,
    ).stdout  # fmt: skip


def encode_chunk_sizes(values: list[int]) -> str:
    """ChunkSizesBinaryCodec.encode, zstd'd with the content size, base64'd
    (TransformedChunksSerializer)."""
    if not values:
        raw = struct.pack(">i", 0)
    elif len(values) == 1:
        raw = struct.pack(">ii", 1, values[0])
    else:
        base = min(values[:-1])
        width = max((max(v - base, 0).bit_length() + 7) // 8 or 1 for v in values[:-1])
        raw = struct.pack(">iiB", len(values), base, width)
        raw += b"".join((v - base).to_bytes(width, "big") for v in values[:-1])
        raw += struct.pack(">i", values[-1])
    packed = zstandard.ZstdCompressor(write_content_size=True).compress(raw)
    return base64.b64encode(packed).decode()


@dataclass
class Uploaded:
    log: bytes
    indexes: bytes
    manifest: bytes
    chunk_size: int


def upload(
    segment: bytes,
    indexes: dict[str, bytes | None],
    *,
    chunk_size: int,
    compress: bool,
    keys: Keys | None,
) -> Uploaded:
    """KafkaRemoteStorageManager.copyLogSegmentData: the .log chunks (zstd then AES-GCM),
    the packed .indexes (each index one encrypted chunk, never compressed), the manifest."""
    data_key, aad = os.urandom(32), os.urandom(32)

    def encrypt(chunk: bytes) -> bytes:
        iv = os.urandom(12)
        return iv + AESGCM(data_key).encrypt(iv, chunk, aad)

    chunks = []
    for at in range(0, len(segment), chunk_size):
        chunk = segment[at : at + chunk_size]
        if compress:
            chunk = zstandard.ZstdCompressor(write_content_size=True).compress(chunk)
        if keys is not None:
            chunk = encrypt(chunk)
        chunks.append(chunk)
    sizes = [len(c) for c in chunks]
    if compress:
        chunk_index = {
            "type": "variable",
            "originalChunkSize": chunk_size,
            "originalFileSize": len(segment),
            "transformedChunks": encode_chunk_sizes(sizes),
        }
    else:
        chunk_index = {
            "type": "fixed",
            "originalChunkSize": chunk_size,
            "originalFileSize": len(segment),
            "transformedChunkSize": chunk_size + (28 if keys is not None else 0),
            "finalTransformedChunkSize": sizes[-1],
        }
    packed, positions, at = [], {}, 0
    for kind in ro.INDEX_KINDS:
        content = indexes.get(kind)
        if content is None:
            continue
        blob = encrypt(content) if (keys is not None and content) else content
        positions[kind] = {"position": at, "size": len(blob)}
        packed.append(blob)
        at += len(blob)
    manifest: dict[str, object] = {
        "version": "1",
        "chunkIndex": chunk_index,
        "segmentIndexes": {
            "offset": positions["offset"],
            "timestamp": positions["timestamp"],
            "producerSnapshot": positions["producerSnapshot"],
            "leaderEpoch": positions["leaderEpoch"],
            "transaction": positions.get("transaction"),
        },
        "compression": compress,
    }
    if keys is not None:
        wrapped = openssl_wrap(data_key, keys.public_pem_path)
        manifest["encryption"] = {
            "dataKey": f"{KEY_ID}:{base64.b64encode(wrapped).decode()}",
            "aad": base64.b64encode(aad).decode(),
        }
    manifest["remoteLogSegmentMetadata"] = {
        "remoteLogSegmentId": {
            "topicIdPartition": {
                "topicId": TOPIC_ID,
                "topicPartition": {"topic": "orders", "partition": 3},
            },
            "id": SEGMENT_ID,
        },
        "startOffset": 0,
        "endOffset": 799,
        "maxTimestampMs": 1_700_000_000_799,
        "brokerId": 2,
        "eventTimestampMs": 1_700_000_001_000,
        "segmentLeaderEpochs": {"0": 0, "1": 200, "2": 400, "3": 600},
    }
    text = json.dumps(manifest, separators=(",", ":")).encode()
    return Uploaded(b"".join(chunks), b"".join(packed), text, chunk_size)


def make_rsa_keys(directory: Path) -> Keys:
    """A fresh key pair: the private key's PEM (PKCS#8, as the plugin reads it) and the
    public key's file (for openssl)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = directory / "public.pem"
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return Keys(private_pem, public)


def as_aiven(
    source: Path, root: Path, topic: str, topic_id: str, partition: int, keys: Keys | None
) -> Path:
    """The LocalTieredStorage segments of ``source`` uploaded again as Aiven's plugin uploads
    them (chunks zstd'd, encrypted when ``keys``), under root/<topic>-<topic id>/<partition>/."""
    dest = root / f"{topic}-{topic_id}" / str(partition)
    dest.mkdir(parents=True)
    kinds = {
        "offset": ".index",
        "timestamp": ".timeindex",
        "producerSnapshot": ".snapshot",
        "leaderEpoch": ".leader_epoch_checkpoint",
        "transaction": ".txnindex",
    }
    for log in sorted(source.glob("*.log")):
        stem = log.name.removesuffix(".log")
        indexes = {
            kind: (source / f"{stem}{suffix}").read_bytes()
            if (source / f"{stem}{suffix}").exists()
            else None
            for kind, suffix in kinds.items()
        }
        up = upload(log.read_bytes(), indexes, chunk_size=1000, compress=True, keys=keys)
        (dest / f"{stem}.log").write_bytes(up.log)
        (dest / f"{stem}.indexes").write_bytes(up.indexes)
        (dest / f"{stem}.rsm-manifest").write_bytes(up.manifest)
    return dest
