"""A real standalone Spark cluster on 127.0.0.1 for the cluster test, run in the background.

A master and a worker are started from the pyspark package's ``bin/spark-class`` (the wheel
has no ``sbin/start-*.sh``) on random free loopback ports, then ``klogtool export --master
spark://127.0.0.1:PORT`` runs against them as a separate process. All of it happens in a
thread started when the Spark tests begin, so that its JVM start-ups overlap the local-mode
tests; the cluster test only waits for the outcome. :meth:`StandaloneExport.stop` always
kills every process group it started.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """``n`` distinct free loopback ports (all held open until each is bound)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind((LOOPBACK, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def kill_group(p: subprocess.Popen) -> None:
    if p.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=15)
            return
        except subprocess.TimeoutExpired:
            continue


class _DaemonExited(RuntimeError):
    pass


class StandaloneExport:
    def __init__(self, tmp: Path, args: list[str], java_options: str, cwd: Path):
        import pyspark

        self.home = Path(pyspark.__file__).resolve().parent
        self.tmp = tmp
        self.args = args  # klogtool arguments, --master is added
        self.java_options = java_options
        self.cwd = cwd
        self.procs: list[subprocess.Popen] = []
        self.master_url: str | None = None
        self.outcome: subprocess.CompletedProcess[str] | None = None
        self.error: BaseException | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="standalone-export", daemon=True)

    def start(self) -> StandaloneExport:
        self._thread.start()
        return self

    def result(self, timeout: float) -> subprocess.CompletedProcess[str]:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"the standalone export did not finish in {timeout} s")
        if self.error is not None:
            raise self.error
        assert self.outcome is not None
        return self.outcome

    def stop(self) -> None:
        self._stopping.set()
        for p in reversed(self.procs):
            kill_group(p)
        self._thread.join(60)

    # -- the background work ----------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "SPARK_HOME": str(self.home),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_LOCAL_DIRS": str(self.tmp / "local"),
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
            "SPARK_DAEMON_JAVA_OPTS": f"{self.java_options} -Dspark.port.maxRetries=0",
            "NO_COLOR": "1",
        }

    def _spawn(self, cmd: list[str], log: str) -> subprocess.Popen:
        if self._stopping.is_set():
            raise RuntimeError("stopped")
        with open(self.tmp / log, "wb") as out:
            p = subprocess.Popen(
                cmd,
                env=self._env(),
                cwd=self.tmp,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, killed as a whole
            )
        self.procs.append(p)
        return p

    def _run(self) -> None:
        try:
            self._cluster()
            self._export()
        except BaseException as e:  # handed to the test by result()
            self.error = e

    def _cluster(self) -> None:
        # A free port can be taken by another process before the JVM binds it; the daemons
        # then fail (spark.port.maxRetries=0, see _env) and the cluster starts on new ports.
        for attempt in range(1, 4):
            try:
                return self._start_daemons(attempt)
            except _DaemonExited:
                if attempt == 3:
                    raise
                for p in reversed(self.procs):
                    kill_group(p)
                self.procs.clear()

    def _start_daemons(self, attempt: int) -> None:
        spark_class = str(self.home / "bin" / "spark-class")
        port, ui, wport, wui = free_ports(4)
        self.master_url = f"spark://{LOOPBACK}:{port}"
        self._spawn(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
             "--port", str(port), "--webui-port", str(ui)],
            f"master-{attempt}.log",
        )  # fmt: skip
        self._spawn(
            [spark_class, "org.apache.spark.deploy.worker.Worker", self.master_url,
             "--host", LOOPBACK, "--port", str(wport), "--webui-port", str(wui),
             "--cores", "2", "--memory", "2g", "--work-dir", str(self.tmp / "work")],
            f"worker-{attempt}.log",
        )  # fmt: skip
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not self._stopping.is_set():
            for p in self.procs:
                if p.poll() is not None:
                    raise _DaemonExited(
                        f"a standalone daemon exited ({p.returncode}); see {self.tmp}/*.log"
                    )
            try:
                with urllib.request.urlopen(f"http://{LOOPBACK}:{ui}/json/", timeout=5) as r:
                    state = json.load(r)
                if any(w.get("state") == "ALIVE" for w in state.get("workers", [])):
                    return
            except (OSError, ValueError):  # not up yet (early on, /json/ may answer with HTML)
                pass
            time.sleep(0.3)
        raise TimeoutError("the standalone master and worker did not come up")

    def _export(self) -> None:
        assert self.master_url is not None
        cmd = [sys.executable, "-m", "klogtool", *self.args, "--master", self.master_url]
        p = self._spawn_pipe(cmd)
        out, err = p.communicate(timeout=300)
        self.outcome = subprocess.CompletedProcess(cmd, p.returncode, out, err)

    def _spawn_pipe(self, cmd: list[str]) -> subprocess.Popen:
        if self._stopping.is_set():
            raise RuntimeError("stopped")
        p = subprocess.Popen(
            cmd,
            env=self._env(),
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.procs.append(p)
        return p
