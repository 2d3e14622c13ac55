"""A realistic broker host, built for the tests (issue 23): two JBOD log dirs named like
partitions (``kafka-logs-1``, ``kafka-logs-2``), every file and directory owned by the broker's
user (a uid the machine need not know) with modes 0640/0750, live partitions (one torn, one
without indexes, one legacy-format), the broker's checkpoints and ``.kafka_cleanshutdown``,
and the directories a host has besides live partitions: ``-delete``, ``-future`` and ``-stray``
partition dirs and ``remote-log-index-cache/``, and a KRaft ``__cluster_metadata-0`` in
``kafka-logs-1`` (a snapshot and the log after it) that holds every live topic, makes
``v2-gzip`` and ``v1-gzip`` (in ``kafka-logs-2``: the metadata log holds for every log dir of
the broker) compacted topics, overrides ``v2-none``'s retention and sets a cluster default.

``python tests/hosts/build.py DIR`` builds one in DIR to look at by hand."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from support.metadata import BROKER, TOPIC, config_record, metadata_batch, topic_record  # noqa: E402
from support.paths import LOGDIR  # noqa: E402
from support.repair import copy_scenario  # noqa: E402

from klogtool.formats.payloads.schema import uuid_to_text  # noqa: E402

KAFKA_UID = KAFKA_GID = 4242
FILE_MODE, DIR_MODE = 0o640, 0o750
UUID = "0123456789abcdef0123456789abcdef"


@dataclass(frozen=True)
class Host:
    root: Path
    log_dirs: tuple[Path, Path]
    live: tuple[Path, ...]  # the live partition dirs
    special: tuple[Path, ...]  # -delete, -future, -stray

    @property
    def torn(self) -> Path:
        return self.log_dirs[0] / "torn-tail-0"


def build_host(root: Path, *, owned: bool = True) -> Host:
    one, two = root / "kafka-logs-1", root / "kafka-logs-2"
    for d in (one, two):
        d.mkdir(parents=True)
        shutil.copy(LOGDIR / "meta.properties", d)
        for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
            shutil.copy(LOGDIR / name, d)
        (d / ".kafka_cleanshutdown").write_bytes(b"")
        (d / "remote-log-index-cache").mkdir()
    live = [
        copy_scenario("torn-tail", one),
        _copy(LOGDIR / "v2-gzip-0", one / "v2-gzip-0"),
        _copy(LOGDIR / "v1-gzip-0", two / "v1-gzip-0"),
        _copy(LOGDIR / "v2-none-0", two / "v2-none-0"),
    ]
    for p in (two / "v2-none-0").glob("*index"):
        p.unlink()  # an index the broker would rebuild
    _metadata(one / "__cluster_metadata-0")
    special = [
        _copy(LOGDIR / "v2-zstd-0", one / f"v2-zstd-0.{UUID}-delete"),
        _copy(LOGDIR / "v2-lz4-0", two / f"v2-lz4-0.{UUID}-future"),
        _copy(LOGDIR / "v2-snappy-0", two / "v2-snappy-0-stray"),
    ]
    if owned:
        for p in [root, *root.rglob("*")]:
            os.chown(p, KAFKA_UID, KAFKA_GID, follow_symlinks=False)
            os.chmod(p, DIR_MODE if p.is_dir() else FILE_MODE)
    return Host(root, (one, two), tuple(live), tuple(special))


def _metadata(d: Path) -> None:
    """The topics' configs as a KRaft host holds them, in a snapshot at offset 5 and the log
    after it."""
    live = ("v2-gzip", "v2-none", "v1-gzip", "torn-tail")
    ids = {t: uuid_to_text(bytes([i + 1]) * 16) for i, t in enumerate(live)}
    snapshot = [topic_record(t, i) for t, i in ids.items()]
    snapshot.append(config_record(BROKER, "", "log.retention.ms", str(30 * 24 * 3_600_000)))
    log = [
        config_record(TOPIC, "v2-gzip", "cleanup.policy", "compact"),
        config_record(TOPIC, "v2-none", "retention.ms", str(3_600_000)),
        # a compacted topic in kafka-logs-2, whose configs are in kafka-logs-1's metadata log
        config_record(TOPIC, "v1-gzip", "cleanup.policy", "compact"),
    ]
    d.mkdir()
    end = len(snapshot)  # the snapshot holds offsets 0..end-1
    (d / "00000000000000000000.log").write_bytes(
        metadata_batch(0, snapshot) + metadata_batch(end, log)
    )
    (d / f"{end:020d}-0000000001.checkpoint").write_bytes(metadata_batch(0, snapshot))


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def foreign(host: Host) -> list[str]:
    """Every entry that is no longer the broker user's with the broker's modes."""
    bad = []
    for p in [host.root, *host.root.rglob("*")]:
        st = os.lstat(p)
        want = DIR_MODE if p.is_dir() else FILE_MODE
        if (st.st_uid, st.st_gid, st.st_mode & 0o7777) != (KAFKA_UID, KAFKA_GID, want):
            bad.append(f"{p.relative_to(host.root)} {st.st_uid}:{st.st_gid} {oct(st.st_mode)}")
    return bad


if __name__ == "__main__":
    built = build_host(Path(sys.argv[1]), owned=os.geteuid() == 0)
    print(f"built {built.root}: {', '.join(str(d) for d in built.log_dirs)}")
