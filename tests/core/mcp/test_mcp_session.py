"""Each MCP connection is one session: what it saves are session neighbours."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_client import run_session, text_of

#: Runs on both routes (tests/core/mcp/conftest.py): the session id is the server's on each.
pytestmark = [pytest.mark.e2e, pytest.mark.e2e, pytest.mark.usefixtures("mcp_route")]


def test_each_connection_names_its_own_session_and_its_saves_share_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()

    async def body(client):
        ids = []
        for text in ("We moved the nightly build to 02:00 UTC.", "The build cache lives in S3 now."):
            saved = await client.call_tool("save_memory", {"content": text})
            assert not saved.is_error, text_of(saved)
            ids.append(saved.structured_content["memory"]["sessionId"])
        return ids

    first = run_session(project, body)

    async def other(client):
        saved = await client.call_tool("save_memory", {"content": "Releases are cut on Tuesdays."})
        return saved.structured_content["memory"]["sessionId"]

    second = run_session(project, other)
    assert first[0] == first[1] and first[0].startswith("mcp-")
    assert second.startswith("mcp-") and second != first[0]
