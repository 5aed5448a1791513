"""The service against an attacker at the HTTP level: bodies too large or too slow,
values that overflow a date, searches of thousands of words, unbounded echoes, and
requests for doors and methods that do not exist.

Real Postgres; the app in-process (``client``), in a uvicorn thread on a loopback port
(``served``, for what a test client cannot send: a body that trickles in), or as the
real ``bli-memory-mcp service`` subprocess (``start_service``) whose memory is read
from ``/proc``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from bli_memory.core.team.service.app import MAX_BODY_BYTES
from bli_memory.core.team.service.http import MAX_ERROR_MESSAGE_CHARS
from tests.core.team.conftest import free_port


def _error(r: Any, status: int, reason: str) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.text[:500])
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"reason", "message"}, body
    assert body["error"]["reason"] == reason, body
    return body["error"]


# --- the body is checked by its headers, then read as a bounded stream --------------------


def test_a_body_that_is_not_json_by_its_content_type_is_refused(client: Any, new_person, space: str) -> None:
    alice = new_person()
    body = b'{"containerTag": "%s", "content": "Deploys happen on Tuesdays."}' % space.encode()
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""):
        r = client.post("/api/memory/save", content=body, headers={**alice.headers, "content-type": kind})
        _error(r, 415, "unsupported_media_type")
    for kind in ("application/json", "application/json; charset=utf-8", "Application/JSON"):
        r = client.post("/api/memory/save", content=body, headers={**alice.headers, "content-type": kind})
        assert r.status_code in (200, 201), r.text
    # A door without a body (audit, whoami) needs no Content-Type.
    assert client.post("/api/memory/audit", headers=alice.headers).status_code == 200


def test_a_content_length_over_the_limit_is_refused_before_the_token_is_looked_up(
    client: Any, new_person
) -> None:
    alice = new_person()
    huge = {"content-type": "application/json", "content-length": str(10 * MAX_BODY_BYTES)}
    for headers in ({**alice.headers, **huge}, {"Authorization": "Bearer blim_bad", **huge}):
        # The claimed length is never read: the client sends only a few bytes.
        r = client.post("/api/memory/save", content=b"{}", headers=headers)
        _error(r, 413, "too_large")
    r = client.post("/api/memory/save", content=b"{}",
                    headers={**alice.headers, "content-type": "application/json", "content-length": "12ab"})
    assert r.status_code in (400, 413)


def test_a_chunked_body_is_cut_off_at_the_limit(client: Any, new_person, space: str) -> None:
    alice = new_person()

    def chunks() -> Iterator[bytes]:  # no Content-Length: only the stream can be counted
        yield b'{"containerTag": "%s", "content": "' % space.encode()
        for _ in range(64):
            yield b"x" * 16384
        yield b'"}'

    r = client.post("/api/memory/save", content=chunks(), headers={**alice.headers,
                                                                   "content-type": "application/json"})
    _error(r, 413, "too_large")


@pytest.fixture
def served(admin: Any) -> Iterator[str]:
    """The app in a uvicorn thread with a 1 s body timeout."""
    import uvicorn

    from bli_memory.core.team.service.app import create_app

    port = free_port()
    app = create_app(backend=admin, run_jobs=False, warm_model=False, body_timeout=1.0)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the service did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def _answer(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
            part = sock.recv(65536)
            if not part:
                break
            data += part
    except (TimeoutError, ConnectionError):
        pass
    return data


def test_a_body_that_trickles_in_is_refused_after_the_timeout(served: str, new_person) -> None:
    alice = new_person()
    url = urlsplit(served)
    with socket.create_connection((url.hostname, url.port), timeout=5) as sock:
        head = (f"POST /api/memory/save HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice.token}\r\n"
                "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        sock.sendall(head.encode())
        # A byte every 0.3 s never completes the 100-byte body within 20 s: only the
        # service's body timeout (set short by the fixture) can answer inside the loop.
        started = time.monotonic()
        answered = b""
        while time.monotonic() - started < 20 and not answered:
            try:
                sock.sendall(b" ")
            except OSError:
                break
            sock.settimeout(0.3)
            try:
                answered = sock.recv(65536)
            except TimeoutError:
                pass
        # The head and the body may arrive in separate segments: read the rest.
        sock.settimeout(2)
        while b"\r\n\r\n" in answered and b"}" not in answered.split(b"\r\n\r\n", 1)[1]:
            try:
                more = sock.recv(65536)
            except (TimeoutError, OSError):
                break
            if not more:
                break
            answered += more
    assert answered.startswith(b"HTTP/1.1 408"), answered[:200]
    assert b'"reason":"timeout"' in answered


def test_a_client_that_hangs_up_mid_body_is_no_service_failure(served: str, new_person, caplog) -> None:
    import logging

    alice = new_person()
    url = urlsplit(served)
    caplog.set_level(logging.INFO, logger="bli_memory.service")
    with socket.create_connection((url.hostname, url.port), timeout=5) as sock:
        sock.sendall((f"POST /api/memory/save HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice.token}\r\n"
                      "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"content\"").encode())
        time.sleep(0.3)
    deadline = time.monotonic() + 5
    while not any("door save ->" in r.getMessage() for r in caplog.records) and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [r.getMessage() for r in caplog.records]
    assert any("door save -> 400" in m for m in lines), lines
    assert not any(r.levelno >= logging.ERROR for r in caplog.records), lines


# --- a refused body is never read: the connection is closed instead --------------------

#: What a refused request announces: 3 GB, of which the client sends one kilobyte.
_ANNOUNCED = 3 * 1024**3


def _response(sock: socket.socket) -> tuple[bytes, dict[str, str], bytes]:
    """Status line, headers (lower-case names) and body of one answer read from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        part = sock.recv(65536)
        assert part, f"the connection closed before an answer: {data!r}"
        data += part
    head, body = data.split(b"\r\n\r\n", 1)
    status, *lines = head.split(b"\r\n")
    headers = {k.strip().lower().decode(): v.strip().decode()
               for k, v in (line.split(b":", 1) for line in lines)}
    while len(body) < int(headers.get("content-length", "0")):
        part = sock.recv(65536)
        if not part:
            break
        body += part
    return status, headers, body


def _closed_while_sending(sock: socket.socket, more: bytes, seconds: float) -> bool:
    """Go on sending ``more`` of the body, a piece every 0.1 s, for up to ``seconds``: True
    as soon as the service closes the connection (EOF, or a reset because the body was
    never read), False when it was still reading after ``seconds``.

    Sending keeps the connection busy, so the service's keep-alive timeout (5 s idle)
    cannot be what closes it.
    """
    deadline = time.monotonic() + seconds
    sock.settimeout(0.1)
    while time.monotonic() < deadline:
        try:
            sock.sendall(more)
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            return True
    return False


@pytest.mark.parametrize(("case", "want"), [
    ("no token", b"401"), ("unknown token", b"401"), ("announced too large", b"413"),
    ("not json", b"415"), ("chunked too large", b"413"), ("no such door", b"404"),
])
def test_a_refused_body_is_not_read_the_connection_is_closed(
    served: str, new_person, case: str, want: bytes
) -> None:
    alice = new_person()
    url = urlsplit(served)
    auth = {"no token": "", "unknown token": "Authorization: Bearer blim_not-a-token\r\n"}.get(
        case, f"Authorization: Bearer {alice.token}\r\n")
    # A bad token is looked up before the body is read only when the headers pass.
    length = MAX_BODY_BYTES - 1 if case in ("unknown token", "not json") else _ANNOUNCED
    framing = "Transfer-Encoding: chunked" if case == "chunked too large" else f"Content-Length: {length}"
    kind = "text/plain" if case == "not json" else "application/json"
    path = "/api/memory/nope" if case == "no such door" else "/api/memory/save"
    body = b"x" * 1024
    if case == "chunked too large":  # past the limit, then no end: only the stream can refuse it
        block = b"x" * (MAX_BODY_BYTES + 1024)
        body = b"%x\r\n" % len(block) + block + b"\r\n"
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: {kind}\r\n{framing}\r\n\r\n"
                     .encode() + body)
        status, headers, _ = _response(sock)
        assert status.startswith(b"HTTP/1.1 " + want), (case, status)
        assert headers.get("connection", "").lower() == "close", (case, headers)
        # A little more of the body, never the rest: a service that reads on to find
        # the next request keeps the connection open as long as the body comes.
        more = b"%x\r\n%s\r\n" % (512, b"x" * 512) if case == "chunked too large" else b"x" * 512
        assert _closed_while_sending(sock, more, 6), f"{case}: the service was still reading the body 6 s on"


def test_a_body_read_to_its_end_keeps_the_connection_open(served: str, new_person, space: str) -> None:
    alice = new_person()
    url = urlsplit(served)
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        for n in range(2):  # two requests on one connection
            body = b'{"containerTag": "%s", "content": "Release %d ships on Monday."}' % (space.encode(), n)
            sock.sendall((f"POST /api/memory/save HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice.token}"
                          f"\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
                         .encode() + body)
            status, headers, _ = _response(sock)
            assert status.startswith(b"HTTP/1.1 201"), status
            assert headers.get("connection", "").lower() != "close", headers
        # An error found in a body read to its end does not close the connection either.
        body = b'{"containerTag": "%s"}' % space.encode()
        sock.sendall((f"POST /api/memory/save HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice.token}"
                      f"\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
                     .encode() + body)
        status, headers, _ = _response(sock)
        assert status.startswith(b"HTTP/1.1 400") and headers.get("connection", "").lower() != "close"


# --- values that overflow, searches that cannot be planned, echoes ------------------------


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-01:00",
                                  "not a time", "2026-02-30", "9" * 100])
def test_an_expiry_no_calendar_holds_is_refused(client: Any, new_person, space: str, when: str) -> None:
    alice = new_person()
    r = client.post("/api/memory/save", headers=alice.headers,
                    json={"containerTag": space, "content": "Rotate the signing key.", "expiresAt": when})
    err = _error(r, 400, "invalid_input")
    assert "expiresAt" in err["message"] and len(err["message"]) < 300
    r = client.post("/api/memory/save", headers=alice.headers,
                    json={"containerTag": space, "content": "Rotate the signing key.", "expiresAt": 5})
    _error(r, 400, "invalid_input")
    r = client.post("/api/memory/list", headers=alice.headers, json={"containerTag": space})
    assert r.json()["memories"] == []


def test_an_expiry_at_the_edge_of_the_calendar_is_kept(client: Any, new_person, space: str) -> None:
    alice = new_person()
    body = {"containerTag": space, "content": "Keep the archive forever.",
            "expiresAt": "9999-12-31T22:59:59-01:00"}
    r = client.post("/api/memory/save", headers=alice.headers, json=body)
    assert r.status_code == 201 and r.json()["memory"]["expiresAt"] == "9999-12-31T23:59:59.000000Z"


def test_a_search_of_twenty_thousand_distinct_words_answers(client: Any, new_person, space: str) -> None:
    alice = new_person()
    client.post("/api/memory/save", headers=alice.headers,
                json={"containerTag": space, "content": "The word w00003 names the staging cluster."})
    words = " ".join(f"w{i:05d}" for i in range(20_000))
    assert len(words.encode()) < MAX_BODY_BYTES
    r = client.post("/api/memory/search", headers=alice.headers, json={"containerTag": space, "q": words})
    assert r.status_code == 200, r.text[:300]
    assert [h["memory"]["content"] for h in r.json()["results"]][:1] == [
        "The word w00003 names the staging cluster."]


def test_errors_never_echo_unbounded_input(client: Any, new_person, space: str) -> None:
    alice = new_person()
    long_id = "a" * 100_000
    for door, body in (("get", {"id": long_id}), ("history", {"id": long_id}), ("purge", {"id": long_id}),
                       ("forget", {"containerTag": space, "id": long_id}),
                       ("update", {"containerTag": space, "id": long_id, "content": "x"}),
                       ("save", {"containerTag": long_id, "content": "x"})):
        r = client.post(f"/api/memory/{door}", headers=alice.headers, json=body)
        assert 400 <= r.status_code < 500, (door, r.status_code)
        assert len(r.content) < MAX_ERROR_MESSAGE_CHARS + 100, (door, len(r.content))
        assert r.json()["error"]["reason"] in ("invalid_input", "not_found")


def test_keys_over_the_store_limit_are_refused_at_every_door(client: Any, new_person, space: str) -> None:
    """A break-it pass found an extract save, an update and a record door that took (or
    looked up) keys longer than every store keeps (issue 30, item 6)."""
    alice = new_person()
    long_key = "k" * 513
    for door, body in (
            ("save", {"containerTag": space, "content": "x", "extract": True, "customId": long_key}),
            ("save", {"containerTag": space, "content": "x", "extract": True, "sessionId": long_key}),
            ("update", {"containerTag": space, "customId": "c" * 100_000, "content": "x"}),
            ("record", {"containerTag": space, "text": "a turn", "sessionId": long_key}),
            ("record", {"containerTag": space, "text": "a turn", "source": long_key})):
        r = client.post(f"/api/memory/{door}", headers=alice.headers, json=body)
        assert r.status_code == 400, (door, r.status_code, r.text[:200])
        assert "longer than 512 characters" in r.json()["error"]["message"]
        assert "kkkk" not in r.text and "cccc" not in r.text


def test_an_extract_save_over_its_limit_is_refused_as_given(client: Any, new_person, space: str) -> None:
    alice = new_person()
    text = "deploy notes with ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2 + " " + "x" * 100_000
    r = client.post("/api/memory/save", headers=alice.headers,
                    json={"containerTag": space, "content": text, "extract": True})
    assert r.status_code == 400
    assert f"the text is {len(text)} characters; extract takes at most 100000" in r.json()["error"]["message"]


def test_unknown_doors_and_methods_answer_the_error_object(client: Any, new_person) -> None:
    alice = new_person()
    err = _error(client.post("/api/memory/nope" + "x" * 10_000, headers=alice.headers, json={}),
                 404, "not_found")
    assert "xxxx" not in err["message"]
    r = client.get("/api/memory/search", headers=alice.headers)
    _error(r, 405, "method_not_allowed")
    assert "POST" in r.headers.get("allow", "")
    _error(client.post("/readyz"), 405, "method_not_allowed")
    _error(client.get("/nothing-here"), 404, "not_found")


# --- memory stays bounded under a flood of large bodies -----------------------------------


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _flood(url: str, token: str, *, megabytes: int, chunked: bool) -> bytes:
    """Send a body of ``megabytes`` MB (or until the service stops reading); its answer."""
    parts = urlsplit(url)
    size = megabytes * 1024 * 1024
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}"
    head = (f"POST /api/memory/save HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\n{framing}\r\n\r\n")
    block = b"x" * (1024 * 1024)
    if chunked:
        block = b"%x\r\n" % len(block) + block + b"\r\n"
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(head.encode())
        sock.settimeout(2)
        try:
            for _ in range(megabytes):
                sock.sendall(block)
        except OSError:  # the service answered and stopped reading: what it should do
            pass
        return _answer(sock, 10)


def test_large_bodies_with_a_bad_token_leave_the_service_memory_bounded(
    start_service, new_person
) -> None:
    svc = start_service(log_level="warning")
    good = new_person().token
    before = _rss_kib(svc.proc.pid)
    peak = [before]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss_kib(svc.proc.pid))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    answers: dict[int, bytes] = {}
    # A bad token with a Content-Length over the limit is refused by its headers (413);
    # a chunked body by its token (401) before any of it is read, or by its size (413).
    floods = [("blim_not-a-token", False, b"413"), ("blim_not-a-token", True, b"401"), (good, True, b"413"),
              (good, False, b"413")]

    def send(i: int, token: str, chunked: bool) -> None:
        answers[i] = _flood(svc.url, token, megabytes=256, chunked=chunked)

    threads = [threading.Thread(target=send, args=(i, t, c)) for i, (t, c, _) in enumerate(floods)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    done.set()
    watcher.join(5)
    for i, (_, _, want) in enumerate(floods):
        assert answers[i].startswith(b"HTTP/1.1 " + want), (i, answers.get(i, b"")[:200])
    grown_mib = (peak[0] - before) / 1024
    # Four 256 MB bodies: held in full they would add a gigabyte.
    assert grown_mib < 64, f"RSS grew by {grown_mib:.0f} MiB"
    assert svc.proc.poll() is None
