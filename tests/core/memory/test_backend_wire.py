"""The daemon route's codec: every contract result of a real store survives JSON unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bli_memory.core import errors
from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.memory import backend_wire


def _through_json(call: str, value):
    wire = json.loads(json.dumps(backend_wire.encode_result(call, value)))
    return backend_wire.decode_result(call, wire)


def test_every_result_of_a_real_store_comes_back_equal(tmp_path: Path) -> None:
    b = EmbeddedBackend(tmp_path / "m.sqlite3")
    try:
        results = {}
        results["save"] = b.save("We prefer ruff over flake8 for linting.", space="s1",
                                 metadata={"k": [1, "two"]}, session_id="mcp-x", custom_id="lint")
        b.save("The user loves Chinese food.", space="s1")
        b.save("The user hates Chinese food.", space="s1")
        results["search"] = b.search("what does the user think of Chinese food?", space="s1",
                                     include_profile=True)
        assert results["search"].hits and results["search"].conflicts and results["search"].profile
        first = results["save"].memory
        results["update"] = b.update("We prefer ruff for linting and formatting.", space="s1", id=first.id)
        results["get_memory"] = b.get_memory(first.id, include_inactive=True)
        results["history"] = b.history(first.id)
        results["list_memories"] = b.list_memories(space="s1")
        results["profile"] = b.profile(space="s1")
        results["term_frequencies"] = b.term_frequencies("ruff linting", space="s1")
        results["info"] = b.info(space="s1")
        results["audit"] = b.audit()
        results["enqueue_extract"] = b.enqueue_extract("raw talk", space="s1", source="mcp")
        results["forget"] = b.forget(space="s1", query="The user hates Chinese food.")
        results["record_turn"] = b.record_turn("user: hi\nassistant: hello", space="s1", source="mcp")
        results["recordings"] = b.recordings(space="s1")
        results["clear_recordings"] = b.clear_recordings(space="s1")
        results["purge"] = b.purge(first.id)
    finally:
        b.close()
    assert set(results) == set(backend_wire.CALLS)
    for call, value in results.items():
        assert _through_json(call, value) == value, call


@pytest.mark.parametrize("exc", [
    errors.NotFoundError("no live memory with id x"),
    errors.InvalidInputError("content must not be empty"),
    errors.StoreError("the store cannot be read", reason="store_unavailable"),
    errors.ModelMismatchError("the store holds vectors of another model"),
])
def test_errors_come_back_with_their_class_reason_and_message(exc: errors.BliMemoryError) -> None:
    again = backend_wire.decode_error(json.loads(json.dumps(backend_wire.encode_error(exc))))
    assert type(again) is type(exc) and again.reason == exc.reason and again.message == exc.message


def test_an_unknown_class_or_a_foreign_exception_keeps_its_text() -> None:
    odd = backend_wire.decode_error({"class": "PluginError", "reason": "plugin_failed", "message": "m"})
    assert type(odd) is errors.BliMemoryError and odd.reason == "plugin_failed" and odd.message == "m"
    foreign = backend_wire.decode_error(backend_wire.encode_error(ValueError("bad value")))
    assert type(foreign) is RuntimeError and str(foreign) == "bad value"
    with pytest.raises(KeyError):
        backend_wire.decode_result("search", {"query": "q"})
