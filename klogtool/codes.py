"""Every finding and error code klogtool emits, with its severity and what it means.

A code is part of the JSON Lines contract (``"code"`` of a ``finding``, the ``(code)`` at the
end of an error line): scripts match on it, so a code is never renamed. This enum is the one
place codes are spelled; ``docs/codes.md`` is generated from it (``python -m klogtool.codes``)
and ``tests/test_codes.py`` checks that every code the source emits is here and documented.

The format layer cannot import this module (it imports nothing of klogtool outside itself):
its codes are spelled in ``klogtool/formats/`` (``errors.py`` and the modules that raise them),
and the test holds them to this registry too.

Severities: a finding is an ``error`` (the data is wrong; verify exits 1) or a ``warning``
(worth knowing, not wrong); ``fatal`` ends the command with exit 3 (bad input) or 4 (refused).
Some codes have more than one: a CRC mismatch is an error finding for ``verify`` and ends a
rewriting command (which refuses to rewrite a damaged segment); a zero-filled tail is a warning
for the active segment and an error for an older one.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    FATAL = "fatal"


E, W, F = Severity.ERROR, Severity.WARNING, Severity.FATAL


class Code(StrEnum):
    """``Code.CRC_MISMATCH == "crc-mismatch"``; ``.severities`` and ``.description``."""

    severities: tuple[Severity, ...]
    description: str

    def __new__(cls, value: str, severities: tuple[Severity, ...], description: str) -> Code:
        member = str.__new__(cls, value)
        member._value_ = value
        member.severities = severities
        member.description = description
        return member

    # -- bytes that are not a valid batch (raised by the format layer) -------------------------
    FORMAT_ERROR = "format-error", (E, F), "bytes that a Kafka file of this kind may not hold"
    CORRUPT = "corrupt", (E, F), "an unreadable batch whose reader gave no more precise code"
    CORRUPT_RECORD = "corrupt-record", (E, F), "a bad length, varint or count inside a batch"
    CRC_MISMATCH = "crc-mismatch", (E, F), "a batch's or file's stored CRC does not match its bytes"
    TRUNCATED = "truncated", (E, F), "the file ends inside an entry header"
    TORN_TAIL = "torn-tail", (E, W, F), "the last bytes are an incomplete batch (a torn write)"
    ZERO_FILL = "zero-fill", (E, W), "zero bytes at the end of a segment (preallocation)"
    BAD_MAGIC = "bad-magic", (E, F), "a message format (magic) other than 0, 1 or 2"
    BAD_RECORD_COUNT = "bad-record-count", (E, F), "a v2 batch's record count is impossible"
    RECORD_TOO_SMALL = "record-too-small", (E, F), "an entry shorter than its format's minimum"
    UNSUPPORTED = "unsupported", (E, F), "well-formed but not allowed by Kafka (an unknown codec)"
    UNENCODABLE = (
        "unencodable",
        (E, F),
        "a rewrite cannot write a record: its timestamp or offset is too far from its new"
        " batch's base for the format's delta field (Kafka would wrap the difference)",
    )
    DECOMPRESSION_FAILED = "decompression-failed", (E, F), "a compressed batch does not decompress"
    DECRYPTION_FAILED = (
        "decryption-failed",
        (F,),
        "an encrypted remote object (Aiven's tiered storage) that does not decrypt: no private"
        " key for its key id, a wrong key, or altered bytes (the AES-GCM tag does not match)",
    )
    LIMIT_EXCEEDED = (
        "limit-exceeded",
        (E, F),
        "a declared or decompressed size beyond --max-batch-bytes (a decompression bomb?)",
    )
    BAD_LENGTH = "bad-length", (E, F), "an entry or batch length that cannot be right"
    BATCH_TOO_SMALL = "batch-too-small", (E, F), "a batch shorter than its format's header"
    BAD_ENTRY_HEADER = "bad-entry-header", (E, F), "a v0/v1 entry header that does not parse"
    BAD_OFFSET_DELTA = "bad-offset-delta", (E, F), "a record's offset delta outside its batch"
    BAD_VARINT = "bad-varint", (E, F), "a varint longer than its type allows"
    CODEC_UNAVAILABLE = "codec-unavailable", (E, F), "the Python package for a codec is missing"
    INNER_CRC_MISMATCH = (
        "inner-crc-mismatch",
        (E,),
        "a message inside a compressed v0/v1 wrapper has a bad CRC",
    )
    WRAPPER_OFFSET_MISMATCH = (
        "wrapper-offset-mismatch",
        (E,),
        "a v0/v1 wrapper's offset is not the offset of its last inner message",
    )
    RECORD_COUNT_MISMATCH = (
        "record-count-mismatch",
        (E,),
        "a v2 batch holds another number of records than its header says",
    )
    RECORD_OFFSET_NOT_INCREASING = (
        "record-offset-not-increasing",
        (E,),
        "record offsets inside a batch do not increase",
    )
    RECORD_OFFSET_OUT_OF_BATCH = (
        "record-offset-out-of-batch",
        (E,),
        "a record's offset lies outside its batch's offset range",
    )
    MAX_TIMESTAMP_MISMATCH = (
        "max-timestamp-mismatch",
        (E,),
        "a batch's max timestamp is not the largest of its records' timestamps",
    )
    BAD_CONTROL_RECORD = "bad-control-record", (E,), "a control batch's record does not decode"
    BAD_COORDINATOR_RECORD = (
        "bad-coordinator-record",
        (W,),
        "a __consumer_offsets record that does not decode (groups leaves it out)",
    )

    PAYLOAD_REFUSED = (
        "payload-refused",
        (W,),
        "a Confluent key or value beyond the decoder's bounds (size, nesting, values, decimal"
        " digits): shown undecoded, with its raw bytes (docs/confluent.md)",
    )

    # -- a segment and its neighbours ----------------------------------------------------------
    DECODER_NOT_IMPLEMENTED = (
        "decoder-not-implemented",
        (E, F),
        "a payload decoder asked for a record type it does not decode",
    )
    NOT_A_LOG = "not-a-log", (E, F), "a file named .log that is not a Kafka log segment"
    OFFSET_NOT_INCREASING = (
        "offset-not-increasing",
        (E, F),
        "a batch's offsets do not follow the previous batch's",
    )
    OFFSET_BELOW_SEGMENT_BASE = (
        "offset-below-segment-base",
        (E, F),
        "a batch's first offset is below its segment's base offset (the file name)",
    )
    OFFSET_OVERFLOW = (
        "offset-overflow",
        (E, F),
        "an offset too far above the segment's base for a 32-bit relative index entry",
    )
    SEGMENT_OVERLAP = "segment-overlap", (E,), "a segment's last offset reaches the next one's base"
    SEGMENT_TOO_LARGE = "segment-too-large", (F,), "a segment over 2 GiB (index positions: 32-bit)"
    LOG_DAMAGED = "log-damaged", (W,), "the log stops being readable before its end"
    LOG_MISSING = "log-missing", (E, W), "an index file without its sibling .log"
    LOG_UNREADABLE = "log-unreadable", (W,), "a log could not be read to the end"
    LEFTOVER_FILE = (
        "leftover-file",
        (W,),
        "a .cleaned, .swap, .deleted or klogtool temporary file left by an interrupted run",
    )
    ORPHAN_INDEX = "orphan-index", (W,), "an index file whose segment .log is missing"

    # -- .index and .timeindex -----------------------------------------------------------------
    INDEX_MISSING = "index-missing", (W,), "a segment without its .index (the broker rebuilds it)"
    INDEX_SANITY = "index-sanity", (E,), "an index the broker's sanity check rejects"
    INDEX_NOT_TRIMMED = (
        "index-not-trimmed",
        (E, W),
        "zero-filled slots after an offset index's entries (preallocated; the active segment's "
        "are reset on load: a warning)",
    )
    INDEX_NOT_INCREASING = "index-not-increasing", (E,), "offset index entries do not increase"
    INDEX_BEYOND_LOG = "index-beyond-log", (E,), "an offset index entry past the end of its log"
    INDEX_NOT_ON_BATCH = (
        "index-not-on-batch",
        (E,),
        "an offset index entry whose position is not the start of a batch",
    )
    INDEX_MIS_SEEKS = (
        "index-mis-seeks",
        (E,),
        "a lookup through the offset index would land on the wrong batch",
    )
    INDEX_MISMATCH = "index-mismatch", (W,), "an offset index entry disagrees with the log"
    INDEX_UNUSABLE = "index-unusable", (W,), "find cannot seek by the offset index: it scans"
    TIMEINDEX_MISSING = "timeindex-missing", (W,), "a segment without its .timeindex"
    TIMEINDEX_SANITY = "timeindex-sanity", (E,), "a time index the broker's sanity check rejects"
    TIMEINDEX_NOT_TRIMMED = (
        "timeindex-not-trimmed",
        (E, W),
        "zero-filled slots after a time index's entries (preallocated; the active segment's "
        "are reset on load: a warning)",
    )
    TIMEINDEX_NOT_INCREASING = (
        "timeindex-not-increasing",
        (E,),
        "time index entries do not increase",
    )
    TIMEINDEX_BEYOND_LOG = "timeindex-beyond-log", (E,), "a time index entry past its log's end"
    TIMEINDEX_FINAL_ENTRY_MISSING = (
        "timeindex-final-entry-missing",
        (W,),
        "a rolled segment's time index lacks the entry for its largest timestamp",
    )
    TIMEINDEX_MIS_SEEKS = (
        "timeindex-mis-seeks",
        (E,),
        "a lookup by timestamp through the time index would land on the wrong batch",
    )
    TIMEINDEX_TIMESTAMP_TOO_LARGE = (
        "timeindex-timestamp-too-large",
        (E,),
        "a time index timestamp larger than any timestamp in its segment",
    )
    TIMEINDEX_OFFSET_NOT_FOUND = (
        "timeindex-offset-not-found",
        (W,),
        "a time index entry's offset is past its log's last offset (with --format kafka: "
        "not the last offset of the batch kafka-dump-log.sh reads for it)",
    )
    TIMEINDEX_TIMESTAMP_MISMATCH = (
        "timeindex-timestamp-mismatch",
        (W,),
        "a time index entry's timestamp differs from the max timestamp of the batch holding "
        "its offset",
    )
    TIMEINDEX_OUT_OF_ORDER = (
        "timeindex-out-of-order",
        (E,),
        "time index timestamps do not increase",
    )
    TIMEINDEX_UNUSABLE = "timeindex-unusable", (W,), "find cannot seek by time: it scans"

    # -- transactions and .txnindex ------------------------------------------------------------
    TXNINDEX_CORRUPT = "txnindex-corrupt", (E,), "a .txnindex that does not parse"
    TXNINDEX_SANITY = "txnindex-sanity", (E,), "a .txnindex the broker's sanity check rejects"
    TXNINDEX_NOT_INCREASING = (
        "txnindex-not-increasing",
        (E,),
        "aborted-transaction entries whose last offsets do not increase",
    )
    TXNINDEX_BAD_RANGE = (
        "txnindex-bad-range",
        (E,),
        "an aborted-transaction entry whose first offset is past its last",
    )
    TXNINDEX_MARKER_NOT_FOUND = (
        "txnindex-marker-not-found",
        (E,),
        "an aborted-transaction entry with no abort marker at its last offset",
    )
    TXNINDEX_MISSING_ABORT = (
        "txnindex-missing-abort",
        (E, W),
        "an abort marker in the log that the .txnindex does not list",
    )
    TXNINDEX_MISMATCH = (
        "txnindex-mismatch",
        (W,),
        "a .txnindex entry differs from what replaying the log gives",
    )
    TXNINDEX_FIRST_OFFSET_TOO_HIGH = (
        "txnindex-first-offset-too-high",
        (E,),
        "an entry's first offset is past the transaction's first record (consumers would "
        "deliver aborted records)",
    )
    TXNINDEX_LSO_TOO_HIGH = (
        "txnindex-lso-too-high",
        (E,),
        "an entry's last stable offset is past the one replay gives",
    )
    TXNINDEX_NOT_REBUILT = (
        "txnindex-not-rebuilt",
        (W,),
        "a .txnindex left as it is: its transactions start in segments not read",
    )
    EMPTY_TRANSACTION = "empty-transaction", (W,), "a commit or abort marker with no data before it"
    HANGING_TRANSACTION = (
        "hanging-transaction",
        (W,),
        "a transaction still open at the log end (it holds back the last stable offset)",
    )
    MARKER_WITHOUT_DATA = (
        "marker-without-data",
        (W,),
        "a marker for a producer with no open transaction",
    )

    # -- checkpoints and snapshots -------------------------------------------------------------
    MALFORMED_LINE = "malformed-line", (E, F), "a checkpoint or properties line that does not parse"
    UNSUPPORTED_VERSION = (
        "unsupported-version",
        (E, F),
        "a checkpoint, snapshot or index of a version this tool does not know",
    )
    COUNT_MISMATCH = "count-mismatch", (E, F), "a checkpoint's entry count differs from its lines"
    BAD_ENCODING = "bad-encoding", (E, F), "a text file (checkpoint) that is not valid UTF-8"
    BAD_UUID = "bad-uuid", (E, F), "a topic or directory id that is not a valid UUID"
    BAD_JSON = "bad-json", (E, F), "a JSON file (quorum-state) that does not parse as expected"
    BAD_PROPERTY = "bad-property", (E, F), "a meta.properties value that does not parse"
    MISSING_PROPERTY = "missing-property", (E, F), "a meta.properties without a required key"
    BAD_COUNT = "bad-count", (E, F), "a producer snapshot's entry count that cannot be right"
    CHECKPOINT_CORRUPT = (
        "checkpoint-corrupt",
        (E, W, F),
        "an offset checkpoint file that does not parse",
    )
    CHECKPOINT_PARTITION_MISSING = (
        "checkpoint-partition-missing",
        (W,),
        "a partition missing from its log directory's offset checkpoints",
    )
    LOG_START_BEYOND_LOG_END = (
        "log-start-beyond-log-end",
        (E,),
        "the log start offset checkpoint is past the log end: the broker would delete every "
        "segment",
    )
    RECOVERY_POINT_BEYOND_LOG_END = (
        "recovery-point-beyond-log-end",
        (W,),
        "the recovery point is past the log end (flushed data missing, or a stale checkpoint)",
    )
    HIGH_WATERMARK_BEYOND_LOG_END = (
        "high-watermark-beyond-log-end",
        (W,),
        "the replication checkpoint's high watermark is past the log end",
    )
    CLEANER_CHECKPOINT_BEYOND_LOG_END = (
        "cleaner-checkpoint-beyond-log-end",
        (W,),
        "the cleaner checkpoint is past the log end (the cleaner resets it)",
    )
    LEADER_EPOCH_CHECKPOINT_CORRUPT = (
        "leader-epoch-checkpoint-corrupt",
        (E, W),
        "a leader-epoch-checkpoint that does not parse",
    )
    OFFSET_CHECKPOINT_CORRUPT = (
        "offset-checkpoint-corrupt",
        (E,),
        "an offset checkpoint given by itself that does not parse",
    )
    PARTITION_METADATA_CORRUPT = (
        "partition-metadata-corrupt",
        (E,),
        "a partition.metadata file that does not parse",
    )
    META_PROPERTIES_CORRUPT = (
        "meta-properties-corrupt",
        (E,),
        "a meta.properties that does not parse",
    )
    QUORUM_STATE_CORRUPT = "quorum-state-corrupt", (E,), "a quorum-state file that does not parse"
    CLEAN_SHUTDOWN_CORRUPT = (
        "clean-shutdown-corrupt",
        (E,),
        "a .kafka_cleanshutdown file that does not parse",
    )
    LEADER_EPOCH_NOT_INCREASING = (
        "leader-epoch-not-increasing",
        (E,),
        "leader epochs or their start offsets do not increase",
    )
    LEADER_EPOCH_MISSING = (
        "leader-epoch-missing",
        (W,),
        "batches carry a leader epoch the checkpoint does not list",
    )
    LEADER_EPOCH_MISMATCH = (
        "leader-epoch-mismatch",
        (W,),
        "an epoch's start offset differs from its first batch's in the log",
    )
    LEADER_EPOCH_BEYOND_LOG_END = (
        "leader-epoch-beyond-log-end",
        (W,),
        "a leader epoch starting past the log end",
    )
    SNAPSHOT_CORRUPT = "snapshot-corrupt", (E, W), "a producer snapshot that does not parse"
    SNAPSHOT_CRC_MISMATCH = (
        "snapshot-crc-mismatch",
        (E,),
        "a producer snapshot whose CRC does not match",
    )
    SNAPSHOT_BEYOND_LOG_END = (
        "snapshot-beyond-log-end",
        (W,),
        "a producer snapshot named for an offset past the log end",
    )

    # -- paths and layouts ---------------------------------------------------------------------
    BAD_INPUT = "bad-input", (F,), "an input klogtool cannot use (the message says why)"
    NOT_FOUND = "not-found", (F,), "a PATH argument does not exist"
    UNREADABLE = "unreadable", (F,), "a file or directory that cannot be read"
    IO_ERROR = "io-error", (F,), "reading or writing failed (the operating system's error)"
    NOT_A_DIR = "not-a-dir", (F,), "a directory was expected"
    NOT_A_SEGMENT = "not-a-segment", (F,), "a segment file was expected"
    NOT_A_PARTITION_DIR = (
        "not-a-partition-dir",
        (F,),
        "a partition directory (<topic>-<partition>) was expected",
    )
    NOT_A_LOG_DIR = "not-a-log-dir", (F,), "a partition directory or a log directory was expected"
    BAD_PARTITION_NAME = (
        "bad-partition-name",
        (F,),
        "a directory name that is not a partition a broker could have written",
    )
    NO_KAFKA_FILES = "no-kafka-files", (F,), "a directory with no Kafka files in it"
    UNKNOWN_FILE = "unknown-file", (F,), "a file whose kind is not known from its name"
    MISMATCHED_INPUTS = (
        "mismatched-inputs",
        (F,),
        "diff's two inputs are not the same kind (two partitions or two log directories)",
    )
    STDIN = "stdin", (F,), "'-' (stdin) where a seekable segment file is needed"
    SYMLINK = "symlink", (E, F), "a symbolic link where klogtool would write: never followed"
    SYMLINK_OUTSIDE = (
        "symlink-outside",
        (E,),
        "a symbolic link that leads out of the directory given",
    )
    BAD_CONFIG = "bad-config", (F,), "a topic configuration value Kafka would reject"
    TOO_LARGE = "too-large", (F,), "a small file (a manifest) that is too large to be one"
    LOST_RESULT = "lost-result", (F,), "no result came back for a path (it changed meanwhile?)"
    WORKER_DIED = (
        "worker-died",
        (F,),
        "a --jobs worker process died (killed: the OOM killer?); the part it read is named",
    )
    BAD_OBJECT_KEY = (
        "bad-object-key",
        (W,),
        "an object key with an empty, '.' or '..' path segment: left out (no disk could hold "
        "a file of that name)",
    )
    CREDENTIALS_IN_URI = (
        "credentials-in-uri",
        (F,),
        "a URI with credentials in its user info (s3://KEY:SECRET@bucket): refused, they come "
        "from the standard chains",
    )
    OBJECT_CHANGED = (
        "object-changed",
        (F,),
        "an object in object storage was replaced while it was read (its ETag, version, size "
        "or time differs from what its first read saw): docs/storage.md",
    )
    FILE_SHRANK = (
        "file-shrank",
        (F,),
        "a file became shorter while it was read (another process truncated it): native/src/"
        "guard.rs reports it",
    )

    # -- writing commands ----------------------------------------------------------------------
    BROKER_LOCK_HELD = (
        "broker-lock-held",
        (F,),
        "a running broker (or another klogtool) holds the log directory's .lock",
    )
    LOCK_UNAVAILABLE = "lock-unavailable", (F,), "the log directory's .lock cannot be taken"
    NOT_LIVE_PARTITION = (
        "not-live-partition",
        (W,),
        "a partition dir the broker marked -delete, -future or -stray (docs/broker-host.md)",
    )
    BROKER_RUNNING = (
        "broker-running",
        (W,),
        "a running broker holds the log directory's .lock: what is read may change under it",
    )
    FILE_REPLACED = "file-replaced", (F,), "a file changed since it was planned: not touched"
    CONFIG_ASSUMED = (
        "config-assumed",
        (F,),
        "a topic config a rewrite decides by is not known (no metadata log holds the topic, no"
        " option gives it): the partition is not deleted from or compacted by a guess",
    )
    REMOTE_INDEX_CORRUPT = (
        "remote-index-corrupt",
        (E,),
        "a remote segment's index in remote-log-index-cache fails the broker's sanity check:"
        " its RemoteIndexCache does not start",
    )
    REMOTE_INDEX_INCOMPLETE = (
        "remote-index-incomplete",
        (W,),
        "a remote segment in remote-log-index-cache without all three indexes: the broker"
        " deletes them on start and fetches them again",
    )
    REMOTE_SEGMENT_MISSING = (
        "remote-segment-missing",
        (F,),
        "a remote segment a restore needs has no files, or lacks one the broker needs",
    )
    REMOTE_SEGMENTS_OVERLAP = (
        "remote-segments-overlap",
        (F,),
        "remote segments hold the same offsets: only the remote-log metadata tells which copy"
        " holds them",
    )
    TIERED_TOPIC = (
        "tiered-topic",
        (F,),
        "refused for a tiered topic (remote.storage.enable=true): compaction (Kafka never"
        " compacts one) or a new log start offset (it holds for remote storage too, which"
        " klogtool does not change)",
    )
    BEYOND_HIGH_WATERMARK = (
        "beyond-high-watermark",
        (F,),
        "retention would delete records above the high watermark",
    )
    LOSSY_CONVERSION = (
        "lossy-conversion",
        (F,),
        "converting down would lose data (headers, transactions...): --allow-lossy",
    )
    DESTINATION_NOT_EMPTY = "destination-not-empty", (F,), "the destination already holds files"
    DESTINATION_SYMLINK = "destination-symlink", (F,), "the destination is a symbolic link"
    DESTINATION_NOT_A_DIRECTORY = (
        "destination-not-a-directory",
        (F,),
        "the destination exists and is not a directory",
    )
    DESTINATION_PARENT_MISSING = (
        "destination-parent-missing",
        (F,),
        "the directory that would hold the destination does not exist",
    )
    DESTINATION_INSIDE_INPUT = (
        "destination-inside-input",
        (F,),
        "the destination lies inside an input",
    )
    INPUT_INSIDE_DESTINATION = (
        "input-inside-destination",
        (F,),
        "an input lies inside the destination --overwrite would replace",
    )
    REMOTE_DESTINATION = (
        "remote-destination",
        (F,),
        "a remote (hdfs://, s3a://...) destination for the local engine",
    )
    NO_QUARANTINE = "no-quarantine", (F,), "truncate-recovery --restore found nothing to restore"
    BAD_MANIFEST = (
        "bad-manifest",
        (E, F),
        "a quarantine manifest that does not parse or does not match its files",
    )
    RESTORE_CONFLICT = (
        "restore-conflict",
        (F,),
        "the partition changed since the truncation: restoring would overwrite newer data",
    )

    # -- Spark and optional packages -----------------------------------------------------------
    PYARROW_MISSING = "pyarrow-missing", (F,), "pyarrow is not installed"
    SPARK_MISSING = "spark-missing", (F,), "pyspark is not installed"
    JAVA_MISSING = "java-missing", (F,), "no Java runtime for Spark"
    SPARK_UNAVAILABLE = (
        "spark-unavailable",
        (F,),
        "the Spark master or Connect server is unreachable",
    )
    SPARK_CONNECT_UNAVAILABLE = (
        "spark-connect-unavailable",
        (F,),
        "Spark Connect's Python packages are not installed",
    )
    SPARK_SESSION_CONFLICT = (
        "spark-session-conflict",
        (F,),
        "a Spark session on another master already runs in this process",
    )
    SPARK_JOB_FAILED = "spark-job-failed", (F,), "the Spark job failed (its first error is shown)"


def lookup(code: str) -> Code | None:
    """The registered code, or None."""
    return Code._value2member_map_.get(code)  # type: ignore[return-value]


# Set by the test suite: every code created is then checked against the registry.
STRICT = os.environ.get("KLOGTOOL_STRICT_CODES") == "1"


def check(code: str, severity: str) -> None:
    """Under ``KLOGTOOL_STRICT_CODES=1`` (the test suite), a code the registry does not know,
    or a severity it does not list for that code, is a bug: raise."""
    if STRICT:
        known = lookup(code)
        if known is None or severity not in known.severities:
            raise AssertionError(f"code {code!r} with severity {severity!r} is not registered")


def reference() -> str:
    """The Markdown page ``docs/codes.md``."""
    lines = [
        "# Finding and error codes",
        "",
        "Generated from `klogtool/codes.py` by `python -m klogtool.codes > docs/codes.md`;",
        "a test keeps this page in step. A code is part of the output contract",
        "([output.md](output.md)): it is never renamed.",
        "",
        "Severity: `error` and `warning` are findings (`verify` exits 1 on an error);",
        "`fatal` ends the command (exit 3 for bad input, 4 when refused for safety).",
        "",
        "| code | severity | meaning |",
        "|---|---|---|",
    ]
    for code in sorted(Code, key=str):
        sev = ", ".join(s.value for s in code.severities)
        lines.append(f"| `{code.value}` | {sev} | {code.description} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(reference())
