"""The MCP server end to end: the installed console script, the official MCP client, stdio."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import bin_path, make_repo
from tests.mcp_client import run_session, text_of

#: Every test here runs on both routes (tests/core/mcp/conftest.py).
pytestmark = [pytest.mark.e2e, pytest.mark.e2e, pytest.mark.usefixtures("mcp_route")]

FACT = "We deploy the billing service with `make release-billing` after the BLI-3580 migration."


def _search(client, query, **kw):
    return client.call_tool("search_memory", {"query": query, **kw})


def test_lists_four_tools_with_schemas_and_annotations(tmp_path: Path) -> None:
    async def body(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in run_session(tmp_path, body)}
    assert {"search_memory", "save_memory", "update_memory", "forget_memory"} <= set(tools)
    assert set(tools["search_memory"].input_schema["properties"]) == {
        "query", "containerTag", "includeProfile", "limit", "scope"
    }
    assert {"content", "containerTag", "customId", "extract", "metadata"} <= set(
        tools["save_memory"].input_schema["properties"]
    )
    assert tools["save_memory"].input_schema["required"] == ["content"]
    update_args = set(tools["update_memory"].input_schema["properties"])
    forget_args = set(tools["forget_memory"].input_schema["properties"])
    assert {"id", "customId", "content", "containerTag"} <= update_args
    assert {"id", "content", "query", "containerTag"} <= forget_args
    search, save, update, forget = (tools[n].annotations for n in (
        "search_memory", "save_memory", "update_memory", "forget_memory"))
    assert search.read_only_hint is True and search.idempotent_hint is True
    for additive in (save, update):
        assert additive.read_only_hint is False and additive.destructive_hint is False
    assert forget.destructive_hint is True and forget.read_only_hint is False
    for t in tools.values():
        assert t.output_schema is not None, t.name
        assert t.description


def test_save_search_update_history_forget_lifecycle(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()

    async def body(client):
        saved = await client.call_tool("save_memory", {"content": FACT})
        assert not saved.is_error, text_of(saved)
        assert saved.structured_content["status"] == "created"
        first_id = saved.structured_content["memory"]["id"]
        tag = saved.structured_content["containerTag"]
        assert tag.startswith("dir_project__")

        by_meaning = await _search(client, "how do we ship the payments service to production?")
        assert by_meaning.structured_content["results"][0]["id"] == first_id
        assert by_meaning.structured_content["results"][0]["similarity"] > 0.3
        by_ident = await _search(client, "BLI-3580")
        assert by_ident.structured_content["results"][0]["id"] == first_id
        assert "keyword_all" in by_ident.structured_content["results"][0]["matchedBy"]

        new_text = "We deploy the billing service with `make ship-billing` since BLI-3990."
        updated = await client.call_tool("update_memory", {"id": first_id, "content": new_text})
        assert not updated.is_error, text_of(updated)
        new_id = updated.structured_content["memory"]["id"]
        assert updated.structured_content["previous"]["id"] == first_id
        assert updated.structured_content["memory"]["supersedes"] == first_id
        assert updated.structured_content["memory"]["version"] == 2

        for q in ("how do we deploy the billing service", "BLI-3580", "release-billing", FACT):
            after = await _search(client, q)
            ids = [r["id"] for r in after.structured_content["results"]]
            assert first_id not in ids, q
        after = await _search(client, "how do we deploy the billing service")
        assert [r["id"] for r in after.structured_content["results"]] == [new_id]
        assert (await _search(client, "what is the weather like today?")).structured_content["count"] == 0

        forgotten = await client.call_tool("forget_memory", {"id": new_id})
        assert not forgotten.is_error, text_of(forgotten)
        assert forgotten.structured_content["forgotten"]["state"] == "forgotten"
        for q in ("how do we deploy the billing service", "BLI-3990", "ship-billing", new_text, FACT):
            res = await _search(client, q)
            assert res.structured_content["count"] == 0, q
            assert "silent" in text_of(res)
        again = await client.call_tool("forget_memory", {"id": new_id})
        assert again.is_error and "not_found" in text_of(again)
        return first_id, new_id

    first_id, new_id = run_session(project, body)

    # History survives in the file: the old version superseded, the new one tombstoned.
    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.paths import store_path

    backend = EmbeddedBackend(store_path())
    try:
        chain = backend.history(first_id)
        assert [m.id for m in chain] == [new_id, first_id]
        assert [m.state for m in chain] == ["forgotten", "superseded"]
        assert chain[1].content == FACT
    finally:
        backend.close()


QUERIES = ["pre-edit", "don't", "memory:safe", 'say "hi', "foo AND bar", "(python", "GB/s", "C++",
           "ubuntu 20.04", "*", "NEAR(", "-", "OR"]


def test_hostile_and_empty_queries(tmp_path: Path) -> None:
    memories = [
        "Run the pre-edit check before touching generated files.",
        "The linter says don't use bare except clauses here.",
        "Mark the allocator memory:safe in the audit log.",
        'The greeter must say "hi" to new contributors.',
        "Throughput of the NVMe array is 3.2 GB/s on the build box.",
        "The native extension is written in C++ and built with CMake.",
        "CI runs on ubuntu 20.04 images until the upgrade.",
    ]

    async def body(client):
        for m in memories:
            r = await client.call_tool("save_memory", {"content": m})
            assert not r.is_error, text_of(r)
        for empty in ({"query": ""}, {"query": "   \n\t"}, {}):
            r = await client.call_tool("search_memory", empty)
            assert not r.is_error, text_of(r)
            assert r.structured_content["count"] == 0  # never "everything"
        out = {}
        for q in QUERIES:
            r = await _search(client, q)
            assert not r.is_error, (q, text_of(r))
            out[q] = [x["content"] for x in r.structured_content["results"]]
        return out

    results = run_session(tmp_path, body)
    for q, expected in zip(QUERIES[:4], memories[:4], strict=True):
        assert results[q] and results[q][0] == expected, q
    for q, expected in (("GB/s", memories[4]), ("C++", memories[5]), ("ubuntu 20.04", memories[6])):
        assert results[q][0] == expected, q


def test_question_sharing_three_words_and_dedupe_and_extract(tmp_path: Path) -> None:
    fact = "Nightly backups of the analytics warehouse are written to the cold storage bucket."

    async def body(client):
        a = await client.call_tool("save_memory", {"content": fact})
        b = await client.call_tool("save_memory", {"content": "  " + fact + "\n"})
        assert a.structured_content["status"] == "created"
        assert b.structured_content["status"] == "duplicate"
        assert b.structured_content["memory"]["id"] == a.structured_content["memory"]["id"]
        for other in ("The frontend uses pnpm workspaces.", "Release notes live in docs/CHANGES.md."):
            await client.call_tool("save_memory", {"content": other})
        q = "where exactly do we keep copies of the analytics data every night?"
        assert len(q.split()) >= 10
        r = await _search(client, q)
        ext = await client.call_tool("save_memory", {"content": "raw talk", "extract": True})
        return r.structured_content, ext

    res, ext = run_session(tmp_path, body)
    assert res["results"][0]["content"] == fact
    assert sum(1 for x in res["results"] if x["content"] == fact) == 1
    # extract: queued at once, distilled off the request path (tests/core/extraction/test_worker.py).
    assert not ext.is_error, text_of(ext)
    assert ext.structured_content["status"] == "queued" and ext.structured_content["jobId"]
    assert ext.structured_content["memory"] is None and "Queued for extraction" in text_of(ext)


def test_spaces_isolate_repos_and_share_worktrees(tmp_path: Path) -> None:
    repo_a = make_repo(tmp_path / "a" / "app", "git@github.com:acme/app.git")
    repo_b = make_repo(tmp_path / "b" / "app", "git@github.com:other/app.git")
    (repo_a / "src").mkdir()
    from tests.conftest import git

    git("worktree", "add", "-q", str(tmp_path / "wt"), cwd=repo_a)
    secret_fact = "The staging database password rotates every Friday at noon."

    async def save(client):
        r = await client.call_tool("save_memory", {"content": secret_fact})
        return r.structured_content["containerTag"]

    async def find(client):
        r = await _search(client, "when does the staging database password rotate?")
        return [x["content"] for x in r.structured_content["results"]]

    tag = run_session(repo_a, save)
    assert tag.startswith("repo_app__")
    assert run_session(repo_b, find) == []
    assert run_session(repo_a / "src", find) == [secret_fact]
    assert run_session(tmp_path / "wt", find) == [secret_fact]


def test_two_server_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    import anyio
    from mcp.client import Client

    from tests.mcp_client import server_params

    n = 25

    async def writer(prefix: str) -> None:
        async with Client(server_params(tmp_path), read_timeout_seconds=60) as client:
            for i in range(n):
                content = f"{prefix} fact number {i} about widgets"
                r = await client.call_tool("save_memory", {"content": content})
                assert not r.is_error, text_of(r)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer, "alpha")
            tg.start_soon(writer, "beta")

    anyio.run(main)
    from bli_memory.core.embedded.store import SQLiteStore
    from bli_memory.core.paths import store_path

    store = SQLiteStore(store_path(), model_name="all-MiniLM-L6-v2-int8", dimensions=384)
    try:
        assert store.count_by_state()["active"] == 2 * n
    finally:
        store.close()


def test_stdout_is_json_rpc_only_with_verbose_logging(tmp_path: Path, mcp_route, monkeypatch) -> None:
    """Every stdout line of a full session, first-run migration included, is JSON-RPC."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "save_memory", "arguments": {"content": "Prefer ruff over flake8."}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "search_memory", "arguments": {"query": "which linter?"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
         "params": {"name": "search_memory", "arguments": {"query": ")))"}}},
    ]
    import os

    monkeypatch.setenv("BLI_MEMORY_LOG_LEVEL", "debug")
    mcp_route.restart()  # a daemon of the same settings (another log level is another config)
    env = dict(os.environ)
    with subprocess.Popen([bin_path()], cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdin and proc.stdout and proc.stderr
        for req in requests:
            proc.stdin.write(json.dumps(req) + "\n")
            proc.stdin.flush()
            if "id" in req:
                line = proc.stdout.readline()
                msg = json.loads(line)
                assert msg["jsonrpc"] == "2.0"
        proc.stdin.close()
        proc.wait(timeout=30)
        rest, err = proc.stdout.read(), proc.stderr.read()
    for line in rest.splitlines():
        if line.strip():
            assert json.loads(line)["jsonrpc"] == "2.0"
    if mcp_route.name == "in-process":
        assert "store migrated" in err  # the verbose log lines went to stderr, not stdout
    else:  # the daemon opened (and migrated) the store; the server's own lines go to stderr
        assert "mcp route daemon" in err and "mcp route in-process" not in err


@pytest.mark.deadline
def test_initialize_answers_before_the_model_loads(tmp_path: Path) -> None:
    import os

    with subprocess.Popen([bin_path()], cwd=tmp_path, env=dict(os.environ), stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdin and proc.stdout
        started = time.monotonic()
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        elapsed = time.monotonic() - started
        proc.stdin.close()
        proc.wait(timeout=30)
    assert reply["result"]["serverInfo"]["name"] == "bli-memory"
    # A deadline test: a generous bound that only fails if initialize waited for
    # something heavy (it must not block on the model).
    assert elapsed < 20


@pytest.mark.parametrize("bad", ["", "   "])
def test_save_rejects_empty_content(tmp_path: Path, bad: str) -> None:
    async def body(client):
        return await client.call_tool("save_memory", {"content": bad})

    r = run_session(tmp_path, body)
    assert r.is_error and "invalid_input" in text_of(r)


def test_closing_stdin_during_warm_up_ends_the_server_cleanly(tmp_path: Path) -> None:
    import os
    import subprocess

    from tests.conftest import bin_path

    init = ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
            '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n')
    for _ in range(2):  # the abort it guards against was intermittent
        r = subprocess.run([bin_path()], input=init, capture_output=True, text=True, cwd=tmp_path,
                           env=dict(os.environ), timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        assert '"id":1' in r.stdout.replace(" ", "")


def test_contradictory_saves_are_flagged_in_structured_content(tmp_path: Path) -> None:
    async def body(client):
        old = await client.call_tool("save_memory", {"content": "User loves Chinese food"})
        await client.call_tool("save_memory", {"content": "The frontend uses pnpm workspaces."})
        new = await client.call_tool("save_memory", {"content": "User hates Chinese food"})
        r = await _search(client, "what does the user think of Chinese food?")
        return old.structured_content["memory"]["id"], new.structured_content["memory"]["id"], r

    old_id, new_id, r = run_session(tmp_path, body)
    out = r.structured_content
    assert {x["id"] for x in out["results"][:2]} == {new_id, old_id}
    (conflict,) = out["conflicts"]
    assert conflict["newer"] == new_id and conflict["older"] == old_id and conflict["similarity"] >= 0.8
    assert f"Possible conflict: {new_id}" in text_of(r)
