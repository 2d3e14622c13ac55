#!/usr/bin/env python3
"""Benchmark ``klogtool export`` on a Spark standalone cluster against the local engine
(issue 26, "Spark on a cluster, measured").

Run by hand (it is not a test)::

    python bench/bench_spark.py [--size 2G] [--runs 1] [--out DIR] [--json FILE]
                                [--only local1,local2,spark1,spark2]

In one run, on the same generated log dir (``bench_export.py``'s generator: 2 topics x 2
partitions, 128 MiB segments of 500-record v2 batches, uncompressed; cached in ``--out``,
default ``$TMPDIR/klogtool-bench-export``):

``local1`` / ``local2``  ``export --engine local --jobs 1`` / ``--jobs 2`` to Parquet
``spark1`` / ``spark2``  ``export --master spark://127.0.0.1:PORT`` to Parquet, on a standalone
                         cluster of a master and one / two workers with one core each

The cluster is started here from the pyspark package's ``bin/spark-class`` on 127.0.0.1, and
its executors run a virtual environment built from klogtool's wheel (``release/build.py``),
packed by venv-pack and shipped with ``spark.archives`` (``#environment``) and
``spark.pyspark.python=./environment/bin/python``: what docs/cluster.md describes. Every
export is a separate ``python -m klogtool`` process (so the times include interpreter, JVM
and session start). The Spark runs write Spark's event log, from which the time split is
read: driver start to the SQL execution (session, ``schema()``), planning (the SQL execution
to the job's submission: the data source's ``partitions()`` in a planning worker), the tasks
(Python worker start, reading, Arrow hand-off and the Parquet writing, which run as one
pipeline in a task), and the commit; per task its run time and records, whence the skew
(slowest task / median). The reading alone is timed in this process (``read_split`` on the
same splits, one after the other): the task time beyond it is the hand-off to the JVM and
the writing.

Targets (issue 26; PASS/FAIL printed, exit status 0 either way): Spark with one worker within
1.3x of ``--engine local --jobs 1`` per record, two workers at least 1.8x one. The figures are
only as good as the machine: on a shared two-core machine, two one-core workers and the
driver compete for the same cores.

The cluster machinery (:class:`Cluster`, :func:`packed_env`, :func:`cluster_conf`) is also
what ``tests/spark/test_cluster.py`` uses.
"""

from __future__ import annotations

import argparse
import glob
import io
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOOPBACK = "127.0.0.1"
# cargo's build directory for the wheel, as tests/test_wheel.py keeps it
WHEEL_TARGET_DIR = Path(
    os.environ.get("CARGO_TARGET_DIR", str(ROOT / "native" / "target")) + "-wheel"
)
WHEEL_TARGET = "x86_64-unknown-linux-gnu"
# The JVM flags the tests start Spark with (tests/spark/spark_env.py); the benchmark leaves
# the JVM's defaults.
OPS = ("local1", "local2", "spark1", "spark2")


# -- the cluster -----------------------------------------------------------------------------
def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_ports(n: int) -> list[int]:
    """``n`` distinct free loopback ports (held open together until each is known)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind((LOOPBACK, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def kill_group(p: subprocess.Popen[Any]) -> None:
    """Stop a process started with ``start_new_session`` and everything it started."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            break
        try:
            p.wait(timeout=15)
            break
        except subprocess.TimeoutExpired:
            continue
    # a JVM's children (an executor, Python workers) live in the same group; make sure
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class ClusterFailed(RuntimeError):
    pass


class Cluster:
    """A standalone master and ``workers`` workers of ``cores`` cores on 127.0.0.1, started
    from the pyspark package's ``bin/spark-class``; logs and work dirs in ``workdir``.
    :meth:`stop` (and leaving the ``with`` block) kills every process group it started."""

    def __init__(
        self,
        workdir: Path,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        java_options: str = "",
    ):
        self.workdir = workdir
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.java_options = java_options
        self.procs: list[subprocess.Popen[bytes]] = []
        self.master_url = ""
        self.ui_port = 0

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "SPARK_CONF_DIR")}
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP=LOOPBACK,
            SPARK_LOCAL_DIRS=str(self.workdir / "local"),
            SPARK_LOG_DIR=str(self.workdir),
            SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
            # a port taken between free_ports() and the bind makes the daemon exit: start() retries
            SPARK_DAEMON_JAVA_OPTS=f"{self.java_options} -Dspark.port.maxRetries=0".strip(),
            NO_COLOR="1",
        )
        return env

    def _spawn(self, args: list[str], log: str) -> None:
        with open(self.workdir / log, "wb") as out:
            self.procs.append(
                subprocess.Popen(
                    [str(spark_home() / "bin" / "spark-class"), *args],
                    env=self.env(),
                    cwd=self.workdir,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group, killed as a whole
                )
            )

    def start(self, timeout: float = 180) -> Cluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, 4):
            try:
                self._start(attempt, timeout)
                return self
            except ClusterFailed:
                self.stop()
                if attempt == 3:
                    raise
            except BaseException:
                self.stop()
                raise
        return self

    def _start(self, attempt: int, timeout: float) -> None:
        port, ui, *worker_ports = free_ports(2 + 2 * self.workers)
        self.master_url, self.ui_port = f"spark://{LOOPBACK}:{port}", ui
        self._spawn(
            ["org.apache.spark.deploy.master.Master", "--host", LOOPBACK, "--port", str(port),
             "--webui-port", str(ui)],
            f"master-{attempt}.log",
        )  # fmt: skip
        for i in range(self.workers):
            wport, wui = worker_ports[2 * i : 2 * i + 2]
            self._spawn(
                ["org.apache.spark.deploy.worker.Worker", self.master_url, "--host", LOOPBACK,
                 "--port", str(wport), "--webui-port", str(wui), "--cores", str(self.cores),
                 "--memory", self.memory, "--work-dir", str(self.workdir / f"work-{i}")],
                f"worker-{i}-{attempt}.log",
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise ClusterFailed(
                        f"a standalone daemon exited ({p.returncode}); see {self.workdir}/*.log"
                    )
            if len(self.alive_workers()) == self.workers:
                return
            time.sleep(0.3)
        raise TimeoutError(f"the standalone cluster did not come up in {timeout} s")

    def alive_workers(self) -> list[dict[str, Any]]:
        try:
            with urllib.request.urlopen(f"http://{LOOPBACK}:{self.ui_port}/json/", timeout=5) as r:
                state = json.load(r)
        except (OSError, ValueError):  # not up yet (early on /json/ may answer with HTML)
            return []
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    def stop(self) -> None:
        for p in reversed(self.procs):
            kill_group(p)
        self.procs.clear()


# -- the environment the executors run -------------------------------------------------------
def build_wheel(out: Path) -> Path:
    """klogtool's x86_64 wheel, built by release/build.py (cargo's dir kept in
    ``native/target-wheel``, so a rebuild takes seconds)."""
    sys.path.insert(0, str(ROOT / "release"))
    try:
        import build  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(ROOT / "release"))
    out.mkdir(parents=True, exist_ok=True)
    wheel: Path = build.build_wheel(WHEEL_TARGET, out, WHEEL_TARGET_DIR)
    return wheel


def packed_env(wheel: Path, out: Path) -> tuple[Path, Path]:
    """A fresh venv with the wheel and pyarrow (binary packages only), and that venv packed by
    venv-pack into ``out/klogtool-env.tar.gz``: (venv, archive). pyspark itself is not
    installed: the executors put Spark's own ``python/lib/pyspark.zip`` on their path."""
    import venv_pack

    venv, archive = out / "venv", out / "klogtool-env.tar.gz"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", "--only-binary=:all:", str(wheel), "pyarrow>=18"],
        check=True,
        cwd=out,
    )  # fmt: skip
    # level 1: the archive is ~90 MB and made in seconds; level 9 saves little and takes 30 s
    venv_pack.pack(prefix=str(venv), output=str(archive), compress_level=1, verbose=False)
    return venv, archive


def driver_dir(where: Path, venv: Path) -> Path:
    """A working directory for the driver in which ``./environment`` is the venv: client mode
    plans the data source in a Python worker on the driver, started with the same relative
    ``spark.pyspark.python`` as the executors."""
    where.mkdir(parents=True, exist_ok=True)
    link = where / "environment"
    if not link.exists():
        link.symlink_to(venv, target_is_directory=True)
    return where


def cluster_conf(archive: Path, extra: dict[str, str] | None = None) -> list[str]:
    """``--conf`` arguments of a klogtool command that runs on the cluster with the packed
    environment."""
    conf = {
        "spark.archives": f"{archive}#environment",
        "spark.pyspark.python": "./environment/bin/python",
        **(extra or {}),
    }
    return [arg for k, v in conf.items() for arg in ("--conf", f"{k}={v}")]


def klogtool_env() -> dict[str, str]:
    """The driver's environment: this checkout's klogtool, no inherited worker Python."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "SPARK_HOME")}
    env.update(NO_COLOR="1", SPARK_LOCAL_IP=LOOPBACK)
    return env


# -- the event log ---------------------------------------------------------------------------
def read_event_log(directory: Path) -> list[dict[str, Any]]:
    """The events of the one application whose log Spark wrote in ``directory``."""
    files = sorted(glob.glob(str(directory / "*" / "events_*"))) or sorted(
        glob.glob(str(directory / "*"))
    )
    events: list[dict[str, Any]] = []
    for name in files:
        if os.path.isdir(name):
            continue
        data = Path(name).read_bytes()
        if name.endswith(".zstd"):
            import zstandard

            data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read()
        events += [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    return events


def split_of(events: list[dict[str, Any]], started: float) -> dict[str, Any]:
    """The time split of one export from its event log (``started``: the process's start,
    Unix seconds)."""
    t: dict[str, float] = {}
    tasks: list[dict[str, Any]] = []
    for e in events:
        name = e["Event"].rsplit(".", 1)[-1]
        if name == "SparkListenerApplicationStart":
            t["app"] = e["Timestamp"] / 1000
        elif name == "SparkListenerSQLExecutionStart" and "sql" not in t:
            t["sql"] = e["time"] / 1000
        elif name == "SparkListenerJobStart" and "job" not in t:
            t["job"] = e["Submission Time"] / 1000
        elif name == "SparkListenerJobEnd":
            t["job_end"] = e["Completion Time"] / 1000
        elif name == "SparkListenerSQLExecutionEnd":
            t["sql_end"] = e["time"] / 1000
        elif name == "SparkListenerApplicationEnd":
            t["app_end"] = e["Timestamp"] / 1000
        elif name == "SparkListenerTaskEnd":
            info, metrics = e["Task Info"], e["Task Metrics"]
            acc = {a["Name"]: a.get("Update") for a in info.get("Accumulables", [])}
            tasks.append(
                {
                    "stage": e["Stage ID"],
                    "attempt": info.get("Attempt", 0),
                    "speculative": info.get("Speculative", False),
                    "executor": info["Executor ID"],
                    "launch": info["Launch Time"] / 1000,
                    "finish": info["Finish Time"] / 1000,
                    "run_s": metrics["Executor Run Time"] / 1000,
                    "cpu_s": metrics["Executor CPU Time"] / 1e9,
                    "gc_s": metrics["JVM GC Time"] / 1000,
                    "records": metrics.get("Output Metrics", {}).get("Records Written", 0),
                    "arrow_bytes": int(acc.get("data returned from Python workers") or 0),
                }
            )
    stages: dict[int, int] = {}
    for task in tasks:
        stages[task["stage"]] = stages.get(task["stage"], 0) + 1
    # the write job's stage: the one whose tasks wrote the records
    written: dict[int, int] = {}
    for task in tasks:
        written[task["stage"]] = written.get(task["stage"], 0) + task["records"]
    main = max(written, key=lambda k: written[k]) if written else None
    tasks = [task for task in tasks if task["stage"] == main]
    runs = sorted(task["run_s"] for task in tasks) or [0.0]
    arrow: dict[str, int] = {}
    for task in tasks:
        arrow[task["executor"]] = max(arrow.get(task["executor"], 0), task["arrow_bytes"])
    records = sum(task["records"] for task in tasks)
    first_launch = min((task["launch"] for task in tasks), default=t.get("job", 0))
    # an export whose tasks write with pyarrow (export_tasks) is a plain job, no SQL
    # execution: it is planned on the driver before its job starts, and commits after it
    t.setdefault("sql", t.get("job", 0))
    t.setdefault("sql_end", t.get("job_end", 0))
    return {
        "jvm_and_session_s": round(t.get("sql", 0) - started, 2),
        "of_which_before_app_s": round(t.get("app", 0) - started, 2),
        "planning_s": round(t.get("job", 0) - t.get("sql", 0), 2),
        "task_launch_s": round(first_launch - t.get("job", 0), 2),
        "tasks_wall_s": round(t.get("job_end", 0) - first_launch, 2),
        "commit_s": round(t.get("sql_end", 0) - t.get("job_end", 0), 2),
        "stop_s": round(t.get("app_end", 0) - t.get("sql_end", 0), 2),
        "tasks_per_stage": stages,
        "tasks": len(tasks),
        "task_records": sorted(task["records"] for task in tasks),
        "task_run_s": [round(r, 2) for r in runs],
        "task_cpu_s": round(sum(task["cpu_s"] for task in tasks), 2),
        "skew": round(runs[-1] / statistics.median(runs), 2) if runs[0] else None,
        # the metric is a running total per executor (its Python worker is reused)
        "arrow_mb": round(sum(arrow.values()) / 1e6, 1),
        "arrow_bytes_per_record": round(sum(arrow.values()) / records) if records else None,
    }


# -- the benchmark ---------------------------------------------------------------------------
def run_export(args: list[str], cwd: Path) -> tuple[float, dict[str, Any], float]:
    """``klogtool export ARGS`` as a process: (wall seconds, summary, start time)."""
    started = time.time()
    t = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "klogtool", "--no-progress", "export", *args, "--format", "jsonl"],
        capture_output=True,
        text=True,
        env=klogtool_env(),
        cwd=cwd,
    )
    elapsed = time.monotonic() - t
    if r.returncode != 0:
        raise SystemExit(f"klogtool export {' '.join(args)} failed:\n{r.stderr[-3000:]}")
    return elapsed, json.loads(r.stdout.splitlines()[-1]), started


def reading_seconds(root: Path, splits: int) -> float:
    """The reading alone: the Spark source's splits read by ``read_split`` one after the
    other in this process, Arrow batches made and dropped."""
    from klogtool.log import splits as planner
    from klogtool.log.export import arrow_reader
    from klogtool.spark.source import read_options

    opts = read_options({})
    planned = planner.plan_splits([str(root)], min_splits=splits)
    t = time.monotonic()
    for s in planned:
        for _batch in arrow_reader.read_split(s, opts):
            pass
    return time.monotonic() - t


def main() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_export

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="2G", help="log dir size (default 2G)")
    ap.add_argument("--runs", type=int, default=1, help="runs of each, the median shown")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "klogtool-bench-export"))
    ap.add_argument("--only", default=",".join(OPS), help=f"some of {','.join(OPS)}")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (event logs, logs)")
    a = ap.parse_args()
    ops = [o for o in a.only.split(",") if o]
    out = Path(a.out)
    root = bench_export.log_dir(out, bench_export.parse_size(a.size), "none")
    size = sum(f.stat().st_size for f in root.rglob("*.log"))
    work = Path(tempfile.mkdtemp(prefix="klogtool-bench-spark-"))
    print(f"log dir {root}: {size / 1e9:.2f} GB; work dir {work}; {os.cpu_count()} CPUs")
    results: dict[str, Any] = {"size_bytes": size, "cpus": os.cpu_count(), "ops": {}}
    try:
        archive = venv = None
        if any(o.startswith("spark") for o in ops):
            t = time.monotonic()
            venv, archive = packed_env(build_wheel(work / "dist"), work / "env")
            took, size_ = time.monotonic() - t, archive.stat().st_size
            print(f"wheel and packed venv: {took:.1f} s ({size_:,} bytes)")
        for op in ops:
            times, summaries, splits_ = [], [], []
            for run in range(a.runs):
                dest = work / f"out-{op}"
                shutil.rmtree(dest, ignore_errors=True)
                if op.startswith("local"):
                    jobs = op.removeprefix("local")
                    local = ["--engine", "local", "--jobs", jobs]
                    wall, summary, _ = run_export(
                        [str(root), *local, "--to", "parquet", str(dest)], work
                    )
                else:
                    assert venv is not None and archive is not None
                    n = int(op.removeprefix("spark"))
                    events = work / f"events-{op}-{run}"
                    events.mkdir()
                    with Cluster(work / f"cluster-{op}-{run}", workers=n, memory="2g") as c:
                        conf = cluster_conf(
                            archive,
                            {
                                "spark.executor.memory": "1500m",
                                "spark.eventLog.enabled": "true",
                                "spark.eventLog.dir": events.as_uri(),
                                "spark.eventLog.compress": "false",
                            },
                        )
                        wall, summary, started = run_export(
                            [str(root), "--master", c.master_url, *conf, "--to", "parquet",
                             str(dest)],
                            driver_dir(work / "driver", venv),
                        )  # fmt: skip
                    splits_.append(split_of(read_event_log(events), started))
                shutil.rmtree(dest, ignore_errors=True)
                times.append(wall)
                summaries.append(summary)
                print(f"  {op} run {run + 1}: {wall:.1f} s, {summary['rows']:,} rows")
            med = statistics.median(times)
            rows = summaries[0]["rows"]
            entry: dict[str, Any] = {
                "wall_s": [round(x, 2) for x in times],
                "median_s": round(med, 2),
                "rows": rows,
                "records_per_s": round(rows / med),
                "mb_per_s": round(size / med / 1e6, 1),
                "splits": summaries[0].get("splits"),
            }
            if splits_:
                entry["split"] = splits_[len(splits_) // 2]
            results["ops"][op] = entry
        if "spark1" in ops:
            n_tasks = results["ops"]["spark1"]["split"]["tasks"]
            results["reading_alone_s"] = round(reading_seconds(root, n_tasks), 2)
        report(results)
        if a.json:
            Path(a.json).write_text(json.dumps(results, indent=2) + "\n")
    finally:
        if a.keep:
            print(f"work dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def report(results: dict[str, Any]) -> None:
    ops = results["ops"]
    print()
    print(f"{'op':8} {'median s':>9} {'records/s':>11} {'MB/s':>7}  runs")
    for op, e in ops.items():
        runs = ", ".join(f"{x:.1f}" for x in e["wall_s"])
        print(f"{op:8} {e['median_s']:9.1f} {e['records_per_s']:11,} {e['mb_per_s']:7.1f}  {runs}")
    for op, e in ops.items():
        if "split" in e:
            print(f"{op} split: {json.dumps(e['split'])}")
    if "reading_alone_s" in results:
        print(f"reading alone (read_split in one process): {results['reading_alone_s']} s")
    if "local1" in ops and "spark1" in ops:
        ratio = ops["spark1"]["median_s"] / ops["local1"]["median_s"]
        verdict = "PASS" if ratio <= 1.3 else "FAIL"
        print(f"spark 1 worker / local --jobs 1, time per record: {ratio:.2f}x (<= 1.3x) {verdict}")
    if "spark1" in ops and "spark2" in ops:
        speedup = ops["spark1"]["median_s"] / ops["spark2"]["median_s"]
        verdict = "PASS" if speedup >= 1.8 else "FAIL"
        print(f"spark 2 workers / 1 worker speed-up: {speedup:.2f}x (>= 1.8x) {verdict}")
    print("(a shared 2-CPU machine: the driver, the workers and other users share the cores)")


if __name__ == "__main__":
    main()
