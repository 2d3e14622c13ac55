"""``bench/fuzz.py`` (a script, not a package) as a module: its seed builders, mutations and
engine checks serve the fuzz tests and the engine comparisons."""

from __future__ import annotations

import importlib.util
import sys

from support.paths import ROOT

_spec = importlib.util.spec_from_file_location("klogtool_bench_fuzz", ROOT / "bench" / "fuzz.py")
assert _spec is not None and _spec.loader is not None
fuzz = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fuzz  # dataclasses need the module registered
_spec.loader.exec_module(fuzz)
