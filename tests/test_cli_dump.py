"""``klogtool dump-segments`` end to end: goldens, fixture determinism, options, streams."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import crc32c
import pytest
from support.cli import errors, generator, jsonl, run, run_subprocess
from support.paths import EXPECTED, LOGS
from support.progress import Steps

from klogtool.formats.batch import Record
from klogtool.formats.v2 import encode_batch
from klogtool.log.context import ReadContext

GEN = generator()
CASES = GEN.golden_cases()
V2_PARTS = [p for p in GEN.GOOD_PARTITIONS if p.startswith("v2-")]
SEG0 = "logdir/v2-none-0/00000000000000000000.log"


def _diff(expected: str, actual: str, name: str) -> str:
    lines = difflib.unified_diff(
        expected.splitlines(), actual.splitlines(), f"expected/{name}", "actual", lineterm=""
    )
    return "\n".join(list(lines)[:60])


# -- goldens ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def manifest() -> dict[str, dict]:
    data = json.loads((EXPECTED / "cases.json").read_text(encoding="utf-8"))
    return {c["stdout"]: c for c in data["cases"]}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case, manifest) -> None:
    """Each golden run reproduces its stored stdout (and kafka stderr) and exit code exactly.
    Regenerate with ``python fixtures/generate.py --expected`` after an intended change."""
    code, out, err = run(*case.args)
    assert manifest[case.name]["args"] == list(case.args)
    assert code == manifest[case.name]["exit_code"]
    want = (EXPECTED / case.name).read_text(encoding="utf-8")
    assert GEN.normalise(out, LOGS) == want, _diff(want, GEN.normalise(out, LOGS), case.name)
    if case.keep_stderr:
        want_err = (EXPECTED / case.stderr_name).read_text(encoding="utf-8")
        got_err = GEN.normalise(err, LOGS)
        assert got_err == want_err, _diff(want_err, got_err, case.stderr_name)
    else:
        assert err == ""


def test_goldens_regenerate_identically(tmp_path: Path) -> None:
    """Rendering every golden into a temporary directory gives exactly fixtures/expected."""
    rendered = GEN.render_expected(LOGS, tmp_path)
    stored = {
        str(p.relative_to(EXPECTED)): p.read_text(encoding="utf-8")
        for p in EXPECTED.rglob("*")
        if p.is_file()
    }
    assert sorted(stored) == sorted(rendered), "stale or missing golden files"
    changed = [name for name in rendered if rendered[name] != stored[name]]
    assert not changed, _diff(stored[changed[0]], rendered[changed[0]], changed[0])


def test_kafka_goldens_have_no_absolute_paths() -> None:
    for p in EXPECTED.rglob("*"):
        if p.is_file():
            assert str(LOGS) not in p.read_text(encoding="utf-8"), p


def test_kafka_stderr_golden_uses_the_placeholder() -> None:
    err = (EXPECTED / "dump-segments/txn-0.kafka.stderr.txt").read_text(encoding="utf-8")
    assert "Non-consecutive offsets in <LOGS>/logdir/txn-0/00000000000000000000.log" in err
    assert "  10 is followed by 13" in err  # the empty batch 11..12 leaves a gap


# -- the fixture generator -------------------------------------------------------------------------
def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_generator_is_deterministic(tmp_path: Path) -> None:
    GEN.main(["--out", str(tmp_path)])
    mine = _tree(tmp_path)
    stored = {k: v for k, v in _tree(LOGS).items()}
    assert sorted(mine) == sorted(stored)
    differ = [k for k in mine if mine[k] != stored[k]]
    assert not differ, f"fixtures/logs differs from a fresh generation: {differ[:10]}"


def test_fixtures_are_small() -> None:
    """The generated fixtures stay under 1 MB; the real clients' captures (issue 25: every
    codec of four producers, 10k-record batches) under 4 MB of their own."""
    tree = _tree(GEN.HERE)
    captured = sum(len(v) for k, v in tree.items() if k.startswith("producers/"))
    assert sum(len(v) for v in tree.values()) - captured < 1_000_000
    assert captured < 4_000_000, captured


# -- output formats -----------------------------------------------------------------------------
def test_json_is_one_array_of_typed_objects() -> None:
    code, out, _ = run("dump-segments", "--format", "json", "--print-data", "logdir")
    assert code == 0
    objs = json.loads(out)
    assert isinstance(objs, list) and objs
    assert all(isinstance(o, dict) and "type" in o for o in objs)
    assert objs[-1]["type"] == "summary"
    code, out_l, _ = run("dump-segments", "--format", "jsonl", "--print-data", "logdir")
    assert code == 0
    assert jsonl(out_l) == objs  # json = the same objects as jsonl


def test_jsonl_lines_parse_and_are_typed() -> None:
    code, out, _ = run("dump-segments", "--format", "jsonl", "--deep-iteration", "logdir")
    assert code == 0
    objs = jsonl(out)
    assert {o["type"] for o in objs} >= {
        "file",
        "batch",
        "record",
        "index_entry",
        "timeindex_entry",
        "txn_entry",
        "producer_entry",
        "summary",
    }
    summary = objs[-1]
    assert summary["type"] == "summary" and summary["errors"] == 0
    assert summary["batches"] == sum(o["type"] == "batch" for o in objs)
    assert summary["records"] == sum(o["type"] == "record" for o in objs)
    # deep iteration without --print-data: no payloads, header keys only
    recs = [o for o in objs if o["type"] == "record"]
    assert all("key" not in r and "value" not in r for r in recs)
    assert all("value" not in h for r in recs for h in r.get("headers", ()))


def test_every_codec_holds_the_same_records() -> None:
    """The v2 partitions hold identical records in five codecs."""
    seen = []
    for part in V2_PARTS:
        code, out, _ = run("dump-segments", "--format", "jsonl", "--print-data", f"logdir/{part}")
        assert code == 0
        objs = jsonl(out)
        recs = [
            {k: v for k, v in o.items() if k != "position"} for o in objs if o["type"] == "record"
        ]
        codecs = {o["compression"] for o in objs if o["type"] == "batch"}
        assert codecs == {part.split("-")[1]}
        seen.append(recs)
    assert len(seen[0]) == 27
    assert all(s == seen[0] for s in seen)


# -- options -------------------------------------------------------------------------------------
def test_offsets_selects_batches_and_records() -> None:
    code, out, _ = run(
        "dump-segments", "--format", "jsonl", "--deep-iteration", "--offsets", "5:12", "logdir"
    )
    assert code == 0
    objs = jsonl(out)
    recs = [o for o in objs if o["type"] == "record"]
    by_part: dict[str, list[int]] = {}
    path = ""
    for o in objs:
        if o["type"] == "file":
            path = o["path"]
        elif o["type"] == "record":
            by_part.setdefault(path.split("/")[1], []).append(o["offset"])
    assert recs and all(5 <= r["offset"] <= 12 for r in recs)
    assert by_part["v2-none-0"] == list(range(5, 13))
    assert by_part["v1-gzip-0"] == list(range(5, 10))
    for b in (o for o in objs if o["type"] == "batch"):
        assert b["last_offset"] >= 5
        assert b["base_offset"] is None or b["base_offset"] <= 12
    code, out, _ = run("dump-segments", "--format", "jsonl", "--offsets", "100:", SEG0)
    assert code == 0 and [o["type"] for o in jsonl(out)] == ["file", "summary"]


@pytest.mark.parametrize("bad", ["12:5", "x:3", "7"])
def test_offsets_rejects_bad_ranges(bad: str) -> None:
    code, _, err = run("dump-segments", "--offsets", bad, SEG0)
    assert code == 2 and "--offsets" in err


def test_max_bytes_keeps_whole_batches_only() -> None:
    code, out, _ = run("dump-segments", "--format", "jsonl", "--max-bytes", "400", SEG0)
    assert code == 0
    batches = [o for o in jsonl(out) if o["type"] == "batch"]
    assert [b["position"] for b in batches] == [0, 147, 242]  # 242 + 156 = 398 <= 400
    assert all(b["position"] + b["size"] <= 400 for b in batches)
    assert not [o for o in jsonl(out) if o["type"] == "finding"]
    # kafka-dump-log prints no "invalid bytes" line when --max-bytes is given
    code, out, _ = run("dump-segments", "--format", "kafka", "--max-bytes", "400", SEG0)
    assert code == 0 and "invalid bytes" not in out and out.count("baseOffset:") == 3


def test_index_sanity_check() -> None:
    index = "logdir/v2-none-0/00000000000000000000.index"
    code, out, err = run("dump-segments", "--format", "kafka", "--index-sanity-check", index)
    assert code == 0 and err == ""
    assert out.splitlines() == [f"Dumping {index}", f"{index} passed sanity check."]
    code, out, _ = run(
        "dump-segments", "--format", "jsonl", "--index-sanity-check", "logdir/v2-gzip-0"
    )
    checks = [o for o in jsonl(out) if o["type"] == "sanity_check"]
    assert len(checks) == 4 and all(o["passed"] for o in checks)  # 2 segments x 2 indexes
    assert not [o for o in jsonl(out) if o["type"] in ("index_entry", "timeindex_entry")]


def test_index_sanity_check_failure(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    shutil.copytree(LOGS / "logdir/v2-none-0", d)
    (d / "00000000000000000000.index").write_bytes(b"\x00" * 12)  # not a multiple of 8
    code, out, _ = run(
        "dump-segments", "--format", "jsonl", "--index-sanity-check", str(d), cwd=tmp_path
    )
    assert code == 1  # the dump met an error (issue 11 item 16: a distinct exit status)
    bad = [o for o in errors(out) if o["path"].endswith("00000000000000000000.index")]
    assert len(bad) == 1 and bad[0]["position"] is not None, out
    assert "sanity_check" not in {o["type"] for o in jsonl(out) if o.get("path") == bad[0]["path"]}


def test_verify_index_only() -> None:
    good = "logdir/v2-none-0/00000000000000000000.index"
    code, out, err = run("dump-segments", "--format", "kafka", "--verify-index-only", good)
    assert code == 0 and err == "" and out.splitlines() == [f"Dumping {good}"]
    bad = "corrupt/bad-index-0/00000000000000000000.index"
    code, out, _ = run("dump-segments", "--format", "jsonl", "--verify-index-only", bad)
    objs = jsonl(out)
    assert not [o for o in objs if o["type"] == "index_entry"]
    mism = [(o["index_offset"], o["log_offset"]) for o in objs if o.get("code") == "index-mismatch"]
    assert mism == [(9, -1), (8, 16)]
    code, out, err = run("dump-segments", "--format", "kafka", "--verify-index-only", bad)
    assert out.splitlines() == [f"Dumping {bad}"]
    assert err.splitlines()[0] == f"Mismatches in :{LOGS / bad}"


@pytest.mark.parametrize("part", ["__consumer_offsets-0", "__transaction_state-0"])
def test_auto_decoder_on_internal_topics(part: str) -> None:
    code, out, _ = run("dump-segments", "--format", "jsonl", "--print-data", f"logdir/{part}")
    assert code == 0
    recs = [o for o in jsonl(out) if o["type"] == "record"]
    assert len(recs) == 5
    for r in recs:
        assert isinstance(r["key"], dict) and "unknown" not in r["key"], r
        assert r["key"]["type"] != "unknown"
        assert r["value"] is None or (isinstance(r["value"], dict) and "data" in r["value"])
    assert sum(r["value"] is None for r in recs) == (2 if part.startswith("__c") else 1)
    # --decoder none: the raw bytes, base64
    code, out, _ = run(
        "dump-segments", "--format", "jsonl", "--print-data", "--decoder", "none", f"logdir/{part}"
    )
    raw = [o for o in jsonl(out) if o["type"] == "record"]
    assert all(isinstance(r["key"], str) for r in raw)


def test_consumer_offsets_group_metadata_is_decoded() -> None:
    code, out, _ = run(
        "dump-segments", "--format", "jsonl", "--print-data", "logdir/__consumer_offsets-0"
    )
    group = next(o for o in jsonl(out) if o["type"] == "record" and o["key"]["type"] == "2")
    assert group["value"]["version"] == "3"
    member = group["value"]["data"]["members"][0]
    assert member["subscription"]["topics"] == ["v2-none", "v2-gzip"]
    assert member["assignment"]["assignedPartitions"][0] == {"topic": "v2-gzip", "partitions": [0]}


def test_stdin_gives_the_same_batches_as_the_file() -> None:
    code, from_file, _ = run("dump-segments", "--format", "jsonl", "--deep-iteration", SEG0)
    assert code == 0
    with open(LOGS / SEG0, "rb") as f:
        proc = run_subprocess(
            "dump-segments", "--format", "jsonl", "--deep-iteration", "-", stdin=f
        )
    assert proc.returncode == 0, proc.stderr
    a = [o for o in jsonl(from_file) if o["type"] in ("batch", "record")]
    b = [o for o in jsonl(proc.stdout) if o["type"] in ("batch", "record")]
    assert a == b and len(a) == 23


# -- large segments: pipes and memory ------------------------------------------------------------
def _big_segment(path: Path, target_bytes: int, records_per_batch: int = 100) -> int:
    """Write a segment of about ``target_bytes``: one batch repeated at increasing offsets (the
    CRC does not cover the base offset). Returns the number of batches."""
    recs = [
        Record(i, 1_700_000_000_000 + i, b"k%05d" % i, bytes(150)) for i in range(records_per_batch)
    ]
    batch = bytearray(encode_batch(recs))
    count = max(1, target_bytes // len(batch))
    with open(path, "wb") as f:
        chunk = bytearray()
        for i in range(count):
            struct.pack_into(">q", batch, 0, i * records_per_batch)
            chunk += batch
            if len(chunk) >= 8 << 20:
                f.write(chunk)
                chunk.clear()
        f.write(chunk)
    return count


@pytest.mark.parametrize("fmt", ["text", "kafka", "jsonl"])
def test_pipe_into_head_exits_quietly(tmp_path: Path, fmt: str) -> None:
    seg = tmp_path / "00000000000000000000.log"
    _big_segment(seg, 4 << 20)
    cmd = (
        f"{sys.executable} -m klogtool dump-segments --format {fmt} --deep-iteration "
        f"--print-data {seg} | head -n 3; exit ${{PIPESTATUS[0]}}"
    )
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=60)
    assert len(proc.stdout.splitlines()) == 3
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr, proc.stderr
    assert proc.stderr == ""
    assert proc.returncode in (0, 1, 141)  # 1: click's EPIPE exit (see the report)


@pytest.mark.parametrize(
    "command",
    [
        "dump-segments --format jsonl",
        "verify",  # CRCs computed ahead by another thread (crc.CrcPrefetch)
        "rebuild-index --check",  # the header walk of its own (repair/headers.py)
        "describe",
        "compact --dry-run",
    ],
)
def test_memory_stays_flat_on_a_large_segment(tmp_path: Path, command: str) -> None:
    """Walks over a mapped segment drop the pages they have passed (the scanner's
    ReleaseBehind): the RSS does not grow with the segment."""
    size = 200 << 20
    if shutil.disk_usage(tmp_path).free < 3 * size:
        pytest.skip("not enough space in the temporary directory")
    small, big = (tmp_path / d / "t-0" for d in ("small", "big"))
    for d in (small, big):
        d.mkdir(parents=True)
    shutil.copy(LOGS / SEG0, small / "00000000000000000000.log")
    batches = _big_segment(big / "00000000000000000000.log", size)
    probe = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )

    def max_rss_kib(path: Path) -> int:
        cmd = [sys.executable, "-c", probe, sys.executable, "-m", "klogtool"]
        cmd += [*command.split(), str(path)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120)
        return int(out.stdout.split()[-1])

    base = max_rss_kib(small)
    peak = max_rss_kib(big)
    growth_mib = (peak - base) / 1024
    assert peak / 1024 < 150, f"max RSS {peak / 1024:.0f} MiB for a {size >> 20} MiB segment"
    assert growth_mib < (size >> 20) / 4, f"RSS grew {growth_mib:.0f} MiB"
    assert batches > 10_000


@pytest.mark.parametrize("part", ["v0-snappy-0", "v1-gzip-0"])
def test_max_batch_bytes_holds_for_legacy_wrappers(part: str) -> None:
    # the batch line computes the record count first; the bound must still hold afterwards
    # (issue 10: every inner record was printed with exit 0)
    code, out, err = run(
        "dump-segments",
        "--deep-iteration",
        "--max-batch-bytes",
        "10",
        f"logdir/{part}/00000000000000000000.log",
    )
    assert "limit-exceeded" in out + err
    assert not [line for line in out.splitlines() if line.startswith("  offset")]


@pytest.mark.parametrize("part", ["v0-none-0", "v0-snappy-0", "v1-gzip-0", "v2-none-0"])
def test_offsets_to_holds_for_every_magic(part: str) -> None:
    # issue 10: TO was ignored for message formats 0 and 1 (every batch was printed)
    code, out, err = run("dump-segments", "--format", "jsonl", "--offsets", "0:1", f"logdir/{part}")
    assert code == 0, err
    objs = jsonl(out)
    batches = [o for o in objs if o["type"] == "batch"]
    assert batches and all(b["base_offset"] <= 1 for b in batches)
    entries = [o for o in objs if o["type"] in ("index_entry", "timeindex_entry")]
    assert all(0 <= e["offset"] <= 1 for e in entries)  # index entries are filtered too
    files = [o["path"] for o in objs if o["type"] == "file"]
    assert not [f for f in files if "00000000000000000017.log" in f]  # a later segment: skipped


def test_dump_reports_progress_for_every_log_byte() -> None:
    # issue 10: a long `dump-segments > file` showed no progress
    from klogtool.log.read.dumper import Dumper, DumpOptions

    seen = Steps()
    part = LOGS / "logdir" / "v2-none-0"
    dumper = Dumper([str(part)], DumpOptions(ctx=ReadContext.of(progress=seen), deep=True))
    for _ in dumper.objects():
        pass
    assert sum(seen) == sum(p.stat().st_size for p in part.glob("*.log")) > 0


def _damaged_segment(path: Path) -> None:
    """2,000 batches of 20 records with headers, one with a bad CRC, then a torn tail."""
    recs = [
        Record(i, 1_700_000_000_000 + i, b"k%d" % i, b"v" * (i % 50), (("h", b"%d" % i),))
        for i in range(20)
    ]
    out = bytearray()
    for b in range(2000):
        batch = bytearray(encode_batch(recs, base_offset=b * 20))
        if b == 700:
            batch[-1] ^= 0xFF
        out += batch
    path.write_bytes(bytes(out) + b"\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00")


@pytest.mark.parametrize("fmt", ["jsonl", "text", "kafka"])
def test_threads_render_the_same_dump(tmp_path: Path, fmt: str) -> None:
    """--jobs N renders batches ahead in threads (native engine): byte for byte the dump of
    one thread, errors, exit status and the kafka format's end-of-run blocks included."""
    seg = tmp_path / "00000000000000000000.log"
    _damaged_segment(seg)
    for paths in ([str(seg)], [str(LOGS / "logdir")]):
        for extra in ([], ["--deep-iteration"], ["--print-data"]):
            one = run("dump-segments", "--format", fmt, *extra, "--jobs", "1", *paths)
            two = run("dump-segments", "--format", fmt, *extra, "--jobs", "2", *paths)
            assert one == two, (paths, extra)
            assert one[0] == 1 or paths != [str(seg)]  # the bad CRC and the torn tail count


def _batches(n: int, start: int = 0) -> list[bytearray]:
    """``n`` batches of 10 records from offset ``start``."""
    return [
        bytearray(
            encode_batch(
                [
                    Record(o, 1_700_000_000_000 + o, b"k%d" % o, "v\u00e9\x01".encode() * (o % 9))
                    for o in range(start + b * 10, start + b * 10 + 10)
                ]
            )
        )
        for b in range(n)
    ]


def _v1_batch(base: int) -> bytearray:
    from klogtool.formats.legacy import encode_message

    return bytearray(encode_message(base, b"k", b"v", magic=1, timestamp=1_700_000_000_000))


def _past_64_bits(batches: list[bytearray]) -> list[bytearray]:
    """``batches`` with one whose last offset passes 64 bits (offset 2**63 - 10, last offset
    delta 20, its CRC right) where a part of the 2 KB that _CUT_SMALL cuts ends: the walk of
    the part after it starts from that offset, and stops at its first batch (the offset does
    not increase) as the walk of the whole segment does."""
    records = [Record(o, 1_700_000_000_000, b"k", b"v") for o in range(2**63 - 10, 2**63)]
    hostile = bytearray(encode_batch(records))
    hostile[23:27] = struct.pack(">i", 20)
    hostile[17:21] = struct.pack(">I", crc32c.crc32c(bytes(hostile[21:])))
    for k in range(100, 140):
        layout = [*batches[:k], hostile, *batches[k + 1 :]]
        start = pos = 0
        for i, b in enumerate(layout):  # a part ends before the first batch 2 KB past its start
            if pos - start >= 2048:
                if i == k + 1:
                    return layout
                start = pos
            pos += len(b)
    raise AssertionError("no part ends after the batch")


# A segment of 300 v2 batches, whole or damaged where a part's walk must see what the walk of
# the whole segment sees: a bad CRC (walked over), offsets that go back at a cut (the offset
# check crosses parts), a batch whose structure stops the walk in the middle (later parts are
# not written), a v1 entry (the quick walk of headers stops there), a torn tail, zeros, a
# last offset past 64 bits at a cut.
_DAMAGE = {
    "whole": lambda b: b,
    "bad crc": lambda b: [*b[:100], bytearray(b[100][:-1]) + bytes([b[100][-1] ^ 1]), *b[101:]],
    "offsets go back": lambda b: [*b[:150], *_batches(150, start=20)],
    "corrupt in the middle": lambda b: [*b[:120], bytearray(b[120][:16]) + b"\x07" + b[120][17:]],
    "v1 entry": lambda b: [*b[:200], _v1_batch(2000), *_batches(99, start=2001)],
    "last offset past 64 bits": _past_64_bits,
    "torn tail": lambda b: [*b, bytearray(b[0][:30])],
    "zeros": lambda b: [*b, bytearray(100)],
}


# klogtool in a child process whose dump cuts a segment into parts of ~2 KB (so that a small
# one takes the worker processes' path), and says on stderr how many parts processes dumped
# (up to the first whose walk did not end cleanly)
_CUT_SMALL = """
import sys
from klogtool.cli import main
from klogtool.log.read import dumper
dumper.PROCESS_MIN_BYTES, dumper.PROCESS_CHUNK_BYTES = 0, 2048
joined = dumper.joined
def spy(parts, size):
    print(f"parts in processes: {len(parts)}", file=sys.stderr)
    return joined(parts, size)
dumper.joined = spy
main(sys.argv[1:])
"""


@pytest.mark.parametrize("damage", list(_DAMAGE))
@pytest.mark.parametrize("fmt", ["jsonl", "text"])
def test_processes_render_the_same_dump(tmp_path: Path, damage: str, fmt: str) -> None:
    """--jobs N on a large segment: worker processes render its parts and write them to the
    output in turn, byte for byte the dump of one thread, errors and exit status included."""
    from klogtool.formats import engine

    if not engine.native_available():
        pytest.skip("the native engine is not built")
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"".join(_DAMAGE[damage](_batches(300))))
    env = {**os.environ, "KLOGTOOL_ENGINE": "native", "NO_COLOR": "1"}

    def dump(jobs: str) -> subprocess.CompletedProcess[bytes]:
        args = ["dump-segments", "--format", fmt, "--print-data", "--jobs", jobs, str(seg)]
        cmd = [sys.executable, "-c", _CUT_SMALL, *args]
        return subprocess.run(cmd, capture_output=True, env=env, timeout=120, check=False)

    one, two = dump("1"), dump("2")
    assert b"parts in processes" not in one.stderr
    parts = int(two.stderr.split(b"parts in processes: ")[1].split()[0])
    assert parts > 10
    assert (one.returncode, one.stdout) == (two.returncode, two.stdout)
    assert one.stderr == two.stderr.replace(b"parts in processes: %d\n" % parts, b"")
    assert one.returncode == (0 if damage in ("whole", "zeros", "v1 entry") else 1), one.stderr


def _two_workers_where_cut_part_is(
    tmp_path: Path, body: str
) -> tuple[Path, subprocess.CompletedProcess[bytes]]:
    """``dump-segments --format jsonl --print-data --jobs 2`` of a 300-batch segment by
    :data:`_CUT_SMALL`'s child, ``dumper.cut_part`` replaced by a function of ``(buf, start,
    last, chunk_bytes, path=None)`` whose body is ``body`` (``cut``: the real one; the
    segment's path is ``sys.argv[-1]``): the segment and the run."""
    from klogtool.formats import engine

    if not engine.native_available():
        pytest.skip("the native engine is not built")
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"".join(_batches(300)))
    patched = "cut = dumper.cut_part\ndef patched(buf, start, last, chunk_bytes, path=None):\n"
    patched += "".join(f"    {line}\n" for line in body.strip().splitlines())
    patched += "dumper.cut_part = patched\nmain(sys.argv[1:])"
    script = _CUT_SMALL.replace("main(sys.argv[1:])", patched)
    env = {**os.environ, "KLOGTOOL_ENGINE": "native", "NO_COLOR": "1"}
    args = ["dump-segments", "--format", "jsonl", "--print-data", "--jobs", "2", str(seg)]
    cmd = [sys.executable, "-c", script, *args]
    return seg, subprocess.run(cmd, capture_output=True, env=env, timeout=120, check=False)


def test_a_worker_that_fails_to_cut_its_part_ends_the_dump(tmp_path: Path) -> None:
    """Each worker cuts its own part (where the next starts): one whose cut fails is an I/O
    error like a failed read (exit 3, the file named, the parts before it written), and the
    workers waiting for the next part's start are released, not left waiting."""
    seg, done = _two_workers_where_cut_part_is(
        tmp_path,
        """
if start > 20_000:
    raise OSError(5, "Input/output error", sys.argv[-1])
return cut(buf, start, last, chunk_bytes, path)
""",
    )
    assert done.returncode == 3, done.stderr
    assert str(seg).encode() in done.stderr and b"Input/output error" in done.stderr
    assert b"Traceback" not in done.stderr
    positions = [o["position"] for o in jsonl(done.stdout.decode()) if o["type"] == "batch"]
    assert positions and max(positions) < 20_000 + 2048


def test_a_segment_that_shrinks_under_the_workers_says_so(tmp_path: Path) -> None:
    """A worker that maps the segment after another process truncated it (shorter than the
    parent's mapping) says the file shrank (exit 3), as the SIGBUS guard says it of a
    mapping it reads. (It cut its part from the shorter file, and the dump ended with a torn
    tail, exit 1.) Here the worker that cuts the part past byte 20,000 truncates the file just
    after it, before the next part's worker maps it."""
    seg, done = _two_workers_where_cut_part_is(
        tmp_path,
        """
part, after = cut(buf, start, last, chunk_bytes, path)
if start > 20_000:
    import os
    os.truncate(sys.argv[-1], part.end + 10)
return part, after
""",
    )
    assert done.returncode == 3, done.stderr
    line = done.stderr.decode().strip().splitlines()[-1]
    assert line.startswith(f"klogtool: error: {seg}:") and line.endswith("(file-shrank)"), line


def test_kafka_format_escapes_control_characters_on_a_terminal_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kafka-dump-log.sh prints payloads raw: on a terminal an escape sequence would drive it
    and CR/LF forge a record line, so there they are escaped (\\x1b, \\x0d, \\u009b); a pipe
    keeps kafka-dump-log.sh's bytes."""
    part = tmp_path / "t-0"
    part.mkdir()
    value = "line\r\n| offset: 99 forged\x07\u009b".encode()
    (part / "00000000000000000000.log").write_bytes(
        encode_batch([Record(0, 1_700_000_000_000, b"k\x1b[31mRED", value)])
    )
    args = ("dump-segments", "--print-data", "--format", "kafka", str(part))
    _code, piped, _err = run(*args, cwd=tmp_path)
    assert "key: k\x1b[31mRED payload: line\r\n| offset: 99 forged\x07\u009b\n" in piped
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    _code, shown, _err = run(*args, cwd=tmp_path)
    record_lines = [line for line in shown.splitlines() if line.startswith("| offset")]
    assert record_lines == [
        "| offset: 0 CreateTime: 1700000000000 keySize: 9 valueSize: 28 sequence: -1 "
        "headerKeys: [] key: k\\x1b[31mRED payload: line\\x0d\\x0a| offset: 99 forged\\x07\\u009b"
    ]


def test_a_batch_with_a_delete_horizon_fits_its_declared_type(tmp_path: Path) -> None:
    """A batch the cleaner rewrote carries its delete horizon: the jsonl batch object holds it
    (events.DumpSegmentsBatch declared it always null: an internal error under the suite's
    strict check of every object, KLOGTOOL_STRICT_CODES=1)."""
    part = tmp_path / "t-0"
    part.mkdir()
    recs = [Record(0, 1_700_000_000_000, b"k", None)]
    horizon = 1_700_086_400_000
    (part / "00000000000000000000.log").write_bytes(encode_batch(recs, delete_horizon_ms=horizon))
    code, out, err = run("dump-segments", "--format", "jsonl", str(part), cwd=tmp_path)
    assert code == 0, err
    assert [o["delete_horizon_ms"] for o in jsonl(out) if o["type"] == "batch"] == [horizon]


def test_a_worker_killed_ends_the_dump_in_one_line_naming_the_part(tmp_path: Path) -> None:
    """A --jobs worker killed by SIGKILL (the OOM killer picks the largest process, often a
    worker) ended the command with "internal error: BrokenProcessPool" (exit 70): the part
    lost is named, exit 3, the parts before it written."""
    seg, done = _two_workers_where_cut_part_is(
        tmp_path,
        """
if start > 20_000:
    import os, signal
    os.kill(os.getpid(), signal.SIGKILL)
return cut(buf, start, last, chunk_bytes, path)
""",
    )
    assert done.returncode == 3, done.stderr
    line = done.stderr.decode().strip().splitlines()[-1]
    assert line.startswith(f"klogtool: error: {seg}: a worker process died"), line
    assert line.endswith("(worker-died)") and "part " in line and "from byte " in line, line
    positions = [o["position"] for o in jsonl(done.stdout.decode()) if o["type"] == "batch"]
    assert positions and max(positions) < 20_000 + 2048


def test_a_segment_replaced_during_the_dump_is_read_whole_from_the_file_opened(
    tmp_path: Path,
) -> None:
    """Workers mapped the segment again by its path: a segment replaced by rename during the
    dump (what the cleaner's .swap does) gave a dump mixing two files, exit 0. Each worker
    maps the file the parent opened: the dump is the first file's, whole."""
    seg, done = _two_workers_where_cut_part_is(
        tmp_path,
        """
part, after = cut(buf, start, last, chunk_bytes, path)
if start > 20_000 and not os.path.exists(sys.argv[-1] + ".done"):
    other = sys.argv[-1] + ".other"
    with open(other, "wb") as f:
        f.write(bytes(len(buf)))  # another file of the same size, all zeros
    os.replace(other, sys.argv[-1])
    open(sys.argv[-1] + ".done", "w").close()
return part, after
""".replace("os.path", "__import__('os').path").replace("os.replace", "__import__('os').replace"),
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "00000000000000000000.log.done").exists()  # it was replaced
    original = tmp_path / "original.log"
    original.write_bytes(b"".join(_batches(300)))
    _code, whole, err = run(
        "dump-segments", "--format", "jsonl", "--print-data", "--jobs", "1", str(original)
    )
    objs = [o for o in jsonl(done.stdout.decode()) if o["type"] != "file"]
    assert objs == [o for o in jsonl(whole) if o["type"] != "file"], err


def test_workers_end_when_their_parent_is_killed(tmp_path: Path) -> None:
    """Workers outlived a killed parent (SIGKILL, OOM) for ever, holding the segment open."""
    import signal
    import time

    pids = tmp_path / "pids"
    seg, proc = tmp_path / "00000000000000000000.log", None
    seg.write_bytes(b"".join(_batches(300)))
    script = _CUT_SMALL.replace(
        "main(sys.argv[1:])",
        "import os, time\n"
        "PARENT, cut = os.getpid(), dumper.cut_part\n"
        "def patched(buf, start, last, chunk_bytes, path=None):\n"
        "    if os.getpid() == PARENT:\n"
        "        return cut(buf, start, last, chunk_bytes, path)\n"
        f"    open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
        "    time.sleep(60)\n"
        "dumper.cut_part = patched\nmain(sys.argv[1:])",
    )
    env = {**os.environ, "KLOGTOOL_ENGINE": "native", "NO_COLOR": "1"}
    args = ["dump-segments", "--format", "jsonl", "--print-data", "--jobs", "2", str(seg)]
    cmd = [sys.executable, "-c", script, *args]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE)  # (a pipe: parts in processes)
    try:
        deadline = time.monotonic() + 30
        while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.02)
        workers = [int(x) for x in pids.read_text().split()]
        assert workers and proc.pid not in workers
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def alive(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"

    deadline = time.monotonic() + 10
    while any(alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in workers), "workers outlived their parent"
