"""Agent-facing memory controls through the real MCP client, and their effect on hooks."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bli_memory.core.paths import store_path
from tests.conftest import FIXTURES
from tests.hooks_util import run_hook
from tests.mcp_client import run_session, text_of

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

CONTROL_TOOLS = {"memory_info", "list_memories", "get_memory", "memory_status", "enable_memory",
                 "disable_memory", "record_session", "memory_audit"}


def call(client, name, **args):
    return client.call_tool(name, args)


def test_control_tools_are_listed_with_read_only_hints(tmp_path: Path, mcp_route) -> None:
    async def body(client):
        return {t.name: t for t in (await client.list_tools()).tools}

    tools = run_session(tmp_path, body)
    assert CONTROL_TOOLS <= set(tools)
    for name in ("memory_info", "list_memories", "get_memory", "memory_status"):
        assert tools[name].annotations.read_only_hint is True
    assert tools["list_memories"].input_schema["properties"]["limit"]["maximum"] == 100


def test_info_list_get_history_and_dates(tmp_path: Path, mcp_route) -> None:
    async def body(client):
        first = await call(client, "save_memory", content="The cache TTL is 60 seconds.")
        mid = first.structured_content["memory"]["id"]
        await call(client, "save_memory", content="Logs go to /var/log/app.")
        u1 = await call(client, "update_memory", id=mid, content="The cache TTL is 120 seconds.")
        u2 = await call(client, "update_memory", id=u1.structured_content["memory"]["id"],
                        content="The cache TTL is 300 seconds.")
        newest = u2.structured_content["memory"]["id"]
        info = await call(client, "memory_info")
        listing = await call(client, "list_memories", limit=1)
        full = await call(client, "get_memory", id=newest)
        old = await call(client, "get_memory", id=mid)
        old_ok = await call(client, "get_memory", id=mid, include_inactive=True)
        search = await call(client, "search_memory", query="cache TTL")
        # update and forget through the first version's id act on the live version
        redo = await call(client, "update_memory", id=mid, content="The cache TTL is 600 seconds.")
        gone = await call(client, "forget_memory", id=mid)
        return info, listing, full, old, old_ok, search, mid, newest, redo, gone

    info, listing, full, old, old_ok, search, mid, newest, redo, gone = run_session(tmp_path, body)
    si = info.structured_content
    assert si["via"] == mcp_route.name  # which route answered, and what the daemon holds
    if mcp_route.name == "daemon":
        assert si["route"] == "mcp stdio -> daemon -> embedded" and si["daemon"]["rssBytes"] > 10 * 2**20
        assert si["daemon"]["pid"] == mcp_route.daemons.procs[-1].pid
        assert f"(daemon pid {si['daemon']['pid']}, holding " in text_of(info)
    else:
        assert si["route"] == "mcp stdio -> embedded" and si["daemon"] is None
        assert "(in process)" in text_of(info)
    assert si["counts"] == {"active": 2, "superseded": 2, "forgotten": 0}
    assert si["embeddingModel"] == "all-MiniLM-L6-v2-int8" and si["store"]["kind"] == "embedded"
    assert si["derivedFrom"].startswith("folder") and si["switches"]["enabled"] is True
    assert listing.structured_content["count"] == 1
    assert listing.structured_content["memories"][0]["id"] == newest  # newest first
    history = full.structured_content["history"]
    assert [h["version"] for h in history] == [2, 1] and history[-1]["id"] == mid
    assert "300 seconds" in full.structured_content["memory"]["content"]
    assert not old.is_error and old.structured_content["memory"]["id"] == newest
    assert f"Id {mid} is version 1 of this memory; its live version is 3 (id {newest})." in text_of(old)
    assert redo.structured_content["previous"]["id"] == newest
    assert redo.structured_content["named"]["id"] == mid
    fourth = redo.structured_content["memory"]["id"]
    # The live version is the one this update made, not the one it replaced.
    assert f"Id {mid} is version 1 of this memory; its live version is 4 (id {fourth})." in text_of(redo)
    assert gone.structured_content["forgotten"]["id"] == fourth
    assert gone.structured_content["named"]["version"] == 1
    assert f"Id {mid} is version 1 of this memory; its live version is 4 (id {fourth})." in text_of(gone)
    assert old_ok.structured_content["memory"]["state"] == "superseded"
    hit = search.structured_content["results"][0]
    assert hit["createdAt"] and "[20" in text_of(search).splitlines()[1]  # dated text for the model


def test_disable_stops_hooks_and_tools_then_enable_restores(tmp_path: Path, mcp_route) -> None:
    project = tmp_path / "project"
    project.mkdir()
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((FIXTURES / "claude" / "transcript.jsonl").read_bytes())
    prompt = {"cwd": str(project), "prompt": "what is the favourite colour of the user?"}
    stop = {"cwd": str(project), "transcript_path": str(transcript), "stop_hook_active": False}

    async def save_and_disable(client):
        await call(client, "save_memory", content="The user's favourite colour is teal.")
        off = await call(client, "disable_memory")
        search = await call(client, "search_memory", query="favourite colour")
        return off, search

    off, search = run_session(project, save_and_disable)
    assert off.structured_content["enabled"] is False
    assert search.is_error and "disabled" in text_of(search)
    p = run_hook("prompt", prompt)
    s = run_hook("stop", stop)
    assert p.stdout == "" and p.receipt == ("skipped", {"reason": "disabled"})
    assert s.stdout == "" and s.receipt[0] == "skipped" and s.reason == "disabled"
    with closing(sqlite3.connect(store_path())) as conn, conn:
        assert conn.execute("SELECT count(*) FROM memory_extract_jobs").fetchone()[0] == 0

    async def enable(client):
        return await call(client, "enable_memory")

    assert run_session(project, enable).structured_content["enabled"] is True
    p = run_hook("prompt", prompt)
    assert "teal" in json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
    assert run_hook("stop", stop).receipt[1]["queued"] is True


def test_record_session_captures_without_injecting(tmp_path: Path, mcp_route) -> None:
    project = tmp_path / "project"
    project.mkdir()
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((FIXTURES / "claude" / "transcript.jsonl").read_bytes())

    async def start(client):
        return await call(client, "record_session", action="start")

    assert run_session(project, start).structured_content["recording"] is True
    r = run_hook("stop", {"cwd": str(project), "transcript_path": str(transcript)})
    assert r.receipt[0] == "ok" and r.receipt[1].get("recorded") is True
    with closing(sqlite3.connect(store_path())) as conn, conn:
        (n,) = conn.execute("SELECT count(*) FROM session_recordings").fetchone()
        (live,) = conn.execute("SELECT count(*) FROM memories WHERE state = 'active'").fetchone()
    assert n == 1 and live == 0  # recorded, not turned into injectable memories

    async def stop_and_info(client):
        await call(client, "record_session", action="stop")
        return await call(client, "memory_info")

    info = run_session(project, stop_and_info).structured_content
    assert info["recordings"] == 1 and info["switches"]["recording"] is False


def test_audit_finds_a_broken_index_and_repair_fixes_it(tmp_path: Path, mcp_route) -> None:
    async def seed(client):
        for c in ("Alpha fact about queues.", "Beta fact about caches.", "Gamma fact about logs."):
            await call(client, "save_memory", content=c)
        return (await call(client, "memory_audit")).structured_content

    assert run_session(tmp_path, seed)["ok"] is True
    with closing(sqlite3.connect(store_path())) as conn, conn:
        conn.execute("DELETE FROM memory_fts WHERE rowid = (SELECT min(seq) FROM memories)")
        conn.execute("INSERT INTO memory_fts (rowid, terms) VALUES (9999, 'ghost')")
        conn.execute("UPDATE memories SET embedding = NULL WHERE seq = (SELECT max(seq) FROM memories)")

    async def audit(client):
        broken = (await call(client, "memory_audit")).structured_content
        fixed = (await call(client, "memory_audit", repair=True)).structured_content
        again = (await call(client, "memory_audit")).structured_content
        found = (await call(client, "search_memory", query="Alpha fact about queues")).structured_content
        return broken, fixed, again, found

    broken, fixed, again, found = run_session(tmp_path, audit)
    assert broken["ok"] is False
    assert (broken["missing_keyword"], broken["stale_keyword"], broken["missing_vector"]) == (1, 1, 1)
    assert fixed["repaired"] is True and fixed["after"]["ok"] is True and again["ok"] is True
    assert found["results"][0]["content"] == "Alpha fact about queues."


def _soon(seconds: float = 1.5) -> str:
    """An expiry ``seconds`` from now: a save refuses one in the past."""
    from datetime import UTC, datetime, timedelta

    when = datetime.now(UTC) + timedelta(seconds=seconds)
    return when.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def test_expired_memories_leave_search(tmp_path: Path, mcp_route) -> None:
    import asyncio

    async def body(client):
        gone = await call(client, "save_memory", content="The demo server password is swordfish.",
                          expiresAt=_soon())
        kept = await call(client, "save_memory", content="The demo server runs on port 8080.",
                          expiresAt="2999-01-01T00:00:00Z")
        bad = await call(client, "save_memory", content="x y z", expiresAt="next tuesday")
        past = await call(client, "save_memory", content="The demo ends today.", expiresAt="2001-01-01")
        await asyncio.sleep(1.6)
        res = await call(client, "search_memory", query="demo server")
        return gone, kept, bad, past, res

    gone, kept, bad, past, res = run_session(tmp_path, body)
    assert gone.structured_content["memory"]["id"]
    assert bad.is_error and "expiresAt" in text_of(bad)
    assert past.is_error and "expiresAt '2001-01-01' is in the past" in text_of(past)
    assert [r["content"] for r in res.structured_content["results"]] == ["The demo server runs on port 8080."]


def test_export_to_fresh_home_and_import_gives_identical_search(tmp_path: Path, monkeypatch) -> None:
    import os
    import subprocess

    from tests.conftest import bin_path

    project = tmp_path / "project"
    project.mkdir()

    async def seed(client):
        a = await call(client, "save_memory", content="We release on Thursdays after the freeze.")
        await call(client, "update_memory", id=a.structured_content["memory"]["id"],
                   content="We release on Wednesdays after the freeze.")
        b = await call(client, "save_memory", content="Staging lives in eu-west-1.")
        await call(client, "forget_memory", id=b.structured_content["memory"]["id"])
        await call(client, "save_memory", content="Use pnpm, never npm, in the web app.")
        return None

    async def searches(client):
        out = []
        for q in ("when do we release?", "eu-west-1", "which package manager for the web app"):
            r = await call(client, "search_memory", query=q)
            out.append([(x["id"], x["content"], x["similarity"]) for x in r.structured_content["results"]])
        return out

    run_session(project, seed)
    before = run_session(project, searches)
    env = dict(os.environ)
    exported = subprocess.run([bin_path(), "memory", "export"], cwd=project, env=env, capture_output=True,
                              text=True, check=True).stdout
    rows = [json.loads(line) for line in exported.splitlines()]
    assert sorted(r["state"] for r in rows) == ["active", "active", "forgotten", "superseded"]
    dump = tmp_path / "backup.jsonl"
    dump.write_text(exported)

    fresh = tmp_path / "fresh-home"
    fresh.mkdir()
    monkeypatch.setenv("HOME", str(fresh))
    env2 = {**env, "HOME": str(fresh)}
    r = subprocess.run([bin_path(), "memory", "import", str(dump)], cwd=project, env=env2,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "imported 4" in r.stdout, r.stderr
    assert run_session(project, searches) == before
    again = subprocess.run([bin_path(), "memory", "export"], cwd=project, env=env2, capture_output=True,
                           text=True, check=True).stdout
    assert again == exported  # the round trip is exact, history included


def test_expired_rows_do_not_block_saves_updates_or_forget(tmp_path: Path, mcp_route) -> None:
    import asyncio

    async def body(client):
        await call(client, "save_memory", content="Feature flag beta-search is on.", expiresAt=_soon(),
                   customId="flag")
        await asyncio.sleep(1.6)
        again = await call(client, "save_memory", content="Feature flag beta-search is on.")
        upd = await call(client, "save_memory", content="Feature flag beta-search is off.", customId="flag")
        gone = await call(client, "forget_memory", query="the weather in Lisbon")
        res = await call(client, "search_memory", query="beta-search feature flag")
        return again, upd, gone, res

    again, upd, gone, res = run_session(tmp_path, body)
    assert again.structured_content["status"] == "created"  # the expired twin does not count
    assert upd.structured_content["status"] == "updated"
    assert upd.structured_content["memory"]["customId"] == "flag"
    assert gone.is_error and "not_found" in text_of(gone)  # a clear refusal, not a crash
    found = [r["content"] for r in res.structured_content["results"]]
    assert "Feature flag beta-search is off." in found and "Feature flag beta-search is on." in found


def test_invalid_container_tag_and_expiry_get_clear_errors(tmp_path: Path, mcp_route) -> None:
    async def body(client):
        bad_tag = await call(client, "save_memory", content="x", containerTag="../../etc/passwd")
        bad_exp = await call(client, "save_memory", content="y", expiresAt="9999-12-31T23:59:59-14:00")
        return bad_tag, bad_exp

    bad_tag, bad_exp = run_session(tmp_path, body)
    assert bad_tag.is_error and "invalid_input" in text_of(bad_tag)
    assert bad_exp.is_error and "invalid_input" in text_of(bad_exp)


def test_server_starts_and_reports_an_unusable_store(tmp_path: Path, mcp_route, monkeypatch) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "memory.sqlite3").write_bytes(b"this is not a database" * 100)
    monkeypatch.setenv("BLI_MEMORY_DATA_DIR", str(data))
    mcp_route.restart()  # the daemon serves this store too: its error comes back as the same isError

    async def body(client):
        return await call(client, "search_memory", query="anything")

    r = run_session(tmp_path, body)
    assert r.is_error and "store" in text_of(r)


def test_import_refuses_bad_records_and_writes_nothing(tmp_path: Path) -> None:
    import os
    import subprocess

    from tests.conftest import bin_path

    good = {"id": "11111111-1111-4111-8111-111111111111", "space": "s1", "content": "a fine fact",
            "createdAt": "2026-11-30T04:57:01.123456Z", "updatedAt": "2026-11-30T04:57:01.123456Z"}
    for bad in ({**good, "createdAt": "2026-13-45 yesterday"}, {**good, "space": "bad tag!!"},
                {**good, "version": "abc"}, {k: v for k, v in good.items() if k != "content"}):
        lines = json.dumps(good) + "\n" + json.dumps(bad) + "\n"
        r = subprocess.run([bin_path(), "memory", "import", "-"], input=lines, capture_output=True, text=True,
                           env=dict(os.environ), cwd=tmp_path)
        assert r.returncode == 1 and "record 2" in r.stderr and "Traceback" not in r.stderr
    listing = subprocess.run([bin_path(), "memory", "list", "--space", "s1"], capture_output=True, text=True,
                             env=dict(os.environ), cwd=tmp_path)
    assert "(no live memories in space s1)" in listing.stdout


def test_import_refuses_text_no_store_can_keep_and_too_large_values(tmp_path: Path) -> None:
    import pytest

    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.errors import InvalidInputError

    b = EmbeddedBackend(tmp_path / "m.sqlite")
    good = {"id": "11111111-1111-4111-8111-111111111111", "space": "s1", "content": "a fine fact",
            "createdAt": "2026-11-30T04:57:01.123456Z", "updatedAt": "2026-11-30T04:57:01.123456Z"}
    deep: dict = {}
    node = deep
    for _ in range(40):
        node["k"] = {}
        node = node["k"]
    cases = {
        "NUL": {**good, "content": "a\x00b"},
        "lone surrogate": {**good, "sessionId": "s\ud800"},
        "NUL character": {**good, "metadata": {"k": ["x\x00"]}},
        "version must be": {**good, "version": 10**30},
        "the limit is": {**good, "content": "x" * 20_001},
        "nested more than": {**good, "metadata": deep},
    }
    for expected, bad in cases.items():
        with pytest.raises(InvalidInputError) as err:
            b.import_records([good, bad])
        assert "record 2" in str(err.value) and expected in str(err.value), expected
    assert b.list_memories(space="s1") == []
    b.close()


def test_import_recomputes_vectors_it_cannot_trust(tmp_path: Path) -> None:
    import base64

    import numpy as np

    from bli_memory.core.embedded.engine import EmbeddedBackend

    b = EmbeddedBackend(tmp_path / "m.sqlite")
    model = b.model_name
    zero = base64.b64encode(np.zeros(384, dtype="<f4").tobytes()).decode()
    nan = base64.b64encode(np.full(384, np.nan, dtype="<f4").tobytes()).decode()
    short = base64.b64encode(np.ones(10, dtype="<f4").tobytes()).decode()
    huge = base64.b64encode(np.full(384, 1e30, dtype="<f4").tobytes()).decode()
    base = {"space": "s1", "createdAt": "2026-11-30T04:57:01.123456Z",
            "updatedAt": "2026-11-30T04:57:01.123456Z", "embeddingModel": model}
    records = [
        {**base, "id": "11111111-1111-4111-8111-11111111111" + str(i), "content": text, "embedding": emb}
        for i, (text, emb) in enumerate([
            ("Deploys go out on Tuesdays after the freeze.", zero),
            ("The staging database is rebuilt nightly.", nan),
            ("Ana owns the billing exporter.", short),
            ("Ben prefers ruff over flake8.", "not base64 at all!!"),
            ("Chloe reviews the release notes.", huge),
        ])
    ]
    assert b.import_records(records) == {"imported": 5, "skipped": 0, "forgotten": 0, "masked": 0}
    assert b.audit()["ok"]
    hits = b.search("when do deploys go out", space="s1").hits
    assert hits[0].memory.content.startswith("Deploys go out")
    for h in b.search("something else entirely about gardening", space="s1").hits:
        assert h.similarity is not None and np.isfinite(h.similarity)
    b.close()


def test_memory_cli_speaks_plainly_about_missing_files_limits_and_audits(tmp_path: Path) -> None:
    import os
    import subprocess

    from tests.conftest import bin_path

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([bin_path(), "memory", *args], capture_output=True, text=True,
                              env=dict(os.environ), cwd=tmp_path, timeout=120)

    r = cli("import", str(tmp_path / "nope.jsonl"))
    assert r.returncode == 1 and "cannot read" in r.stderr and "Traceback" not in r.stderr
    r = cli("list", "--limit", "0")
    assert r.returncode == 2 and "outside 1-100" in r.stderr
    r = cli("audit")
    assert r.returncode == 0 and r.stdout.startswith("intact (")
    from bli_memory.core.embedded.engine import EmbeddedBackend

    b = EmbeddedBackend(store_path())
    saved = b.save("The staging database is rebuilt nightly.", space="s1")
    b.close()
    with closing(sqlite3.connect(store_path())) as conn, conn:
        conn.execute("UPDATE memories SET embedding = NULL WHERE id = ?", (saved.memory.id,))
    r = cli("audit")
    assert r.returncode == 1 and "NOT intact: 1 missing vector" in r.stdout
    r = cli("audit", "--repair")
    assert r.returncode == 0 and "was not intact (1 missing vector); repaired, now intact" in r.stdout


def test_imported_rows_linked_in_a_loop_do_not_hang_history_get_or_purge(tmp_path: Path) -> None:
    import pytest

    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.errors import InvalidInputError

    b = EmbeddedBackend(tmp_path / "m.sqlite")
    a_id, b_id = "11111111-1111-4111-8111-11111111111a", "11111111-1111-4111-8111-11111111111b"
    base = {"space": "s1", "createdAt": "2026-11-30T04:57:01.123456Z",
            "updatedAt": "2026-11-30T04:57:01.123456Z"}
    with pytest.raises(InvalidInputError, match="supersedes names the record itself"):
        b.import_records([{**base, "id": a_id, "content": "self", "supersedes": a_id}])
    loop = [
        {**base, "id": a_id, "content": "Version A of the fact.", "supersedes": b_id},
        {**base, "id": b_id, "content": "Version B of the fact.", "supersedes": a_id, "state": "superseded"},
    ]
    with pytest.raises(InvalidInputError, match="supersedes makes a loop"):
        b.import_records(loop)
    # Refused by import now; a file written by an older version may hold one.
    b.import_records([{**r, "supersedes": None} for r in loop])
    with closing(sqlite3.connect(tmp_path / "m.sqlite")) as conn, conn:
        for r in loop:
            conn.execute("UPDATE memories SET supersedes = ? WHERE id = ?", (r["supersedes"], r["id"]))
    assert {m.id for m in b.history(a_id)} == {a_id, b_id}
    memory, _ = b.get_memory(a_id, include_inactive=True)
    assert memory.id == a_id
    assert b.purge(a_id) == 2
    b.close()


def test_import_refuses_what_the_service_would_refuse_too(tmp_path: Path) -> None:
    import uuid

    import pytest

    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.errors import InvalidInputError

    b = EmbeddedBackend(tmp_path / "m.sqlite")
    b.save("Status: green.", space="s1", custom_id="status")

    def rec(content: str, **extra: object) -> dict:
        return {"id": str(uuid.uuid4()), "space": "s1", "content": content,
                "createdAt": "2026-11-30T04:57:01.123456Z", "updatedAt": "2026-11-30T04:57:01.123456Z",
                **extra}

    one = rec("one")
    cases = {
        "is not a UUID": [rec("x", id="not-a-uuid")],
        "is neither a row of space s1 nor in this file": [rec("x", supersedes=str(uuid.uuid4()))],
        "is also record 1": [one, {**one, "content": "again"}],
        "is live twice in space s1": [rec("a", customId="k"), rec("b", customId="k")],
        "is already live in space s1": [rec("Status: red.", customId="status")],
    }
    for expected, records in cases.items():
        with pytest.raises(InvalidInputError, match=expected):
            b.import_records(records)
    assert [m.content for m in b.list_memories(space="s1")] == ["Status: green."]
    b.close()


def test_audit_counts_an_unusable_vector_and_repair_embeds_it_again(tmp_path: Path) -> None:
    import numpy as np

    from bli_memory.core.embedded.engine import EmbeddedBackend

    b = EmbeddedBackend(tmp_path / "m.sqlite")
    saved = b.save("Deploys go out on Tuesdays after the freeze.", space="s1").memory
    with closing(sqlite3.connect(tmp_path / "m.sqlite")) as conn, conn:
        conn.execute("UPDATE memories SET embedding = ? WHERE id = ?",
                     (np.zeros(384, dtype="<f4").tobytes(), saved.id))
    b.close()
    b = EmbeddedBackend(tmp_path / "m.sqlite")
    report = b.audit()
    assert report["wrong_model"] == 1 and not report["ok"]
    assert b.audit(repair=True)["after"]["ok"]
    hit = b.search("when do deploys go out", space="s1").hits[0]
    assert hit.memory.id == saved.id and hit.similarity > 0.5
    b.close()


def test_recorded_turns_can_be_read_back_and_erased_from_the_cli(tmp_path: Path) -> None:
    import os
    import subprocess

    from bli_memory.core.embedded.engine import EmbeddedBackend
    from tests.conftest import bin_path

    b = EmbeddedBackend(store_path())
    b.record_turn("User: where do builds run?\n\nAssistant: On the zebrafish cluster.", space="s1",
                  source="hook:claude", session_id="s-1")
    b.close()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([bin_path(), "memory", *args], capture_output=True, text=True,
                              env=dict(os.environ), cwd=tmp_path, timeout=120)

    r = cli("recordings", "--space", "s1")
    assert r.returncode == 0 and "zebrafish cluster" in r.stdout
    r = cli("clear-recordings", "--space", "s1")
    assert r.returncode == 2 and "--yes" in r.stderr
    r = cli("clear-recordings", "--space", "s1", "--yes")
    assert r.returncode == 0 and "erased 1 recorded turn(s)" in r.stdout
    assert "(no recorded turns in space s1)" in cli("recordings", "--space", "s1").stdout


def test_one_record_format_for_every_store_canonical_ids_strict_times_bounded_keys(tmp_path: Path) -> None:
    import uuid

    import pytest

    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.errors import InvalidInputError

    b = EmbeddedBackend(tmp_path / "m.sqlite")
    key = str(uuid.uuid4())
    base = {"id": key, "space": "s1", "content": "x", "createdAt": "2026-11-30T04:57:01.123456Z",
            "updatedAt": "2026-11-30T04:57:01.123456Z"}
    cases = {
        "lowercase dashed form": {**base, "id": key.upper()},
        "not a time of the form": {**base, "createdAt": "2026-1-3T4:5:6.1Z"},
        "longer than 512": {**base, "customId": "k" * 513},
        "NaN or Infinity": {**base, "metadata": {"score": float("nan")}},
    }
    for expected, record in cases.items():
        with pytest.raises(InvalidInputError, match=expected):
            b.import_records([record])
    # A save through the Python API keeps only what an export can carry.
    # (a year from today, never a fixed date: a save refuses an expiry in the past)
    year = datetime.now(UTC).year + 1
    saved = b.save("Expires soon.", space="s1", expires_at=f"{year}-01-01T00:00:00Z").memory
    assert saved.expires_at == f"{year}-01-01T00:00:00.000000Z"
    with pytest.raises(InvalidInputError, match="customId is longer"):
        b.save("Long key.", space="s1", custom_id="k" * 513)
    # its own export is valid
    assert b.import_records(list(b.export())) == {"imported": 0, "skipped": 1, "forgotten": 0, "masked": 0}
    b.close()


def test_a_hand_edited_switches_file_of_the_wrong_shape_counts_as_absent(tmp_path: Path) -> None:
    from bli_memory.core.memory import switches

    path = switches.switches_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"global": True, "recording": "s1X", "spaces": {"s1": "off"}}))
    assert switches.is_enabled("s1") is True and switches.is_recording("s1") is False
    switches.set_recording(True, "s1")
    assert switches.is_recording("s1") is True
