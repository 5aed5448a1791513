"""The client side: choosing the remote backend, pairing, and the closed network reasons.

HTTP failures are produced by httpx's ``MockTransport`` (the network is replaced, not
our code); the real-socket paths are covered in ``test_e2e.py``.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import httpx
import pytest

from bli_memory.core.errors import ConfigError, InvalidInputError, NotFoundError, ServiceError
from bli_memory.core.paths import session_file_path
from bli_memory.core.plugins import build_backend, get_plugin_manager
from bli_memory.core.settings import load_settings
from bli_memory.core.team.client.pairing import (
    Session,
    check_paired,
    clear_session,
    login,
    read_session,
    write_session,
)
from bli_memory.core.team.client.remote import UNPAIRED_MESSAGE, RemoteBackend

TOKEN = "blim_" + "t" * 43


def _backend_for_env(monkeypatch: pytest.MonkeyPatch, **env: str):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    pm = get_plugin_manager(load_entrypoints=False)
    return build_backend(pm, load_settings())


def test_remote_plugin_answers_first_when_a_service_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _backend_for_env(
        monkeypatch, BLI_MEMORY_DASHBOARD_URL="http://127.0.0.1:9/", BLI_MEMORY_DEVICE_TOKEN=TOKEN
    )
    assert isinstance(backend, RemoteBackend)
    assert backend.base_url == "http://127.0.0.1:9"
    assert TOKEN not in repr(backend)


def test_embedded_engine_answers_when_nothing_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    from bli_memory.core.embedded.engine import EmbeddedBackend

    assert isinstance(_backend_for_env(monkeypatch), EmbeddedBackend)


def test_a_service_without_a_token_is_unpaired(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ServiceError) as err:
        _backend_for_env(monkeypatch, BLI_MEMORY_DASHBOARD_URL="http://127.0.0.1:9")
    assert err.value.reason == "unpaired" and err.value.message == UNPAIRED_MESSAGE
    assert UNPAIRED_MESSAGE.count(".") == 1 and UNPAIRED_MESSAGE.endswith(".")
    with pytest.raises(ServiceError):
        check_paired(load_settings())


def test_a_paired_machine_uses_its_session_and_env_overrides_it(monkeypatch: pytest.MonkeyPatch) -> None:
    write_session(Session(dashboard_url="http://paired.invalid:8765", device_token=TOKEN))
    backend = _backend_for_env(monkeypatch)
    assert isinstance(backend, RemoteBackend) and backend.base_url == "http://paired.invalid:8765"
    assert backend._token == TOKEN
    other = "blim_" + "o" * 43
    backend = _backend_for_env(
        monkeypatch, BLI_MEMORY_DEVICE_TOKEN=other, BLI_MEMORY_DASHBOARD_URL="http://other.invalid"
    )
    assert backend.base_url == "http://other.invalid" and backend._token == other
    # Another URL without its own token: the paired token is never sent there.
    monkeypatch.delenv("BLI_MEMORY_DEVICE_TOKEN")
    with pytest.raises(ServiceError) as err:
        _backend_for_env(monkeypatch, BLI_MEMORY_DASHBOARD_URL="http://other.invalid")
    assert err.value.reason == "unpaired" and "paired with http://paired.invalid:8765" in err.value.message
    same = _backend_for_env(monkeypatch, BLI_MEMORY_DASHBOARD_URL="http://paired.invalid:8765/")
    assert same._token == TOKEN


def test_session_file_is_private_and_round_trips(temp_home: Path) -> None:
    session = Session(
        dashboard_url="https://memory.example.com",
        device_token=TOKEN,
        person="alice",
        device="laptop",
        paired_at="2026-11-30T00:00:00.000000Z",
    )
    path = write_session(session)
    assert path == session_file_path()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert read_session() == session
    assert TOKEN not in repr(session)
    assert clear_session() is True and read_session() is None and clear_session() is False


def test_a_damaged_session_file_is_a_config_error() -> None:
    path = session_file_path()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(ConfigError):
        read_session()
    path.write_text(json.dumps({"dashboard_url": "http://x"}))
    with pytest.raises(ConfigError):
        read_session()


def test_login_checks_the_token_before_writing() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/memory/whoami"
        if request.headers["authorization"] == f"Bearer {TOKEN}":
            return httpx.Response(200, json={"person": "alice", "device": "laptop", "deviceId": "d"})
        return httpx.Response(401, json={"error": {"reason": "unauthorized", "message": "no"}})

    transport = httpx.MockTransport(handler)
    with pytest.raises(ServiceError) as err:
        login("http://svc.invalid", "blim_wrong", transport=transport)
    assert err.value.reason == "http_401"
    assert read_session() is None
    session = login("http://svc.invalid/", TOKEN, transport=transport)
    assert session.person == "alice" and session.dashboard_url == "http://svc.invalid"
    assert read_session() == session
    with pytest.raises(ConfigError):
        login("ftp://svc.invalid", TOKEN, transport=transport)


def _client(handler) -> RemoteBackend:
    return RemoteBackend("http://svc.invalid", token=TOKEN, transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        (httpx.Response(500, text="boom"), "http_500"),
        (httpx.Response(503, json={"error": {"reason": "store_unavailable", "message": "x"}}), "http_503"),
        (httpx.Response(401, json={"error": {"reason": "unauthorized", "message": "x"}}), "http_401"),
        (httpx.Response(200, text="<html>not json</html>"), "bad_response"),
        (httpx.Response(200, json=[1, 2, 3]), "bad_response"),
        (httpx.Response(200, json={"unexpected": True}), "bad_response"),
        (httpx.Response(200, json={"results": [{"memory": {"id": 1}}], "containerTag": "t"}), "bad_response"),
    ],
)
def test_answers_map_to_closed_reasons(response: httpx.Response, reason: str) -> None:
    client = _client(lambda request: response)
    with pytest.raises(ServiceError) as err:
        client.search("q", space="repo_x__1")
    assert err.value.reason == reason
    assert TOKEN not in str(err.value) and "boom" not in str(err.value)


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (httpx.ConnectError("refused"), "dashboard_unreachable"),
        (httpx.RemoteProtocolError("reset"), "dashboard_unreachable"),
        (httpx.ReadError("eof"), "dashboard_unreachable"),
        (httpx.ConnectTimeout("slow"), "timeout"),
        (httpx.ReadTimeout("slow"), "timeout"),
        (httpx.PoolTimeout("busy"), "timeout"),
    ],
)
def test_transport_failures_map_to_closed_reasons(exc: Exception, reason: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    with pytest.raises(ServiceError) as err:
        _client(handler).profile(space="repo_x__1")
    assert err.value.reason == reason


def test_door_verdicts_keep_the_engines_error_classes() -> None:
    def error(status: int, reason: str, message: str):
        body = {"error": {"reason": reason, "message": message}}
        return _client(lambda r: httpx.Response(status, json=body))

    client = error(400, "invalid_input", "content is empty")
    with pytest.raises(InvalidInputError, match="content is empty"):
        client.save("", space="repo_x__1")
    client = error(404, "not_found", "gone")
    with pytest.raises(NotFoundError):
        client.forget(space="repo_x__1", id="x")
    client = error(403, "read_only", "ro")
    with pytest.raises(NotFoundError) as err:
        client.update("x", space="repo_x__1", id="y")
    assert err.value.reason == "read_only"


def test_extract_mode_needs_a_queued_answer() -> None:
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(json.loads(request.content))
        return httpx.Response(202, json={"status": "queued", "jobId": "j-1", "containerTag": "repo_x__1"})

    job = _client(handler).enqueue_extract("User: a\n\nAssistant: b", space="repo_x__1", source="hook")
    assert job == "j-1"
    assert seen["extract"] is True and seen["content"].startswith("User: a")
    client = _client(lambda r: httpx.Response(201, json={"status": "created", "containerTag": "t"}))
    with pytest.raises(ServiceError) as err:
        client.enqueue_extract("text", space="repo_x__1", source="hook")
    assert err.value.reason == "bad_response"


def test_record_turn_posts_to_the_record_door_and_needs_an_id() -> None:
    seen: dict = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["path"] = request.url.path
        seen.update(json.loads(request.content))
        return httpx.Response(201, json={"id": "r-1", "containerTag": "repo_x__1"})

    rec = _client(handler).record_turn("User: a\n\nAssistant: b", space="repo_x__1", source="hook:claude",
                                      session_id="s-1")
    assert rec == "r-1"
    assert seen == {"path": "/api/memory/record", "text": "User: a\n\nAssistant: b",
                    "containerTag": "repo_x__1", "source": "hook:claude", "sessionId": "s-1"}
    client = _client(lambda r: httpx.Response(201, json={"containerTag": "repo_x__1"}))
    with pytest.raises(ServiceError) as err:
        client.record_turn("text", space="repo_x__1", source="hook")
    assert err.value.reason == "bad_response"
    body = {"error": {"reason": "invalid_input", "message": "containerTag is required"}}
    with pytest.raises(InvalidInputError):
        _client(lambda r: httpx.Response(400, json=body)).record_turn("t", space="repo_x__1", source="hook")
    with pytest.raises(ServiceError) as err:
        _client(lambda r: httpx.Response(503, json={})).record_turn("t", space="repo_x__1", source="hook")
    assert err.value.reason == "http_503"


def test_a_service_without_the_documents_doors_answers_no_documents_and_is_asked_no_more() -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(404, json={"error": {"reason": "not_found", "message": "no such door"}})

    client = _client(handler)
    assert client.search_documents("error format", space="repo_x__1") == []
    assert client.document_status("repo_x__1") is None
    assert asked == ["/api/documents/search"]  # the first 404 is remembered
    answer = {"containerTag": "repo_x__1", "state": None, "owner": "alice", "writable": True,
              "lastCommit": None, "forgotten": []}
    fresh = _client(lambda r: httpx.Response(200, json=answer))
    assert fresh.document_status("repo_x__1") is None  # no index yet
    broken = _client(lambda r: httpx.Response(200, json={"results": [{"kind": "document"}]}))
    with pytest.raises(ServiceError) as err:
        broken.search_documents("error format", space="repo_x__1")
    assert err.value.reason == "bad_response"
