"""Gemini CLI adapter: real hook runs on the captured payloads, folder trust, install/uninstall/status."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO_ROOT, bin_path
from tests.hooks_util import extract_jobs as jobs
from tests.hooks_util import receipt_log_path, run_hook, save

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

GEMINI = FIXTURES / "gemini"
SCHEMA = REPO_ROOT / "tests" / "data" / "schemas" / "gemini-cli-settings.schema.json"
HOST = ("--host", "gemini")


def validate(schema_path: Path, data: object) -> None:
    """Validate with the draft the schema names (Draft 7, 2020-12, ...)."""
    from jsonschema.validators import validator_for

    schema = json.loads(schema_path.read_text())
    validator_for(schema)(schema).validate(data)


def fixture(name: str, **overrides) -> dict:
    data = json.loads((GEMINI / name).read_text())
    data.update(overrides)
    return data


def cli(*args: str, home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    for key in ("GEMINI_CLI_HOME", "GEMINI_CLI_TRUST_WORKSPACE", "GEMINI_CLI_TRUSTED_FOLDERS_PATH"):
        env.pop(key, None)
    return subprocess.run([bin_path(), *args], capture_output=True, text=True, env=env, timeout=120,
                          cwd=cwd)





def context_of(stdout: str, event: str) -> str:
    """Gemini reads JSON only: exactly one object with hookSpecificOutput.additionalContext."""
    data = json.loads(stdout)
    assert set(data) == {"hookSpecificOutput"}
    assert data["hookSpecificOutput"]["hookEventName"] == event
    return data["hookSpecificOutput"]["additionalContext"]


# --- the hook process on Gemini's payloads ---------------------------------------------


def test_session_start_payload_prints_json_context(project: Path) -> None:
    save(project, "Always run ruff before committing.")
    r = run_hook("session-start", fixture("session_start.json", cwd=str(project)), args=HOST)
    assert r.returncode == 0 and r.receipt[0] == "ok"
    ctx = context_of(r.stdout, "SessionStart")
    assert ctx.startswith("<bli-memory-context>") and "Always run ruff" in ctx


def test_before_agent_strips_hook_context_before_searching(project: Path) -> None:
    save(project, "The user's favourite colour is teal.")
    prompt = ("<hook_context><bli-memory-context>\n[bli] favourite colour teal\n</bli-memory-context>"
              "</hook_context>\n\nWhat is my favourite colour?")
    r = run_hook("prompt", fixture("before_agent.json", cwd=str(project), prompt=prompt), args=HOST)
    assert r.returncode == 0 and r.receipt[1]["hits"] == 1
    assert "teal" in context_of(r.stdout, "BeforeAgent")


def test_before_agent_with_only_injected_context_is_no_prompt(project: Path) -> None:
    r = run_hook("prompt", fixture("before_agent.json", cwd=str(project),
                                   prompt="<hook_context>MEMCTX-JSON-session_start</hook_context>\n\n"),
                 args=HOST)
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt == ("skipped", {"reason": "no_prompt"})


def test_after_agent_captures_the_exchange_without_injected_text(project: Path) -> None:
    r = run_hook("stop", fixture("after_agent.json", cwd=str(project)), args=HOST)
    assert r.returncode == 0 and r.stdout == ""  # AfterAgent prints nothing
    assert r.receipt[0] == "ok" and r.receipt[1]["queued"] is True
    [job] = jobs()
    assert job["text"] == "User: gemini snapshot test\n\nAssistant: Hello from the fake model."
    assert "MEMCTX" not in job["text"] and "hook_context" not in job["text"]
    assert job["source"] == "hook:gemini"


def test_after_agent_retry_is_reentrant(project: Path) -> None:
    r = run_hook("stop", fixture("after_agent_retry.json", cwd=str(project)), args=HOST)
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt == ("skipped", {"reason": "reentrant"})
    assert jobs() == []


def test_failed_after_agent_tells_the_person_without_forcing_a_retry(project: Path) -> None:
    r = run_hook("stop", fixture("after_agent.json", cwd=str(project), prompt_response=7), args=HOST)
    assert r.returncode == 0
    shown = json.loads(r.stdout)
    assert set(shown) == {"systemMessage"} and "not saved" in shown["systemMessage"]  # no decision
    assert r.receipt[0] == "failed"


def test_receipts_go_to_the_log_file_and_stderr_stays_quiet(project: Path) -> None:
    skipped = run_hook("prompt", fixture("before_agent.json", cwd=str(project), prompt="ok"), args=HOST)
    assert skipped.stderr == "" and skipped.receipt == ("skipped", {"reason": "trivial_prompt"})
    ok = run_hook("prompt", fixture("before_agent.json", cwd=str(project),
                                    prompt="What did we decide about the cache layer?"), args=HOST)
    assert ok.stderr == "" and ok.stdout == "" and ok.receipt[0] == "ok"
    log = receipt_log_path()
    assert log.stat().st_mode & 0o777 == 0o600
    assert log.read_text().count("[bli-memory] prompt ") == 2  # one receipt per run
    failed = run_hook("stop", fixture("after_agent.json", cwd=str(project), prompt_response=7), args=HOST)
    assert failed.receipt[0] == "failed" and "[bli-memory] stop failed" in failed.stderr
    claude = run_hook("prompt", {"session_id": "s", "cwd": str(project), "prompt": "ok",
                                 "hook_event_name": "UserPromptSubmit"})
    assert claude.log == "" and claude.receipt[0] == "skipped"  # Claude Code hides stderr: it stays there


def test_the_receipt_log_rotates_at_its_size_cap(tmp_path: Path) -> None:
    from bli_memory.core.hooks import receipt_log

    line = "[bli-memory] prompt skipped {\"reason\":\"trivial_prompt\"}\n"
    state = tmp_path / "state"
    for _ in range(2 * (receipt_log.LOG_MAX_BYTES // len(line)) + 10):
        receipt_log.emit(line, log=True, outcome="skipped", state_dir=state)
    log = receipt_log.log_path(state)
    assert log.stat().st_size <= receipt_log.LOG_MAX_BYTES
    assert log.with_name(log.name + ".1").stat().st_size <= receipt_log.LOG_MAX_BYTES
    assert sorted(p.name for p in state.iterdir()) == [log.name, log.name + ".1"]


def test_transcript_is_the_fallback_for_the_exchange(tmp_path: Path) -> None:
    from bli_memory.core.plugins import get_plugin_manager

    transcript = tmp_path / "session.jsonl"
    shutil.copyfile(GEMINI / "transcript.jsonl", transcript)
    pm = get_plugin_manager(host="gemini")
    payload = fixture("after_agent.json", transcript_path=str(transcript))
    del payload["prompt"], payload["prompt_response"]
    parsed = pm.hook.host_parse_payload(host="gemini", event="stop", payload=payload)
    exchange = pm.hook.host_read_exchange(host="gemini", hook_input=parsed, max_bytes=12 * 1024)
    assert (exchange.user, exchange.assistant) == ("gemini snapshot test", "Hello from the fake model.")


# --- folder trust ----------------------------------------------------------------------


def test_folder_trust_rules(tmp_path: Path) -> None:
    from bli_memory.adapters.gemini import folder_trusted

    home = tmp_path / "h"
    (home / ".gemini").mkdir(parents=True)
    repo = tmp_path / "work" / "repo"
    (repo / "sub").mkdir(parents=True)
    env: dict[str, str] = {}
    assert folder_trusted(str(repo), home, {}, env) is None
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({
        str(tmp_path / "work"): "TRUST_FOLDER", str(repo / "sub"): "DO_NOT_TRUST"}))
    assert folder_trusted(str(repo), home, {}, env) is True
    assert folder_trusted(str(repo / "sub"), home, {}, env) is False  # the longest rule wins
    assert folder_trusted(str(tmp_path), home, {}, env) is None
    assert folder_trusted(str(tmp_path), home, {"security": {"folderTrust": {"enabled": False}}}, env)
    assert folder_trusted(str(tmp_path), home, {}, {"GEMINI_CLI_TRUST_WORKSPACE": "true"}) is True
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(repo / "x"): "TRUST_PARENT"}))
    assert folder_trusted(str(repo / "sub"), home, {}, env) is True


# --- install / uninstall / status ------------------------------------------------------


def rich_home(home: Path) -> str:
    settings = json.loads((GEMINI / "settings.json").read_text())
    settings.update({"security": {"auth": {"selectedType": "gemini-api-key"}}, "ui": {"theme": "Dracula"}})
    text = json.dumps(settings, indent=2) + "\n"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(text)
    return text


def test_install_over_fixture_settings_keeps_everything(temp_home: Path, project: Path) -> None:
    text = rich_home(temp_home)
    before = json.loads(text)
    r = cli("install", "--host", "gemini", home=temp_home, cwd=project)
    assert r.returncode == 0, r.stderr
    path = temp_home / ".gemini" / "settings.json"
    settings = json.loads(path.read_text())
    validate(SCHEMA, settings)
    assert settings["mcpServers"]["memory"] == before["mcpServers"]["memory"]
    assert settings["mcpServers"]["bli-memory"] == {"command": bin_path(), "args": [], "env": {}}
    assert settings["security"] == before["security"] and settings["ui"] == before["ui"]
    for event, groups in before["hooks"].items():
        assert settings["hooks"][event][: len(groups)] == groups
    assert settings["hooks"]["SessionStart"][1] == {"matcher": "*", "hooks": [
        {"name": "bli-memory-session-start", "type": "command",
         "command": f"{bin_path()} hook session-start --host gemini", "timeout": 30000}]}
    assert settings["hooks"]["BeforeAgent"][1]["hooks"][0]["timeout"] == 5000
    assert settings["hooks"]["AfterAgent"][1]["hooks"][0]["name"] == "bli-memory-stop"
    # the folder is not trusted: install and status say so, in one sentence each
    [note] = [ln for ln in r.stdout.splitlines() if "an untrusted folder" in ln]
    assert str(project) in note and note.count(". ") == 0
    status = cli("status", "--host", "gemini", home=temp_home, cwd=project).stdout
    assert status.startswith("gemini: installed") and "an untrusted folder; to trust it run" in status

    assert "already installed" in cli("install", "--host", "gemini", home=temp_home, cwd=project).stdout
    assert cli("uninstall", "--host", "gemini", home=temp_home).returncode == 0
    assert path.read_text() == text


def test_session_start_in_an_untrusted_folder_tells_the_person_the_command(temp_home: Path) -> None:
    """Issue 31, item 8: Gemini disables our MCP server there; the one-line system message
    (shown to the person, not the model) gives the exact command for this folder, and a
    parent folder inside HOME to trust once."""
    project = temp_home / "code" / "proj"
    project.mkdir(parents=True)
    assert cli("install", "--host", "gemini", home=temp_home, cwd=project).returncode == 0
    save(project, "Always run ruff before committing.")
    r = run_hook("session-start", fixture("session_start.json", cwd=str(project)), args=HOST, cwd=project)
    assert r.stdout, (r.receipt, r.stderr)
    data = json.loads(r.stdout)
    assert f"--trust-folder {project}`" in data["systemMessage"]
    assert f"--trust-folder {project.parent})" in data["systemMessage"]  # a parent, once
    assert "Always run ruff" in data["hookSpecificOutput"]["additionalContext"]
    trusted = {str(project.parent): "TRUST_FOLDER"}  # the parent trusts the project below it
    (temp_home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    again = run_hook("session-start", fixture("session_start.json", cwd=str(project), session_id="s2"),
                     args=HOST, cwd=project)
    assert again.stdout and "systemMessage" not in json.loads(again.stdout)


def test_a_parent_to_trust_is_offered_only_inside_home(temp_home: Path) -> None:
    """Run from HOME itself, the advice was to trust HOME's parent (/home: every user's)."""
    assert cli("install", "--host", "gemini", home=temp_home, cwd=temp_home).returncode == 0
    out = cli("status", "--host", "gemini", home=temp_home, cwd=temp_home).stdout
    assert f"--trust-folder {temp_home}`" in out and "parent folder" not in out


def test_status_in_a_trusted_folder_has_no_trust_sentence(temp_home: Path, project: Path) -> None:
    assert cli("install", "--host", "gemini", home=temp_home, cwd=project).returncode == 0
    (temp_home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    out = cli("status", "--host", "gemini", home=temp_home, cwd=project).stdout
    assert out.startswith("gemini: installed\n") and "trust" not in out


def test_status_outdated_when_timeout_differs(temp_home: Path, project: Path) -> None:
    assert cli("install", "--host", "gemini", home=temp_home, cwd=project).returncode == 0
    path = temp_home / ".gemini" / "settings.json"
    settings = json.loads(path.read_text())
    settings["hooks"]["BeforeAgent"][0]["hooks"][0]["timeout"] = 5  # seconds by mistake
    path.write_text(json.dumps(settings, indent=2))
    out = cli("status", "--host", "gemini", home=temp_home, cwd=project).stdout
    assert out.startswith("gemini: outdated") and "BeforeAgent" in out


def test_print_config_validates_against_the_gemini_schema() -> None:
    r = subprocess.run([bin_path(), "--print-config=gemini"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    block = json.loads(r.stdout)
    validate(SCHEMA, block)
    assert set(block["hooks"]) == {"SessionStart", "BeforeAgent", "AfterAgent"}
    assert "_" not in "".join(block["mcpServers"])


def test_trust_folder_adds_exactly_that_entry_and_uninstall_removes_it(temp_home: Path, project: Path,
                                                                       tmp_path: Path) -> None:
    rules = temp_home / ".gemini" / "trustedFolders.json"
    rules.parent.mkdir()
    mine = str(tmp_path / "elsewhere" / "repo")  # TRUST_PARENT: trusts tmp_path/elsewhere only
    rules.write_text(json.dumps({mine: "TRUST_PARENT"}, indent=2) + "\n")
    dry = cli("install", "--host", "gemini", "--dry-run", "--trust-folder", str(project), home=temp_home,
              cwd=project)
    assert dry.returncode == 0, dry.stderr
    assert f'+  "{project}": "TRUST_FOLDER"' in dry.stdout and f"-- {rules}: changed" in dry.stdout
    assert dry.stdout.rstrip().endswith("Dry run: nothing was written (2 files would change).")
    assert json.loads(rules.read_text()) == {mine: "TRUST_PARENT"}  # nothing written

    plain = cli("install", "--host", "gemini", home=temp_home, cwd=project)
    assert json.loads(rules.read_text()) == {mine: "TRUST_PARENT"}  # never trusted without asking
    assert "an untrusted folder; to trust it run `bli-memory-mcp install --host gemini --trust-folder" \
        in plain.stdout
    r = cli("install", "--host", "gemini", "--trust-folder", str(project), home=temp_home, cwd=project)
    assert r.returncode == 0, r.stderr
    assert json.loads(rules.read_text()) == {mine: "TRUST_PARENT", str(project): "TRUST_FOLDER"}
    assert "untrusted" not in r.stdout and f"trusts {project} for Gemini CLI" in r.stdout
    assert "untrusted" not in cli("status", "--host", "gemini", home=temp_home, cwd=project).stdout

    assert cli("uninstall", "--host", "gemini", home=temp_home, cwd=project).returncode == 0
    assert json.loads(rules.read_text()) == {mine: "TRUST_PARENT"}


def test_trust_folder_refuses_a_folder_marked_do_not_trust(temp_home: Path, project: Path) -> None:
    rules = temp_home / ".gemini" / "trustedFolders.json"
    rules.parent.mkdir()
    rules.write_text(json.dumps({str(project): "DO_NOT_TRUST"}))
    r = cli("install", "--host", "gemini", "--trust-folder", str(project), home=temp_home, cwd=project)
    assert r.returncode != 0 and "DO_NOT_TRUST" in r.stderr and "Nothing was written" in r.stderr
    assert json.loads(rules.read_text()) == {str(project): "DO_NOT_TRUST"}
    assert not (temp_home / ".gemini" / "settings.json").exists()
    other = cli("install", "--host", "claude", "--trust-folder", str(project), home=temp_home)
    assert other.returncode != 0 and "--trust-folder is for Gemini CLI" in other.stderr
