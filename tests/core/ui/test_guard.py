"""The memory browser's security model, over real HTTP against ``bli-memory-mcp ui``.

Token -> session cookie (HttpOnly, SameSite=Strict), Host checked against DNS
rebinding, Origin and a CSRF token on every change; a refusal changes nothing.
"""

from __future__ import annotations

import re
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.core.ui.conftest import UiServer, start_ui, stop, ui_env

pytestmark = pytest.mark.e2e  # starts processes or servers (tests/tiers.py)


@contextmanager
def _session(ui: UiServer) -> Iterator[httpx.Client]:
    """A client holding a session opened with the printed token."""
    with httpx.Client(base_url=ui.base, follow_redirects=False, timeout=30) as client:
        r = client.get(f"/?token={ui.token}")
        assert r.status_code == 303
        yield client


def _csrf(client: httpx.Client, path: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', client.get(path).text)
    assert match, "the form carries no CSRF token"
    return match.group(1)


def test_the_first_stdout_line_is_the_loopback_url_with_a_token(ui_server: UiServer) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[A-Za-z0-9_-]{43}", ui_server.url)


def test_a_request_without_token_or_cookie_is_refused(ui_server: UiServer) -> None:
    for path in ("/", f"/memory/{ui_server.ids['deploy']}", "/search?q=deploy", "/static/ui.css"):
        r = httpx.get(ui_server.base + path)
        assert r.status_code == 401, path
        assert "eu-west" not in r.text


def test_a_wrong_token_is_refused_and_opens_no_session(ui_server: UiServer) -> None:
    with httpx.Client(base_url=ui_server.base) as client:
        r = client.get("/?token=" + "x" * 43)
        assert r.status_code == 401
        assert not client.cookies
        assert client.get("/").status_code == 401


def test_the_token_opens_an_httponly_strict_session_and_leaves_the_url(ui_server: UiServer) -> None:
    with httpx.Client(base_url=ui_server.base) as client:
        r = client.get(f"/search?q=terraform&token={ui_server.token}")
        assert r.status_code == 303
        assert r.headers["location"] == "/search?q=terraform"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        assert "Max-Age" not in cookie and "Expires" not in cookie  # ends with the browser
        page = client.get("/search?q=terraform")
        assert page.status_code == 200 and "eu-west-2" in page.text


def test_a_wrong_host_header_is_refused_even_with_token_and_cookie(ui_server: UiServer) -> None:
    with _session(ui_server) as client:
        for host in (f"evil.example:{ui_server.port}", "127.0.0.1", f"127.0.0.1:{ui_server.port + 1}"):
            r = client.get("/", headers={"host": host})
            assert r.status_code == 403, host
            assert "DNS-rebinding" in r.text
        r = httpx.get(ui_server.url, headers={"host": f"rebind.example:{ui_server.port}"})
        assert r.status_code == 403 and "set-cookie" not in r.headers
        assert client.get("/", headers={"host": f"localhost:{ui_server.port}"}).status_code == 200


def test_a_cross_origin_post_is_refused_and_changes_nothing(ui_server: UiServer) -> None:
    target = ui_server.ids["tests"]
    with _session(ui_server) as client:
        csrf = _csrf(client, f"/memory/{target}/forget")
        for headers in ({"origin": "http://evil.example"}, {}, {"origin": "null"},
                        {"origin": f"http://127.0.0.1:{ui_server.port + 1}"}):
            r = client.post(f"/memory/{target}/forget", data={"csrf": csrf}, headers=headers)
            assert r.status_code == 403, headers
    store = ui_server.store()
    try:
        assert store.get(target).state == "active"
    finally:
        store.close()


def test_a_post_without_the_sessions_csrf_token_is_refused(ui_server: UiServer) -> None:
    target = ui_server.ids["tests"]
    origin = {"origin": ui_server.base}
    with _session(ui_server) as client, _session(ui_server) as other:
        other_csrf = _csrf(other, f"/memory/{target}/edit")
        for data in ({"content": "changed"}, {"content": "changed", "csrf": "forged"},
                     {"content": "changed", "csrf": other_csrf}):
            r = client.post(f"/memory/{target}/edit", data=data, headers=origin)
            assert r.status_code == 403, data
            assert "CSRF" in r.text
    store = ui_server.store()
    try:
        assert store.get(target).state == "active"
        assert store.get(target).content.startswith("Run the tests")
    finally:
        store.close()


def test_an_oversized_form_is_refused(ui_server: UiServer) -> None:
    target = ui_server.ids["tests"]
    with _session(ui_server) as client:
        csrf = _csrf(client, f"/memory/{target}/edit")
        r = client.post(f"/memory/{target}/edit", data={"csrf": csrf, "content": "x" * 300_000},
                        headers={"origin": ui_server.base})
        assert r.status_code == 413


def test_every_answer_forbids_scripts_framing_and_referrers(ui_server: UiServer) -> None:
    with _session(ui_server) as client:
        for r in (client.get("/"), httpx.get(ui_server.base + "/")):
            csp = r.headers["content-security-policy"]
            assert "default-src 'none'" in csp and "script-src" not in csp
            assert "frame-ancestors 'none'" in csp
            assert r.headers["referrer-policy"] == "same-origin"
            assert r.headers["cache-control"] == "no-store"


def test_a_token_cannot_open_a_session_by_post(ui_server: UiServer) -> None:
    r = httpx.post(ui_server.url, headers={"origin": ui_server.base})
    assert r.status_code == 403 and "set-cookie" not in r.headers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_port_option_and_a_taken_port_is_a_clear_error(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    port = _free_port()
    proc, url = start_ui(home, project, "--port", str(port))
    try:
        assert url.startswith(f"http://127.0.0.1:{port}/?token=")
        second = subprocess.run([proc.args[0], "ui", "--no-open", "--port", str(port)], cwd=project,
                                capture_output=True, text=True, env=ui_env(home), timeout=60)
        assert second.returncode == 1
        assert second.stdout == ""
        assert f"cannot listen on 127.0.0.1:{port}" in second.stderr
    finally:
        stop(proc)


@pytest.mark.parametrize("value", ["-1", "65536", "eighty"])
def test_a_bad_port_is_a_usage_error(value: str) -> None:
    from bli_memory.core.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(["ui", "--port", value])
    assert exc.value.code == 2


def test_accepted_connections_send_without_waiting_for_delayed_acks() -> None:
    """Nagle off on every connection: otherwise a keep-alive page waits ~40 ms for an ACK."""
    from bli_memory.core.ui.cli import _listen

    listener = _listen(0)
    try:
        with socket.create_connection(listener.getsockname()) as client:
            conn, _ = listener.accept()
            with conn:
                assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
            assert client.fileno() >= 0
    finally:
        listener.close()


def test_the_token_redirect_never_leaves_this_server(ui_server: UiServer) -> None:
    with socket.create_connection(("127.0.0.1", ui_server.port), timeout=30) as conn:
        conn.sendall(f"GET //evil.example/?token={ui_server.token} HTTP/1.1\r\n"
                     f"Host: 127.0.0.1:{ui_server.port}\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head = answer.decode("latin-1").split("\r\n\r\n")[0].lower()
    assert head.startswith("http/1.1 303")
    assert "\r\nlocation: /evil.example/\r\n" in head + "\r\n"
