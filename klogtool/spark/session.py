"""Getting a SparkSession the way klogtool needs it, and registering the data source.

``local[*]`` is the embedded default: a JVM started from the pyspark package, needing nothing
but a Java 17+ runtime. The pitfalls of starting Spark from a library are handled here: Python
workers run this interpreter (``PYSPARK_PYTHON``), a local (or loopback) driver binds to
127.0.0.1 with the UI off, Parquet timestamps are INT64 microseconds, not INT96, and the
pushdown conf the data source needs is set by :func:`register`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import SparkSession

from klogtool.codes import Code
from klogtool.errors import KlogtoolError
from klogtool.spark.source import KafkaSegmentsDataSource

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
DEFAULT_MASTER = "local[*]"
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")

# Runtime SQL confs every klogtool job sets (also over Spark Connect).
SQL_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    PUSHDOWN_CONF: "true",
}


def register(spark: SparkSession) -> None:
    """Register ``kafka-segments`` with ``spark`` and enable the filter pushdown it uses
    (without the conf every read of a source that implements ``pushFilters`` fails)."""
    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(KafkaSegmentsDataSource)


def is_local(master: str) -> bool:
    return master == "local" or master.startswith(("local[", "local-cluster["))


def is_loopback(master: str) -> bool:
    m = re.match(r"^spark://([^/]+?)(?::\d+)?(?:,|$)", master)
    return m is not None and m.group(1) in _LOOPBACK


def session_conf(master: str, conf: dict[str, str] | None = None) -> dict[str, str]:
    """The conf klogtool starts a session with (``conf`` wins over every default)."""
    out = dict(SQL_CONF)
    out["spark.ui.showConsoleProgress"] = "false"
    if is_local(master) or is_loopback(master):
        out.update(
            {
                "spark.ui.enabled": "false",
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
            }
        )
    out.update(conf or {})
    return out


# log4j2 config for a quiet driver: the CLI reports a failed job itself, in one line.
_QUIET_LOG4J2 = """\
rootLogger.level = off
rootLogger.appenderRef.stderr.ref = console
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = off
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = off
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def quiet_java_options() -> str:
    """JVM options that silence Spark's log4j output (written once to the temp dir)."""
    path = os.path.join(tempfile.gettempdir(), f"klogtool-log4j2-{os.getuid()}.properties")
    try:
        with open(path, encoding="utf-8") as f:
            current = f.read()
    except OSError:
        current = None
    if current != _QUIET_LOG4J2:
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(_QUIET_LOG4J2)
        os.replace(tmp, path)
    return f"-Dlog4j2.configurationFile=file:{path}"


def _java_problem() -> str | None:
    """Why Java cannot run Spark 4 here (None when it looks fine)."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        return "no Java runtime found (Spark needs Java 17 or newer on PATH or in JAVA_HOME)"
    try:
        r = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"{java} does not run: {e}"
    m = re.search(r'version "(\d+)(?:\.(\d+))?', r.stderr + r.stdout)
    if m is not None:
        major = int(m.group(1))
        if major == 1 and m.group(2):
            major = int(m.group(2))
        if major < 17:
            return f"{java} is Java {major}; Spark 4 needs Java 17 or newer"
    return None


JAVA_HINT = (
    "install a Java 17+ runtime (e.g. apt-get install openjdk-17-jre-headless) or set "
    "JAVA_HOME; --engine local needs no Java"
)


# Lines the JVM writes to its stderr at every start that say nothing to a klogtool user.
JVM_NOISE = (b"WARNING: Using incubator modules",)


@contextmanager
def _jvm_noise_filtered() -> Iterator[None]:
    """Start the JVM with its stderr on a pipe that a thread copies to ours, less JVM_NOISE:
    the JVM keeps that pipe for life, so its real errors still show."""
    try:
        ours = os.dup(2)
        read_end, write_end = os.pipe()
    except OSError:
        yield
        return

    def copy() -> None:
        with os.fdopen(read_end, "rb") as lines:
            for line in lines:
                if not line.startswith(JVM_NOISE):
                    os.write(ours, line)

    threading.Thread(target=copy, name="klogtool-jvm-stderr", daemon=True).start()
    sys.stderr.flush()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(ours, 2)  # this process writes to the real stderr again; the JVM keeps the pipe


def get_session(
    master: str | None = None,
    remote: str | None = None,
    conf: dict[str, str] | None = None,
    app_name: str = "klogtool",
    quiet: bool = False,
) -> tuple[SparkSession, bool]:
    """A registered session and whether the caller owns it (and should stop it).

    A session already active in this process is reused (and not owned) unless it runs on
    another master than the one asked for. ``quiet`` turns Spark's own logging off (for a
    session this call starts).
    """
    if remote:
        try:
            spark = SparkSession.builder.remote(remote).appName(app_name).getOrCreate()
        except ImportError as e:
            raise KlogtoolError(
                f"Spark Connect needs packages that are not installed: {e}",
                code=Code.SPARK_CONNECT_UNAVAILABLE,
                hint="pip install 'pyspark[connect]'",
            ) from None
        except Exception as e:
            raise KlogtoolError(
                f"cannot connect to {remote}: {_first_line(e)}", code=Code.SPARK_UNAVAILABLE
            ) from None
        for k, v in {**SQL_CONF, **(conf or {})}.items():
            spark.conf.set(k, v)
        register(spark)
        return spark, True
    active = SparkSession.getActiveSession()
    if active is not None:
        running = active.sparkContext.master
        if master is not None and master != running:
            raise KlogtoolError(
                f"a Spark session on {running} is already running in this process, not on {master}",
                code=Code.SPARK_SESSION_CONFLICT,
            )
        for k, v in SQL_CONF.items():
            active.conf.set(k, v)
        register(active)
        return active, False
    master = master or DEFAULT_MASTER
    settings = session_conf(master, conf)
    if quiet:
        key = "spark.driver.extraJavaOptions"
        settings[key] = (settings.get(key, "") + " " + quiet_java_options()).strip()
    if "spark.pyspark.python" in settings:
        # PySpark hands the JVM the workers' Python from PYSPARK_PYTHON, read when the context
        # starts; the conf alone is only applied by spark-submit starting a Python driver, so
        # without this the executors (and the planning worker) would run python3.
        os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    if is_local(master) or is_loopback(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        if "spark.pyspark.python" not in settings:
            # Workers must run this interpreter (it has klogtool and pyarrow), not python3.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if is_local(master) and not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise KlogtoolError(
            "no Java runtime found (Spark needs Java 17 or newer on PATH or in JAVA_HOME)",
            code=Code.JAVA_MISSING,
            hint=JAVA_HINT,
        )
    builder: Any = SparkSession.builder.master(master).appName(app_name)
    for k, v in settings.items():
        builder = builder.config(k, v)
    try:
        with _jvm_noise_filtered():
            spark = builder.getOrCreate()
    except Exception as e:
        problem = _java_problem()
        raise KlogtoolError(
            f"cannot start Spark on {master}: {problem or _first_line(e)}",
            code=Code.SPARK_UNAVAILABLE,
            hint=JAVA_HINT if problem else None,
        ) from None
    spark.sparkContext.setLogLevel("OFF" if quiet else "ERROR")
    register(spark)
    return spark, True


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines() or [type(e).__name__])[0][:300]
