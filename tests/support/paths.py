"""Where the tests' inputs are: the fixtures, the goldens, and the real broker-written corpus
(``../shared/corpus/real`` beside the checkout, as CI lays it out, or ``KLOGTOOL_CORPUS``; read
by path, never copied into the project)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
LOGS = FIXTURES / "logs"
EXPECTED = FIXTURES / "expected"
LOGDIR = LOGS / "logdir"
CORRUPT = LOGS / "corrupt"
HOSTILE = LOGS / "hostile"

CORPUS = Path(os.environ.get("KLOGTOOL_CORPUS", str(ROOT.parent / "shared" / "corpus" / "real")))
needs_corpus = pytest.mark.skipif(
    not (CORPUS / "MANIFEST.md").is_file(), reason=f"real-broker corpus not found at {CORPUS}"
)
