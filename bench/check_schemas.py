"""Check every payload schema of klogtool against Kafka's own message definitions, field by field.

Run by hand with a checkout of Apache Kafka (CI has none):

    python bench/check_schemas.py /path/to/kafka

For each :class:`~klogtool.formats.payloads.schema.Message` klogtool knows (the internal topics'
keys and values, control records, KRaft metadata records), the Kafka JSON file of the same name
is found under the checkout and read with klogtool's own ``load_json_schema``; then the valid
and flexible versions, and each field's name, type, versions, nullable versions, tag, tagged
versions, default and nested fields are compared. A schema Kafka does not define (the consumer
protocol's, which Kafka writes by hand) or has renamed is listed as such. Exit status 1 when
anything differs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from klogtool.formats.payloads import (  # noqa: E402
    cluster_metadata,
    consumer_offsets,
    control,
    remote_log_metadata,
    share_state,
    transaction_state,
)
from klogtool.formats.payloads.schema import MISSING, Field, Message, load_json_schema  # noqa: E402


def ours() -> list[Message]:
    """Every table: the modules' ``_MESSAGES`` (their ``SCHEMA_JSON``), the KRaft records and
    the tiered-storage ones."""
    found: dict[str, Message] = {}
    for module in (consumer_offsets, control, share_state, transaction_state):
        found.update(module._MESSAGES)
    for table in (
        cluster_metadata.METADATA_MESSAGES,
        remote_log_metadata.REMOTE_LOG_METADATA_MESSAGES,
    ):
        for message in table.values():
            found[message.name] = message
    return sorted(found.values(), key=lambda m: m.name)


def _default(f: Field) -> str:
    if f.default is MISSING:
        return ""
    return "null" if f.default is None else str(f.default).lower()


def _versions(f: Field) -> str | None:
    """Kafka's rule: no ``versions`` means the tagged versions, else all ("0+")."""
    return f.versions or f.tagged_versions or "0+"


def _attrs(f: Field) -> dict[str, object]:
    return {
        "type": f.type,
        "versions": _versions(f),
        "nullableVersions": f.nullable_versions,
        "tag": f.tag,
        "taggedVersions": f.tagged_versions,
        "default": _default(f),
    }


def compare(
    mine: Sequence[Field], theirs: Sequence[Field], where: str, *, key: bool = False
) -> Iterator[str]:
    """``key``: a coordinator record key, whose version ranges are not compared (Kafka reads
    a key at its record type; klogtool reads every key body at version 0, with no ranges)."""
    if [f.name for f in mine] != [f.name for f in theirs]:
        yield f"{where}: fields {[f.name for f in mine]} != Kafka's {[f.name for f in theirs]}"
        return
    for a, b in zip(mine, theirs, strict=True):
        for attr, value in _attrs(a).items():
            if key and attr == "versions":
                continue
            if value != _attrs(b)[attr]:
                yield f"{where}.{a.name}: {attr} {value!r} != Kafka's {_attrs(b)[attr]!r}"
        yield from compare(a.fields, b.fields, f"{where}.{a.name}", key=key)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kafka", type=Path, help="a checkout of apache/kafka")
    ns = parser.parse_args(argv)
    files: dict[str, Path] = {}
    schema_files = [
        *ns.kafka.rglob("src/main/resources/common/*/*.json"),
        *ns.kafka.glob("storage/src/main/resources/message/*.json"),  # tiered storage's
    ]
    for path in schema_files:
        named = re.search(r'"name":\s*"(\w+)"', path.read_text())  # the message's own name
        files.setdefault(named.group(1) if named else path.stem, path)
    differences = checked = 0
    for message in ours():
        path = files.get(message.name)
        if path is None:
            print(f"{message.name}: no Kafka JSON file of that name (not checked)")
            continue
        theirs = load_json_schema(path.read_text())
        problems = []
        key = message.name.endswith("Key")
        if not key and message.valid_versions != theirs.valid_versions:
            problems.append(f"validVersions {message.valid_versions} != {theirs.valid_versions}")
        if message.flexible_versions != theirs.flexible_versions:
            problems.append(
                f"flexibleVersions {message.flexible_versions} != {theirs.flexible_versions}"
            )
        problems += compare(message.fields, theirs.fields, message.name, key=key)
        checked += 1
        rel = path.relative_to(ns.kafka)
        if problems:
            differences += len(problems)
            print(f"{message.name} ({rel}): DIFFERS")
            for p in problems:
                print(f"  {p}")
        else:
            print(f"{message.name} ({rel}): same, {len(message.fields)} fields")
    print(f"{checked} schemas checked, {differences} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
