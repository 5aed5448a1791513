"""``save_memory`` refuses content no store can keep, as ``memory import`` does.

A NUL character used to be saved by the embedded store and then refused by import
("record 4: content contains a NUL character; nothing was imported"), so one memory
blocked restoring a whole export. The MCP tool now gives the same clear error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_client import run_session, text_of

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)


def test_save_memory_refuses_nul_in_content_and_saves_nothing(tmp_path: Path, mcp_route) -> None:
    async def body(client):
        refused = await client.call_tool("save_memory", {"content": "The deploy \x00runs on Fridays."})
        listed = await client.call_tool("list_memories", {})
        return refused, listed

    refused, listed = run_session(tmp_path, body)
    assert refused.is_error
    assert "invalid_input" in text_of(refused) and "content contains a NUL character" in text_of(refused)
    assert "holds no live memories" in text_of(listed)
