"""An id pasted with the spaces or newline around it names the same memory in every tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_client import run_session, text_of

pytestmark = pytest.mark.e2e  # starts bli-memory-mcp processes


def test_get_update_and_forget_take_an_id_with_spaces_around_it(tmp_path: Path, mcp_route) -> None:
    """forget_memory took " <id>\\n"; get_memory and update_memory answered not_found."""
    async def body(client):
        saved = await client.call_tool("save_memory", {"content": "Staging listens on port 8443."})
        pasted = f"  {saved.structured_content['memory']['id']}\n"
        got = await client.call_tool("get_memory", {"id": pasted})
        updated = await client.call_tool("update_memory", {"id": pasted,
                                                           "content": "Staging listens on port 9443."})
        new_id = updated.structured_content["memory"]["id"]
        forgotten = await client.call_tool("forget_memory", {"id": f" {new_id} "})
        return got, updated, forgotten

    got, updated, forgotten = run_session(tmp_path, body)
    assert not got.is_error and "port 8443" in text_of(got), text_of(got)
    assert not updated.is_error and updated.structured_content["status"] == "updated", text_of(updated)
    assert not forgotten.is_error, text_of(forgotten)
    assert text_of(forgotten).startswith("Forgotten by id: memory ")
    assert updated.structured_content["memory"]["id"] in text_of(forgotten)


def test_a_blank_id_is_still_refused_with_nothing_changed(tmp_path: Path, mcp_route) -> None:
    async def body(client):
        await client.call_tool("save_memory", {"content": "Staging listens on port 8443."})
        got = await client.call_tool("get_memory", {"id": "   "})
        updated = await client.call_tool("update_memory", {"id": " ", "content": "Staging listens on 1."})
        listed = await client.call_tool("search_memory", {"query": "staging port"})
        return got, updated, listed

    got, updated, listed = run_session(tmp_path, body)
    assert got.is_error and updated.is_error, (text_of(got), text_of(updated))
    assert "8443" in text_of(listed) and "on 1." not in text_of(listed)
