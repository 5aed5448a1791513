"""update_memory's answer when the text changed only in a secret's value."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_client import run_session, text_of

pytestmark = pytest.mark.e2e  # starts bli-memory-mcp processes


def test_an_update_that_changes_only_a_secret_says_why_nothing_changed(tmp_path: Path, mcp_route) -> None:
    """The new value of a masked secret is never stored, so the update is "unchanged"; the
    answer said "already says exactly that", which reads as if the new value were kept."""
    async def body(client):
        saved = await client.call_tool("save_memory", {"content": "The staging DB password is walrus77!"})
        memory_id = saved.structured_content["memory"]["id"]
        return await client.call_tool("update_memory", {"id": memory_id,
                                                         "content": "The staging DB password is okapi42!"})

    result = run_session(tmp_path, body)
    text = text_of(result)
    assert not result.is_error and result.structured_content["status"] == "unchanged", text
    assert "with its secrets masked" in text and "never stored" in text, text
    assert "exactly" not in text and "okapi42" not in text and result.structured_content["masked"] == 1
