"""The memory controls on the service: info, list, get, audit, export, import, recording.

Real Postgres, the app in-process (``client``) or as a real subprocess
(``start_service``), the real CLI and the real MCP server through the official MCP
client. The contract suite (``tests/contract``) checks that the controls answer alike
on every backend; these tests check what only the service has: people, moving from
the embedded store, audit scope, pages and limits.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bli_memory.core.team.client.remote import RemoteBackend
from tests.conftest import bin_path
from tests.mcp_client import run_session, text_of

FACTS = [
    "The frontend is written in TypeScript with React.",
    "Database migrations are applied with Alembic.",
    "The mobile app ships every two weeks.",
    "Our error tracker is Sentry.",
    "Secrets live in Vault, never in the repository.",
    "Load tests run against the staging cluster in eu-west-1.",
    "The design system uses eight pixel spacing.",
    "Nightly backups are kept for thirty days.",
    "Deploys to eu-west-1 fail until BLI-3580 is merged.",
    "The getUserName helper lives in accounts/names.py.",
]
QUERIES = [
    "where do we keep credentials?",
    "how are database schema changes applied?",
    "eu-west-1",
    "BLI-3580",
    "getUserName",
    "how long do we retain backups",
    "release cadence of the phone app",
    "staging cluster load tests",
]


def _cli(*args: str, env: dict[str, str] | None = None, stdin: str | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    full.update(env or {})
    return subprocess.run([bin_path(), "memory", *args], capture_output=True, text=True, env=full,
                          input=stdin, cwd=cwd, timeout=300)


def _post(client: Any, person: Any, door: str, body: dict[str, Any]) -> Any:
    return client.post(f"/api/memory/{door}", headers=person.headers, json=body)


def _seed_embedded(space: str) -> tuple[Any, dict[str, str]]:
    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.paths import store_path

    local = EmbeddedBackend(store_path())
    ids = {f: local.save(f, space=space).memory.id for f in FACTS}
    old = local.save("Code review needs one approval.", space=space, custom_id="review").memory
    local.update("Code review needs two approvals.", space=space, id=old.id)
    gone = local.save("The VPN password rotates monthly.", space=space).memory
    local.forget(space=space, id=gone.id)
    return local, ids


def test_move_from_the_embedded_store_to_the_service(start_service, new_person, tmp_path: Path) -> None:
    space = f"repo_move__{uuid.uuid4().hex[:12]}"
    local, _ = _seed_embedded(space)
    before = {q: [(h.memory.id, h.channels) for h in local.search(q, space=space).hits] for q in QUERIES}
    local_sims = {q: [h.similarity for h in local.search(q, space=space).hits] for q in QUERIES}
    local.close()
    assert all(before.values())

    exported = _cli("export", cwd=tmp_path)  # no service configured: the embedded store
    assert exported.returncode == 0, exported.stderr
    dump = tmp_path / "memories.jsonl"
    dump.write_text(exported.stdout, encoding="utf-8")
    assert len(exported.stdout.splitlines()) == len(FACTS) + 3

    svc = start_service()
    person = new_person()
    service_env = {"BLI_MEMORY_DASHBOARD_URL": svc.url, "BLI_MEMORY_DEVICE_TOKEN": person.token}
    imported = _cli("import", str(dump), env=service_env, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout == f"imported {len(FACTS) + 3}, skipped 0 (already present)\n"

    remote = RemoteBackend(svc.url, token=person.token)
    try:
        after = {q: [(h.memory.id, h.channels) for h in remote.search(q, space=space).hits] for q in QUERIES}
        remote_sims = {q: [h.similarity for h in remote.search(q, space=space).hits] for q in QUERIES}
        assert after == before  # the same memories, in the same order, found by the same channels
        for q in QUERIES:
            assert remote_sims[q] == pytest.approx(local_sims[q], abs=1e-3)
        assert remote.info(space=space)["counts"] == {"active": len(FACTS) + 1, "superseded": 1,
                                                      "forgotten": 1}
    finally:
        remote.close()

    # The service's export of the moved rows is the embedded export, byte for byte.
    again = _cli("export", env=service_env, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == exported.stdout
    twice = _cli("import", str(dump), env=service_env, cwd=tmp_path)
    assert twice.stdout == f"imported 0, skipped {len(FACTS) + 3} (already present)\n"

    listed = _cli("list", "--space", space, "--json", env=service_env, cwd=tmp_path)
    rows = json.loads(listed.stdout)
    assert rows[0]["content"] == "Code review needs two approvals." and len(rows) == len(FACTS) + 1
    got = json.loads(_cli("get", rows[0]["id"], "--json", env=service_env, cwd=tmp_path).stdout)
    assert [m["content"] for m in got["history"]] == ["Code review needs one approval."]
    audit = _cli("audit", "--json", env=service_env, cwd=tmp_path)
    assert audit.returncode == 0 and json.loads(audit.stdout)["ok"] is True


def test_mcp_controls_answer_with_the_service_configured(
    start_service, new_person, admin: Any, tmp_path: Path
) -> None:
    svc = start_service()
    person = new_person()
    env = {"BLI_MEMORY_DASHBOARD_URL": svc.url, "BLI_MEMORY_DEVICE_TOKEN": person.token}
    space = f"repo_mcp__{uuid.uuid4().hex[:12]}"

    async def body(client: Any) -> Any:
        async def call(name: str, **args: Any) -> Any:
            return await client.call_tool(name, {"containerTag": space, **args} if name in (
                "save_memory", "update_memory", "memory_info", "list_memories") else args)

        first = await call("save_memory", content="The cache TTL is 60 seconds.")
        mid = first.structured_content["memory"]["id"]
        await call("save_memory", content="Logs go to /var/log/app.")
        u1 = await call("update_memory", id=mid, content="The cache TTL is 120 seconds.")
        u2 = await call("update_memory", id=u1.structured_content["memory"]["id"],
                        content="The cache TTL is 300 seconds.")
        newest = u2.structured_content["memory"]["id"]
        info = await call("memory_info")
        listing = await call("list_memories", limit=5)
        full = await call("get_memory", id=newest)
        old = await call("get_memory", id=mid)
        audit = await call("memory_audit")
        return info, listing, full, old, audit, newest, mid

    info, listing, full, old, audit, newest, mid = run_session(tmp_path, body, **env)
    for res in (info, listing, full, audit):
        assert not res.is_error, text_of(res)
    si = info.structured_content
    assert si["containerTag"] == space
    assert si["counts"] == {"active": 2, "superseded": 2, "forgotten": 0}
    assert si["store"] == {"kind": "service", "url": svc.url, "person": person.name, "device": "laptop"}
    assert si["route"] == "mcp stdio -> service"
    assert [m["id"] for m in listing.structured_content["memories"]][0] == newest
    assert listing.structured_content["count"] == 2
    assert [h["id"] for h in full.structured_content["history"]][-1] == mid
    assert [h["version"] for h in full.structured_content["history"]] == [2, 1]
    assert old.structured_content["memory"]["id"] == newest  # an old id reads the live version
    assert f"Id {mid} is version 1 of this memory; its live version is 3" in text_of(old)
    assert audit.structured_content["ok"] is True

    # Break the person's rows in the database; the audit tool finds it and repairs it.
    with psycopg.connect(admin._shared.database_url, autocommit=True) as conn:
        conn.execute("UPDATE memories SET embedding = NULL WHERE id = %s", (newest,))

    async def repair(client: Any) -> Any:
        broken = await client.call_tool("memory_audit", {})
        fixed = await client.call_tool("memory_audit", {"repair": True})
        found = await client.call_tool("search_memory", {"query": "cache TTL", "containerTag": space})
        return broken, fixed, found

    broken, fixed, found = run_session(tmp_path, repair, **env)
    assert broken.structured_content["ok"] is False and broken.structured_content["missing_vector"] == 1
    assert fixed.structured_content["repaired"] is True and fixed.structured_content["after"]["ok"] is True
    assert found.structured_content["results"][0]["id"] == newest


def test_another_person_can_neither_read_nor_export_nor_claim_a_memory(
    client: Any, new_person, admin: Any, space: str
) -> None:
    alice, bob = new_person(), new_person()
    r = _post(client, alice, "save", {"content": "Alice's deploy key lives in the team vault.",
                                      "containerTag": space})
    mem = r.json()["memory"]

    r = _post(client, bob, "get", {"id": mem["id"]})
    assert r.status_code == 404 and r.json()["error"]["reason"] == "not_found"
    assert "vault" not in r.text
    r = _post(client, bob, "get", {"id": mem["id"], "includeInactive": True})
    assert r.status_code == 404
    assert _post(client, bob, "list", {"containerTag": space}).json()["memories"] == []
    assert _post(client, bob, "info", {"containerTag": space}).json()["counts"] == {
        "active": 0, "superseded": 0, "forgotten": 0}
    for body in ({}, {"containerTag": space}):
        assert _post(client, bob, "export", body).json() == {"records": [], "next": None}

    # Alice's own export holds it; Bob cannot import it as his.
    records = _post(client, alice, "export", {"containerTag": space}).json()["records"]
    assert [x["id"] for x in records] == [mem["id"]]
    r = _post(client, bob, "import", {"records": records})
    assert r.status_code == 400 and "another person's memory" in r.json()["error"]["message"]
    assert _post(client, bob, "export", {}).json()["records"] == []

    # Once shared, Bob reads it (but export and audit stay the owner's).
    admin.share_space(owner=alice.name, space=space, grantee=bob.name)
    assert _post(client, bob, "get", {"id": mem["id"]}).json()["memory"]["id"] == mem["id"]
    assert [m["id"] for m in _post(client, bob, "list", {"containerTag": space}).json()["memories"]] == [
        mem["id"]]
    assert _post(client, bob, "export", {"containerTag": space}).json()["records"] == []
    assert _post(client, bob, "audit", {}).json()["counts"]["active"] == 0


def test_audit_sees_only_the_callers_rows_and_repair_rebuilds_them(
    client: Any, new_person, admin: Any, space: str
) -> None:
    alice, bob = new_person(), new_person()
    ids = [_post(client, alice, "save", {"content": c, "containerTag": space}).json()["memory"]["id"]
           for c in ("Alpha fact about queues.", "Beta fact about caches.", "Gamma fact about logs.",
                     "Delta fact about builds.")]
    r = _post(client, alice, "update", {"content": "Beta fact about caches, revised.", "containerTag": space,
                                        "id": ids[1]})
    revised = r.json()["memory"]["id"]
    bob_id = _post(client, bob, "save", {"content": "Bob's fact about queues.", "containerTag": space}
                   ).json()["memory"]["id"]
    assert _post(client, alice, "audit", {}).json()["ok"] is True

    with psycopg.connect(admin._shared.database_url, autocommit=True) as conn:
        conn.execute("UPDATE memories SET terms = NULL WHERE id = %s", (ids[0],))
        conn.execute("UPDATE memories SET terms = to_tsvector('simple', 'ghost') WHERE id = %s", (ids[1],))
        conn.execute("UPDATE memories SET embedding = NULL WHERE id = %s", (ids[2],))
        conn.execute("UPDATE memories SET embedding_model = 'another-model' WHERE id = %s", (ids[3],))
        conn.execute("UPDATE memories SET embedding = NULL, terms = NULL WHERE id = %s", (bob_id,))

    report = _post(client, alice, "audit", {}).json()
    assert report["ok"] is False and report["repaired"] is False
    assert (report["missing_keyword"], report["stale_keyword"], report["missing_vector"],
            report["wrong_model"]) == (1, 1, 1, 1)  # Bob's broken row is not Alice's to see
    assert report["counts"] == {"active": 4, "superseded": 1, "forgotten": 0}
    assert "after" not in report

    fixed = _post(client, alice, "audit", {"repair": True}).json()
    assert fixed["repaired"] is True and fixed["after"] == {
        "ok": True, "missing_keyword": 0, "stale_keyword": 0, "missing_vector": 0, "wrong_model": 0}
    assert _post(client, alice, "audit", {}).json()["ok"] is True
    for query, expected in (("queues", ids[0]), ("Gamma fact about logs", ids[2]),
                            ("Delta fact about builds", ids[3]), ("revised", revised)):
        r = _post(client, alice, "search", {"q": query, "containerTag": space})
        assert r.json()["results"][0]["memory"]["id"] == expected, query
    with psycopg.connect(admin._shared.database_url) as conn:
        model, = conn.execute("SELECT embedding_model FROM memories WHERE id = %s", (ids[3],)).fetchone()
        bob_row = conn.execute("SELECT terms IS NULL, embedding IS NULL FROM memories WHERE id = %s",
                               (bob_id,)).fetchone()
    assert model == "all-MiniLM-L6-v2-int8"
    assert bob_row == (True, True)  # untouched: Bob repairs his own
    assert _post(client, bob, "audit", {}).json()["missing_vector"] == 1


def test_export_pages_and_import_limits(client: Any, new_person, space: str) -> None:
    p = new_person()
    ids = [_post(client, p, "save", {"content": f"Fact number {n} about paging.", "containerTag": space}
                 ).json()["memory"]["id"] for n in range(5)]
    seen: list[str] = []
    body: dict[str, Any] = {"containerTag": space, "limit": 2}
    pages = 0
    while True:
        page = _post(client, p, "export", body).json()
        pages += 1
        seen += [x["id"] for x in page["records"]]
        if page["next"] is None:
            break
        body["after"] = page["next"]
    assert seen == ids and pages == 3  # oldest first, nothing twice, nothing missed

    for bad in ({"limit": 0}, {"limit": 1001}, {"after": "-1"}, {"after": "x"}, {"containerTag": "no way"}):
        r = _post(client, p, "export", bad)
        assert r.status_code == 400 and r.json()["error"]["reason"] == "invalid_input", bad

    records = _post(client, p, "export", {"containerTag": space}).json()["records"]
    moved = [{**x, "id": str(uuid.uuid4()), "space": space + "_copy"} for x in records]
    r = _post(client, p, "import", {"records": moved, "dryRun": True})
    assert r.json() == {"imported": 5, "skipped": 0, "forgotten": 0, "masked": 0, "dryRun": True}
    assert _post(client, p, "list", {"containerTag": space + "_copy"}).json()["memories"] == []
    r = _post(client, p, "import", {"records": [*moved, {"id": "x"}], "offset": 100})
    assert r.status_code == 400 and "record 106" in r.json()["error"]["message"]
    twice = [moved[0], {**moved[0], "id": str(uuid.uuid4())}]
    twice[0] = {**twice[0], "customId": "dup"}
    twice[1] = {**twice[1], "customId": "dup"}
    r = _post(client, p, "import", {"records": twice})
    assert r.status_code == 400 and "customId 'dup' is live twice" in r.json()["error"]["message"]
    for bad in ({}, {"records": {"a": 1}}, {"records": [{}] * 2001}):
        r = _post(client, p, "import", bad)
        assert r.status_code == 400, r.text
    assert _post(client, p, "import", {"records": moved}).json()["imported"] == 5
    assert len(_post(client, p, "list", {"containerTag": space + "_copy"}).json()["memories"]) == 5
    big = [{**moved[0], "id": str(uuid.uuid4()), "customId": None, "embedding": None,
            "content": f"Long note {n}: " + "lorem ipsum " * 1600} for n in range(16)]
    r = _post(client, p, "import", {"records": big})
    assert r.status_code == 200 and r.json()["imported"] == 16, r.text  # past the other doors' 256 KB
    r = client.post("/api/memory/save", headers=p.headers,
                    json={"content": "x", "containerTag": space, "metadata": {"pad": "y" * 300_000}})
    assert r.status_code == 413

    text = client.get("/metrics").text
    assert 'bli_memory_requests_total{door="export",status="200"}' in text
    assert 'bli_memory_requests_total{door="import",status="400"}' in text
    assert 'bli_memory_requests_total{door="list",status="200"}' in text


def test_remote_import_in_parts_is_checked_whole_before_any_part_is_written(
    start_service, new_person, admin: Any, monkeypatch
) -> None:
    from bli_memory.core.errors import InvalidInputError
    from bli_memory.core.team.client import transfer as remote_module

    svc = start_service()
    alice, bob = new_person(), new_person()
    space = f"repo_parts__{uuid.uuid4().hex[:12]}"
    a = RemoteBackend(svc.url, token=alice.token)
    b = RemoteBackend(svc.url, token=bob.token)
    try:
        for n in range(7):
            a.save(f"Part fact {n}: the build cache holds {n} layers.", space=space)
        rows = list(a.export(space=space))
        fresh = [{**r, "id": str(uuid.uuid4())} for r in rows]
        monkeypatch.setattr(remote_module, "IMPORT_PART_RECORDS", 2)
        # The last part holds one of Alice's ids: Bob's whole import is refused, no part written.
        with pytest.raises(InvalidInputError, match="record 8: id .* another person's memory"):
            b.import_records([*fresh, rows[0]])
        assert list(b.export(space=space)) == []
        assert b.import_records(fresh) == {"imported": 7, "skipped": 0, "forgotten": 0, "masked": 0}
        assert b.import_records(fresh) == {"imported": 0, "skipped": 7, "forgotten": 0, "masked": 0}
        assert [r["id"] for r in b.export(space=space)] == [r["id"] for r in fresh]
        assert "door import -> 200" in svc.stderr()
    finally:
        a.close()
        b.close()


def test_recording_with_the_service_keeps_the_turn_on_the_service(
    start_service, new_person, admin: Any, tmp_path: Path
) -> None:
    from bli_memory.core.memory.spaces import derive_space
    from bli_memory.core.paths import store_path
    from tests.conftest import FIXTURES
    from tests.hooks_util import run_hook

    svc = start_service()
    alice, bob = new_person(), new_person()
    env = {"BLI_MEMORY_DASHBOARD_URL": svc.url, "BLI_MEMORY_DEVICE_TOKEN": alice.token}
    project = tmp_path / "project"
    project.mkdir()
    space = derive_space(project).tag
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((FIXTURES / "claude" / "transcript.jsonl").read_bytes())

    async def start(client: Any) -> Any:
        return await client.call_tool("record_session", {"action": "start"})

    assert run_session(project, start, **env).structured_content["recording"] is True
    r = run_hook("stop", {"cwd": str(project), "transcript_path": str(transcript), "session_id": "s-rec"},
                 cwd=project, env=env)
    outcome, fields = r.receipt
    assert outcome == "ok" and fields.get("recorded") is True and "queued" not in fields, r.stderr
    assert alice.token not in r.stderr + r.stdout

    with psycopg.connect(admin._shared.database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT r.space, p.name, r.source, r.session_id, r.text, r.device_id IS NOT NULL "
            "FROM memory_session_recordings r JOIN memory_people p ON p.id = r.owner_id "
            "WHERE p.name = %s", (alice.name,)).fetchall()
        (jobs,) = conn.execute(
            "SELECT count(*) FROM memory_extract_jobs j JOIN memory_people p ON p.id = j.owner_id "
            "WHERE p.name = %s", (alice.name,)).fetchone()
        (live,) = conn.execute(
            "SELECT count(*) FROM memories m JOIN memory_people p ON p.id = m.owner_id WHERE p.name = %s",
            (alice.name,)).fetchone()
    assert len(rows) == 1
    rec_space, owner, source, session_id, text, has_device = rows[0]
    assert (rec_space, owner, source, session_id, has_device) == (
        space, alice.name, "hook:claude", "s-rec", True)
    assert text.startswith("User: ") and "\n\nAssistant: " in text
    assert jobs == 0 and live == 0  # kept capture-only: nothing queued, nothing distilled
    assert not store_path().exists()  # and nothing written to a local store

    async def info_and_stop(client: Any) -> Any:
        info = await client.call_tool("memory_info", {})
        await client.call_tool("record_session", {"action": "stop"})
        return info

    si = run_session(project, info_and_stop, **env).structured_content
    assert si["recordings"] == 1 and si["store"]["kind"] == "service" and si["switches"]["recording"] is True

    # Another person sees no count of Alice's recordings, even with the space shared.
    admin.share_space(owner=alice.name, space=space, grantee=bob.name, access="write")
    other = RemoteBackend(svc.url, token=bob.token)
    try:
        assert other.info(space=space)["recordings"] == 0
        other.record_turn("User: hi\n\nAssistant: hello", space=space, source="hook:claude")
        assert other.info(space=space)["recordings"] == 1
    finally:
        other.close()
    mine = RemoteBackend(svc.url, token=alice.token)
    try:
        assert mine.info(space=space)["recordings"] == 1
    finally:
        mine.close()
