"""The wheel a node without Rust installs (issue 26): built by release/build.py, installed in a
fresh virtual environment with no cargo on its PATH and only binary packages allowed, then
the CLI runs on the fixtures with the native engine out of that wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.cli import run
from support.paths import LOGDIR, ROOT

sys.path.insert(0, str(ROOT / "release"))
import build  # noqa: E402

# cargo's build directory for the wheel, kept between runs (the first build takes minutes): beside
# the native build's (CARGO_TARGET_DIR, which a clone may share with its origin, as CI's does)
TARGET_DIR = Path(os.environ.get("CARGO_TARGET_DIR", str(ROOT / "native" / "target")) + "-wheel")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("cargo") is None or not build.installed_targets():
        pytest.skip("no Rust toolchain here to build the wheel with")
    out = tmp_path_factory.mktemp("dist")
    return build.build_wheel("x86_64-unknown-linux-gnu", out, TARGET_DIR)


def test_the_wheel_is_abi3_manylinux2014_and_small(wheel: Path) -> None:
    assert wheel.name.startswith("klogtool-") and "-cp311-abi3-" in wheel.name
    assert "manylinux2014_x86_64" in wheel.name or "manylinux_2_17_x86_64" in wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert "klogtool/_native.abi3.so" in names and "klogtool/cli.py" in names
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]
    assert wheel.stat().st_size < 4_000_000
    shown = build.show(wheel)
    assert 'consistent with the following platform tag:\n"manylinux_2_17_x86_64"' in shown


def test_a_node_without_rust_runs_it_natively(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bindir = venv / "bin"
    env = {"PATH": str(bindir), "HOME": str(tmp_path), "LC_ALL": "C.UTF-8"}
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CERT", "SSL_CERT_FILE"):
        if name in os.environ:
            env[name] = os.environ[name]
    assert shutil.which("cargo", path=env["PATH"]) is None
    subprocess.run(
        [
            bindir / "python",
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--only-binary=:all:",
            str(wheel),
        ],  # fmt: skip
        env=env,
        check=True,
    )
    where = subprocess.run(
        [bindir / "python", "-c", "import klogtool._native as n; print(n.__file__)"],
        env=env,
        cwd=tmp_path,  # not beside the checkout's own klogtool
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip().startswith(str(venv))
    verify = subprocess.run(
        [bindir / "klogtool", "verify", "--deep", "--format", "jsonl", str(LOGDIR)],
        env={**env, "KLOGTOOL_ENGINE": "native", "KLOGTOOL_ENGINE_STATS": "1"},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert verify.returncode == 0, verify.stderr
    assert '"type":"summary"' in verify.stdout.replace(" ", "")
    # the native engine ran (the python engine's line says there is none) and handed back
    # nothing of the fixtures
    assert "klogtool engine: 0 batches handed back" in verify.stderr, verify.stderr
    dump = subprocess.run(
        [
            bindir / "klogtool",
            "dump-segments",
            "--deep-iteration",
            "--print-data",
            str(LOGDIR / "v2-zstd-0" / "00000000000000000000.log"),
        ],  # fmt: skip
        env={**env, "KLOGTOOL_ENGINE": "native"},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert dump.returncode == 0, dump.stderr
    # the same lines as this checkout's own klogtool prints
    code, mine, _ = run(
        "dump-segments", "--deep-iteration", "--print-data",
        str(LOGDIR / "v2-zstd-0" / "00000000000000000000.log"),
    )  # fmt: skip
    assert code == 0 and dump.stdout == mine and "value: value-16" in mine
