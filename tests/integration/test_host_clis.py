"""The real host CLIs accept what ``bli-memory-mcp install`` writes (docs/hosts.md, "Offline verification").

Each test installs into a temporary HOME and asks the host itself:

- Codex CLI: ``codex app-server`` (JSON-RPC over stdio) lists our three hooks as
  ``trusted`` and starts our MCP server with its tools (``mcpServerStatus/list``).
- Gemini CLI: ``gemini mcp list`` reports the server connected in a trusted folder and
  disabled (with our one-sentence warning from ``status``) in an untrusted one.
- Hermes Agent: ``hermes mcp test bli-memory`` connects, ``hermes hooks list`` shows
  our shell hooks allowed, ``hermes hooks test pre_llm_call`` gets our recall back,
  and ``hermes memory status`` shows the provider active.

A missing CLI skips with the package to install, or fails when
``BLI_MEMORY_REQUIRE_INTEGRATION=1`` (CI). Hermes is found through
``BLI_MEMORY_HERMES_BIN`` or ``hermes`` on PATH. Nothing here reaches the network: the
only model-free commands are used and every server is a local stdio process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from bli_memory.core.paths import store_path
from tests.conftest import bin_path

pytestmark = [pytest.mark.e2e, pytest.mark.e2e, pytest.mark.integration]

# Read at import: the autouse fixture drops every BLI_MEMORY_* variable from the test's environment.
REQUIRE = os.environ.get("BLI_MEMORY_REQUIRE_INTEGRATION") == "1"
HERMES_BIN = os.environ.get("BLI_MEMORY_HERMES_BIN")


def require(name: str, package: str) -> str:
    path = HERMES_BIN if name == "hermes" and HERMES_BIN else shutil.which(name)
    if path is None or not os.access(path, os.X_OK):
        message = f"the {name} CLI ({package}) is not installed"
        if REQUIRE:
            pytest.fail(f"{message}, and BLI_MEMORY_REQUIRE_INTEGRATION=1 requires it")
        pytest.skip(message)
    return path


def host_env(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), **extra}
    for key in ("CODEX_HOME", "COPILOT_HOME", "GEMINI_CLI_HOME", "HERMES_HOME", "GEMINI_CLI_TRUST_WORKSPACE"):
        env.pop(key, None)
    if HERMES_BIN:
        env["BLI_MEMORY_HERMES_BIN"] = HERMES_BIN
    return env


def install(home: Path, host: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([bin_path(), "install", "--host", host], capture_output=True, text=True,
                       env=host_env(home), cwd=cwd, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


# --- Codex -------------------------------------------------------------------------------


class AppServer:
    """A ``codex app-server`` child speaking newline-delimited JSON-RPC on stdio."""

    def __init__(self, codex: str, home: Path, cwd: Path) -> None:
        self.proc = subprocess.Popen([codex, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=host_env(home), cwd=cwd, text=True)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def call(self, request_id: int, method: str, params: dict[str, Any], timeout: float = 120) -> Any:
        import selectors

        self.send({"id": request_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not sel.select(timeout=max(0.0, end - time.monotonic())):
                break
            line = self.proc.stdout.readline()
            if not line:
                break
            message = json.loads(line)
            if message.get("id") == request_id:
                assert "error" not in message, message
                return message["result"]
        raise AssertionError(f"codex app-server did not answer {method} (stderr: {self.stderr()})")

    def stderr(self) -> str:
        self._stop()
        assert self.proc.stderr is not None
        return self.proc.stderr.read()[-2000:]

    def _stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)

    def close(self) -> None:
        self._stop()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def test_codex_app_server_trusts_our_hooks_and_starts_our_server(temp_home: Path, project: Path) -> None:
    codex = require("codex", "npm @openai/codex")
    install(temp_home, "codex", project)
    server = AppServer(codex, temp_home, project)
    try:
        server.call(1, "initialize", {"clientInfo": {"name": "bli-memory-tests", "version": "0"}})
        server.send({"method": "initialized"})
        listing = server.call(2, "hooks/list", {"cwds": [str(project)]})
        [entry] = listing["data"]
        assert entry["errors"] == [] and entry["warnings"] == []
        ours = {h["eventName"]: h for h in entry["hooks"] if bin_path() in h["command"]}
        assert set(ours) == {"sessionStart", "userPromptSubmit", "stop"}
        for hook in ours.values():
            assert hook["trustStatus"] == "trusted" and hook["enabled"] is True, hook
            assert hook["command"].endswith("--host codex") and hook["source"] == "user"
        assert ours["userPromptSubmit"]["timeoutSec"] == 5
        status = server.call(3, "mcpServerStatus/list", {}, timeout=180)
        [mine] = [s for s in status["data"] if s["name"] == "bli-memory"]
        assert mine["toolsError"] is None, mine["toolsError"]
        assert mine["serverInfo"]["name"] == "bli-memory"
        assert {"search_memory", "save_memory", "forget_memory"} <= set(mine["tools"])
    finally:
        server.close()


# --- Gemini ------------------------------------------------------------------------------


def gemini_mcp_list(gemini: str, home: Path, cwd: Path) -> str:
    r = subprocess.run([gemini, "mcp", "list"], capture_output=True, text=True, env=host_env(home),
                       cwd=cwd, timeout=180, stdin=subprocess.DEVNULL)
    return r.stdout + r.stderr


def test_gemini_mcp_list_reports_our_server_connected_in_a_trusted_folder(temp_home: Path,
                                                                         project: Path) -> None:
    gemini = require("gemini", "npm @google/gemini-cli")
    install(temp_home, "gemini", project)

    untrusted = gemini_mcp_list(gemini, temp_home, project)
    assert "disabled because this folder is untrusted" in untrusted, untrusted
    status = subprocess.run([bin_path(), "status", "--host", "gemini"], capture_output=True, text=True,
                            env=host_env(temp_home), cwd=project, timeout=120).stdout
    assert "an untrusted folder; to trust it run" in status

    (temp_home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    out = gemini_mcp_list(gemini, temp_home, project)
    line = next((ln for ln in out.splitlines() if "bli-memory:" in ln), "")
    assert line.startswith("✓ bli-memory:") and line.endswith("Connected"), out
    assert bin_path() in line


# --- Hermes ------------------------------------------------------------------------------


def hermes_run(hermes: str, home: Path, cwd: Path, *args: str) -> str:
    r = subprocess.run([hermes, *args], capture_output=True, text=True, env=host_env(home), cwd=cwd,
                       timeout=180, stdin=subprocess.DEVNULL)
    return r.stdout + r.stderr


def test_hermes_connects_to_our_server_and_runs_our_hooks(temp_home: Path, project: Path,
                                                          tmp_path: Path) -> None:
    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.memory.spaces import derive_space

    hermes = require("hermes", 'PyPI "hermes-agent[mcp]"; or set BLI_MEMORY_HERMES_BIN')
    r = install(temp_home, "hermes", project)
    assert "[mcp] extra" not in r.stdout  # the Hermes under test has its mcp extra

    out = hermes_run(hermes, temp_home, project, "mcp", "test", "bli-memory")
    assert "✓ Connected" in out, out
    assert "Tools discovered" in out and "search_memory" in out

    hooks = hermes_run(hermes, temp_home, project, "hooks", "list")
    for sub in ("prompt", "stop"):
        line = next((ln for ln in hooks.splitlines() if f"hook {sub} --host hermes" in ln), "")
        assert "✓ allowed" in line, hooks

    backend = EmbeddedBackend(store_path())
    backend.save("The user's favourite colour is teal.", space=derive_space(project).tag)
    backend.close()
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps({"session_id": "it-1", "user_message": "What is my favourite colour?",
                                   "conversation_history": [], "is_first_turn": True, "platform": "cli"}))
    fired = hermes_run(hermes, temp_home, project, "hooks", "test", "pre_llm_call",
                       "--payload-file", str(payload))
    assert "bli-memory-recall" in fired and "teal" in fired, fired

    memory = hermes_run(hermes, temp_home, project, "memory", "status")
    assert "Provider:  bli-memory" in memory and "available ✓" in memory, memory
