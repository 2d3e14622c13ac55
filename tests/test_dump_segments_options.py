"""``klogtool dump-segments``: kafka-dump-log.sh's option names, ``--decoder none`` on control
records, the text format of index and checkpoint entries."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import jsonl, run

TXN0 = "logdir/txn-0/00000000000000000000.log"  # offset 8: an ABORT marker, 10: a COMMIT


# -- --decoder none ------------------------------------------------------------------------------
def test_decoder_none_shows_a_control_records_raw_key_and_value() -> None:
    """--decoder none decodes nothing, control records included: their raw bytes show."""
    code, out, _ = run(
        "dump-segments", "--format", "jsonl", "--print-data", "--decoder", "none",
        "--offsets", "8:10", TXN0,
    )  # fmt: skip
    assert code == 0
    recs = {o["offset"]: o for o in jsonl(out) if o["type"] == "record"}
    marker = recs[8]
    assert "control" not in marker
    # a control key: version 0, type 0 (ABORT); the value: version 0, coordinator epoch 7
    assert (marker["key"], marker["value"]) == ("AAAAAA==", "AAAAAAAH")
    assert recs[10]["key"] == "AAAAAQ==" and "control" not in recs[10]  # COMMIT
    code, out, _ = run(
        "dump-segments", "--print-data", "--decoder", "none", "--key-decoder", "hex",
        "--offsets", "8:8", TXN0,
    )  # fmt: skip
    line = [ln for ln in out.splitlines() if ln.startswith("  offset 8 ")][0]
    assert "control" not in line and "key: 00000000  value: 000000000007" in line
    # the default still decodes them
    code, out, _ = run(
        "dump-segments", "--format", "jsonl", "--print-data", "--offsets", "8:8", TXN0
    )
    (marker,) = [o for o in jsonl(out) if o["type"] == "record"]
    assert marker["control"]["type"] == "ABORT" and "key" not in marker


# -- kafka-dump-log.sh's options -----------------------------------------------------------------
OFFSETS0 = "logdir/__consumer_offsets-0/00000000000000000000.log"
TXNLOG0 = "logdir/__transaction_state-0/00000000000000000000.log"
TXN0_INDEX = "logdir/txn-0/00000000000000000000.index"
TXN0_TIMEINDEX = "logdir/txn-0/00000000000000000000.timeindex"


def _same(alias: list[str], own: list[str], fmt: str = "jsonl") -> str:
    """Runs both command lines: the same stdout and exit status, the alias's stderr holds the
    other's; returns what the alias's stderr says beyond it (its notes)."""
    code_a, out_a, err_a = run("dump-segments", "--format", fmt, *alias)
    code_o, out_o, err_o = run("dump-segments", "--format", fmt, *own)
    assert (code_a, out_a) == (code_o, out_o), (alias, own)
    assert out_a
    assert err_a.endswith(err_o)
    return err_a.removesuffix(err_o)


def test_kafka_dump_log_option_names_are_hidden_aliases() -> None:
    from klogtool.commands.dump_segments import command

    aliases = {
        "--files", "--print-data-log", "--offsets-decoder", "--transaction-log-decoder",
        "--cluster-metadata-decoder", "--remote-log-metadata-decoder",
        "--share-group-state-decoder", "--key-decoder-class", "--value-decoder-class",
        "--max-message-size", "--skip-record-metadata",
    }  # fmt: skip
    options = {o: p for p in command.params for o in p.opts}
    assert aliases <= set(options)
    assert all(getattr(options[a], "hidden", False) for a in aliases)
    # kafka-dump-log.sh's others are klogtool's own, spelled alike
    for own in ("--deep-iteration", "--max-bytes", "--index-sanity-check", "--verify-index-only"):
        assert not getattr(options[own], "hidden", False)
    code, out, _ = run("dump-segments", "--help")
    assert code == 0 and "--files FILE" not in out and "--max-message-size INTEGER" not in out


def test_files_is_a_comma_separated_list_of_paths() -> None:
    err = _same(["--files", f"{TXN0},{TXN0_INDEX}", "--files", TXN0_TIMEINDEX],
                [TXN0, TXN0_INDEX, TXN0_TIMEINDEX])  # fmt: skip
    assert err == ""
    assert _same([f"--files={TXN0}"], [TXN0], "kafka") == ""
    code, _, err = run("dump-segments")  # neither PATH nor --files
    assert code == 2 and "Missing argument 'PATH...'" in err


def test_print_data_log_is_print_data() -> None:
    assert _same(["--files", TXN0, "--print-data-log"], [TXN0, "--print-data"], "kafka") == ""
    assert _same(["--print-data-log", TXN0], [TXN0, "--print-data"]) == ""


def test_kafka_decoder_flags_are_klogtools_decoders(tmp_path: Path) -> None:
    from support.paths import LOGS

    for flag, decoder in (
        ("--offsets-decoder", "consumer-offsets"),
        ("--transaction-log-decoder", "transaction-state"),
        ("--cluster-metadata-decoder", "cluster-metadata"),
        ("--share-group-state-decoder", "share-group-state"),
        ("--remote-log-metadata-decoder", "remote-log-metadata"),
    ):
        # as kafka-dump-log.sh's, each flag prints the payloads
        assert _same([flag, TXN0], ["--print-data", "--decoder", decoder, TXN0]) == ""
    # on a copy outside its partition directory (no auto decoder), the flag decodes
    for flag, src in (("--offsets-decoder", OFFSETS0), ("--transaction-log-decoder", TXNLOG0)):
        copy = tmp_path / "00000000000000000000.log"
        copy.write_bytes((LOGS / src).read_bytes())
        code, out, _ = run("dump-segments", "--format", "jsonl", "--files", str(copy), flag)
        recs = [o for o in jsonl(out) if o["type"] == "record"]
        assert recs and all(isinstance(r["key"], dict) and "type" in r["key"] for r in recs)
    code, _, err = run("dump-segments", "--offsets-decoder", "--decoder", "none", TXN0)
    assert code == 2 and "--offsets-decoder contradicts --decoder none" in err
    code, _, err = run("dump-segments", "--offsets-decoder", "--transaction-log-decoder", TXN0)
    assert code == 2 and "exclude each other" in err


def test_decoder_classes() -> None:
    # without a class name or with StringDecoder: kafka-dump-log.sh's default, UTF-8 text
    for args in (
        ["--key-decoder-class", "--value-decoder-class"],
        ["--key-decoder-class=kafka.serializer.StringDecoder"],
        [
            "--value-decoder-class",
            "org.apache.kafka.tools.api.StringDecoder",
            "--key-decoder-class",
        ],
    ):
        assert (
            _same([*args, "--files", TXN0], ["--print-data", "--key-decoder", "utf8", TXN0]) == ""
        )
    err = _same(["--value-decoder-class", "StringDecoder", TXN0],
                ["--print-data", "--value-decoder", "utf8", TXN0])  # fmt: skip
    assert err == ""
    # klogtool's own option wins
    err = _same(["--key-decoder-class", "--key-decoder", "hex", TXN0],
                ["--print-data", "--key-decoder", "hex", TXN0])  # fmt: skip
    assert err == ""
    # a class klogtool cannot load: UTF-8 text, and a note
    err = _same(["--key-decoder-class", "kafka.serializer.LongDecoder", TXN0],
                ["--print-data", "--key-decoder", "utf8", TXN0])  # fmt: skip
    assert err.splitlines() == [
        "klogtool: warning: --key-decoder-class kafka.serializer.LongDecoder: klogtool loads "
        "no decoder classes; shown as UTF-8 text (--key-decoder utf8|base64|hex|json)"
    ]


def test_max_message_size_is_accepted_and_ignored_with_a_note() -> None:
    err = _same(["--max-message-size", "100", "--deep-iteration", TXN0], ["--deep-iteration", TXN0])
    assert len(err.splitlines()) == 1 and "--max-message-size: ignored" in err


def test_skip_record_metadata_prints_only_the_payloads() -> None:
    code, out, err = run(
        "dump-segments", "--format", "kafka", "--files", TXN0, "--skip-record-metadata",
        "--offsets", "8:9",
    )  # fmt: skip
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[2].startswith("baseOffset: 8 ") and lines[4].startswith("baseOffset: 9 ")
    # as kafka-dump-log.sh: a control record's line is empty, a record's has its payloads
    assert (lines[3], lines[5]) == ("", "| key: 2000-9 payload: txn-value-9")
    code, out, _ = run(
        "dump-segments", "--format", "text", "--skip-record-metadata", "--offsets", "8:9", TXN0
    )
    lines = out.splitlines()
    assert lines[3] == "  key: 2000-9  value: txn-value-9" and len(lines) == 4
    assert "offset 8" not in out and "control" in lines[1]  # the batch line, not a record
    code, out, err = run(
        "dump-segments", "--format", "jsonl", "--skip-record-metadata", "--offsets", "9:9", TXN0
    )
    assert "keep all their fields" in err
    assert [o["key"] for o in jsonl(out) if o["type"] == "record"] == ["MjAwMC05"]


def test_kafka_dump_log_options_switch_to_its_output_unless_format_is_given() -> None:
    """A command line written for kafka-dump-log.sh gets its lines: each of its own option
    names gives --format kafka's output, --format given keeps its format."""
    for args in (
        ["--files", TXN0],
        ["--print-data-log", TXN0],
        ["--offsets-decoder", TXN0],
        ["--transaction-log-decoder", TXN0],
        ["--cluster-metadata-decoder", TXN0],
        ["--remote-log-metadata-decoder", TXN0],
        ["--share-group-state-decoder", TXN0],
        [TXN0, "--key-decoder-class"],
        ["--value-decoder-class=kafka.serializer.StringDecoder", TXN0],
        ["--max-message-size", "100", TXN0],
        ["--skip-record-metadata", TXN0],
        ["--files", TXN0_TIMEINDEX, "--verify-index-only"],
    ):
        code, out, err = run("dump-segments", *args)
        assert (code, out, err) == run("dump-segments", "--format", "kafka", *args), args
        assert out.startswith("Dumping logdir/txn-0/"), args
        for fmt in ("text", "jsonl"):
            assert run("dump-segments", "--format", fmt, *args)[1].startswith(
                "== " if fmt == "text" else '{"type":"file"'
            ), (args, fmt)
    # klogtool's own options, kafka-dump-log.sh's spelled alike, keep klogtool's text
    for own in (["--deep-iteration"], ["--max-bytes", "300"], ["--verify-index-only"]):
        assert run("dump-segments", *own, TXN0)[1].startswith("== "), own


def test_kafka_dump_log_command_lines_that_were_already_klogtools() -> None:
    """--deep-iteration, --max-bytes, --index-sanity-check, --verify-index-only."""
    _same(["--files", TXN0, "--deep-iteration", "--max-bytes", "300"],
          [TXN0, "--deep-iteration", "--max-bytes", "300"], "kafka")  # fmt: skip
    _same(["--files", TXN0_INDEX, "--index-sanity-check"], [TXN0_INDEX, "--index-sanity-check"])
    _same(["--files", TXN0_INDEX, "--verify-index-only"], [TXN0_INDEX, "--verify-index-only"])
    code, out, _ = run("dump-segments", "--format", "kafka", "--files", TXN0, "--max-bytes", "300")
    assert out.count("baseOffset: ") == 2  # 110 + 110 bytes; the third ends at 330


# -- the text format of index, snapshot and checkpoint entries ------------------------------------
def test_index_and_checkpoint_entries_are_text_not_field_labels(tmp_path: Path) -> None:
    code, out, _ = run("dump-segments", "logdir/txn-0", "logdir/meta.properties",
                       "logdir/recovery-point-offset-checkpoint")  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    for want in (
        "  offset 5 → position 220",
        "  timestamp 1700000000500 (2023-11-14T22:13:20.500Z) → offset 5",
        "  aborted transaction of producer 2001: offsets 4..8, last stable offset 2 (version 0)",
        "  producer 2001 epoch 1  last batch offsets 6..7 seq 2..3  last write "
        "1700000000800 (2023-11-14T22:13:20.800Z)  coordinator epoch 7",
        "  producer 3000 epoch 1  last batch offsets 13..14 seq 4..5  last write "
        "1700000001400 (2023-11-14T22:13:21.400Z)",
        "  leader epoch 4 from offset 0",
        "  topic id _ERnhxmqthSe0EaexTNtVg  (version 0)",
        "  version 1  cluster id oOHjVq120XpMEh85uDP4-g  node id 1  directory id "
        "j_artrCY6eXAd0BUgGVADQ",
        "  txn-0  offset 15",
    ):
        assert want in lines, want
    # no line is a type name with field labels (index_entry offset: 5 position: 220)
    for label in ("_entry", "_metadata", "meta_properties", "offset: ", "position: ", "_id: "):
        assert not [ln for ln in lines if ln.startswith("  ") and label in ln]
    (tmp_path / "quorum-state").write_text(
        '{"clusterId":"","leaderId":1,"leaderEpoch":5,"votedId":-1,"appliedOffset":0,'
        '"currentVoters":[{"voterId":1}],"data_version":0}'
    )
    (tmp_path / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":123}')
    code, out, _ = run("dump-segments", "quorum-state", ".kafka_cleanshutdown", cwd=tmp_path)
    assert out.splitlines()[1::2] == [
        "  leader id 1  leader epoch 5  voted id -1  applied offset 0  current voters "
        '[{"voterId":1}]  data version 0',
        "  version 0  broker epoch 123",
    ]


def test_sanity_check_says_passed_also_for_an_empty_index(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    for name in ("00000000000000000000.index", "00000000000000000000.timeindex"):
        (part / name).write_bytes(b"")
    index, timeindex = "t-0/00000000000000000000.index", "t-0/00000000000000000000.timeindex"
    code, out, _ = run("dump-segments", "--index-sanity-check", index, timeindex, cwd=tmp_path)
    assert code == 0
    assert out.splitlines()[1::2] == ["  sanity check: passed"] * 2
    code, out, _ = run("dump-segments", "--index-sanity-check", "--format", "jsonl", index,
                       cwd=tmp_path)  # fmt: skip
    assert [o for o in jsonl(out) if o["type"] == "sanity_check"] == [
        {"type": "sanity_check", "path": index, "passed": True}
    ]
    # kafka-dump-log.sh checks no empty offset index: it says so, and only that
    code, out, _ = run("dump-segments", "--index-sanity-check", "--format", "kafka", index,
                       timeindex, cwd=tmp_path)  # fmt: skip
    assert out.splitlines() == [
        f"Dumping {index}",
        f"{index} is empty.",
        f"Dumping {timeindex}",
        f"{timeindex} passed sanity check.",
    ]
    # a full index too
    code, out, _ = run("dump-segments", "--index-sanity-check", TXN0_INDEX)
    assert out.splitlines()[1:] == ["  sanity check: passed"]


def test_a_files_own_type_field_does_not_replace_the_objects(tmp_path: Path) -> None:
    """quorum-state is an open object (every field of its JSON follows the declared ones): a
    "type" field in the file took the object's place ({"type": "quorum_state", **json})."""
    (tmp_path / "quorum-state").write_text(
        '{"type":"record","leaderEpoch":5,"data_version":0,"leaderId":1}'
    )
    code, out, _ = run("dump-segments", "--format", "jsonl", "quorum-state", cwd=tmp_path)
    assert code == 0
    assert jsonl(out)[1] == {
        "type": "quorum_state",
        "leaderEpoch": 5,
        "data_version": 0,
        "leaderId": 1,
    }
    assert list(jsonl(out)[1]) == ["type", "leaderEpoch", "data_version", "leaderId"]


# -- --jobs' default -------------------------------------------------------------------------------
def test_the_default_jobs_are_the_free_cpus_past_a_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --jobs: one process below the size where workers paid (bench/bench_jobs.py),
    else the CPUs that neither the load average nor the tasks running now take, at least one;
    --jobs as given always."""
    import os

    from klogtool.commands import _options

    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (2.4, 0.0, 0.0))
    monkeypatch.setattr(_options, "_runnable_now", lambda: 4)  # this one and 3 others
    assert _options.free_cpus() == 2  # busy: min(2.4, 3), rounded
    monkeypatch.setattr(_options, "_runnable_now", lambda: 1)  # the load just ended
    assert _options.free_cpus() == 4
    monkeypatch.setattr(_options, "_runnable_now", lambda: 9)
    monkeypatch.setattr(os, "getloadavg", lambda: (7.0, 0.0, 0.0))
    assert _options.free_cpus() == 1
    monkeypatch.setattr(_options, "_runnable_now", lambda: None)  # no /proc/loadavg
    monkeypatch.setattr(os, "getloadavg", lambda: (0.6, 0.0, 0.0))
    assert _options.free_cpus() == 3
    small = _options.SMALL_INPUT_BYTES
    assert _options.jobs_for(None, small - 1) == 1
    assert _options.jobs_for(None, small) == 3
    assert _options.jobs_for(5, 0) == 5
    assert _options.jobs_for(None, 300 << 20, 256 << 20) == 3
