"""Start-up and interrupts (issue 10): commands load lazily, so ``klogtool --help`` imports no
command, codec, Rich or pyarrow module; Ctrl-C at any moment ends with one line and exit 130.
Speed itself is measured by hand (python -X importtime), never timed here."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli import default_sigint

from klogtool import cli
from klogtool.formats import engine

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}


def _modules_after(args: list[str]) -> set[str]:
    code = (
        "import json, sys\n"
        "from klogtool.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(json.dumps(sorted(sys.modules)))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=60
    )
    return set(json.loads(p.stderr.strip().splitlines()[-1]))


def test_help_imports_no_command_and_nothing_heavy() -> None:
    loaded = _modules_after(["--help"])
    heavy = {"pyarrow", "pyspark", "rich", "zstandard", "lz4", "snappy", "isal", "crc32c"}
    assert not {m.split(".")[0] for m in loaded} & heavy
    assert not [m for m in loaded if m.startswith("klogtool.commands.")]


def test_a_command_loads_only_itself() -> None:
    loaded = _modules_after(["verify", str(ROOT / "fixtures/logs/logdir/v2-none-0")])
    assert "klogtool.commands.verify" in loaded
    assert "klogtool.commands.export" not in loaded
    assert not {m.split(".")[0] for m in loaded} & {"pyarrow", "pyspark"}


@pytest.mark.skipif(not engine.native_available(), reason="the native engine is not built")
def test_a_small_verify_loads_only_what_it_uses() -> None:
    """Start-up of a small verify (issue 10: under 150 ms): its summary table is drawn without
    Rich when piped, CRC-32C comes from the native engine (the crc32c package reads its own
    metadata on import), and the internal topics' payload schemas load only when a record of
    theirs is decoded."""
    loaded = _modules_after(["verify", str(ROOT / "fixtures/logs/logdir/txn-0")])
    assert "klogtool.commands.verify" in loaded
    assert not {m.split(".")[0] for m in loaded} & {"rich", "crc32c"}
    schemas = ("cluster_metadata", "consumer_offsets", "transaction_state", "coordinator")
    assert not [m for m in loaded if m.rsplit(".", 1)[-1] in schemas]


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_the_short_help_table_matches_each_command(name: str) -> None:
    command = cli.cli.get_command(None, name)  # type: ignore[arg-type]
    assert command is not None and command.name == name
    assert cli.COMMANDS[name][1] == command.get_short_help_str(limit=1000)


@pytest.mark.parametrize("delay", [0.09, 0.13, 0.18, 0.6])
def test_ctrl_c_at_any_moment_is_one_line_and_130(delay: float) -> None:
    # `dump-segments -` waits on stdin forever: the signal lands while klogtool's modules load
    # (early delays) or while the command runs (the last one)
    p = subprocess.Popen(
        [sys.executable, "-m", "klogtool", "dump-segments", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        text=True,
        # a background job inherits SIGINT ignored, and Python then never raises
        # KeyboardInterrupt: the child gets the default, as at an interactive prompt
        preexec_fn=default_sigint,
    )
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    # (site, or runpy that -m needs: the interpreter's own start-up, before klogtool's code)
    if p.returncode == -signal.SIGINT or "init_import_site" in err or "import runpy" in err:
        pytest.skip("the signal landed while the interpreter itself started (a loaded machine)")
    assert p.returncode == 130, err
    assert err == "klogtool: interrupted\n", err


def test_ctrl_c_as_a_command_finishes_is_still_one_line() -> None:
    # The signal lands while the command's exit unwinds (after its own handlers ran): the
    # process must not die by the signal with no word.
    code = (
        "import os, signal, sys\n"
        "import klogtool.cli\n"
        "def finishing(argv=None):\n"
        "    try:\n"
        "        sys.exit(0)\n"
        "    finally:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        sum(range(100000))\n"
        "klogtool.cli.main = finishing\n"
        "from klogtool._entry import main\n"
        "main()\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=default_sigint,
    )
    assert (p.returncode, p.stderr) == (130, "klogtool: interrupted\n")


# Python 3.11 wraps a KeyboardInterrupt raised while a class is made (a descriptor's
# __set_name__, as when the signal lands while a command's module loads) in a RuntimeError: CI
# once saw "internal error: RuntimeError: Error calling __set_name__ ..." for a Ctrl-C.
_CLASS_MADE_AS_CTRL_C_LANDS = (
    "class _Interrupted:\n"
    "    def __set_name__(self, owner, name):\n"
    "        raise KeyboardInterrupt\n"
    "def interrupted_while_a_class_is_made(*args, **kwargs):\n"
    "    class Output:\n"
    "        bars = _Interrupted()\n"
)


@pytest.mark.parametrize("where", ["while the command runs", "while klogtool.cli loads"])
def test_ctrl_c_wrapped_by_python_is_still_one_line_and_130(where: str) -> None:
    if where == "while the command runs":
        patch = "import klogtool.cli\nklogtool.cli.cli.invoke = interrupted_while_a_class_is_made\n"
    else:
        patch = (
            "import types\n"
            "class _Loading(types.ModuleType):\n"
            "    @property\n"
            "    def main(self):\n"
            "        interrupted_while_a_class_is_made()\n"
            "sys.modules['klogtool.cli'] = _Loading('klogtool.cli')\n"
        )
    code = (
        "import sys\n"
        + _CLASS_MADE_AS_CTRL_C_LANDS
        + patch
        + "from klogtool._entry import main\nmain()\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, "verify", "-"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (p.returncode, p.stderr) == (130, "klogtool: interrupted\n")


def test_a_runtime_error_of_its_own_is_still_an_internal_error() -> None:
    # the other side: only an error an interrupt caused is taken for one
    code = (
        "import klogtool.cli\n"
        "def failing(*args, **kwargs):\n"
        "    try:\n"
        "        raise ValueError('first')\n"
        "    except ValueError:\n"
        "        raise RuntimeError('a bug')\n"
        "klogtool.cli.cli.invoke = failing\n"
        "from klogtool._entry import main\nmain()\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, "verify", "-"], env=ENV, capture_output=True, text=True
    )
    assert p.returncode == 70
    assert p.stderr.startswith("klogtool: internal error: RuntimeError: a bug"), p.stderr
