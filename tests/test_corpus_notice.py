"""Without the corpus the run says so at the end (issue 10: ~570 tests skipped silently)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_missing_corpus_is_announced_with_the_count(tmp_path: Path) -> None:
    env = {**os.environ, "KLOGTOOL_CORPUS": str(tmp_path / "nowhere")}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "tests/formats/test_snapshot.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-2000:]
    assert "REAL-BROKER CORPUS MISSING" in r.stdout
    line = next(x for x in r.stdout.splitlines() if "tests were skipped because" in x)
    assert int(line.split()[0]) > 0 and "KLOGTOOL_CORPUS" in line
    # the per-corpus-file placeholders are counted too (issue 22: the banner hid them)
    placeholders = int(line.split("; ")[1].split()[0])
    assert 0 < placeholders <= int(line.split()[0])
