"""Shared test helpers (import them with ``from conftest import ...``)."""

from __future__ import annotations

import pytest

# Real broker-written files: read by path, never copied into the project.
from corpus_path import CORPUS

needs_corpus = pytest.mark.skipif(
    not (CORPUS / "MANIFEST.md").is_file(), reason=f"real-broker corpus not found at {CORPUS}"
)


def _b(x: object) -> bytes | None:
    return None if x is None else bytes(x)  # type: ignore[call-overload]


def norm_record(r: object) -> tuple:
    """``(offset, timestamp, key, value, headers)`` with payloads as ``bytes``; works for
    klogtool records and kafka-python records alike."""
    return (
        r.offset,  # type: ignore[attr-defined]
        r.timestamp,  # type: ignore[attr-defined]
        _b(r.key),  # type: ignore[attr-defined]
        _b(r.value),  # type: ignore[attr-defined]
        tuple((k, _b(v)) for k, v in r.headers),  # type: ignore[attr-defined]
    )


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python (the reference implementation) loads its protocol schemas with APIs that
    # Python 3.11 deprecates; that noise is not ours.
    config.addinivalue_line(
        "filterwarnings", "ignore:(read_text|open_text) is deprecated:DeprecationWarning"
    )
