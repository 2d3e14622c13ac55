"""Output.write_lines: lines the native renderer wrote go to the stream's bytes in order with
the text written around them, without a flush (a write syscall) for each call."""

from __future__ import annotations

import io

from klogtool.output import Output


class _Raw(io.RawIOBase):
    """A file descriptor stand-in that counts the writes reaching it."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.writes = 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[no-untyped-def,override]
        self.writes += 1
        self.data += bytes(b)
        return len(b)


def _stream(raw: _Raw, encoding: str = "utf-8") -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BufferedWriter(raw, 1 << 16), encoding=encoding)


def test_lines_and_text_keep_their_order_without_a_flush_each() -> None:
    raw = _Raw()
    stream = _stream(raw)
    out = Output("jsonl", stdout=stream)
    out.line("first")
    for i in range(200):
        out.write_lines(b'{"n":%d}\n' % i)
        if i % 50 == 0:
            out.emit({"type": "summary", "files": i})  # type: ignore[typeddict-item]
    out.line("last é")
    out.close()
    lines = raw.data.decode().splitlines()
    assert lines[0] == "first" and lines[-1] == "last é"
    assert lines[1:4] == ['{"n":0}', '{"type":"summary","files":0}', '{"n":1}']
    assert [ln for ln in lines if ln.startswith('{"n"')] == [f'{{"n":{i}}}' for i in range(200)]
    assert raw.writes <= 2  # (a flush before each call wrote every line on its own)
    assert not stream.write_through  # the stream as it was given


def test_a_stream_in_another_encoding_takes_the_lines_as_text() -> None:
    raw = _Raw()
    stream = _stream(raw, "latin-1")
    out = Output("text", stdout=stream)
    out.write_lines("é\n".encode())
    out.close()
    assert raw.data == "é\n".encode("latin-1")
