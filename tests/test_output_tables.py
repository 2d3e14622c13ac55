"""Tables for a file or a pipe are drawn without Rich (start-up time): the same text as Rich
draws them, for any title, header and cells Rich is not needed for."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table

from klogtool.output import Output, plain_table, strip_line_ends

# printable ASCII; no ':' (Rich would turn ":smile:" into an emoji, which a path must not be)
text = st.text(
    st.characters(min_codepoint=32, max_codepoint=126, blacklist_characters=":"), max_size=12
)


def rich_table(title: str, columns: list[str], rows: list[list[str]], left: frozenset[str]) -> str:
    """What Output.table draws with Rich for a file or a pipe (line ends stripped)."""
    console = Console(file=io.StringIO(), markup=False, highlight=False, soft_wrap=True)
    console.width = 10_000
    t = Table(title=title, title_justify="left", box=None, show_edge=False, pad_edge=False)
    for i, c in enumerate(columns):
        right = not (i == 0 or c in left)
        width = max([len(c)] + [len(r[i]) for r in rows if i < len(r)]) if right else None
        t.add_column(c, justify="right" if right else "left", no_wrap=right, min_width=width)
    for r in rows:
        t.add_row(*r)
    console.print(t)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return strip_line_ends(out)


@settings(max_examples=300, deadline=None)
@given(
    title=text,
    columns=st.lists(text.filter(str.strip), min_size=1, max_size=5, unique=True),
    data=st.data(),
)
def test_plain_tables_are_what_rich_draws(title: str, columns: list[str], data) -> None:
    n = len(columns)
    rows = data.draw(st.lists(st.lists(text, min_size=1, max_size=n), max_size=6))
    left = frozenset(data.draw(st.sets(st.sampled_from(columns))))
    assert plain_table(title, columns, rows, left) == rich_table(title, columns, rows, left)


def test_output_uses_rich_only_where_plain_text_would_differ() -> None:
    buf = io.StringIO()
    out = Output("text", stdout=buf, progress=False)
    out.table("t", ["name", "n"], [["a", "1"], ["bb", "22"]])
    assert buf.getvalue() == "t\nname   n\na      1\nbb    22\n"
    assert "data" not in vars(out)  # no Rich console was made
    out.table("t", ["name", "n"], [["é", "1"]])  # not ASCII: Rich lays it out
    assert "data" in vars(out) and buf.getvalue().endswith("é     1\n")


def test_piped_table_lines_do_not_end_in_blanks() -> None:
    """A left-aligned last column was padded to its widest cell: every row as wide as the
    widest, so all of them wrapped in an 80-column viewer. Fails before the fix."""
    long_note = "a note that is much longer than the others " * 2
    rows = [["a", "1", "ok"], ["bb", "22", long_note], ["ccc", "333", ""]]
    for cells in (rows, [*rows, ["é", "4", "ok"]]):  # plain_table, then Rich (not ASCII)
        buf = io.StringIO()
        Output("text", stdout=buf, progress=False).table(
            "title ", ["name", "n", "note"], cells, left=frozenset({"note"})
        )
        lines = buf.getvalue().splitlines()
        assert lines[0] == "title"
        assert all(line == line.rstrip() for line in lines), lines
        assert lines[1:5] == [
            "name    n  note",
            "a       1  ok",
            "bb     22  " + long_note.rstrip(),
            "ccc   333",
        ]
