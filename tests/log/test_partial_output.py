"""convert-format's partial output directory and the writing commands' leftovers against
hostile trees (security review, issue 11 items 3 and 12; Ctrl-C, issue 10)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.cli import run
from support.rewrite import generate, materialise, tree, write_partition

from klogtool.formats import codecs
from klogtool.formats.batch import Record
from klogtool.formats.v2 import encode_batch
from klogtool.log.atomic import FileOps
from klogtool.log.context import ReadContext
from klogtool.log.rewrite import converter
from klogtool.log.rewrite.converter import ConvertOptions, execute_conversion, plan_conversion

T0 = 1_700_000_000_000


def _partition(tmp_path: Path) -> Path:
    part = tmp_path / "src" / "t-0"
    segs = []
    for base in (0, 5):
        recs = [Record(o, T0 + o, b"k%d" % o, b"v%d" % o) for o in range(base, base + 5)]
        segs.append((base, [encode_batch(recs)]))
    write_partition(part, segs)
    return part


def _victim_dir(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "important").write_bytes(b"keep me")
    (victim / "sub").mkdir()
    (victim / "sub" / "also").write_bytes(b"keep me too")
    return victim


def test_a_symlinked_partial_dir_is_refused_and_not_followed(tmp_path: Path) -> None:
    part = _partition(tmp_path)
    victim = _victim_dir(tmp_path)
    before = tree(victim)
    dest = tmp_path / "out"
    partial = tmp_path / ".out.klogtool-partial"
    partial.symlink_to(victim, target_is_directory=True)
    # even with klogtool's marker in the directory it points to
    (victim / ".klogtool-partial").write_bytes(converter.PARTIAL_TEXT)
    before = tree(victim)
    code, _, err = run("convert-format", str(part), str(dest), "--compression", "gzip")
    assert code == 4 and "destination-not-empty" in err, err
    assert tree(victim) == before and partial.is_symlink() and not dest.exists()


def test_a_foreign_directory_with_the_partial_name_is_refused(tmp_path: Path) -> None:
    part = _partition(tmp_path)
    partial = tmp_path / ".out.klogtool-partial"
    partial.mkdir()
    (partial / "someones-file").write_bytes(b"x")
    (partial / ".klogtool-partial").symlink_to(tmp_path / "nowhere")  # a link, not our marker
    code, _, err = run("convert-format", str(part), str(tmp_path / "out"))
    assert code == 4 and "destination-not-empty" in err, err
    assert (partial / "someones-file").read_bytes() == b"x"


def test_a_stale_partial_dir_of_ours_is_removed_without_following_links(tmp_path: Path) -> None:
    part = _partition(tmp_path)
    victim = _victim_dir(tmp_path)
    before = tree(victim)
    partial = tmp_path / ".out.klogtool-partial"
    (partial / "t-0").mkdir(parents=True)
    (partial / ".klogtool-partial").write_bytes(converter.PARTIAL_TEXT)
    (partial / "t-0" / "00000000000000000000.log").write_bytes(b"half")
    (partial / "t-0" / "linked").symlink_to(victim, target_is_directory=True)
    (partial / "linked-file").symlink_to(victim / "important")
    code, _, err = run("convert-format", str(part), str(tmp_path / "out"))
    assert code == 0, err
    assert not os.path.lexists(partial) and (tmp_path / "out").is_dir()
    assert tree(victim) == before


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), OSError(28, "No space left on device")])
def test_an_interrupted_conversion_leaves_no_partial_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: BaseException
) -> None:
    part = _partition(tmp_path)
    dest = tmp_path / "out"
    plan = plan_conversion(part, ConvertOptions(ctx=ReadContext.of(), compression=codecs.GZIP))
    real = converter._write_segment_files
    calls: list[int] = []

    def interrupted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            raise exc  # Ctrl-C (or a full disk) in the middle of the second segment
        return real(*args, **kwargs)

    monkeypatch.setattr(converter, "_write_segment_files", interrupted)
    with pytest.raises(type(exc)):
        execute_conversion(FileOps(), plan, dest=dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


@pytest.mark.parametrize("command", ["compact", "--assume-defaults", "convert-in-place"])
def test_a_dangling_cleaned_link_does_not_block_a_rewrite(tmp_path: Path, command: str) -> None:
    g = generate(seed=21, codec=codecs.GZIP, segments=3, batches_per_segment=5)
    logdir = tmp_path / "logdir"
    materialise(g, logdir)
    part = logdir / "gen-0"
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("00000000000000000000.log.cleaned", "00000000000000000000.index.cleaned"):
        (part / name).symlink_to(outside / name)
    args = (
        ["compact", "--assume-defaults", str(part), "--now", str(T0 + 10**12)]
        if command == "compact"
        else ["convert-format", str(part), "--in-place", "--compression", "lz4"]
    )
    code, _, err = run(*args)
    assert code in (0, 1), err
    assert "File exists" not in err
    assert not [p for p in part.iterdir() if p.is_symlink()]
    assert list(outside.iterdir()) == []
