"""``bli-memory-mcp documents index|status|search|forget|delete`` through the real console
script, on a real git repository and the real index file beside the store."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from bli_memory.core.documents.runs import current_run, index_run
from bli_memory.core.paths import store_path
from tests.conftest import FIXTURES, bin_path, git
from tests.hooks_util import run_hook

pytestmark = pytest.mark.e2e  # starts processes (tests/tiers.py)

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0" * 2


def cli(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([bin_path(), "documents", *args], cwd=where, capture_output=True, text=True,
                          env=dict(os.environ), timeout=300)


@pytest.fixture
def repo(project: Path) -> Path:
    (project / "docs").mkdir()
    (project / "README.md").write_text("# Shop\n\nThe shop sells tea.\n\n## Deploy\n\n"
                                       f"Deploys go out on Tuesdays. The deploy token is {TOKEN}.\n")
    (project / "docs" / "errors.md").write_text("# Error format\n\nEvery error answer is JSON with a code "
                                                "and a message.\n")
    (project / "docs" / "drafts").mkdir()
    (project / "docs" / "drafts" / "queue.md").write_text("# Queue\n\nWe moved the job queue to Dramatiq.\n")
    (project / ".env").write_text(f"DEPLOY_TOKEN={TOKEN}\n")
    git("init", "-q", cwd=project)
    git("add", "-A", cwd=project)
    git("commit", "-q", "-m", "Retry webhooks three times", "-m", "Stripe drops the first call at times.",
        cwd=project)
    return project


def test_index_status_search_forget_delete(repo: Path) -> None:
    done = cli(repo, "index")
    assert done.returncode == 0, done.stderr
    assert "3 documents (3 indexed" in done.stdout and "1 new commit;" in done.stdout
    assert "1 secret_file" in done.stdout

    status = json.loads(cli(repo, "status", "--json").stdout)
    assert (status["documents"], status["commits"], status["indexing"]) == (3, 1, None)
    assert {"path": ".env", "reason": "secret_file"} in status["skipped"]

    found = json.loads(cli(repo, "search", "what does an error answer look like?", "--json").stdout)
    assert found[0]["path"] == "docs/errors.md" and found[0]["startLine"] == 1
    assert found[0]["link"].startswith("file://")
    commit = json.loads(cli(repo, "search", "webhook retries", "--kind", "commit", "--json").stdout)
    assert commit[0]["kind"] == "commit" and len(commit[0]["sha"]) == 40 and commit[0]["date"]

    index = store_path().with_name("documents.sqlite3")
    for f in index.parent.iterdir():  # the token is masked, and .env is never read
        assert TOKEN.encode() not in f.read_bytes(), f.name

    far = cli(repo, "search", "kubernetes helm chart autoscaling")  # nothing bears on it
    assert "no document or commit message" in far.stdout and "--all shows" in far.stdout, far.stdout
    assert "similarity" in cli(repo, "search", "kubernetes helm chart autoscaling", "--all").stdout

    git("remote", "add", "origin", "https://github.com/acme/shop.git", cwd=repo)
    assert cli(repo, "index").returncode == 0  # nothing changed but where links point
    found = json.loads(cli(repo, "search", "what does an error answer look like?", "--json").stdout)
    assert found[0]["link"].startswith("https://github.com/acme/shop/blob/"), found[0]["link"]

    for bad in ("../outside.md", "/etc/passwd", "", "/"):
        refused = cli(repo, "forget", bad)
        assert refused.returncode != 0 and "inside the repository" in refused.stderr, refused
    forgot = cli(repo, "forget", "docs/drafts")  # a folder, as .gitignore names one
    assert forgot.returncode == 0 and "1 indexed file dropped" in forgot.stdout, forgot.stdout
    assert "kept out (documents forget): docs/drafts" in cli(repo, "status").stdout
    assert cli(repo, "index").returncode == 0
    found = json.loads(cli(repo, "search", "which job queue do we use?", "--json").stdout)
    assert all(not (h["path"] or "").startswith("docs/drafts/") for h in found), found
    status = json.loads(cli(repo, "status", "--json").stdout)
    assert status["documents"] == 2 and status["forgotten"] == ["docs/drafts"]
    assert {"path": "docs/drafts/queue.md", "reason": "forgotten"} in status["skipped"]
    assert "no indexed file matched" in cli(repo, "forget", "nothere.md").stdout
    assert cli(repo, "forget", "--undo", "docs/drafts").returncode == 0
    assert cli(repo, "forget", "--undo", "docs/drafts").returncode == 1  # not kept out any more
    assert cli(repo, "forget", "--undo", "nothere.md").returncode == 0
    assert cli(repo, "index").returncode == 0
    assert json.loads(cli(repo, "status", "--json").stdout)["documents"] == 3

    assert cli(repo, "delete").returncode == 1 and index.exists()  # asks first
    gone = cli(repo, "delete", "--yes")
    assert gone.returncode == 0 and not index.exists()
    assert not any(p.name.startswith("documents.sqlite3") for p in index.parent.iterdir())


def test_a_second_run_is_refused_while_one_holds_the_index(repo: Path) -> None:
    index = store_path().with_name("documents.sqlite3")
    with index_run(index, "s") as run:
        run.progress("documents", 2, 3)
        assert current_run(index) is not None and current_run(index).done == 2
        for args in (("index", "--space", "s"), ("index", "--space", "s", "--background")):
            busy = cli(repo, *args)
            assert busy.returncode != 0 and "indexing space s: documents 2/3" in busy.stderr, busy
        status = cli(repo, "status", "--space", "s")
        assert "indexing space s: documents 2/3" in status.stdout, status.stdout
    assert current_run(index) is None  # the lock went with the run
    assert cli(repo, "index", "--space", "s").returncode == 0


def test_background_run_indexes_and_reports_when_done(repo: Path) -> None:
    started = cli(repo, "index", "--background")
    assert started.returncode == 0 and "in the background (pid" in started.stdout, started
    index = store_path().with_name("documents.sqlite3")
    deadline = time.monotonic() + 240  # a bound on waiting, never a speed assertion
    status: dict = {}
    while time.monotonic() < deadline:
        status = json.loads(cli(repo, "status", "--json").stdout)
        if status["refreshedAt"] and status["indexing"] is None:
            break
        time.sleep(0.5)
    assert status["documents"] == 3 and status["commits"] == 1, status
    assert current_run(index) is None
    log = index.with_name("documents.sqlite3.log").read_text()
    assert "3 documents" in log, log


def test_a_run_without_globs_takes_the_last_runs(repo: Path) -> None:
    assert cli(repo, "index", "--include", "*.md", "--exclude", "docs/drafts/*").returncode == 0
    assert json.loads(cli(repo, "status", "--json").stdout)["documents"] == 2
    (repo / "notes.txt").write_text("A plain text note.\n")
    git("add", "notes.txt", cwd=repo)
    git("commit", "-q", "-m", "Add notes", cwd=repo)
    again = cli(repo, "index")  # the same globs: drafts and the .txt stay out
    assert again.returncode == 0 and "2 documents" in again.stdout, again.stdout
    wider = cli(repo, "index", "--include", "*.md", "--include", "*.txt")
    assert "4 documents" in wider.stdout, wider.stdout  # new globs, and no exclude left


def _stale(index: Path) -> None:
    with sqlite3.connect(index) as conn:
        conn.execute("UPDATE doc_state SET refreshed_at = '2020-01-01T00:00:00.000000Z'")


def test_a_session_start_refreshes_a_stale_index_in_the_background(repo: Path) -> None:
    payload = json.loads((FIXTURES / "claude" / "session_start.json").read_text()) | {"cwd": str(repo)}
    run = run_hook("session-start", payload, cwd=repo)  # never indexed: nothing starts
    assert run.returncode == 0 and "documents" not in run.receipt[1]
    assert cli(repo, "index").returncode == 0
    index = store_path().with_name("documents.sqlite3")
    fresh = json.loads(cli(repo, "status", "--json").stdout)["refreshedAt"]
    run = run_hook("session-start", payload, cwd=repo)  # refreshed just now: nothing starts
    assert run.returncode == 0 and "documents" not in run.receipt[1]

    (repo / "docs" / "errors.md").write_text("# Error format\n\nErrors follow RFC 9457 problem details.\n")
    _stale(index)
    run = run_hook("session-start", payload, cwd=repo)
    assert run.returncode == 0 and run.receipt[1].get("documents") == "refreshing", run.receipt
    deadline = time.monotonic() + 240  # a bound on waiting, never a speed assertion
    status: dict = {}
    while time.monotonic() < deadline:
        status = json.loads(cli(repo, "status", "--json").stdout)
        if status["refreshedAt"] > fresh and status["indexing"] is None:
            break
        time.sleep(0.5)
    assert status["refreshedAt"] > fresh, status
    found = json.loads(cli(repo, "search", "problem details for errors", "--json").stdout)
    assert "RFC 9457" in found[0]["text"]


def test_a_long_lived_backend_lets_go_of_a_deleted_index(repo: Path) -> None:
    from bli_memory.core.embedded.engine import EmbeddedBackend

    assert cli(repo, "index", "--space", "s").returncode == 0
    backend = EmbeddedBackend(store_path())  # as the daemon holds it
    try:
        assert backend.search_documents("what does an error answer look like?", space="s")
        assert cli(repo, "delete", "--yes").returncode == 0
        assert backend.search_documents("what does an error answer look like?", space="s") == []
        assert backend.document_status("s") is None
        assert cli(repo, "index", "--space", "s").returncode == 0  # a new file: found again
        assert backend.search_documents("what does an error answer look like?", space="s")
        assert backend.document_status("s").documents == 3
    finally:
        backend.close()


def test_a_burst_of_session_starts_starts_one_refresh_and_only_from_inside_the_repository(
        repo: Path, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from bli_memory.core.documents.index_store import DocumentIndex
    from bli_memory.core.documents.refresh import refresh_in_background

    assert cli(repo, "index", "--space", "s").returncode == 0
    path = store_path().with_name("documents.sqlite3")
    _stale(path)
    index = DocumentIndex(path)
    try:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        assert refresh_in_background(index, "s", folder=str(elsewhere)) is None  # not this repository
        with ThreadPoolExecutor(4) as pool:
            started = list(pool.map(lambda _: refresh_in_background(index, "s", folder=str(repo / "docs")),
                                    range(4)))
        assert len([pid for pid in started if pid is not None]) == 1, started
        deadline = time.monotonic() + 240  # a bound on waiting, never a speed assertion
        while time.monotonic() < deadline and (current_run(path) is not None
                                                or index.state("s").refreshed_at.startswith("2020")):
            time.sleep(0.5)
        assert not index.state("s").refreshed_at.startswith("2020")
    finally:
        index.close()
