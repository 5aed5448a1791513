"""Limits a write meets before any work, through the official MCP client (issue 30, from a
break-it pass): an extract save is size-checked before its text is masked, and a customId
over every store's limit is refused by save and update without being echoed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_client import run_session, text_of

pytestmark = [pytest.mark.e2e]  # starts the server (tests/tiers.py)


def test_extract_and_key_limits_are_checked_first(tmp_path: Path) -> None:
    text = "deploy notes with ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2 + " " + "x" * 100_000

    async def body(client):  # noqa: ANN001, ANN202
        big = await client.call_tool("save_memory", {"content": text, "extract": True})
        keyed = await client.call_tool("save_memory", {"content": "Deploys need the VPN.", "extract": True,
                                                       "customId": "k" * 513})
        update = await client.call_tool("update_memory", {"customId": "c" * 100_000, "content": "x"})
        return big, keyed, update

    big, keyed, update = run_session(tmp_path, body)
    assert big.is_error
    assert f"the text is {len(text)} characters; extract takes at most 100000" in text_of(big)
    for result in (keyed, update):
        assert result.is_error and "customId is longer than 512 characters" in text_of(result)
        assert "kkkk" not in text_of(result) and "cccc" not in text_of(result)
