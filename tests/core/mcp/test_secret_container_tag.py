"""A container tag that looks like a secret is refused by every MCP tool, never echoed.

``save_memory`` refused such a tag, but ``search_memory`` answered "no memory in space
ghp_..." and ``memory_info`` returned the token as the space, so it reached the model and
the host's transcript. Now every tool that would act on it refuses with
``invalid_input``, whether the tag is forced by ``BLI_MEMORY_CONTAINER_TAG`` or passed
as ``containerTag``, on both routes (in process and through the daemon).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_client import run_session, text_of

pytestmark = pytest.mark.e2e  # starts bli-memory-mcp processes

TOKEN = "ghp_" + "Zq7Wx2Er5Ty8Ui1Op4As" * 2


def test_a_forced_secret_tag_is_refused_by_every_tool_and_never_repeated(tmp_path: Path, mcp_route) -> None:
    async def body(client):
        calls = [("search_memory", {"query": "deploy"}), ("memory_info", {}),
                 ("list_memories", {}), ("save_memory", {"content": "Deploys run on Fridays."})]
        return [(name, await client.call_tool(name, args)) for name, args in calls]

    for name, result in run_session(tmp_path, body, BLI_MEMORY_CONTAINER_TAG=TOKEN):
        text = text_of(result)
        assert result.is_error, (name, text)
        assert "invalid_input" in text and "BLI_MEMORY_CONTAINER_TAG" in text, (name, text)
        assert TOKEN not in text and TOKEN not in str(result.structured_content), name


def test_a_secret_container_tag_argument_is_refused_and_a_name_still_works(tmp_path: Path, mcp_route) -> None:
    async def body(client):
        refused = await client.call_tool("search_memory", {"query": "deploy", "containerTag": TOKEN})
        info = await client.call_tool("memory_info", {"containerTag": TOKEN})
        named = await client.call_tool("search_memory", {"query": "deploy", "containerTag": "team-notes"})
        return refused, info, named

    refused, info, named = run_session(tmp_path, body)
    for result in (refused, info):
        assert result.is_error and "containerTag holds what looks like a secret" in text_of(result)
        assert TOKEN not in text_of(result)
    assert not named.is_error, text_of(named)
