"""The MCP command as a relay to the daemon's MCP server: what it loads, and its fallback.

Real processes throughout: the console script over stdio (the official MCP client or raw
JSON-RPC lines), a real daemon, ``kill -9``. The tool contract on both routes is
tests/core/mcp/test_mcp_server.py and friends, parametrised by tests/core/mcp/conftest.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import stdio_client

from bli_memory.core.hooks import daemon_client
from tests.conftest import bin_path
from tests.core.daemon.test_daemon import Daemons, daemons, wait_until
from tests.mcp_client import server_params, text_of

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

__all__ = ["daemons"]  # the fixture, imported for pytest

#: What a relay must never import: the SDK and what it brings, numpy and the model.
HEAVY = ("mcp", "mcp_types", "pydantic", "pydantic_settings", "anyio", "httpx", "starlette", "structlog",
         "numpy", "onnxruntime", "tokenizers")

#: The real command, with one addition: SIGUSR1 writes its ``sys.modules`` to argv[1].
SHIM = (
    "import json, signal, sys\n"
    "out = sys.argv[1]\n"
    "signal.signal(signal.SIGUSR1, lambda *_: open(out, 'w').write(json.dumps(sorted(sys.modules))))\n"
    "sys.argv = ['bli-memory-mcp']\n"
    "from bli_memory.core.cli.main import main\n"
    "sys.exit(main())\n"
)
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


def _rpc(proc: subprocess.Popen, ident: int, method: str, params: dict | None = None) -> dict:
    assert proc.stdin and proc.stdout
    message: dict = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def _modules_of_a_server_in_use(tmp_path: Path) -> tuple[list[str], dict]:
    """Start the command, save, search and ask memory_info; return its sys.modules and the info."""
    out = tmp_path / "modules.json"
    with subprocess.Popen([sys.executable, "-c", SHIM, str(out)], cwd=tmp_path, env=dict(os.environ),
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True) as proc:
        _rpc(proc, 1, "initialize", INIT)
        assert proc.stdin
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        calls = [("save_memory", {"content": "The release train leaves every second Tuesday."}),
                 ("search_memory", {"query": "when does the release train leave?"}),
                 ("memory_info", {})]
        replies = [_rpc(proc, i, "tools/call", {"name": n, "arguments": a})
                   for i, (n, a) in enumerate(calls, 2)]
        assert not any(r["result"].get("isError") for r in replies), replies
        assert replies[1]["result"]["structuredContent"]["count"] == 1
        proc.send_signal(signal.SIGUSR1)
        modules = wait_until(lambda: out.exists() and out.read_text() and json.loads(out.read_text()),
                             timeout=30, what="the module list")
        proc.stdin.close()
        proc.wait(timeout=60)
    return modules, replies[2]["result"]["structuredContent"]


def test_the_relay_imports_neither_the_sdk_nor_numpy(tmp_path: Path, daemons) -> None:
    daemon = daemons.start()
    modules, info = _modules_of_a_server_in_use(tmp_path)
    assert info["via"] == "daemon" and info["daemon"]["pid"] == daemon.pid
    assert info["daemon"]["rssBytes"] > 0
    assert [m for m in modules if m.split(".")[0] in HEAVY] == []
    ours = {m for m in modules if m.startswith("bli_memory.")}
    assert "bli_memory.core.mcp.server" not in ours and "bli_memory.core.embedded.store" not in ours
    assert daemon_client.ping()["sessions"] >= 1


def test_in_process_the_same_check_finds_the_sdk_and_numpy(tmp_path: Path) -> None:
    modules, info = _modules_of_a_server_in_use(tmp_path)  # BLI_MEMORY_DAEMON=0 (tests/conftest.py)
    assert info["via"] == "in-process"
    assert {"mcp", "numpy", "onnxruntime"} <= set(modules)


def _session(cwd: Path, errlog: Path, body, **env: str) -> dict:
    env.setdefault("BLI_MEMORY_LOG_LEVEL", "debug")  # the route lines are debug lines
    async def main() -> dict:
        with errlog.open("a") as err:
            transport = stdio_client(server_params(cwd, **env), errlog=err)
            async with Client(transport, read_timeout_seconds=120) as c:
                return await body(c)

    return anyio.run(main)


async def _info(client) -> dict:
    r = await client.call_tool("memory_info", {})
    assert not r.is_error, text_of(r)
    return r.structured_content


QUESTION = "what do staging deploys need?"
FACT_VPN = "Staging deploys need the VPN."
FACT_OLD = "Staging deploys used to need a ticket."


def test_kill_9_of_the_daemon_mid_session_the_session_goes_on_in_process(tmp_path: Path, daemons) -> None:
    first = daemons.start()
    errlog = tmp_path / "server.err"

    async def body(client) -> dict:
        saved = await client.call_tool("save_memory", {"content": FACT_VPN})
        old = await client.call_tool("save_memory", {"content": FACT_OLD})
        assert not saved.is_error and not old.is_error and (await _info(client))["via"] == "daemon"
        gone = await client.call_tool("forget_memory", {"id": old.structured_content["memory"]["id"]})
        assert not gone.is_error, text_of(gone)
        first.send_signal(signal.SIGSTOP)  # the next call waits on it ...
        results: list = []

        async def search() -> None:
            results.append(await client.call_tool("search_memory", {"query": QUESTION}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(search)
            await anyio.sleep(1.0)
            first.send_signal(signal.SIGKILL)  # ... and the daemon dies under it
        first.wait(timeout=10)
        (found,) = results
        assert not found.is_error, text_of(found)
        # Answered in process, by the request run again; the forgotten memory stays forgotten.
        assert [r["content"] for r in found.structured_content["results"]] == [FACT_VPN]
        again = await client.call_tool("save_memory", {"content": FACT_VPN})
        assert again.structured_content["status"] == "duplicate"  # the write is kept, once
        missing = await client.call_tool("forget_memory", {"id": "no-such-id"})
        assert missing.is_error and "not_found" in text_of(missing)  # errors as in process
        return await _info(client)

    info = _session(tmp_path, errlog, body)
    assert info["via"] == "in-process" and info["daemon"] is None
    log = errlog.read_text()
    assert f'mcp route daemon {{"pid": {first.pid}}}' in log
    # The search is run again (1), or was not yet passed on when the daemon died (0).
    assert re.search(r'mcp route in-process \{"reason": "daemon_gone", "replayed": [01]\}', log), log


#: A plugin whose backend dies by SIGKILL once a forget is committed, before its answer
#: (DIES_AFTER_FORGET), or as a forget by query begins, before it does anything
#: (DIES_BEFORE_QUERY_FORGET): loaded by the daemon only (its PYTHONPATH and variables).
DYING_PLUGIN = """
import os, signal
from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.hookspecs import hookimpl

class DiesAfterForget(EmbeddedBackend):
    def forget(self, **kwargs):
        super().forget(**kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

class DiesBeforeQueryForget(EmbeddedBackend):
    def forget(self, **kwargs):
        if kwargs.get("query"):
            os.kill(os.getpid(), signal.SIGKILL)
        return super().forget(**kwargs)

@hookimpl(tryfirst=True)
def memory_backend(settings, plugin_manager):
    if os.environ.get("DIES_AFTER_FORGET") == "1":
        return DiesAfterForget(settings.store_path)
    if os.environ.get("DIES_BEFORE_QUERY_FORGET") == "1":
        return DiesBeforeQueryForget(settings.store_path)
    return None
"""
FACT_VPN_TOO = "Staging deploys need the VPN on."  # close to FACT_VPN: a second run would take it


@pytest.mark.parametrize(("selector", "how"), [("content", "Forgotten by exact text"),
                                               ("query", "Forgotten by closest match (")])
def test_a_forget_by_text_or_query_the_daemon_died_in_answers_as_it_did(tmp_path: Path, daemons,
                                                                        selector: str, how: str) -> None:
    from tests.core.test_plugin_entry_points import _distribution

    env = _distribution(tmp_path / "site", "dyingplug", DYING_PLUGIN)
    first = daemons.start(env={**env, "DIES_AFTER_FORGET": "1"})

    async def body(client) -> tuple:
        saved = await client.call_tool("save_memory", {"content": FACT_VPN})
        near = await client.call_tool("save_memory", {"content": FACT_VPN_TOO})
        assert not saved.is_error and not near.is_error and (await _info(client))["via"] == "daemon"
        gone = await client.call_tool("forget_memory", {selector: FACT_VPN})  # the daemon dies in it
        found = await client.call_tool("search_memory", {"query": QUESTION})
        return saved.structured_content, gone, found.structured_content, await _info(client)

    saved, gone, found, info = _session(tmp_path, tmp_path / "server.err", body)
    first.wait(timeout=10)
    assert first.returncode == -signal.SIGKILL and info["via"] == "in-process"
    assert not gone.is_error, text_of(gone)
    assert gone.structured_content["forgotten"]["id"] == saved["memory"]["id"]
    assert text_of(gone).startswith(how)
    assert [r["content"] for r in found["results"]] == [FACT_VPN_TOO]  # forgotten once, not twice
    assert '"reason": "daemon_gone", "replayed": 1' in (tmp_path / "server.err").read_text()


#: Three memories close to one query; the first is the closest (cosine 0.93, then 0.92 for
#: the third and 0.89 for the second, all-MiniLM-L6-v2).
PORTS = ["The staging port is 8443.", "The staging port is 8443 on the staging server.",
         "Staging uses port 8443."]


def test_a_forget_by_query_the_daemon_died_before_runs_and_is_not_an_earlier_forgets(
        tmp_path: Path, daemons) -> None:
    from tests.core.test_plugin_entry_points import _distribution

    env = _distribution(tmp_path / "site", "dyingplug", DYING_PLUGIN)
    first = daemons.start(env={**env, "DIES_BEFORE_QUERY_FORGET": "1"})

    async def body(client) -> tuple:
        ids = []
        for text in PORTS:
            saved = await client.call_tool("save_memory", {"content": text})
            assert not saved.is_error, text_of(saved)
            ids.append(saved.structured_content["memory"]["id"])
        assert (await _info(client))["via"] == "daemon"
        by_id = await client.call_tool("forget_memory", {"id": ids[0]})  # answered by the daemon
        assert not by_id.is_error, text_of(by_id)
        gone = await client.call_tool("forget_memory", {"query": "staging port 8443"})  # it dies
        found = await client.call_tool("search_memory", {"query": "staging port 8443"})
        return ids, gone, found.structured_content, await _info(client)

    ids, gone, found, info = _session(tmp_path, tmp_path / "server.err", body)
    first.wait(timeout=10)
    assert first.returncode == -signal.SIGKILL and info["via"] == "in-process"
    assert not gone.is_error, text_of(gone)
    # Not the memory the earlier request forgot: this one's forget ran, in process.
    assert gone.structured_content["forgotten"]["id"] == ids[2], text_of(gone)
    assert text_of(gone).startswith("Forgotten by closest match (0.92")
    assert [r["content"] for r in found["results"]] == [PORTS[1]]
    assert '"reason": "daemon_gone", "replayed": 1' in (tmp_path / "server.err").read_text()


def test_the_session_id_survives_the_fallback(tmp_path: Path, daemons) -> None:
    first = daemons.start()

    async def body(client) -> list:
        a = await client.call_tool("save_memory", {"content": "Builds run on the big runner."})
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        b = await client.call_tool("save_memory", {"content": "Releases are tagged by the bot."})
        return [a.structured_content["memory"]["sessionId"], b.structured_content["memory"]["sessionId"]]

    before, after = _session(tmp_path, tmp_path / "server.err", body)
    assert before.startswith("mcp-") and before == after


def test_two_relays_of_two_folders_get_their_own_spaces_and_session_ids(tmp_path: Path, daemons) -> None:
    daemons.start()
    ids = []
    for name in ("alpha", "beta"):
        folder = tmp_path / name
        folder.mkdir()

        async def body(client, name=name) -> tuple:
            saved = await client.call_tool("save_memory", {"content": f"The {name} service listens on 80."})
            return (await _info(client))["containerTag"], saved.structured_content["memory"]["sessionId"]

        ids.append(_session(folder, tmp_path / "server.err", body))
    (space_a, session_a), (space_b, session_b) = ids
    assert space_a != space_b and "alpha" in space_a and "beta" in space_b
    assert session_a != session_b
    assert daemon_client.ping()["sessions"] == 2
    assert "mcp route in-process" not in (tmp_path / "server.err").read_text()


def test_a_container_tag_of_the_relay_names_its_space_in_the_daemon(tmp_path: Path, daemons) -> None:
    daemons.start()

    async def body(client) -> dict:
        return await _info(client)

    info = _session(tmp_path, tmp_path / "server.err", body, BLI_MEMORY_CONTAINER_TAG="team-notes")
    assert info["via"] == "daemon" and info["containerTag"] == "team-notes"


def test_a_socket_path_that_is_not_a_socket_means_in_process(tmp_path: Path, daemons) -> None:
    from bli_memory.core.paths import daemon_socket_path

    daemons.start().kill()
    path = daemon_socket_path()
    path.unlink(missing_ok=True)
    path.write_text("not a socket")  # never connected to, never replaced by the relay
    errlog = tmp_path / "server.err"

    async def body(client) -> dict:
        assert not (await client.call_tool("save_memory", {"content": FACT_VPN})).is_error
        return await _info(client)

    assert _session(tmp_path, errlog, body)["via"] == "in-process"
    assert 'mcp route in-process {"reason": "foreign_socket"}' in errlog.read_text()


def test_the_route_is_not_written_to_stderr_below_the_debug_level(tmp_path: Path, daemons) -> None:
    """Claude's MCP log files a server's stderr under "error" (issue 31, item 11)."""
    daemons.start()
    errlog = tmp_path / "server.err"

    async def body(client) -> dict:
        return await _info(client)

    assert _session(tmp_path, errlog, body, BLI_MEMORY_LOG_LEVEL="warning")["via"] == "daemon"
    assert "mcp route" not in errlog.read_text()


def test_a_relay_of_another_configuration_answers_in_process(tmp_path: Path, daemons) -> None:
    daemons.start()
    errlog = tmp_path / "server.err"

    async def body(client) -> dict:
        saved = await client.call_tool("save_memory", {"content": "Use tabs in Makefiles."})
        assert not saved.is_error, text_of(saved)
        return await _info(client)

    # Another similarity floor is another configuration: the daemon refuses (env_mismatch).
    info = _session(tmp_path, errlog, body, BLI_MEMORY_SIMILARITY_FLOOR="0.4")
    assert info["via"] == "in-process" and info["daemon"] is None
    assert 'mcp route in-process {"reason": "env_mismatch"}' in errlog.read_text()
    assert daemon_client.ping()["sessions"] == 0


def test_a_relay_of_an_older_release_answers_in_process_and_keeps_the_daemon(
        tmp_path: Path, daemons) -> None:
    daemon = daemons.start()
    shim = ("import sys\nimport bli_memory.core._version as v\nv.VERSION = '0.0.1'\n"
            "sys.argv = ['bli-memory-mcp']\nfrom bli_memory.core.cli.main import main\nsys.exit(main())\n")
    debug = {**os.environ, "BLI_MEMORY_LOG_LEVEL": "debug"}  # the route lines are debug lines
    with subprocess.Popen([sys.executable, "-c", shim], cwd=tmp_path, env=debug,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        assert _rpc(proc, 1, "initialize", INIT)["result"]["serverInfo"]["name"] == "bli-memory"
        info = _rpc(proc, 2, "tools/call", {"name": "memory_info", "arguments": {}})
        assert proc.stdin
        proc.stdin.close()
        proc.wait(timeout=60)
        assert proc.stderr
        err = proc.stderr.read()
    assert info["result"]["structuredContent"]["via"] == "in-process"
    assert 'mcp route in-process {"reason": "outdated_caller"}' in err
    assert daemon.poll() is None and daemon_client.ping()["pid"] == daemon.pid


def test_the_first_relay_starts_the_daemon_and_answers_through_it(tmp_path: Path, daemons) -> None:
    async def body(client) -> dict:
        r = await client.call_tool("search_memory", {"query": "anything at all"})
        assert not r.is_error and r.structured_content["count"] == 0
        return await _info(client)

    info = _session(tmp_path, tmp_path / "server.err", body)  # a hang: the client's read timeout
    assert info["via"] == "daemon", info
    assert info["daemon"]["pid"] in _pids(daemons)


def _pids(daemons: Daemons) -> list[int]:
    from tests.core.daemon.test_daemon import _daemon_pids

    return _daemon_pids(daemons.home)


def test_a_hung_daemon_is_left_after_a_ping_and_the_request_answered_in_process(
        tmp_path: Path, daemons) -> None:
    quiet, ping = 2.0, 2.0  # the relay's BLI_MEMORY_RELAY_* overrides, so the test waits seconds

    first = daemons.start()
    errlog = tmp_path / "server.err"

    async def body(client) -> tuple:
        assert not (await client.call_tool("save_memory", {"content": FACT_VPN})).is_error
        first.send_signal(signal.SIGSTOP)  # alive, but answers nothing, not even a ping
        try:
            asked = time.monotonic()
            found = await client.call_tool("search_memory", {"query": QUESTION})
            waited = time.monotonic() - asked
        finally:
            first.send_signal(signal.SIGCONT)
        return found, waited, await _info(client)

    found, waited, info = _session(tmp_path, errlog, body, BLI_MEMORY_RELAY_QUIET_S=str(quiet),
                                   BLI_MEMORY_RELAY_PING_TIMEOUT_S=str(ping))
    assert [r["content"] for r in found.structured_content["results"]] == [FACT_VPN]
    assert waited >= quiet and info["via"] == "in-process"
    assert 'mcp route in-process {"reason": "daemon_hung", "replayed": 1}' in errlog.read_text()


def test_a_stopped_daemon_hands_its_open_session_back_to_the_relay(tmp_path: Path, daemons) -> None:
    daemon = daemons.start()
    errlog = tmp_path / "server.err"

    async def body(client) -> dict:
        assert not (await client.call_tool("save_memory", {"content": FACT_VPN})).is_error
        assert daemon_client.stop() == daemon.pid  # `daemon --stop`, as uninstall does
        daemon.wait(timeout=30)
        found = await client.call_tool("search_memory", {"query": QUESTION})
        assert [r["content"] for r in found.structured_content["results"]] == [FACT_VPN]
        return await _info(client)

    assert _session(tmp_path, errlog, body)["via"] == "in-process"
    assert '"reason": "daemon_gone"' in errlog.read_text()


def test_an_open_session_keeps_the_daemon_from_its_idle_exit(tmp_path: Path, daemons) -> None:
    daemon = daemons.start("--idle-seconds", "8")

    async def body(client) -> dict:
        await anyio.sleep(11)  # longer than the idle time, with the session open and quiet
        assert daemon.poll() is None
        return await _info(client)

    assert _session(tmp_path, tmp_path / "server.err", body)["via"] == "daemon"
    wait_until(lambda: daemon.poll() is not None, timeout=60, what="the idle exit once the session ended")
    assert '"reason":"idle"' in daemons.stderr(daemon)


def test_a_lone_surrogate_in_a_request_id_gets_one_answer_and_no_fallback(tmp_path: Path, daemons) -> None:
    daemons.start()
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
    ]
    debug = {**os.environ, "BLI_MEMORY_LOG_LEVEL": "debug"}  # the route lines are debug lines
    with subprocess.Popen([bin_path()], cwd=tmp_path, env=debug, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdin and proc.stdout and proc.stderr
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        answer = json.loads(proc.stdout.readline())
        proc.stdin.close()
        rest = proc.stdout.read()
        err = proc.stderr.read()
    assert first["id"] == 0 and answer == {"jsonrpc": "2.0", "id": "\ufffd", "result": {}}
    assert rest.strip() == "", rest  # answered once, not again by a fallback
    assert "daemon_gone" not in err and "mcp route daemon" in err, err
