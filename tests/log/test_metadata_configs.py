"""Topic configs from a KRaft host's ``__cluster_metadata-0`` (klogtool.log.metadata): the
replay rules, and retention-sweep, compact and explain using them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.cli import run
from support.metadata import (
    BROKER,
    TOPIC,
    config_record,
    metadata_batch,
    remove_topic_record,
    topic_record,
)
from support.paths import CORPUS, needs_corpus
from support.rewrite import T0, write_checkpoints, write_partition

from klogtool.formats.batch import Record
from klogtool.formats.payloads.schema import uuid_to_text
from klogtool.formats.v2 import encode_batch
from klogtool.log.metadata import replay

pytestmark = pytest.mark.usefixtures("no_fsync")

HOUR = 3_600_000
IDS = {
    name: uuid_to_text(bytes([i + 1]) * 16) for i, name in enumerate(("schemas", "orders", "gone"))
}


def topic(name: str) -> bytes:
    return topic_record(name, IDS[name])


def remove(name: str) -> bytes:
    return remove_topic_record(IDS[name])


config = config_record
batch = metadata_batch


def metadata_dir(logdir: Path) -> Path:
    """A snapshot at offset 5 holding everything before it (and a stale log record the
    snapshot replaces), then log records 5..11."""
    d = logdir / "__cluster_metadata-0"
    d.mkdir(parents=True)
    before = [  # offsets 0..4: replaced by the snapshot
        topic("schemas"),
        config(TOPIC, "schemas", "cleanup.policy", "delete"),
        config(TOPIC, "schemas", "retention.ms", "1"),
        topic("orders"),
        topic("gone"),
    ]
    snapshot = [
        topic("schemas"),
        topic("orders"),
        topic("gone"),
        config(TOPIC, "schemas", "cleanup.policy", "compact"),
        config(TOPIC, "gone", "cleanup.policy", "compact"),
        config(BROKER, "", "log.retention.ms", str(5 * HOUR)),  # cluster default
    ]
    after = [
        config(TOPIC, "orders", "retention.ms", str(2 * HOUR)),  # 5
        config(TOPIC, "orders", "retention.ms", str(3 * HOUR)),  # 6: a later record wins
        config(TOPIC, "schemas", "min.cleanable.dirty.ratio", "0.01"),  # 7
        config(TOPIC, "orders", "segment.bytes", "1000"),  # 8
        config(TOPIC, "orders", "segment.bytes", None),  # 9: null deletes
        remove("gone"),  # 10
        config(BROKER, "1", "log.retention.ms", str(4 * HOUR)),  # 11: broker 1's default
    ]
    log = batch(0, before) + batch(5, after)
    (d / "00000000000000000000.log").write_bytes(log)
    (d / "00000000000000000005-0000000001.checkpoint").write_bytes(batch(0, snapshot))
    return d


def test_replay_rules(tmp_path: Path) -> None:
    state = replay(metadata_dir(tmp_path))
    assert state.snapshot is not None and state.last_offset == 11
    values = {t: {k: v.value for k, v in c.items()} for t, c in state.topics.items()}
    # the snapshot replaces offsets 0..4; a later record wins; null deletes; removed topic goes
    assert values == {
        "schemas": {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"},
        "orders": {"retention.ms": str(3 * HOUR)},
    }
    assert state.topics["schemas"]["cleanup.policy"].where == (
        "metadata snapshot 00000000000000000005-0000000001.checkpoint"
    )
    assert state.topics["orders"]["retention.ms"].where == "metadata log at offset 6"
    assert state.defaults() == state.cluster_defaults  # no node id: no broker's own defaults
    assert state.defaults()["log.retention.ms"].value == str(5 * HOUR)
    state = replay(tmp_path / "__cluster_metadata-0", node_id="1")
    assert state.defaults()["log.retention.ms"].value == str(4 * HOUR)


def build(logdir: Path, name: str) -> Path:
    """Four segments of ten records, segment i at T0 + i hours."""
    part = logdir / name
    segs = []
    for i, base in enumerate((0, 10, 20, 30)):
        recs = [
            Record(o, T0 + i * HOUR + o, b"k%d" % (o % 3), b"v") for o in range(base, base + 10)
        ]
        segs.append((base, [encode_batch(recs)]))
    write_partition(part, segs)
    t = name.rsplit("-", 1)[0]
    write_checkpoints(logdir, replication_offset_checkpoint={(t, 0): 40})
    return part


def kept_and_deleted(out: str) -> list[tuple[str, int, str]]:
    objs = [json.loads(line) for line in out.splitlines()]
    return [
        (Path(o["partition"]).name, o["base_offset"], o["action"])
        for o in objs
        if o["type"] == "segment"
    ]


def test_retention_sweep_keeps_a_compacted_topics_segments(tmp_path: Path) -> None:
    logdir = tmp_path / "data"
    build(logdir, "schemas-0")
    metadata_dir(logdir)
    now = str(T0 + 30 * 24 * HOUR)
    code, out, err = run(
        "retention-sweep", str(logdir), "--dry-run", "--now", now, "--format", "jsonl", cwd=logdir
    )
    assert code == 0, err
    assert {a for _p, _b, a in kept_and_deleted(out)} == {"keep"}
    # without the metadata log the policy is not known: refused, unless Kafka's defaults
    # (delete) are taken on purpose
    shutil.rmtree(logdir / "__cluster_metadata-0")
    args = ("retention-sweep", str(logdir), "--dry-run", "--now", now, "--format", "jsonl")
    code, out, err = run(*args, cwd=logdir)
    assert code == 4 and "(config-assumed)" in err, err
    code, out, err = run(*args, "--assume-defaults", cwd=logdir)
    assert code == 0, err
    assert "delete" in {a for _p, _b, a in kept_and_deleted(out)}


def test_retention_ms_of_the_metadata_log_and_flags_beat_it(tmp_path: Path) -> None:
    logdir = tmp_path / "data"
    build(logdir, "orders-0")
    meta = metadata_dir(tmp_path / "controller")  # on another disk: --metadata-dir
    # orders: retention.ms 3h (offset 6): at T0 + 4h10m segments 0 (max T0+9ms) goes,
    # segment 1 (max T0+1h+19ms) too; 2 (T0+2h) is younger than 3h? 4h10m-2h = 2h10m: kept
    now = str(T0 + 4 * HOUR + 10 * 60_000)
    args = ("retention-sweep", str(logdir / "orders-0"), "--dry-run", "--now", now)
    code, out, err = run(*args, "--format", "jsonl", "--metadata-dir", str(meta), cwd=logdir)
    assert code == 0, err
    assert [a for _p, _b, a in kept_and_deleted(out)] == ["delete", "delete", "keep", "keep"]
    code, out, err = run(
        *args,
        "--format",
        "jsonl",
        "--metadata-dir",
        str(meta),
        "--retention-ms",
        str(HOUR * 100),
        cwd=logdir,
    )
    assert code == 0, err
    assert [a for _p, _b, a in kept_and_deleted(out)] == ["keep"] * 4


def test_compact_takes_the_policy_and_ratio_from_the_metadata_log(tmp_path: Path) -> None:
    logdir = tmp_path / "data"
    build(logdir, "schemas-0")
    build(logdir, "orders-0")
    metadata_dir(logdir)
    code, out, err = run(
        "compact",
        str(logdir),
        "--dry-run",
        "--now",
        str(T0 + 100 * HOUR),
        "--format",
        "jsonl",
        cwd=logdir,
    )
    assert code == 0, err
    parts = {
        Path(json.loads(line)["partition"]).name
        for line in out.splitlines()
        if '"type":"partition"' in line
    }
    assert parts == {"schemas-0"}
    code, out, err = run(
        "explain",
        str(logdir / "schemas-0"),
        "--now",
        str(T0 + 100 * HOUR),
        "--format",
        "json",
        cwd=logdir,
    )
    assert code == 0, err
    objs = json.loads(out)
    summary = [o for o in objs if o["type"] == "partition_explain"][0]
    src = {c["key"]: c for c in summary["config_sources"]}
    assert src["min.cleanable.dirty.ratio"]["value"] == "0.01"
    assert src["min.cleanable.dirty.ratio"]["source"] == "metadata log at offset 7"
    assert src["cleanup.policy"]["source"].startswith("metadata snapshot ")
    assert src["retention.ms"]["value"] == str(5 * HOUR)  # the cluster default
    assert src["segment.bytes"]["source"] == "Kafka's default (not set in the metadata log)"
    assert not any(c["assumed"] for c in src.values())


def test_explain_without_metadata_marks_defaults_assumed(tmp_path: Path) -> None:
    logdir = tmp_path / "data"
    part = build(logdir, "orders-0")
    code, out, err = run(
        "explain",
        str(part),
        "--now",
        str(T0 + 100 * HOUR),
        "--config",
        "orders=retention.ms=5",
        cwd=logdir,
    )
    assert code == 0, err
    assert "config retention.ms=5 (--config orders=retention.ms=5)" in out
    assert "config cleanup.policy=delete (Kafka's default, assumed" in out
    assert "--config orders=cleanup.policy=VALUE" in out
    (note,) = [line for line in out.splitlines() if "never compacts this topic" in line]
    assert "(Kafka's default, assumed: no KRaft metadata log" in note


@needs_corpus
def test_corpus_schemas_topic_is_compacted_by_its_metadata_log(tmp_path: Path) -> None:
    src = CORPUS / "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data"
    if not (src / "__cluster_metadata-0").is_dir():
        pytest.skip("corpus log dir missing")
    logdir = tmp_path / "data"
    logdir.mkdir()
    for name in ("__cluster_metadata-0", "_schemas-0"):
        shutil.copytree(src / name, logdir / name)
    state = replay(logdir / "__cluster_metadata-0")
    assert state.topics["_schemas"]["cleanup.policy"].value == "compact"
    code, out, err = run(
        "retention-sweep",
        str(logdir / "_schemas-0"),
        "--dry-run",
        "--now",
        "2100-01-01T00:00:00Z",
        "--format",
        "jsonl",
        cwd=logdir,
    )
    assert code == 0, err
    assert {a for _p, _b, a in kept_and_deleted(out)} == {"keep"}


def test_an_unreadable_metadata_log_is_an_input_error(tmp_path: Path) -> None:
    logdir = tmp_path / "data"
    part = build(logdir, "orders-0")
    d = metadata_dir(logdir)
    (d / "00000000000000000000.log").unlink()
    (d / "00000000000000000000.log").mkdir()  # reading it fails with EISDIR
    code, _out, err = run("explain", str(part), "--now", str(T0), cwd=logdir)
    assert code == 3, err
    assert "cannot read the metadata log" in err


def test_precedence_flags_over_metadata_over_properties_file(tmp_path: Path) -> None:
    from klogtool.log.partition import PlanInputs
    from klogtool.log.topicconfig import parse_config_args

    logdir = tmp_path / "data"
    part = build(logdir, "orders-0")
    metadata_dir(logdir)
    props = tmp_path / "server.properties"
    props.write_text("log.retention.ms=1\nlog.cleaner.min.cleanable.ratio=0.2\n")
    inputs = PlanInputs(parse_config_args([str(props)]), T0)
    cfg = inputs.config_of("orders", part)
    assert cfg.retention_ms == 3 * HOUR  # the topic's own config in the metadata log
    assert cfg.min_cleanable_dirty_ratio == 0.2  # not in the metadata log: the file's
    assert inputs.sources_of("orders", part)["retention.ms"] == "metadata log at offset 6"
    cfg = inputs.config_of("other", part)
    assert cfg.retention_ms == 5 * HOUR  # the cluster's dynamic default beats the file
    inputs = PlanInputs(parse_config_args([str(props), "orders=retention.ms=7"]), T0)
    assert inputs.config_of("orders", part).retention_ms == 7
    inputs = PlanInputs(parse_config_args([]), T0, overrides={"retention_ms": 9})
    assert inputs.config_of("orders", part).retention_ms == 9
    assert inputs.sources_of("orders", part)["retention.ms"] == "--retention-ms"
