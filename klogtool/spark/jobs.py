"""The Spark jobs behind ``export --engine spark`` and ``verify --engine spark``.

Both read through the ``kafka-segments`` data source, so they run unchanged on ``local[*]``,
a standalone/YARN/Kubernetes cluster or over Spark Connect; an export to object storage runs
its splits as plain tasks that write with pyarrow (:func:`export_tasks`). Paths are made
absolute on the driver: planning runs in a Python worker whose working directory is the
JVM's, not ours.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 (the usual name)

from klogtool.codes import Code
from klogtool.errors import KlogtoolError
from klogtool.log import storage
from klogtool.log.check.fleet_verify import (
    FleetVerifier,
    UnitResult,
    VerifySplit,
    rows_to_results,
    splits_to_json,
)
from klogtool.log.context import ReadContext
from klogtool.log.export.arrow_reader import CorruptSegmentError
from klogtool.log.export.exporter import LocalJob, OutputCount, finish, write_split_counted
from klogtool.log.splits import DEFAULT_TARGET_SPLIT_BYTES, plan_splits, where_prune
from klogtool.spark.source import NAME

Progress = Callable[[int], None]


def read(spark: SparkSession, paths: Sequence[str], options: dict[str, str]) -> DataFrame:
    """``spark.read.format("kafka-segments")`` over PATHs (made absolute here)."""
    absolute = [storage.absolute(p) for p in paths]
    reader = spark.read.format(NAME).options(**options)
    return reader.load(absolute[0] if len(absolute) == 1 else absolute)


def default_parallelism(spark: SparkSession) -> int:
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        return 2


def export(
    spark: SparkSession,
    paths: Sequence[str],
    dest: str,
    *,
    to: str,
    options: dict[str, str],
    partition_by: Sequence[str] = (),
    overwrite: bool = False,
    total_bytes: int = 0,
    progress: Progress | None = None,
) -> int:
    """Write the data source's rows to ``dest`` as Parquet or JSON Lines; returns the number
    of splits (tasks) the data source plans."""
    options = {"minSplits": str(default_parallelism(spark)), **options}
    with failures():  # the data source is created (its schema) in a Python worker already
        df = read(spark, paths, options)
        if to == "jsonl" and "timestamp" in df.columns:
            df = df.withColumn("timestamp", F.unix_millis("timestamp"))
    # "error" (= errorifexists): the Spark Connect client knows only this spelling
    writer = df.write.mode("overwrite" if overwrite else "error")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    group = f"klogtool-export-{uuid.uuid4().hex}"
    with failures(), track(spark, total_bytes, progress, "klogtool export", group):
        if to == "parquet":
            spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
            writer.option("compression", "snappy").parquet(dest)
        else:
            writer.option("ignoreNullFields", "false").json(dest)
    tasks = tasks_of(spark, group)
    if tasks is not None:
        return tasks
    # Spark Connect (no status tracker): plan again here, a second listing of PATHs
    target = options.get("targetSplitBytes")
    return len(
        plan_splits(
            [storage.absolute(p) for p in paths],
            target_split_bytes=int(target) if target else DEFAULT_TARGET_SPLIT_BYTES,
            min_splits=int(options["minSplits"]),
        )
    )


def export_tasks(
    spark: SparkSession,
    paths: Sequence[str],
    job: LocalJob,
    *,
    target_split_bytes: int,
    total_bytes: int = 0,
    progress: Progress | None = None,
) -> tuple[int, OutputCount]:
    """Export to a local DEST (the driver's disk in ``local[*]``, shared storage on a
    cluster) or one pyarrow writes (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``): Spark
    schedules the splits planned here, and each task reads its split and writes its files
    with pyarrow, exactly as the local engine does (:func:`write_split_counted`), so no row
    crosses to the JVM and no node needs Hadoop's connector for the store. Returns the tasks
    and what they wrote."""
    splits = plan_splits(
        [storage.absolute(p) for p in paths],
        target_split_bytes=target_split_bytes,
        min_splits=default_parallelism(spark),
        prune=where_prune(job.read.where),
    )
    written = OutputCount()
    if splits:
        rdd = spark.sparkContext.parallelize(splits, len(splits))
        group = f"klogtool-export-{uuid.uuid4().hex}"
        with failures(), track(spark, total_bytes, progress, "klogtool export", group):
            for count in rdd.map(functools.partial(write_split_counted, job)).collect():
                written.add(count)
    written.add(finish(job, empty=not splits))
    return len(splits), written


def tasks_of(spark: SparkSession, group: str) -> int | None:
    """The tasks of the first stage of the jobs of ``group`` (one per split the data source
    planned), from Spark's status tracker; None without one (Spark Connect)."""
    try:
        tracker = spark.sparkContext.statusTracker()
        tasks = 0
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            stage = tracker.getStageInfo(min(info.stageIds)) if info and info.stageIds else None
            if stage is None:
                return None
            tasks = max(tasks, stage.numTasks)
        return tasks or None
    except Exception:
        return None


def drop_checksums(root: str) -> None:
    """Remove Hadoop's ``.part-….crc`` side files from a local output directory."""
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if name.startswith(".") and name.endswith(".crc"):
                os.remove(os.path.join(dirpath, name))


def spark_verifier(
    spark: SparkSession,
    ctx: ReadContext,
    *,
    deep: bool,
    target_split_bytes: int,
) -> FleetVerifier:
    """A :class:`FleetVerifier` whose splits run as the tasks of one Spark job."""

    def run(splits: list[VerifySplit]) -> dict[int, UnitResult]:
        total = sum(u.size for s in splits for u in s.units)
        reader = (
            spark.read.format(NAME)
            .option("level", "findings")
            .option("deep", str(deep).lower())
            .option("maxBatchBytes", str(ctx.limits.max_batch_bytes))
            .option("splits", splits_to_json(splits))
        )
        with failures(), track(spark, total, ctx.progress.advance, "klogtool verify"):
            rows = [r.asDict() for r in reader.load().collect()]
        return rows_to_results(rows)

    # Progress comes from Spark's tracker while the job runs (not from the verifier).
    return FleetVerifier(
        run,
        ctx.quiet(),
        deep=deep,
        target_split_bytes=target_split_bytes,
        min_splits=default_parallelism(spark),
    )


@contextmanager
def failures() -> Iterator[None]:
    """A failed Spark job becomes one line: the corrupt input it met, or what went wrong."""
    try:
        yield
    except KlogtoolError:
        raise
    except Exception as e:
        text = str(e)
        corrupt = CorruptSegmentError.find(text)
        if corrupt is not None:
            raise corrupt.to_input_error() from None
        raise KlogtoolError(
            f"the Spark job failed: {_summary(text) or type(e).__name__}",
            code=Code.SPARK_JOB_FAILED,
            hint=_hint(text),
        ) from None


def _summary(text: str) -> str:
    """The most telling line of a Spark error (the Python exception, else the first)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:  # a Python worker that could not start: which program
        if "Cannot run program" in ln:
            return ln[ln.index("Cannot run program") :][:300]
    for ln in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception): ", ln) and "Py4J" not in ln:
            return ln[:300]
    return lines[0][:300] if lines else ""


def _hint(text: str) -> str | None:
    if "No module named 'klogtool'" in text or "No module named 'pyarrow'" in text:
        return (
            "the Python on the executors (and the driver's planning worker) must have klogtool "
            "and pyarrow: set spark.pyspark.python to such an interpreter (see README: export "
            "on a cluster)"
        )
    if "Cannot run program" in text:
        return (
            "spark.pyspark.python names no Python here; a relative one (./environment/bin/python) "
            "is relative to each executor's directory and, for the driver's planning worker, to "
            "the directory klogtool runs in (see docs/cluster.md)"
        )
    if "DATA_SOURCE_PUSHDOWN_DISABLED" in text:
        return "register the source with klogtool.spark.register(spark), which enables pushdown"
    return None


@contextmanager
def track(
    spark: SparkSession,
    total_bytes: int,
    advance: Progress | None,
    description: str,
    group: str | None = None,
) -> Iterator[None]:
    """Feed ``advance`` (bytes) from Spark's status tracker while the body runs (whose jobs
    are in job ``group`` when one is given)."""
    try:
        sc = spark.sparkContext
        if group is not None:
            sc.setJobGroup(group, description)
        else:
            sc.setJobDescription(description)
        tracker = sc.statusTracker()
    except Exception:  # Spark Connect: no SparkContext, no tracker
        yield
        return
    if advance is None or total_bytes <= 0:
        yield
        return
    stop = threading.Event()
    shown = [0]

    def poll() -> None:
        while not stop.wait(0.25):
            done = total = 0
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                target = total_bytes * done // total
                if target > shown[0]:
                    advance(target - shown[0])
                    shown[0] = target

    thread = threading.Thread(target=poll, name="klogtool-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if shown[0] < total_bytes:
            advance(total_bytes - shown[0])
