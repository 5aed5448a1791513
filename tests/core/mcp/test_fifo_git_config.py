"""A project whose ``.git/config`` is a FIFO: the MCP server still answers.

Opening a FIFO for reading waits for a writer. The space of a folder is derived from its
git config, so such a file used to hang the server before it answered ``initialize``, in
process and through the daemon alike. Only regular files are read now; an unreadable
config makes the folder's own space (``dir_...``), as docs/spaces.md says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import make_fifo_config_repo
from tests.mcp_client import run_session, text_of

pytestmark = pytest.mark.e2e  # starts processes or servers (tests/tiers.py)


def test_the_server_answers_in_a_project_whose_git_config_is_a_fifo(tmp_path: Path, mcp_route) -> None:
    project = make_fifo_config_repo(tmp_path / "fifo-project")

    async def body(client):
        saved = await client.call_tool("save_memory", {"content": "The fifo project deploys on Tuesdays."})
        listed = await client.call_tool("list_memories", {})
        return saved, listed

    saved, listed = run_session(project, body)
    assert not saved.is_error, text_of(saved)
    assert "in space dir_fifo-project__" in text_of(saved)
    assert "The fifo project deploys on Tuesdays." in text_of(listed)
