"""Fuzz the writing commands on mutated copies of real broker partitions (run by hand).

Every case copies one partition dir of the real corpus (``../shared/corpus/real`` or
``KLOGTOOL_CORPUS``; the fixtures' log dir as well) into a fresh log dir, damages one to three
of its files (bit flips, truncation, random or zero ranges, appended garbage; a stray symlink
out of the tree now and then), runs one writing command in-process and checks the rules of the
security model (docs/security.md):

* the command ends with a documented exit status, never 70 (an internal error);
* nothing outside the case's log dir (and its DEST) changed: a victim tree beside it is hashed
  before and after, and no file appeared anywhere else.

    python bench/fuzz_writers.py --cases 5000 --seed 1
    KLOGTOOL_STRICT_CODES=1 python bench/fuzz_writers.py --read --cases 5000 --seed 1

Prints one line per failure and a summary (exit codes seen, cases per command, time); exit
status 1 when any case broke a rule.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from klogtool.cli import run_captured  # noqa: E402

DOCUMENTED = {0, 1, 2, 3, 4}
COMMANDS: list[list[str]] = [
    ["truncate-recovery"],
    ["truncate-recovery", "--dry-run"],
    ["rebuild-index"],
    ["rebuild-index", "--check"],
    [
        "compact",
        "--assume-defaults",
        "--high-watermark",
        "log-end",
        "--min-cleanable-dirty-ratio",
        "0",
    ],
    ["compact", "--assume-defaults", "--high-watermark", "log-end", "--now", "4102444800000"],
    ["retention-sweep", "--assume-defaults", "--retention-ms", "1", "--high-watermark", "log-end"],
    [
        "retention-sweep",
        "--assume-defaults",
        "--log-start-offset",
        "LSO",
        "--high-watermark",
        "log-end",
    ],
    ["convert-format", "DEST", "--compression", "gzip"],
    ["convert-format", "DEST", "--to-magic", "1", "--allow-lossy"],
    ["convert-format", "--in-place", "--compression", "lz4"],
    ["convert-format", "--in-place", "--to-magic", "2", "--compression", "none"],
]
# --read: the reading commands (and the writers' dry runs) on the same damaged copies
READ_COMMANDS: list[list[str]] = [
    ["verify", "--format", "jsonl"],
    ["verify", "--deep"],
    ["dump-segments", "--deep-iteration", "--print-data", "--format", "jsonl"],
    ["dump-segments", "--format", "json", "--index-sanity-check"],
    ["dump-segments", "--deep-iteration"],
    ["find", "--format", "jsonl", "--jobs", "1"],
    ["find", "--value-regex", "a", "--format", "jsonl", "--jobs", "1"],
    ["stats", "--format", "jsonl", "--jobs", "1"],
    ["describe", "--format", "jsonl"],
    ["explain", "--format", "jsonl"],
    ["transactions", "--format", "jsonl"],
    ["rebuild-index", "--check", "--format", "jsonl"],
    ["truncate-recovery", "--dry-run", "--format", "jsonl"],
    [
        "compact",
        "--assume-defaults",
        "--dry-run",
        "--format",
        "jsonl",
        "--high-watermark",
        "log-end",
    ],
    [
        "retention-sweep",
        "--assume-defaults",
        "--dry-run",
        "--format",
        "jsonl",
        "--retention-ms",
        "1",
    ],
]


def partitions() -> list[Path]:
    corpus = Path(os.environ.get("KLOGTOOL_CORPUS", ROOT.parent / "shared" / "corpus" / "real"))
    found = sorted(
        {p.parent for p in corpus.rglob("*.log") if p.parent.name[-1:].isdigit()}
        | {p for p in (ROOT / "fixtures" / "logs" / "logdir").iterdir() if p.is_dir()}
    )
    return [p for p in found if p.is_dir()]


def mutate(rng: random.Random, part: Path, outside: Path) -> list[str]:
    """Damage 1-3 files of ``part``; returns what was done."""
    files = sorted(p for p in part.iterdir() if p.is_file())
    done = []
    for _ in range(rng.randint(1, 3)):
        if not files:
            break
        f = rng.choice(files)
        data = bytearray(f.read_bytes())
        how = rng.choice(["flip", "flip", "truncate", "random", "zero", "append", "link"])
        if how == "link" and rng.random() < 0.5:
            f.unlink()
            f.symlink_to(outside / "victim.bin")  # a file swapped for a link out of the tree
            done.append(f"link {f.name}")
            continue
        if not data:
            how = "append"
        pos = rng.randrange(len(data)) if data else 0
        if how in ("flip", "link"):
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(len(data))
                data[i] ^= 1 << rng.randrange(8)
        elif how == "truncate":
            del data[pos:]
        elif how == "random":
            n = rng.randint(1, 64)
            data[pos : pos + n] = rng.randbytes(n)
        elif how == "zero":
            n = rng.randint(1, 4096)
            data[pos : pos + n] = bytes(len(data[pos : pos + n]))
        else:
            data += rng.randbytes(rng.randint(1, 200))
        f.write_bytes(bytes(data))
        done.append(f"{how}@{pos} {f.name}")
    return done


def snapshot(root: Path, skip: set[Path]) -> dict[str, str]:
    """Path -> content hash (or link target) of every entry under ``root`` outside ``skip``."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        dirnames[:] = [n for n in dirnames if d / n not in skip]
        for n in filenames + dirnames:
            p = d / n
            if p.is_symlink():
                out[str(p)] = "link:" + os.readlink(p)
            elif p.is_file():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[str(p)] = "dir"
    return out


def one_case(
    rng: random.Random, source: Path, work: Path
) -> tuple[list[str], int, str, list[str], str]:
    outside = work / "outside"
    outside.mkdir()
    (outside / "victim.bin").write_bytes(b"victim" * 100)
    logdir = work / "data"
    logdir.mkdir()
    part = logdir / (source.name if source.name[-1:].isdigit() else "topic-0")
    shutil.copytree(source, part, symlinks=False)
    for cp in ("replication-offset-checkpoint", "log-start-offset-checkpoint"):
        if (source.parent / cp).is_file():
            shutil.copy(source.parent / cp, logdir / cp)
    what = mutate(rng, part, outside)
    command = list(rng.choice(COMMANDS))
    dest = work / "dest"
    command = [str(dest) if a == "DEST" else a for a in command]
    command = [str(rng.randint(0, 3000)) if a == "LSO" else a for a in command]
    target = str(part) if rng.random() < 0.8 else str(logdir)
    args = command[:1] + [target] + command[1:]
    before = snapshot(work, {logdir, dest})
    code, _out, err = run_captured(args, work)
    after = snapshot(work, {logdir, dest})
    problems = []
    if code not in DOCUMENTED:
        problems.append(f"exit {code}: {err.strip()[-300:]}")
    if before != after:
        changed = sorted(set(before.items()) ^ set(after.items()))
        problems.append(f"changed outside the target: {changed[:3]}")
    return args, code, " ".join(what), problems, err.strip().splitlines()[-1:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-v", "--verbose", action="store_true", help="a line for every case")
    ap.add_argument(
        "--read",
        action="store_true",
        help="run the reading commands instead (with KLOGTOOL_STRICT_CODES=1 every finding "
        "code and JSON object is also checked against klogtool/codes.py and events.py)",
    )
    ns = ap.parse_args()
    if ns.read:
        COMMANDS[:] = READ_COMMANDS
    rng = random.Random(ns.seed)
    sources = partitions()
    codes: collections.Counter[int] = collections.Counter()
    per_command: collections.Counter[str] = collections.Counter()
    failures = 0
    start = time.monotonic()
    for i in range(ns.cases):
        with tempfile.TemporaryDirectory(prefix="klogtool-fuzzw-") as tmp:
            args, code, what, problems, last = one_case(rng, rng.choice(sources), Path(tmp))
        if ns.verbose:
            print(f"case {i}: exit {code}: {' '.join(args)} [{what}] {last}", flush=True)
        codes[code] += 1
        per_command[args[0] + (" --check" if "--check" in args else "")] += 1
        for p in problems:
            failures += 1
            print(f"case {i}: {' '.join(args)} [{what}]: {p}", flush=True)
    took = time.monotonic() - start
    print(
        f"{ns.cases} cases (seed {ns.seed}) on {len(sources)} partitions in {took:.0f} s: "
        f"{failures} failures; exit codes {dict(sorted(codes.items()))}; "
        f"per command {dict(sorted(per_command.items()))}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
