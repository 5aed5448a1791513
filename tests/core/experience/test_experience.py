"""The experience log: exact line and sidecar formats, refusals, sync, the CLI and the MCP tool.

Sync runs against a real HTTP server on 127.0.0.1 (standard library ``http.server`` in a
thread) that answers like the service door: 201 insert, 200 identical retry, 400
invalid, 409 same UUID with other content.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from bli_memory.core.errors import ConfigError, InvalidInputError
from bli_memory.core.experience import log as xp
from bli_memory.core.experience.origin import host_conventions
from bli_memory.core.settings import load_settings
from tests.conftest import bin_path

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

T0 = datetime(2026, 11, 30, 7, 5, 9, tzinfo=UTC)  # 14:05 in Bangkok
HOST_VARS = [var for conv in host_conventions() for var in conv.env_markers]


@pytest.fixture(autouse=True)
def _no_host_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in HOST_VARS:
        monkeypatch.delenv(var, raising=False)


def log_text(home: Path) -> str:
    return (home / ".codex" / "AGENT-EXPERIENCE.md").read_text(encoding="utf-8")


def sidecar(home: Path, entry_id: str) -> dict[str, Any]:
    return json.loads((home / ".codex" / "agent-experience-outbox" / f"{entry_id}.json").read_text())


def outbox_files(home: Path) -> list[str]:
    box = home / ".codex" / "agent-experience-outbox"
    return sorted(p.name for p in box.glob("*.json")) if box.exists() else []


def rec(verdict: str = "win", store: str = "bli", reason: str = "The dated decision answered it",
        **kw: Any) -> xp.Entry:
    kw.setdefault("agent", "claude-code")
    kw.setdefault("project", "bli-memory")
    kw.setdefault("person", "edward")
    return xp.record(verdict, store, reason, **kw)


# --- the line and the sidecar ------------------------------------------------------


def test_entry_lands_in_the_log_and_the_outbox_with_the_exact_formats(temp_home: Path) -> None:
    e1 = rec("win", "bli", "The dated decision answered the question directly", now=T0)
    e2 = rec("loss", "supermemory", "Recalled a stale port number", now=T0 + timedelta(minutes=1))
    e3 = rec("noise", "both", "Both injected the same README line", now=T0 + timedelta(minutes=2))
    assert log_text(temp_home) == (
        "- 2026-11-30 14:05 ICT · claude-code · bli-memory · bli [bli] · win: "
        "The dated decision answered the question directly\n"
        "- 2026-11-30 14:06 ICT · claude-code · bli-memory · supermemory ◪ · loss: "
        "Recalled a stale port number\n"
        "- 2026-11-30 14:07 ICT · claude-code · bli-memory · both [bli]+◪ · noise: "
        "Both injected the same README line\n"
    )
    assert outbox_files(temp_home) == sorted(f"{e.id}.json" for e in (e1, e2, e3))
    data = sidecar(temp_home, e1.id)
    assert data == {
        "schema": "bli-memory-experience.v1", "id": e1.id, "created_at": "2026-11-30T07:05:09.000000Z",
        "store": "bli", "marker": "[bli]", "verdict": "win",
        "reason": "The dated decision answered the question directly", "agent": "claude-code",
        "project": "bli-memory", "person": "edward", "device": e1.device, "line": log_text(temp_home)
        .splitlines()[0], "masked": 0, "shipped": False, "shipped_at": None, "shipped_to": None,
        "attempts": 0, "last_attempt_at": None, "last_error": None, "conflict": None, "rejected": None,
    }
    assert str(e1.id) == str(__import__("uuid").UUID(e1.id))  # a real UUID
    assert sidecar(temp_home, e3.id)["marker"] == "[bli]+◪"


def test_the_time_zone_is_a_setting(temp_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLI_MEMORY_EXPERIENCE_TZ", "UTC")
    assert rec(now=T0).line.startswith("- 2026-11-30 07:05 UTC · ")
    monkeypatch.setenv("BLI_MEMORY_EXPERIENCE_TZ", "Europe/Berlin")
    assert rec(now=T0).line.startswith("- 2026-11-30 08:05 CET · ")
    assert rec(now=T0 + timedelta(days=-150)).line.startswith("- 2026-07-03 09:05 CEST · ")
    monkeypatch.setenv("BLI_MEMORY_EXPERIENCE_TZ", "Asia/Bangkok")
    assert rec(now=T0).line.startswith("- 2026-11-30 14:05 ICT · ")
    monkeypatch.setenv("BLI_MEMORY_EXPERIENCE_TZ", "Asia/Kolkata")
    assert rec(now=T0).line.startswith("- 2026-11-30 12:35 IST · ")
    monkeypatch.setenv("BLI_MEMORY_EXPERIENCE_TZ", "Mars/Olympus")
    with pytest.raises(ConfigError, match="BLI_MEMORY_EXPERIENCE_TZ"):
        rec(now=T0)


def test_agent_and_project_are_derived(temp_home: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "my-project"
    folder.mkdir()
    e = xp.record("win", "bli", "helped", cwd=str(folder), now=T0)
    assert " · cli · my-project · bli [bli] · " in e.line
    monkeypatch.setenv("CLAUDECODE", "1")
    assert xp.record("win", "bli", "helped", cwd=str(folder)).agent == "claude-code"
    monkeypatch.delenv("CLAUDECODE")
    monkeypatch.setenv("GEMINI_CLI", "1")
    assert xp.detect_agent() == "gemini-cli"
    assert xp.detect_agent({}, client_name="codex-mcp-client") == "codex"
    assert xp.detect_agent({}, client_name="Some Client") == "Some-Client"
    assert xp.project_from_space("repo_bli-memory__0123456789abcdef") == "bli-memory"
    assert xp.project_from_space("dir_notes__fedcba9876543210") == "notes"
    assert xp.project_from_space("team-forced") == "team-forced"
    # A flag value cannot break the line's separators.
    e = xp.record("win", "bli", "ok then fine", agent="a · b", project="x\ny", now=T0)
    assert e.line.split(" · ")[1:3] == ["a-b", "x-y"]


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("first line\nsecond line", "one line"),
        ("first line\r\nsecond line", "one line"),
        ("a\rb", "one line"),
        ("a\u2028b", "one line"),
        ("x" * 501, "501 characters; at most 500"),
        ("   ", "empty"),
        ("bell\x07", "control character"),
    ],
)
def test_bad_reasons_are_refused_and_nothing_is_written(temp_home: Path, reason: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        rec(reason=reason)
    assert not (temp_home / ".codex" / "AGENT-EXPERIENCE.md").exists()
    assert outbox_files(temp_home) == []


def test_bad_verdict_or_store_is_refused(temp_home: Path) -> None:
    with pytest.raises(InvalidInputError, match="verdict must be one of win, loss, noise"):
        rec(verdict="meh")
    with pytest.raises(InvalidInputError, match="store must be one of bli, supermemory, both"):
        rec(store="vendor")
    assert outbox_files(temp_home) == []


def test_500_characters_is_accepted_and_secrets_are_masked(temp_home: Path) -> None:
    e = rec(reason="y" * 500)
    assert e.reason == "y" * 500 and e.line.endswith(": " + "y" * 500)
    key = "sk-ant-api03-" + "A1b2C3d4" * 4
    e = rec(reason=f"recalled the key {key} from a transcript")
    assert key not in log_text(temp_home) and key not in json.dumps(sidecar(temp_home, e.id))
    assert e.reason == "recalled the key [REDACTED:anthropic_api_key] from a transcript" and e.masked == 1
    # Masking can lengthen a reason; the limit holds after it too.
    with pytest.raises(InvalidInputError, match="after masking 1 secret"):
        rec(reason="z" * 480 + " password=hunter2x9")  # 499 characters, 511 once masked


# --- a real door on loopback -------------------------------------------------------


class Door:
    """The experience door's status codes, served by ``http.server`` on 127.0.0.1."""

    def __init__(self, token: str = "device-token-1") -> None:
        self.token = token
        self.rows: dict[str, dict[str, Any]] = {}
        self.arrivals: list[str] = []
        self.fail_at: int | None = None  # 1-based request number answered 503
        self.lose_answer: set[str] = set()  # ids stored, then the connection dropped (once)
        self.lock = threading.Lock()
        door = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/api/memory/experience":
                    return self._answer(404, {"error": "not_found"})
                if self.headers.get("Authorization") != f"Bearer {door.token}":
                    return self._answer(401, {"error": "unauthorized"})
                try:
                    entry = json.loads(body)
                    assert set(entry) <= {"id", "store", "verdict", "reason", "created_at"}
                    assert entry["store"] in xp.STORES and entry["verdict"] in xp.VERDICTS
                    assert "\n" not in entry["reason"] and len(entry["reason"]) <= 500
                except (ValueError, KeyError, AssertionError):
                    return self._answer(400, {"error": "invalid_input"})
                with door.lock:
                    door.arrivals.append(entry["id"])
                    if door.fail_at is not None and len(door.arrivals) >= door.fail_at:
                        return self._answer(503, {"error": "unavailable"})
                    known = door.rows.get(entry["id"])
                    if known is None:
                        door.rows[entry["id"]] = entry
                        status = 201
                    else:
                        status = 200 if known == entry else 409
                    if entry["id"] in door.lose_answer:
                        door.lose_answer.discard(entry["id"])
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return None
                return self._answer(status, {"id": entry["id"]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def door(monkeypatch: pytest.MonkeyPatch) -> Iterator[Door]:
    d = Door()
    monkeypatch.setenv("BLI_MEMORY_DASHBOARD_URL", d.url)
    monkeypatch.setenv("BLI_MEMORY_DEVICE_TOKEN", d.token)
    try:
        yield d
    finally:
        d.close()


def record_many(n: int) -> list[xp.Entry]:
    """``n`` entries recorded in shuffled time order; returned oldest first."""
    offsets = list(range(n))
    random.Random(7).shuffle(offsets)
    entries = [rec(reason=f"opinion number {i}", now=T0 + timedelta(seconds=i)) for i in offsets]
    return sorted(entries, key=lambda e: e.created_at)


def test_sync_ships_in_created_order_at_most_20_per_tick(temp_home: Path, door: Door) -> None:
    entries = record_many(25)
    first = xp.sync()
    assert first.target == "service" and first.attempted == 20 and first.reason is None
    assert door.arrivals == [e.id for e in entries[:20]]
    assert list(first.shipped) == [e.id for e in entries[:20]] and first.queued == 5
    assert [sidecar(temp_home, e.id)["shipped"] for e in entries] == [True] * 20 + [False] * 5
    assert sidecar(temp_home, entries[0].id)["shipped_to"] == "service"
    second = xp.sync()
    assert door.arrivals[20:] == [e.id for e in entries[20:]] and second.queued == 0
    assert door.rows[entries[3].id] == entries[3].payload()  # the door saw exactly the entry
    assert xp.sync().attempted == 0  # nothing left: nothing sent
    assert len(door.arrivals) == 25


def test_sync_stops_at_the_first_failure_and_never_raises(temp_home: Path, door: Door) -> None:
    entries = record_many(6)
    door.fail_at = 3
    report = xp.sync()
    assert list(report.shipped) == [entries[0].id, entries[1].id]
    assert report.failed == entries[2].id and report.reason == "http_503" and report.queued == 4
    assert door.arrivals == [e.id for e in entries[:3]]  # nothing after the failure was sent
    failed = sidecar(temp_home, entries[2].id)
    assert failed["shipped"] is False and failed["attempts"] == 1 and failed["last_error"] == "http_503"
    assert sidecar(temp_home, entries[3].id)["attempts"] == 0
    door.fail_at = None
    report = xp.sync()
    assert list(report.shipped) == [e.id for e in entries[2:]] and report.queued == 0
    assert sidecar(temp_home, entries[2].id)["attempts"] == 2


def test_a_lost_answer_is_retried_under_the_same_uuid(temp_home: Path, door: Door) -> None:
    entries = record_many(3)
    door.lose_answer.add(entries[1].id)
    report = xp.sync()
    assert list(report.shipped) == [entries[0].id]
    assert report.failed == entries[1].id and report.reason == "dashboard_unreachable"
    assert entries[1].id in door.rows  # the door kept it; only the answer was lost
    assert sidecar(temp_home, entries[1].id)["shipped"] is False
    report = xp.sync()
    assert list(report.shipped) == [entries[1].id, entries[2].id]
    assert door.arrivals.count(entries[1].id) == 2 and len(door.rows) == 3  # one row, sent twice
    assert sidecar(temp_home, entries[1].id)["shipped"] is True


def test_a_conflicting_uuid_is_recorded_and_not_retried(temp_home: Path, door: Door) -> None:
    entries = record_many(3)
    door.rows[entries[0].id] = {**entries[0].payload(), "verdict": "loss"}
    report = xp.sync()
    assert list(report.conflicts) == [entries[0].id]
    assert list(report.shipped) == [entries[1].id, entries[2].id] and report.queued == 0
    held = sidecar(temp_home, entries[0].id)
    assert held["shipped"] is False and held["conflict"]["status"] == 409 and held["last_error"] == "conflict"
    assert xp.sync().attempted == 0
    assert door.arrivals.count(entries[0].id) == 1


def test_a_rejected_entry_is_recorded_and_the_tick_goes_on(temp_home: Path, door: Door) -> None:
    entries = record_many(2)
    path = temp_home / ".codex" / "agent-experience-outbox" / f"{entries[0].id}.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "reason": "edited\nby hand"}))
    report = xp.sync()
    assert list(report.rejected) == [entries[0].id] and list(report.shipped) == [entries[1].id]
    assert sidecar(temp_home, entries[0].id)["rejected"]["status"] == 400


def test_an_unreachable_or_unpaired_service_leaves_entries_queued(temp_home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv("BLI_MEMORY_DASHBOARD_URL", dead)
    monkeypatch.setenv("BLI_MEMORY_DEVICE_TOKEN", "device-token-1")
    e = rec()
    report = xp.sync()
    assert report.reason == "dashboard_unreachable" and report.failed == e.id and report.queued == 1
    monkeypatch.delenv("BLI_MEMORY_DEVICE_TOKEN")
    door = Door()
    try:
        monkeypatch.setenv("BLI_MEMORY_DASHBOARD_URL", door.url)
        report = xp.sync()  # a URL but no token: unpaired, nothing sent
        assert report.reason == "unpaired" and report.attempted == 0 and door.arrivals == []
        monkeypatch.setenv("BLI_MEMORY_DEVICE_TOKEN", "wrong")
        assert xp.sync().reason == "http_401"
    finally:
        door.close()
    assert sidecar(temp_home, e.id)["shipped"] is False


def test_the_paired_session_file_is_used(temp_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bli_memory.core.team.client.pairing import Session, write_session

    door = Door(token="paired-token")
    try:
        write_session(Session(dashboard_url=door.url, device_token="paired-token", person="alice"))
        e = xp.record("win", "bli", "paired and shipped", agent="codex", project="p")
        assert e.person == "alice"
        assert list(xp.sync().shipped) == [e.id] and door.rows[e.id]["reason"] == "paired and shipped"
    finally:
        door.close()


def test_embedded_mode_keeps_entries_in_the_local_store(temp_home: Path) -> None:
    from bli_memory.core.embedded.store import SQLiteStore
    from bli_memory.core.memory import embeddings

    entries = record_many(22)
    first = xp.sync()
    assert first.target == "local" and first.attempted == 20 and first.queued == 2
    assert xp.sync().queued == 0
    settings = load_settings()
    store = SQLiteStore(settings.store_path, model_name=embeddings.MODEL_NAME,
                        dimensions=embeddings.DIMENSIONS)
    try:
        rows = store.experience.experience_page(since="2000-01-01T00:00:00Z", limit=100)
        assert [r["id"] for r in rows] == [e.id for e in reversed(entries)]  # newest first
        assert rows[-1] == {"id": entries[0].id, "store": "bli", "verdict": "win",
                            "reason": entries[0].reason, "created_at": entries[0].created_at,
                            "person": "edward", "device": entries[0].device, "agent": "claude-code",
                            "project": "bli-memory"}
        page = store.experience.experience_page(since="2000-01-01T00:00:00Z", limit=5,
                                     before=(rows[4]["created_at"], rows[4]["id"]))
        assert [r["id"] for r in page] == [r["id"] for r in rows[5:10]]
        # The store keeps the door's retry rules.
        assert store.experience.add_experience(entries[0].payload()) == "identical"
        assert store.experience.add_experience({**entries[0].payload(), "reason": "other"}) == "conflict"
    finally:
        store.close()
    assert all(sidecar(temp_home, e.id)["shipped_to"] == "local" for e in entries)


def test_log_experience_returns_the_receipt(temp_home: Path) -> None:
    receipt = xp.log_experience("win", "bli", "one call", agent="cli", project="p")
    d = receipt.as_dict()
    assert d["id"] == receipt.entry.id and d["shipped"] is True and d["shipped_to"] == "local"
    assert d["receipt"]["line"] == log_text(temp_home).rstrip("\n")
    assert Path(d["receipt"]["sidecar"]).name == f"{receipt.entry.id}.json"


# --- real processes ----------------------------------------------------------------


def cockpit(*args: str, stdin: str | None = None, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in HOST_VARS}
    full.update(env or {})
    return subprocess.run([bin_path("cockpit"), *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, env=full, timeout=120)


def test_cockpit_memory_log_subprocess(temp_home: Path, tmp_path: Path) -> None:
    work = tmp_path / "shop"
    work.mkdir()
    r = cockpit("memory", "log", "win", "--store", "bli",
                "The dated decision answered the question directly", "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["shipped"] is True and out["shipped_to"] == "local"
    line = out["receipt"]["line"]
    assert line.endswith(" · cli · shop · bli [bli] · win: The dated decision answered the question directly")
    assert log_text(temp_home) == line + "\n"
    assert sidecar(temp_home, out["id"])["shipped"] is True

    r = cockpit("memory", "log", "noise", "--store", "both", "--reason-stdin", "--json",
                stdin="Both stores injected the same line\n", cwd=work, env={"CLAUDECODE": "1"})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["receipt"]["line"].endswith(
        " · claude-code · shop · both [bli]+◪ · noise: Both stores injected the same line")

    r = cockpit("memory", "log", "loss", "--store", "supermemory", "Recalled a stale port", cwd=work)
    assert r.returncode == 0 and r.stdout.startswith("Recorded loss for supermemory ◪ (entry ")
    assert "Shipped to the local store." in r.stdout


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (("--reason-stdin",), "line one\nline two\n", "must be one line"),
        (("x" * 501,), None, "501 characters; at most 500"),
        ((), None, "a reason is required"),
        (("--reason-stdin", "also an argument"), "x", "not both"),
    ],
)
def test_cockpit_memory_log_refuses_clearly(temp_home: Path, args: tuple[str, ...], stdin: str | None,
                                            message: str) -> None:
    r = cockpit("memory", "log", "win", "--store", "bli", *args, stdin=stdin)
    assert r.returncode == 2 and message in r.stderr and r.stderr.startswith("cockpit memory log: refused:")
    assert outbox_files(temp_home) == []


def test_cockpit_memory_log_bad_choice(temp_home: Path) -> None:
    r = cockpit("memory", "log", "great", "--store", "bli", "x")
    assert r.returncode == 2 and "invalid choice: 'great'" in r.stderr
    r = cockpit("memory", "log", "win", "--store", "vendor", "x", "--json")
    assert r.returncode == 2 and json.loads(r.stdout)["error"] == "invalid_input"


def test_cockpit_memory_log_queues_when_the_service_is_down(temp_home: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    r = cockpit("memory", "log", "win", "--store", "bli", "kept for later", "--json",
                env={"BLI_MEMORY_DASHBOARD_URL": dead, "BLI_MEMORY_DEVICE_TOKEN": "t"})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["shipped"] is False and out["sync"]["reason"] == "dashboard_unreachable"
    assert sidecar(temp_home, out["id"])["shipped"] is False


def test_memory_experience_through_the_mcp_client(temp_home: Path, tmp_path: Path) -> None:
    from tests.mcp_client import run_session, text_of

    work = tmp_path / "atelier"
    work.mkdir()

    async def body(client: Any) -> Any:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        schema = tools["memory_experience"].input_schema
        ok = await client.call_tool("memory_experience",
                                    {"store": "both", "verdict": "win", "reason": "Joint recall was right"})
        bad = await client.call_tool("memory_experience",
                                     {"store": "bli", "verdict": "loss", "reason": "two\nlines"})
        return schema, ok, bad

    schema, ok, bad = run_session(work, body)
    assert schema["required"] == ["store", "verdict", "reason"]
    assert schema["properties"]["store"]["enum"] == ["bli", "supermemory", "both"]
    assert not ok.is_error
    out = ok.structured_content
    assert out["marker"] == "[bli]+◪" and out["shipped"] is True and out["shippedTo"] == "local"
    assert out["line"].endswith(" · atelier · both [bli]+◪ · win: Joint recall was right")
    assert log_text(temp_home) == out["line"] + "\n"
    assert "Recorded win for both [bli]+◪" in text_of(ok)
    assert bad.is_error and "invalid_input" in text_of(bad) and "one line" in text_of(bad)
    assert len(outbox_files(temp_home)) == 1
