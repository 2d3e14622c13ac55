"""The two CRCs Kafka uses: CRC-32 (v0/v1 messages) and CRC-32C (v2 batches, snapshots)."""

from __future__ import annotations

import queue
import threading
import zlib

from klogtool.formats import engine


def crc32(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 (IEEE, as java.util.zip.CRC32), unsigned."""
    return zlib.crc32(data) & 0xFFFFFFFF


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli), unsigned."""
    return engine.crc32c(data)


PREFETCH_BYTES = 16 << 20  # segments at least this large get their CRCs computed ahead
PREFETCH_CHUNK = 4 << 20  # bytes of batches per native call


class CrcPrefetch:
    """The CRC-32Cs of a segment's v2 batches, computed ahead by a background thread while
    the scanner checks each batch (the native engine releases the GIL, so the two run on two
    cores). :meth:`get` answers the CRC of the batch at a position, or None where the walk
    ahead did not reach (anything but a whole v2 entry stops it): the caller computes it.
    :meth:`close` stops the thread and drops its reference to the buffer.

    Only when the native engine is active and ``len(buf) >= PREFETCH_BYTES``: see
    :func:`crc_prefetch`."""

    def __init__(self, buf: memoryview) -> None:
        self._chunks: queue.Queue[tuple[dict[int, int], int] | None] = queue.Queue(maxsize=2)
        self._stop = threading.Event()
        self._crcs: dict[int, int] = {}
        self._end = 0  # the current chunk covers batches before this position
        self._exhausted = False
        self._thread = threading.Thread(target=self._run, args=(buf,), daemon=True)
        self._thread.start()

    def _run(self, buf: memoryview) -> None:
        pos, n = 0, len(buf)
        try:
            while pos < n and not self._stop.is_set():
                found = engine.crc_ahead(buf, pos, min(n, pos + PREFETCH_CHUNK))
                if found is None or found[1] == pos:
                    break
                crcs, pos = found
                self._chunks.put((dict(crcs), pos))
        except Exception:  # the scanner computes the CRCs itself (and reports any failure)
            pass
        finally:
            del buf
            self._chunks.put(None)

    def get(self, pos: int) -> int | None:
        while pos >= self._end and not self._exhausted:
            chunk = self._chunks.get()
            if chunk is None:
                self._exhausted = True
                self._crcs = {}
            else:
                self._crcs, self._end = chunk
        return self._crcs.get(pos) if pos < self._end else None

    def close(self) -> None:
        self._stop.set()
        while self._thread.is_alive():
            try:  # make room for the thread's last put, then wait for it
                self._chunks.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()


def crc_prefetch(buf: memoryview) -> CrcPrefetch | None:
    """A :class:`CrcPrefetch` for a large segment under the native engine, else None."""
    if len(buf) < PREFETCH_BYTES or engine.name() != engine.NATIVE:
        return None
    return CrcPrefetch(buf)
