"""A real S3 API server on 127.0.0.1 for the object-storage tests: moto's server (the S3
emulator s3fs's own tests use), behind a WSGI layer that counts every request and the bytes
of every response, and can fail requests on demand (to prove the retries)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BUCKET = "klogtool-tests"


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # without the bucket
    query: str
    range: str | None
    status: int
    sent: int  # bytes of the response body


class S3Server:
    """``start()`` serves; ``env`` is what a client needs (the standard AWS variables)."""

    def __init__(self) -> None:
        import logging

        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request

        self.requests: list[Request] = []
        self.fail: list[tuple[str, int]] = []  # (path substring, HTTP status): next matches
        # (substring of path?query, method): the next such request stalls until :meth:`release`
        # (or a minute): a GET sends its headers and then nothing, a PUT or POST is not read
        self.stall: list[tuple[str, str]] = []
        self.released = threading.Event()
        # (path substring, bytes): the next GET that matches replaces the object with the
        # bytes once it has answered (a writer replacing it between two ranged reads)
        self.replace_after: list[tuple[str, bytes]] = []
        self.lock = threading.Lock()
        app = DomainDispatcherApplication(create_backend_app)
        self.server = make_server("127.0.0.1", 0, self._counting(app), threaded=True)
        self.port = self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "klogtool-test-key",
            "AWS_SECRET_ACCESS_KEY": "klogtool-test-secret",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def start(self) -> S3Server:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()

    def _counting(self, app: Any) -> Any:
        def counted(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            path = environ.get("PATH_INFO", "")
            status = [0]
            method = environ["REQUEST_METHOD"]
            with self.lock:
                failing = next((f for f in self.fail if f[0] in path), None)
                if failing is not None:
                    self.fail.remove(failing)
                asked = f"{path}?{environ.get('QUERY_STRING', '')}"
                stalling = next((s for s in self.stall if s[0] in asked and s[1] == method), None)
                if stalling is not None:
                    self.stall.remove(stalling)
                replacing = next(
                    (r for r in self.replace_after if r[0] in path and method == "GET"), None
                )
                if replacing is not None:
                    self.replace_after.remove(replacing)
            if failing is not None:
                start_response(f"{failing[1]} Injected", [("Content-Length", "0")])
                self._record(environ, failing[1], 0)
                return [b""]
            if stalling is not None and method != "GET":  # the upload is never read
                self._record(environ, 0, 0)
                self.released.wait(60)
                start_response("500 Stalled", [("Content-Length", "0")])
                return [b""]

            def start(st: str, headers: Any, exc_info: Any = None) -> Any:
                status[0] = int(st.split()[0])
                return start_response(st, headers, exc_info)

            body = list(app(environ, start))
            self._record(environ, status[0], sum(len(b) for b in body))
            if replacing is not None:
                key = path[len(f"/{BUCKET}/") :]
                self.client().put_object(Bucket=BUCKET, Key=key, Body=replacing[1])
            if stalling is not None:
                return self._stalled()
            return body

        return counted

    def _stalled(self) -> Iterator[bytes]:
        yield b""  # the status line and headers go out with the first (empty) write
        self.released.wait(60)

    def release(self) -> None:
        """End every stalled request (they answer nothing more), and stall no more."""
        with self.lock:
            self.stall.clear()
        self.released.set()

    def _record(self, environ: dict[str, Any], status: int, sent: int) -> None:
        path = environ.get("PATH_INFO", "")
        prefix = f"/{BUCKET}"
        with self.lock:
            self.requests.append(
                Request(
                    environ["REQUEST_METHOD"],
                    path[len(prefix) :] if path.startswith(prefix) else path,
                    environ.get("QUERY_STRING", ""),
                    environ.get("HTTP_RANGE"),
                    status,
                    sent,
                )
            )

    # -- what a test does ---------------------------------------------------------------------
    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="klogtool-test-key",
            aws_secret_access_key="klogtool-test-secret",
            region_name="us-east-1",
        )

    def upload(self, local: Path, prefix: str) -> str:
        """Every regular file under ``local`` as objects under ``prefix``; the URI of it."""
        c = self.client()
        for f in sorted(local.rglob("*")):
            if f.is_file() and not f.is_symlink():
                c.put_object(
                    Bucket=BUCKET,
                    Key=f"{prefix}/{f.relative_to(local).as_posix()}",
                    Body=f.read_bytes(),
                )
        return f"s3://{BUCKET}/{prefix}"

    def reset(self) -> None:
        """Count from now on, with every store forgotten (their listings too)."""
        from klogtool.log import storage

        storage.forget()
        with self.lock:
            self.requests = []
            self.released.clear()

    def fetched(self) -> int:
        """Bytes of the objects' contents sent since :meth:`reset` (GETs of keys)."""
        return sum(r.sent for r in self.requests if r.method == "GET" and r.path not in ("", "/"))


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """The session's S3 server with the bucket made, its variables in this process's
    environment (klogtool runs in-process), each store forgotten after the session."""
    pytest.importorskip("moto.server", reason="moto[server] (the test extra) is not installed")
    # klogtool reads URIs through pyarrow's file systems (the storage extra)
    pytest.importorskip("pyarrow.fs", reason="object storage needs pyarrow (the storage extra)")
    server = S3Server().start()
    saved = {k: os.environ.get(k) for k in server.env}
    os.environ.update(server.env)
    server.client().create_bucket(Bucket=BUCKET)
    try:
        yield server
    finally:
        from klogtool.log import storage

        storage.forget()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()
