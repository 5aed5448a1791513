"""Index a real git repository's documents and commits, search them, re-index incrementally,
forget a path: the real SQLite file and the shipped embedding model."""

from __future__ import annotations

from pathlib import Path

import pytest

from bli_memory.core.documents.index_store import DocumentIndex
from bli_memory.core.documents.indexer import index_space
from bli_memory.core.documents.search import link_for, search_documents
from bli_memory.core.memory.embeddings import get_embedder
from tests.core.documents.gitrepo import git

pytestmark = pytest.mark.e2e  # git runs as a process

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"




@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "docs" / "adr").mkdir(parents=True)
    (root / "README.md").write_text("# Billing\n\nThe billing service sends invoices.\n\n## Setup\n\n"
                                    f"Run make dev. The CI token is {TOKEN}.\n")
    (root / "docs" / "adr" / "0003-queue.md").write_text(
        "# ADR 3: the job queue\n\n## Decision\n\nWe switched the queue from Celery to Dramatiq.\n\n"
        "## Why\n\nCelery's prefetch lost jobs during deploys; Dramatiq acknowledges late.\n")
    (root / "docs" / "errors.md").write_text("# Error format\n\nEvery error is JSON: code and message.\n")
    (root / ".env").write_text(f"GITHUB_TOKEN={TOKEN}\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Pin ruff to 0.8", "-m", "Newer versions flag our generated code.")
    return root


def test_index_search_reindex_and_forget(repo: Path, tmp_path: Path) -> None:
    embedder = get_embedder()
    index = DocumentIndex(tmp_path / "documents.sqlite3")
    try:
        report = index_space(index, repo, space="s", embed_many=embedder.embed)
        assert (report.documents, report.indexed, report.commits) == (3, 3, 1)
        assert report.skipped == {"secret_file": 1}
        state = index.state("s")
        assert (state.documents, state.commits) == (3, 1) and state.refreshed_at is not None

        def search(q: str, **kw: object) -> list:
            return search_documents(index, q, space="s", embed=lambda t: embedder.embed([t])[0], **kw)

        hits = search("why did we switch the queue to Dramatiq?")
        top = hits[0].chunk
        assert top.path == "docs/adr/0003-queue.md" and top.heading[0] == "ADR 3: the job queue", top
        assert top.start is not None and top.end is not None and top.start <= top.end
        link = link_for(top, root=str(repo), web="https://github.com/acme/billing", revision="abc")
        assert link == f"https://github.com/acme/billing/blob/abc/docs/adr/0003-queue.md#L{top.start}-L{top.end}"
        commit = search("why is ruff pinned?", kinds=("commit",))[0].chunk
        assert commit.kind == "commit" and commit.sha and "Pin ruff" in commit.text and commit.date
        # No secret reaches the index, and the .env file was never read.
        raw = (tmp_path / "documents.sqlite3").read_bytes()
        assert TOKEN.encode() not in raw

        again = index_space(index, repo, space="s", embed_many=embedder.embed)
        assert (again.indexed, again.unchanged, again.commits) == (0, 3, 0)
        (repo / "docs" / "errors.md").write_text("# Error format\n\nErrors are RFC 9457 problem details.\n")
        changed = index_space(index, repo, space="s", embed_many=embedder.embed)
        assert (changed.indexed, changed.unchanged) == (1, 2)
        assert "RFC 9457" in search("what is our error format?")[0].chunk.text

        assert index.forget_path("s", "docs/adr/") == 1
        after = index_space(index, repo, space="s", embed_many=embedder.embed)
        assert after.documents == 2 and after.skipped.get("forgotten") == 1
        assert all(h.chunk.path != "docs/adr/0003-queue.md" for h in search("Dramatiq Celery queue"))
    finally:
        index.close()
