"""Repositories built to break the documents index: secrets where chunks are cut, in headings
and in paths; rewritten history; a commit message that forges a record; names that are not
text; an unborn HEAD; a megabyte heading; a glob that makes a regular expression backtrack.
Real git repositories, the real index file and the shipped model."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from bli_memory.core.documents.index_store import DocumentIndex
from bli_memory.core.documents.indexer import index_space
from bli_memory.core.documents.sources import glob_matches, tracked_documents
from bli_memory.core.memory.embeddings import get_embedder
from tests.core.documents.gitrepo import git

pytestmark = pytest.mark.e2e  # git runs as a process

TOKEN = "ghp_" + "K1l2M3n4O5p6Q7r8S9t0" * 2
# A private key's body: 40 lines of base64, longer than one chunk.
KEY = ("-----BEGIN RSA PRIVATE KEY-----\n"
       + "\n".join(("MIIJKAIBAAKCAgEAw" + f"{i:02d}" + "q8Zr7Yb5Xw3Vt1Ps9No7Ml5Kj3Hg1Fe9Dc7Ba5Z")[:64]
                   for i in range(40))
       + "\n-----END RSA PRIVATE KEY-----\n")




def _repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "-A")
    return root


@pytest.fixture
def index(tmp_path: Path):
    idx = DocumentIndex(tmp_path / "documents.sqlite3")
    yield idx
    idx.close()


def _run(index: DocumentIndex, repo: Path, **kw):
    return index_space(index, repo, space="s", embed_many=get_embedder().embed, **kw)


def _stored(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("documents.sqlite3*"))


def test_secrets_are_masked_whole_in_text_headings_and_paths(tmp_path: Path, index: DocumentIndex) -> None:
    keys = f"# Keys\n\nOur key:\n\n{KEY}\n## After the key\n\nA line after.\n"
    long_line = "config: " + "x" * 1590 + f" token {TOKEN} end"  # a token across the 1,600th character
    repo = _repo(tmp_path / "r", {
        "keys.md": keys,
        "deploy.md": f"# Deploy\n\n## Deploy with token {TOKEN}\n\nRun it.\n",
        "long.md": f"# Long\n\n{long_line}\n",
        f"docs/{TOKEN}/notes.md": "# Notes\n\nnothing secret here\n",
    })
    git(repo, "commit", "-q", "-m", "start")
    report = _run(index, repo)
    assert report.skipped == {"secret_path": 1} and report.documents == 3
    raw = _stored(tmp_path)
    assert TOKEN.encode() not in raw
    assert b"MIIJKAIBAAKCAgEAw" not in raw and b"q8Zr7Yb5Xw3Vt1Ps9No7" not in raw
    chunks = index.chunks(range(1, 100))
    after = next(c for c in chunks.values() if c.heading == ("Keys", "After the key"))
    assert after.start == keys.splitlines().index("## After the key") + 1  # line numbers still the file's
    assert after.text.startswith("## After the key")
    assert any("[REDACTED:" in " ".join(c.heading) for c in chunks.values())
    assert [p for p, _ in index.state("s").skipped] == ["docs/[REDACTED:github_token]/notes.md"]


def test_history_rewrites_and_branch_switches_keep_one_copy_of_each_commit(tmp_path: Path,
                                                                              index: DocumentIndex) -> None:
    repo = _repo(tmp_path / "r", {"a.md": "# A\n"})
    git(repo, "commit", "-q", "-m", "first: chose Dramatiq for the queue")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second: retry webhooks three times")
    _run(index, repo)
    git(repo, "commit", "-q", "--amend", "--allow-empty", "-m", "second amended: retry webhooks five times")
    amended = _run(index, repo)
    assert (amended.commits, amended.dropped_commits) == (1, 1)
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "commit", "-q", "--allow-empty", "-m", "feature work")
    _run(index, repo)
    git(repo, "checkout", "-q", "main")
    _run(index, repo)
    texts = sorted(c.text for c in index.chunks(range(1, 100)).values() if c.kind == "commit")
    assert texts == ["first: chose Dramatiq for the queue", "second amended: retry webhooks five times"]
    assert index.state("s").last_commit == git(repo, "rev-parse", "HEAD").strip()


def test_a_commit_message_cannot_forge_a_commit(tmp_path: Path, index: DocumentIndex) -> None:
    repo = _repo(tmp_path / "r", {"a.md": "# A\n"})
    fake = "f" * 40
    message = f"real subject\n\nbody \x1f and \x1e{fake}\x1f2001-01-01T00:00:00+00:00\x1fFAKE\x1fbody\n"
    git(repo, "commit", "-q", "-F", "-", stdin=message.encode())
    _run(index, repo)
    commits = [c for c in index.chunks(range(1, 100)).values() if c.kind == "commit"]
    real = git(repo, "rev-parse", "HEAD").strip()
    assert [c.sha for c in commits] == [real] and commits[0].text.startswith("real subject")
    assert index.state("s").last_commit == real
    assert _run(index, repo).commits == 0  # and the next run reads nothing again


def test_names_that_are_not_text_an_unborn_head_a_huge_heading_and_a_huge_message(
        tmp_path: Path, index: DocumentIndex) -> None:
    huge = "# " + "word " * 20_000 + "\n\nbody\n"
    repo = _repo(tmp_path / "r", {"ok.md": "# Fine\n\ntext\n", "h.md": huge})
    (repo / os.fsdecode(b"caf\xe9.md")).write_text("# cafe\n")
    git(repo, "add", "-A")
    report = _run(index, repo)  # no commit yet: the files, no history, and the state is kept
    assert report.skipped == {"bad_name": 1} and report.documents == 2 and report.commits == 0
    assert index.state("s").refreshed_at is not None
    heads = [c.heading for c in index.chunks(range(1, 100)).values()]
    assert max(len(t) for h in heads for t in h) <= 200
    git(repo, "commit", "-q", "-F", "-", stdin=("Import the log\n\n" + "line of output\n" * 80_000).encode())
    assert _run(index, repo).commits == 1
    commit = next(c for c in index.chunks(range(1, 100)).values() if c.kind == "commit")
    assert len(commit.text) <= 1_610 and commit.text.endswith("[...]")
    assert json.loads(sqlite3.connect(tmp_path / "documents.sqlite3").execute(
        "SELECT skipped FROM doc_state").fetchone()[0]) == [["caf?.md", "bad_name"]]


def test_globs_read_as_gitignore_lines_and_never_backtrack(tmp_path: Path) -> None:
    assert glob_matches("docs/drafts/x.md", ["docs/drafts"]) and glob_matches("a/drafts/x.md", ["drafts/"])
    assert not glob_matches("docs/drafts", ["docs/drafts/"])
    assert not glob_matches("x/README.md", ["/README.md"])
    assert glob_matches("a/b/c.rst", ["**/b/*.rst"]) and not glob_matches("docs/x/a.md", ["docs/*.md"])
    # a regular expression takes minutes over this; a hang fails the test by its timeout
    assert not glob_matches("a" * 60 + ".md", ["*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"])
    repo = _repo(tmp_path / "r", {"a" * 60 + ".md": "# A\n", "b.md": "# B\n"})
    docs, skipped = tracked_documents(repo, exclude=["*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"])
    assert [d.path for d in docs] == ["a" * 60 + ".md", "b.md"] and skipped == []
