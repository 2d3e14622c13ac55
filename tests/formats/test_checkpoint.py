"""Tests for klogtool.formats.checkpoint (text files of a log dir)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support.paths import CORPUS

from klogtool.formats.checkpoint import (
    KIND_CLEAN_SHUTDOWN,
    KIND_LEADER_EPOCH_CHECKPOINT,
    KIND_META_PROPERTIES,
    KIND_OFFSET_CHECKPOINT,
    KIND_PARTITION_METADATA,
    KIND_QUORUM_STATE,
    OFFSET_CHECKPOINT_NAMES,
    ZERO_UUID,
    CleanShutdown,
    EpochEntry,
    MetaProperties,
    OffsetCheckpoint,
    PartitionMetadata,
    encode_leader_epoch_checkpoint,
    encode_meta_properties,
    encode_offset_checkpoint,
    encode_partition_metadata,
    parse_clean_shutdown,
    parse_leader_epoch_checkpoint,
    parse_meta_properties,
    parse_offset_checkpoint,
    parse_partition_metadata,
    parse_properties,
    parse_quorum_state,
    sniff_checkpoint_kind,
    uuid_bytes_to_text,
    uuid_text_to_bytes,
    validate_leader_epochs,
)
from klogtool.formats.errors import FormatError, TruncatedError, UnsupportedError

ALL_FILES = sorted(p for p in CORPUS.rglob("*") if p.is_file()) if CORPUS.is_dir() else []


def _named(*names: str) -> list[Path]:
    return [p for p in ALL_FILES if p.name in names]


OFFSET_CHECKPOINTS = _named(*OFFSET_CHECKPOINT_NAMES)
LEADER_EPOCHS = _named("leader-epoch-checkpoint")
PARTITION_METADATA = _named("partition.metadata")
META_PROPERTIES = _named("meta.properties")
CLEAN_SHUTDOWNS = _named(".kafka_cleanshutdown")
QUORUM_STATES = _named("quorum-state")

EXPECTED_KIND = {
    **{n: KIND_OFFSET_CHECKPOINT for n in OFFSET_CHECKPOINT_NAMES},
    "leader-epoch-checkpoint": KIND_LEADER_EPOCH_CHECKPOINT,
    "partition.metadata": KIND_PARTITION_METADATA,
    "meta.properties": KIND_META_PROPERTIES,
    ".kafka_cleanshutdown": KIND_CLEAN_SHUTDOWN,
    "quorum-state": KIND_QUORUM_STATE,
}


def _id(p: Path) -> str:
    return str(p.relative_to(CORPUS))


def _err(
    exc_type: type[FormatError], fn: Callable[[Any], object], data: object, position: int
) -> FormatError:
    with pytest.raises(exc_type) as ei:
        fn(data)
    assert ei.value.position == position, (ei.value.position, str(ei.value))
    return ei.value


def test_corpus_present() -> None:
    if not CORPUS.is_dir():
        pytest.skip("corpus not available")
    assert len(OFFSET_CHECKPOINTS) >= 20
    assert len(LEADER_EPOCHS) >= 20
    assert len(PARTITION_METADATA) >= 20
    assert len(META_PROPERTIES) >= 10
    assert CLEAN_SHUTDOWNS and QUORUM_STATES


# ------------------------------------------------------------------------------------------
# corpus


@pytest.mark.parametrize("path", OFFSET_CHECKPOINTS, ids=_id)
def test_corpus_offset_checkpoint(path: Path) -> None:
    data = path.read_bytes()
    cp = parse_offset_checkpoint(data)
    assert parse_offset_checkpoint(data.decode()) == cp
    assert not cp.duplicates
    if not data:
        assert cp == OffsetCheckpoint(None, {})
        return
    assert cp.version == 0
    assert all(offset >= 0 for offset in cp.entries.values())
    encoded = encode_offset_checkpoint(cp.entries)
    if list(cp.entries) == sorted(cp.entries):
        assert encoded == data
    assert parse_offset_checkpoint(encoded).entries == cp.entries


@pytest.mark.parametrize("path", LEADER_EPOCHS, ids=_id)
def test_corpus_leader_epoch_checkpoint(path: Path) -> None:
    data = path.read_bytes()
    entries = parse_leader_epoch_checkpoint(data)
    assert entries
    assert validate_leader_epochs(entries) == []
    encoded = encode_leader_epoch_checkpoint(entries)
    if b"\r" in data:  # one corpus file has CRLF line endings (a Windows checkout)
        assert encoded == data.replace(b"\r\n", b"\n")
    else:
        assert encoded == data
    assert parse_leader_epoch_checkpoint(encoded) == entries


@pytest.mark.parametrize("path", PARTITION_METADATA, ids=_id)
def test_corpus_partition_metadata(path: Path) -> None:
    data = path.read_bytes()
    meta = parse_partition_metadata(data)
    assert meta.version == 0
    assert len(uuid_text_to_bytes(meta.topic_id)) == 16
    assert encode_partition_metadata(meta.topic_id) == data


@pytest.mark.parametrize("path", META_PROPERTIES, ids=_id)
def test_corpus_meta_properties(path: Path) -> None:
    data = path.read_bytes()
    meta = parse_meta_properties(data)
    assert meta.version in (0, 1)
    if meta.version == 1:
        assert meta.cluster_id and meta.node_id is not None
    else:
        assert meta.broker_id is not None
    assert meta.extra == {}
    assert parse_meta_properties(encode_meta_properties(meta)) == meta


@pytest.mark.parametrize("path", CLEAN_SHUTDOWNS, ids=_id)
def test_corpus_clean_shutdown(path: Path) -> None:
    cs = parse_clean_shutdown(path.read_bytes())
    assert cs.version == 0 and cs.broker_epoch is not None and cs.broker_epoch >= 0


@pytest.mark.parametrize("path", QUORUM_STATES, ids=_id)
def test_corpus_quorum_state(path: Path) -> None:
    state = parse_quorum_state(path.read_bytes())
    assert state["data_version"] == 0
    assert state["leaderEpoch"] >= 0


def test_corpus_sniff() -> None:
    """Every corpus file (one test: 400+ files) is sniffed as its kind, or None."""
    if not ALL_FILES:
        pytest.skip("corpus not available")
    wrong = []
    for path in ALL_FILES:
        data = path.read_bytes()
        kind = sniff_checkpoint_kind(str(path), data)
        if kind != EXPECTED_KIND.get(path.name):
            wrong.append((_id(path), kind))
        # the name is not trusted: binary contents under a text file's name are not that kind
        if data and path.suffix in (".log", ".index", ".timeindex", ".snapshot", ".checkpoint"):
            for name in EXPECTED_KIND:
                kind = sniff_checkpoint_kind(name, data)
                if kind is not None:
                    wrong.append((f"{_id(path)} named {name}", kind))
    assert wrong == []


def test_specific_corpus_values() -> None:
    path = (
        CORPUS / "codecrafters-io__kafka-tester/internal/test_helpers/pass_all/kraft-combined-logs"
    )
    if not path.is_dir():
        pytest.skip("corpus not available")
    assert parse_clean_shutdown((path / ".kafka_cleanshutdown").read_bytes()) == CleanShutdown(
        0, 83
    )
    meta = parse_meta_properties((path / "meta.properties").read_bytes())
    assert meta == MetaProperties(
        version=1,
        cluster_id="rwd2jqiwRaCycLq7mKVHXA",
        node_id=1,
        directory_id="AiSXPLrdRM-HREWplhnaNA",
    )
    cp = parse_offset_checkpoint((path / "recovery-point-offset-checkpoint").read_bytes())
    assert cp == OffsetCheckpoint(0, {("foo", 0): 3})


# ------------------------------------------------------------------------------------------
# offset checkpoints


def test_offset_checkpoint_exact_bytes() -> None:
    entries = {("b", 1): 5, ("a", 10): 7, ("a", 2): 3}
    data = encode_offset_checkpoint(entries)
    assert data == b"0\n3\na 2 3\na 10 7\nb 1 5\n"
    assert parse_offset_checkpoint(data) == OffsetCheckpoint(0, entries)
    assert encode_offset_checkpoint({}) == b"0\n0\n"


def test_offset_checkpoint_lenient_forms_kafka_accepts() -> None:
    assert parse_offset_checkpoint(b"") == OffsetCheckpoint(None, {})
    assert parse_offset_checkpoint(b"0\n") == OffsetCheckpoint(0, {})  # no count line
    assert parse_offset_checkpoint(b"0\r\n1\r\nt 0 5\r\n").entries == {("t", 0): 5}
    assert parse_offset_checkpoint(b"0\n1\nt\t0   5  ").entries == {("t", 0): 5}  # no final EOL
    dup = parse_offset_checkpoint(b"0\n2\nt 0 5\nt 0 9\n")
    assert dup.entries == {("t", 0): 9} and dup.duplicates == (("t", 0),)


@pytest.mark.parametrize(
    ("data", "exc", "position"),
    [
        (b"1\n0\n", UnsupportedError, 0),  # version mismatch
        (b"x\n0\n", FormatError, 0),  # junk version
        (b"0\nabc\n", FormatError, 2),  # junk count
        (b"0\n-1\n", FormatError, 2),  # negative count
        (b"0\n2\nt 0 5\n", FormatError, 2),  # count mismatch (fewer)
        (b"0\n0\nt 0 5\n", FormatError, 2),  # count mismatch (more)
        (b"0\n1\nt 0\n", FormatError, 4),  # two fields
        (b"0\n1\nt 0 5 6\n", FormatError, 4),  # four fields
        (b"0\n1\n t 0 5\n", FormatError, 4),  # leading whitespace: Java split gives ""
        (b"0\n2\nt 0 5\n\nt 1 5\n", FormatError, 10),  # empty line
        (b"0\n1\nt 2147483648 5\n", FormatError, 4),  # partition overflows int32
        (b"0\n1\nt 0 9223372036854775808\n", FormatError, 4),  # offset overflows int64
        (b"0\n1\nt 0 1_0\n", FormatError, 4),  # python-only int syntax
        (b"0\n1\nt 0 \xff\n", FormatError, 8),  # invalid UTF-8
        (b"\xef\xbb\xbf0\n0\n", FormatError, 0),  # BOM: Integer.parseInt fails
        ("0\n1\nt\u00e9 x 5\n", FormatError, 4),
    ],
)
def test_offset_checkpoint_errors(data: bytes | str, exc: type[FormatError], position: int) -> None:
    err = _err(exc, parse_offset_checkpoint, data, position)
    assert isinstance(err, FormatError)


def test_offset_checkpoint_error_codes() -> None:
    assert _err(UnsupportedError, parse_offset_checkpoint, b"1\n", 0).code == "unsupported-version"
    assert _err(FormatError, parse_offset_checkpoint, b"0\n3\n", 2).code == "count-mismatch"
    assert _err(FormatError, parse_offset_checkpoint, b"0\n1\nx\n", 4).code == "malformed-line"
    assert _err(FormatError, parse_offset_checkpoint, b"\x80", 0).code == "bad-encoding"


@pytest.mark.parametrize(
    "entries",
    [{("a b", 0): 1}, {("", 0): 1}, {("a", 2**31): 1}, {("a", 0): 2**63}, {("a\n", 0): 1}],
)
def test_offset_checkpoint_encoder_rejects(entries: dict[tuple[str, int], int]) -> None:
    with pytest.raises(ValueError):
        encode_offset_checkpoint(entries)


TOPICS = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters=" \t\n\x0b\f\r"),
    min_size=1,
    max_size=20,
)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.tuples(TOPICS, st.integers(-(2**31), 2**31 - 1)),
        st.integers(-(2**63), 2**63 - 1),
        max_size=20,
    )
)
def test_offset_checkpoint_round_trip(entries: dict[tuple[str, int], int]) -> None:
    data = encode_offset_checkpoint(entries)
    cp = parse_offset_checkpoint(data)
    assert cp.version == 0 and cp.entries == entries
    assert list(cp.entries) == sorted(entries)
    assert encode_offset_checkpoint(cp.entries) == data


# ------------------------------------------------------------------------------------------
# leader-epoch-checkpoint


def test_leader_epoch_exact_bytes() -> None:
    entries = [EpochEntry(0, 0), EpochEntry(3, 1200)]
    data = encode_leader_epoch_checkpoint(entries)
    assert data == b"0\n2\n0 0\n3 1200\n"
    assert parse_leader_epoch_checkpoint(data) == entries
    assert parse_leader_epoch_checkpoint(b"") == []
    assert parse_leader_epoch_checkpoint(b"0\r\n1\r\n5 10") == [EpochEntry(5, 10)]


@pytest.mark.parametrize(
    ("data", "exc", "position"),
    [
        (b"1\n0\n", UnsupportedError, 0),
        (b"0\n1\n0 0 0\n", FormatError, 4),
        (b"0\n1\n0\n", FormatError, 4),
        (b"0\n1\n2147483648 0\n", FormatError, 4),
        (b"0\n2\n0 0\n", FormatError, 2),
        (b"0\n1\n\x00 0\n", FormatError, 4),
    ],
)
def test_leader_epoch_errors(data: bytes, exc: type[FormatError], position: int) -> None:
    _err(exc, parse_leader_epoch_checkpoint, data, position)


def test_leader_epoch_validator() -> None:
    assert validate_leader_epochs([EpochEntry(0, 0), EpochEntry(2, 5)]) == []
    # parsing does not fail on ordering problems; the validator lists them
    entries = parse_leader_epoch_checkpoint(b"0\n4\n3 10\n2 20\n4 20\n-1 -5\n")
    problems = validate_leader_epochs(entries)
    assert [p.entry_index for p in problems] == [1, 2, 3, 3, 3, 3]
    assert "epoch 2 does not increase" in problems[0].message
    assert "start offset 20 of epoch 4 does not increase" in problems[1].message


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1)),
        max_size=30,
    ).map(lambda ts: [EpochEntry(*t) for t in ts])
)
def test_leader_epoch_round_trip(entries: list[EpochEntry]) -> None:
    assert parse_leader_epoch_checkpoint(encode_leader_epoch_checkpoint(entries)) == entries


# ------------------------------------------------------------------------------------------
# uuids and partition.metadata


def test_uuid_helpers() -> None:
    assert uuid_bytes_to_text(bytes(16)) == ZERO_UUID
    assert uuid_bytes_to_text(bytes(15) + b"\x01") == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuid_text_to_bytes("AAAAAAAAAAAAAAAAAAAAAQ") == bytes(15) + b"\x01"
    raw = bytes(range(0xF0, 0x100))
    assert uuid_text_to_bytes(uuid_bytes_to_text(raw)) == raw
    assert "-" in uuid_bytes_to_text(raw) or "_" in uuid_bytes_to_text(raw)
    for bad in ["", "AAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAA+",
                "AAAAAAAAAAAAAAAAAAAAAQ==", "AAAAAAAAAAAAAAAAAAAAAB"]:  # fmt: skip
        with pytest.raises(FormatError) as ei:
            uuid_text_to_bytes(bad)
        assert ei.value.code == "bad-uuid"
    with pytest.raises(ValueError):
        uuid_bytes_to_text(b"short")


@settings(max_examples=40, deadline=None)
@given(st.binary(min_size=16, max_size=16))
def test_uuid_round_trip(raw: bytes) -> None:
    text = uuid_bytes_to_text(raw)
    assert len(text) == 22
    assert text == base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert uuid_text_to_bytes(text) == raw


def test_partition_metadata_exact_bytes() -> None:
    data = encode_partition_metadata("fZi4qEpCTsik-rzkyV0Ypg")
    assert data == b"version: 0\ntopic_id: fZi4qEpCTsik-rzkyV0Ypg"
    assert parse_partition_metadata(data) == PartitionMetadata(0, "fZi4qEpCTsik-rzkyV0Ypg")
    # forms the broker also accepts
    assert parse_partition_metadata(data + b"\n").topic_id == "fZi4qEpCTsik-rzkyV0Ypg"
    assert parse_partition_metadata(data.replace(b"\n", b"\r\n")).version == 0
    assert parse_partition_metadata(b"version:  3\ntopic_id:\tfZi4qEpCTsik-rzkyV0Ypg").version == 3


@pytest.mark.parametrize(
    ("data", "exc", "position", "code"),
    [
        (b"", TruncatedError, 0, "truncated"),
        (b"version: 0", TruncatedError, 10, "truncated"),
        (b"version: 0\n", TruncatedError, 10, "truncated"),
        (b"version: x\ntopic_id: fZi4qEpCTsik-rzkyV0Ypg", FormatError, 9, "malformed-line"),
        (b"version: -1\ntopic_id: fZi4qEpCTsik-rzkyV0Ypg", UnsupportedError, 9,
         "unsupported-version"),
        (b"version:0\ntopic_id: fZi4qEpCTsik-rzkyV0Ypg", FormatError, 0, "malformed-line"),
        (b"versio: 0\ntopic_id: fZi4qEpCTsik-rzkyV0Ypg", FormatError, 0, "malformed-line"),
        (b"version: 0\ntopic: fZi4qEpCTsik-rzkyV0Ypg", FormatError, 11, "malformed-line"),
        (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", FormatError, 21, "bad-uuid"),
        (b"version: 0\ntopic_id: fZi4qEpCTsik-rzkyV0Yp", FormatError, 21, "bad-uuid"),
        (b"version: 0\ntopic_id: fZi4qEpCTsik-rzkyV0Ypg ", FormatError, 21, "bad-uuid"),
        (b"version: 0\ntopic_id: fZi4qEpCTsik-rzkyV0Ypp", FormatError, 42, "bad-uuid"),
        (b"version: 0\xff\ntopic_id: fZi4qEpCTsik-rzkyV0Ypg", FormatError, 10, "bad-encoding"),
    ],
)  # fmt: skip
def test_partition_metadata_errors(
    data: bytes, exc: type[FormatError], position: int, code: str
) -> None:
    assert _err(exc, parse_partition_metadata, data, position).code == code


def test_partition_metadata_encoder_rejects() -> None:
    for bad in (ZERO_UUID, "nope", "AAAAAAAAAAAAAAAAAAAAAB"):
        with pytest.raises(ValueError):
            encode_partition_metadata(bad)


@settings(max_examples=40, deadline=None)
@given(st.binary(min_size=16, max_size=16), st.integers(0, 2**31 - 1))
def test_partition_metadata_round_trip(raw: bytes, version: int) -> None:
    assume(raw != bytes(16))
    topic_id = uuid_bytes_to_text(raw)
    data = encode_partition_metadata(topic_id, version=version)
    assert not data.endswith(b"\n")
    assert parse_partition_metadata(data) == PartitionMetadata(version, topic_id)


# ------------------------------------------------------------------------------------------
# meta.properties


def test_properties_syntax() -> None:
    text = (
        "# comment\n"
        "   ! another comment\n"
        "\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "d\t=\t  4  \n"
        "e=x\\:y\\=z\\\\w\\ \\#\n"
        "f\\=g=h\n"
        "long = one, \\\n"
        "       two\n"
        "u=\\u0041\\u00e9\\uD83D\\uDE00\n"
        "esc=\\t\\n\\q\n"
        "empty\n"
        "a=again\n"
    )
    props = {k: v for k, (_, v) in parse_properties(text).items()}
    assert props == {
        "a": "again",
        "b": "2",
        "c": "3",
        "d": "4  ",
        "e": "x:y=z\\w #",
        "f=g": "h",
        "long": "one, two",
        "u": "A\u00e9\U0001f600",
        "esc": "\t\nq",
        "empty": "",
    }
    positions = parse_properties(b"#x\r\n  k=v\r\n")
    assert positions == {"k": (6, "v")}


def test_properties_bad_unicode_escape() -> None:
    _err(FormatError, parse_properties, b"a=1\nb=\\u12G4\n", 4)
    _err(FormatError, parse_properties, b"a=1\nb=\\uD83D\n", 4)


def test_meta_properties_exact_bytes() -> None:
    meta = MetaProperties(1, "rwd2jqiwRaCycLq7mKVHXA", 1, None, "AiSXPLrdRM-HREWplhnaNA")
    data = encode_meta_properties(meta, date_comment="Mon Sep 02 15:43:32 IST 2024")
    assert data == (
        b"#\n#Mon Sep 02 15:43:32 IST 2024\nversion=1\ncluster.id=rwd2jqiwRaCycLq7mKVHXA\n"
        b"node.id=1\ndirectory.id=AiSXPLrdRM-HREWplhnaNA\n"
    )
    assert parse_meta_properties(data) == meta
    v0 = MetaProperties(0, None, None, 0, None, {"x y": " lead=:#!"})
    data = encode_meta_properties(v0)
    assert data == b"#\nversion=0\nbroker.id=0\nx\\ y=\\ lead\\=\\:\\#\\!\n"
    assert parse_meta_properties(data) == v0


def test_meta_properties_rules() -> None:
    # version defaults to 0; broker.id optional in v0
    assert parse_meta_properties("cluster.id=abc\n") == MetaProperties(0, "abc")
    assert parse_meta_properties("version= 1 \nnode.id=3\ncluster.id=c\n").node_id == 3
    # v0 ignores node.id when it is not an int, v1 ignores broker.id likewise
    m = parse_meta_properties("version=0\nbroker.id=2\nnode.id=x\n")
    assert (m.broker_id, m.node_id, m.extra) == (2, None, {"node.id": "x"})
    m = parse_meta_properties("version=1\nnode.id=2\nbroker.id=7\ncluster.id=c\n")
    assert (m.node_id, m.broker_id) == (2, 7)


@pytest.mark.parametrize(
    ("text", "exc", "position", "code"),
    [
        ("version=1\nnode.id=1\n", FormatError, 20, "missing-property"),
        ("version=1\ncluster.id=x\n", FormatError, 23, "missing-property"),
        ("#\nversion=2\n", UnsupportedError, 2, "unsupported-version"),
        ("#\nversion=one\n", FormatError, 2, "bad-property"),
        ("version=0\nbroker.id=zero\n", FormatError, 10, "bad-property"),
        ("version=1\nnode.id=1.0\ncluster.id=x\n", FormatError, 10, "bad-property"),
        ("version=1\nnode.id=1\ncluster.id=x\ndirectory.id=nope\n", FormatError, 33, "bad-uuid"),
    ],
)
def test_meta_properties_errors(
    text: str, exc: type[FormatError], position: int, code: str
) -> None:
    assert _err(exc, parse_meta_properties, text, position).code == code


def test_meta_properties_encoder_rejects() -> None:
    for bad in (
        MetaProperties(2),
        MetaProperties(1, cluster_id="c"),
        MetaProperties(1, node_id=1),
        MetaProperties(0, directory_id="x"),
        MetaProperties(0, extra={"version": "1"}),
    ):
        with pytest.raises(ValueError):
            encode_meta_properties(bad)


PROP_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=15)
INT32 = st.integers(-(2**31), 2**31 - 1)


@st.composite
def meta_properties(draw: st.DrawFn) -> MetaProperties:
    version = draw(st.sampled_from([0, 1]))
    cluster_id = draw(PROP_TEXT if version == 1 else st.none() | PROP_TEXT)
    node_id = draw(INT32 if version == 1 else st.none() | INT32)
    broker_id = draw(st.none() | INT32)
    raw = draw(st.none() | st.binary(min_size=16, max_size=16))
    directory_id = None if raw is None else uuid_bytes_to_text(raw)
    extra = draw(
        st.dictionaries(
            PROP_TEXT.filter(
                lambda k: k not in ("version", "cluster.id", "node.id", "broker.id", "directory.id")
            ),
            PROP_TEXT,
            max_size=5,
        )
    )
    return MetaProperties(version, cluster_id, node_id, broker_id, directory_id, extra)


@settings(max_examples=40, deadline=None)
@given(meta_properties())
def test_meta_properties_round_trip(meta: MetaProperties) -> None:
    assert parse_meta_properties(encode_meta_properties(meta)) == meta


# ------------------------------------------------------------------------------------------
# .kafka_cleanshutdown, quorum-state


def test_clean_shutdown() -> None:
    assert parse_clean_shutdown(b'{"version":0,"brokerEpoch":83}') == CleanShutdown(0, 83)
    assert parse_clean_shutdown(b"") == CleanShutdown(None, None)  # pre-KIP-966 brokers
    _err(FormatError, parse_clean_shutdown, b'{"version":0,"brokerEpoch":}', 27)
    _err(FormatError, parse_clean_shutdown, b'{"version":0}', 0)
    _err(FormatError, parse_clean_shutdown, b'{"version":0,"brokerEpoch":true}', 0)
    _err(FormatError, parse_clean_shutdown, b"[1]", 0)
    _err(UnsupportedError, parse_clean_shutdown, b'{"version":1,"brokerEpoch":3}', 0)
    _err(FormatError, parse_clean_shutdown, '{"\u00e9":1,'.encode(), 8)


def test_quorum_state() -> None:
    text = (
        '{"clusterId":"","leaderId":1,"leaderEpoch":25,"votedId":-1,"appliedOffset":0,'
        '"currentVoters":[{"voterId":1}],"data_version":0}'
    )
    state = parse_quorum_state(text)
    assert state["leaderId"] == 1 and state["currentVoters"] == [{"voterId": 1}]
    _err(FormatError, parse_quorum_state, text.replace('"data_version":0', '"x":0'), 0)
    _err(FormatError, parse_quorum_state, text.replace('"leaderId":1', '"leaderId":"1"'), 0)
    _err(FormatError, parse_quorum_state, text[:-1], len(text) - 1)
    _err(FormatError, parse_quorum_state, b"\xff", 0)


# ------------------------------------------------------------------------------------------
# sniffing


def test_sniff_by_name_confirms_contents() -> None:
    oc = b"0\n1\nt 0 5\n"
    assert sniff_checkpoint_kind("/x/recovery-point-offset-checkpoint", oc) == "offset-checkpoint"
    assert sniff_checkpoint_kind("cleaner-offset-checkpoint", b"") == "offset-checkpoint"
    assert sniff_checkpoint_kind("replication-offset-checkpoint", b"garbage\n") is None
    assert sniff_checkpoint_kind("leader-epoch-checkpoint", oc) is None  # 3 fields, not 2
    assert sniff_checkpoint_kind("partition.metadata", oc) is None
    assert sniff_checkpoint_kind("meta.properties", b"version=1\n") is None
    assert sniff_checkpoint_kind(".kafka_cleanshutdown", b"") == "clean-shutdown"
    assert sniff_checkpoint_kind("quorum-state", b"{}") is None


def test_sniff_by_contents_for_unknown_names() -> None:
    pm = encode_partition_metadata("fZi4qEpCTsik-rzkyV0Ypg")
    assert sniff_checkpoint_kind("copy", pm) == "partition-metadata"
    assert sniff_checkpoint_kind("copy", b"0\n1\nt 0 5\n") == "offset-checkpoint"
    assert sniff_checkpoint_kind("copy", b"0\n1\n3 5\n") == "leader-epoch-checkpoint"
    assert sniff_checkpoint_kind("copy", b"0\n0\n") is None  # ambiguous
    assert sniff_checkpoint_kind("copy", b"#\nversion=0\nbroker.id=1\n") == "meta-properties"
    assert sniff_checkpoint_kind("copy", b'{"version":0,"brokerEpoch":1}') == "clean-shutdown"
    assert sniff_checkpoint_kind("copy", b'{"data_version":0,"leaderEpoch":1}') == "quorum-state"
    assert sniff_checkpoint_kind("copy", b"\x00\x01\xff") is None
    assert sniff_checkpoint_kind("copy", b"") is None
