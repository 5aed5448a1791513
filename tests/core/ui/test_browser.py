"""The memory browser in a real browser: Debian's chromium, driven by Selenium through
chromium-driver (no browser download).

List, search, open a history, edit and forget, each checked in the store afterwards;
a stored ``<script>`` does not run; a cross-origin form post from another page is
refused; the pages fit a narrow window and every control has a label. The tests take
screenshots; ``BLI_MEMORY_UI_SCREENSHOTS=1`` saves them into ``docs/ui/`` (shown in
``docs/ui.md``).

Without chromium these tests skip, and fail when ``BLI_MEMORY_REQUIRE_INTEGRATION=1``.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.core.ui.conftest import SCRIPT_MEMORY, UiServer

CHROMIUM = os.environ.get("BLI_MEMORY_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("BLI_MEMORY_CHROMEDRIVER", "/usr/bin/chromedriver")
#: Where the screenshots go: docs/ui/ with BLI_MEMORY_UI_SCREENSHOTS=1 (to refresh the
#: ones docs/ui.md shows), else a scratch folder, so a test run leaves the checkout clean.
SHOTS = (REPO_ROOT / "docs" / "ui" if os.environ.get("BLI_MEMORY_UI_SCREENSHOTS") == "1"
         else Path(tempfile.gettempdir()) / "bli-memory-ui-screenshots")
REQUIRE = os.environ.get("BLI_MEMORY_REQUIRE_INTEGRATION") == "1"

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def _missing() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (Path(path).is_file() and os.access(path, os.X_OK)) and not shutil.which(path):
            return f"{path} is not installed (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the test extra)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless chromium for the module, at a desktop width."""
    problem = _missing()
    if problem:
        if REQUIRE:
            pytest.fail(f"{problem}, and BLI_MEMORY_REQUIRE_INTEGRATION=1 requires it")
        pytest.skip(problem)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-dev-shm-usage", "--window-size=1100,900", "--lang=en-US"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def signed_in(browser: Any, ui_server: UiServer) -> Any:
    """The browser after opening the printed URL (the token becomes a session cookie)."""
    browser.get(ui_server.url)
    assert "?token=" not in browser.current_url  # the token left the address bar
    return browser


def _shot(driver: Any, name: str, *, width: int = 1100) -> None:
    """Save a full-page screenshot of the current page as docs/ui/NAME.png."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(max(int(height) + 120, 600), 2400))
    driver.save_screenshot(str(SHOTS / f"{name}.png"))
    driver.set_window_size(1100, 900)


def _left_the_document(element: Any) -> bool:
    """Whether ``element`` is no longer in the page, as after a navigation.

    Selenium's ``staleness_of`` knows only StaleElementReferenceException; when the
    navigation crosses origins, chromedriver may instead answer "unknown error: ... Node
    with given id does not belong to the document" (the renderer was swapped while it
    looked). Both mean the old page is gone; any other error still fails the test.
    """
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as error:
        if "does not belong to the document" in str(error.msg):
            return True
        raise
    return False


def _click(driver: Any, element: Any, *keys: str) -> None:
    """Click something that navigates (or type ``keys`` into it), and wait for the next page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    old = driver.find_element(By.TAG_NAME, "html")
    if keys:
        element.send_keys(*keys)
    else:
        element.click()
    WebDriverWait(driver, 30).until(lambda _d: _left_the_document(old))
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")


def _text(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.TAG_NAME, "main").text)


def test_the_first_page_lists_this_projects_space_and_the_others(signed_in: Any, ui_server: UiServer) -> None:
    from selenium.webdriver.common.by import By

    d = signed_in
    d.get(ui_server.base + "/")
    main = _text(d)
    assert ui_server.space in d.find_element(By.TAG_NAME, "h1").text
    assert "This project's space" in main
    assert "eu-west-2" in main and "eu-west-1" not in main  # the live version only
    assert len(d.find_elements(By.CSS_SELECTOR, "ol.memories > li")) == 25  # one page
    rows = {r.find_element(By.TAG_NAME, "td").text.split()[0]: r.text
            for r in d.find_elements(By.CSS_SELECTOR, "table tbody tr")}
    assert "team_billing" in rows and "billing_old" in rows["team_billing"]
    assert d.find_element(By.CSS_SELECTOR, "svg.chart title").get_attribute("textContent") == \
        "Live memories per space"
    _shot(d, "spaces")
    _click(d, d.find_element(By.LINK_TEXT, "Older memories"))
    older = [li.text for li in d.find_elements(By.CSS_SELECTOR, "ol.memories > li")]
    assert len(older) == 35 - 25 and all("Filler note" in t for t in older)
    assert "Filler note number 0 " in older[-1]  # the oldest comes last
    _click(d, d.find_element(By.LINK_TEXT, "team_billing"))
    assert "invoice numbering" in _text(d)


def test_search_shows_channels_and_cosine_and_says_when_the_record_is_silent(
    signed_in: Any, ui_server: UiServer
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    d = signed_in
    d.get(ui_server.base + "/")
    box = d.find_element(By.ID, "quick-q")
    # The header box shows its whole placeholder (it was cut off).
    room = d.execute_script(
        "const e = arguments[0], s = getComputedStyle(e);"
        "const c = document.createElement('canvas').getContext('2d');"
        "c.font = s.font; return [c.measureText(e.placeholder).width,"
        " e.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)];", box)
    assert room[0] <= room[1], room
    _click(d, box, "which region does staging run in", Keys.ENTER)  # the keyboard submits
    assert "/search?q=which+region" in d.current_url
    first = d.find_element(By.CSS_SELECTOR, "ol.hits > li")
    assert "eu-west-2" in first.text
    # Each hit says how it matched, in words (issue 31, item 9): the order is not the similarity.
    assert "matched" in first.text and "meaning" in first.text and "similarity 0." in first.text
    assert "not by similarity alone" in _text(d)
    # One search box on the search page: the header's quick search is not repeated there.
    assert not d.find_elements(By.ID, "quick-q") and d.find_elements(By.ID, "q")
    _shot(d, "search")
    d.get(ui_server.base + "/search?q=eu-west-2")
    assert "matched all the words" in d.find_element(By.CSS_SELECTOR, "ol.hits > li").text
    d.get(ui_server.base + "/search?q=staging+region&space=nobody_here")
    assert "The record is silent" in _text(d)
    d.get(ui_server.base + "/search?q=x&space=not%20a%20tag")
    assert "The search failed" in _text(d) and "invalid container tag" in _text(d)


def test_a_memory_shows_its_fields_and_whole_history(signed_in: Any, ui_server: UiServer) -> None:
    from selenium.webdriver.common.by import By

    d = signed_in
    d.get(ui_server.base + "/")
    _click(d, d.find_element(By.PARTIAL_LINK_TEXT, "eu-west-2"))
    main = _text(d)
    for field in ("Version\n2", "Source\nmcp", "Session\ns-1", "Expires\nnever", '"kind": "decision"'):
        assert field in main, field
    history = d.find_elements(By.CSS_SELECTOR, "ol.history > li")
    assert [("v2" in h.text, "v1" in h.text) for h in history] == [(True, False), (False, True)]
    assert "superseded" in history[1].text and "eu-west-1" in history[1].text
    _shot(d, "memory")
    _click(d, history[1].find_element(By.TAG_NAME, "a"))
    assert ui_server.ids["deploy_v1"] in d.current_url
    assert "superseded" in d.find_element(By.TAG_NAME, "h1").text


def test_edit_writes_a_new_version_after_naming_what_will_happen(signed_in: Any, ui_server: UiServer) -> None:
    from selenium.webdriver.common.by import By

    d = signed_in
    old = ui_server.ids["edit_me"]
    d.get(f"{ui_server.base}/memory/{old}")
    _click(d, d.find_element(By.LINK_TEXT, "Edit"))
    assert "Saving writes version 2" in _text(d) and "Version 1 becomes superseded history" in _text(d)
    area = d.find_element(By.ID, "content")
    area.clear()
    area.send_keys("Release notes live in docs/RELEASES.md since the 2.0 cut.")
    _shot(d, "edit")
    _click(d, d.find_element(By.CSS_SELECTOR, "main form[method=post] button[type=submit]"))
    assert "Saved: this is the new version" in _text(d)
    assert "Source\nui" in _text(d)  # the edit's origin, not the first version's (issue 31, item 9)
    store = ui_server.store()
    try:
        assert store.get(old).state == "superseded"
        (new,) = [m for m in store.history(old) if m.state == "active"]
        assert new.content == "Release notes live in docs/RELEASES.md since the 2.0 cut."
        assert new.version == 2 and new.supersedes == old and new.id in d.current_url
        assert new.source == "ui" and store.get(old).source != "ui"
    finally:
        store.close()


def test_forget_tombstones_after_a_confirmation(signed_in: Any, ui_server: UiServer) -> None:
    from selenium.webdriver.common.by import By

    d = signed_in
    target = ui_server.ids["forget_me"]
    d.get(f"{ui_server.base}/memory/{target}")
    _click(d, d.find_element(By.LINK_TEXT, "Forget"))
    assert "tombstones version 1" in _text(d) and "leaves search, recall" in _text(d)
    store = ui_server.store()
    try:
        assert store.get(target).state == "active"  # the confirmation page changed nothing
    finally:
        store.close()
    _shot(d, "forget")
    _click(d, d.find_element(By.XPATH, "//button[normalize-space()='Forget it']"))
    assert "Forgotten" in _text(d)
    store = ui_server.store()
    try:
        assert store.get(target).state == "forgotten"
    finally:
        store.close()
    d.get(ui_server.base + "/search?q=coffee+machine+descaling")
    assert "coffee" not in " ".join(h.text for h in d.find_elements(By.CSS_SELECTOR, "ol.hits > li"))


def test_a_stored_script_renders_as_text_and_never_runs(signed_in: Any, ui_server: UiServer) -> None:
    from selenium.webdriver.common.by import By

    d = signed_in
    for path in (f"/memory/{ui_server.ids['script']}", "/search?q=stored+script", "/"):
        d.get(ui_server.base + path)
        time.sleep(0.2)  # an onerror handler would have fired by now
        assert d.execute_script("return window.__pwned === undefined")
        assert d.title != "pwned"
        assert not d.find_elements(By.CSS_SELECTOR, "main script, main img")
        assert "<script>window.__pwned = 1;" in _text(d)
    d.get(f"{ui_server.base}/memory/{ui_server.ids['script']}")
    assert d.find_element(By.CSS_SELECTOR, ".content-full").text == SCRIPT_MEMORY


class _Attacker(http.server.BaseHTTPRequestHandler):
    """A page on another origin whose form posts to the browser's forget URL."""

    target = ""

    def do_GET(self) -> None:
        body = (f'<!doctype html><form id="f" method="post" action="{self.target}">'
                '<input name="csrf" value="guess"><button id="go">go</button></form>').encode()
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_form_on_another_origin_cannot_forget_a_memory(signed_in: Any, ui_server: UiServer) -> None:
    from selenium.webdriver.common.by import By

    target = ui_server.ids["tests"]
    handler = type("H", (_Attacker,), {"target": f"{ui_server.base}/memory/{target}/forget"})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        d = signed_in
        d.get(f"http://127.0.0.1:{server.server_address[1]}/")
        _click(d, d.find_element(By.ID, "go"))
        time.sleep(0.3)
        assert "Refused" in d.page_source or "403" in d.page_source or "401" in d.page_source
    finally:
        server.shutdown()
        server.server_close()
    store = ui_server.store()
    try:
        assert store.get(target).state == "active"
    finally:
        store.close()


def test_pages_fit_a_narrow_window_and_every_control_has_a_label(signed_in: Any, ui_server: UiServer) -> None:
    from selenium.webdriver.common.by import By

    d = signed_in
    d.set_window_size(360, 800)
    try:
        for path in ("/", f"/memory/{ui_server.ids['deploy']}", "/search?q=terraform", "/captures",
                     "/health", "/ops", f"/memory/{ui_server.ids['deploy']}/edit"):
            d.get(ui_server.base + path)
            overflow = d.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 1, f"{path} scrolls sideways by {overflow}px at 360px"
            for control in d.find_elements(By.CSS_SELECTOR, "input:not([type=hidden]), textarea, select"):
                cid = control.get_attribute("id")
                assert cid and d.find_elements(By.CSS_SELECTOR, f"label[for='{cid}']"), (path, cid)
        d.get(ui_server.base + "/")
        SHOTS.mkdir(parents=True, exist_ok=True)
        d.save_screenshot(str(SHOTS / "narrow.png"))
    finally:
        d.set_window_size(1100, 900)


def test_the_keyboard_reaches_the_actions(signed_in: Any, ui_server: UiServer) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    d = signed_in
    d.get(f"{ui_server.base}/memory/{ui_server.ids['deploy']}")
    seen = []
    for _ in range(40):
        ActionChains(d).send_keys(Keys.TAB).perform()
        seen.append(d.execute_script("return document.activeElement.textContent.trim()"))
    assert seen[0] == "Skip to content"
    assert {"Edit", "Forget", "Purge"} <= set(seen)


def test_captures_health_and_ops_pages(signed_in: Any, ui_server: UiServer) -> None:
    from selenium.webdriver.common.by import By

    from bli_memory.core.hooks import stats as hook_stats

    store = ui_server.store()
    try:
        jobs = store.jobs
        done = jobs.enqueue_job("user: ...", space=ui_server.space, source="hook:claude", session_id="s-2")
        jobs.enqueue_job("user: later", space=ui_server.space, source="hook:codex", session_id="s-3")
        job = jobs.claim_job("w", lease_seconds=60, max_attempts=3)
        assert job is not None and job.id == done
        jobs.finish_job(done, "w", {"added": 2, "updated": 1, "unchanged": 0, "conflicted": 1,
                                    "memories": [{"id": ui_server.ids["deploy"], "action": "added"}],
                                    "extraction": {"extractor": "default", "host": "claude", "model": None,
                                                   "fallback": "not_logged_in", "input_tokens": None,
                                                   "output_tokens": None, "cost_usd": None,
                                                   "request_s": 1.2}})
        store.experience.add_experience({
            "id": "0b9c6a52-4f7e-4c55-9a39-0d1c8a3e5f10", "store": "bli", "verdict": "win",
            "reason": "recalled the <b>region</b> before I asked",
            "created_at": "2026-11-30T10:00:00.000000Z", "person": "ana"})
    finally:
        store.close()
    stats = ui_server.home / ".local" / "state" / "bli-cockpit" / "memory-hook-stats.json"
    # The host extractor is chosen, and today's ledger holds its spend (core/extraction/host_ledger.py).
    (ui_server.home / ".config" / "bli-cockpit").mkdir(parents=True, exist_ok=True)
    (ui_server.home / ".config" / "bli-cockpit" / "extractor.json").write_text(json.dumps(
        {"extractor": "host", "host": "claude", "daily_requests": 200, "max_tokens": 4000, "timeout_s": 120}))
    stats.parent.mkdir(parents=True, exist_ok=True)
    today = time.strftime("%Y-%m-%d", time.gmtime())
    (stats.parent / "host-extractor.json").write_text(json.dumps({"days": {today: {
        "requests": 3, "input_tokens": 1200, "output_tokens": 310, "cost_usd": 0.0042,
        "fallbacks": {"not_logged_in": 1}}}}))
    now = time.time()
    for h in range(30):
        for ms, route in ((12, "daemon"), (25, "daemon"), (640 + 20 * h, "direct")):
            hook_stats.record(stats, "prompt", ["ok", f"via:{route}"], now=now - h * 3600,
                              latency_ms=ms, route=route)
    hook_stats.record(stats, "prompt", ["failed:timeout", "via:direct"], now=now,
                      latency_ms=2100, route="direct")
    hook_stats.record(stats, "prompt", ["failed:dashboard_unreachable"], now=now - 12 * 86400)
    hook_stats.record(stats, "prompt", ["skipped_trivial"], now=now)
    old_hour = time.strftime("%Y-%m-%d %H:00", time.gmtime(now - 12 * 86400))

    d = signed_in
    d.get(ui_server.base + "/captures")
    rows = [r.text for r in d.find_elements(By.CSS_SELECTOR, "table tbody tr")]
    assert any("done" in r and "hook:claude" in r and " 2 1 0 1" in r for r in rows), rows
    assert any("queued" in r and "hook:codex" in r for r in rows)
    assert any("rules (host model: not_logged_in)" in r for r in rows), rows  # the job says why
    spend = d.find_element(By.ID, "host-spend").text
    assert "(claude): 3 of 200 requests, 1200 tokens in, 310 out, $0.0042" in spend, spend
    assert "not_logged_in 1" in spend
    assert "user: later" not in _text(d)  # a job's raw text is never shown
    # A capture links the memory it wrote; space and source never break inside a word.
    link = d.find_element(By.CSS_SELECTOR, "ul.written a")
    assert link.get_attribute("href").endswith(f"/memory/{ui_server.ids['deploy']}")
    d.set_window_size(700, 900)
    for cell in d.find_elements(By.CSS_SELECTOR, "td.key"):
        lines = d.execute_script(
            "const r = document.createRange(); r.selectNodeContents(arguments[0]);"
            "return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size;", cell)
        assert lines == 1, cell.text
    d.set_window_size(1100, 900)
    _shot(d, "captures")
    d.get(ui_server.base + "/health")
    main = _text(d)
    assert "failed: timeout" in main and "skipped: trivial prompt" in main
    # Only the prompt hook skips a trivial prompt: the other events have no such row.
    assert main.count("skipped: trivial prompt") == 1
    # An old failure says when it was last seen, so it is not read as today's.
    assert f"failed: dashboard_unreachable 0 1 {old_hour}" in main, main
    assert "via daemon 60 ≤ 15 ms ≤ 30 ms" in main  # 30 runs in the 15 ms bucket, 30 in the 30 ms one
    assert "via direct 31" in main
    assert d.find_elements(By.CSS_SELECTOR, "svg.chart polyline")
    _shot(d, "health")
    d.get(ui_server.base + "/ops")
    assert "recalled the <b>region</b> before I asked" in _text(d)
    glossary = d.find_element(By.CSS_SELECTOR, "dl.glossary").text
    for term in ("win, memory helped", "supermemory is the hosted service", "requested, returned, unique",
                 "whether or not Codex is installed"):
        assert term in glossary, term
    _shot(d, "ops")
