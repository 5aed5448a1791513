"""The memory pages over real HTTP: what each action does to the store, and what a bad
request is told (with nothing changed)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.core.ui.conftest import UiServer

pytestmark = pytest.mark.e2e  # starts processes or servers (tests/tiers.py)


@pytest.fixture
def client(ui_server: UiServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=ui_server.base, timeout=60, follow_redirects=True) as c:
        assert c.get(f"/?token={ui_server.token}").status_code == 200  # followed to the first page
        yield c


def _post(client: httpx.Client, ui: UiServer, path: str, **data: str) -> httpx.Response:
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get(path).text)
    assert csrf
    return client.post(path, data={"csrf": csrf.group(1), **data}, headers={"origin": ui.base},
                       follow_redirects=False)


def test_purge_erases_every_version_after_a_confirmation(client: httpx.Client, ui_server: UiServer) -> None:
    v1, v2 = ui_server.ids["deploy_v1"], ui_server.ids["deploy"]
    page = client.get(f"/memory/{v2}/purge")
    assert "erases all 2 versions" in page.text and "cannot be undone" in page.text
    store = ui_server.store()
    try:
        assert store.get(v1) is not None  # the confirmation changed nothing
    finally:
        store.close()
    r = _post(client, ui_server, f"/memory/{v1}/purge")  # any version's id names the memory
    assert r.status_code == 303 and "done=purged" in r.headers["location"]
    assert "Purged: every version" in client.get(r.headers["location"]).text
    store = ui_server.store()
    try:
        assert store.get(v1) is None and store.get(v2) is None
    finally:
        store.close()
    assert client.get(f"/memory/{v2}").status_code == 404


def test_only_the_live_version_can_be_edited_or_forgotten(client: httpx.Client, ui_server: UiServer) -> None:
    live = ui_server.ids["tests"]
    r = _post(client, ui_server, f"/memory/{live}/edit", content="Run pytest -q -x before every push.")
    new_id = r.headers["location"].split("/memory/")[1].split("?")[0]
    for action in ("edit", "forget"):
        page = client.get(f"/memory/{live}/{action}")
        assert page.status_code == 400 and "superseded" in page.text
    page = client.get(f"/memory/{live}")
    assert "Edit</a>" not in page.text and "Purge</a>" in page.text
    r = _post(client, ui_server, f"/memory/{new_id}/forget")
    assert r.status_code == 303
    assert client.get(f"/memory/{new_id}/forget").status_code == 400  # already forgotten
    store = ui_server.store()
    try:
        assert [m.state for m in store.history(new_id)] == ["forgotten", "superseded"]
    finally:
        store.close()


def test_a_bad_edit_says_why_and_saves_nothing(client: httpx.Client, ui_server: UiServer) -> None:
    target = ui_server.ids["edit_me"]
    for content, why in (("   ", "content is empty"), ("x" * 20_001, "the limit is 20000")):
        r = _post(client, ui_server, f"/memory/{target}/edit", content=content)
        assert r.status_code == 400 and why in r.text and "Nothing was saved" in r.text
        assert "extract" not in r.text  # the page has no extract to offer
    store = ui_server.store()
    try:
        assert store.get(target).state == "active" and store.get(target).version == 1
    finally:
        store.close()
    same = _post(client, ui_server, f"/memory/{target}/edit",
                 content="Release notes live in docs/CHANGES.md.")
    assert "done=unchanged" in same.headers["location"]


def test_an_edit_says_how_many_secrets_were_masked(client: httpx.Client, ui_server: UiServer) -> None:
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    r = _post(client, ui_server, f"/memory/{ui_server.ids['edit_me']}/edit",
              content=f"Release notes live in docs/CHANGES.md; the bot token is {token}.")
    assert r.status_code == 303 and "masked=1" in r.headers["location"]
    page = client.get(r.headers["location"]).text
    assert "1 secret in the text was masked." in page and token not in page
    forged = client.get(r.headers["location"].replace("masked=1", "masked=<b>x</b>")).text
    assert "Saved: this is the new version" in forged and "was masked" not in forged and "<b>x" not in forged
    for value in ("²", "٣", "9" * 5000):  # digits to str.isdigit, not ASCII or not a count: ignored
        page = client.get(r.headers["location"].replace("masked=1", f"masked={value}"))
        assert page.status_code == 200 and "masked." not in page.text


def test_errors_are_pages_that_say_what_failed(client: httpx.Client) -> None:
    r = client.get("/memory/0b9c6a52-4f7e-4c55-9a39-0d1c8a3e5f10")
    assert r.status_code == 404 and "never saved here, or purged" in r.text
    assert client.get("/?before=abc").status_code == 400
    assert client.get("/?space=no%20spaces").status_code == 400
    assert client.get("/ops?before=nope").status_code == 400
    assert client.get("/no/such/page").status_code == 404
    r = client.get("/search", params={"q": "terraform", "space": "bad tag!"})
    assert r.status_code == 400 and "The search failed" in r.text and 'name="space" value=""' in r.text


def test_messages_are_fixed_texts_never_taken_from_the_url(client: httpx.Client, ui_server: UiServer) -> None:
    page = client.get("/", params={"done": "<b>owned</b>"})
    assert "owned" not in page.text
    page = client.get("/search", params={"q": "<script>alert(1)</script>", "space": "nobody_here"})
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text and "The record is silent" in page.text


def test_another_space_and_its_alias_open_the_same_page(client: httpx.Client) -> None:
    for tag in ("team_billing", "billing_old"):
        page = client.get("/", params={"space": tag})
        assert page.status_code == 200 and "invoice numbering" in page.text
        assert "Space <code>team_billing</code>" in page.text


def test_a_few_hours_of_latency_get_a_sentence_not_an_empty_chart(client: httpx.Client,
                                                                     ui_server: UiServer) -> None:
    """Issue 31, item 9: two hours of data drew a 48-hour frame with one dot."""
    import time

    from bli_memory.core.hooks import stats as hook_stats

    stats = ui_server.home / ".local" / "state" / "bli-cockpit" / "memory-hook-stats.json"
    now = time.time()
    for h in range(2):
        hook_stats.record(stats, "stop", ["ok", "via:direct"], now=now - h * 3600, latency_ms=80,
                          route="direct")
    page = client.get("/health").text
    section = page[page.index("<h2>stop</h2>"):]
    assert "<svg" not in section.split("</section>")[0]
    assert "A chart of p95 latency per hour comes once 6 of the last 48 hours have timed runs (now 2)" \
        in section
