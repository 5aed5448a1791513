"""GitHub Copilot CLI adapter: real hook runs on payloads and a transcript recorded from
``copilot -p`` 1.0.102 (tests/data/copilot/), and install/uninstall/status/print-config."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, bin_path
from tests.hooks_util import extract_jobs as jobs
from tests.hooks_util import run_hook, save

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

DATA = REPO_ROOT / "tests" / "data" / "copilot"
HOST = ("--host", "copilot")
#: The exchange in tests/data/copilot/events.jsonl (a real run against a local model stub).
RECORDED_USER = "Which Postgres version does the team service use?"
RECORDED_REPLY = "Noted: the project uses Postgres 16 for the team service."


def fixture(name: str, **overrides: object) -> dict:
    data = json.loads((DATA / name).read_text())
    data.update(overrides)
    return data


def transcript(tmp_path: Path, *extra: dict) -> str:
    path = tmp_path / "events.jsonl"
    text = (DATA / "events.jsonl").read_text()
    path.write_text(text + "".join(json.dumps(e) + "\n" for e in extra))
    return str(path)


def cli(*args: str, home: Path, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "HOME": str(home), **env}
    if "COPILOT_HOME" not in env:
        full.pop("COPILOT_HOME", None)
    return subprocess.run([bin_path(), *args], capture_output=True, text=True, env=full, timeout=120, cwd=cwd)


def context_of(stdout: str) -> str:
    """Copilot reads one JSON object: ``{"additionalContext": ...}`` (camelCase hooks)."""
    data = json.loads(stdout)
    assert set(data) == {"additionalContext"}
    return data["additionalContext"]


# --- the hook process on Copilot's payloads --------------------------------------------


@pytest.mark.parametrize("name", ["session_start.json", "session_start_vscode.json"])
def test_session_start_payloads_print_additional_context(project: Path, name: str) -> None:
    save(project, "Always run ruff before committing.")
    r = run_hook("session-start", fixture(name, cwd=str(project)), args=HOST)
    assert r.returncode == 0 and r.receipt[0] == "ok"
    ctx = context_of(r.stdout)
    assert ctx.startswith("<bli-memory-context>") and "Always run ruff" in ctx


@pytest.mark.parametrize("name", ["user_prompt_submitted.json", "user_prompt_submit_vscode.json"])
def test_prompt_payloads_of_both_formats_recall(project: Path, name: str) -> None:
    save(project, "The team service runs on Postgres 16 with pgvector.")
    r = run_hook("prompt", fixture(name, cwd=str(project), prompt=RECORDED_USER), args=HOST)
    assert r.returncode == 0 and r.receipt[0] == "ok" and r.receipt[1]["hits"] == 1, r.receipt
    assert "Postgres 16" in context_of(r.stdout)


def test_session_ids_of_both_formats_are_read() -> None:
    from bli_memory.core.plugins import get_plugin_manager

    pm = get_plugin_manager(host="copilot")
    for name in ("agent_stop.json", "stop_vscode.json"):
        hi = pm.hook.host_parse_payload(host="copilot", event="stop", payload=fixture(name))
        assert hi.session_id == "5e74bb18-aafc-44ca-b338-7c701ae1eeae"
        assert hi.transcript_path.endswith("/5e74bb18-aafc-44ca-b338-7c701ae1eeae/events.jsonl")
        assert hi.cwd == "/tmp/cpproj" and hi.reentrant is False


@pytest.mark.parametrize("name,key", [("agent_stop.json", "transcriptPath"),
                                      ("stop_vscode.json", "transcript_path")])
def test_agent_stop_queues_the_exchange_from_the_transcript(project: Path, tmp_path: Path,
                                                            name: str, key: str) -> None:
    r = run_hook("stop", fixture(name, cwd=str(project), **{key: transcript(tmp_path)}), args=HOST)
    assert r.returncode == 0 and r.stdout == ""  # any agentStop output could force another turn
    assert r.receipt[0] == "ok" and r.receipt[1]["queued"] is True
    [job] = jobs()
    assert job["text"] == f"User: {RECORDED_USER}\n\nAssistant: {RECORDED_REPLY}"
    assert job["source"] == "hook:copilot" and job["session_id"] == "5e74bb18-aafc-44ca-b338-7c701ae1eeae"


def test_agent_stop_reads_the_last_turn_and_drops_injected_blocks(project: Path, tmp_path: Path) -> None:
    later = [
        {"type": "user.message", "data": {
            "content": "<bli-memory-recall>\n[bli] old\n</bli-memory-recall>\nShould the cache use Redis?",
            "transformedContent": "ignored"}},
        {"type": "assistant.message", "data": {"content": "", "toolRequests": [{"name": "view"}]}},
        {"type": "assistant.message", "data": {"content": "Yes: Redis 7, with a 5 minute TTL."}},
        {"type": "assistant.turn_end", "data": {"turnId": "1"}},
    ]
    r = run_hook("stop", fixture("agent_stop.json", cwd=str(project),
                                 transcriptPath=transcript(tmp_path, *later)), args=HOST)
    assert r.receipt[0] == "ok"
    [job] = jobs()
    assert job["text"] == "User: Should the cache use Redis?\n\nAssistant: Yes: Redis 7, with a 5 minute TTL."


def test_forced_continuation_is_reentrant(project: Path, tmp_path: Path) -> None:
    r = run_hook("stop", fixture("agent_stop.json", cwd=str(project), stop_hook_active=True,
                                 transcriptPath=transcript(tmp_path)), args=HOST)
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt == ("skipped", {"reason": "reentrant"})
    assert jobs() == []


def test_missing_transcript_fails_open_and_quiet_on_stdout(project: Path, tmp_path: Path) -> None:
    r = run_hook("stop", fixture("agent_stop.json", cwd=str(project),
                                 transcriptPath=str(tmp_path / "gone.jsonl")), args=HOST)
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt[0] in ("failed", "skipped") and jobs() == []


def test_malformed_payload_fails_open(project: Path) -> None:
    r = run_hook("prompt", fixture("user_prompt_submitted.json", cwd=str(project), prompt=7), args=HOST)
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt == ("failed", {"reason": "stdin_malformed", **{k: v for k, v in r.receipt[1].items()
                                                                   if k != "reason"}})


# --- install / uninstall / status -------------------------------------------------------


def test_install_is_idempotent_and_the_real_config_shapes(temp_home: Path) -> None:
    r = cli("install", "--host", "copilot", home=temp_home)
    assert r.returncode == 0 and "copilot: installed" in r.stdout, r.stderr
    base = temp_home / ".copilot"
    config = json.loads((base / "mcp-config.json").read_text())
    assert config == {"mcpServers": {"bli-memory": {"type": "local", "command": bin_path(), "args": [],
                                                    "tools": ["*"]}}}
    hooks = json.loads((base / "hooks" / "bli-memory.json").read_text())
    assert hooks["version"] == 1
    assert {e: [(h["type"], h["bash"].split(" hook ")[1], h["timeoutSec"]) for h in hs]
            for e, hs in hooks["hooks"].items()} == {
        "sessionStart": [("command", "session-start --host copilot", 30)],
        "userPromptSubmitted": [("command", "prompt --host copilot", 5)],
        "agentStop": [("command", "stop --host copilot", 30)]}
    assert not (base / "instructions").exists()  # only with --copilot-instructions
    again = cli("install", "--host", "copilot", home=temp_home)
    assert "copilot: already installed; nothing changed" in again.stdout
    status = cli("status", "--host", "copilot", home=temp_home).stdout
    assert status.splitlines()[0] == "copilot: installed" and status.splitlines()[1].startswith("daemon: ")


def test_install_keeps_the_persons_servers_and_hooks_and_uninstall_leaves_them(temp_home: Path) -> None:
    base = temp_home / ".copilot"
    (base / "hooks").mkdir(parents=True)
    theirs = {"mcpServers": {"context7": {"type": "local", "command": "npx", "args": ["-y", "c7"],
                                          "tools": ["*"]}}}
    (base / "mcp-config.json").write_text(json.dumps(theirs, indent=4) + "\n")
    their_hook = {"type": "command", "bash": "./audit.sh", "timeoutSec": 10}
    (base / "hooks" / "bli-memory.json").write_text(json.dumps({"version": 1, "hooks": {
        "agentStop": [their_hook]}}))
    assert cli("install", "--host", "copilot", home=temp_home).returncode == 0
    config = json.loads((base / "mcp-config.json").read_text())
    assert set(config["mcpServers"]) == {"context7", "bli-memory"}
    assert (base / "mcp-config.json").read_text().startswith('{\n    "mcpServers"')  # their indent
    hooks = json.loads((base / "hooks" / "bli-memory.json").read_text())["hooks"]
    assert hooks["agentStop"][0] == their_hook and len(hooks["agentStop"]) == 2
    r = cli("uninstall", "--host", "copilot", home=temp_home)
    assert r.returncode == 0 and "copilot: uninstalled" in r.stdout
    assert json.loads((base / "mcp-config.json").read_text()) == theirs
    assert json.loads((base / "hooks" / "bli-memory.json").read_text()) == {
        "version": 1, "hooks": {"agentStop": [their_hook]}}


def test_instructions_only_with_consent_and_uninstall_leaves_nothing(temp_home: Path) -> None:
    from bli_memory.adapters.copilot import instructions_text

    dry = cli("install", "--host", "copilot", "--copilot-instructions", "--dry-run", home=temp_home)
    assert "bli-memory.instructions.md: new file" in dry.stdout and "+Before you start a task" in dry.stdout
    assert not (temp_home / ".copilot").exists()
    r = cli("install", "--host", "copilot", "--copilot-instructions", home=temp_home)
    assert r.returncode == 0, r.stderr
    path = temp_home / ".copilot" / "instructions" / "bli-memory.instructions.md"
    assert path.read_text() == instructions_text() and "search_memory" in path.read_text()
    assert cli("status", "--host", "copilot", home=temp_home).stdout.startswith("copilot: installed\n")
    assert cli("install", "--host", "copilot", home=temp_home).stdout.endswith("nothing changed\n")
    assert path.exists()  # a plain install keeps what the person agreed to
    undo = cli("uninstall", "--host", "copilot", "--dry-run", home=temp_home)
    assert "-Before you start a task" in undo.stdout
    assert cli("uninstall", "--host", "copilot", home=temp_home).returncode == 0
    assert not (temp_home / ".copilot").exists()  # every file and folder install made is gone
    again = cli("uninstall", "--host", "copilot", home=temp_home)
    assert "nothing of ours to remove" in again.stdout


def test_instructions_flag_names_its_host(temp_home: Path) -> None:
    r = cli("install", "--host", "gemini", "--copilot-instructions", home=temp_home)
    assert r.returncode != 0 and "--copilot-instructions is for GitHub Copilot CLI" in r.stderr
    assert not (temp_home / ".gemini").exists()


def test_copilot_home_replaces_the_folder(temp_home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "copilot-home"
    assert cli("install", "--host", "copilot", home=temp_home, COPILOT_HOME=str(elsewhere)).returncode == 0
    assert (elsewhere / "mcp-config.json").exists() and (elsewhere / "hooks" / "bli-memory.json").exists()
    assert not (temp_home / ".copilot").exists()
    out = cli("--print-config", "copilot", home=temp_home, COPILOT_HOME=str(elsewhere)).stdout
    assert out.startswith("// $COPILOT_HOME/mcp-config.json\n")


def test_status_reports_outdated_hooks_and_disabled_hooks(temp_home: Path) -> None:
    assert cli("install", "--host", "copilot", home=temp_home).returncode == 0
    path = temp_home / ".copilot" / "hooks" / "bli-memory.json"
    data = json.loads(path.read_text())
    data["hooks"]["userPromptSubmitted"][0]["timeoutSec"] = 99
    path.write_text(json.dumps(data))
    (temp_home / ".copilot" / "settings.json").write_text('{"disableAllHooks": true}')
    out = cli("status", "--host", "copilot", home=temp_home).stdout
    assert out.startswith("copilot: outdated\n")
    assert "hook userPromptSubmitted is missing or differs" in out and "disableAllHooks is true" in out


def test_malformed_config_writes_nothing(temp_home: Path) -> None:
    base = temp_home / ".copilot"
    base.mkdir()
    (base / "mcp-config.json").write_text("{not json")
    r = cli("install", "--host", "copilot", home=temp_home)
    assert r.returncode != 0 and "mcp-config.json is not valid JSON" in r.stderr
    assert sorted(p.name for p in base.iterdir()) == ["mcp-config.json"]


def test_print_config_shows_both_files(temp_home: Path) -> None:
    out = cli("--print-config", "copilot", home=temp_home).stdout
    head, hooks = out.split("// ~/.copilot/hooks/bli-memory.json\n")
    assert head.startswith("// ~/.copilot/mcp-config.json\n")
    assert json.loads(head.split("\n", 1)[1])["mcpServers"]["bli-memory"]["command"] == bin_path()
    assert set(json.loads(hooks)["hooks"]) == {"sessionStart", "userPromptSubmitted", "agentStop"}
