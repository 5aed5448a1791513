"""Plugins registered on the caller's plugin manager are honoured on every path.

A throwaway embedder and a throwaway redaction rule are registered on one manager;
the MCP server is built from that manager and driven by the official MCP client
in-process (``Client(server)``), over a real SQLite file. The embedder must embed
every save and search, and the rule must mask what the tools save, what metadata
holds, and what a capture queues.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from typing import Any

import anyio
import numpy as np
from mcp import Client

from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.mcp.server import build_server, default_state
from bli_memory.core.memory.redaction import RedactionRule, redact
from bli_memory.core.plugins import build_backend, get_plugin_manager
from bli_memory.core.settings import load_settings

_CODENAME = re.compile(r"\bZEBRA-\d{4}\b")


class _HashEmbedder:
    """8 dimensions from a hash of each text: stable, and no model to load."""

    name = "throwaway-hash-8"
    dimensions = 8

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: list[str]) -> Any:
        self.calls += 1
        rows = []
        for text in texts:
            digest = hashlib.sha256(text.lower().encode()).digest()[:8]
            v = np.frombuffer(digest, dtype=np.uint8).astype(np.float32) + 1.0
            rows.append(v / np.linalg.norm(v))
        return np.stack(rows)


class _Plugin:
    def __init__(self) -> None:
        self.embedder = _HashEmbedder()

    @hookimpl
    def register_embedders(self, register: Any) -> None:
        register(self.embedder.name, lambda: self.embedder)

    @hookimpl
    def register_redaction_rules(self, register: Any) -> None:
        register(RedactionRule(kind="codename", pattern=_CODENAME))


def test_the_backend_uses_the_callers_embedder(monkeypatch: Any) -> None:
    monkeypatch.setenv("BLI_MEMORY_EMBEDDER", _HashEmbedder.name)
    pm = get_plugin_manager(load_entrypoints=False)
    plugin = _Plugin()
    pm.register(plugin)
    backend = build_backend(pm, load_settings())
    try:
        backend.save("The deploy runs on Fridays.", space="t")
        assert backend.search("deploy", space="t").hits
        assert plugin.embedder.calls >= 2  # the save and the search, through the caller's plugin
        assert backend.info(space="t")["embeddingModel"] == _HashEmbedder.name
    finally:
        backend.close()


def test_a_rule_plugin_masks_every_path_through_the_server(monkeypatch: Any, tmp_path: Any) -> None:
    monkeypatch.setenv("BLI_MEMORY_EMBEDDER", _HashEmbedder.name)
    monkeypatch.chdir(tmp_path)
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(_Plugin())
    settings = load_settings()
    server = build_server(lambda: default_state(settings, pm))

    async def session() -> tuple[Any, Any, Any, Any]:
        async with Client(server) as client:
            saved = await client.call_tool("save_memory", {
                "content": "The rollout is called ZEBRA-1234 internally.",
                "metadata": {"note": "ask about ZEBRA-5678"},
            })
            keyed = await client.call_tool("save_memory",
                                           {"content": "Other fact.", "customId": "ZEBRA-9999"})
            queued = await client.call_tool("save_memory", {
                "content": "User: the code is ZEBRA-4321\n\nAssistant: noted", "extract": True,
            })
            updated = await client.call_tool("update_memory", {
                "id": saved.structured_content["memory"]["id"], "content": "Now ZEBRA-2468 instead.",
            })
            return saved, keyed, queued, updated

    saved, keyed, queued, updated = anyio.run(session)
    memory = saved.structured_content["memory"]
    assert saved.structured_content["masked"] == 2  # the content's and the metadata's
    assert "ZEBRA-1234" not in memory["content"] and "[REDACTED:codename]" in memory["content"]
    assert memory["metadata"] == {"note": "ask about [REDACTED:codename]"}
    assert keyed.is_error and "customId" in keyed.content[0].text
    assert queued.structured_content["masked"] == 1
    assert updated.structured_content["masked"] == 1
    with sqlite3.connect(settings.store_path) as conn:
        stored = " ".join(str(v) for row in conn.execute("SELECT * FROM memories") for v in row)
        jobs = " ".join(str(v) for row in conn.execute("SELECT * FROM memory_extract_jobs") for v in row)
    # The queued exchange was extracted by the server's drain: its facts are rows too.
    assert "ZEBRA-" not in stored and "ZEBRA-" not in jobs


def test_without_a_live_manager_redaction_uses_the_built_in_rules() -> None:
    pm = get_plugin_manager(load_entrypoints=False)
    plugin = _Plugin()
    pm.register(plugin)
    assert redact("ZEBRA-1234").masked == 1
    pm.unregister(plugin)
    assert redact("ZEBRA-1234").masked == 0
