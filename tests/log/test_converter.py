"""convert-format (docs/kafka-rules.md: Format conversion): every magic x codec pair, the seed
facts, lossy refusal,
destinations, in place, re-batching. Outputs must pass ``verify --deep`` and read identically
through kafka-python's readers."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from support.cli import run
from support.paths import LOGDIR
from support.rewrite import (
    T0,
    assert_verifies,
    copy_logdir,
    kl_batches,
    kl_records,
    kp_records,
    tree,
    write_partition,
)

from klogtool.errors import RefusedError
from klogtool.formats import codecs
from klogtool.formats.batch import LOG_APPEND_TIME, Record
from klogtool.formats.legacy import encode_message
from klogtool.formats.v2 import encode_batch
from klogtool.log.context import ReadContext
from klogtool.log.rewrite.converter import (
    ConversionPlan,
    Converted,
    ConvertOptions,
    Losses,
    LossyRefusal,
    NestedDestination,
    convert,
    plan_conversion,
)

pytestmark = pytest.mark.usefixtures("no_fsync")

SOURCES = (
    "v0-none-0",
    "v0-snappy-0",
    "v1-none-0",
    "v1-gzip-0",
    "v2-none-0",
    "v2-gzip-0",
    "v2-snappy-0",
    "v2-lz4-0",
    "v2-zstd-0",
    "txn-0",
    "__consumer_offsets-0",
    "__transaction_state-0",
)
TARGETS = [
    (magic, codec)
    for magic in (0, 1, 2)
    for codec in codecs.CODEC_NAMES.values()
    if not (codec == "zstd" and magic < 2)
]


def expected(records: list[tuple], magic: int) -> list[tuple]:
    """What the broker's conversion rules make of (offset, ts, key, value, headers)."""
    out = []
    for offset, ts, key, value, headers in records:
        if magic == 0:
            ts = -1
        if magic < 2:
            headers = ()
        out.append((offset, ts, key, value, headers))
    return out


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[int, str], Path]:
    """The fixture log dir converted to every target (one run each, every partition)."""
    import os

    real_fsync = os.fsync
    os.fsync = lambda fd: None  # module scope: the function-scoped fixture is not there yet
    try:
        base = tmp_path_factory.mktemp("converted")
        src = copy_logdir(base / "src", *SOURCES)
        out: dict[tuple[int, str], Path] = {}
        for magic, codec in TARGETS:
            dest = base / f"m{magic}-{codec}"
            code, _o, err = run(
                "convert-format",
                str(src),
                str(dest),
                "--to-magic",
                str(magic),
                "--compression",
                codec,
                "--allow-lossy",
                "--format",
                "jsonl",
                cwd=base,
            )
            assert code == 0, err
            out[(magic, codec)] = dest
        return out
    finally:
        os.fsync = real_fsync


@pytest.mark.parametrize("magic,codec", TARGETS, ids=[f"v{m}-{c}" for m, c in TARGETS])
def test_every_magic_and_codec_verifies_and_reads_identically(converted, magic, codec) -> None:
    dest = converted[(magic, codec)]
    assert_verifies(dest)
    for name in SOURCES:
        src_records = kp_records(LOGDIR / name)
        got = kp_records(dest / name)
        assert got == expected(src_records, magic), name
        assert kl_records(dest / name) == got, name  # klogtool agrees with kafka-python
        for batch in kl_batches(dest / name):
            assert batch.magic == magic
            if not batch.is_control and batch.count:  # markers/emptied batches stay plain
                assert batch.compression == codecs.CODEC_IDS[codec], (name, batch.position)
        # offsets never change: segment files keep their names
        assert sorted(p.name for p in (dest / name).glob("*.log")) == sorted(
            p.name for p in (LOGDIR / name).glob("*.log")
        )


def test_log_dir_files_and_partition_files_are_carried(converted) -> None:
    dest = converted[(2, "gzip")]
    for f in LOGDIR.iterdir():
        if f.is_file():
            assert (dest / f.name).read_bytes() == f.read_bytes()
    for name in SOURCES:
        for f in (LOGDIR / name).iterdir():
            if f.name.endswith((".snapshot", "leader-epoch-checkpoint", "partition.metadata")):
                assert (dest / name / f.name).read_bytes() == f.read_bytes()
        for log in (dest / name).glob("*.log"):
            assert log.with_suffix(".index").is_file()
            assert log.with_suffix(".timeindex").is_file()
            # the source segment's mtime is kept (time retention may fall back to it)
            assert log.stat().st_mtime_ns == (LOGDIR / name / log.name).stat().st_mtime_ns
    # the aborted transaction of txn-0 is still indexed in v2
    assert (dest / "txn-0" / "00000000000000000000.txnindex").read_bytes() == (
        LOGDIR / "txn-0" / "00000000000000000000.txnindex"
    ).read_bytes()
    assert not (converted[(1, "gzip")] / "txn-0" / "00000000000000000000.txnindex").exists()


def test_v2_output_keeps_producer_state_flags_and_timestamp_types(converted) -> None:
    for batch_in, batch_out in zip(
        kl_batches(LOGDIR / "txn-0"), kl_batches(converted[(2, "snappy")] / "txn-0"), strict=True
    ):
        for field in (
            "base_offset",
            "last_offset",
            "producer_id",
            "producer_epoch",
            "base_sequence",
            "is_transactional",
            "is_control",
            "partition_leader_epoch",
            "timestamp_type",
            "max_timestamp",
            "count",
        ):
            assert getattr(batch_out, field) == getattr(batch_in, field), field
    lat = [b for b in kl_batches(converted[(2, "none")] / "v1-gzip-0")]
    assert [b.timestamp_type for b in lat] == [0, LOG_APPEND_TIME, 0, LOG_APPEND_TIME]


# -- the seed facts ------------------------------------------------------------------------------
def _single_partition(tmp: Path, batches: list[bytes]) -> Path:
    part = tmp / "seed-0"
    write_partition(part, [(0, batches)])
    return part


def _convert(src: Path, dest: Path, *args: str) -> None:
    code, _out, err = run("convert-format", str(src), str(dest), *args, cwd=src.parent)
    assert code == 0, err


def test_seed_v0_message_is_34_bytes_with_its_crc_and_converts_to_42_and_76(tmp_path) -> None:
    v0 = encode_message(0, b"key", b"value", magic=0)
    assert len(v0) == 34 and struct.unpack_from(">I", v0, 12)[0] == 592888119
    src = _single_partition(tmp_path, [v0])
    _convert(src, tmp_path / "v1", "--to-magic", "1")
    _convert(src, tmp_path / "v2", "--to-magic", "2")
    v1_log = (tmp_path / "v1" / "00000000000000000000.log").read_bytes()
    v2_log = (tmp_path / "v2" / "00000000000000000000.log").read_bytes()
    assert len(v1_log) == 42
    assert len(v2_log) == 76
    # and back: the v2 batch down-converts to the very same 34-byte v0 entry
    _convert(tmp_path / "v2", tmp_path / "back", "--to-magic", "0")
    back = (tmp_path / "back" / "00000000000000000000.log").read_bytes()
    assert back == v0
    for d in ("v1", "v2", "back"):
        assert kp_records(tmp_path / d) == [(0, -1, b"key", b"value", ())]
        assert_verifies(tmp_path / d)


def test_seed_ten_keyless_values_rebatch_into_one_191_byte_batch(tmp_path) -> None:
    msgs = [
        encode_message(i, None, b"value%d" % i, magic=1, timestamp=T0 + 6 * i) for i in range(10)
    ]
    assert all(len(m[-6:]) == 6 for m in msgs)
    src = _single_partition(tmp_path, msgs)
    _convert(src, tmp_path / "kept", "--to-magic", "2")  # one v2 batch per v1 message
    _convert(src, tmp_path / "rebatched", "--to-magic", "2", "--batch-bytes", "1M")
    kept = list(kl_batches(tmp_path / "kept"))
    assert len(kept) == 10
    (batch,) = kl_batches(tmp_path / "rebatched")
    assert batch.size == 191 and batch.count == 10
    assert (tmp_path / "rebatched" / "00000000000000000000.log").stat().st_size == 191
    want = [(i, T0 + 6 * i, None, b"value%d" % i, ()) for i in range(10)]
    assert kp_records(tmp_path / "rebatched") == want == kp_records(tmp_path / "kept")
    assert_verifies(tmp_path / "rebatched")


# -- lossy conversions ---------------------------------------------------------------------------
def test_lossy_conversion_is_refused_with_counts_and_writes_nothing(tmp_path) -> None:
    src = copy_logdir(tmp_path, "txn-0", "v2-zstd-0")
    dest = tmp_path / "out"
    code, out, err = run("convert-format", str(src), str(dest), "--to-magic", "1", cwd=tmp_path)
    assert code == 4
    assert err.startswith("klogtool: error: ") and "(lossy-conversion)" in err
    assert "2 control batches" in err and "4 transactional batches" in err
    assert "18 records would lose their headers" in err
    assert "10 zstd batches" in err
    assert "--allow-lossy" in err
    assert "Traceback" not in err
    assert not dest.exists()
    # v1 -> v0 loses timestamps; refused with a count too
    src1 = copy_logdir(tmp_path / "b", "v1-gzip-0")
    code, _o, err = run("convert-format", str(src1), str(tmp_path / "o1"), "--to-magic", "0")
    assert code == 4 and "10 records would lose their timestamp" in err


def test_allow_lossy_reports_what_was_dropped(tmp_path) -> None:
    src = copy_logdir(tmp_path, "txn-0")
    code, out, err = run(
        "convert-format",
        str(src / "txn-0"),
        str(tmp_path / "out"),
        "--to-magic",
        "1",
        "--allow-lossy",
        "--format",
        "jsonl",
        cwd=tmp_path,
    )
    assert code == 0, err
    assert "dropped in the conversion" in err and "control batches" in err
    summary = [o for o in map(eval_json, out.splitlines()) if o["type"] == "summary"][0]
    assert summary["losses"]["control_batches"] == 2
    assert summary["losses"]["transactional_batches"] == 4
    assert summary["losses"]["empty_batches"] == 1
    # the aborted records are now visible: every data record is there
    assert [r[0] for r in kp_records(tmp_path / "out")] == [0, 1, 2, 3, 4, 5, 6, 7, 9, 13, 14]
    assert_verifies(tmp_path / "out")


def eval_json(line: str) -> dict:
    import json

    return json.loads(line)


def test_plan_is_pure_and_counts_losses() -> None:
    before = tree(LOGDIR / "v2-none-0")
    plan = plan_conversion(LOGDIR / "v2-none-0", ConvertOptions(ctx=ReadContext.of(), to_magic=0))
    assert tree(LOGDIR / "v2-none-0") == before
    losses = plan.losses
    assert isinstance(losses, Losses)
    assert losses.headers == 18 and losses.timestamps == 27
    # producer ids and leader epochs are lost too (issue 10: lossy, not informational)
    assert losses.lossy() == {
        "headers": 18,
        "timestamps": 27,
        "producer_batches": 10,
        "leader_epoch_batches": 10,
    }
    assert [s.action for s in plan.segments] == ["convert", "convert"]
    assert (
        plan_conversion(
            LOGDIR / "v2-none-0", ConvertOptions(ctx=ReadContext.of(), to_magic=2)
        ).losses.lossy()
        == {}
    )


# -- destinations --------------------------------------------------------------------------------
def test_destination_not_empty_is_refused(tmp_path) -> None:
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "something").write_text("x")
    code, _o, err = run("convert-format", str(LOGDIR / "v2-none-0"), str(dest), cwd=tmp_path)
    assert code == 4 and "(destination-not-empty)" in err
    assert sorted(p.name for p in dest.iterdir()) == ["something"]


def test_empty_destination_and_single_segment(tmp_path) -> None:
    dest = tmp_path / "out"
    dest.mkdir()
    seg = LOGDIR / "v2-gzip-0" / "00000000000000000017.log"
    code, _o, err = run(
        "convert-format", str(seg), str(dest), "--compression", "none", cwd=tmp_path
    )
    assert code == 0, err
    assert sorted(p.name for p in dest.iterdir()) == [
        "00000000000000000017.index",
        "00000000000000000017.log",
        "00000000000000000017.timeindex",
    ]
    assert kp_records(dest / "00000000000000000017.log") == kp_records(seg)


def test_usage_errors_are_one_line(tmp_path) -> None:
    for args, code in (
        ([str(LOGDIR / "v2-none-0")], 2),  # neither DEST nor --in-place
        ([str(LOGDIR / "v2-none-0"), str(tmp_path / "o"), "--in-place"], 2),
        ([str(LOGDIR / "v2-none-0"), str(tmp_path / "o"), "--keep-batching"] + REBATCH, 2),
        ([str(LOGDIR / "v2-none-0"), str(tmp_path / "o"), "--to-magic", "1"] + ZSTD, 2),
        ([str(LOGDIR / "v2-none-0"), str(tmp_path / "o"), "--compression-level", "3"], 2),
        ([str(LOGDIR / "v2-none-0"), str(LOGDIR / "v2-none-0" / "x")], 2),  # inside SRC
        ([str(tmp_path / "missing"), str(tmp_path / "o")], 3),
    ):
        rc, _o, err = run("convert-format", *args, cwd=tmp_path)
        assert rc == code, (args, err)
        assert "Traceback" not in err
    assert not (tmp_path / "o").exists()


ZSTD = ["--compression", "zstd"]
REBATCH = ["--batch-bytes", "1M"]


def test_corrupt_input_is_one_line_error_and_nothing_written(tmp_path) -> None:
    from support.paths import CORRUPT

    code, _o, err = run(
        "convert-format", str(CORRUPT / "crc-flip-0"), str(tmp_path / "o"), cwd=tmp_path
    )
    assert code == 3
    assert err.splitlines()[0].startswith("klogtool: error: ")
    assert ":242: " in err and "(crc-mismatch)" in err
    assert not (tmp_path / "o").exists()


def test_dry_run_writes_nothing(tmp_path) -> None:
    src = copy_logdir(tmp_path, "v0-none-0")
    before = tree(src)
    code, out, err = run(
        "convert-format", str(src), "--in-place", "--dry-run", "--compression", "gzip"
    )
    assert code == 0, err
    assert tree(src) == before
    assert "dry run" in out


# -- in place ------------------------------------------------------------------------------------
def test_in_place_conversion_and_rerun_is_a_no_op(tmp_path) -> None:
    src = copy_logdir(tmp_path, "v2-none-0", "v1-none-0", "txn-0")
    want = {p: kp_records(LOGDIR / p) for p in ("v2-none-0", "v1-none-0", "txn-0")}
    code, _o, err = run(
        "convert-format", str(src), "--in-place", "--compression", "zstd", cwd=tmp_path
    )
    assert code == 0, err
    assert_verifies(src)
    for p, recs in want.items():
        assert kp_records(src / p) == recs
    assert not [f for f in tree(src) if f.endswith((".cleaned", ".swap", ".deleted"))]
    after = tree(src)
    code, out, err = run(
        "convert-format", str(src), "--in-place", "--compression", "zstd", cwd=tmp_path
    )
    assert code == 0, err
    assert tree(src) == after  # already converted: byte for byte unchanged
    assert "unchanged" in out


def test_rebatching_legacy_messages_keeps_timestamp_types_apart(tmp_path) -> None:
    src = copy_logdir(tmp_path, "v1-none-0")
    dest = tmp_path / "out"
    _convert(src / "v1-none-0", dest, "--to-magic", "2", "--batch-bytes", "64K")
    batches = list(kl_batches(dest))
    # messages 5 and 6 are LogAppendTime with different append times: they stay apart
    assert [(b.base_offset, b.last_offset, b.timestamp_type) for b in batches] == [
        (0, 4, 0),
        (5, 5, LOG_APPEND_TIME),
        (6, 6, LOG_APPEND_TIME),
        (7, 7, 0),
    ]
    assert kp_records(dest) == kp_records(LOGDIR / "v1-none-0")
    assert_verifies(dest)


def test_rebatching_never_merges_producer_batches(tmp_path) -> None:
    recs = [Record(o, T0 + o, b"k", b"v") for o in range(6)]
    batches = [
        encode_batch(recs[0:2]),
        encode_batch(recs[2:4], producer_id=5, producer_epoch=0, base_sequence=0),
        encode_batch(recs[4:6]),
    ]
    src = tmp_path / "p-0"
    write_partition(src, [(0, batches)])
    _convert(src, tmp_path / "out", "--batch-bytes", "1M", "--compression", "gzip")
    out = list(kl_batches(tmp_path / "out"))
    assert [(b.base_offset, b.last_offset, b.producer_id) for b in out] == [
        (0, 1, -1),
        (2, 3, 5),
        (4, 5, -1),
    ]


def _bad_records_batch() -> bytes:
    """A batch whose CRC is valid but whose record count is one too many."""
    from klogtool.formats.crc import crc32c

    buf = bytearray(encode_batch([Record(o, T0 + o, b"k", b"v") for o in range(3)]))
    struct.pack_into(">i", buf, 57, 4)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def test_records_that_do_not_decode_leave_nothing_behind(tmp_path) -> None:
    part = tmp_path / "bad-0"
    write_partition(part, [(0, [encode_batch([Record(0, T0, b"a", b"b")])])])
    (part / "00000000000000000001.log").write_bytes(_shift(_bad_records_batch(), 1))
    before = tree(part)
    code, _o, err = run("convert-format", str(part), str(tmp_path / "out"), "--compression", "gzip")
    assert code == 3 and err.startswith("klogtool: error: ") and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad-0"]  # no DEST, no partial dir
    code, _o, err = run("convert-format", str(part), "--in-place", "--compression", "gzip")
    assert code == 3 and err.startswith("klogtool: error: ")
    assert tree(part) == before


def _shift(batch: bytes, base: int) -> bytes:
    return struct.pack(">q", base) + batch[8:]


def test_in_place_never_writes_through_a_symlink_out_of_the_log_dir(tmp_path) -> None:
    import os

    outside = copy_logdir(tmp_path / "outside", "v1-none-0") / "v1-none-0"
    logdir = copy_logdir(tmp_path / "in", "v2-none-0")
    os.symlink(outside, logdir / "v1-none-0")
    before = tree(outside)
    code, _o, err = run("convert-format", str(logdir), "--in-place", "--compression", "gzip")
    assert code == 1, err
    assert "symlink" in err
    assert tree(outside) == before
    assert {b.compression for b in kl_batches(logdir / "v2-none-0")} == {codecs.GZIP}


def test_convert_is_the_whole_command_as_a_function(tmp_path: Path) -> None:
    """convert() yields what the command shows, in order; a lossy conversion is refused after
    a LossyRefusal, and nothing is written."""
    src = LOGDIR / "txn-0"
    items = list(convert(src, tmp_path / "v2", ConvertOptions(ctx=ReadContext.of(), to_magic=2)))
    assert [type(i) for i in items] == [ConversionPlan, Converted]
    done = items[-1]
    assert isinstance(done, Converted) and done.result is not None
    assert done.result.destination == tmp_path / "v2" and (tmp_path / "v2").is_dir()

    steps = convert(src, tmp_path / "v1", ConvertOptions(ctx=ReadContext.of(), to_magic=1))
    assert isinstance(next(steps), ConversionPlan)
    refusal = next(steps)
    assert isinstance(refusal, LossyRefusal) and refusal.losses["transactional_batches"] > 0
    with pytest.raises(RefusedError, match="would lose data"):
        next(steps)
    assert not (tmp_path / "v1").exists()
    with pytest.raises(NestedDestination):
        list(convert(src, src / "inside", ConvertOptions(ctx=ReadContext.of())))
