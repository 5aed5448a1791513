"""The memory browser on the team service (``/ui/``), on the real Postgres.

A person signs in with a device token; the pages show their own spaces and the ones
shared with them, nothing else; edit / forget / purge answer exactly as the HTTP doors
do for the same person (404 for another person's memory, 403 for a read-only share);
Origin and CSRF checks hold; the session cookie never holds the token, works on
another service instance over the same database, and ends when the token is revoked.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import pytest

from tests.core.team.conftest import Person

ORIGIN = "http://testserver"


def _save(client: Any, p: Person, space: str, content: str) -> str:
    r = client.post("/api/memory/save", headers=p.headers, json={"content": content, "containerTag": space})
    assert r.status_code == 201, r.text
    return str(r.json()["memory"]["id"])


def _door_get(client: Any, p: Person, id: str) -> dict[str, Any]:
    r = client.post("/api/memory/get", headers=p.headers, json={"id": id, "includeInactive": True})
    assert r.status_code == 200, r.text
    return dict(r.json()["memory"])


def _sign_in(client: Any, p: Person) -> str:
    """Sign in; returns the cookie's value (the client keeps it for the next requests)."""
    client.cookies.clear()
    r = client.post("/ui/login", data={"token": p.token}, headers={"Origin": ORIGIN}, follow_redirects=False)
    assert r.status_code == 303, r.text
    assert r.headers["location"] == "/ui/"
    cookie = r.headers["set-cookie"]
    for attribute in ("HttpOnly", "SameSite=Strict", "Path=/ui"):
        assert attribute in cookie
    value = client.cookies.get("bli_memory_service_ui")
    assert value and p.token not in cookie and p.token[len("blim_"):] not in cookie
    return str(value)


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no CSRF field"
    return found.group(1)


@pytest.fixture
def team(client: Any, new_person: Any, admin: Any) -> dict[str, Any]:
    """Alice shares a space with Bob read-only and another for writing; Carol shares nothing."""
    alice, bob, carol = new_person(), new_person(), new_person()
    tag = uuid.uuid4().hex[:10]
    spaces = {"alice_ro": f"ro_{tag}", "alice_rw": f"rw_{tag}", "bob": f"bob_{tag}", "carol": f"carol_{tag}"}
    ids = {
        "alice_ro": _save(client, alice, spaces["alice_ro"], "alice read-only note: deploys on friday"),
        "alice_rw": _save(client, alice, spaces["alice_rw"], "alice shared note: staging uses port 8443"),
        "bob": _save(client, bob, spaces["bob"], "bob own note: the linter runs with ruff"),
        "carol": _save(client, carol, spaces["carol"], "carol private note: her dentist is on tuesday"),
    }
    admin.share_space(owner=alice.name, space=spaces["alice_ro"], grantee=bob.name, access="read")
    admin.share_space(owner=alice.name, space=spaces["alice_rw"], grantee=bob.name, access="write")
    return {"alice": alice, "bob": bob, "carol": carol, "spaces": spaces, "ids": ids}


def test_without_a_session_pages_send_to_sign_in_and_changes_are_refused(
    client: Any, team: dict[str, Any]
) -> None:
    client.cookies.clear()
    r = client.get("/ui/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/login"
    page = client.get("/ui/login")
    assert page.status_code == 200 and 'name="token"' in page.text and 'for="token"' in page.text
    memory = team["ids"]["bob"]
    r = client.post(f"/ui/memory/{memory}/forget", data={"csrf": "x"}, headers={"Origin": ORIGIN})
    assert r.status_code == 401
    r = client.post("/ui/login", data={"token": "blim_not-a-token"}, headers={"Origin": ORIGIN})
    assert r.status_code == 401 and "unknown or revoked" in r.text
    assert _door_get(client, team["bob"], memory)["state"] == "active"


def test_a_person_sees_their_spaces_and_the_shared_ones_only(client: Any, team: dict[str, Any]) -> None:
    bob, spaces, ids = team["bob"], team["spaces"], team["ids"]
    _sign_in(client, bob)
    page = client.get("/ui/").text
    for key in ("alice_ro", "alice_rw", "bob"):
        assert spaces[key] in page
    assert spaces["carol"] not in page and "carol private note" not in page
    assert f"shared by {team['alice'].name}" in page
    assert f"signed in as <strong>{bob.name}</strong>" in page
    # Links follow the mount; the machine-local pages are not offered on the service.
    assert 'href="/ui/search"' in page and 'href="/search"' not in page and "/captures" not in page
    shared = client.get("/ui/", params={"space": spaces["alice_ro"]}).text
    assert "alice read-only note" in shared and f"/ui/memory/{ids['alice_ro']}" in shared
    # Carol's space by name: empty, as at the doors' list.
    other = client.get("/ui/", params={"space": spaces["carol"]}).text
    assert "carol private note" not in other and "no live memories" in other
    # Carol's memory by id: 404, the doors' answer to Bob.
    r = client.get(f"/ui/memory/{ids['carol']}")
    door = client.post("/api/memory/get", headers=bob.headers,
                       json={"id": ids["carol"], "includeInactive": True})
    assert r.status_code == door.status_code == 404
    assert "carol private note" not in r.text
    hits = client.get("/ui/search", params={"q": "dentist tuesday", "space": spaces["carol"]}).text
    assert "carol private note" not in hits and "The record is silent" in hits


@pytest.mark.parametrize("action", ["edit", "forget", "purge"])
def test_changes_follow_the_doors_ownership_rules(client: Any, team: dict[str, Any], action: str) -> None:
    bob, ids, spaces = team["bob"], team["ids"], team["spaces"]
    _sign_in(client, bob)
    csrf = _csrf(client.get("/ui/").text)
    form = {"csrf": csrf, "content": "rewritten by bob"}
    door_path = {"edit": "update", "forget": "forget", "purge": "purge"}[action]
    for key, status in (("carol", 404), ("alice_ro", 403)):
        r = client.post(f"/ui/memory/{ids[key]}/{action}", data=form, headers={"Origin": ORIGIN},
                        follow_redirects=False)
        body = {"id": ids[key], "containerTag": spaces[key]}
        if action == "edit":
            body["content"] = "rewritten by bob"
        door = client.post(f"/api/memory/{door_path}", headers=bob.headers, json=body)
        assert r.status_code == door.status_code == status, (key, r.text, door.text)
    owner = {"carol": team["carol"], "alice_ro": team["alice"]}
    for key in owner:
        kept = _door_get(client, owner[key], ids[key])
        assert kept["state"] == "active" and kept["version"] == 1 and "bob" not in kept["content"]
    # A space shared for writing: Bob's change lands, as at the doors.
    r = client.post(f"/ui/memory/{ids['alice_rw']}/{action}", data=form, headers={"Origin": ORIGIN},
                    follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/ui/")
    alice = team["alice"]
    after = client.post("/api/memory/get", headers=alice.headers,
                        json={"id": ids["alice_rw"], "includeInactive": True})
    if action == "purge":
        assert after.status_code == 404
    elif action == "forget":
        assert after.json()["memory"]["state"] == "forgotten"
    else:
        live = client.post("/api/memory/get", headers=alice.headers, json={"id": ids["alice_rw"]}).json()
        assert live["memory"]["content"] == "rewritten by bob" and live["memory"]["version"] == 2


def test_forget_needs_this_pages_origin_and_the_sessions_csrf_token(
    client: Any, team: dict[str, Any]
) -> None:
    bob, memory = team["bob"], team["ids"]["bob"]
    _sign_in(client, bob)
    csrf = _csrf(client.get(f"/ui/memory/{memory}/forget").text)
    url = f"/ui/memory/{memory}/forget"
    assert client.post(url, data={"csrf": csrf}, headers={"Origin": "http://evil.example"}).status_code == 403
    assert client.post(url, data={"csrf": csrf}).status_code == 403  # no Origin at all
    assert client.post(url, data={"csrf": csrf + "x"}, headers={"Origin": ORIGIN}).status_code == 403
    assert client.post(url, data={}, headers={"Origin": ORIGIN}).status_code == 403
    # Another person's CSRF token is not this session's.
    _sign_in(client, team["alice"])
    other = _csrf(client.get("/ui/").text)
    _sign_in(client, bob)
    # A new sign-in is a new session (its expiry is part of it), so its token is read afresh.
    csrf = _csrf(client.get(f"/ui/memory/{memory}/forget").text)
    assert other != csrf
    assert client.post(url, data={"csrf": other}, headers={"Origin": ORIGIN}).status_code == 403
    assert _door_get(client, bob, memory)["state"] == "active"
    r = client.post(url, data={"csrf": csrf}, headers={"Origin": ORIGIN}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith(f"/ui/memory/{memory}")
    assert _door_get(client, bob, memory)["state"] == "forgotten"
    page = client.get(r.headers["location"])
    assert "Forgotten: the memory left search and recall" in page.text


def test_a_session_is_signed_works_on_another_instance_and_ends_with_its_token(
    client: Any, team: dict[str, Any], admin: Any, new_person: Any
) -> None:
    from starlette.testclient import TestClient

    from bli_memory.core.ui.service_app import create_service_app

    bob = team["bob"]
    value = _sign_in(client, bob)
    version, token_id, expires, mac = value.split(".")
    assert version == "v1" and token_id == bob.token_id and int(expires) > time.time()
    # A second instance over the same database (no shared memory) accepts the session.
    with TestClient(create_service_app(backend=admin, run_jobs=False, warm_model=False)) as other:
        other.cookies.set("bli_memory_service_ui", value, path="/ui")
        page = other.get("/ui/", follow_redirects=False)
        assert page.status_code == 200 and team["spaces"]["bob"] in page.text
    # A changed expiry, a changed mac, another person's token id: refused.
    forged = [f"v1.{token_id}.{int(expires) + 3600}.{mac}", f"v1.{token_id}.{expires}.{mac[:-2]}AA",
              f"v1.{team['carol'].token_id}.{expires}.{mac}", f"v1.{token_id}.{int(time.time()) - 1}.{mac}"]
    for cookie in forged:
        client.cookies.clear()
        client.cookies.set("bli_memory_service_ui", cookie, path="/ui")
        assert client.get("/ui/", follow_redirects=False).status_code == 303, cookie
    # Revoking the token ends the session at once.
    device = new_person(bob.name, device="browser")
    value = _sign_in(client, device)
    assert client.get("/ui/", follow_redirects=False).status_code == 200
    assert admin.revoke_token(device.token_id)
    assert client.get("/ui/", follow_redirects=False).status_code == 303
    client.cookies.clear()
    client.cookies.set("bli_memory_service_ui", value, path="/ui")
    assert client.get("/ui/", follow_redirects=False).status_code == 303


def test_a_device_token_in_the_header_opens_the_pages_and_sign_out_clears_the_cookie(
    client: Any, team: dict[str, Any]
) -> None:
    bob = team["bob"]
    client.cookies.clear()
    page = client.get("/ui/", headers=bob.headers)
    assert page.status_code == 200 and team["spaces"]["bob"] in page.text
    assert client.get("/ui/", headers={"Authorization": "Bearer blim_wrong"}).status_code == 401
    _sign_in(client, bob)
    csrf = _csrf(client.get("/ui/").text)
    r = client.post("/ui/logout", data={"csrf": csrf}, headers={"Origin": ORIGIN}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/login"
    assert "Max-Age=0" in r.headers["set-cookie"]
    assert client.get("/ui/", follow_redirects=False).status_code == 303


def test_a_stored_script_renders_as_text_on_the_service(client: Any, team: dict[str, Any]) -> None:
    bob = team["bob"]
    memory = _save(client, bob, team["spaces"]["bob"], "<script>alert(1)</script> in a note")
    _sign_in(client, bob)
    page = client.get(f"/ui/memory/{memory}")
    assert page.status_code == 200
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "script-src" not in page.headers["content-security-policy"]
    assert "default-src 'none'" in page.headers["content-security-policy"]


def test_counts_fold_aliases_and_never_show_an_unseen_spaces_alias(
    client: Any, team: dict[str, Any], admin: Any
) -> None:
    bob, alice, carol, spaces = team["bob"], team["alice"], team["carol"], team["spaces"]
    old, carols_old = f"old_{spaces['alice_ro']}", f"old_{spaces['carol']}"
    admin.add_alias(old, spaces["alice_ro"])
    admin.add_alias(carols_old, spaces["carol"])
    _save(client, alice, old, "alice note under the space's old name")
    _save(client, carol, carols_old, "carol note under her space's old name")
    _sign_in(client, bob)
    page = client.get("/ui/").text
    row = re.search(rf"<tr[^>]*><td><a href=\"/ui/\?space={spaces['alice_ro']}\">.*?</tr>", page, re.S)
    assert row, page
    assert re.findall(r'<td class="num">(\d+)</td>', row.group(0))[0] == "2"  # both names, one space
    assert old in row.group(0)
    assert carols_old not in page and spaces["carol"] not in page
    listed = client.get("/ui/", params={"space": old}).text
    assert "old name" in listed and "read-only note" in listed


def test_a_read_only_share_offers_no_changes_and_a_writable_one_does(
    client: Any, team: dict[str, Any]
) -> None:
    ids = team["ids"]
    _sign_in(client, team["bob"])
    read_only = client.get(f"/ui/memory/{ids['alice_ro']}").text
    assert "shared with you read-only" in read_only
    assert f"/ui/memory/{ids['alice_ro']}/forget" not in read_only
    for key in ("alice_rw", "bob"):
        page = client.get(f"/ui/memory/{ids[key]}").text
        assert "read-only" not in page and f"/ui/memory/{ids[key]}/forget" in page
