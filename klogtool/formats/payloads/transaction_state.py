"""``__transaction_state`` records (docs/kafka-rules.md: Internal topics).

Key: ``version:int16`` (0) + ``TransactionalId`` string; another key version decodes as
``"unknown"`` (kafka-dump-log prints ``unknown::version={v}``). Value: ``version:int16`` +
``TransactionLogValue`` — v0 non-flexible, v1 flexible with tagged fields 0
``PreviousProducerId`` (default -1), 1 ``NextProducerId`` (-1), 2 ``ClientTransactionVersion``
(0; 2 for transactions version 2, KIP-890), 3 ``NextProducerEpoch`` (-1; Kafka 4.1, KIP-939).
A null value is a tombstone; an unknown value version is an
:class:`~klogtool.formats.errors.UnsupportedError` (kafka-dump-log aborts on it).

:func:`format_transaction_text` renders the text kafka-dump-log's ``--transaction-log-decoder``
prints (the Scala ``TransactionLog.formatRecordKeyAndValue`` form).
"""

from __future__ import annotations

from typing import Any

from klogtool.formats.errors import CorruptRecordError
from klogtool.formats.payloads.coordinator import (
    Bytes,
    CoordinatorRecord,
    RecordSchema,
    decode_coordinator_record,
)
from klogtool.formats.payloads.schema import messages_from_json

__all__ = [
    "TRANSACTION_LOG_KEY",
    "TRANSACTION_LOG_VALUE",
    "TRANSACTION_STATES",
    "TRANSACTION_STATE_RECORDS",
    "decode_transaction_state",
    "format_transaction_text",
    "transaction_state_name",
]

TRANSACTION_STATES: dict[int, str] = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}

SCHEMA_JSON = """[
// transaction-coordinator/src/main/resources/common/message/TransactionLog*.json as released in
// Kafka 4.1 and 4.2 (identical). Tags 0-2: KIP-890 (4.0); NextProducerEpoch: KIP-939 (4.1).
{"name": "TransactionLogKey", "validVersions": "0", "flexibleVersions": "none",
 "fields": [
  {"name": "TransactionalId", "type": "string", "versions": "0+"}]},
{"name": "TransactionLogValue", "validVersions": "0-1", "flexibleVersions": "1+",
 "fields": [
  {"name": "ProducerId", "type": "int64", "versions": "0+"},
  {"name": "PreviousProducerId", "type": "int64", "versions": "1+", "tag": 0,
   "taggedVersions": "1+", "default": -1},
  {"name": "NextProducerId", "type": "int64", "versions": "1+", "tag": 1, "taggedVersions": "1+",
   "default": -1},
  {"name": "ProducerEpoch", "type": "int16", "versions": "0+"},
  {"name": "NextProducerEpoch", "type": "int16", "versions": "1+", "tag": 3,
   "taggedVersions": "1+", "default": -1},
  {"name": "TransactionTimeoutMs", "type": "int32", "versions": "0+"},
  {"name": "TransactionStatus", "type": "int8", "versions": "0+"},
  {"name": "TransactionPartitions", "type": "[]PartitionsSchema", "versions": "0+",
   "nullableVersions": "0+", "fields": [
    {"name": "Topic", "type": "string", "versions": "0+"},
    {"name": "PartitionIds", "type": "[]int32", "versions": "0+"}]},
  {"name": "TransactionLastUpdateTimestampMs", "type": "int64", "versions": "0+"},
  {"name": "TransactionStartTimestampMs", "type": "int64", "versions": "0+"},
  {"name": "ClientTransactionVersion", "type": "int16", "versions": "1+", "tag": 2,
   "taggedVersions": "1+", "default": 0}]}
]"""
_MESSAGES = messages_from_json(SCHEMA_JSON)
TRANSACTION_LOG_KEY = _MESSAGES["TransactionLogKey"]
TRANSACTION_LOG_VALUE = _MESSAGES["TransactionLogValue"]

TRANSACTION_STATE_RECORDS: dict[int, RecordSchema] = {
    0: RecordSchema(0, TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE),
}


def transaction_state_name(status: int) -> str:
    """``Empty`` ... ``PrepareEpochFence``; ``Unknown(<n>)`` for a number Kafka does not define."""
    return TRANSACTION_STATES.get(status, f"Unknown({status})")


def decode_transaction_state(key: Bytes | None, value: Bytes | None) -> CoordinatorRecord:
    """Decode one ``__transaction_state`` record (see :class:`CoordinatorRecord`)."""
    return decode_coordinator_record(key, value, TRANSACTION_STATE_RECORDS)


def format_transaction_text(record: CoordinatorRecord) -> tuple[str, str | None]:
    """kafka-dump-log's ``key`` and ``payload`` texts for a decoded record.

    ``transaction_metadata::transactionalId={id}`` and
    ``producerId:{},producerEpoch:{},state={State},partitions=[t-0,t-1],``
    ``txnLastUpdateTimestamp={},txnTimeoutMs={}`` (``<DELETE>`` for a tombstone); an unknown key
    version gives ``unknown::version={v}`` and no payload. Partitions are listed in record order
    (Kafka prints a hash set, whose order is not defined). A state number Kafka does not define
    raises :class:`~klogtool.formats.errors.CorruptRecordError` (kafka-dump-log aborts).
    """
    if record.is_unknown or record.key is None:
        return f"unknown::version={record.record_type}", None
    key_text = f"transaction_metadata::transactionalId={record.key['transactionalId']}"
    value = record.value
    if value is None:
        return key_text, "<DELETE>"
    status = value["transactionStatus"]
    if status not in TRANSACTION_STATES:
        raise CorruptRecordError(f"value: unknown transaction state {status}", 0)
    partitions: list[str] = []
    for entry in value.get("transactionPartitions") or ():
        topic: Any = entry["topic"]
        partitions.extend(f"{topic}-{p}" for p in entry["partitionIds"])
    payload = (
        f"producerId:{value['producerId']},"
        f"producerEpoch:{value['producerEpoch']},"
        f"state={TRANSACTION_STATES[status]},"
        f"partitions=[{','.join(partitions)}],"
        f"txnLastUpdateTimestamp={value['transactionLastUpdateTimestampMs']},"
        f"txnTimeoutMs={value['transactionTimeoutMs']}"
    )
    return key_text, payload
