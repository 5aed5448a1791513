"""End to end through the real HTTP service: uvicorn in a subprocess on loopback, real hooks,
the real MCP server, real Postgres.

Machines are simulated by separate HOME folders, each paired with its own device token
(``cockpit login`` writes ``~/.config/bli-cockpit/session.json`` there).
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from bli_memory.core.team.client.pairing import login, read_session
from tests.conftest import FIXTURES, bin_path, make_repo
from tests.core.team.conftest import free_port
from tests.hooks_util import run_hook
from tests.mcp_client import run_session, text_of

CLAUDE = FIXTURES / "claude"
REMOTE = "git@github.com:bli-example/payments.git"


def _fixture(name: str, **overrides: Any) -> dict:
    data = json.loads((CLAUDE / name).read_text())
    data.update(overrides)
    return data


def _machine(tmp_path: Path, name: str) -> dict[str, str]:
    home = tmp_path / name
    home.mkdir()
    return {"HOME": str(home)}


def _cli(*args: str, db: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["BLI_MEMORY_DATABASE_URL"] = db
    proc = subprocess.run(
        [bin_path(), "service", *args], capture_output=True, text=True, env=env, timeout=120
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_token_commands(service_db: str) -> None:
    created = _cli("token", "create", "--person", "carol", "--device", "laptop", "--json", db=service_db)
    info = json.loads(created.stdout)
    assert info["token"].startswith("blim_") and info["person"] == "carol"
    listed = _cli("token", "list", "--person", "carol", db=service_db)
    assert info["id"] in listed.stdout and info["token"] not in listed.stdout and "live" in listed.stdout
    plain = _cli("token", "create", "--person", "carol", "--device", "desktop", db=service_db)
    assert plain.stdout.strip().startswith("blim_") and plain.stdout.count("\n") == 1
    assert plain.stdout.strip() not in plain.stderr
    _cli("token", "revoke", info["id"], db=service_db)
    assert "revoked" in _cli("token", "list", "--person", "carol", db=service_db).stdout
    again = _cli("token", "revoke", info["id"], db=service_db, check=False)
    assert again.returncode == 1
    assert _cli("migrate", db=service_db).stdout.strip() == "schema is current"

    # A name nobody has (a typo) is refused, not created; so is a malformed tag.
    for owner, grantee in (("carol", "dave"), ("ghost", "carol")):
        typo = _cli("share", "grant", "--owner", owner, "--space", "repo_x__1", "--to", grantee,
                    db=service_db, check=False)
        assert typo.returncode != 0 and "--create-person" in typo.stderr, typo.stderr
    for bad_tag in ("repo x", "", "a" * 129, "repo/x"):
        bad = _cli("share", "grant", "--owner", "carol", "--space", bad_tag, "--to", "dave",
                   "--create-person", db=service_db, check=False)
        assert bad.returncode != 0 and "invalid container tag" in bad.stderr, bad.stderr
    import psycopg

    with psycopg.connect(service_db) as conn:
        made = conn.execute("SELECT name FROM memory_people WHERE name IN ('dave', 'ghost')").fetchall()
    assert made == []
    bad_alias = _cli("alias", "add", "old tag", "repo_x__1", db=service_db, check=False)
    assert bad_alias.returncode != 0 and "invalid container tag" in bad_alias.stderr
    grant = _cli(
        "share", "grant", "--owner", "carol", "--space", "repo_x__1", "--to", "dave", "--write",
        "--create-person", db=service_db,
    )
    assert "dave may write carol's space repo_x__1" in grant.stdout
    assert _cli(
        "share", "revoke", "--owner", "carol", "--space", "repo_x__1", "--to", "dave", db=service_db
    ).stdout
    gone = _cli(
        "share",
        "revoke",
        "--owner",
        "carol",
        "--space",
        "repo_x__1",
        "--to",
        "dave",
        db=service_db,
        check=False,
    )
    assert gone.returncode == 1
    assert "names the space" in _cli("alias", "add", "repo_old__1", "repo_x__1", db=service_db).stdout
    usage = _cli("token", db=service_db, check=False)
    assert usage.returncode == 2


def test_two_machines_share_and_another_person_sees_nothing(
    start_service, tmp_path: Path, service_db: str
) -> None:
    svc = start_service()
    tokens = {}
    for person, device in (("dana", "laptop"), ("dana", "desktop"), ("erik", "laptop")):
        out = _cli("token", "create", "--person", person, "--device", device, "--json", db=service_db)
        tokens[(person, device)] = json.loads(out.stdout)["token"]

    laptop, desktop, erik = (_machine(tmp_path, n) for n in ("laptop", "desktop", "erik"))
    # Two clones of one repository: the same remote names the same space on every machine.
    repo_a = make_repo(tmp_path / "work-a" / "payments", REMOTE)
    repo_b = make_repo(tmp_path / "work-b" / "payments", REMOTE)
    for env, key in (
        (laptop, ("dana", "laptop")),
        (desktop, ("dana", "desktop")),
        (erik, ("erik", "laptop")),
    ):
        session = login(svc.url, tokens[key], environ=env)
        assert session.person == key[0] and session.device == key[1]
        assert read_session(env) == session

    fact = "Refunds over 500 EUR need a second approver from finance."

    async def save(client: Any) -> Any:
        return await client.call_tool("save_memory", {"content": fact})

    saved = run_session(repo_a, save, **laptop)
    assert not saved.is_error, text_of(saved)
    assert saved.structured_content["status"] == "created"

    # The other machine of the same person recalls it in its prompt hook.
    prompt = _fixture("prompt.json", cwd=str(repo_b), prompt="who has to approve a large refund?")
    r = run_hook("prompt", prompt, cwd=repo_b, env=desktop)
    assert r.receipt[0] == "ok", r.stderr
    assert r.receipt[1]["hits"] >= 1 and fact in (r.context or "")

    r = run_hook("session-start", _fixture("session_start.json", cwd=str(repo_b), session_id="a-new-session"),
                 cwd=repo_b, env=desktop)
    assert r.receipt[0] == "ok" and fact in (r.context or "")

    # Another person with the same repository sees none of it.
    r = run_hook("prompt", prompt, cwd=repo_b, env=erik)
    assert r.receipt == ("ok", {**r.receipt[1], "hits": 0}) and r.stdout == ""

    async def search(client: Any) -> Any:
        return await client.call_tool("search_memory", {"query": "refund approver finance"})

    res = run_session(repo_b, search, **erik)
    assert not res.is_error and res.structured_content["count"] == 0

    # The stop hook queues the exchange (202) and the service distils it after answering.
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        (CLAUDE / "transcript.jsonl")
        .read_text()
        .replace("What is my favourite colour?", "From now on we always use ruff for linting python code.")
        .replace("Hello from the fake model.", "Noted, ruff it is.")
    )
    r = run_hook(
        "stop",
        _fixture(
            "stop.json",
            cwd=str(repo_a),
            transcript_path=str(transcript),
            last_assistant_message="Noted, ruff it is.",
        ),
        cwd=repo_a,
        env=laptop,
    )
    assert r.returncode == 0 and r.stdout == ""
    outcome, fields = r.receipt
    assert outcome == "ok" and fields["queued"] is True and "saved" not in fields

    # Another session than the one that captured it (a session is not given its own memories).
    linter = _fixture("prompt.json", cwd=str(repo_b), prompt="which linter do we use for python?",
                      session_id="a-later-session")
    deadline = time.monotonic() + 60
    while True:
        r = run_hook("prompt", linter, cwd=repo_b, env=desktop)
        if "ruff" in (r.context or ""):
            break
        if time.monotonic() > deadline:
            lines = [ln for ln in svc.stderr().splitlines() if "door search" not in ln]
            pytest.fail("the extract job never landed:\n" + "\n".join(lines[-40:]) + r.stderr)
        time.sleep(0.5)
    assert "[bli-memory] extract job done" in svc.stderr()

    # Tokens never reach a log line, on either side.
    logs = svc.stderr() + r.stderr
    for token in tokens.values():
        assert token not in logs
        assert token[5:] not in logs


def test_service_killed_mid_save_loses_nothing_acknowledged(start_service, admin: Any, new_person) -> None:
    from bli_memory.core.errors import BliMemoryError
    from bli_memory.core.team.client.remote import RemoteBackend

    port = free_port()
    svc = start_service(port=port)
    person = new_person()
    space = f"repo_kill__{uuid.uuid4().hex[:12]}"
    acked: list[str] = []
    jobs: list[str] = []
    failures: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(n: int) -> None:
        client = RemoteBackend(svc.url, token=person.token, timeout=10)
        i = 0
        while not stop.is_set():
            i += 1
            try:
                if i % 5 == 0:
                    job = client.enqueue_extract(
                        f"User: note {n}-{i}\n\nAssistant: ok", space=space, source="t"
                    )
                    with lock:
                        jobs.append(job)
                else:
                    res = client.save(f"writer {n} fact {i}: {uuid.uuid4().hex}", space=space)
                    with lock:
                        acked.append(res.memory.id)
            except BliMemoryError as exc:
                with lock:
                    failures.append(exc.reason)
                time.sleep(0.02)
        client.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(acked) < 40 and time.monotonic() < deadline:
        time.sleep(0.05)
    svc.kill()  # SIGKILL: no graceful shutdown, requests in flight are cut
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(30)
    assert len(acked) >= 40
    assert failures and set(failures) <= {"dashboard_unreachable", "timeout"}

    start_service(port=port)  # the same address comes back
    backend = admin.for_person(admin.ensure_person(person.name))
    for memory_id in acked:
        assert backend.history(memory_id)[0].state == "active"
    for job_id in jobs:
        assert admin.jobs.job(job_id) is not None


def test_hook_against_a_dead_service(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens here
    env = {"BLI_MEMORY_DASHBOARD_URL": url, "BLI_MEMORY_DEVICE_TOKEN": "blim_" + "x" * 43}
    project = tmp_path / "p"
    project.mkdir()
    r = run_hook(
        "prompt",
        _fixture("prompt.json", cwd=str(project), prompt="what did we decide about caching?"),
        env=env,
        timeout=30,
    )
    assert r.returncode == 0 and r.stdout == ""
    outcome, fields = r.receipt
    assert outcome == "failed" and fields["reason"] == "dashboard_unreachable"
    assert fields["elapsed_ms"] <= fields["deadline_ms"]

    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((CLAUDE / "transcript.jsonl").read_bytes())
    r = run_hook("stop", _fixture("stop.json", cwd=str(project), transcript_path=str(transcript)), env=env)
    # The turn is kept in the local spool for later (tests/core/team/test_spool.py), not lost.
    outcome, fields = r.receipt
    assert outcome == "ok" and fields["spooled"] is True and fields["queued"] is False
    assert fields["service"] == "dashboard_unreachable" and r.stdout == ""
    assert env["BLI_MEMORY_DEVICE_TOKEN"] not in r.stderr + r.stdout


@pytest.fixture
def hanging_server() -> Any:
    """A TCP server that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not done.is_set():
            try:
                conn, _ = sock.accept()
                held.append(conn)
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    done.set()
    t.join(5)
    for c in held:
        c.close()
    sock.close()


@pytest.mark.deadline
@pytest.mark.parametrize(("event", "deadline_ms"), [("prompt", 2000), ("session-start", 8000)])
def test_hook_against_a_hanging_service_gives_up_at_its_deadline(
    hanging_server: str, tmp_path: Path, event: str, deadline_ms: int
) -> None:
    env = {"BLI_MEMORY_DASHBOARD_URL": hanging_server, "BLI_MEMORY_DEVICE_TOKEN": "blim_" + "y" * 43}
    project = tmp_path / "p"
    project.mkdir()
    name = "prompt.json" if event == "prompt" else "session_start.json"
    payload = _fixture(
        name,
        cwd=str(project),
        **({"prompt": "what did we decide about caching?"} if event == "prompt" else {}),
    )
    started = time.monotonic()
    r = run_hook(event, payload, env=env, timeout=60)
    wall = time.monotonic() - started
    assert r.returncode == 0 and r.stdout == ""
    outcome, fields = r.receipt
    assert outcome == "failed" and fields["reason"] == "timeout"
    assert fields["deadline_ms"] == deadline_ms
    assert wall < deadline_ms / 1000 + 10  # generous: proves "did not hang", not a speed


def test_hook_with_a_service_but_no_token_reports_unpaired(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    r = run_hook(
        "prompt",
        _fixture("prompt.json", cwd=str(project), prompt="what did we decide about caching?"),
        env={"BLI_MEMORY_DASHBOARD_URL": f"http://127.0.0.1:{free_port()}"},
    )
    assert r.returncode == 0 and r.stdout == ""
    assert r.reason == "unpaired"


def test_revoked_token_gives_http_401_in_the_hook(
    start_service, admin: Any, new_person, tmp_path: Path
) -> None:
    svc = start_service()
    person = new_person()
    admin.revoke_token(person.token_id)
    project = tmp_path / "p"
    project.mkdir()
    r = run_hook(
        "prompt",
        _fixture("prompt.json", cwd=str(project), prompt="what did we decide about caching?"),
        env={"BLI_MEMORY_DASHBOARD_URL": svc.url, "BLI_MEMORY_DEVICE_TOKEN": person.token},
    )
    assert r.reason == "http_401"
    assert person.token not in svc.stderr() + r.stderr
