"""The host extractor with the real host CLIs at the pinned versions, pointed at a local
model stub on 127.0.0.1 (:mod:`tests.model_stubs`) through each CLI's documented
base-URL setting, exactly as the worker runs them.

For each of Claude Code, Codex CLI and Gemini CLI: our hooks are installed in the host's
config (so they would fire if the CLI ran them), the person opts in, the stop hook queues
one exchange, and ``bli-memory-mcp worker --once`` distils it. The stub must get one model
request holding the digest (the person's words, no code body) and no tool schema; no hook
of ours may write a receipt; the stub's canned fact must be reconciled into the space. Then:
without a login the job falls back to the rules (``not_logged_in``); past the daily
budget no request is made; a request killed mid-way leaves no process behind.

A missing CLI skips with the package to install, or fails with
``BLI_MEMORY_REQUIRE_INTEGRATION=1`` (CI).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import bin_path, processes_of
from tests.core.extraction.test_worker import jobs, live, stop, write_transcript
from tests.hooks_util import receipt_log_path
from tests.integration.test_host_clis import host_env, require
from tests.model_stubs import ModelStub

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

FACT = "The staging database listens on port 6543."
REPLY = json.dumps({"facts": [{"text": FACT, "subject": "staging database port", "kind": "setup",
                               "source": "staging db is on 6543", "outdates": None}]})
SAID = "We moved the staging database to port 6543 because 5432 clashed with the local one."
CODE_BODY = "PRIVATE_FILE_BODY_MARKER = 1"
TURN = (f"{SAID}\n```python\n{CODE_BODY}\n```",
        "Noted: staging db is on 6543 now; I updated deploy/staging.toml.")
#: Variables a machine may carry that would give a CLI a login it should not have here.
LOGINS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY",
          "OPENAI_BASE_URL", "CODEX_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL",
          "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA")
PACKAGES = {"claude": "npm @anthropic-ai/claude-code", "codex": "npm @openai/codex",
            "gemini": "npm @google/gemini-cli"}


def _gemini_api_key_login(home: Path, stub: ModelStub) -> None:
    """The person chose API-key login (``security.auth.selectedType``), as ``/auth`` saves it;
    else the CLI takes a base URL for a gateway and refuses (exit 41)."""
    settings = home / ".gemini" / "settings.json"
    data = json.loads(settings.read_text()) if settings.exists() else {}
    data["security"] = {"auth": {"selectedType": "gemini-api-key"}}
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(data, indent=2))


def _no_setup(home: Path, stub: ModelStub) -> None:
    pass


def _codex_api_key_login(home: Path, stub: ModelStub) -> None:
    """An API key saved by ``codex login --with-api-key`` and ``openai_base_url`` (Codex's
    documented base URL for the built-in provider) at the top of ``config.toml``."""
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    before = config.read_text() if config.exists() else ""
    config.write_text(f'openai_base_url = "{stub.url}/v1"\n' + before)
    r = subprocess.run(["codex", "login", "--with-api-key"], input="sk-dummy", capture_output=True, text=True,
                       env=_env(home), timeout=60)
    assert r.returncode == 0, r.stderr


#: Per host: the variables that point its CLI at the stub with a dummy key, and the login
#: state it needs in HOME for that.
STUBBED: dict[str, tuple[Callable[[ModelStub], dict[str, str]], Callable[[Path, ModelStub], None]]] = {
    "claude": (lambda s: {"ANTHROPIC_BASE_URL": s.url, "ANTHROPIC_API_KEY": "dummy"}, _no_setup),
    "codex": (lambda s: {}, _codex_api_key_login),
    "gemini": (lambda s: {"GOOGLE_GEMINI_BASE_URL": s.url, "GEMINI_API_KEY": "dummy"}, _gemini_api_key_login),
}


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = host_env(home)
    for key in LOGINS:
        env.pop(key, None)
    return {**env, **extra}


def _ours(home: Path, *args: str, cwd: Path | None = None) -> str:
    r = subprocess.run([bin_path(), *args], capture_output=True, text=True, env=_env(home), cwd=cwd,
                       timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _worker(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([bin_path(), "worker", "--once"], capture_output=True, text=True, env=env, timeout=280)
    assert r.returncode == 0, r.stderr
    return r


def _queue(project: Path, tmp_path: Path, n: int = 1) -> None:
    for i in range(n):
        stop(project, write_transcript(tmp_path / f"turn{i}.jsonl", [TURN]))


def _hook_trace(home: Path) -> tuple[str, str]:
    """What every run of our hooks leaves: the hourly counts and the receipt log."""
    from bli_memory.core.paths import hook_stats_path

    env = _env(home)
    return tuple(p.read_text() if p.exists() else "" for p in (hook_stats_path(env), receipt_log_path(env)))


def _tools(body: dict[str, Any]) -> list[Any]:
    """Every tool declared in a model request, in any of the three APIs' shapes."""
    declared = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and "functionDeclarations" in tool:
            declared += tool["functionDeclarations"]  # Gemini: one list per tool entry
        else:
            declared.append(tool)
    return declared


def _extraction(job: dict[str, Any]) -> dict[str, Any]:
    return (job["outcome"] or {}).get("extraction") or {}


def _cli_processes(home: Path) -> list[int]:
    """Live processes whose HOME is ``home``, other than our own commands."""
    return processes_of(home, lambda cmdline: b"bli-memory-mcp" not in cmdline)


@pytest.mark.parametrize("host", sorted(STUBBED))
def test_the_host_cli_sends_one_digest_request_and_its_facts_are_kept(
        host: str, temp_home: Path, project: Path, tmp_path: Path) -> None:
    require(host, PACKAGES[host])
    point_at, login = STUBBED[host]
    _ours(temp_home, "install", "--host", host, cwd=project)  # our hooks would fire if the CLI ran them
    stub = ModelStub(REPLY)
    login(temp_home, stub)
    said = _ours(temp_home, "extractor", "use", "host", "--host", host)
    assert "requests count against that account" in said and "digest" in said
    _queue(project, tmp_path)
    hooks_ran = _hook_trace(temp_home)
    try:
        _worker(_env(temp_home, **point_at(stub)))
    finally:
        stub.close()
    asked = stub.model_requests()
    assert len(asked) == 1, [r["path"] for r in asked]
    sent = json.dumps(asked[0]["body"])
    assert SAID.split(" because")[0] in sent and "deploy/staging.toml" in sent  # the digest
    assert CODE_BODY not in sent  # a code body never leaves
    assert _tools(asked[0]["body"]) == []
    assert _hook_trace(temp_home) == hooks_ran  # no hook of ours ran inside the request
    assert FACT in [m.content for m in live(project)]
    [job] = jobs()
    x = _extraction(job)
    assert (x["extractor"], x["fallback"], x["input_tokens"], x["output_tokens"]) == (
        f"host:{host}", None, 42, 17)
    assert not any((temp_home / ".local/state/bli-cockpit/headless").rglob("*.*"))  # emptied after


@pytest.mark.parametrize("host", sorted(STUBBED))
def test_without_a_login_the_job_falls_back_to_the_rules(
        host: str, temp_home: Path, project: Path, tmp_path: Path) -> None:
    require(host, PACKAGES[host])
    _ours(temp_home, "extractor", "use", "host", "--host", host, "--timeout", "90")
    _queue(project, tmp_path)
    _worker(_env(temp_home))
    [job] = jobs()
    assert job["state"] == "done"
    x = _extraction(job)
    assert (x["fallback"], x["extractor"]) == ("not_logged_in", "default"), x
    assert any("6543" in m.content for m in live(project))  # the rules kept what they could
    assert _cli_processes(temp_home) == []
    today = json.loads(_ours(temp_home, "extractor", "status", "--json"))["today"]
    assert (today["requests"], today["fallbacks"]) == (0, {"not_logged_in": 1})  # nothing was sent


def test_past_the_daily_budget_no_request_is_made_and_the_rules_capture(
        temp_home: Path, project: Path, tmp_path: Path) -> None:
    require("claude", PACKAGES["claude"])
    _ours(temp_home, "extractor", "use", "host", "--host", "claude", "--daily-requests", "2")
    _queue(project, tmp_path, 3)
    stub = ModelStub(REPLY)
    try:
        _worker(_env(temp_home, **STUBBED["claude"][0](stub)))
    finally:
        stub.close()
    assert len(stub.model_requests()) == 2
    done = [_extraction(j) for j in jobs()]
    assert [x["fallback"] for x in done] == [None, None, "budget_spent"]
    assert jobs()[2]["outcome"]["added"] + jobs()[2]["outcome"]["unchanged"] >= 1  # the rules still ran
    status = _ours(temp_home, "extractor", "status", "--json")
    today = json.loads(status)["today"]
    assert (today["requests"], today["fallbacks"]) == (2, {"budget_spent": 1})


def test_a_request_past_its_timeout_is_killed_with_its_whole_group(
        temp_home: Path, project: Path, tmp_path: Path) -> None:
    require("claude", PACKAGES["claude"])
    _ours(temp_home, "extractor", "use", "host", "--host", "claude", "--timeout", "8")
    _queue(project, tmp_path)
    stub = ModelStub(REPLY, hang=True)
    try:
        _worker(_env(temp_home, **STUBBED["claude"][0](stub)))
        assert len(stub.model_requests()) == 1  # it was asked, and never answered
    finally:
        stub.close()
    assert _extraction(jobs()[0])["fallback"] == "timeout"
    assert _cli_processes(temp_home) == []


def _until(check: Callable[[], bool], within_s: float) -> bool:
    give_up = time.monotonic() + within_s
    while not check():
        if time.monotonic() > give_up:
            return False
        time.sleep(0.2)
    return True


def test_a_worker_killed_mid_request_leaves_no_cli_running(
        temp_home: Path, project: Path, tmp_path: Path) -> None:
    require("claude", PACKAGES["claude"])
    _ours(temp_home, "extractor", "use", "host", "--host", "claude", "--timeout", "200")
    _queue(project, tmp_path)
    stub = ModelStub(REPLY, hang=True)
    env = _env(temp_home, **STUBBED["claude"][0](stub))
    worker = subprocess.Popen([bin_path(), "worker", "--once"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        assert _until(lambda: bool(stub.model_requests()), 120), "the CLI never asked the stub"
        assert _cli_processes(temp_home), "the CLI should be waiting for its answer"
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        assert _until(lambda: not _cli_processes(temp_home), 60), _cli_processes(temp_home)
    finally:
        if worker.poll() is None:
            worker.kill()
        stub.close()
