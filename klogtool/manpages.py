"""Generate roff man pages (``man/*.1``) from the Click definitions.

One page for the group (``klogtool.1``) and one per command (``klogtool-<command>.1``; a
nested group's commands get ``klogtool-<group>-<command>.1``). Commands are discovered from
the group at run time, so a new command or option only needs a regeneration::

    python -m klogtool.manpages            # (re)write man/ of the source checkout
    python -m klogtool.manpages --out DIR  # write elsewhere
    python -m klogtool.manpages --check    # exit 1 listing stale, missing and extra pages

The output is deterministic (no dates, no terminal-width dependence, ASCII only) so that
``tests/test_manpages.py`` can compare the committed pages byte for byte.
"""

from __future__ import annotations

import argparse
import enum
import inspect
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click

import klogtool
from klogtool import errors

PROG = "klogtool"
SECTION = "1"
MANUAL = "User Commands"

#: What each ``klogtool.errors.EXIT_*`` constant means (docs/output.md). A new constant without
#: an entry here stops the generator, so that every documented exit code gets described.
EXIT_DESCRIPTIONS: dict[str, str] = {
    "EXIT_OK": "Success; for verify: nothing wrong (warnings allowed).",
    "EXIT_FINDINGS": "verify (or a --check mode) found errors; or a writing command finished "
    "but some inputs were skipped.",
    "EXIT_USAGE": "Usage error (bad option, missing argument).",
    "EXIT_BAD_INPUT": "An input cannot be read or is not a Kafka log file; the message gives "
    "its path and byte position.",
    "EXIT_REFUSED": "Refused for safety: a broker holds the log directory lock, a lossy "
    "conversion without --allow-lossy, or a destination that is not empty.",
    "EXIT_INTERNAL": "Internal error: a bug in klogtool (please report it; --debug shows the "
    "traceback).",
    "EXIT_INTERRUPTED": "Interrupted (Ctrl-C); nothing half-written is left behind.",
    "EXIT_BROKEN_PIPE": "Standard output was closed early (for example by a pipe into head); "
    "the output is cut short.",
}

#: Environment variables read outside Click's own envvar support.
ENVIRONMENT: dict[str, str] = {
    "NO_COLOR": "If set (to any value), output is not coloured unless --color is given "
    "(https://no-color.org).",
}

DIAGNOSTICS = (
    "Errors are printed as one line on standard error,\n"
    "\n"
    "\b\n"
    "    klogtool: error: <path>:<position>: <what> (<code>)\n"
    "\n"
    "followed by a hint where one helps. A traceback is a bug; --debug shows it for "
    "unexpected errors."
)

_UNSET = getattr(click.core, "UNSET", None)  # click >= 8.3 marks "no default" with a sentinel


# --------------------------------------------------------------------------- roff escaping

_OPTION_RE = re.compile(r"(?<![\w\\])(?:\\-){1,2}[A-Za-z][A-Za-z0-9_]*(?:\\-[A-Za-z0-9_]+)*")
_PLACEHOLDER_RE = re.compile(r"[^\[\]{}|.\s]+")


def escape(text: str) -> str:
    """Escape *text* for use inside a roff text line (not the start-of-line handling).

    Backslashes become ``\\e``, every hyphen ``\\-`` (so options and names copy-paste as
    ASCII, as help2man does), quotes the ASCII glyphs, anything non-ASCII ``\\[uXXXX]``.
    """
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\e")
        elif ch == "-":
            out.append("\\-")
        elif ch == "'":
            out.append("\\(aq")
        elif ch == "`":
            out.append("\\(ga")
        elif ch == "\t":
            out.append(" ")
        elif ord(ch) < 32 or ord(ch) == 127:
            continue  # other control characters (e.g. click's \b marker) have no business here
        elif ord(ch) > 127:
            out.append(f"\\[u{ord(ch):04X}]")
        else:
            out.append(ch)
    return "".join(out)


def text_line(line: str) -> str:
    """A roff text line: escaped, option names in bold, never read as a request."""
    rv = _OPTION_RE.sub(lambda m: f"\\fB{m.group(0)}\\fR", escape(line.strip()))
    return safe_line(rv)


def safe_line(line: str) -> str:
    """Guard a text line that would otherwise start a request (``.`` or ``'``)."""
    return "\\&" + line if line[:1] in (".", "'") else line


def bold(text: str) -> str:
    """Literal text (options, commands, values)."""
    return f"\\fB{escape(text)}\\fR"


def italic(text: str) -> str:
    """A placeholder (kept on one line)."""
    return f"\\fI{escape(text)}\\fR".replace(" ", "\\ ")


def no_hyphenation(line: str) -> str:
    """Keep groff from hyphenating words that hold bold or italic text (options, values,
    placeholders): ``\\%`` at the start of a word; inside one it would mark a hyphenation
    point instead, so it is added here, once per word, and nowhere else."""
    if line[:1] in (".", "'"):
        return line  # a request or comment
    return re.sub(r"(?<!\S)(?=\S*\\f[BI])", r"\\%", line)


def placeholders(usage: str) -> str:
    """``[OPTIONS] PATH...`` with the placeholder words in italics."""
    parts = []
    pos = 0
    for m in _PLACEHOLDER_RE.finditer(usage):
        parts.append(escape(usage[pos : m.start()]))
        parts.append(italic(m.group(0)))
        pos = m.end()
    parts.append(escape(usage[pos:]))
    return "".join(parts)


# --------------------------------------------------------------------------- help text


@dataclass(frozen=True)
class Paragraph:
    lines: tuple[str, ...]
    verbatim: bool = False  # click's \b marker: keep the line breaks
    indented: bool = False


def help_text(text: str | None) -> str:
    """The help text as ``--help`` shows it: dedented and cut at click's ``\\f`` marker."""
    return inspect.cleandoc(text or "").partition("\f")[0].strip()


def paragraphs(text: str) -> list[Paragraph]:
    rv = []
    for block in re.split(r"\n[ \t]*\n", text):
        lines = [line.rstrip() for line in block.split("\n") if line.strip()]
        if not lines:
            continue
        if lines[0].strip() == "\b":
            if lines[1:]:
                rv.append(Paragraph(tuple(lines[1:]), verbatim=True))
        else:
            indented = all(line[:1] in (" ", "\t") for line in lines)
            rv.append(Paragraph(tuple(lines), indented=indented))
    return rv


def render_paragraphs(paras: Sequence[Paragraph], first: str | None, then: str) -> list[str]:
    """roff lines for *paras*; *first* / *then* is the macro that opens the first / later ones."""
    out: list[str] = []
    for i, p in enumerate(paras):
        macro = first if i == 0 else then
        if macro:
            out.append(macro)
        if p.indented:
            out.append(".RS 4")
        if p.verbatim:
            out.append(".nf")
            out.extend(safe_line(escape(line.rstrip())) for line in p.lines)
            out.append(".fi")
        else:
            out.extend(text_line(line) for line in p.lines)
        if p.indented:
            out.append(".RE")
    return out


def short_help(cmd: click.Command) -> str:
    rv = cmd.get_short_help_str(limit=10_000).strip()
    return rv[:-1] if rv.endswith(".") and not rv.endswith("..") else rv


# --------------------------------------------------------------------------- options


def _metavar(opt: click.Option) -> str:
    """The option's value placeholder in roff (empty for flags)."""
    if opt.is_flag or opt.count:
        return ""
    if opt.metavar is not None:
        mv = placeholders(opt.metavar)
    elif isinstance(opt.type, click.Choice):
        # one word; \: lets a long list break after a "|" without a hyphen
        mv = "{" + "|\\:".join(bold(str(c)) for c in opt.type.choices) + "}"
    else:
        mv = italic(opt.type.name.upper())
    if opt.nargs != 1:
        mv += "..."
    return mv


def _default(opt: click.Option, ctx: click.Context) -> str | None:
    """The default as shown on the page, or None when there is nothing useful to say."""
    if isinstance(opt.show_default, str):
        return opt.show_default
    if opt.show_default is False:
        return None  # the author hid it on purpose (e.g. machine-dependent)
    value = opt.get_default(ctx, call=False)
    if value is None or value is _UNSET or callable(value):
        return None
    if opt.is_bool_flag:
        if opt.secondary_opts:
            return (opt.opts if value else opt.secondary_opts)[0]
        return "on" if value else None
    if opt.is_flag and value is False:
        return None
    if opt.count and value == 0:
        return None
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) if value else None
    if isinstance(value, enum.Enum):
        return value.name
    return '""' if value == "" else str(value)


def option_lines(opt: click.Option, ctx: click.Context) -> list[str]:
    """A ``.TP`` entry: flags and placeholder, then help, default and notes."""
    mv = _metavar(opt)
    tags = []
    for names in (opt.opts, opt.secondary_opts):
        if names:
            names = sorted(names, key=lambda n: len(n) - len(n.lstrip(n[0])))  # -h before --help
            tags.append(", ".join(bold(n) + (" " + mv if mv else "") for n in names))
    out = [".TP", safe_line(" / ".join(tags))]
    paras = paragraphs(help_text(opt.help))
    notes = []
    default = _default(opt, ctx)
    if default is not None:
        notes.append(f"Default: {default}.")
    if opt.required:
        notes.append("Required.")
    if opt.envvar:
        envvars = [opt.envvar] if isinstance(opt.envvar, str) else list(opt.envvar)
        notes.append(f"Environment variable: {', '.join(envvars)}.")
    if notes:
        if paras and not paras[-1].verbatim:
            last = paras[-1]
            paras[-1] = Paragraph(last.lines + (" ".join(notes),), indented=last.indented)
        else:
            paras.append(Paragraph((" ".join(notes),)))
    out.extend(render_paragraphs(paras, None, ".IP"))
    return out


def visible_options(cmd: click.Command, ctx: click.Context) -> list[click.Option]:
    return [p for p in cmd.get_params(ctx) if isinstance(p, click.Option) and not p.hidden]


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class Node:
    """A command with the names that lead to it (``()`` for the top-level group)."""

    path: tuple[str, ...]
    cmd: click.Command
    ctx: click.Context

    @property
    def page_name(self) -> str:
        return "-".join((PROG,) + self.path)

    @property
    def filename(self) -> str:
        return f"{self.page_name}.{SECTION}"


def make_context(cmd: click.Command, name: str, parent: click.Context | None) -> click.Context:
    """A context as Click builds it for parsing (context_settings applied), minus the parsing."""
    return click.Context(cmd, info_name=name, parent=parent, **cmd.context_settings)


def walk(group: click.Command | None = None) -> Iterator[Node]:
    """The group, then every visible command depth first, in ``--help`` order."""
    if group is None:
        from klogtool.cli import cli

        group = cli
    stack = [Node((), group, make_context(group, PROG, None))]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(subcommands(node)))


def subcommands(node: Node) -> list[Node]:
    """The visible commands of a group node (none for a plain command)."""
    if not isinstance(node.cmd, click.Group):
        return []
    rv = []
    for name in node.cmd.list_commands(node.ctx):
        sub = node.cmd.get_command(node.ctx, name)
        if sub is not None and not sub.hidden:
            rv.append(Node(node.path + (name,), sub, make_context(sub, name, node.ctx)))
    return rv


class ManpageError(Exception):
    """The Click definitions cannot be documented as they are."""


def exit_codes() -> list[tuple[int, str]]:
    codes: dict[int, str] = {}
    for name, value in vars(errors).items():
        if not (name.startswith("EXIT_") and isinstance(value, int)):
            continue
        if name not in EXIT_DESCRIPTIONS:
            raise ManpageError(
                f"klogtool.errors.{name} = {value} has no description: add it to "
                "EXIT_DESCRIPTIONS in klogtool/manpages.py (see docs/output.md)"
            )
        codes[value] = EXIT_DESCRIPTIONS[name]
    return sorted(codes.items())


def _header(node: Node) -> list[str]:
    title = escape(node.page_name.upper())
    return [
        '.\\" Generated from the Click definitions by "python -m klogtool.manpages".',
        '.\\" Do not edit: change the help texts and regenerate.',
        f'.TH {title} {SECTION} "" "{escape(PROG)} {escape(klogtool.__version__)}" "{MANUAL}"',
        ".SH NAME",
        safe_line(f"{escape(node.page_name)} \\- {escape(short_help(node.cmd))}"),
    ]


def _synopsis(node: Node) -> list[str]:
    usage = " ".join(node.cmd.collect_usage_pieces(node.ctx))
    if isinstance(node.cmd, click.Group) and not usage.endswith("COMMAND [ARGS]..."):
        usage += " COMMAND [ARGS]..."
    words = [bold(PROG)]
    if node.path:
        words.append("[\\fIGLOBAL\\ OPTIONS\\fR]")  # "\\ ": no line break inside
        words.extend(bold(name) for name in node.path)
    words.append(placeholders(usage))
    return [".SH SYNOPSIS", safe_line(" ".join(words))]


def _exit_status(lead: Sequence[Paragraph]) -> list[str]:
    out = [".SH EXIT STATUS"]
    if lead:
        out += render_paragraphs(lead, None, ".PP")
        out += [".PP", "All exit codes:"]
    for code, text in exit_codes():
        out += [".TP", bold(str(code)), text_line(text)]
    return out


def _see_also(refs: Sequence[str]) -> list[str]:
    return (
        [".SH SEE ALSO"]
        + [f"{bold(r)}({SECTION})," for r in refs[:-1]]
        + [f"{bold(refs[-1])}({SECTION})"]
    )


def _environment(nodes: Sequence[Node]) -> list[str]:
    entries = dict(ENVIRONMENT)
    for node in nodes:
        for opt in visible_options(node.cmd, node.ctx):
            envvars = [opt.envvar] if isinstance(opt.envvar, str) else list(opt.envvar or ())
            where = " ".join((PROG,) + node.path)
            for var in envvars:
                entries.setdefault(var, f"Default for {opt.opts[-1]} of {where}.")
    out = [".SH ENVIRONMENT"]
    for var in sorted(entries):
        out += [".TP", bold(var), text_line(entries[var])]
    return out


def _commands(node: Node) -> list[str]:
    out = [".SH COMMANDS"]
    for sub in subcommands(node):
        out += [".TP", bold(" ".join(sub.path[len(node.path) :]))]
        out += [text_line(short_help(sub.cmd) + "."), f"See {bold(sub.page_name)}({SECTION})."]
    return out


def examples_of(cmd: click.Command) -> list[tuple[str, list[str]]]:
    """The ``EXAMPLES`` list of the module that defines ``cmd`` (kept beside the command)."""
    callback = cmd.callback
    module = sys.modules.get(callback.__module__) if callback is not None else None
    return list(getattr(module, "EXAMPLES", []))


def _examples(node: Node) -> list[str]:
    items = examples_of(node.cmd)
    if not items:
        return []
    out = [".SH EXAMPLES"]
    for what, lines in items:
        out += [".PP", text_line(what), ".PP", ".RS 4", ".nf"]
        out += [safe_line(bold(line)) for line in lines]
        out += [".fi", ".RE"]
    return out


def render_page(node: Node, all_nodes: Sequence[Node]) -> str:
    text = help_text(node.cmd.help)
    paras = paragraphs(text)
    lead = [p for p in paras if p.lines[0].lstrip().lower().startswith("exit status")]
    desc = [p for p in paras if p not in lead]
    out = _header(node) + _synopsis(node)
    if node.cmd.deprecated:
        out += [".SH DEPRECATED", "This command is deprecated."]
    out += [".SH DESCRIPTION"] + render_paragraphs(desc, None, ".PP")
    options = visible_options(node.cmd, node.ctx)
    if options:
        out.append(".SH GLOBAL OPTIONS" if not node.path else ".SH OPTIONS")
        for opt in options:
            out += option_lines(opt, node.ctx)
        if node.path:
            parents = ["-".join((PROG,) + node.path[:i]) for i in range(len(node.path))]
            see = ", ".join(f"{bold(p)}({SECTION})" for p in parents)
            out += [".PP", f"Global options go before the command name; see {see}."]
    if isinstance(node.cmd, click.Group):
        out += _commands(node)
    out += _examples(node)
    out += _exit_status(lead)
    if not node.path:
        out += _environment(all_nodes)
        out += [".SH DIAGNOSTICS"] + render_paragraphs(paragraphs(DIAGNOSTICS), None, ".PP")
        refs = [n.page_name for n in all_nodes if n.path]
    else:
        refs = ["-".join((PROG,) + node.path[:i]) for i in range(len(node.path))]
        refs += [n.page_name for n in subcommands(node)]
    if refs:
        out += _see_also(refs)
    return "\n".join(no_hyphenation(line) for line in out) + "\n"


def generate(group: click.Command | None = None) -> dict[str, str]:
    """``{file name: page text}`` for the group and every visible command."""
    nodes = list(walk(group))
    return {node.filename: render_page(node, nodes) for node in nodes}


def is_page_name(name: str) -> bool:
    """Whether a file name in the man directory is one of ours (generated or stale)."""
    return name == f"{PROG}.{SECTION}" or (
        name.startswith(f"{PROG}-") and name.endswith(f".{SECTION}")
    )


@dataclass
class Diff:
    stale: list[str]
    missing: list[str]
    extra: list[str]

    def __bool__(self) -> bool:
        return bool(self.stale or self.missing or self.extra)


def compare(pages: dict[str, str], out_dir: Path) -> Diff:
    present = sorted(p.name for p in out_dir.glob(f"*.{SECTION}") if is_page_name(p.name))
    diff = Diff([], [], [n for n in present if n not in pages])
    for name, text in pages.items():
        path = out_dir / name
        if not path.is_file():
            diff.missing.append(name)
        elif path.read_bytes() != text.encode("ascii"):
            diff.stale.append(name)
    return diff


def default_out_dir() -> Path:
    root = Path(__file__).resolve().parent.parent
    return root / "man" if (root / "pyproject.toml").is_file() else Path("man")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m klogtool.manpages",
        description="Generate klogtool's man pages from its Click definitions.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory of the pages (default: man/ of the source checkout)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 listing stale, missing and extra pages",
    )
    args = parser.parse_args(argv)
    out_dir: Path = args.out if args.out is not None else default_out_dir()
    try:
        pages = generate()
    except ManpageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    diff = compare(pages, out_dir) if out_dir.is_dir() else Diff([], sorted(pages), [])
    if args.check:
        for kind in ("stale", "missing", "extra"):
            for name in getattr(diff, kind):
                print(f"{kind}: {out_dir / name}")
        if diff:
            print("run `python -m klogtool.manpages` to regenerate the man pages", file=sys.stderr)
            return 1
        print(f"{len(pages)} man pages in {out_dir} are up to date")
        return 0
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in diff.stale + diff.missing:
        (out_dir / name).write_bytes(pages[name].encode("ascii"))
        print(f"wrote {out_dir / name}")
    for name in diff.extra:
        (out_dir / name).unlink()
        print(f"removed {out_dir / name}")
    if not diff:
        print(f"{len(pages)} man pages in {out_dir} are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
