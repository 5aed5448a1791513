"""A tool called with arguments it cannot use refuses the call in one line and does nothing.

The SDK drops unknown arguments without a word, so ``update_memory`` with ``metadata``
answered "Updated" and kept none of it, and ``save_memory`` with ``tags`` saved the text
without them: the model believed it had stored what it had not. Both routes (in process
and through the daemon) serve the same server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_client import run_session, text_of

pytestmark = pytest.mark.e2e  # starts bli-memory-mcp processes


def test_an_unknown_argument_is_refused_naming_the_known_ones(tmp_path: Path, mcp_route) -> None:
    async def body(client):
        saved = await client.call_tool("save_memory", {"content": "Deploys run on Fridays.",
                                                       "tags": ["deploy"]})
        kept = await client.call_tool("save_memory", {"content": "Deploys run on Fridays."})
        assert not kept.is_error, text_of(kept)
        memory_id = kept.structured_content["memory"]["id"]
        updated = await client.call_tool("update_memory", {
            "id": memory_id, "content": "Deploys run on Mondays.", "metadata": {"owner": "ops"}})
        found = await client.call_tool("search_memory", {"query": "When do deploys run?"})
        return saved, updated, found

    saved, updated, found = run_session(tmp_path, body)
    assert saved.is_error and "save_memory takes no argument 'tags'" in text_of(saved), text_of(saved)
    assert "content" in text_of(saved) and "nothing was done" in text_of(saved)
    assert updated.is_error and "update_memory takes no argument 'metadata'" in text_of(updated)
    assert "it takes content, id, customId, containerTag" in text_of(updated), text_of(updated)
    rows = found.structured_content["results"]
    assert [r["content"] for r in rows] == ["Deploys run on Fridays."]  # one save, no update



def test_a_missing_or_mistyped_argument_says_which_in_one_line(tmp_path: Path, mcp_route) -> None:
    async def body(client):
        missing = await client.call_tool("update_memory", {"id": "x"})
        mistyped = await client.call_tool("save_memory", {"content": ["walrus77!", "a list"]})
        return missing, mistyped

    missing, mistyped = run_session(tmp_path, body)
    assert missing.is_error and "invalid_input: content is required (nothing was done)" in text_of(missing)
    text = text_of(mistyped)
    assert mistyped.is_error and "invalid_input: content: Input should be a valid string" in text, text
    for result in (missing, mistyped):  # one line, no pydantic report, no value repeated
        assert "errors.pydantic.dev" not in text_of(result) and "\n" not in text_of(result)
    assert "walrus77" not in text


def test_unknown_argument_names_are_capped_and_a_secret_looking_one_is_not_repeated(
        tmp_path: Path, mcp_route) -> None:
    token = "ghp_" + "Zq7Wx2Er5Ty8Ui1Op4As" * 2

    async def body(client):
        many = {"content": "k", **{f"extra{n}": 1 for n in range(2000)}}
        return (await client.call_tool("save_memory", many),
                await client.call_tool("save_memory", {"content": "k", token: 1, "x" * 5000: 1}))

    many, secret = run_session(tmp_path, body)
    text = text_of(many)
    assert many.is_error and "'extra0', 'extra1', 'extra2' (and 1997 more, not repeated)" in text, text
    assert len(text) < 400, len(text)
    assert secret.is_error and "of 2 given (their names are not repeated)" in text_of(secret)
    assert token not in text_of(secret) and "xxxxxxxxxx" not in text_of(secret)
