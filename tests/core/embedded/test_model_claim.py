"""A store records its embedding model at its first vector, not when it is opened.

A process configured with a model that is not installed yet (``mpnet`` before ``model
install``) opens the store to list and inform. If that claimed a new, empty store, the
shipped model would be refused there until ``memory reembed``, though nothing was ever
embedded. Every opener is tried: the CLI, the MCP server and the prompt hook.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from bli_memory.core.paths import store_path
from tests.conftest import FIXTURES, bin_path
from tests.hooks_util import run_hook
from tests.mcp_client import run_session, text_of

SHIPPED = "all-MiniLM-L6-v2-int8"


def _meta() -> dict[str, str]:
    with closing(sqlite3.connect(store_path())) as conn, conn:
        return dict(conn.execute("SELECT key, value FROM store_meta").fetchall())


@pytest.mark.e2e
@pytest.mark.e2e
def test_opening_a_new_store_with_a_model_not_installed_claims_nothing(project: Path) -> None:
    mpnet = {**os.environ, "BLI_MEMORY_EMBEDDER": "mpnet"}
    listed = subprocess.run([bin_path(), "memory", "list"], cwd=project, env=mpnet, capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr

    async def mpnet_body(client):
        info = await client.call_tool("memory_info", {})
        saved = await client.call_tool("save_memory", {"content": "Staging listens on port 8443."})
        return info, saved

    info, saved = run_session(project, mpnet_body, BLI_MEMORY_EMBEDDER="mpnet")
    assert not info.is_error and saved.is_error, (text_of(info), text_of(saved))
    prompt = json.loads((FIXTURES / "claude" / "prompt.json").read_text())
    prompt.update(cwd=str(project), prompt="Which port does staging listen on?")
    hooked = run_hook("prompt", prompt, cwd=project, env={"BLI_MEMORY_EMBEDDER": "mpnet"})
    assert hooked.returncode == 0
    assert "embedding_model" not in _meta()  # nothing was embedded, so nothing is claimed

    async def shipped_body(client):
        saved = await client.call_tool("save_memory", {"content": "Staging listens on port 8443."})
        found = await client.call_tool("search_memory", {"query": "staging port"})
        return saved, found

    saved, found = run_session(project, shipped_body)
    assert not saved.is_error and not found.is_error, (text_of(saved), text_of(found))
    assert "8443" in text_of(found)
    assert _meta()["embedding_model"] == SHIPPED and _meta()["embedding_dimensions"] == "384"


def test_the_first_vector_claims_the_store_for_its_model(project: Path) -> None:
    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.errors import ModelMismatchError
    from bli_memory.core.memory import embedder_models
    from tests.core.memory.tiny_model import write_tiny_model

    tiny = embedder_models.load_model_dir(write_tiny_model(project.parent / "tiny"))
    first = EmbeddedBackend(store_path(), embedder=tiny)
    second = EmbeddedBackend(store_path())  # opened before anything was written: no claim
    try:
        first.save("The tiny model wrote this first.", space="s")
        assert _meta()["embedding_model"] == "tiny-bag-16"
        try:
            second.save("The shipped model comes second.", space="s")
        except ModelMismatchError as exc:
            assert "tiny-bag-16" in str(exc)
        else:
            raise AssertionError("a second model wrote into a store of the first")
        assert [m.content for m in first.list_memories(space="s")] == ["The tiny model wrote this first."]
    finally:
        first.close()
        second.close()


def test_a_store_claimed_without_a_vector_is_claimed_anew(project: Path) -> None:
    # A store opened with mpnet configured before this rule recorded mpnet with nothing
    # embedded: the shipped model must not be refused there.
    from bli_memory.core.embedded.engine import EmbeddedBackend

    first = EmbeddedBackend(store_path())
    first.info(space="s")  # creates the store
    first.close()
    with closing(sqlite3.connect(store_path())) as conn, conn:
        conn.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES "
                     "('embedding_model', 'all-mpnet-base-v2-int8'), ('embedding_dimensions', '768')")
    backend = EmbeddedBackend(store_path())
    try:
        assert "storeEmbeddingModel" not in backend.info(space="s")
        backend.save("Staging listens on port 8443.", space="s")
        assert backend.search("staging port", space="s").hits
    finally:
        backend.close()
    assert _meta()["embedding_model"] == SHIPPED and _meta()["embedding_dimensions"] == "384"
