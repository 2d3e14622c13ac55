"""Test-run configuration. Shared helpers live in shared_helpers.py."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python (the reference implementation) loads its protocol schemas with APIs that
    # Python 3.11 deprecates; that noise is not ours.
    config.addinivalue_line(
        "filterwarnings", "ignore:(read_text|open_text) is deprecated:DeprecationWarning"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The Spark tests run last: their JVM gateway threads and background cluster must not be
    # alive when other tests fork (the crash harness forks the CLI).
    items.sort(key=lambda item: item.nodeid.startswith("tests/spark/"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # Without the real-broker corpus hundreds of tests skip (or, parametrised over its files,
    # collect as empty): say so once, loudly, at the end of the run.
    from shared_helpers import CORPUS

    if (CORPUS / "MANIFEST.md").is_file():
        return
    skipped = terminalreporter.stats.get("skipped", [])
    n = sum(
        1
        for r in skipped
        if "corpus" in str(r.longrepr).lower() or "empty parameter set" in str(r.longrepr)
    )
    if not n:
        return
    terminalreporter.write_sep("=", "REAL-BROKER CORPUS MISSING", red=True, bold=True)
    terminalreporter.write_line(
        f"{n} tests were skipped because the real-broker corpus was not found at {CORPUS}. "
        "Point KLOGTOOL_CORPUS at a corpus directory (one holding MANIFEST.md, e.g. "
        "KLOGTOOL_CORPUS=../shared/corpus/real) to run them."
    )
