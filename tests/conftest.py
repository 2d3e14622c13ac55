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
