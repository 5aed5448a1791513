"""The service's memory pages in a real browser: ``bli-memory-mcp service`` as a real
subprocess on the real Postgres, Debian's chromium driven by Selenium.

Sign in with a device token, list the spaces (one's own and a shared one, never
another person's), forget a memory after its confirmation and check the database
afterwards; a stored ``<script>`` does not run. Skips without chromium (fails when
``BLI_MEMORY_REQUIRE_INTEGRATION=1``), like ``tests/core/ui/test_browser.py``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.core.ui.test_browser import _click, _shot, _text, browser  # noqa: F401 (the fixture)

pytestmark = pytest.mark.integration


def _sign_in(d: Any, token: str) -> None:
    """Type ``token`` into the sign-in form and submit it, on a settled page.

    Chromium can still swap the document just after the previous answer (a form post
    answered with the same page): a node found then "does not belong to the document".
    The form is then found again, a few times, instead of failing on a stale node.
    """
    import time

    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By

    for attempt in range(3):
        try:
            field = d.find_element(By.ID, "token")
            field.clear()
            field.send_keys(token)
            _click(d, d.find_element(By.XPATH, "//button[normalize-space()='Sign in']"))
            return
        except (StaleElementReferenceException, WebDriverException) as exc:
            if attempt == 2 or "document" not in str(exc).lower() and not isinstance(
                    exc, StaleElementReferenceException):
                raise
            time.sleep(0.3)


def test_sign_in_list_and_forget_on_the_service(browser: Any, start_service: Any,  # noqa: F811
                                                new_person: Any, admin: Any) -> None:
    import httpx
    from selenium.webdriver.common.by import By

    svc = start_service()
    alice, bob, carol = new_person(), new_person(), new_person()
    tag = uuid.uuid4().hex[:10]
    mine, shared, hidden = f"bob_{tag}", f"team_{tag}", f"carol_{tag}"

    def save(p: Any, space: str, content: str) -> str:
        r = httpx.post(svc.url + "/api/memory/save", headers=p.headers, timeout=60,
                       json={"content": content, "containerTag": space})
        assert r.status_code == 201, r.text
        return str(r.json()["memory"]["id"])

    target = save(bob, mine, "The release checklist lives in docs/release.md")
    save(bob, mine, "<script>window.__pwned = 1</script> a stored script")
    save(alice, shared, "The team standup is at 09:30 UTC")
    save(carol, hidden, "Carol keeps her own notes here")
    admin.share_space(owner=alice.name, space=shared, grantee=bob.name, access="read")

    d = browser
    d.delete_all_cookies()
    d.get(svc.url + "/ui/")
    assert d.current_url == svc.url + "/ui/login"
    _sign_in(d, "blim_wrong")
    assert "unknown or revoked" in _text(d)
    _sign_in(d, bob.token)
    assert d.current_url == svc.url + "/ui/"
    cookie = d.get_cookie("bli_memory_service_ui")
    assert cookie and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert bob.token not in cookie["value"]
    assert d.execute_script("return document.cookie") == ""  # HttpOnly: no script reads it

    page = _text(d)
    assert mine in page and shared in page and hidden not in page
    assert f"shared by {alice.name}" in page
    assert "release checklist" in page and "a stored script" in page
    assert d.execute_script("return window.__pwned === undefined")
    _shot(d, "service-spaces")

    _click(d, d.find_element(By.PARTIAL_LINK_TEXT, "release checklist"))
    assert d.current_url == f"{svc.url}/ui/memory/{target}"
    _click(d, d.find_element(By.LINK_TEXT, "Forget"))
    assert "tombstones version 1" in _text(d)
    assert httpx.post(svc.url + "/api/memory/get", headers=bob.headers, json={"id": target},
                      timeout=30).json()["memory"]["state"] == "active"
    _click(d, d.find_element(By.XPATH, "//button[normalize-space()='Forget it']"))
    assert "Forgotten" in _text(d)
    got = httpx.post(svc.url + "/api/memory/get", headers=bob.headers, timeout=30,
                     json={"id": target, "includeInactive": True}).json()
    assert got["memory"]["state"] == "forgotten"

    d.get(f"{svc.url}/ui/?space={shared}")
    assert "standup" in _text(d)
    _click(d, d.find_element(By.XPATH, "//button[normalize-space()='Sign out']"))
    assert d.current_url == svc.url + "/ui/login"
    d.get(svc.url + "/ui/")
    assert d.current_url == svc.url + "/ui/login"
