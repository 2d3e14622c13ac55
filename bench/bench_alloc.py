#!/usr/bin/env python3
"""Is the native column path's speed steady whatever the allocator did before? (issue 25)

Run by hand (nothing here asserts a timing)::

    python bench/bench_alloc.py [--records 60000] [--value-bytes 1000] [--passes 20]

One uncompressed segment of ``--records`` records of ``--value-bytes`` values. Each pass
builds the export's record columns of the whole segment (``native_columns.record_columns``,
``take()`` every 16,384 rows, as an Arrow batch is cut) and keeps the last chunk it took until
the next pass has taken its own: chunks of about 16 MB freed in another order than they were
made, which is what turned glibc's dynamic mmap threshold into 10-14k minor page faults a
pass. Printed per pass: ns per record and the minor page faults (``getrusage``).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from klogtool.formats import engine  # noqa: E402
from klogtool.formats.batch import Record  # noqa: E402
from klogtool.formats.records import SegmentScanner  # noqa: E402
from klogtool.formats.v2 import encode_batch  # noqa: E402
from klogtool.log.export import native_columns  # noqa: E402

FLUSH_ROWS = 16_384


def segment(records: int, value_bytes: int) -> bytes:
    out = bytearray()
    for base in range(0, records, 100):
        recs = [
            Record(o, 1_700_000_000_000 + o, b"key-%d" % o, (b"%d-" % o).ljust(value_bytes, b"v"))
            for o in range(base, min(records, base + 100))
        ]
        out += encode_batch(recs)
    return bytes(out)


def one_pass(view: memoryview, held: list[object]) -> tuple[float, int, int]:
    cols = native_columns.record_columns(64 << 20)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    n = pending = 0
    for i, batch in enumerate(SegmentScanner(view, stop_on_crc=False)):
        got = cols.add(batch.data, i, "bench")
        assert got is not None
        n += got[0]
        pending += got[0]
        if pending >= FLUSH_ROWS:
            chunk = cols.take()
            held[:] = [chunk]  # the previous pass's (or batch's) chunk goes only now
            pending = 0
    held[:] = [cols.take()]
    took = time.perf_counter() - start
    return took, n, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=60_000)
    ap.add_argument("--value-bytes", type=int, default=1000)
    ap.add_argument("--passes", type=int, default=20)
    args = ap.parse_args(argv)
    engine.use(engine.NATIVE)
    with tempfile.TemporaryFile() as f:
        f.write(segment(args.records, args.value_bytes))
        f.seek(0)
        view = memoryview(f.read())
    held: list[object] = []
    rows = []
    total_faults = 0
    for p in range(args.passes):
        took, n, faults = one_pass(view, held)
        rows.append(took / n * 1e9)
        total_faults += faults
        print(f"pass {p + 1:2d}: {took / n * 1e9:7.0f} ns/record, {faults:6d} minor faults")
    steady = sorted(rows[1:])
    mid = steady[len(steady) // 2]
    print(
        f"median {mid:.0f} ns/record, min {steady[0]:.0f}, max {steady[-1]:.0f}; "
        f"{total_faults:,} minor faults in all"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
