"""search_memory answers the project's documents and commit messages in their own list,
through the official MCP client over stdio, after `bli-memory-mcp documents index` on a real
git repository; a .env file is never read, and a forgotten path stays out after a re-index."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import bin_path
from tests.mcp_client import run_session, text_of

pytestmark = pytest.mark.e2e

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@x", "PATH": "/usr/bin:/bin", "HOME": str(repo)})


def _cli(project: Path, *args: str) -> str:
    done = subprocess.run([bin_path(), "documents", *args], cwd=project, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_documents_and_commits_come_back_apart_from_memories(project: Path) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "adr-queue.md").write_text(
        "# ADR: the job queue\n\nWe switched the queue from Celery to Dramatiq: Celery's prefetch "
        "lost jobs during deploys.\n")
    (project / ".env").write_text(f"GITHUB_TOKEN={TOKEN}\n")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "Pin ruff to 0.8", "-m", "Newer releases flag our generated code.")
    out = _cli(project, "index")
    assert "1 document (" in out and "1 new commit;" in out and "1 secret_file" in out

    async def body(client: object) -> tuple[object, object, object]:
        queue = await client.call_tool("search_memory", {"query": "why did we move the queue to Dramatiq?"})
        ruff = await client.call_tool("search_memory", {"query": "why is ruff pinned?", "scope": "documents"})
        return queue, ruff, await client.call_tool("memory_info", {})

    queue, ruff, info = run_session(project, body)
    indexed = info.structured_content["documents"]
    assert (indexed["documents"], indexed["commits"]) == (1, 1) and indexed["refreshedAt"]
    assert "Documents: 1 files" in text_of(info)
    docs = queue.structured_content["documents"]
    assert queue.structured_content["results"] == []  # memories and documents are kept apart
    assert docs[0]["kind"] == "document" and docs[0]["path"] == "docs/adr-queue.md"
    assert (docs[0]["startLine"], docs[0]["endLine"]) == (1, 3)
    assert docs[0]["link"].startswith("file://") and docs[0]["link"].endswith("docs/adr-queue.md#L1-L3")
    assert "From the project's documents and history:" in text_of(queue)
    commit = ruff.structured_content["documents"][0]
    assert commit["kind"] == "commit" and len(commit["sha"]) == 40 and commit["date"]
    index_files = list(Path(os.environ["HOME"]).rglob("documents.sqlite3"))
    assert len(index_files) == 1 and TOKEN.encode() not in index_files[0].read_bytes()

    _cli(project, "forget", "docs/")
    assert "1 forgotten" in _cli(project, "index")

    async def again(client: object) -> object:
        args = {"query": "Dramatiq Celery queue", "scope": "documents"}
        return await client.call_tool("search_memory", args)

    assert all(d["kind"] == "commit" for d in run_session(project, again).structured_content["documents"])


def test_a_corrupt_documents_index_never_costs_the_memories(project: Path) -> None:
    (project / "README.md").write_text("# Shop\n\nThe shop sells tea.\n")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "start")
    _cli(project, "index")
    index_file = next(Path(os.environ["HOME"]).rglob("documents.sqlite3"))
    index_file.write_bytes(os.urandom(8192))  # garbage where the index was
    for extra in ("-wal", "-shm"):
        index_file.with_name(index_file.name + extra).unlink(missing_ok=True)

    async def body(client: object) -> tuple[object, object]:
        await client.call_tool("save_memory", {"content": "Deploys go out on Tuesdays after the standup."})
        found = await client.call_tool("search_memory", {"query": "when do deploys go out?"})
        return found, await client.call_tool("memory_info", {})

    found, info = run_session(project, body)
    assert not found.is_error and found.structured_content["documents"] == []
    assert "Tuesdays" in found.structured_content["results"][0]["content"]
    assert "documents index could not be read" in text_of(found)
    assert not info.is_error and "documents index could not be read" in text_of(info)
