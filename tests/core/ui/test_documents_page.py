"""The memory browser's Documents page: what the space's documents index holds, what was left
out and why, and a search, served by the real `bli-memory-mcp ui` over HTTP."""

from __future__ import annotations

import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import bin_path
from tests.core.ui.conftest import start_ui, stop, ui_env

pytestmark = pytest.mark.e2e


def test_the_documents_page_lists_skips_and_searches(tmp_path: Path) -> None:
    home, project = tmp_path / "ui-home", tmp_path / "project"
    home.mkdir()
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "release.md").write_text("# Releasing\n\nTag the commit, then run make publish.\n")
    (project / ".env").write_text("TOKEN=abc\n")
    env = {**ui_env(home), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "Start"]):
        subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True)

    proc, url = start_ui(home, project)
    try:
        base = "{0.scheme}://{0.netloc}".format(urlsplit(url))
        with httpx.Client(base_url=base, timeout=60, follow_redirects=True) as c:
            c.get(url)  # the token's cookie
            empty = c.get("/documents")
            assert empty.status_code == 200 and "documents index" in empty.text
            done = subprocess.run([bin_path(), "documents", "index"], cwd=project, env=ui_env(home),
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr
            page = c.get("/documents", params={"q": "how do we publish a release?"})
            assert page.status_code == 200
            assert "1 files" in page.text and "docs/release.md" in page.text and "make publish" in page.text
            assert ".env" in page.text and "holds secrets by nature" in page.text
            assert "abc" not in page.text
    finally:
        stop(proc)
