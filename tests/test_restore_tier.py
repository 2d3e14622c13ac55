"""``restore-tier``: a partition directory written from the remote segments of Kafka's
LocalTieredStorage layout, read back by klogtool's readers against the records the test
wrote (with kafka-python's builder), crash-safe like every writer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.aiven import KEY_ID, as_aiven, make_rsa_keys
from support.cli import jsonl, run
from support.processes import KILLED, lock_held_by_another_process, run_crashing
from support.s3 import S3Server, s3_server  # noqa: F401  (the fixture)
from support.tiered import (
    SEG_IDS,
    TOPIC_ID,
    Tp,
    local_tiered_storage,
    segment_record,
    uploaded,
    write_metadata_partition,
)

TP = Tp("orders", TOPIC_ID, 3)
EPOCH_STARTS = {0: 0, 1: 150}


def _broker(tmp_path: Path, *, metadata: bool = True) -> tuple[Path, Path]:
    """A log dir (with the metadata partition when ``metadata``) and the remote partition
    directory: 0-99 uploaded twice (the second copy holds the offsets), 100-249, and an
    upload of 250-260 never finished."""
    log_dir = tmp_path / "kafka-logs"
    log_dir.mkdir()
    # a cluster of its own: another test's log dir beside it is not this broker's
    (log_dir / "meta.properties").write_text(f"version=1\ncluster.id={tmp_path.name}\nnode.id=1\n")
    if metadata:
        write_metadata_partition(
            log_dir,
            [
                *uploaded(TP, SEG_IDS[0], 0, 99, [(0, 0)]),
                *uploaded(TP, SEG_IDS[1], 0, 99, [(0, 0)]),
                *uploaded(TP, SEG_IDS[2], 100, 249, [(0, 100), (1, 150)]),
                segment_record(TP, SEG_IDS[3], 250, 260, [(1, 250)]),
            ],
            partition=7,
        )
    source = local_tiered_storage(
        tmp_path / "remote",
        TP,
        [
            (SEG_IDS[0], 0, 99, [(0, 0)]),
            (SEG_IDS[1], 0, 99, [(0, 0)]),
            (SEG_IDS[2], 100, 249, [(0, 0), (1, 150)]),
            (SEG_IDS[3], 250, 260, [(0, 0), (1, 150)]),
        ],
        EPOCH_STARTS,
    )
    return log_dir, source


def _values(part: Path) -> list[tuple[int, str]]:
    code, out, err = run("find", "--format", "jsonl", "--value-decoder", "utf8", str(part))
    assert code == 0, err
    return [(o["offset"], o["value"]) for o in jsonl(out) if o["type"] == "record"]


def _tree(d: Path) -> dict[str, bytes]:
    """The files under ``d`` (but a .lock: the broker's, or a test's stand-in)."""
    return {
        str(p.relative_to(d)): p.read_bytes()
        for p in sorted(d.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_the_remote_log_is_restored_as_a_partition_the_broker_loads(tmp_path: Path) -> None:
    log_dir, source = _broker(tmp_path)
    code, out, err = run("restore-tier", "--format", "jsonl", str(source), str(log_dir))
    assert code == 0, err
    objs = jsonl(out)
    assert [o["segment_id"] for o in objs if o["type"] == "segment"] == SEG_IDS[1:3]
    (summary,) = [o for o in objs if o["type"] == "summary"]
    assert summary["chosen_by"] == "remote-log metadata (__remote_log_metadata-7)"
    assert (summary["start_offset"], summary["end_offset"]) == (0, 249)
    part = log_dir / "orders-3"
    assert _values(part) == [(o, f"v{o}") for o in range(250)]
    assert sorted(p.name for p in part.iterdir()) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "00000000000000000100.index",
        "00000000000000000100.log",
        "00000000000000000100.timeindex",
        "00000000000000000250.snapshot",
        "leader-epoch-checkpoint",
        "partition.metadata",
    ]
    assert (part / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n1 150\n"
    assert (part / "partition.metadata").read_text() == f"version: 0\ntopic_id: {TOPIC_ID}"
    code, out, err = run("verify", "--format", "jsonl", str(part))
    assert code == 0, out + err
    assert [p.name for p in log_dir.iterdir() if p.name.endswith("-delete")] == []


def test_an_offset_range_takes_the_whole_segments_it_touches(tmp_path: Path) -> None:
    log_dir, source = _broker(tmp_path)
    args = ("restore-tier", "--from-offset", "120", "--topic-id", "AAAAAAAAAAAAAAAAAAAAAg")
    code, out, err = run(*args, str(source), str(log_dir))
    assert code == 0, err
    part = log_dir / "orders-3"
    assert _values(part) == [(o, f"v{o}") for o in range(100, 250)]
    assert (part / "leader-epoch-checkpoint").read_text() == "0\n2\n0 100\n1 150\n"
    assert "AAAAAAAAAAAAAAAAAAAAAg" in (part / "partition.metadata").read_text()
    assert "whole segments: the log starts at 100" in err


def test_without_metadata_overlapping_copies_are_refused(tmp_path: Path) -> None:
    log_dir, source = _broker(tmp_path, metadata=False)
    code, out, err = run("restore-tier", "--format", "jsonl", str(source), str(log_dir))
    assert code == 4 and err.rstrip().endswith("(remote-segments-overlap)"), err
    assert not (log_dir / "orders-3").exists()
    # one copy of 0-99 gone: the rest is taken as it is
    for p in source.glob(f"*-{SEG_IDS[0]}.*"):
        p.unlink()
    for p in source.glob(f"*-{SEG_IDS[3]}.*"):
        p.unlink()
    code, out, err = run("restore-tier", str(source), str(log_dir))
    assert code == 0, err
    assert _values(log_dir / "orders-3") == [(o, f"v{o}") for o in range(250)]


def test_what_is_refused_or_broken_changes_nothing(tmp_path: Path) -> None:
    log_dir, source = _broker(tmp_path)
    (log_dir / "orders-3").mkdir()
    before = _tree(log_dir)
    code, _, err = run("restore-tier", str(source), str(log_dir))
    assert code == 4 and "(destination-not-empty)" in err and _tree(log_dir) == before
    (log_dir / "orders-3").rmdir()
    before = _tree(log_dir)
    with lock_held_by_another_process(log_dir):
        code, _, err = run("restore-tier", str(source), str(log_dir))
    assert code == 4 and "(broker-lock-held)" in err and _tree(log_dir) == before
    # a damaged remote segment: one line naming it and the byte position
    log = source / f"{100:020d}-{SEG_IDS[2]}.log"
    data = bytearray(log.read_bytes())
    data[500] ^= 0xFF
    log.write_bytes(bytes(data))
    code, _, err = run("restore-tier", str(source), str(log_dir))
    assert code == 3 and len(err.strip().splitlines()) == 1, err
    assert str(log) in err and f"remote segment {SEG_IDS[2]} is damaged" in err
    assert _tree(log_dir) == before
    code, out, err = run(
        "restore-tier", "--dry-run", "--format", "jsonl", str(source), str(log_dir)
    )
    assert code == 3  # the dry run reads the segments too


def test_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    log_dir, source = _broker(tmp_path)
    before = _tree(log_dir)
    code, out, err = run("restore-tier", "--dry-run", "--format", "json", str(source), str(log_dir))
    assert code == 0, err
    summary = [o for o in json.loads(out) if o["type"] == "summary"][0]
    assert summary["dry_run"] is True and summary["segments"] == 2
    assert _tree(log_dir) == before


def test_a_restore_killed_anywhere_and_run_again_is_whole(tmp_path: Path) -> None:
    """Killed after each of its file operations in turn: the partition is either absent (only
    a -delete staging directory the broker removes) or whole; run again, it is whole."""
    log_dir, source = _broker(tmp_path)
    args = ("restore-tier", str(source), str(log_dir))
    assert run_crashing(args, tmp_path, None) == 0
    whole = _tree(log_dir / "orders-3")
    n = 1
    while True:
        fresh = tmp_path / f"run{n}"
        fresh.mkdir()
        target, src = _broker(fresh)
        status = run_crashing(("restore-tier", str(src), str(target)), fresh, n)
        if status != KILLED:
            assert status == 0
            break
        part = target / "orders-3"
        assert not part.exists() or _tree(part) == whole, n
        assert run_crashing(("restore-tier", str(src), str(target)), fresh, None) in (0, 4)
        assert _tree(part) == whole, n
        staging = [p for p in target.iterdir() if p.name.endswith("-delete")]
        assert all(not (p / "klogtool-restore-in-progress").exists() for p in staging), n
        n += 1
    assert n > 10


def test_the_remote_partition_may_be_in_object_storage(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    log_dir, source = _broker(tmp_path)
    uri = s3_server.upload(source.parent, f"restore/{tmp_path.name}")
    code, out, err = run("restore-tier", "--format", "jsonl", f"{uri}/{source.name}", str(log_dir))
    assert code == 0, err
    assert _values(log_dir / "orders-3") == [(o, f"v{o}") for o in range(250)]
    (summary,) = [o for o in jsonl(out) if o["type"] == "summary"]
    assert summary["source"].startswith("s3://")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl command")
def test_aivens_layout_restores_the_same_partition(tmp_path: Path) -> None:
    """The same remote segments in Aiven's layout, compressed and encrypted: the partition
    written is byte for byte the one LocalTieredStorage's files give."""
    log_dir, source = _broker(tmp_path)
    code, _, err = run("restore-tier", str(source), str(log_dir))
    assert code == 0, err
    expected = _tree(log_dir / "orders-3")
    shutil.rmtree(log_dir / "orders-3")
    keys = make_rsa_keys(tmp_path)
    aiven = as_aiven(source, tmp_path / "bucket", TP.name, TP.id, TP.partition, keys)
    key_file = tmp_path / "private.pem"
    key_file.write_bytes(keys.private_pem)
    args = ("restore-tier", "--format", "jsonl", "--rsa-private-key", f"{KEY_ID}={key_file}")
    code, out, err = run(*args, str(aiven), str(log_dir))
    assert code == 0, err
    (summary,) = [o for o in jsonl(out) if o["type"] == "summary"]
    assert summary["layout"] == "Aiven tiered storage"
    assert _tree(log_dir / "orders-3") == expected
    # without the key: one line naming the manifest, nothing written
    shutil.rmtree(log_dir / "orders-3")
    before = _tree(log_dir)
    code, _, err = run("restore-tier", str(aiven), str(log_dir))
    assert code == 3 and len(err.strip().splitlines()) == 1, err
    assert ".rsm-manifest" in err and "(decryption-failed)" in err
    assert _tree(log_dir) == before


def test_aivens_layout_in_object_storage_is_read_by_ranges(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    log_dir, source = _broker(tmp_path)
    code, _, err = run("restore-tier", str(source), str(log_dir))
    assert code == 0, err
    expected = _tree(log_dir / "orders-3")
    shutil.rmtree(log_dir / "orders-3")
    aiven = as_aiven(
        source, tmp_path / "bucket", TP.name, TP.id, TP.partition, None
    )  # compressed, not encrypted
    uri = s3_server.upload(tmp_path / "bucket", f"aiven/{tmp_path.name}")
    s3_server.reset()
    partition = f"{uri}/{aiven.parent.name}/{aiven.name}"
    code, _, err = run("restore-tier", partition, str(log_dir))
    assert code == 0, err
    assert _tree(log_dir / "orders-3") == expected
    gets = [r for r in s3_server.requests if r.method == "GET" and r.range is not None]
    assert gets and all(r.path.startswith(f"/aiven/{tmp_path.name}/") for r in gets)
