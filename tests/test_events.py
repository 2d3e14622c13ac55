"""The registry of JSON Lines objects (klogtool/events.py) is documented and enforced.

The whole suite runs with ``KLOGTOOL_STRICT_CODES=1`` (conftest.py), so every object a command
emits through :meth:`klogtool.output.Output.emit` is checked against the TypedDict of its
(command, type): an unregistered type, a missing required field, an unknown field or a value
of another JSON type fails the test that caused it.
"""

from __future__ import annotations

import io
import typing
from pathlib import Path

import click
import pytest

from klogtool import codes, events
from klogtool.output import Output

ROOT = Path(__file__).resolve().parent.parent


def test_the_reference_page_is_generated_from_the_registry() -> None:
    page = (ROOT / "docs" / "events.md").read_text()
    assert page == events.reference(), "regenerate: python -m klogtool.events > docs/events.md"


def test_every_type_is_described_and_has_its_type_field() -> None:
    for (command, kind), cls in events.EVENT_TYPES.items():
        assert cls.__doc__ and not cls.__doc__.startswith(cls.__name__), (command, kind)
        assert "type" in cls.__required_keys__, (command, kind)
        assert events._fields(cls)["type"] == (str,)


def test_event_is_the_union_of_every_registered_type() -> None:
    """What Output.emit and the log layer's emit callbacks take (mypy checks producers by it)."""
    members = typing.get_args(events.Event)
    assert len(members) == len(set(members))
    assert set(members) == set(events.EVENT_TYPES.values())
    assert typing.get_args(events.Emit) == ([events.Event], None)


def test_shared_producers_fit_every_command_they_serve() -> None:
    """Finding.as_obj() and writing.interrupted_obj() make one object for several commands:
    each command's type extends theirs (same fields first, same types, required alike)."""
    for base in (events.FindingObject, events.InterruptedOperation):
        kind = typing.get_type_hints(base)["type"].__args__[0]
        served = [cls for (_, k), cls in events.EVENT_TYPES.items() if k == kind]
        assert len(served) >= 2, kind
        for cls in served:
            fields = list(events._fields(cls).items())
            assert fields[: len(events._fields(base))] == list(events._fields(base).items())
            assert base.__required_keys__ <= cls.__required_keys__, cls


def _emit(command: str, obj: dict[str, object]) -> None:
    with click.Context(click.Command(command), info_name=command):
        Output("jsonl", stdout=io.StringIO()).emit(obj)


def test_emitted_objects_are_checked() -> None:
    assert codes.STRICT
    summary = {"type": "summary", "dry_run": True, "partitions": 1, "segments_deleted": 0}
    summary |= {"bytes_deleted": 0, "files_changed": 0}
    _emit("retention-sweep", summary)  # as registered: passes
    with pytest.raises(AssertionError, match="not registered"):
        _emit("retention-sweep", {"type": "no-such-object"})
    with pytest.raises(AssertionError, match="missing"):
        _emit("retention-sweep", {k: v for k, v in summary.items() if k != "partitions"})
    with pytest.raises(AssertionError, match="does not fit"):
        _emit("retention-sweep", summary | {"partitions": "one"})
    with pytest.raises(AssertionError, match="does not fit"):
        _emit("retention-sweep", summary | {"surprise": 1})
