"""The MCP server's daemon route: what the server process loads, and what happens when the daemon dies.

Real processes throughout: the console script's MCP server over stdio, a real daemon,
``kill -9``. The tool contract on both routes is tests/core/mcp/test_mcp_server.py and
friends, parametrised by tests/core/mcp/conftest.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp.client import Client
from mcp.client.stdio import stdio_client

from bli_memory.core.hooks import daemon_client
from bli_memory.core.mcp.daemon_route import REPROBE_S
from tests.core.daemon.test_daemon import Daemons, daemons, wait_until
from tests.mcp_client import server_params, text_of

__all__ = ["daemons"]  # the fixture, imported for pytest

HEAVY = ("numpy", "onnxruntime", "tokenizers")

#: The real server, with one addition: SIGUSR1 writes its ``sys.modules`` to argv[1].
SHIM = (
    "import json, signal, sys\n"
    "out = sys.argv[1]\n"
    "signal.signal(signal.SIGUSR1, lambda *_: open(out, 'w').write(json.dumps(sorted(sys.modules))))\n"
    "sys.argv = ['bli-memory-mcp']\n"
    "from bli_memory.core.cli.main import main\n"
    "sys.exit(main())\n"
)


def _rpc(proc: subprocess.Popen, ident: int, method: str, params: dict | None = None) -> dict:
    assert proc.stdin and proc.stdout
    message: dict = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def _modules_of_a_server_in_use(tmp_path: Path) -> tuple[list[str], dict]:
    """Start the server, save, search and ask memory_info; return its sys.modules and the info."""
    out = tmp_path / "modules.json"
    with subprocess.Popen([sys.executable, "-c", SHIM, str(out)], cwd=tmp_path, env=dict(os.environ),
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True) as proc:
        _rpc(proc, 1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "0"}})
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


def test_on_the_daemon_route_the_server_loads_neither_numpy_nor_the_model(tmp_path: Path, daemons) -> None:
    daemon = daemons.start()
    before = daemon_client.ping()["calls"]
    modules, info = _modules_of_a_server_in_use(tmp_path)
    assert info["via"] == "daemon" and info["daemon"]["pid"] == daemon.pid
    assert [m for m in modules if m.split(".")[0] in HEAVY] == []
    assert "bli_memory.core.embedded.store" not in modules  # nor opens the store
    assert daemon_client.ping()["calls"] >= before + 3  # the save went through the daemon too


def test_in_process_the_same_check_finds_numpy_and_the_model(tmp_path: Path) -> None:
    modules, info = _modules_of_a_server_in_use(tmp_path)  # BLI_MEMORY_DAEMON=0 (tests/conftest.py)
    assert info["via"] == "in-process"
    assert {"numpy", "onnxruntime"} <= set(modules)


def _session(tmp_path: Path, errlog: Path, body) -> dict:
    async def main() -> dict:
        with errlog.open("a") as err:
            transport = stdio_client(server_params(tmp_path), errlog=err)
            async with Client(transport, read_timeout_seconds=120) as c:
                return await body(c)

    return anyio.run(main)


async def _info(client) -> dict:
    r = await client.call_tool("memory_info", {})
    assert not r.is_error, text_of(r)
    return r.structured_content


QUESTION = "what do staging deploys need?"
FACT_VPN = "Staging deploys need the VPN."


def test_kill_9_of_the_daemon_mid_call_answers_in_process_then_a_new_daemon_takes_over(
        tmp_path: Path, daemons) -> None:
    first = daemons.start()
    errlog = tmp_path / "server.err"

    async def body(client) -> dict:
        saved = await client.call_tool("save_memory", {"content": FACT_VPN})
        assert not saved.is_error and (await _info(client))["via"] == "daemon"
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
        assert [r["content"] for r in found.structured_content["results"]] == [FACT_VPN]
        # The next calls answer in process for a pause, then through a new daemon (on a busy
        # machine the search in process can outlast the pause): the answers are the same.
        again = await client.call_tool("save_memory", {"content": FACT_VPN})
        assert again.structured_content["status"] == "duplicate"  # the write is kept, once
        gone = await client.call_tool("forget_memory", {"id": "no-such-id"})
        assert gone.is_error and "not_found" in text_of(gone)  # errors as in process
        await anyio.sleep(REPROBE_S + 0.2)
        # Re-probing finds the stale socket, starts a daemon (the last one had served) and uses it.
        later = await _info(client)
        assert later["via"] == "daemon" and later["daemon"]["pid"] not in (None, first.pid)
        found = await client.call_tool("search_memory", {"query": QUESTION})
        assert found.structured_content["count"] == 1
        return later

    _session(tmp_path, errlog, body)
    log = errlog.read_text()
    # The search under the kill answered in process (the daemon's reply never came).
    assert any(f'mcp route in-process {{"reason": "{r}"}}' in log for r in ("bad_reply", "unreachable"))
    assert log.index("mcp route in-process") < log.rindex("mcp route daemon")


def test_kill_9_between_calls_is_bridged_by_a_new_daemon(tmp_path: Path, daemons) -> None:
    first = daemons.start()
    errlog = tmp_path / "server.err"

    async def body(client) -> dict:
        assert not (await client.call_tool("save_memory", {"content": FACT_VPN})).is_error
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        found = await client.call_tool("search_memory", {"query": QUESTION})
        assert [r["content"] for r in found.structured_content["results"]] == [FACT_VPN]
        return await _info(client)

    info = _session(tmp_path, errlog, body)
    assert info["via"] == "daemon" and info["daemon"]["pid"] != first.pid
    assert "mcp route in-process" not in errlog.read_text()


def test_a_socket_path_that_is_not_a_socket_means_in_process(tmp_path: Path, daemons) -> None:
    from bli_memory.core.paths import daemon_socket_path

    daemons.start().kill()
    path = daemon_socket_path()
    path.unlink(missing_ok=True)
    path.write_text("not a socket")  # never connected to, never replaced by the route
    errlog = tmp_path / "server.err"

    async def body(client) -> dict:
        assert not (await client.call_tool("save_memory", {"content": FACT_VPN})).is_error
        return await _info(client)

    assert _session(tmp_path, errlog, body)["via"] == "in-process"
    assert 'mcp route in-process {"reason": "foreign_socket"}' in errlog.read_text()


def _ready_pid(exclude: int) -> int | None:
    try:
        reply = daemon_client.ping()
    except daemon_client.DaemonUnavailable:
        return None
    pid = reply.get("pid")
    return pid if reply.get("ready") and pid != exclude else None


def test_a_server_of_another_configuration_answers_in_process(tmp_path: Path, daemons) -> None:
    daemons.start()

    async def main() -> dict:
        # Another similarity floor is another configuration: the daemon refuses (env_mismatch).
        params = server_params(tmp_path, BLI_MEMORY_SIMILARITY_FLOOR="0.4")
        async with Client(params, read_timeout_seconds=60) as client:
            saved = await client.call_tool("save_memory", {"content": "Use tabs in Makefiles."})
            assert not saved.is_error, text_of(saved)
            return (await client.call_tool("memory_info", {})).structured_content

    info = anyio.run(main)
    assert info["via"] == "in-process" and info["daemon"] is None
    assert daemon_client.ping()["calls"] == 0


def test_the_first_server_starts_the_daemon_and_answers_through_it(tmp_path: Path, daemons) -> None:
    async def main() -> dict:
        async with Client(server_params(tmp_path), read_timeout_seconds=60) as client:
            r = await client.call_tool("search_memory", {"query": "anything at all"})
            assert not r.is_error and r.structured_content["count"] == 0
            return (await client.call_tool("memory_info", {})).structured_content

    started = time.monotonic()
    info = anyio.run(main)
    assert info["via"] == "daemon", info
    assert info["daemon"]["pid"] in _pids(daemons)
    assert time.monotonic() - started < 120  # a bound on hanging, not a measure of speed


def _pids(daemons: Daemons) -> list[int]:
    from tests.core.daemon.test_daemon import _daemon_pids

    return _daemon_pids(daemons.home)
