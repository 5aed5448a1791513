"""A session the relay hands to the in-process server: replayed lines, lost answers.

When the daemon dies after it committed a write but before its answer reached the relay
(core/mcp/relay.py), the in-process server runs the request again. These tests give the
real server, on a real store, the handover a relay makes in that case: the saved
``initialize`` (whose answer the client already had), ``notifications/initialized`` and
the requests whose answers were lost, after the daemon had done their work.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import time
import uuid
from pathlib import Path

import anyio
import pytest

from bli_memory.core.mcp.server import default_state, serve_connection
from bli_memory.core.mcp.stdio import handover_source
from bli_memory.core.settings import load_settings

SESSION = "mcp-" + str(uuid.UUID(int=7))


class Collector:
    """The server's answers, as the relay's stdout would carry them."""

    def __init__(self) -> None:
        self.lines: list[dict] = []

    async def write(self, text: str) -> None:
        self.lines.append(json.loads(text))

    async def flush(self) -> None:
        pass


def _line(ident: int | None, method: str, params: dict | None = None) -> bytes:
    message: dict = {"jsonrpc": "2.0", "method": method}
    if ident is not None:
        message["id"] = ident
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


def _call(ident: int, tool: str, **arguments: object) -> bytes:
    return _line(ident, "tools/call", {"name": tool, "arguments": arguments})


INIT = _line(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "0"}})


def _resume(replay: list[bytes], replayed: dict, later: list[bytes]) -> list[dict]:
    """Serve ``replay`` then ``later`` on the in-process server, as a relay hands them over."""
    state = default_state(load_settings())
    state.session_id = SESSION
    state.replayed = replayed
    lines: queue.Queue = queue.Queue()
    for line in [*later, None]:
        lines.put(line)
    out = Collector()
    anyio.run(lambda: serve_connection(state, source=handover_source(replay, lines), stdout=out,
                                       drop_reply_to=1))
    return out.lines


@pytest.fixture
def project(temp_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def _backend():
    from bli_memory.core.embedded.engine import EmbeddedBackend

    return EmbeddedBackend(load_settings().store_path)


def test_a_forget_whose_answer_was_lost_answers_as_the_forget_did(project: Path) -> None:
    from bli_memory.core.mcp.state import default_space

    space, _ = default_space(load_settings())
    backend = _backend()
    saved = backend.save("The nightly backup goes to the cold bucket.", space=space)
    sent = time.time()
    backend.forget(space=space, id=saved.memory.id)  # the daemon's work, before it died
    backend.close()
    answers = _resume([INIT, _line(None, "notifications/initialized"),
                       _call(7, "forget_memory", id=saved.memory.id)], {7: sent},
                      [_call(8, "forget_memory", id=saved.memory.id)])
    by_id = {a.get("id"): a for a in answers}
    assert 1 not in by_id  # the client already had its initialize answered
    replayed, fresh = by_id[7]["result"], by_id[8]["result"]
    assert not replayed.get("isError"), replayed
    assert replayed["structuredContent"]["forgotten"]["id"] == saved.memory.id
    assert replayed["content"][0]["text"].startswith("Forgotten by id")
    # A forget that was not run again answers as it always did.
    assert fresh["isError"] and "not_found" in fresh["content"][0]["text"]


BACKUP = "The nightly backup goes to the cold bucket."
BACKUP_TOO = "The nightly backups go to the cold bucket."  # cosine 0.96 with BACKUP


@pytest.mark.parametrize(("selector", "how"), [({"content": BACKUP}, "Forgotten by exact text"),
                                               ({"query": BACKUP}, "Forgotten by closest match (")])
def test_a_forget_by_text_or_query_whose_answer_was_lost_answers_as_the_forget_did(
        project: Path, selector: dict, how: str) -> None:
    from bli_memory.core.mcp.state import default_space

    space, _ = default_space(load_settings())
    backend = _backend()
    saved = backend.save(BACKUP, space=space)
    near = backend.save(BACKUP_TOO, space=space)  # the next closest match: not to be forgotten too
    sent = time.time()
    backend.forget(space=space, **selector)  # the daemon's work, before it died
    backend.close()
    answers = _resume([INIT, _call(7, "forget_memory", **selector)], {7: sent}, [])
    (replayed,) = [a["result"] for a in answers if a.get("id") == 7]
    assert not replayed.get("isError"), replayed
    assert replayed["structuredContent"]["forgotten"]["id"] == saved.memory.id
    assert replayed["content"][0]["text"].startswith(how)
    backend = _backend()
    try:  # run again as a new forget, the query would have taken the next match
        assert backend.get_memory(near.memory.id)[0].state == "active"
    finally:
        backend.close()


def test_a_forget_an_earlier_request_did_just_before_is_not_this_ones(project: Path) -> None:
    from bli_memory.core.mcp.state import default_space

    space, _ = default_space(load_settings())
    backend = _backend()
    earlier = backend.save(BACKUP, space=space)
    near = backend.save(BACKUP_TOO, space=space)
    backend.forget(space=space, id=earlier.memory.id)  # an earlier request's, answered
    backend.close()
    sent = time.time()  # this request, sent a moment later; the daemon died before running it
    requests = [_call(7, "forget_memory", query=BACKUP), _call(8, "forget_memory", id=earlier.memory.id)]
    answers = _resume([INIT, *requests], {7: sent, 8: sent}, [])
    (by_query,) = [a["result"] for a in answers if a.get("id") == 7]
    assert not by_query.get("isError"), by_query
    assert by_query["structuredContent"]["forgotten"]["id"] == near.memory.id  # it ran
    (by_id,) = [a["result"] for a in answers if a.get("id") == 8]  # forgotten before it was sent
    assert by_id["isError"] and "not_found" in by_id["content"][0]["text"], by_id


def test_a_forget_of_long_ago_stays_not_found_when_run_again(project: Path) -> None:
    from bli_memory.core.mcp.state import default_space

    space, _ = default_space(load_settings())
    backend = _backend()
    saved = backend.save("Feature flags live in the flags service.", space=space)
    backend.forget(space=space, id=saved.memory.id)
    backend.close()
    answers = _resume([INIT, _call(7, "forget_memory", id=saved.memory.id)], {7: time.time() + 60}, [])
    (answer,) = [a for a in answers if a.get("id") == 7]
    assert answer["result"]["isError"] and "not_found" in answer["result"]["content"][0]["text"]


def test_an_extract_whose_answer_was_lost_is_queued_once(project: Path) -> None:
    text = "We decided to pin the CI image to a digest because tags moved under us."
    first = _resume([INIT, _call(5, "save_memory", content=text, extract=True)], {}, [])
    (queued,) = [a for a in first if a.get("id") == 5]
    job_id = queued["result"]["structuredContent"]["jobId"]
    again = _resume([INIT, _call(5, "save_memory", content=text, extract=True)], {5: time.time()}, [])
    (requeued,) = [a for a in again if a.get("id") == 5]
    assert requeued["result"]["structuredContent"]["jobId"] == job_id
    with sqlite3.connect(load_settings().store_path) as db:
        (count,) = db.execute("SELECT count(*) FROM memory_extract_jobs").fetchone()
    assert count == 1
