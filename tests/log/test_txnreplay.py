"""Transaction replay (klogtool/log/txnreplay.py) against a brute-force reading of the rule.

The reference looks at the whole history at each ABORT marker: the producer's transaction
starts at its first transactional data batch after its previous marker; the last stable offset
is the smallest such start among the other producers with a transaction open at the marker,
else the marker + 1. The replay, fed real encoded batches one at a time (and, cut into
segments, through ``chain`` as rebuild-index and truncate-recovery use it), must agree.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from klogtool.formats import DEFAULT_LIMITS
from klogtool.formats.batch import Record
from klogtool.formats.index import AbortedTxn
from klogtool.formats.payloads.control import ABORT, COMMIT, encode_end_txn_marker
from klogtool.formats.v2 import DefaultBatch, encode_batch
from klogtool.log.txnreplay import TxnReplay, chain, event_of

# (producer, kind) with kind "data", "commit", "abort", "plain" (idempotent, not transactional)
Step = tuple[int, str]


def _batch(pid: int, kind: str, offset: int) -> DefaultBatch:
    if kind in ("data", "plain"):
        rec = Record(offset, 1000 + offset, b"k", b"v")
        data = encode_batch(
            [rec], is_transactional=kind == "data", producer_id=pid, producer_epoch=0
        )
    else:
        key, value = encode_end_txn_marker(ABORT if kind == "abort" else COMMIT, 0)
        data = encode_batch(
            [Record(offset, 1000 + offset, key, value)],
            is_transactional=True,
            is_control=True,
            producer_id=pid,
            producer_epoch=0,
        )
    return DefaultBatch(memoryview(data), 0)


def _open_first(steps: list[Step], pid: int, before: int) -> int | None:
    """The first data offset of pid's transaction open just before offset ``before``."""
    first = None
    for off in range(before - 1, -1, -1):
        p, kind = steps[off]
        if p == pid and kind in ("commit", "abort"):
            break
        if p == pid and kind == "data":
            first = off
    return first


def _reference(steps: list[Step]) -> list[AbortedTxn]:
    pids = {p for p, _ in steps}
    out = []
    for marker, (pid, kind) in enumerate(steps):
        first = _open_first(steps, pid, marker)
        if kind != "abort" or first is None:
            continue
        others = [_open_first(steps, p, marker) for p in pids - {pid}]
        lso = min((o for o in others if o is not None), default=marker + 1)
        out.append(AbortedTxn(0, pid, first, marker, lso))
    return out


steps_strategy = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(["data", "data", "commit", "abort", "plain"])),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(steps=steps_strategy, cuts=st.lists(st.integers(0, 40), max_size=4))
def test_replay_agrees_with_the_brute_force_reading(steps: list[Step], cuts: list[int]) -> None:
    batches = [_batch(pid, kind, off) for off, (pid, kind) in enumerate(steps)]
    want = _reference(steps)

    replay = TxnReplay()
    fed = [t for b in batches if (t := replay.feed(b, DEFAULT_LIMITS)) is not None]
    assert fed == want

    # cut into segments: chain over per-segment events gives the same, segment by segment
    bounds = sorted({0, len(batches), *(c for c in cuts if c < len(batches))})
    events = [
        [e for b in batches[lo:hi] if (e := event_of(b, DEFAULT_LIMITS)) is not None]
        for lo, hi in zip(bounds, bounds[1:], strict=False)
    ]
    chained = chain(TxnReplay(), events)
    assert [t for _, seg in chained for t in seg] == want
    pids = {p for p, _ in steps}
    for (at_start, _), lo in zip(chained, bounds, strict=False):
        assert at_start == {p: f for p in pids if (f := _open_first(steps, p, lo)) is not None}


def test_a_hand_replayed_history() -> None:
    """P1 data 0, P2 data 1, P1 ABORT 2 (P2 open: LSO 1), P2 COMMIT 3, P3 ABORT 4 with no
    data (no entry), P1 data 5, P1 ABORT 6 (none open: LSO 7)."""
    steps = [(1, "data"), (2, "data"), (1, "abort"), (2, "commit"), (3, "abort")]
    steps += [(1, "data"), (1, "abort")]
    replay = TxnReplay()
    got = [
        t
        for off, s in enumerate(steps)
        if (t := replay.feed(_batch(*s, off), DEFAULT_LIMITS)) is not None
    ]
    assert got == [AbortedTxn(0, 1, 0, 2, 1), AbortedTxn(0, 1, 5, 6, 7)]
    assert replay.open == {}


def _state_reference(steps: list[Step], off: int) -> str:
    """How the batch at ``off`` ended, read from the whole history: a transactional data batch
    by its producer's next marker (still open without one), a marker by its own type."""
    pid, kind = steps[off]
    if kind == "plain":
        return "none"
    if kind != "data":
        return "aborted" if kind == "abort" else "committed"
    for p, k in steps[off + 1 :]:
        if p == pid and k in ("commit", "abort"):
            return "aborted" if k == "abort" else "committed"
    return "open"


@settings(max_examples=100, deadline=None)
@given(steps=steps_strategy, cuts=st.lists(st.integers(1, 39), max_size=3))
def test_transaction_states_agree_with_the_whole_history(
    steps: list[Step], cuts: list[int]
) -> None:
    """find --transaction, export's --where and stats read each batch's state from
    txnstates (one header replay over the partition's segments)."""
    import tempfile
    from pathlib import Path

    from klogtool.log import layout
    from klogtool.log.txnstates import transaction_states

    batches = [_batch(pid, kind, off) for off, (pid, kind) in enumerate(steps)]
    bounds = sorted({0, len(batches), *(c for c in cuts if c < len(batches))})
    with tempfile.TemporaryDirectory() as d:
        segments = []
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            log = Path(d) / f"{lo:020d}.log"
            log.write_bytes(b"".join(bytes(b.data) for b in batches[lo:hi]))
            segments.append(layout.SegmentFiles(lo, log=log))
        states = transaction_states(segments, DEFAULT_LIMITS)
        assert [states.state(b) for b in batches] == [
            _state_reference(steps, off) for off in range(len(steps))
        ]
