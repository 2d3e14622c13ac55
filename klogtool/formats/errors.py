"""The only exceptions the format layer raises.

Every error carries the byte ``position`` (relative to the buffer the caller passed in, or to
the batch start for record-level errors, as documented where raised) and a stable ``code``
that verify uses as its finding code.
"""

from __future__ import annotations


class FormatError(Exception):
    """Bytes that are not what a Kafka file of this kind may contain."""

    code = "format-error"

    def __init__(self, message: str, position: int | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.position = position
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message

    def at(self, base: int) -> FormatError:
        """Shift the position by ``base`` (a record error re-anchored to its file position)."""
        if self.position is not None:
            self.position += base
        else:
            self.position = base
        return self


class CorruptRecordError(FormatError):
    """A structural error inside a batch or record (bad length, varint, count...)."""

    code = "corrupt-record"


class CrcMismatchError(FormatError):
    code = "crc-mismatch"


class TruncatedError(FormatError):
    """The data ends before a structure it announced."""

    code = "truncated"


class UnsupportedError(FormatError):
    """Well-formed but not something Kafka allows (unknown codec, zstd in a legacy message...)."""

    code = "unsupported"


class DecompressionError(FormatError):
    code = "decompression-failed"


class LimitExceededError(FormatError):
    """Decompressed or declared sizes beyond the configured bound (a decompression bomb)."""

    code = "limit-exceeded"


class UnencodableError(FormatError, ValueError):
    """A value the message format cannot hold where an encoder must write it: a timestamp more
    than 2^63 - 1 ms from its batch's base timestamp, an offset delta past 32 bits (Kafka's
    encoder wraps the difference; klogtool refuses). A ValueError too, as a bad argument to an
    encoder."""

    code = "unencodable"


class CodecUnavailableError(FormatError):
    """The Python package for a codec is not installed."""

    code = "codec-unavailable"
