"""Where the real broker-written corpus is: ``../shared/corpus/real`` beside the checkout
(as CI lays it out), or ``KLOGTOOL_CORPUS``."""

from __future__ import annotations

import os
from pathlib import Path

_BESIDE = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "real"
CORPUS = Path(os.environ.get("KLOGTOOL_CORPUS", str(_BESIDE)))
