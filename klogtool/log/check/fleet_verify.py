"""``verify`` cut into units that run anywhere (Spark tasks), merged back into one report.

The verifier's checks cross segment boundaries (offset continuity, transactions, leader
epochs), so the unit of work is a whole partition directory (or a file given by name); the
log dir's own checkpoint files are checked on the driver against the partitions' log end
offsets, exactly as :meth:`Verifier.verify_log_dir` does. Units are bin-packed into splits by
size (a Python task costs ~0.1 s, the README's Export section).

:class:`FleetVerifier` has the :class:`~klogtool.log.check.verifier.Verifier` interface
(``verify(paths)`` streams findings, ``stats`` adds up): fed by any runner of splits, it yields
the same findings in the same order with the same paths as the local verifier, and raises the
same :class:`InputError` after the findings of the paths before a bad one.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from klogtool.codes import Code
from klogtool.errors import InputError, KlogtoolError
from klogtool.formats.errors import FormatError
from klogtool.log import layout, storage
from klogtool.log.check.verifier import Stats, Verifier
from klogtool.log.column_kinds import INT, LONG, STRING
from klogtool.log.context import ReadContext
from klogtool.log.files import detect_kind, kafka_dirs
from klogtool.log.findings import Finding
from klogtool.log.splits import DEFAULT_TARGET_SPLIT_BYTES

PARTITION = "partition"
PATH = "path"


@dataclass(frozen=True)
class VerifyUnit:
    index: int
    kind: str  # PARTITION | PATH
    path: str  # absolute
    display: str  # the path as the local verifier prints it
    size: int


@dataclass(frozen=True)
class VerifySplit:
    index: int
    units: tuple[VerifyUnit, ...]


@dataclass
class UnitResult:
    display: str | None = None  # the unit's path, to match results with units
    findings: list[Finding] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)
    bounds: tuple[int | None, int | None] | None = None  # partition: (first base, log end)
    error: dict[str, Any] | None = None  # an input error that stopped the unit


@dataclass
class VerifyPlan:
    units: list[VerifyUnit]
    # ("unit", index) or ("logdir", display LogDir, [partition unit indexes])
    steps: list[tuple[Any, ...]]
    error: KlogtoolError | None = None  # raised after the steps' findings

    def splits(self, target_split_bytes: int, min_splits: int = 1) -> list[VerifySplit]:
        total = sum(u.size for u in self.units)
        target = max(1, target_split_bytes)
        if min_splits > 1 and total:
            target = min(target, max(1 << 20, math.ceil(total / min_splits)))
        out: list[VerifySplit] = []
        current: list[VerifyUnit] = []
        size = 0
        for u in self.units:
            if current and size + u.size > target:
                out.append(VerifySplit(len(out), tuple(current)))
                current, size = [], 0
            current.append(u)
            size += u.size
        if current:
            out.append(VerifySplit(len(out), tuple(current)))
        return out


def splits_to_json(splits: Sequence[VerifySplit]) -> str:
    return json.dumps(
        [[s.index, [[u.index, u.kind, u.path, u.display, u.size] for u in s.units]] for s in splits]
    )


def splits_from_json(text: str) -> list[VerifySplit]:
    return [VerifySplit(i, tuple(VerifyUnit(*u) for u in units)) for i, units in json.loads(text)]


def _log_bytes(path: Path) -> int:
    try:
        return sum(e.stat().st_size for e in os.scandir(path) if e.name.endswith(".log"))
    except OSError:
        return 0


def plan(paths: Sequence[str]) -> VerifyPlan:
    """Units in the local verifier's order; a bad PATH ends the plan (its error is kept)."""
    p = VerifyPlan([], [])

    def unit(kind: str, path: Path, size: int) -> int:
        i = len(p.units)
        p.units.append(VerifyUnit(i, kind, storage.absolute(path), str(path), size))
        return i

    for arg in paths:
        path = storage.path_of(arg)
        try:
            if not path.exists():
                raise InputError("no such file or directory", path=str(path), code=Code.NOT_FOUND)
            if path.is_dir():
                for d in kafka_dirs(path, str(path)):  # as the local verifier walks them
                    if d.logdir is None:
                        p.steps.append(("unit", unit(PARTITION, d.path, _log_bytes(d.path))))
                        continue
                    idxs = [unit(PARTITION, c, _log_bytes(c)) for c in d.logdir.partitions]
                    p.steps.append(("logdir", d.logdir, idxs))
            else:
                detect_kind(path)  # what the local verifier rejects, rejected in the same order
                p.steps.append(("unit", unit(PATH, path, path.stat().st_size)))
        except KlogtoolError as e:
            p.error = e
            break
    return p


def _drain(gen: Iterator[Finding], out: list[Finding]) -> Any:
    while True:
        try:
            out.append(next(gen))
        except StopIteration as stop:
            return stop.value


def run_unit(unit: VerifyUnit, ctx: ReadContext, *, deep: bool = False) -> UnitResult:
    """Verify one unit (on an executor); finding paths are given back in display form."""
    v = Verifier(ctx, deep=deep)
    res = UnitResult(display=unit.display, stats=v.stats)
    base = unit.path if unit.kind == PARTITION else os.path.dirname(unit.path)
    shown = unit.display if unit.kind == PARTITION else str(storage.as_path(unit.display).parent)
    found: list[Finding] = []
    try:
        if unit.kind == PARTITION:
            res.bounds = _drain(v.verify_partition(storage.as_path(unit.path)), found)
        else:
            _drain(v.verify([unit.path]), found)
    except KlogtoolError as e:
        res.error = {"message": e.message, "path": e.path, "position": e.position, "code": e.code}
    except FormatError as e:
        res.error = {"message": str(e), "path": None, "position": e.position, "code": e.code}
    except OSError as e:
        res.error = {
            "message": e.strerror or str(e),
            "path": e.filename,
            "position": None,
            "code": Code.IO_ERROR,
        }

    def display(p: str | None) -> str | None:
        if p is None or not (p == base or p.startswith(base + os.sep)):
            return p
        return storage.child(shown, os.path.relpath(p, base))

    res.findings = [
        Finding(f.severity, f.code, display(f.path) or "", f.position, f.offset, f.message)
        for f in found
    ]
    if res.error is not None:
        res.error["path"] = display(res.error["path"])
    v.stats.errors = sum(1 for f in found if f.severity == "error")
    v.stats.warnings = len(found) - v.stats.errors
    return res


# -- rows (how unit results travel through a Spark DataFrame) ------------------------------
_STATS = [f.name for f in fields(Stats)]
FINDINGS_COLUMNS: list[tuple[str, str]] = [
    ("type", STRING),  # finding | summary | error
    ("unit", INT),
    ("seq", INT),
    ("severity", STRING),
    ("code", STRING),
    ("path", STRING),
    ("position", LONG),
    ("offset", LONG),
    ("message", STRING),
    *[(name, LONG) for name in _STATS],
    ("first_offset", LONG),
    ("log_end_offset", LONG),
]


def result_rows(unit: VerifyUnit, res: UnitResult) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for seq, f in enumerate(res.findings):
        rows.append(
            {
                "type": "finding",
                "unit": unit.index,
                "seq": seq,
                "severity": f.severity,
                "code": f.code,
                "path": f.path,
                "position": f.position,
                "offset": f.offset,
                "message": f.message,
            }
        )
    summary: dict[str, Any] = {
        "type": "summary",
        "unit": unit.index,
        "seq": len(rows),
        "path": unit.display,
    }
    summary.update(vars(res.stats))
    if res.bounds is not None:
        summary["first_offset"], summary["log_end_offset"] = res.bounds
    rows.append(summary)
    if res.error is not None:
        rows.append({"type": "error", "unit": unit.index, "seq": len(rows), **res.error})
    return rows


def rows_to_results(rows: Sequence[dict[str, Any]]) -> dict[int, UnitResult]:
    out: dict[int, UnitResult] = {}
    for r in sorted(rows, key=lambda r: (r["unit"], r["seq"])):
        res = out.setdefault(r["unit"], UnitResult())
        if r["type"] == "finding":
            res.findings.append(
                Finding(
                    r["severity"], r["code"], r["path"], r["position"], r["offset"], r["message"]
                )
            )
        elif r["type"] == "summary":
            res.display = r["path"]
            res.stats = Stats(**{k: r[k] or 0 for k in _STATS})
            if r.get("first_offset") is not None or r.get("log_end_offset") is not None:
                res.bounds = (r.get("first_offset"), r.get("log_end_offset"))
        else:
            res.error = {k: r.get(k) for k in ("message", "path", "position", "code")}
    return out


# -- the driver ------------------------------------------------------------------------------
Runner = Callable[[list[VerifySplit]], dict[int, UnitResult]]


class FleetVerifier:
    """``verify(paths)`` through ``runner`` (which runs splits somewhere and returns the unit
    results by unit index); findings come out as the local verifier prints them."""

    def __init__(
        self,
        runner: Runner,
        ctx: ReadContext,
        *,
        deep: bool = False,
        target_split_bytes: int = DEFAULT_TARGET_SPLIT_BYTES,
        min_splits: int = 1,
    ):
        self.runner = runner
        self.deep = deep
        self.ctx = ctx
        self.target_split_bytes = target_split_bytes
        self.min_splits = min_splits
        self.stats = Stats()

    def verify(self, paths: list[str]) -> Iterator[Finding]:
        p = plan(paths)
        results = self.runner(p.splits(self.target_split_bytes, self.min_splits)) if p.units else {}
        st = self.stats
        for step in p.steps:
            if step[0] == "unit":
                yield from self._unit(p.units[step[1]], results)
                continue
            _, logdir, idxs = step
            ends: dict[tuple[str, int], tuple[int | None, int | None]] = {}
            for i in idxs:
                yield from self._unit(p.units[i], results)
                parsed = layout.parse_partition_dir_name(Path(p.units[i].display).name)
                bounds = results[i].bounds
                if parsed is not None and bounds is not None:
                    ends[parsed] = bounds
            local = Verifier(self.ctx.quiet(), deep=self.deep)
            for f in local.verify_log_dir_files(logdir, ends):
                self.stats.count(f)
                yield f
            for name in ("files", "partitions", "segments", "batches", "records", "bytes"):
                setattr(st, name, getattr(st, name) + getattr(local.stats, name))
        if p.error is not None:
            raise p.error

    def _unit(self, unit: VerifyUnit, results: dict[int, UnitResult]) -> Iterator[Finding]:
        res = results.get(unit.index)
        if res is None or res.display != unit.display:
            raise KlogtoolError(
                "no result came back for this path (did the directories change while verifying?)",
                path=unit.display,
                code=Code.LOST_RESULT,
            )
        for f in res.findings:
            self.stats.count(f)
            yield f
        st = self.stats
        for name in ("files", "partitions", "segments", "batches", "records", "bytes"):
            setattr(st, name, getattr(st, name) + getattr(res.stats, name))
        self.ctx.progress.advance(unit.size)
        if res.error is not None:
            e = res.error
            raise InputError(
                e["message"], path=e.get("path"), position=e.get("position"), code=e["code"]
            )


def run_splits_here(
    splits: list[VerifySplit], ctx: ReadContext, *, deep: bool = False
) -> dict[int, UnitResult]:
    """A runner that verifies every unit in this process (tests; Spark's tasks do the same)."""
    return {u.index: run_unit(u, ctx, deep=deep) for s in splits for u in s.units}
