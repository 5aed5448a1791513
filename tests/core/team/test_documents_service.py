"""The documents index on the team service, end to end: a real git repository, the real
``documents`` console script and MCP server paired with the real service (uvicorn in a
subprocess, real Postgres), people with and without shares, and the rows in the database."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bli_memory.core.errors import NotFoundError
from bli_memory.core.hooks.container_tag import checked_space
from bli_memory.core.team.client import documents as client_documents
from bli_memory.core.team.client.remote import RemoteBackend
from tests.conftest import bin_path, git
from tests.mcp_client import run_session, text_of

TOKEN = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0" * 2
REMOTE = "git@github.com:bli-example/shop.git"


def _cli(where: Path, person: Any, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(BLI_MEMORY_DASHBOARD_URL=url, BLI_MEMORY_DEVICE_TOKEN=person.token)
    return subprocess.run([bin_path(), "documents", *args], cwd=where, capture_output=True, text=True,
                          env=env, timeout=300)


def _repo(path: Path) -> Path:
    (path / "docs" / "drafts").mkdir(parents=True)
    (path / "README.md").write_text("# Shop\n\nThe shop sells tea.\n\n## Deploy\n\n"
                                    f"Deploys go out on Tuesdays. The deploy token is {TOKEN}.\n")
    (path / "docs" / "errors.md").write_text("# Error format\n\nEvery error answer is JSON with a code "
                                             "and a message.\n")
    (path / "docs" / "drafts" / "queue.md").write_text("# Queue\n\nWe moved the job queue to Dramatiq.\n")
    (path / "docs" / "ops.md").write_text("# Operations\n\nBackups run nightly at 02:00 UTC.\n")
    (path / ".env").write_text(f"DEPLOY_TOKEN={TOKEN}\n")
    git("init", "-q", cwd=path)
    git("remote", "add", "origin", REMOTE, cwd=path)
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", "Retry webhooks three times", "-m", "Stripe drops the first call at times.",
        cwd=path)
    return path


def _rows(db: str, space: str) -> dict[str, Any]:
    """Everything the service keeps of the space's documents indexes, as text."""
    with psycopg.connect(db) as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM memory_doc_indexes WHERE space = %s", (space,))]
        return {
            "indexes": conn.execute("SELECT row_to_json(i)::text FROM memory_doc_indexes i "
                                    "WHERE id = ANY(%s)", (ids,)).fetchall(),
            "files": conn.execute("SELECT path, sha256 FROM memory_doc_files WHERE index_id = ANY(%s) "
                                  "ORDER BY path", (ids,)).fetchall(),
            "chunks": conn.execute("SELECT seq, kind, path, sha, heading::text, text FROM memory_doc_chunks "
                                   "WHERE index_id = ANY(%s) ORDER BY seq", (ids,)).fetchall(),
            "forgotten": conn.execute("SELECT path FROM memory_doc_forgotten WHERE index_id = ANY(%s)",
                                      (ids,)).fetchall(),
        }


def test_a_team_shares_one_documents_index_through_the_service(
    start_service, new_person, admin: Any, service_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = start_service()
    alice, bob, carol, dave = (new_person(f"{n}-{uuid.uuid4().hex[:8]}") for n in ("alice", "bob", "carol",
                                                                                     "dave"))
    repo = _repo(tmp_path / "alice" / "shop")
    space = checked_space(str(repo), environ={}).tag
    admin.share_space(owner=alice.name, space=space, grantee=bob.name, access="write")
    admin.share_space(owner=alice.name, space=space, grantee=carol.name, access="read")

    # Alice indexes through the service: her machine reads, chunks and masks; the service embeds.
    done = _cli(repo, alice, svc.url, "index")
    assert done.returncode == 0, done.stderr
    assert f"space {space} on the service {svc.url}: 4 documents (4 indexed" in done.stdout
    assert "1 new commit;" in done.stdout and "1 secret_file" in done.stdout
    rows = _rows(service_db, space)
    paths = ["README.md", "docs/drafts/queue.md", "docs/errors.md", "docs/ops.md"]
    assert [p for p, _ in rows["files"]] == paths
    # The .env was never read and the README's token was masked on the client: neither reaches a row.
    assert TOKEN not in json.dumps(rows) and "DEPLOY_TOKEN" not in json.dumps(rows)
    assert '".env", "secret_file"' in rows["indexes"][0][0].replace("[", "").replace("]", "")
    assert any("[REDACTED" in text for *_, text in rows["chunks"])
    status = json.loads(_cli(repo, alice, svc.url, "status", "--json").stdout)
    assert (status["owner"], status["writable"]) == (alice.name, True)
    assert (status["documents"], status["commits"]) == (4, 1)
    assert status["service"] == svc.url and {"path": ".env", "reason": "secret_file"} in status["skipped"]

    # Bob (a writer) and Carol (a reader) search Alice's index; Dave, without a share, sees none of it.
    b, c, d = (RemoteBackend(svc.url, token=p.token) for p in (bob, carol, dave))
    try:
        found = b.search_documents("what does an error answer look like?", space=space, limit=3)
        assert found[0].chunk.path == "docs/errors.md"
        assert (found[0].chunk.start, found[0].chunk.end) == (1, 3)
        assert found[0].link and found[0].link.startswith("https://github.com/bli-example/shop/blob/")
        assert found[0].link.endswith("/docs/errors.md#L1-L3") and 0.35 < found[0].similarity <= 1
        commit = c.search_documents("webhook retries", space=space, kinds=("commit",))[0]
        assert commit.chunk.kind == "commit" and len(commit.chunk.sha or "") == 40 and commit.chunk.date
        assert commit.link == f"https://github.com/bli-example/shop/commit/{commit.chunk.sha}"
        status = c.document_status(space)
        assert status is not None and (status.documents, status.commits) == (4, 1)
        assert (".env", "secret_file") in status.skipped
        assert d.search_documents("error answer", space=space) == [] and d.document_status(space) is None

        # A reader may not change the index: forget and index are refused, and nothing changes.
        with pytest.raises(NotFoundError) as refused:
            c.documents.forget(space, "docs/errors.md")
        assert refused.value.reason == "read_only" and alice.name in refused.value.message
        clone = tmp_path / "carol" / "shop"
        git("clone", "-q", str(repo), str(clone), cwd=tmp_path)
        git("remote", "set-url", "origin", REMOTE, cwd=clone)
        denied = _cli(clone, carol, svc.url, "index")
        assert denied.returncode != 0 and "read-only" in denied.stderr
        read = json.loads(_cli(clone, carol, svc.url, "search", "when do deploys go out?", "--json").stdout)
        assert read[0]["path"] == "README.md" and read[0]["link"].endswith("/README.md#L5-L7")
        assert _rows(service_db, space) == rows

        # Bob re-indexes the same commit from his own clone: nothing is uploaded again.
        clone = tmp_path / "bob" / "shop"
        git("clone", "-q", str(repo), str(clone), cwd=tmp_path)
        git("remote", "set-url", "origin", REMOTE, cwd=clone)
        again = _cli(clone, bob, svc.url, "index")
        assert again.returncode == 0, again.stderr
        assert "4 documents (0 indexed, 4 unchanged, 0 removed; 0 chunks written), 0 new commits" in (
            again.stdout)
        after = _rows(service_db, space)
        assert after["chunks"] == rows["chunks"] and after["files"] == rows["files"]
        assert len(after["indexes"]) == 1  # one index for the team, not one per person

        # search_memory through the service answers with the documents in their own list.
        async def body(client: Any) -> Any:
            found = await client.call_tool("search_memory", {"query": "when do deploys go out?"})
            return found, await client.call_tool("memory_info", {})

        env = {"BLI_MEMORY_DASHBOARD_URL": svc.url, "BLI_MEMORY_DEVICE_TOKEN": bob.token}
        res, info = run_session(clone, body, **env)
        assert not res.is_error, text_of(res)
        assert info.structured_content["documents"]["documents"] == 4
        assert "Documents: 4 files" in text_of(info)
        docs = res.structured_content["documents"]
        assert docs[0]["path"] == "README.md" and docs[0]["heading"] == ["Shop", "Deploy"]
        assert docs[0]["startLine"] == 5 and TOKEN not in text_of(res)
        assert "From the project's documents and history:" in text_of(res)

        # Alice forgets the drafts folder: dropped at once, and kept out of every later run.
        forgot = _cli(repo, alice, svc.url, "forget", "docs/drafts/")
        assert forgot.returncode == 0 and "(1 indexed file dropped;" in forgot.stdout
        outside = _cli(repo, alice, svc.url, "forget", "../other/")
        assert outside.returncode != 0 and "not a path inside the repository" in outside.stderr
        listed = _cli(repo, alice, svc.url, "status")
        assert "kept out (documents forget): docs/drafts/" in listed.stdout, listed.stdout
        assert all(h.chunk.path != "docs/drafts/queue.md"
                   for h in b.search_documents("Dramatiq job queue", space=space, kinds=("document",)))
        # Bob changes one file, removes another and commits; his run is cut into the smallest parts
        # (one path per manifest part, one chunk per upload part).
        (clone / "docs" / "errors.md").write_text(
            "# Error format\n\nAn error answer is JSON: code, message and a request id.\n\n"
            "## Retries\n\nRetry a 503 after a second.\n")
        git("rm", "-q", "README.md", cwd=clone)
        git("commit", "-qam", "Errors carry a request id", cwd=clone)
        monkeypatch.setattr(client_documents, "UPLOAD_PART_CHUNKS", 1)
        monkeypatch.setattr(client_documents, "MANIFEST_PART_FILES", 1)
        report = b.documents.index(clone, space=space)
        assert (report.documents, report.indexed, report.unchanged, report.removed) == (2, 1, 1, 1)
        assert (report.chunks, report.commits, report.skipped) == (2, 1, {"forgotten": 1, "secret_file": 1})
        status = b.document_status(space)
        assert status is not None and (status.documents, status.chunks, status.commits) == (2, 3, 2)
        assert ("docs/drafts/queue.md", "forgotten") in status.skipped
        hit = b.search_documents("request id in error answers", space=space, limit=1, kinds=("document",))[0]
        assert hit.chunk.path == "docs/errors.md" and "request id" in hit.chunk.text
        final = _rows(service_db, space)
        assert {p for p, _ in final["files"]} == {"docs/errors.md", "docs/ops.md"}
        assert not any(path == "docs/drafts/queue.md" for _, _, path, *_ in final["chunks"])
        assert not any("Every error answer" in text for *_, text in final["chunks"])  # the old version
        assert final["forgotten"] == [("docs/drafts/",)]
        # A run with nothing changed uploads nothing.
        quiet = b.documents.index(clone, space=space)
        assert (quiet.indexed, quiet.chunks, quiet.removed, quiet.commits) == (0, 0, 0, 0)
        assert _rows(service_db, space)["chunks"] == final["chunks"]
        # Alice lets the drafts back in: the next run uploads them again.
        undone = _cli(repo, alice, svc.url, "forget", "--undo", "docs/drafts/")
        assert undone.returncode == 0 and "let back into space" in undone.stdout, undone.stderr
        assert _rows(service_db, space)["forgotten"] == []
        assert b.documents.index(clone, space=space).indexed == 1
    finally:
        for backend in (b, c, d):
            backend.close()


def test_a_secret_in_a_path_or_a_heading_never_reaches_the_service_and_a_rewrite_keeps_one_copy(
    start_service, new_person, service_db: str, tmp_path: Path
) -> None:
    svc = start_service()
    alice = new_person(f"alice-{uuid.uuid4().hex[:8]}")
    repo = tmp_path / "shop"
    (repo / "docs" / TOKEN).mkdir(parents=True)
    (repo / "docs" / TOKEN / "notes.md").write_text("# Notes\n\nNothing secret in here.\n")
    (repo / "deploy.md").write_text(f"# Deploy\n\n## Deploy with token {TOKEN}\n\nRun the deploy script.\n")
    (repo / "ops.md").write_text("# Operations\n\nBackups run nightly at 02:00 UTC.\n")
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "Retry webhooks three times", cwd=repo)
    space = checked_space(str(repo), environ={}).tag
    a = RemoteBackend(svc.url, token=alice.token)
    try:
        # The path holding a token is never sent (and listed masked); the heading is masked on
        # this machine, before the document is cut.
        report = a.documents.index(repo, space=space, include=["*.md"], exclude=["ops.md"])
        assert (report.documents, report.indexed, report.commits) == (1, 1, 1)
        assert report.skipped == {"excluded": 1, "secret_path": 1}
        rows = _rows(service_db, space)
        assert TOKEN not in json.dumps(rows) and TOKEN[4:20] not in json.dumps(rows)
        assert [p for p, _ in rows["files"]] == ["deploy.md"]
        assert any("[REDACTED" in heading for *_, heading, _ in rows["chunks"])
        status = a.document_status(space)
        assert status is not None
        assert ("docs/[REDACTED:github_token]/notes.md", "secret_path") in status.skipped
        assert (status.include, status.exclude) == (("*.md",), ("ops.md",))
        # A run given no globs takes the last run's: ops.md stays out.
        assert a.documents.index(repo, space=space).skipped == {"excluded": 1, "secret_path": 1}

        # The last commit is amended after the upload: the service keeps the amended message only.
        git("commit", "-q", "--amend", "-m", "Retry webhooks five times", cwd=repo)
        amended = git("rev-parse", "HEAD", cwd=repo).strip()
        assert a.documents.index(repo, space=space).commits == 1

        def commits() -> list[tuple[str, str]]:
            return [(sha, text) for _, kind, _, sha, _, text in _rows(service_db, space)["chunks"]
                    if kind == "commit"]

        assert commits() == [(amended, "Retry webhooks five times")]
        # A branch with one more commit, then back: one copy of each, never two.
        git("checkout", "-q", "-b", "feature", cwd=repo)
        git("commit", "-q", "--allow-empty", "-m", "Feature work", cwd=repo)
        assert a.documents.index(repo, space=space).commits == 1
        git("checkout", "-q", "main", cwd=repo)
        assert a.documents.index(repo, space=space).commits == 0
        assert commits() == [(amended, "Retry webhooks five times")]
        status = a.document_status(space)
        assert status is not None and (status.commits, status.last_commit) == (1, amended)
        assert a.documents.index(repo, space=space).commits == 0  # and nothing is read twice
    finally:
        a.close()
