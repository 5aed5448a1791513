"""A container tag that looks like a secret or is invalid, forced by
``BLI_MEMORY_CONTAINER_TAG`` or given as ``?space=``, is refused by every page of the
real ``bli-memory-mcp ui`` (400, the input named) and never shown: not in the page, its
title, a form field or a link. A valid tag still works."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx
import pytest

from tests.core.ui.conftest import UiServer, start_ui, stop

pytestmark = pytest.mark.e2e  # starts bli-memory-mcp processes

TOKEN = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
#: Refused values, and the pieces of each that must never come back.
REFUSED = {TOKEN: (TOKEN, "A1b2C3d4"), "password:hunter2x": ("hunter2x",),
           "password hunter2x": ("hunter2x",), "password=hunter2x": ("hunter2x",)}


def _never_shown(page: httpx.Response, value: str) -> None:
    for piece in REFUSED[value]:
        for form in (piece, quote(piece), quote(piece, safe="")):
            assert form not in page.text, f"{value!r} shown"


@pytest.fixture
def client(ui_server: UiServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=ui_server.base, timeout=60, follow_redirects=True) as c:
        assert c.get(f"/?token={ui_server.token}").status_code == 200
        yield c


@pytest.mark.parametrize("value", list(REFUSED))
def test_a_secret_looking_space_parameter_is_refused_unseen(client: httpx.Client, value: str) -> None:
    for path, params in (("/", {"space": value}), ("/search", {"q": "terraform", "space": value}),
                         ("/search", {"space": value})):
        page = client.get(path, params=params)
        assert page.status_code == 400, (path, value)
        assert "space" in page.text and ("secret" in page.text or "invalid container tag" in page.text)
        _never_shown(page, value)
    form = client.get("/search", params={"q": "terraform", "space": value})
    assert 'id="space" name="space" value=""' in form.text and 'value="terraform"' in form.text


def test_a_valid_space_still_opens_and_searches(client: httpx.Client, ui_server: UiServer) -> None:
    page = client.get("/", params={"space": "team_billing"})
    assert page.status_code == 200 and "Space <code>team_billing</code>" in page.text
    hits = client.get("/search", params={"q": "invoice numbering", "space": "team_billing"})
    assert hits.status_code == 200 and 'value="team_billing"' in hits.text
    assert "invoice numbering" in hits.text
    home = client.get("/search", params={"q": "terraform"})
    assert home.status_code == 200 and f'value="{ui_server.space}"' in home.text and "eu-west-2" in home.text


@pytest.mark.parametrize("value", [TOKEN, "password:hunter2x"])
def test_a_forced_tag_that_looks_like_a_secret_is_refused_by_every_page(tmp_path: Path, value: str) -> None:
    home, project = tmp_path / "ui-home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    proc, url = start_ui(home, project, env={"BLI_MEMORY_CONTAINER_TAG": value})
    parts = urlsplit(url)
    try:
        base = f"{parts.scheme}://{parts.netloc}"
        with httpx.Client(base_url=base, timeout=60, follow_redirects=True) as c:
            first = c.get(url)  # the token, then the project's space
            assert first.status_code == 400 and "BLI_MEMORY_CONTAINER_TAG is refused" in first.text
            assert "That request was not valid" in first.text
            _never_shown(first, value)
            for path, params in (("/", {}), ("/search", {}), ("/search", {"q": "deploy"}),
                                 ("/", {"space": ""})):
                page = c.get(path, params=params)
                assert page.status_code == 400 and "BLI_MEMORY_CONTAINER_TAG is refused" in page.text, path
                _never_shown(page, value)
            # Another space, and the pages that read no space, still open.
            for path, params in (("/", {"space": "team_billing"}),
                                 ("/search", {"q": "x", "space": "team_billing"}),
                                 ("/captures", {}), ("/health", {}), ("/ops", {})):
                page = c.get(path, params=params)
                assert page.status_code == 200, path
                _never_shown(page, value)
    finally:
        stop(proc)
    log = (home / "ui-stderr.log").read_text()
    assert "BLI_MEMORY_CONTAINER_TAG is refused" in log
    for piece in REFUSED[value]:
        assert piece not in log


def test_a_valid_forced_tag_is_the_home_space(tmp_path: Path) -> None:
    home, project = tmp_path / "ui-home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    proc, url = start_ui(home, project, env={"BLI_MEMORY_CONTAINER_TAG": "team_forced"})
    try:
        with httpx.Client(timeout=60, follow_redirects=True) as c:
            page = c.get(url)
            assert page.status_code == 200 and "Space <code>team_forced</code>" in page.text
            assert "This project's space" in page.text
    finally:
        stop(proc)


@pytest.mark.parametrize("value", ["password hunter2x", "password=hunter2x"])
def test_an_invalid_forced_tag_stops_the_ui_unrepeated(tmp_path: Path, value: str) -> None:
    import subprocess

    from tests.conftest import bin_path
    from tests.core.ui.conftest import ui_env

    home = tmp_path / "ui-home"
    home.mkdir()
    done = subprocess.run([bin_path(), "ui", "--no-open"], cwd=tmp_path, capture_output=True, text=True,
                          env={**ui_env(home), "BLI_MEMORY_CONTAINER_TAG": value}, timeout=60)
    assert done.returncode != 0 and done.stdout == ""
    assert "BLI_MEMORY_CONTAINER_TAG is invalid" in done.stderr and "hunter2x" not in done.stderr
