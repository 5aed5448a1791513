"""Two real ONNX models: a store of one is refused with the other, and ``memory reembed``
switches it both ways with nothing lost (issue 23).

The first model is the shipped all-MiniLM-L6-v2; the second a tiny real ONNX graph in a
model folder (``tests/core/memory/tiny_model.py``), chosen by ``BLI_MEMORY_EMBEDDER`` as a
path and as the installed short name ``mpnet``. Every step runs the real CLI.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.errors import ModelMismatchError
from bli_memory.core.memory import embedder_models
from bli_memory.core.paths import data_dir, store_path
from tests.conftest import bin_path
from tests.core.memory.tiny_model import write_tiny_model

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

SHIPPED = "all-MiniLM-L6-v2-int8"


def _cli(*args: str, embedder: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if embedder is not None:
        env["BLI_MEMORY_EMBEDDER"] = embedder
    return subprocess.run([bin_path(), *args], capture_output=True, text=True, timeout=300, env=env)


def _rows(path: Path) -> list[tuple]:
    with closing(sqlite3.connect(path)) as conn, conn:
        return conn.execute("SELECT id, space, content, version, supersedes, state, created_at, "
                            "updated_at, embedding IS NULL FROM memories ORDER BY seq").fetchall()


def _vectors(path: Path) -> dict[str | None, set[int]]:
    with closing(sqlite3.connect(path)) as conn, conn:
        found: dict[str | None, set[int]] = {}
        for model, size in conn.execute("SELECT embedding_model, length(embedding) FROM memories"):
            found.setdefault(model, set()).add(size)
        return found


def _shipped_store() -> dict[str, str]:
    backend = EmbeddedBackend(store_path())
    try:
        ids = [backend.save(f"Fact {i}: the service on port {8000 + i} is called svc{i}.",
                            space="s1").memory.id for i in range(6)]
        head = backend.update("Fact 0: the service on port 8000 is now called gateway.",
                              space="s1", id=ids[0]).memory.id
        forgotten = backend.forget(space="s1", id=ids[1]).memory.id
    finally:
        backend.close()
    return {"original": ids[0], "head": head, "forgotten": forgotten}


@pytest.mark.parametrize("by", ["path", "installed name"])
def test_a_store_switches_models_both_ways_with_nothing_lost(project: Path, tmp_path: Path, by: str) -> None:
    if by == "path":
        folder = write_tiny_model(tmp_path / "tiny")
        spec, model_id = str(folder), "tiny-bag-16"
    else:
        folder = write_tiny_model(embedder_models.installed_model_dir("mpnet", data_dir()),
                                  name="all-mpnet-base-v2-int8")
        spec, model_id = "mpnet", "all-mpnet-base-v2-int8"
    roles = _shipped_store()
    path = store_path()
    before = _rows(path)

    listed = _cli("memory", "list", "--space", "s1", embedder=spec)  # reading works
    assert listed.returncode == 0 and "gateway" in listed.stdout, listed.stderr
    with pytest.raises(ModelMismatchError, match="memory reembed"):
        backend = EmbeddedBackend(path, embedder=embedder_models.load_model_dir(folder))
        try:
            backend.search("which service is on port 8003?", space="s1")
        finally:
            backend.close()

    moved = _cli("memory", "reembed", "--json", embedder=spec)
    assert moved.returncode == 0, moved.stderr
    report = json.loads(moved.stdout)
    assert report == {**report, "finished": True, "model": model_id, "previous": SHIPPED, "embedded": 6}
    assert _rows(path) == before  # same ids, versions, history, states and times
    assert _vectors(path) == {model_id: {64}, None: {None}}  # 16 float32; the tombstone keeps none

    backend = EmbeddedBackend(path, embedder=embedder_models.load_model_dir(folder))
    try:
        hits = backend.search("the service on port 8000 is now called gateway", space="s1").hits
        assert hits[0].memory.id == roles["head"]
        assert roles["forgotten"] not in [h.memory.id for h in hits]
        assert backend.store.get(roles["forgotten"]).state == "forgotten"
        _, history = backend.get_memory(roles["original"], include_inactive=True)
        assert roles["head"] in [m.id for m in history]
        assert backend.audit()["ok"]
    finally:
        backend.close()
    old = EmbeddedBackend(path)  # the shipped model is refused now
    try:
        with pytest.raises(ModelMismatchError, match="memory reembed") as err:
            old.search("port 8000", space="s1")
    finally:
        old.close()
    # A shell without the variable must not be told only to re-embed: that would move
    # the store back. The advice names the setting that uses the store as it is.
    use = ("BLI_MEMORY_EMBEDDER=mpnet" if by == "installed name"
           else f"BLI_MEMORY_EMBEDDER to the model {model_id} (its name or model folder)")
    advice = (f"{use} to use the store as it is, "
              f"or run `bli-memory-mcp memory reembed` to move it to {SHIPPED}")
    assert advice in str(err.value)
    if by == "installed name":
        from tests.mcp_client import run_session, text_of

        async def body(client):
            info = await client.call_tool("memory_info", {"containerTag": "s1"})
            found = await client.call_tool("search_memory", {"query": "port 8000", "containerTag": "s1"})
            return info, found

        info, found = run_session(project, body)
        for result in (info, found):
            assert "BLI_MEMORY_EMBEDDER=mpnet to use the store as it is" in text_of(result), text_of(result)
            assert f"`bli-memory-mcp memory reembed` to move it to {SHIPPED}" in text_of(result)

    back = _cli("memory", "reembed", "--json")
    assert back.returncode == 0 and json.loads(back.stdout)["previous"] == model_id, back.stderr
    assert _rows(path) == before and _vectors(path) == {SHIPPED: {1536}, None: {None}}


def test_reembed_to_a_model_not_installed_says_how_to_install_it(project: Path) -> None:
    _shipped_store()
    before = _rows(store_path())
    r = _cli("memory", "reembed", embedder="mpnet")
    assert r.returncode != 0 and "bli-memory-mcp model install mpnet" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and _rows(store_path()) == before
