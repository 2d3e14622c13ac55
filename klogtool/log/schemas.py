"""The schema registry's schemas, offline: its ``_schemas`` partition replayed as the registry
loads it (klogtool.formats.payloads.confluent.SchemaRegistry.replay), for the ``confluent``
payload decoder of dump-segments, find and export (docs/confluent.md).

Where they come from (:func:`load_schemas`):

* ``--schemas DIR|FILE`` (a path or a URI): a ``_schemas-<n>`` partition dir, a log dir (or
  a tree of them, as every reading command takes a directory) holding one, or a file of
  schema objects: a JSON array, one JSON object, or JSON Lines, each ``{"id", "schema",
  "schemaType", "subject", "version", "references"}`` as the registry's REST API returns them
  (``GET /schemas/ids/<id>`` gives no id: put it in).
* otherwise the log dirs of the PATHs read: the ``_schemas`` partition beside a partition dir,
  in a log dir, or in the log dirs under a directory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats.errors import FormatError
from klogtool.formats.limits import ReadLimits
from klogtool.formats.payloads.confluent import Payload, Schema, SchemaRegistry
from klogtool.formats.records import SegmentScanner
from klogtool.log import layout, storage
from klogtool.log.segment import mapped

SCHEMAS_TOPIC = "_schemas"
_SCHEMAS_DIR = re.compile(r"^_schemas-\d+$")


def _records(part: Path, limits: ReadLimits) -> Iterator[tuple[Payload | None, Payload | None]]:
    """(key, value) of every data record of a partition dir, in offset order; what does not
    decode is passed over (a damaged batch must not hide the schemas of the others)."""
    for seg in layout.scan_partition_dir(part).segments:
        if seg.log is None:
            continue
        with mapped(seg.log) as buf:
            for batch in SegmentScanner(buf, strict=False, stop_on_crc=False):
                if batch.is_control:
                    continue
                try:
                    recs = list(batch.records(limits.max_batch_bytes))
                except FormatError:
                    continue
                for rec in recs:
                    yield (
                        None if rec.key is None else bytes(rec.key),
                        None if rec.value is None else bytes(rec.value),
                    )


def replay_partition(part: Path, limits: ReadLimits) -> SchemaRegistry:
    """The schemas of one ``_schemas`` partition dir."""
    return SchemaRegistry.replay(_records(part, limits), source=str(part))


def schemas_dirs(path: Path) -> list[Path]:
    """The ``_schemas`` partition dirs a PATH argument stands for: itself, beside it (a
    partition dir or a segment file's), in it (a log dir) or in the log dirs under it."""
    if path.is_file():
        path = path.parent
    if not path.is_dir():
        return []
    if _SCHEMAS_DIR.match(path.resolve().name):
        return [path]
    found: list[Path] = []
    candidates = [path, path.parent] + layout.log_dirs_under(path)
    for d in candidates:
        try:
            found += sorted(c for c in d.iterdir() if c.is_dir() and _SCHEMAS_DIR.match(c.name))
        except OSError:
            continue
    unique: dict[Path, Path] = {}
    for d in found:
        unique.setdefault(d.resolve(), d)
    return list(unique.values())


def _file_schemas(path: Path) -> SchemaRegistry:
    text = path.read_text(encoding="utf-8")
    try:
        parsed = json.loads(text)
        objs = parsed if isinstance(parsed, list) else [parsed]
    except ValueError:
        try:
            objs = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as e:
            raise InputError(
                f"neither JSON nor JSON Lines: {e}", path=str(path), code=Code.BAD_INPUT
            ) from None
    registry = SchemaRegistry(source=str(path))
    for i, obj in enumerate(objs):
        try:
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
            registry.add(Schema.from_json(obj))
        except ValueError as e:
            raise InputError(
                f"schema object {i + 1}: {e}", path=str(path), code=Code.BAD_INPUT
            ) from None
    return registry


def _merged(registries: list[SchemaRegistry], source: str) -> SchemaRegistry:
    if len(registries) == 1:
        return registries[0]
    out = SchemaRegistry(source=source)
    for r in registries:
        for s in r.by_id.values():
            out.add(s)
        out.versions.update(r.versions)
    return out


def load_schemas(
    paths: list[str], schemas: str | None, limits: ReadLimits
) -> SchemaRegistry | None:
    """The schemas for the ``confluent`` decoder: from ``schemas`` (``--schemas``) when given
    (an input error when it holds none), else from the ``_schemas`` partitions found beside
    the PATHs, else None (payloads then show their schema id and raw bytes)."""
    if schemas is not None:
        path = storage.path_of(schemas)  # a URI too (docs/storage.md)
        if not path.exists():
            raise InputError("no such file or directory", path=schemas, code=Code.NOT_FOUND)
        if path.is_file():
            return _file_schemas(path)
        dirs = schemas_dirs(path)
        if not dirs:
            raise InputError("no _schemas partition in it", path=schemas, code=Code.BAD_INPUT)
        return _merged([replay_partition(d, limits) for d in dirs], schemas)
    dirs = []
    for p in paths:
        if p != "-":
            dirs += [d for d in schemas_dirs(storage.path_of(p)) if d not in dirs]
    if not dirs:
        return None
    return _merged([replay_partition(d, limits) for d in dirs], ", ".join(map(str, dirs)))
