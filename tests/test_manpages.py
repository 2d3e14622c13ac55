"""man/*.1 must match the Click definitions. After adding or changing a command, an option or
a help text, regenerate them with ``python -m klogtool.manpages`` and commit the result."""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
from pathlib import Path

import click
import pytest

from klogtool import manpages
from klogtool.cli import cli

MAN = Path(__file__).resolve().parent.parent / "man"
REGENERATE = "regenerate with `python -m klogtool.manpages` and commit man/"
GROFF = shutil.which("groff")
needs_groff = pytest.mark.skipif(GROFF is None, reason="groff is not installed")


def _commands(
    group: click.Group = cli, path: tuple[str, ...] = (), parent: click.Context | None = None
) -> list[tuple[tuple[str, ...], click.Command, click.Context]]:
    """Every visible command, found here independently of the generator's own walk."""
    name = path[-1] if path else "klogtool"
    ctx = click.Context(group, info_name=name, parent=parent, **group.context_settings)
    rv: list[tuple[tuple[str, ...], click.Command, click.Context]] = [(path, group, ctx)]
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        if isinstance(cmd, click.Group):
            rv.extend(_commands(cmd, path + (name,), ctx))
        else:
            sub = click.Context(cmd, info_name=name, parent=ctx, **cmd.context_settings)
            rv.append((path + (name,), cmd, sub))
    return rv


def _page_name(path: tuple[str, ...]) -> str:
    return "-".join(("klogtool",) + path) + ".1"


def _roff(flag: str) -> str:
    return flag.replace("\\", "\\e").replace("-", "\\-")


COMMANDS = _commands()
PAGES = manpages.generate()


# --------------------------------------------------------------------------- staleness


def test_every_command_has_a_page() -> None:
    missing = [_page_name(p) for p, _, _ in COMMANDS if not (MAN / _page_name(p)).is_file()]
    assert not missing, f"no man page for {', '.join(missing)}: {REGENERATE}"


def test_no_page_for_a_command_that_no_longer_exists() -> None:
    expected = {_page_name(p) for p, _, _ in COMMANDS}
    present = {p.name for p in MAN.glob("*.1")}
    extra = sorted(present - expected)
    assert not extra, f"man pages of commands that no longer exist: {', '.join(extra)}: " + (
        REGENERATE
    )


def test_generator_covers_every_command() -> None:
    assert sorted(PAGES) == sorted(_page_name(p) for p, _, _ in COMMANDS)


def test_pages_are_up_to_date() -> None:
    stale = []
    first_diff: list[str] = []
    for name, text in sorted(PAGES.items()):
        path = MAN / name
        if not path.is_file():
            continue  # reported by test_every_command_has_a_page
        current = path.read_text(encoding="ascii", errors="replace")
        if current != text:
            stale.append(name)
            if not first_diff:
                first_diff = list(
                    difflib.unified_diff(
                        current.splitlines(),
                        text.splitlines(),
                        f"man/{name} (committed)",
                        f"man/{name} (generated now)",
                        lineterm="",
                    )
                )[:40]
    assert not stale, f"stale man pages: {', '.join(stale)}: {REGENERATE}\n" + "\n".join(first_diff)


def test_check_mode_agrees() -> None:
    assert manpages.main(["--check", "--out", str(MAN)]) == 0, REGENERATE


# --------------------------------------------------------------------------- content


def _section(page: str, title: str) -> str:
    m = re.search(rf"^\.SH {title}\n(.*?)(?=^\.SH |\Z)", page, re.M | re.S)
    assert m, f"no {title} section"
    return m.group(1)


@pytest.mark.parametrize(
    "path,cmd,ctx", COMMANDS, ids=[" ".join(p) or "klogtool" for p, _, _ in COMMANDS]
)
def test_every_option_appears_in_its_page(
    path: tuple[str, ...], cmd: click.Command, ctx: click.Context
) -> None:
    page = PAGES[_page_name(path)]
    options = _section(page, "GLOBAL OPTIONS" if not path else "OPTIONS")
    tags = re.findall(r"^\.TP\n(.*)$", options, re.M)
    seen = 0
    for param in cmd.get_params(ctx):
        if not isinstance(param, click.Option) or param.hidden:
            continue
        seen += 1
        tag = next((t for t in tags if f"\\fB{_roff(param.opts[0])}\\fR" in t), None)
        assert tag is not None, f"{param.opts[0]} is missing from {_page_name(path)}"
        for flag in param.opts + param.secondary_opts:
            assert f"\\fB{_roff(flag)}\\fR" in tag, f"{flag} is missing from {_page_name(path)}"
        if isinstance(param.type, click.Choice):
            for choice in param.type.choices:
                assert f"\\fB{_roff(str(choice))}\\fR" in tag, f"{param.opts[0]}: {choice}"
        elif param.metavar:
            plain = re.sub(r"\\f[BIR]|\\%|\\:", "", tag)
            assert _roff(param.metavar) in plain, f"{param.opts[0]}: metavar"
        if param.show_default is True and param.default not in (None, False):
            assert f"Default: {_roff(str(param.default))}." in options, param.opts[0]
    assert len(tags) == seen, "options in the page that the command does not have"


def test_group_page_lists_commands_exit_codes_and_environment() -> None:
    page = PAGES["klogtool.1"]
    listed = _section(page, "COMMANDS")
    for path, _, _ in COMMANDS:
        if len(path) == 1:
            assert f"\\fB{_roff(path[0])}\\fR" in listed
    exit_status = _section(page, "EXIT STATUS")
    from klogtool import errors

    for name, value in vars(errors).items():
        if name.startswith("EXIT_"):
            assert f".TP\n\\%\\fB{value}\\fR\n" in exit_status, name
    assert "NO_COLOR" in _section(page, "ENVIRONMENT")
    see_also = _section(page, "SEE ALSO")
    for path, _, _ in COMMANDS[1:]:
        assert _roff(_page_name(path)[:-2]) in see_also


def test_pages_are_deterministic() -> None:
    assert manpages.generate() == PAGES


# --------------------------------------------------------------------------- escaping


def test_escape() -> None:
    assert manpages.escape(r"a\b") == r"a\eb"
    assert manpages.escape("--x-y") == r"\-\-x\-y"
    assert manpages.escape("it's `x`") == r"it\(aqs \(gax\(ga"
    assert manpages.escape("a → b") == r"a \[u2192] b"
    assert manpages.text_line(".hidden request") == r"\&.hidden request"
    assert manpages.text_line("'also a request") == r"\(aqalso a request"
    assert manpages.text_line("use --dry-run, -v/-q") == (
        r"use \fB\-\-dry\-run\fR, \fB\-v\fR/\fB\-q\fR"
    )
    assert manpages.text_line("decompression-bomb, -1, - for stdin") == (
        r"decompression\-bomb, \-1, \- for stdin"
    )


def _synthetic() -> click.Group:
    """A group with the awkward cases the real commands may grow into."""

    @click.group(context_settings={"help_option_names": ["-h", "--help"]})
    @click.option("--level", type=click.IntRange(0, 9), default=3, help="A number.")
    def group(level: int) -> None:
        """Top line.

        .starts with a dot, 'starts with a quote, C:\\path\\name and caf\u00e9.

        \b
        verbatim   block
        .  kept as is
        \f
        Not shown: after click's cut marker.
        """

    @group.command("sub")
    @click.argument("src", type=click.Path())
    @click.argument("dst", required=False)
    @click.option("--mode", type=click.Choice(["a", "b-c"]), default="b-c", show_default=True)
    @click.option("--progress/--no-progress", default=True, help="Progress bars.")
    @click.option("--tag", multiple=True, help="Repeatable.")
    @click.option("--name", required=True, envvar="KLOG_NAME", help=".Leading dot.")
    @click.option("--secret", hidden=True)
    @click.option("--size", default=lambda: 42, show_default="42 or the environment's")
    @click.option("-n", "--count", count=True)
    def sub(**_: object) -> None:
        """Do a thing.

        Exit status: 0 done, 1 not done.
        """

    @group.group("grp", hidden=False)
    def grp() -> None:
        """A nested group."""

    @grp.command("leaf")
    def leaf() -> None:
        """A leaf."""

    @group.command("secret", hidden=True)
    def secret() -> None:
        """Hidden."""

    return group


REQUESTS = {".TH", ".SH", ".TP", ".PP", ".IP", ".RS", ".RE", ".nf", ".fi", '.\\"'}


def test_generator_handles_awkward_definitions() -> None:
    pages = manpages.generate(_synthetic())
    assert sorted(pages) == [
        "klogtool-grp-leaf.1",
        "klogtool-grp.1",
        "klogtool-sub.1",
        "klogtool.1",
    ]
    for name, text in pages.items():
        text.encode("ascii")
        for line in text.splitlines():
            assert line == line.rstrip(), f"{name}: trailing blank: {line!r}"
            assert line, f"{name}: empty line"
            if line[0] in ".'":
                assert line.split(" ")[0] in REQUESTS, f"{name}: stray request {line!r}"
    top = pages["klogtool.1"]
    assert "\\&.starts with a dot, \\(aqstarts with a quote, C:\\epath\\ename" in top
    assert "caf\\[u00E9]" in top
    assert ".nf\nverbatim   block\n\\&.  kept as is\n.fi" in top
    assert "Not shown" not in top
    assert "\\fBgrp leaf\\fR" not in top and "\\fBgrp\\fR" in top
    assert "secret" not in top
    sub = pages["klogtool-sub.1"]
    assert "secret" not in sub
    assert "\\fBsub\\fR \\%[\\fIOPTIONS\\fR] \\%\\fISRC\\fR \\%[\\fIDST\\fR]" in sub
    assert "\\fB\\-\\-progress\\fR / \\%\\fB\\-\\-no\\-progress\\fR" in sub
    assert "Default: \\%\\fB\\-\\-progress\\fR." in sub
    assert "Default: b\\-c." in sub
    assert "\\(aqs." in sub  # the show_default string, not the callable's value
    assert "Required. Environment variable: KLOG_NAME." in sub
    assert "\\&.Leading dot." in sub
    assert "\\fB\\-n\\fR, \\%\\fB\\-\\-count\\fR\n" in sub
    exit_status = _section(sub, "EXIT STATUS")
    assert exit_status.startswith("Exit status: 0 done, 1 not done.\n")
    assert "Exit status" not in _section(sub, "DESCRIPTION")
    assert "KLOG_NAME" in _section(top, "ENVIRONMENT")
    leaf = pages["klogtool-grp-leaf.1"]
    assert "\\fBgrp\\fR \\%\\fBleaf\\fR" in leaf
    assert "\\fBklogtool\\-grp\\fR(1)" in _section(leaf, "SEE ALSO")
    assert "see \\%\\fBklogtool\\fR(1), \\%\\fBklogtool\\-grp\\fR(1)." in leaf
    assert "\\fIINTEGER\\ RANGE\\fR" in top
    if GROFF:
        for name, text in pages.items():
            assert _groff_warnings(text) == "", name


def test_undocumented_exit_code_stops_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    from klogtool import errors

    monkeypatch.setattr(errors, "EXIT_SOMETHING_NEW", 5, raising=False)
    with pytest.raises(manpages.ManpageError, match="EXIT_SOMETHING_NEW"):
        manpages.generate()


# --------------------------------------------------------------------------- the script


def test_write_and_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "man"
    assert manpages.main(["--check", "--out", str(out)]) == 1
    assert "missing: " in capsys.readouterr().out
    assert manpages.main(["--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(PAGES)
    assert manpages.main(["--check", "--out", str(out)]) == 0
    capsys.readouterr()

    (out / "klogtool.1").write_text("stale\n")
    (out / "klogtool-gone.1").write_text("a removed command\n")
    (out / "README").write_text("not a page\n")
    assert manpages.main(["--check", "--out", str(out)]) == 1
    report = capsys.readouterr().out
    assert f"stale: {out / 'klogtool.1'}" in report
    assert f"extra: {out / 'klogtool-gone.1'}" in report

    assert manpages.main(["--out", str(out)]) == 0
    assert not (out / "klogtool-gone.1").exists()
    assert (out / "README").exists()
    assert (out / "klogtool.1").read_text() == PAGES["klogtool.1"]
    assert manpages.main(["--check", "--out", str(out)]) == 0


# --------------------------------------------------------------------------- rendering


def _groff(text: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert GROFF is not None
    return subprocess.run(
        [GROFF, "-man", *args],
        input=text,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "LC_ALL": "C"},
    )


def _groff_warnings(text: str) -> str:
    r = _groff(text, "-Tutf8", "-ww", "-z")
    return r.stderr.strip() or ("" if r.returncode == 0 else f"exit {r.returncode}")


@needs_groff
@pytest.mark.parametrize("name", sorted(PAGES))
def test_groff_renders_without_warnings(name: str) -> None:
    assert _groff_warnings(PAGES[name]) == ""


@needs_groff
@pytest.mark.parametrize(
    "path,cmd,ctx", COMMANDS, ids=[" ".join(p) or "klogtool" for p, _, _ in COMMANDS]
)
def test_rendered_page_shows_every_option(
    path: tuple[str, ...], cmd: click.Command, ctx: click.Context
) -> None:
    r = _groff(PAGES[_page_name(path)], "-Tascii", "-P-c", "-P-b", "-P-u")
    assert r.returncode == 0, r.stderr
    words = set(re.split(r"[\s,/()\[\]{}|]+", r.stdout))
    for param in cmd.get_params(ctx):
        if isinstance(param, click.Option) and not param.hidden:
            for flag in param.opts + param.secondary_opts:
                assert flag in words, f"{flag} not in the rendered {_page_name(path)}"


def test_every_page_has_examples() -> None:
    # issue 10: an EXAMPLES section in each page, from the EXAMPLES list beside the command
    from klogtool import manpages

    pages = manpages.generate()
    assert pages and all(".SH EXAMPLES" in text for text in pages.values())


def test_the_man_command_shows_the_committed_page() -> None:
    from support.cli import run

    code, out, _err = run("man", "verify")
    committed = Path(__file__).resolve().parents[1] / "man" / "klogtool-verify.1"
    assert code == 0 and out == committed.read_text(encoding="utf-8")
    code, _out, err = run("man", "no-such-command")
    assert code == 2 and "no such command" in err
