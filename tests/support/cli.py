"""Running klogtool in tests: in-process (:func:`run`) or as a real process
(:func:`run_subprocess`); reading its JSON Lines; ``fixtures/generate.py``'s builders."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from klogtool.cli import run_captured
from support.paths import FIXTURES, LOGS

# docs/output.md: ``klogtool: error: <path>[:<position>]: <what> (<code>)``
ERROR_LINE = r"^klogtool: error: .+ \(.+\)$"


@cache
def generator() -> ModuleType:
    """``fixtures/generate.py`` as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location(
        "klogtool_fixtures_generate", FIXTURES / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses need the module registered
    spec.loader.exec_module(module)
    return module


def run(*args: str, cwd: Path = LOGS) -> tuple[int, str, str]:
    """``klogtool ARGS`` in-process (fast): ``(exit code, stdout, stderr)``."""
    return run_captured(args, cwd)


def run_subprocess(
    *args: str,
    cwd: Path = LOGS,
    stdin: Any = None,
    module: bool = False,
    stdin_bytes: bytes | None = None,
) -> subprocess.CompletedProcess[str]:
    """``klogtool ARGS`` as a real process (for stdin, pipes, exit paths and memory)."""
    cmd = [sys.executable, "-m", "klogtool", *args]
    env = {**os.environ, "NO_COLOR": "1"}
    if stdin_bytes is not None:
        p = subprocess.run(
            cmd, cwd=cwd, input=stdin_bytes, capture_output=True, env=env, timeout=120
        )
        return subprocess.CompletedProcess(
            p.args, p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode()
        )
    return subprocess.run(
        cmd, cwd=cwd, stdin=stdin, capture_output=True, text=True, env=env, timeout=120
    )


def jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def findings(text: str) -> list[dict[str, Any]]:
    return [o for o in jsonl(text) if o["type"] == "finding"]


def errors(text: str) -> list[dict[str, Any]]:
    return [o for o in findings(text) if o["severity"] == "error"]
