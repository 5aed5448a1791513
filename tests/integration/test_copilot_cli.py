"""The real GitHub Copilot CLI runs what ``bli-memory-mcp install --host copilot`` writes.

``copilot mcp list --json`` and ``copilot instruction list --json`` show our server and our
instructions file; then one ``copilot -p`` turn runs for real with no GitHub login:
``COPILOT_OFFLINE=true`` and ``COPILOT_PROVIDER_BASE_URL`` (``copilot help environment``)
point the CLI at :class:`ModelStub`, a local OpenAI-compatible chat-completions endpoint
that records each request and answers one fixed reply. The recorded request shows what
the model was given: our MCP tools (so the CLI started and listed our server), the
sessionStart context, the userPromptSubmitted recall and the instructions entry; the
agentStop hook then queues the exchange from the real transcript. Nothing reaches the
network.

A missing ``copilot`` skips with the package to install, or fails when
``BLI_MEMORY_REQUIRE_INTEGRATION=1`` (CI).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import bin_path
from tests.hooks_util import extract_jobs, save
from tests.integration.test_host_clis import HERMES_BIN, host_env, require

pytestmark = [pytest.mark.e2e, pytest.mark.e2e, pytest.mark.integration]

REPLY = "Noted: the team service stays on Postgres 16."


class ModelStub:
    """A local OpenAI chat-completions endpoint (streamed or not) that keeps every request body."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                models = {"object": "list", "data": [{"id": "gpt-4o", "object": "model"}]}
                self._send(200, "application/json", json.dumps(models).encode())

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                stub.requests.append(body)
                base = {"id": "stub-1", "created": int(time.time()), "model": "gpt-4o"}
                usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                if not body.get("stream"):
                    message = {"role": "assistant", "content": REPLY}
                    answer = {**base, "object": "chat.completion", "usage": usage,
                              "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
                    self._send(200, "application/json", json.dumps(answer).encode())
                    return
                chunks = [{**base, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta,
                                                                                  "finish_reason": end}]}
                          for delta, end in (({"role": "assistant", "content": REPLY}, None), ({}, "stop"))]
                chunks.append({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
                text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                self._send(200, "text/event-stream", text.encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def warm_daemon(temp_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A ready daemon for this HOME, so the prompt hook answers warm within its 2 s deadline."""
    from tests.core.daemon.test_daemon import Daemons

    monkeypatch.setenv("BLI_MEMORY_DAEMON", "1")
    daemons = Daemons(temp_home, tmp_path)
    # The hooks run with host_env, which sets BLI_MEMORY_HERMES_BIN when the suite has it: the
    # daemon gets the same, or its config check sends every hook the direct way (env_mismatch).
    same = {"BLI_MEMORY_HERMES_BIN": HERMES_BIN} if HERMES_BIN else {}
    try:
        daemons.start(env=same)
        yield
    finally:
        daemons.kill_all()


@pytest.fixture
def model_stub() -> Iterator[ModelStub]:
    stub = ModelStub()
    yield stub
    stub.close()


def copilot_json(copilot: str, home: Path, cwd: Path, *args: str) -> Any:
    r = subprocess.run([copilot, *args, "--json"], capture_output=True, text=True, env=host_env(home),
                       cwd=cwd, timeout=180, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def hook_outcomes() -> dict[str, Any]:
    """Outcome counts per hook event from the hook statistics (``{"prompt": {"ok": 1, ...}, ...}``)."""
    from bli_memory.core.paths import hook_stats_path

    hours = json.loads(hook_stats_path().read_text())["hours"]
    return {event: counts for hour in hours.values() for event, counts in hour.items()}


def run_prompt(copilot: str, home: Path, project: Path, stub: ModelStub, prompt: str) -> str:
    """One ``copilot -p`` turn against the stub; returns what the CLI printed."""
    env = host_env(home, COPILOT_OFFLINE="true", COPILOT_PROVIDER_BASE_URL=stub.url,
                      COPILOT_MODEL="gpt-4o", COPILOT_AUTO_UPDATE="false")
    run = subprocess.run([copilot, "-p", prompt, "--allow-all-tools", "--no-auto-update", "--no-color"],
                         capture_output=True, text=True, env=env, cwd=project, timeout=300,
                         stdin=subprocess.DEVNULL)
    assert run.returncode == 0 and REPLY in run.stdout, run.stdout + run.stderr
    return run.stdout + run.stderr


def test_copilot_lists_our_server_runs_our_hooks_and_captures_the_turn(temp_home: Path, project: Path,
                                                                       model_stub: ModelStub) -> None:
    copilot = require("copilot", "npm @github/copilot")
    r = subprocess.run([bin_path(), "install", "--host", "copilot", "--copilot-instructions"],
                       capture_output=True, text=True, env=host_env(temp_home), cwd=project, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr

    listed = copilot_json(copilot, temp_home, project, "mcp", "list")["mcpServers"]["bli-memory"]
    assert listed["command"] == bin_path() and listed["source"] == "user" and listed["enabled"] is True
    sources = [s["sourcePath"] for s in copilot_json(copilot, temp_home, project, "instruction", "list")]
    assert str(temp_home / ".copilot" / "instructions" / "bli-memory.instructions.md") in sources

    save(project, "The team service runs on Postgres 16 with pgvector.")
    shown = run_prompt(copilot, temp_home, project, model_stub,
                       "Which Postgres version does the team service use?")
    assert "[bli-memory]" not in shown  # receipts stay out of the person's view

    [request] = model_stub.requests
    tools = {(t.get("function") or t).get("name") for t in request["tools"]}
    assert {"bli-memory-search_memory", "bli-memory-save_memory"} <= tools  # our server is connected
    system, *messages = request["messages"]
    assert "call the `search_memory` tool" in json.dumps(system["content"])  # the instructions entry
    context = [m["content"] for m in messages
               if m["role"] == "user" and "<bli-memory-context>" in m["content"]]
    assert context and "Postgres 16 with pgvector" in context[0]  # sessionStart recall reached the model

    [job] = extract_jobs()  # agentStop read the real transcript and queued the turn
    assert job["source"] == "hook:copilot" and job["state"] == "queued"
    assert job["text"] == f"User: Which Postgres version does the team service use?\n\nAssistant: {REPLY}"

    undo = subprocess.run([bin_path(), "uninstall", "--host", "copilot"], capture_output=True, text=True,
                          env=host_env(temp_home), cwd=project, timeout=180)
    assert undo.returncode == 0, undo.stderr
    assert "bli-memory" not in copilot_json(copilot, temp_home, project, "mcp", "list")["mcpServers"]
    assert not (temp_home / ".copilot" / "hooks" / "bli-memory.json").exists()


def test_copilot_puts_prompt_recall_in_front_of_the_model(temp_home: Path, project: Path, warm_daemon: None,
                                                          model_stub: ModelStub) -> None:
    """userPromptSubmitted's additionalContext reaches the model (Copilot CLI 1.0.65 and later)."""
    copilot = require("copilot", "npm @github/copilot")
    r = subprocess.run([bin_path(), "install", "--host", "copilot"], capture_output=True, text=True,
                       env=host_env(temp_home), cwd=project, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    # The relevant memory is the oldest of nine, so session-start's Recent Context (8) leaves it out.
    save(project, "The staging cluster is called heron and runs in eu-west-3.",
         *(f"Unrelated note number {i}: the linter config lives in ruff.toml." for i in range(8)))
    run_prompt(copilot, temp_home, project, model_stub, "Which region does the staging cluster run in?")

    [request] = model_stub.requests
    users = [json.dumps(m["content"]) for m in request["messages"] if m["role"] == "user"]
    start = [u for u in users if "<bli-memory-context>" in u]
    assert start and "heron" not in start[0]
    prompt = [u for u in users if "Which region does the staging cluster" in u]
    outcomes = hook_outcomes()  # a prompt "failed:timeout" is a loaded machine missing the 2 s deadline
    assert prompt and "<system_reminder>" in prompt[0], (users, outcomes)
    assert "<bli-memory-recall>" in prompt[0], (users, outcomes)
    assert "heron" in prompt[0] and "eu-west-3" in prompt[0]
