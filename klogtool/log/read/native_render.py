"""The native engine's adapter for ``dump-segments``' record lines
(:mod:`klogtool.log.read.dumper`): the lines of a whole batch rendered in Rust
(``native/src/render.rs``) byte for byte as the python renderings make them. None wherever the
dumper must render in Python; the module reaches the native engine only through
:func:`klogtool.formats.engine.native_module`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from klogtool.formats import engine
from klogtool.formats.batch import Batch

RENDERINGS = ("jsonl", "text", "kafka")
# A rendering may say how control records are shown: "text+control" decoded (--decoder auto),
# "text+raw-control" as any record, their raw key and value (--decoder none); a bare "text"
# leaves control batches to the python renderer.
_CONTROLS = {"control": "decoded", "raw-control": "raw"}


class Records(NamedTuple):
    """How a dump's records are rendered: what :func:`render_records` and :func:`render_run`
    take (the dumper's options, the same for every batch of a file)."""

    max_batch_bytes: int
    print_data: bool
    key_decoder: str
    value_decoder: str
    rendering: str  # "jsonl", "text" or "kafka", maybe with "+control" or "+raw-control"


# lines (UTF-8, an object with the buffer protocol: the engine's memory, not a copy), records,
# first and last record offsets, non-consecutive (previous, next) offsets
Rendered = tuple[Any, int, int | None, int | None, list[tuple[int, int]]]
# The native renderer renders a whole batch into one buffer: a batch of more records (millions
# of tiny ones fit in a small compressed batch) streams through the Python renderer instead, so
# memory stays flat (~100 bytes of text a record: this bounds the buffer near 13 MB).
MAX_RECORDS = 1 << 17


def render_records(batch: Batch, how: Records, where: str) -> Rendered | None:
    """The ``dump-segments`` lines (``how.rendering``: ``jsonl``, ``text`` or ``kafka``) of every
    record of ``batch`` (a v2 batch, or the decompressed inner set of a v0/v1 wrapper, as
    ``batch.native_input`` gives them), byte for byte what ``klogtool.log.read.dumper``,
    ``klogtool.output`` and the kafka renderer make of them (the rendering may end in
    ``+control`` or ``+raw-control``: control records decoded, or shown as any record); their
    number; the first and last record offsets and, for ``kafka``, the pairs of records whose
    offsets are not consecutive.
    None: render them in Python (control batches under a bare rendering, control records the
    native engine does not decode, the ``json`` decoder, a batch of more than
    ``MAX_RECORDS``, anything the decoder hands back)."""
    native = engine.native_module()
    if native is None:
        return None
    source = batch.native_input(how.max_batch_bytes)
    if source is None:
        return None
    if batch.count > MAX_RECORDS:
        engine.handed_back("render-many-records")
        return None
    data, wrapper = source
    fmt, controls = _split(how.rendering)
    decoders = (how.key_decoder, how.value_decoder)
    return engine.call(
        where,
        native.render_records,
        *(data, how.max_batch_bytes, batch.position, how.print_data, *decoders, fmt),
        wrapper,
        controls,
    )


def _split(rendering: str) -> tuple[str, str]:
    """The format of a rendering and how the native engine shows its control records."""
    fmt, _, controls = rendering.partition("+")
    return fmt, _CONTROLS.get(controls, "python")


def _items(batches: list[tuple[Batch, bool]]) -> list[tuple[memoryview, int, bool]]:
    """What the native engine takes of a run: each batch's bytes, position and CRC validity."""
    return [(b.data, b.position, crc_valid) for b, crc_valid in batches]


# a stretch of batches' lines (None: one batch handed back), the number of batches and of
# records, first and last record offsets, the breaks in it (see render_run)
Piece = tuple[Any, int, int, int | None, int | None, list[tuple[int, int]]]


def render_run(batches: list[tuple[Batch, bool]], how: Records, where: str) -> list[Piece] | None:
    """:func:`render_records` (with the batch lines) of a run of v2 batches of at most
    ``MAX_RECORDS`` records each, ``(batch, crc_valid)`` in segment order, in one call: the
    pieces in order, the lines of consecutive batches together, a batch handed back alone
    (its lines None: render it in Python). None: the whole run in Python (the python
    engine)."""
    native = engine.native_module()
    if native is None:
        return None
    fmt, controls = _split(how.rendering)
    decoders = (how.key_decoder, how.value_decoder)
    return engine.call(
        where,
        native.render_run,
        *(_items(batches), how.max_batch_bytes, how.print_data, *decoders, fmt),
        controls,
    )


def batch_lines(
    batches: list[tuple[Batch, bool]], rendering: str, where: str
) -> list[Piece] | None:
    """:func:`batch_line` of a run of v2 batches (``(batch, crc_valid)`` in segment order),
    as one piece of :func:`render_run`'s (no records); None: render them in Python."""
    native = engine.native_module()
    if native is None:
        return None
    lines = engine.call(where, native.render_batch_lines, _items(batches), _split(rendering)[0])
    return None if lines is None else [(lines, len(batches), 0, None, None, [])]


def batch_line(batch: Batch, crc_valid: bool, rendering: str, where: str) -> bytes | None:
    """The ``dump-segments`` line of the v2 batch ``batch`` (``rendering``: ``jsonl``, ``text``
    or ``kafka``, a ``+...`` suffix ignored), its CRC held if ``crc_valid``: UTF-8, byte for
    byte what the python renderers make of ``klogtool.log.objects.batch_object``. None: render
    it in Python (the python engine, a v0/v1 batch)."""
    if batch.magic != 2:
        return None
    lines = batch_lines([(batch, crc_valid)], rendering, where)
    return None if lines is None else lines[0][0]
