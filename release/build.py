"""Build klogtool's wheels and source distribution: what a node without Rust installs.

    python release/build.py [--out dist] [--target-dir DIR]

- x86_64: an abi3 wheel (CPython 3.11 and later, one wheel for all of them) for manylinux2014
  (glibc 2.17), built by maturin with ``--zig``: zig links against an old glibc, so no
  manylinux container is needed;
- aarch64: the same, when the Rust target is installed (``rustup target add
  aarch64-unknown-linux-gnu``); skipped with a note otherwise;
- the source distribution (it builds the native engine on install, with a Rust toolchain).

Each wheel's size and what it links (``auditwheel show``) are printed. The machine needs
Rust (cargo), and maturin, ziglang and auditwheel from the package index (klogtool's ``test``
extra installs them); docs/release.md says more.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu")
COMPATIBILITY = "manylinux2014"


def installed_targets() -> set[str]:
    """The Rust targets rustup has (only the host's when there is no rustup)."""
    if shutil.which("rustup") is None:
        host = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True)
        return {ln.split()[1] for ln in host.stdout.splitlines() if ln.startswith("host:")}
    out = subprocess.run(
        ["rustup", "target", "list", "--installed"], capture_output=True, text=True, check=True
    )
    return set(out.stdout.split())


def build_wheel(target: str, out: Path, target_dir: Path | None = None) -> Path:
    """One abi3 manylinux2014 wheel for ``target`` in ``out``; its path."""
    env = dict(os.environ)
    if target_dir is not None:
        env["CARGO_TARGET_DIR"] = str(target_dir)
    before = set(out.glob("*.whl"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "maturin",
            "build",
            "--release",
            "--zig",
            "--compatibility",
            COMPATIBILITY,
            "--target",
            target,
            "--out",
            str(out),
        ],  # fmt: skip
        cwd=ROOT,
        env=env,
        check=True,
    )
    arch = target.split("-")[0]
    made = [w for w in out.glob(f"*{arch}*.whl") if w not in before] or sorted(
        out.glob(f"*{arch}*.whl")
    )
    return made[-1]


def build_sdist(out: Path) -> Path:
    before = set(out.glob("*.tar.gz"))
    subprocess.run(
        [sys.executable, "-m", "maturin", "sdist", "--out", str(out)], cwd=ROOT, check=True
    )
    made = [s for s in out.glob("*.tar.gz") if s not in before] or sorted(out.glob("*.tar.gz"))
    return made[-1]


def show(wheel: Path) -> str:
    """``auditwheel show``: the platform tag the wheel's links allow."""
    out = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", str(wheel)], capture_output=True, text=True
    )
    return (out.stdout + out.stderr).strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--target-dir", type=Path, default=None, help="cargo's build directory")
    parser.add_argument("--no-sdist", action="store_true")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    have = installed_targets()
    for target in TARGETS:
        if target not in have:
            print(f"skipped {target}: rustup target add {target} builds it", file=sys.stderr)
            continue
        wheel = build_wheel(target, args.out, args.target_dir)
        print(f"{wheel.name}: {wheel.stat().st_size:,} bytes\n{show(wheel)}\n")
    if not args.no_sdist:
        sdist = build_sdist(args.out)
        print(f"{sdist.name}: {sdist.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
