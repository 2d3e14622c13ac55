"""Reading from object storage (issue 26): the fixtures uploaded to a real S3 API server on
127.0.0.1 (tests/support/s3.py) read exactly as from the local disk — every golden, and every
reading command — with the requests and bytes each read costs counted at the server."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyarrow.fs", reason="object storage needs pyarrow (the storage extra)")

from support.cli import default_sigint, generator, run
from support.metadata import TOPIC, config_record, metadata_batch, topic_record
from support.paths import LOGS
from support.rewrite import write_partition
from support.s3 import BUCKET, S3Server, s3_server  # noqa: F401  (the fixture)

from klogtool.formats.batch import Record
from klogtool.formats.v2 import encode_batch
from klogtool.log import storage

GEN = generator()
T0 = GEN.T0
CASES = GEN.golden_cases()


@pytest.fixture(scope="module")
def logs(s3_server: S3Server) -> str:  # noqa: F811
    """fixtures/logs in the bucket: its URI."""
    return s3_server.upload(LOGS, "fixtures")


def _remote(args: tuple[str, ...], uri: str) -> list[str]:
    """The command line with every PATH under fixtures/logs named by its URI."""
    return [f"{uri}/{a}" if not a.startswith("-") and (LOGS / a).exists() else a for a in args]


def _same(local: tuple[int, str, str], remote: tuple[int, str, str], uri: str) -> None:
    code, out, err = remote
    assert code == local[0]
    assert _no_mtimes(out.replace(f"{uri}/", "")) == _no_mtimes(local[1])
    assert err.replace(f"{uri}/", "") == local[2].replace(f"{LOGS}/", "")


_MTIME = re.compile(r'"(\w+)":[0-9]+,"timestamp_source":"mtime"')


def _no_mtimes(out: str) -> str:
    """Output to compare: a time taken from a file's mtime is an object's upload time
    (docs/storage.md), and a text table's columns are as wide as its longest path."""
    return re.sub(" {2,}", "  ", _MTIME.sub(r'"\1":0,"timestamp_source":"mtime"', out))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_golden_reads_the_same_from_s3(case, logs: str) -> None:
    """The same records, findings, byte positions and exit codes as from the local disk."""
    _same(run(*case.args), run(*_remote(case.args, logs)), logs)


READING = [
    ("describe", "--format", "jsonl", "logdir"),
    ("describe", "logdir/txn-0"),
    (
        "stats",
        "--format",
        "jsonl",
        "--sample",
        "0",
        "--jobs",
        "1",
        "--now",
        "1700000100000",
        "logdir",
    ),
    ("transactions", "--format", "jsonl", "logdir"),
    ("explain", "--format", "jsonl", "--now", "1700000100000", "logdir/v2-none-0"),
    ("groups", "--format", "jsonl", "logdir"),
    ("diff", "--format", "jsonl", "logdir/v2-none-0", "logdir/v2-zstd-0"),
    ("find", "--format", "jsonl", "--jobs", "1", "--offsets", "18:20", "logdir/v2-lz4-0"),
    ("find", "--format", "jsonl", "--jobs", "1", "--newest-first", "--key", "key-2", "logdir"),
    ("find", "--format", "jsonl", "--from-time", "1700000020000", "logdir/v2-none-0"),
    ("verify", "--format", "jsonl", "--deep", "logdir", "corrupt"),
    ("dump-segments", "--format", "jsonl", "--deep-iteration", "corrupt"),
    ("dump-segments", "--format", "jsonl", "logdir/v2-gzip-0/00000000000000000017.index"),
]


@pytest.mark.parametrize("args", READING, ids=[" ".join(a[:2]) for a in READING])
def test_every_reading_command_reads_the_same_from_s3(args: tuple[str, ...], logs: str) -> None:
    local = run(*args)
    assert local[0] in (0, 1) and local[1], local  # a command line that reads something
    _same(local, run(*_remote(args, logs)), logs)


def test_a_tree_is_listed_once_and_each_file_read_once(s3_server: S3Server, logs: str) -> None:  # noqa: F811
    s3_server.reset()
    code, out, _ = run("verify", "--format", "jsonl", f"{logs}/logdir")
    assert code == 0
    lists = [r for r in s3_server.requests if r.method == "GET" and "list-type=2" in r.query]
    assert len(lists) == 1, lists  # the whole log dir: one ListObjectsV2 (under 1,000 keys)
    gets = [r for r in s3_server.requests if r.method == "GET" and r.path.startswith("/fixtures")]
    assert len(gets) == len({r.path for r in gets})  # no object fetched twice
    heads = [r for r in s3_server.requests if r.method == "HEAD"]
    assert len(heads) == len({r.path for r in heads})  # nor opened twice
    objects = {str(p.relative_to(LOGS)) for p in (LOGS / "logdir").rglob("*") if p.is_file()}
    assert {r.path.removeprefix("/fixtures/") for r in gets} <= objects
    sent = sum(r.sent for r in gets)
    assert storage.stats_line() == (
        f"klogtool storage: 1 listings, {len(gets)} ranged reads, {sent:,} bytes fetched, 0 retries"
    )


def test_a_transient_error_is_retried(s3_server: S3Server, logs: str) -> None:  # noqa: F811
    seg = "logdir/v2-none-0/00000000000000000000.log"
    local = run("dump-segments", "--format", "jsonl", seg)
    s3_server.reset()
    s3_server.fail += [(seg, 503), (seg, 500)]
    remote = run("dump-segments", "--format", "jsonl", f"{logs}/{seg}")
    _same(local, remote, logs)
    assert [r.status for r in s3_server.requests if r.path.endswith(seg)].count(200) >= 1
    assert not s3_server.fail  # both failures were served, and read past


def test_a_missing_object_is_one_line_naming_it(s3_server: S3Server, logs: str) -> None:  # noqa: F811
    code, out, err = run("dump-segments", f"{logs}/logdir/no-such-0")
    assert code == 3 and out == ""
    assert (
        err == f"klogtool: error: {logs}/logdir/no-such-0: no such file or directory (not-found)\n"
    )
    assert "klogtool-test-secret" not in err


def test_no_credential_is_ever_shown(s3_server: S3Server) -> None:  # noqa: F811
    code, out, err = run("verify", "s3://no-such-bucket-here/logs")
    assert code == 3 and len(err.splitlines()) == 1 and "s3://no-such-bucket-here" in err
    for secret in s3_server.env.values():
        if "secret" in secret or "key" in secret:
            assert secret not in out + err


@pytest.mark.parametrize(
    "args",
    [
        ("compact", "--assume-defaults", "--dry-run"),
        ("retention-sweep", "--assume-defaults", "--dry-run"),
        ("rebuild-index", "--dry-run"),
        ("truncate-recovery", "--dry-run"),
        ("convert-format", "--to-magic", "2"),
    ],
)
def test_writing_commands_refuse_uris(args: tuple[str, ...], logs: str, tmp_path: Path) -> None:
    extra = [str(tmp_path / "out")] if args[0] == "convert-format" else []
    code, out, err = run(*args, f"{logs}/logdir/v2-none-0", *extra)
    assert code == 2 and out == ""
    assert "klogtool changes only local files" in err


# -- what a seek costs --------------------------------------------------------------------------
SEGMENT_RECORDS = 5000  # of 2 KiB: ~10 MiB segments, more than a chunk each
VALUE = 2048


def _big_segment(base: int, value: bytes = bytes(range(256)) * (VALUE // 256)) -> bytes:
    """A ~10 MiB segment of SEGMENT_RECORDS records of ``value`` from offset ``base``."""
    return b"".join(
        encode_batch(
            [
                Record(offset=o, timestamp=1_700_000_000_000 + o, key=b"k%d" % o, value=value)
                for o in range(b, b + 50)
            ],
            base_offset=b,
        )
        for b in range(base, base + SEGMENT_RECORDS, 50)
    )


@pytest.fixture(scope="module")
def big_partition(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> str:  # noqa: F811
    """A partition of four ~10 MiB segments with their indexes (rebuilt by klogtool)."""
    part = tmp_path_factory.mktemp("big") / "big-0"
    part.mkdir()
    for s in range(4):
        base = s * SEGMENT_RECORDS
        (part / f"{base:020d}.log").write_bytes(_big_segment(base))
    code, _, err = run("rebuild-index", str(part))
    assert code == 0, err
    uri = s3_server.upload(part.parent, "big")
    shutil.rmtree(part.parent)
    return f"{uri}/big-0"


def test_find_offsets_fetches_only_the_chunk_it_reads(
    s3_server: S3Server,  # noqa: F811
    big_partition: str,
) -> None:
    total = sum(r for r in _sizes(s3_server, "big/big-0/").values())
    s3_server.reset()
    code, out, err = run("find", "--format", "jsonl", "--offsets", "12345:12349", big_partition)
    assert code == 0, err
    offsets = [o["offset"] for o in map(json.loads, out.splitlines()) if o["type"] == "record"]
    assert offsets == list(range(12345, 12350))
    fetched = s3_server.fetched()
    assert fetched <= storage.CHUNK + (1 << 20), (fetched, total)  # one chunk and an index
    assert total > 4 * fetched
    logs = [r for r in s3_server.requests if r.path.endswith(".log") and r.method == "GET"]
    assert len(logs) == 1  # the one segment that holds the range, one ranged read


def test_find_from_time_skips_the_segments_below_it(
    s3_server: S3Server,  # noqa: F811
    big_partition: str,
) -> None:
    s3_server.reset()
    start = 1_700_000_000_000 + 3 * SEGMENT_RECORDS + 4990
    code, out, err = run("find", "--format", "jsonl", "--from-time", str(start), big_partition)
    assert code == 0, err
    offsets = [o["offset"] for o in map(json.loads, out.splitlines()) if o["type"] == "record"]
    assert offsets == list(range(3 * SEGMENT_RECORDS + 4990, 4 * SEGMENT_RECORDS))
    logs = {r.path for r in s3_server.requests if r.path.endswith(".log") and r.method == "GET"}
    assert logs == {f"/big/big-0/{3 * SEGMENT_RECORDS:020d}.log"}
    assert s3_server.fetched() <= 2 * storage.CHUNK


def _sizes(server: S3Server, prefix: str) -> dict[str, int]:
    listed = server.client().list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    return {o["Key"]: o["Size"] for o in listed.get("Contents", [])}


# -- export: from object storage, to object storage --------------------------------------------
def _rows(where: str) -> list[dict]:
    """An export's rows, wherever they are, in offset order."""
    import pyarrow.dataset as ds

    rows = ds.dataset(where, format="parquet").to_table().to_pylist()
    return sorted(rows, key=lambda r: (r["topic"], r["partition"], r["offset"]))


def test_export_from_s3_to_s3_writes_the_local_rows(
    s3_server: S3Server,  # noqa: F811
    logs: str,
    tmp_path: Path,
) -> None:
    local = tmp_path / "local"
    code, _, err = run("export", "--jobs", "2", "--to", "parquet", str(local), "logdir")
    assert code == 0, err
    name = f"exports/{tmp_path.name}"  # one per test and engine
    dest = f"s3://{BUCKET}/{name}"
    s3_server.reset()
    code, out, err = run(
        "export", "--format", "jsonl", "--jobs", "2", "--to", "parquet", dest, f"{logs}/logdir"
    )
    assert code == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["destination"] == dest and summary["rows"] > 0
    keys = _sizes(s3_server, f"{name}/")
    assert f"{name}/_SUCCESS" in keys and len(keys) > 1
    puts = [r.path for r in s3_server.requests if r.method in ("PUT", "POST")]
    assert puts[-1] == f"/{name}/_SUCCESS"  # the marker last: the tree is complete
    got = _rows(dest)
    assert len(got) == summary["rows"]
    assert got == _rows(str(local))


def test_export_to_s3_refuses_a_destination_that_is_not_empty_and_overwrites_it_whole(
    s3_server: S3Server,  # noqa: F811
    logs: str,
    tmp_path: Path,
) -> None:
    name = f"exports/{tmp_path.name}"
    dest = f"s3://{BUCKET}/{name}"
    s3_server.client().put_object(Bucket=BUCKET, Key=f"{name}/old.parquet", Body=b"x")
    seg = f"{logs}/logdir/v2-none-0"
    code, out, err = run("export", "--jobs", "1", "--to", "parquet", dest, seg)
    assert code == 4 and "the destination is not empty" in err
    code, out, err = run("export", "--jobs", "1", "--overwrite", "--to", "jsonl", dest, seg)
    assert code == 0, err
    keys = set(_sizes(s3_server, f"{name}/"))
    assert f"{name}/old.parquet" not in keys and f"{name}/_SUCCESS" in keys
    # (pyarrow leaves a "DEST/" marker object where it deleted a file: the prefix stays)
    assert all(k.endswith((".json", "_SUCCESS", "/")) for k in keys), keys


def test_export_refuses_a_destination_inside_its_input(logs: str) -> None:
    code, out, err = run("export", "--to", "parquet", f"{logs}/logdir/out", f"{logs}/logdir")
    assert code == 4 and "inside an input directory" in err


def test_export_where_offsets_fetches_only_what_its_walk_reads(
    s3_server: S3Server,  # noqa: F811
    big_partition: str,
    tmp_path: Path,
) -> None:
    """Segments past the offsets are pruned by their names; the one read is fetched only as
    far as its walk goes (a split reads its segment from the start: docs/storage.md)."""
    s3_server.reset()
    dest = tmp_path / "out"
    code, out, err = run(
        "export",
        "--jobs",
        "1",
        "--where",
        "--offsets 0:99",
        "--to",
        "jsonl",
        str(dest),
        big_partition,
    )
    assert code == 0, err
    rows = [json.loads(line) for f in sorted(dest.glob("*.json")) for line in f.open()]
    assert [r["offset"] for r in rows] == list(range(100))
    logs = {r.path for r in s3_server.requests if r.path.endswith(".log") and r.method == "GET"}
    assert logs == {"/big/big-0/00000000000000000000.log"}
    assert s3_server.fetched() <= storage.CHUNK


def test_export_where_from_time_fetches_only_the_segments_after_it(
    s3_server: S3Server,  # noqa: F811
    big_partition: str,
    tmp_path: Path,
) -> None:
    """A rolled segment whose time index ends below the time is not read (nor fetched)."""
    first = 3 * SEGMENT_RECORDS + 4990
    s3_server.reset()
    dest = tmp_path / "out"
    where = f"--from-time {1_700_000_000_000 + first}"
    code, _, err = run(
        "export", "--jobs", "1", "--where", where, "--to", "jsonl", str(dest), big_partition
    )
    assert code == 0, err
    rows = [json.loads(line) for f in sorted(dest.glob("*.json")) for line in f.open()]
    assert [r["offset"] for r in rows] == list(range(first, 4 * SEGMENT_RECORDS))
    logs = {r.path for r in s3_server.requests if r.path.endswith(".log") and r.method == "GET"}
    assert logs == {f"/big/big-0/{3 * SEGMENT_RECORDS:020d}.log"}


@pytest.mark.parametrize("status", [403, 404])
def test_an_error_that_retrying_cannot_mend_is_one_line_at_once(
    s3_server: S3Server,  # noqa: F811
    logs: str,
    status: int,
) -> None:
    seg = "logdir/v2-none-0/00000000000000000017.log"
    s3_server.reset()
    s3_server.fail += [(seg, status)] * 10
    try:
        code, out, err = run("dump-segments", "--format", "jsonl", f"{logs}/logdir/v2-none-0")
    finally:
        left = len(s3_server.fail)
        s3_server.fail.clear()
    assert code == 3 and len(err.splitlines()) == 1
    assert err.startswith(f"klogtool: error: {logs}/{seg}: ") and err.endswith("(io-error)\n")
    assert left >= 8  # asked at most twice (pyarrow's HEAD, and at most once more), not retried


def test_a_spool_fetches_each_byte_once_and_reads_what_the_object_holds(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Random needs, peeks and walks over a 20 MiB object: every range asked for reads the
    object's bytes; no byte is fetched twice; a peek fetches only what it asks for."""
    import random

    rnd = random.Random(26)
    data = rnd.randbytes(20 << 20)
    s3_server.client().put_object(Bucket=BUCKET, Key="spool/object", Body=data)
    s3_server.reset()
    path = storage.path_of(f"s3://{BUCKET}/spool/object")
    assert isinstance(path, storage.RemotePath)
    with open(tmp_path / "spool", "w+b") as f:
        spool = storage.Spool(path, f)
        for _ in range(60):
            start = rnd.randrange(len(data))
            end = min(len(data), start + rnd.choice((1, 17, 4096, 1 << 20, 9 << 20)))
            ahead = rnd.random() < 0.5
            before = s3_server.fetched()
            spool.need(start, end, ahead=ahead)
            got = os.pread(f.fileno(), end - start, start)
            assert got == data[start:end]
            assert spool.have == sorted(spool.have)
            assert all(b < c for (_, b), (c, _) in zip(spool.have, spool.have[1:], strict=False))
            if not ahead:
                assert s3_server.fetched() - before <= end - start
        spool.fill()
        assert spool.have == [(0, len(data))]
        assert os.pread(f.fileno(), len(data), 0) == data
    assert s3_server.fetched() == len(data)  # each byte once
    assert all(r.sent <= storage.PIECE for r in s3_server.requests)


def test_a_walk_fetches_ahead_in_ever_larger_windows(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Issue 42.4: a walk that goes on reading (a batch's bytes after another's) doubles what
    it fetches ahead, a chunk first, up to FETCHERS pieces of PIECE fetched together; a seek
    elsewhere starts again at a chunk; a whole fill is FETCHERS ranged reads of a quarter."""
    import random

    data = random.Random(42).randbytes(100 << 20)
    s3_server.client().put_object(Bucket=BUCKET, Key="walk/object", Body=data)
    path = storage.path_of(f"s3://{BUCKET}/walk/object")
    assert isinstance(path, storage.RemotePath)
    mib = 1 << 20

    def walk(spool: storage.Spool, start: int, end: int) -> list[int]:
        s3_server.reset()
        for at in range(start, end, 16 << 10):  # 16 KiB batches, as a scanner asks
            spool.need(at, at + (16 << 10))
        gets = [r for r in s3_server.requests if r.method == "GET"]
        return [r.sent // mib for r in gets]

    with open(tmp_path / "spool", "w+b") as f:
        spool = storage.Spool(path, f)
        # windows of 8, 16 and 32 MiB in reads of 8 at once, then 64 (44 are left) in four
        assert sorted(walk(spool, 0, len(data))) == [8] * 7 + [11] * 4
        assert os.pread(f.fileno(), len(data), 0) == data
    with open(tmp_path / "spool2", "w+b") as f:
        spool = storage.Spool(path, f)
        assert walk(spool, 50 * mib, 51 * mib) == [8]  # a seek: one chunk
        assert walk(spool, 10 * mib, 11 * mib) == [8]  # elsewhere: a chunk again
        assert walk(spool, 18 * mib, 19 * mib) == [8, 8]  # on from there: twice as far
    with open(tmp_path / "spool3", "w+b") as f:
        spool = storage.Spool(path, f)
        s3_server.reset()
        spool.fill()
        assert sorted(r.sent // mib for r in s3_server.requests if r.method == "GET") == [25] * 4
        assert os.pread(f.fileno(), len(data), 0) == data


def test_export_to_s3_that_fails_leaves_nothing_of_its_own(
    s3_server: S3Server,  # noqa: F811
    logs: str,
    tmp_path: Path,
) -> None:
    """A corrupt segment met half-way (--on-corrupt fail): the files the finished splits
    wrote are deleted, and no _SUCCESS says the export is there."""
    name = f"exports/{tmp_path.name}"
    code, out, err = run(
        "export",
        "--jobs",
        "1",
        "--target-split-bytes",
        "1",
        "--to",
        "parquet",
        f"s3://{BUCKET}/{name}",
        f"{logs}/logdir/v2-none-0",
        f"{logs}/corrupt/crc-flip-0",
    )
    assert code == 3 and "crc" in err.lower(), err
    assert set(_sizes(s3_server, f"{name}/")) <= {f"{name}/"}  # (pyarrow's prefix marker)


@pytest.mark.parametrize("uri", ["hdfs://namenode.invalid:8020/kafka", "foo://bar/x", "s3://"])
def test_a_file_system_that_cannot_be_opened_is_one_line(uri: str) -> None:
    """pyarrow's own errors can run to a hundred lines (HDFS: every libjvm path it tried)."""
    code, out, err = run("verify", uri)
    assert code == 3 and out == ""
    assert len(err.splitlines()) == 1 and "cannot open this file system" in err, err


# -- what lies beside a PATH: _schemas, __cluster_metadata-0 (issue 37, item 4) ----------------
def _confluent_logdir(tmp: Path) -> tuple[Path, bytes]:
    """A log dir holding a ``_schemas`` partition (one JSON Schema, id 3) and ``orders-0``,
    whose one record's value is in Confluent's wire format with that id; the value's JSON."""
    schema = {
        "subject": "orders-value",
        "version": 1,
        "id": 3,
        "schema": "{}",
        "schemaType": "JSON",
    }
    key = {"keytype": "SCHEMA", "subject": "orders-value", "version": 1, "magic": 1}
    d = tmp / "data"
    write_partition(
        d / "_schemas-0",
        [
            (
                0,
                [
                    encode_batch(
                        [Record(0, T0, json.dumps(key).encode(), json.dumps(schema).encode())]
                    )
                ],
            )
        ],
    )
    body = b'{"kind": "login"}'
    value = b"\0" + (3).to_bytes(4, "big") + body
    write_partition(d / "orders-0", [(0, [encode_batch([Record(0, T0, b"k", value)])])])
    return d, body


def _decoded(out: str) -> list[object]:
    return [o["value"] for o in map(json.loads, out.splitlines()) if o["type"] == "record"]


def test_confluent_schemas_beside_an_s3_path_and_named_by_a_uri(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    local, body = _confluent_logdir(tmp_path)
    uri = s3_server.upload(local, f"confluent/{tmp_path.name}")
    s3_server.client().put_object(
        Bucket=BUCKET,
        Key=f"confluent/{tmp_path.name}-schemas.json",
        Body=json.dumps([{"id": 3, "subject": "orders-value", "version": 1, "schema": "{}",
                          "schemaType": "JSON"}]).encode(),
    )  # fmt: skip
    s3_server.reset()  # what another test listed of confluent/ is stale
    want = [{"schema_id": 3, "subject": "orders-value", "version": 1, "type": "JSON",
             "value": json.loads(body)}]  # fmt: skip
    decode = ("dump-segments", "--format", "jsonl", "--print-data", "--value-decoder", "confluent")
    code, out, err = run(*decode, f"{uri}/orders-0")
    assert code == 0 and "no _schemas partition" not in err, err
    assert _decoded(out) == want
    code, out, err = run(
        "find", "--format", "jsonl", "--value-decoder", "confluent", "--key", "k", uri
    )
    assert code == 0 and _decoded(out) == want, err
    # --schemas names a URI: a log dir, a partition dir, a file of schema objects
    for schemas in (uri, f"{uri}/_schemas-0", f"{uri}-schemas.json"):
        code, out, err = run(*decode, "--schemas", schemas, str(local / "orders-0"))
        assert code == 0 and _decoded(out) == want, (schemas, err)
    code, out, err = run(*decode, "--schemas", f"{uri}/no-such", str(local / "orders-0"))
    assert (
        code == 3
        and err == f"klogtool: error: {uri}/no-such: no such file or directory (not-found)\n"
    )


def test_stats_of_an_s3_log_dir_reads_its_metadata_log(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The topic's cleanup.policy from the __cluster_metadata-0 in the log dir, as explain
    reads it, and as stats reads it from the local disk."""
    local = tmp_path / "kafka-logs"
    write_partition(local / "orders-0", [(0, [encode_batch([Record(0, T0, b"k", b"v")])])])
    write_partition(
        local / "__cluster_metadata-0",
        [(0, [metadata_batch(0, [topic_record("orders", "AAAAAAAAAAAAAAAAAAAAAA"),
                                 config_record(TOPIC, "orders", "cleanup.policy", "compact")])])],
    )  # fmt: skip
    uri = s3_server.upload(local, f"kraft/{tmp_path.name}")
    policies = []
    for where in (str(local), uri):
        code, out, err = run(
            "stats", "--format", "jsonl", "--sample", "0", "--topic", "orders", where
        )
        assert code == 0, err
        total = [o for o in map(json.loads, out.splitlines()) if o["scope"] == "total"][0]
        policies.append(total["keys"]["compaction"]["cleanup_policy_source"])
    assert policies[1] == policies[0] == "metadata log at offset 1"


# -- credentials in a URI (issue 37, item 10) -----------------------------------------------------
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYSECRET"  # an AWS secret may hold "/" and "+"


@pytest.mark.parametrize(
    "userinfo", [f"AKIATESTKEY:{SECRET}", f"AKIATESTKEY:{SECRET}".replace("/", "%2F")]
)
def test_credentials_in_a_uri_are_refused_and_never_shown(
    logs: str, tmp_path: Path, userinfo: str
) -> None:
    """Every command and option that takes a URI: one line (exit 2) that names the URI
    without its user info and says where credentials go; the secret in no line."""
    bad = logs.replace("s3://", f"s3://{userinfo}@")
    part = f"{bad}/logdir/v2-none-0"
    lines = [
        ("verify", f"{bad}/logdir"),
        ("describe", "--format", "jsonl", part),
        ("stats", "--format", "jsonl", part),
        ("find", "--format", "jsonl", "--key", "k", part),
        ("dump-segments", "--format", "jsonl", f"{part}/00000000000000000000.log"),
        ("explain", part),
        ("transactions", part),
        ("groups", part),
        ("diff", part, f"{logs}/logdir/v2-none-0"),
        ("export", "--to", "jsonl", str(tmp_path / "out"), part),
        ("export", "--to", "jsonl", f"{bad}/exports/x", "logdir/v2-none-0"),
        ("dump-segments", "--value-decoder", "confluent", "--schemas", bad, "logdir/v2-none-0"),
        ("explain", "--metadata-dir", f"{bad}/logdir/__cluster_metadata-0", "logdir/v2-none-0"),
        ("compact", "--dry-run", "--assume-defaults", part),
    ]
    for args in lines:
        code, out, err = run(*args)
        assert SECRET not in out + err and SECRET.replace("/", "%2F") not in out + err, args
        assert "AKIATESTKEY" not in out + err, args
        assert code == 2, (args, err)
        if args[0] != "compact" and "--metadata-dir" not in args:  # Click's usage errors
            assert err.startswith("klogtool: error: s3://***@") and len(err.splitlines()) == 1
            assert err.endswith("(credentials-in-uri)\n"), err
            assert "AWS_SECRET_ACCESS_KEY" in err


# -- keys no path can name (issue 37, item 10) ----------------------------------------------------
ODD_KEYS = [
    "v2-none-0//00000000000000000000.log",
    "v2-none-0/./00000000000000000000.log",
    "./v2-none-0/00000000000000000000.log",
    "../v2-none-0/00000000000000000000.log",
    "v2-none-0/../00000000000000000099.log",
]


@pytest.mark.parametrize(
    "args",
    [
        ("verify", "--format", "jsonl"),
        ("dump-segments", "--format", "jsonl"),
        ("describe", "--format", "jsonl"),
        ("find", "--format", "jsonl", "--key", "key-2"),
        ("stats", "--format", "jsonl", "--sample", "0", "--now", "1700000100000"),
    ],
    ids=lambda a: a[0],
)
def test_a_key_with_an_empty_or_dot_segment_is_named_and_left_out(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
    args: tuple[str, ...],
) -> None:
    """Every reading command alike: the tree read as without those keys, and one warning
    naming each (a RemotePath of "a//b" is "a/b", of "a/." is "a": walked, it was itself
    again, exit 70 in verify and dump-segments; describe, find and stats left it silently)."""
    part = LOGS / "logdir" / "v2-none-0"
    clean = s3_server.upload(part, f"odd/{tmp_path.name}/clean/v2-none-0").rsplit("/", 1)[0]
    odd = s3_server.upload(part, f"odd/{tmp_path.name}/odd/v2-none-0").rsplit("/", 1)[0]
    data = (part / "00000000000000000000.log").read_bytes()
    for key in ODD_KEYS:
        s3_server.client().put_object(
            Bucket=BUCKET, Key=f"odd/{tmp_path.name}/odd/{key}", Body=data
        )
    s3_server.reset()
    code, out, err = run(*args, clean)
    assert code in (0, 1) and out, err
    got = run(*args, odd)
    assert got[0] == code
    assert got[1].replace(odd, clean) == out
    warned = [f"klogtool: warning: {odd}/{key}: not read: an object key with an empty, '.' or "
              "'..' path segment (a disk could hold no file of that name) (bad-object-key)"
              for key in sorted(ODD_KEYS)]  # fmt: skip
    assert got[2].splitlines()[: len(ODD_KEYS)] == sorted(warned)
    assert "\n".join(got[2].splitlines()[len(ODD_KEYS) :]).replace(odd, clean) == err.rstrip("\n")


# -- a server that stalls (issue 37, item 10) -----------------------------------------------------
def _started(*args: str, **env: str) -> subprocess.Popen[str]:
    """``klogtool ARGS`` as a real process (a Ctrl-C is a signal to a process)."""
    return subprocess.Popen(
        [sys.executable, "-m", "klogtool", *args],
        cwd=LOGS,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **env},
        preexec_fn=default_sigint,
    )


def _ended(p: subprocess.Popen[str], within: float) -> tuple[int, str, float]:
    """(exit status, stderr, seconds) of a process that must end ``within`` seconds."""
    start = time.monotonic()
    try:
        _out, err = p.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        p.kill()
        _out, err = p.communicate()
        raise AssertionError(f"still running after {within} s: {err}") from None
    return p.returncode, err, time.monotonic() - start


STALLS = [
    ("the listing", ("list-type=2", "GET"), ("verify",), "stall/{name}/logdir"),
    ("a segment", (".log", "GET"), ("dump-segments",), "stall/{name}/logdir/v2-none-0"),
    ("an upload", ("/exports/", "PUT"), ("export", "--jobs", "1", "--to", "jsonl",
                                         "s3://klogtool-tests/exports/{name}"),
     "stall/{name}/logdir/v2-none-0"),
]  # fmt: skip


@pytest.mark.parametrize("what,stall,args,path", STALLS, ids=[s[0] for s in STALLS])
def test_a_stalled_request_times_out_in_one_line(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
    what: str,
    stall: tuple[str, str],
    args: tuple[str, ...],
    path: str,
) -> None:
    """Headers and then nothing, or an upload never read: each attempt gives up after
    KLOGTOOL_STORAGE_TIMEOUT, the SDK's three attempts are not tried again, and the
    command ends in one line (io-error, exit 3). It waited for minutes (eleven attempts of
    the SDK's default, each tried four times)."""
    s3_server.upload(LOGS / "logdir" / "v2-none-0", f"stall/{tmp_path.name}/logdir/v2-none-0")
    s3_server.reset()
    s3_server.stall += [stall] * 100
    try:
        line = [a.format(name=tmp_path.name) for a in args]
        p = _started(*line, f"s3://{BUCKET}/{path.format(name=tmp_path.name)}",
                     KLOGTOOL_STORAGE_TIMEOUT="1")  # fmt: skip
        code, err, took = _ended(p, within=60)
    finally:
        s3_server.release()
    assert code == 3, err
    assert len(err.splitlines()) == 1 and err.endswith("(io-error)\n"), err
    assert "did not answer: no byte moved for 1 s, 3 times" in err
    # curl judges an upload's speed over its last 5 s: a stalled upload's attempt takes 6 s
    assert took < (15 if stall[1] == "GET" else 35), took


@pytest.mark.parametrize("stall,args", [
    ((".log", "GET"), ("dump-segments", "--format", "jsonl", "{big}")),
    (("/exports/", "PUT"), ("export", "--jobs", "1", "--to", "jsonl",
                            "s3://klogtool-tests/exports/{name}", "logdir/v2-none-0")),
], ids=["reading", "uploading"])  # fmt: skip
def test_ctrl_c_ends_a_command_a_server_stalls(
    s3_server: S3Server,  # noqa: F811
    big_partition: str,
    tmp_path: Path,
    stall: tuple[str, str],
    args: tuple[str, ...],
) -> None:
    """Four threads fetch a 10 MiB segment's chunks and the server answers none of them (or
    never reads the upload): a Ctrl-C a second in ends the command within seconds, exit 130,
    where it waited for every stalled request to time out (minutes)."""
    s3_server.reset()
    s3_server.stall += [stall] * 100
    try:
        p = _started(*[a.format(name=tmp_path.name, big=big_partition) for a in args])
        deadline = time.monotonic() + 30  # (a loaded machine: the process may start slowly)
        while len(s3_server.stall) == 100 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(s3_server.stall) < 100, "no request stalled"
        time.sleep(0.5)  # the command is waiting on the stalled request
        assert p.poll() is None
        p.send_signal(signal.SIGINT)
        code, err, took = _ended(p, within=20)
    finally:
        s3_server.release()
    assert code == 130 and err.endswith("klogtool: interrupted\n"), err
    assert err.count("interrupted") == 1
    assert took < 5, took


# -- an object replaced while it is read (issue 43, item 7) ---------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ("verify", "--format", "jsonl", "--deep"),
        ("dump-segments", "--format", "jsonl"),
        ("find", "--format", "jsonl", "--offsets", "0:4999"),  # fetched as the walk goes
    ],
    ids=lambda a: a[0],
)
def test_an_object_replaced_between_its_ranges_is_said_to_have_changed(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
    args: tuple[str, ...],
) -> None:
    """A ~10 MiB segment (two ranged reads) is uploaded again, same size, other values, just
    after its first range was read: the command ends in one line (object-changed, exit 3).
    It read the first chunk of one version and the second of the other: a CRC mismatch at
    the batch across the seam that neither version has, the rest silently mixed."""
    part = tmp_path / "mixed-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(_big_segment(0))
    code, _, err = run("rebuild-index", str(part))
    assert code == 0, err
    uri = s3_server.upload(part, f"mixed/{tmp_path.name}/mixed-0")
    other = _big_segment(0, bytes(reversed(range(256))) * (VALUE // 256))
    assert len(other) == (part / "00000000000000000000.log").stat().st_size > storage.CHUNK
    s3_server.reset()
    s3_server.replace_after.append(
        (f"mixed/{tmp_path.name}/mixed-0/00000000000000000000.log", other)
    )
    try:
        code, out, err = run(*args, uri)
    finally:
        left = list(s3_server.replace_after)
        s3_server.replace_after.clear()
    assert not left  # the object was replaced after its first ranged read
    assert code == 3, (code, err, [o for o in out.splitlines() if "finding" in o][:3])
    assert err == (
        f"klogtool: error: {uri}/00000000000000000000.log: the object changed while it was read"
        f" (its ETag was {_etag(part)}, is {_etag_of(other)}): read it again once it is written"
        " (object-changed)\n"
    )
    assert '"crc_valid":false' not in out and "crc-mismatch" not in out


def _etag_of(data: bytes) -> str:
    import hashlib

    return f'"{hashlib.md5(data).hexdigest()}"'  # an object uploaded in one part


def _etag(part: Path) -> str:
    return _etag_of((part / "00000000000000000000.log").read_bytes())


def test_an_object_uploaded_again_since_it_was_listed_has_changed(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Listed at one size, read at another: the listing is the first read."""
    part = LOGS / "logdir" / "v2-none-0"
    uri = s3_server.upload(part, f"relisted/{tmp_path.name}/v2-none-0")
    s3_server.reset()
    path = storage.path_of(uri)  # listed now
    seg = f"relisted/{tmp_path.name}/v2-none-0/00000000000000000000.log"
    s3_server.client().put_object(Bucket=BUCKET, Key=seg, Body=b"longer" * 1000)
    with pytest.raises(Exception) as e:
        storage.as_path(f"{path}/00000000000000000000.log").read_bytes()
    assert getattr(e.value, "code", None) == "object-changed"
    listed = (part / "00000000000000000000.log").stat().st_size
    assert f"{listed:,} bytes when listed, 6,000 when read" in str(e.value)
