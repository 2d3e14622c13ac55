"""A JBOD KRaft broker keeps its metadata log in one log dir (``metadata.log.dir``) and topics
in all of them (issue 37): the topic configs of that log hold for the partitions of every log
dir of the same broker, and no writing command deletes or compacts a partition by a
``cleanup.policy`` or retention it could only assume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.cli import jsonl, run
from support.metadata import TOPIC, config_record, metadata_batch, topic_record
from support.rewrite import T0, write_checkpoints, write_partition

from klogtool.formats.batch import Record
from klogtool.formats.payloads.schema import uuid_to_text
from klogtool.formats.v2 import encode_batch

pytestmark = pytest.mark.usefixtures("no_fsync")

HOUR = 3_600_000
LATER = str(T0 + 30 * 24 * HOUR)  # every segment is past any retention.ms the tests give
COMPACTED = ("connect-configs", "_confluent-command")
TOPICS = (*COMPACTED, "orders")


def meta_properties(log_dir: Path, *, node: int = 1, cluster: str = "c1") -> None:
    directory = uuid_to_text(bytes([len(log_dir.parts)]) * 16)  # KIP-858: one per log dir
    (log_dir / "meta.properties").write_text(
        f"version=1\ncluster.id={cluster}\nnode.id={node}\ndirectory.id={directory}\n"
    )


def partition(log_dir: Path, topic: str) -> Path:
    """Three segments of ten records (keys repeat: something to compact), an hour apart."""
    part = log_dir / f"{topic}-0"
    segments = []
    for i, base in enumerate((0, 10, 20)):
        records = [
            Record(o, T0 + i * HOUR + o, b"k%d" % (o % 3), b"v%d" % o)
            for o in range(base, base + 10)
        ]
        segments.append((base, [encode_batch(records)]))
    write_partition(part, segments)
    return part


def metadata_log(log_dir: Path) -> None:
    """The controller's record of the topics: the compacted ones, and orders at 1 hour."""
    records = [topic_record(t, uuid_to_text(bytes([i + 1]) * 16)) for i, t in enumerate(TOPICS)]
    records += [config_record(TOPIC, t, "cleanup.policy", "compact") for t in COMPACTED]
    records.append(config_record(TOPIC, "orders", "retention.ms", str(HOUR)))
    d = log_dir / "__cluster_metadata-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(metadata_batch(0, records))


def host(root: Path, metadata_in: Path | None = None) -> tuple[Path, Path]:
    """Two log dirs of broker 1 on two disks (``/disk1/kafka-logs``, ``/disk2/kafka-logs``):
    every topic's partition in the second, the metadata log in ``metadata_in`` (None: none,
    as on a ZooKeeper host)."""
    one, two = root / "disk1" / "kafka-logs", root / "disk2" / "kafka-logs"
    for d in (one, two):
        d.mkdir(parents=True)
        meta_properties(d)
    for t in TOPICS:
        partition(two, t)
    write_checkpoints(two, replication_offset_checkpoint={(t, 0): 30 for t in TOPICS})
    if metadata_in is not None:
        metadata_log(metadata_in)
    return one, two


def contents(part: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(part.iterdir())}


SWEEP = ["retention-sweep", "--high-watermark", "log-end", "--now", LATER]
COMPACT = ["compact", "--high-watermark", "log-end", "--now", LATER]


def test_the_metadata_log_of_another_log_dir_keeps_compacted_topics(tmp_path: Path) -> None:
    """The defect: `retention-sweep l0 l1` applied l0's metadata log to l0 only, assumed
    delete for l1 and emptied its compacted topics."""
    one, two = host(tmp_path, metadata_in=tmp_path / "disk1" / "kafka-logs")
    kept = {t: contents(two / f"{t}-0") for t in COMPACTED}
    for args in ([str(one), str(two)], [str(two)]):  # given, or found beside it
        code, out, err = run(*SWEEP, "--format", "jsonl", *args, cwd=tmp_path)
        assert code == 0, err
        for t in COMPACTED:
            assert contents(two / f"{t}-0") == kept[t]
        swept = {Path(o["partition"]).name: o for o in jsonl(out) if o["type"] == "partition"}
        assert swept["connect-configs-0"]["cleanup_policy"] == "compact"
    # orders: the metadata log's retention.ms of one hour deleted what the time rule allows
    assert sorted(p.name for p in (two / "orders-0").glob("*.log")) == ["00000000000000000030.log"]
    code, out, err = run("explain", "--format", "jsonl", str(two / "connect-configs-0"))
    assert code == 0, err
    summary = [o for o in jsonl(out) if o["type"] == "partition_explain"][-1]
    (policy,) = [c for c in summary["config_sources"] if c["key"] == "cleanup.policy"]
    assert policy["source"] == "metadata log at offset 3" and not policy["assumed"]


def test_log_dirs_far_apart_share_the_metadata_log_when_both_are_given(tmp_path: Path) -> None:
    one, two = tmp_path / "a" / "b" / "c" / "meta", tmp_path / "x" / "logs"
    for d in (one, two):
        d.mkdir(parents=True)
        meta_properties(d)
    metadata_log(one)
    part = partition(two, "connect-configs")
    before = contents(part)
    code, _out, err = run(*SWEEP, str(two), cwd=tmp_path)
    assert code == 4 and "(config-assumed)" in err, err  # not nearby: not found alone
    code, _out, err = run(*SWEEP, str(one), str(two), cwd=tmp_path)
    assert code == 0, err
    assert contents(part) == before


def test_another_brokers_metadata_log_is_not_taken(tmp_path: Path) -> None:
    one, two = host(tmp_path, metadata_in=tmp_path / "disk1" / "kafka-logs")
    meta_properties(one, node=2)  # the metadata log beside it is broker 2's
    before = {t: contents(two / f"{t}-0") for t in TOPICS}
    code, _out, err = run(*SWEEP, str(one), str(two), cwd=tmp_path)
    assert code == 1, err
    assert {t: contents(two / f"{t}-0") for t in TOPICS} == before
    assert err.count("(config-assumed)") == 0  # skipped partitions are notices, not errors
    assert err.count("would only be assumed") == len(TOPICS)


@pytest.mark.parametrize("command", [SWEEP, COMPACT], ids=["retention-sweep", "compact"])
def test_no_partition_is_rewritten_by_an_assumed_config(tmp_path: Path, command: list[str]) -> None:
    """The rule, for every writing command that deletes or compacts by a topic's config:
    without a metadata log or an option that gives the value, the partition is refused with
    a one-line reason naming the options that supply it; --assume-defaults goes ahead."""
    _one, two = host(tmp_path, metadata_in=None)
    before = {t: contents(two / f"{t}-0") for t in TOPICS}
    code, _out, err = run(*command, str(two), cwd=tmp_path)
    assert code == 1, err
    assert {t: contents(two / f"{t}-0") for t in TOPICS} == before
    lines = [line for line in err.splitlines() if "would only be assumed" in line]
    assert len(lines) == len(TOPICS), err
    for line in lines:
        assert "--metadata-dir" in line and "--config" in line and "--assume-defaults" in line
        assert "no KRaft metadata log (__cluster_metadata-0) found" in line
    # one named partition: refused for safety, exit 4, one line
    code, _out, err = run(*command, str(two / "orders-0"), cwd=tmp_path)
    assert code == 4 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("klogtool: error: ") and err.strip().endswith("(config-assumed)")
    assert contents(two / "orders-0") == before["orders"]
    # the operator takes Kafka's defaults: the partitions change
    code, _out, err = run(*command, "--assume-defaults", str(two / "orders-0"), cwd=tmp_path)
    assert code == 0, err
    assert contents(two / "orders-0") != before["orders"]


def test_values_given_by_the_operator_are_not_assumed(tmp_path: Path) -> None:
    _one, two = host(tmp_path, metadata_in=None)
    orders = two / "orders-0"
    before = contents(orders)
    # only the log start offset rule: it rests on no topic config
    code, _out, err = run(
        *SWEEP, "--retention-ms", "-1", "--log-start-offset", "10", str(orders), cwd=tmp_path
    )
    assert code == 0, err
    assert sorted(p.name for p in orders.glob("*.log"))[0] == "00000000000000000010.log"
    # the time rule: the policy, and whether the topic is tiered (a tiered topic's disk
    # keeps what is not uploaded), each given or refused
    code, _out, err = run(*SWEEP, "--retention-ms", str(HOUR), str(orders), cwd=tmp_path)
    assert code == 4, err
    assert "cleanup.policy and remote.storage.enable of orders would only be assumed" in err
    policy = ("--config", "orders=cleanup.policy=delete")
    code, _out, err = run(*SWEEP, "--retention-ms", str(HOUR), *policy, str(orders), cwd=tmp_path)
    assert code == 4 and "remote.storage.enable of orders would only be assumed" in err, err
    code, _out, err = run(
        *SWEEP,
        "--retention-ms",
        str(HOUR),
        *policy,
        "--config",
        "orders=remote.storage.enable=false",
        str(orders),
        cwd=tmp_path,
    )
    assert code == 0, err
    assert contents(orders) != before
    assert sorted(p.name for p in orders.glob("*.log")) == ["00000000000000000030.log"]


def test_nothing_to_delete_needs_no_config(tmp_path: Path) -> None:
    """A sweep that deletes nothing by a topic config (every segment younger than the
    assumed 7 days) is not refused: nothing rests on the guess."""
    _one, two = host(tmp_path, metadata_in=None)
    code, out, err = run(
        "retention-sweep", "--now", str(T0 + 3 * HOUR), "--format", "jsonl", str(two / "orders-0")
    )
    assert code == 0, err
    assert {o["action"] for o in jsonl(out) if o["type"] == "segment"} == {"keep"}


def test_compact_says_which_partitions_it_skipped_and_why(tmp_path: Path) -> None:
    _one, two = host(tmp_path, metadata_in=tmp_path / "disk1" / "kafka-logs")
    code, out, err = run("-v", *COMPACT, "--format", "jsonl", str(two), cwd=tmp_path)
    assert code == 0, err
    compacted = {Path(o["partition"]).name for o in jsonl(out) if o["type"] == "partition"}
    assert compacted == {f"{t}-0" for t in COMPACTED}
    assert "orders-0: skipped: cleanup.policy of orders does not contain compact" in err
    shutil.rmtree(tmp_path / "disk1" / "kafka-logs" / "__cluster_metadata-0")
    code, out, err = run(*COMPACT, "--format", "jsonl", str(two), cwd=tmp_path)
    assert code == 1 and [o for o in jsonl(out) if o["type"] == "partition"] == [], err
    assert err.count("skipped: cleanup.policy of") == len(TOPICS)  # said without -v
    summary = json.loads(out.splitlines()[-1])
    assert summary["partitions"] == 0
