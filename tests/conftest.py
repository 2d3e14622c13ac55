"""Test-run configuration. What tests share lives in the support package (tests/support/)."""

from __future__ import annotations

import os

import pytest

# Every finding and error code created in the suite (and in the CLI processes it starts) is
# checked against the registry, klogtool/codes.py. Set before klogtool is imported.
os.environ["KLOGTOOL_STRICT_CODES"] = "1"

from klogtool.formats import engine  # noqa: E402

# Every test runs under both engines (ids end in [native] / [python]), but for the ones that
# do not read Kafka data through the format layer, and the Spark tests, whose executors pick
# their engine once when they start (the local export tests cover the same reader).
ENGINES = [engine.NATIVE, engine.PYTHON] if engine.native_available() else [engine.PYTHON]
ONE_ENGINE = (
    "tests/spark/",
    "tests/test_lint.py",
    "tests/test_manpages.py",
    "tests/test_native_crate.py",
    "tests/test_layers.py",
    "tests/formats/test_engines.py",  # compares the engines itself
    "tests/formats/test_crc_prefetch.py",  # native machinery, on and off
    "tests/formats/test_native_regex.py",  # native against re itself
    "tests/test_cli_dump.py::test_processes_render_the_same_dump",  # native: its child's
    "tests/test_corpus_notice.py",
    "tests/test_startup.py",
    "tests/test_remote_objects.py",  # bytes in, bytes out: no engine
    "tests/test_export_memory.py",
    "tests/test_stats_html.py",
    "tests/test_output_tables.py",
    "tests/test_codes.py",
    "tests/test_events.py",
    "tests/test_wheel.py",  # runs the wheel's CLI in another environment
    # object storage's timeouts and Ctrl-C: the requests, not the engine, are under test
    "tests/test_storage.py::test_a_stalled_request_times_out_in_one_line",
    "tests/test_storage.py::test_ctrl_c_ends_a_command_a_server_stalls",
)


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python (the reference implementation) loads its protocol schemas with APIs that
    # Python 3.11 deprecates; that noise is not ours.
    config.addinivalue_line(
        "filterwarnings", "ignore:(read_text|open_text) is deprecated:DeprecationWarning"
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get("KLOGTOOL_REQUIRE_NATIVE") and not engine.native_available():
        raise pytest.UsageError(
            "KLOGTOOL_REQUIRE_NATIVE is set but the native engine is not built "
            "(python3 -m pip install -e . compiles it)"
        )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "klogtool_engine" in metafunc.fixturenames and not metafunc.definition.nodeid.startswith(
        ONE_ENGINE
    ):
        metafunc.parametrize("klogtool_engine", ENGINES, indirect=True)


@pytest.fixture(autouse=True)
def klogtool_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The engine this test runs under, in this process and in the commands it starts."""
    name: str = getattr(request, "param", ENGINES[0])
    engine.use(name)
    monkeypatch.setenv("KLOGTOOL_ENGINE", name)
    return name


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The Spark tests run last: their JVM gateway threads and background cluster must not be
    # alive when other tests fork (the crash harness forks the CLI).
    items.sort(key=lambda item: item.nodeid.startswith("tests/spark/"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # Without the real-broker corpus hundreds of tests skip (or, parametrised over its files,
    # collect as empty): say so once, loudly, at the end of the run.
    from support.paths import CORPUS

    if (CORPUS / "MANIFEST.md").is_file():
        return
    skipped = terminalreporter.stats.get("skipped", [])
    n = sum(
        1
        for r in skipped
        if "corpus" in str(r.longrepr).lower() or "empty parameter set" in str(r.longrepr)
    )
    if not n:
        return
    empty = sum(1 for r in skipped if "empty parameter set" in str(r.longrepr))
    terminalreporter.write_sep("=", "REAL-BROKER CORPUS MISSING", red=True, bold=True)
    terminalreporter.write_line(
        f"{n} tests were skipped because the real-broker corpus was not found at {CORPUS}; "
        f"{empty} of them stand for tests generated once per corpus file (1,076 tests with the "
        "corpus CI uses: the README gives the counts). Point KLOGTOOL_CORPUS at a corpus "
        "directory (one holding MANIFEST.md, e.g. KLOGTOOL_CORPUS=../shared/corpus/real) to "
        "run them."
    )


@pytest.fixture
def no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """fsync makes each write take milliseconds here; a SIGKILL (the crash harness) does not
    lose the page cache, so the crash tests skip it."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)
