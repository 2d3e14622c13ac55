"""The native engine's Rust checks are part of the test suite: the one test command runs
``cargo fmt --check``, ``cargo clippy -D warnings`` and ``cargo test`` on ``native/``.

Without cargo they skip, saying so, except where ``KLOGTOOL_REQUIRE_NATIVE`` is set (CI)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CRATE = Path(__file__).resolve().parent.parent / "native"

pytestmark = pytest.mark.skipif(
    shutil.which("cargo") is None and not os.environ.get("KLOGTOOL_REQUIRE_NATIVE"),
    reason="cargo is not installed (the native engine's Rust checks need it)",
)


def _cargo(*args: str) -> None:
    r = subprocess.run(["cargo", *args], cwd=CRATE, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, f"cargo {' '.join(args)}:\n{r.stdout}\n{r.stderr}"


def test_cargo_fmt() -> None:
    _cargo("fmt", "--check")


def test_cargo_clippy() -> None:
    _cargo("clippy", "--all-targets", "--features", "python", "--", "-D", "warnings")


def test_cargo_test() -> None:
    _cargo("test", "--quiet")
