"""``memory reembed`` moves a store of another embedding model to this one (issue 19, item 11).

The store is written as another model would write it: the real engine with a small
test embedder (``toy-trigram-16``, 16-d) registered through ``register_embedders``.
Then the real CLI re-embeds it with the shipped model, is killed with SIGKILL part way,
and a rerun finishes with nothing lost.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from contextlib import closing
from pathlib import Path

import pytest

from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.errors import ModelMismatchError
from bli_memory.core.paths import store_path
from tests.conftest import bin_path
from tests.core.test_hookspecs import _ToyEmbedder

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

SHIPPED = "all-MiniLM-L6-v2-int8"


def _toy_store(n: int) -> dict[str, str]:
    """A store of the toy model with ``n`` memories in space ``s1``, an updated one and a
    forgotten one; returns the ids by role."""
    toy = EmbeddedBackend(store_path(), embedder=_ToyEmbedder())
    try:
        ids = [toy.save(f"Fact number {i}: the service on port {8000 + i} is called svc{i}.",
                        space="s1").memory.id for i in range(n)]
        first = toy.update("Fact number 0: the service on port 8000 is now called gateway.",
                           space="s1", id=ids[0]).memory.id
        forgotten = toy.forget(space="s1", id=ids[1]).memory.id
    finally:
        toy.close()
    return {"original": ids[0], "head": first, "forgotten": forgotten}


def _rows(path: Path) -> list[tuple]:
    with closing(sqlite3.connect(path)) as conn, conn:
        return conn.execute("SELECT id, space, content, version, supersedes, state, created_at, "
                            "updated_at, embedding IS NULL FROM memories ORDER BY seq").fetchall()


def _models(path: Path) -> dict[str | None, int]:
    with closing(sqlite3.connect(path)) as conn, conn:
        return dict(conn.execute("SELECT embedding_model, count(*) FROM memories GROUP BY 1").fetchall())


def _reembed(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([bin_path(), "memory", "reembed", *args], capture_output=True, text=True,
                          timeout=300, **kw)


def test_a_store_of_another_model_can_be_read_but_not_searched(project: Path) -> None:
    _toy_store(3)
    backend = EmbeddedBackend(store_path())  # the shipped model
    try:
        info = backend.info(space="s1")
        assert info["storeEmbeddingModel"] == "toy-trigram-16" and info["embeddingModel"] == SHIPPED
        assert info["counts"]["active"] == 2
        assert len(backend.list_memories(space="s1")) == 2
        with pytest.raises(ModelMismatchError, match="memory reembed"):
            backend.search("which service is on port 8002?", space="s1")
        with pytest.raises(ModelMismatchError):
            backend.save("A new fact would mix two models.", space="s1")
    finally:
        backend.close()
    listed = subprocess.run([bin_path(), "memory", "list", "--space", "s1"], capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0 and "gateway" in listed.stdout, listed.stderr


def test_reembed_survives_sigkill_and_a_rerun_finishes_with_nothing_lost(project: Path) -> None:
    roles = _toy_store(120)
    path = store_path()
    before = _rows(path)
    proc = subprocess.Popen([bin_path(), "memory", "reembed", "--batch", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if _models(path).get(SHIPPED, 0) >= 5:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    partial = _models(path)
    assert partial.get(SHIPPED, 0) >= 5 and partial.get("toy-trigram-16", 0) > 0, partial
    assert _rows(path) == before  # only vectors changed, and the store still names the old model
    with closing(sqlite3.connect(path)) as conn, conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert dict(conn.execute("SELECT key, value FROM store_meta"))["embedding_model"] == "toy-trigram-16"

    done = _reembed("--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["finished"] and report["model"] == SHIPPED and report["previous"] == "toy-trigram-16"
    assert 0 < report["embedded"] < 121 - partial[SHIPPED] + 1
    assert _rows(path) == before  # same ids, versions, history, states and times
    assert _models(path) == {SHIPPED: 120, None: 1}  # the tombstone keeps no vector

    backend = EmbeddedBackend(store_path())
    try:
        hits = backend.search("what is the service on port 8000 called now?", space="s1").hits
        assert hits[0].memory.id == roles["head"]
        _, history = backend.get_memory(roles["original"], include_inactive=True)
        assert roles["head"] in [m.id for m in history]
        assert backend.store.get(roles["forgotten"]).state == "forgotten"
        assert "storeEmbeddingModel" not in backend.info(space="s1")
        assert backend.audit()["ok"]
    finally:
        backend.close()
    again = _reembed()
    assert again.returncode == 0 and "nothing to re-embed" in again.stdout, again.stdout + again.stderr


def test_reembed_refuses_a_service_with_a_clear_error(project: Path) -> None:
    env = {**os.environ, "BLI_MEMORY_DASHBOARD_URL": "http://127.0.0.1:9", "BLI_MEMORY_DEVICE_TOKEN": "t"}
    r = _reembed(env=env)
    assert r.returncode != 0 and "embedded store" in r.stderr and "Traceback" not in r.stderr


def test_the_mcp_server_answers_memory_info_and_list_on_a_store_of_another_model(project: Path) -> None:
    from tests.mcp_client import run_session, text_of

    _toy_store(3)

    async def body(client):
        info = await client.call_tool("memory_info", {"containerTag": "s1"})
        listed = await client.call_tool("list_memories", {"containerTag": "s1"})
        found = await client.call_tool("search_memory", {"query": "port 8002", "containerTag": "s1"})
        return info, listed, found

    info, listed, found = run_session(project, body)
    assert not info.is_error and not listed.is_error, text_of(info) + text_of(listed)
    assert "gateway" in text_of(listed) and "memory reembed" in text_of(info)
    assert info.structured_content["storeEmbeddingModel"] == "toy-trigram-16"
    assert found.is_error and "memory reembed" in text_of(found)
    for result in (info, found):  # both ways out, for a model with no known setting too
        assert ("set BLI_MEMORY_EMBEDDER to the model toy-trigram-16 (its name or model folder) to use "
                "the store as it is, or run `bli-memory-mcp memory reembed` to move it to " + SHIPPED
                ) in text_of(result)
