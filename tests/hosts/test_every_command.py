"""Every command on a realistic broker host (tests/hosts/build.py), run as root: each gives
its documented answer, and no file or directory changes owner or mode."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.cli import jsonl, run
from support.extras import skip_unless_pyarrow

from hosts.build import Host, build_host, foreign

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="giving files to another user needs root (as on a broker host)"
)

# (command line with {one}/{two}/{torn}/{out} placeholders, the exit codes it may give)
COMMANDS = [
    (["describe", "{one}", "{two}"], {0}),
    (["verify", "{one}", "{two}"], {1}),  # the torn partition
    (["stats", "{one}", "{two}"], {0}),
    (["dump-segments", "{two}"], {0, 1}),
    (["find", "--key", "k", "{one}", "{two}"], {0, 1}),
    (["transactions", "{one}", "{two}"], {0, 1}),
    (["explain", "{two}/v2-none-0"], {0}),
    (["diff", "{one}/v2-gzip-0", "{one}/v2-gzip-0"], {0}),
    (["export", "--to", "jsonl", "{out}", "{two}"], {0}),
    (["truncate-recovery", "{one}", "{two}"], {0}),
    (["rebuild-index", "{two}"], {0}),
    (["compact", "--high-watermark", "log-end", "{one}"], {0}),
    (["retention-sweep", "--retention-ms", "1", "--high-watermark", "log-end", "{two}"], {0}),
    (["convert-format", "--in-place", "--to-magic", "2", "{two}/v1-gzip-0"], {0}),
]


@pytest.fixture
def host(tmp_path: Path) -> Host:
    return build_host(tmp_path / "host")


@pytest.mark.parametrize("args,codes", COMMANDS, ids=lambda c: c[0] if isinstance(c, list) else "")
def test_a_command_on_a_broker_host(
    host: Host, tmp_path: Path, args: list[str], codes: set[int]
) -> None:
    one, two = host.log_dirs
    argv = [
        a.format(one=one, two=two, torn=host.torn, out=tmp_path / "out")  # noqa: RUF027
        for a in args
    ]
    special_before = {p: sorted(c.name for c in p.iterdir()) for p in host.special}
    skip_unless_pyarrow(argv)
    code, _out, err = run(*argv, cwd=tmp_path)
    assert code in codes, err
    assert "Traceback" not in err and "internal error" not in err
    assert foreign(host) == []
    # the -delete, -future and -stray dirs are never rewritten by accident
    assert {p: sorted(c.name for c in p.iterdir()) for p in host.special} == special_before


def test_the_hosts_own_topic_configs_decide(host: Host, tmp_path: Path) -> None:
    """The metadata log in kafka-logs-1 makes v2-gzip a compacted topic: retention-sweep of the
    log dir keeps every one of its segments (Kafka's default, delete, would remove them), and
    explain says where its policy came from."""
    one = host.log_dirs[0]
    gzip = one / "v2-gzip-0"
    before = sorted(p.name for p in gzip.iterdir())
    args = ["retention-sweep", "--high-watermark", "log-end", "--now", "2030-01-01T00:00:00Z"]
    code, _out, err = run(*args, str(one), cwd=tmp_path)
    assert code == 0, err
    assert sorted(p.name for p in gzip.iterdir()) == before
    code, out, err = run("explain", "--format", "jsonl", str(gzip), cwd=tmp_path)
    assert code == 0, err
    summary = [o for o in jsonl(out) if o["type"] == "partition_explain"][-1]
    assert summary["cleanup_policy"] == "compact"
    assert "metadata" in json.dumps(summary["config_sources"])
    code, out, err = run("stats", "--format", "jsonl", str(gzip), str(one / "torn-tail-0"))
    assert code == 0, err
    policies = {
        o["path"]: (
            o["keys"]["compaction"]["cleanup_policy"],
            o["keys"]["compaction"]["cleanup_policy_source"],
        )
        for o in jsonl(out)
        if o["scope"] == "partition"
    }
    assert policies[str(gzip)] == ("compact", "metadata log at offset 5")
    assert policies[str(one / "torn-tail-0")] == (
        "delete",
        "Kafka's default (not set in the metadata log)",
    )
    assert foreign(host) == []
