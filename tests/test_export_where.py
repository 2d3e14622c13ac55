"""``export --where`` and the Spark source's ``where``: find's filters over the Arrow reader.

The reference is ``klogtool find`` itself (its filters are tested against brute-force scans in
test_find.py) and, for a few filters, a brute-force scan of the reader's own unfiltered rows.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import click
import pytest
from support.cli import run
from support.paths import LOGDIR

pa = pytest.importorskip("pyarrow", reason="export needs the `spark` extra (pyarrow)")

from klogtool.commands._options import record_filter_options  # noqa: E402
from klogtool.log import splits  # noqa: E402
from klogtool.log.context import ReadContext  # noqa: E402
from klogtool.log.export import arrow_reader as ar  # noqa: E402
from klogtool.log.export import spec  # noqa: E402
from klogtool.log.read.dumper import DumpOptions  # noqa: E402
from klogtool.log.read.finder import Finder, FindOptions  # noqa: E402
from klogtool.log.record_filter import RecordFilter, parse_where  # noqa: E402

T0 = 1_700_000_000_000
WHERES = [
    "--offsets 3:9",
    "--offsets 20:",
    "--key key-1",
    "--key-regex '^key-1'",
    "--value-regex 'value-[0-4]$'",
    "--header trace-id",
    "--header h=",
    f"--from-time {T0 + 300} --to-time {T0 + 1300}",
    "--from-time 2023-11-14T22:13:21Z",
    "--transaction aborted",
    "--transaction committed --transaction open",
    "--transaction none --offsets 0:5",
    "--control",
    "--no-control --key-regex 1",
    "--producer-id 1000 --producer-id 1001",
]
Key = tuple[str | None, int | None, int]


def reader_rows(paths: list[str], where: RecordFilter | None, **plan: Any) -> list[Key]:
    opts = spec.ReadOptions(ctx=ReadContext.of(), where=where)
    table = pa.Table.from_batches(
        [
            b
            for s in splits.plan_splits(paths, prune=splits.where_prune(opts.where), **plan)
            for b in ar.read_split(s, opts)
        ],
        schema=spec.arrow_schema(opts),
    )
    cols = table.select(["topic", "partition", "offset"]).to_pydict()
    return list(zip(cols["topic"], cols["partition"], cols["offset"], strict=True))


def found_rows(paths: list[str], where: RecordFilter) -> list[Key]:
    finder = Finder(
        FindOptions(dump=DumpOptions(deep=True, print_data=True, ctx=ReadContext.of()), where=where)
    )
    return [
        (o["topic"], o["partition"], o["offset"])
        for o in finder.objects(paths)
        if o["type"] == "record"
    ]


@pytest.mark.parametrize("text", WHERES)
def test_the_reader_selects_what_find_finds(text: str) -> None:
    paths = [str(LOGDIR)]
    where = parse_where(text)
    expected = found_rows(paths, where)
    assert reader_rows(paths, where) == expected
    # cut into ~100-byte ranges: each selected row exactly once
    assert reader_rows(paths, where, target_split_bytes=100) == expected


def test_filters_select_something_and_not_everything() -> None:
    """The cases above would pass vacuously if every filter selected nothing (or all)."""
    paths = [str(LOGDIR)]
    everything = len(reader_rows(paths, None))
    counts = {t: len(reader_rows(paths, parse_where(t))) for t in WHERES}
    assert all(0 < n < everything for n in counts.values()), counts


def test_a_brute_force_scan_agrees() -> None:
    opts = spec.ReadOptions(ctx=ReadContext.of(), key_decoder="utf8", value_decoder="utf8")
    rows = pa.Table.from_batches(list(ar.read_paths([str(LOGDIR / "v2-gzip-0")], opts)))
    data = rows.select(["offset", "key", "value"]).to_pylist()
    want = [
        r["offset"]
        for r in data
        if r["key"] is not None
        and re.search("^key-1", r["key"])
        and r["value"] is not None
        and re.search("value", r["value"])
    ]
    assert want
    where = parse_where("--key-regex '^key-1' --value-regex value")
    got = [o for _t, _p, o in reader_rows([str(LOGDIR / "v2-gzip-0")], where)]
    assert got == want


def test_offsets_prune_segments_at_planning() -> None:
    opts = spec.ReadOptions(ctx=ReadContext.of(), where=parse_where("--offsets 100:"))
    segs = splits.list_segments([str(LOGDIR / "v2-none-0")])
    prune = splits.where_prune(opts.where)
    assert len(segs) > 1
    assert not any(prune.keeps(s) for s in segs[:-1])


def test_where_needs_record_level() -> None:
    with pytest.raises(ValueError, match="level records"):
        spec.ReadOptions(ctx=ReadContext.of(), level="batches", where=parse_where("--key k"))
    spec.ReadOptions(
        ctx=ReadContext.of(), level="batches", where=RecordFilter()
    )  # nothing filtered: fine


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("--limit 3", "No such option"),
        ("--offsets 9:1", "FROM <= TO"),
        ("--key-regex '('", "not a regular expression"),
        ("--transaction maybe", "maybe"),
        ("--key 'unclosed", "quotation"),
        ("--from-time yesterday", "not a time"),
    ],
)
def test_bad_where_strings(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_where(text)


def test_export_where_cli(tmp_path: Path) -> None:
    text = "--transaction committed --value-regex 'txn-value-[0-3]'"
    code, _out, err = run(
        "export", str(LOGDIR), "--to", "jsonl", str(tmp_path / "out"), "--where", text
    )
    assert code == 0, err
    rows = [
        json.loads(line)
        for f in sorted((tmp_path / "out").glob("*.json"))
        for line in f.read_text().splitlines()
    ]
    got = sorted((r["topic"], r["partition"], r["offset"]) for r in rows)
    assert got and got == sorted(found_rows([str(LOGDIR)], parse_where(text)))


def test_export_where_usage_errors(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    code, _out, err = run("export", str(LOGDIR), "--to", "jsonl", out, "--where", "--limit 2")
    assert code == 2 and "--where" in err and "--limit" in err
    code, _out, err = run(
        "export", str(LOGDIR), "--to", "jsonl", out, "--level", "batches", "--where", "--key k"
    )
    assert code == 2 and "--level records" in err
    assert not Path(out).exists()


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_a_batch_of_more_records_than_a_window_is_read_whole_and_once(
    tmp_path: Path, codec: str
) -> None:
    """The reader makes rows a window of 16,384 records at a time (a record-count bomb stays
    flat): a 40,000-record batch still gives each record once, in order, under both engines."""
    from klogtool.formats import codecs, v2
    from klogtool.formats.batch import Record

    n = 40_000
    recs = [
        Record(i, T0 + i, b"k%d" % (i % 7), b"v%d" % i, (("h", b"x"),) if i % 3 == 0 else ())
        for i in range(n)
    ]
    part = tmp_path / "t-0"
    part.mkdir()
    data = v2.encode_batch(recs, compression=codecs.CODEC_IDS[codec])
    (part / "00000000000000000000.log").write_bytes(data)
    batches = list(ar.read_paths([str(part)], spec.ReadOptions(ctx=ReadContext.of())))
    rows = pa.Table.from_batches(batches).to_pydict()
    assert rows["offset"] == list(range(n))
    assert rows["key"] == [b"k%d" % (i % 7) for i in range(n)]
    assert rows["value"] == [b"v%d" % i for i in range(n)]
    assert [len(h or []) for h in rows["headers"]] == [1 if i % 3 == 0 else 0 for i in range(n)]
    assert max(b.num_rows for b in batches) <= 16_384


@click.command()
@record_filter_options
def _find_filters(where: RecordFilter) -> RecordFilter:
    return where


@pytest.mark.parametrize(
    "text",
    [
        "",
        "--key k --from-time 2024-05-01 --to-time 1714521600000",
        "--offsets=100: --key-regex '^a' --value-regex 'b c'",
        "--header trace --header 'tenant=acme' --producer-id 7 --producer-id 9",
        "--transaction committed --transaction none --no-control",
        "--control --key first --key last",
    ],
)
def test_where_reads_finds_options_as_find_does(text: str) -> None:
    """One table (log/record_filter.FILTER_OPTIONS) makes both find's click options and the
    --where parser: the same words give the same filter."""
    args = shlex.split(text)
    assert parse_where(text) == _find_filters.main(args, standalone_mode=False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("--key", "Option '--key' requires an argument"),
        ("stray", "unexpected extra argument (stray)"),
        ("--control=yes", "does not take a value"),
        ("--producer-id x", "Invalid value for '--producer-id': 'x' is not a valid integer"),
        ("--header =v", "expected NAME or NAME=VALUE"),
    ],
)
def test_more_bad_where_strings(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as e:
        parse_where(text)
    assert str(e.value).startswith("--where: ")
