"""``klogtool dump-segments``: kafka-dump-log.sh's option names, ``--decoder none`` on control
records, the text format of index and checkpoint entries."""

from __future__ import annotations

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
