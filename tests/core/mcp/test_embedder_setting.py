"""What the MCP server does with each kind of ``BLI_MEMORY_EMBEDDER``, over the real stdio.

A model that is configured but not installed yet must not stop the server (the host would
show a dead server and nothing else): it starts, lists and informs, and a save says how to
install the model. A name nobody registers ends the server at once with one sentence; an
empty value means the shipped model.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import bin_path
from tests.mcp_client import run_session, text_of

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)


def test_a_configured_model_not_installed_yet_lets_the_server_start(tmp_path: Path) -> None:
    async def body(client):
        info = await client.call_tool("memory_info", {})
        saved = await client.call_tool("save_memory", {"content": "Staging listens on port 8443."})
        return info, saved

    info, saved = run_session(tmp_path, body, BLI_MEMORY_EMBEDDER="mpnet", BLI_MEMORY_DAEMON="0")
    assert not info.is_error and "all-mpnet-base-v2-int8" in text_of(info)
    assert "is not installed" in text_of(info) and "`bli-memory-mcp model install mpnet`" in text_of(info)
    assert saved.is_error and "bli-memory-mcp model install mpnet" in text_of(saved)


def test_an_unknown_model_name_ends_the_server_with_one_sentence(tmp_path: Path) -> None:
    env = {**os.environ, "BLI_MEMORY_EMBEDDER": "mpnt", "BLI_MEMORY_DAEMON": "0"}
    r = subprocess.run([bin_path()], input="", capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=60)
    assert r.returncode == 1
    assert r.stderr.startswith("[bli-memory] the MCP server cannot start: ")
    assert "'mpnt' is not a registered embedder" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_an_empty_setting_is_the_shipped_model(tmp_path: Path) -> None:
    async def body(client):
        saved = await client.call_tool("save_memory", {"content": "Staging listens on port 8443."})
        return saved, await client.call_tool("memory_info", {})

    saved, info = run_session(tmp_path, body, BLI_MEMORY_EMBEDDER="", BLI_MEMORY_DAEMON="0")
    assert not saved.is_error and "all-MiniLM-L6-v2-int8" in text_of(info)
    assert "not installed" not in text_of(info)
