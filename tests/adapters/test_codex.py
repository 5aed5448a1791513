"""Codex CLI adapter: real hook runs on the captured payloads, trust hashes, install/uninstall/status."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import tomlkit

from tests.conftest import FIXTURES, REPO_ROOT, SHARED, bin_path
from tests.hooks_util import extract_jobs as jobs
from tests.hooks_util import run_hook, save

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

CODEX = FIXTURES / "codex"
SCHEMA = REPO_ROOT / "tests" / "data" / "schemas" / "codex-hooks.schema.json"
UPSTREAM = SHARED / "schemas" / "external" / "codex-hooks-upstream"


def validate(schema_path: Path, data: object) -> None:
    """Validate with the draft the schema names (Draft 7, 2020-12, ...)."""
    from jsonschema.validators import validator_for

    schema = json.loads(schema_path.read_text())
    validator_for(schema)(schema).validate(data)


def fixture(name: str, **overrides) -> dict:
    data = json.loads((CODEX / name).read_text())
    data.update(overrides)
    return data


def cli(*args: str, home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    env.pop("CODEX_HOME", None)
    return subprocess.run([bin_path(), *args], capture_output=True, text=True, env=env, timeout=120, cwd=cwd)





def validate_output(stdout: str, schema_name: str) -> dict:
    data = json.loads(stdout)
    validate(UPSTREAM / schema_name, data)
    return data


# --- the hook process on Codex's payloads ------------------------------------------------


def test_session_start_payload_gets_additional_context(project: Path) -> None:
    save(project, "Always run ruff before committing.")
    r = run_hook("session-start", fixture("session_start.json", cwd=str(project)), args=("--host", "codex"))
    assert r.returncode == 0 and r.receipt[0] == "ok"
    out = validate_output(r.stdout, "session-start.command.output.schema.json")
    ctx = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert ctx.startswith("<bli-memory-context>") and "Always run ruff" in ctx


def test_prompt_payload_recalls_one_block(project: Path) -> None:
    save(project, "The user's favourite colour is teal.", "The CI runs on GitHub Actions.")
    r = run_hook("prompt", fixture("prompt.json", cwd=str(project), prompt="What is my favourite colour?"),
                 args=("--host", "codex"))
    assert r.returncode == 0
    out = validate_output(r.stdout, "user-prompt-submit.command.output.schema.json")
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "teal" in r.context and "GitHub Actions" not in r.context
    assert r.receipt[0] == "ok" and r.receipt[1]["hits"] == 1


def test_stop_payload_reads_the_rollout_and_queues_the_exchange(project: Path, tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    shutil.copyfile(CODEX / "transcript.jsonl", rollout)
    r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(rollout)),
                 args=("--host", "codex"))
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt[0] == "ok" and r.receipt[1]["queued"] is True
    [job] = jobs()
    assert job["text"] == "User: codex snapshot test\n\nAssistant: Hello from the fake model."
    assert job["source"] == "hook:codex" and job["session_id"] == "01a22a54-a691-77f2-aaa3-378af172d105"


def test_stop_with_null_transcript_keeps_the_reply_from_the_payload(project: Path) -> None:
    payload = fixture("stop.json", cwd=str(project), transcript_path=None)
    r = run_hook("stop", payload, args=("--host", "codex"))
    assert r.returncode == 0 and r.stdout == "" and r.receipt[0] == "ok"
    [job] = jobs()
    assert job["text"].endswith("Assistant: Hello from the fake model.")


def test_reentrant_stop_saves_nothing(project: Path) -> None:
    r = run_hook("stop", fixture("stop_hook_active.json", cwd=str(project)), args=("--host", "codex"))
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt == ("skipped", {"reason": "reentrant"})
    assert jobs() == []


def test_malformed_payload_fails_open(project: Path) -> None:
    r = run_hook("prompt", fixture("prompt.json", cwd=str(project), turn_id=7), args=("--host", "codex"))
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt == ("failed", {**r.receipt[1], "reason": "stdin_malformed"})


def test_context_is_bounded_under_codex_cap() -> None:
    from bli_memory.adapters.codex import CONTEXT_MAX_BYTES, bound_block
    from bli_memory.core.models import HookResult
    from bli_memory.core.plugins import get_plugin_manager

    lines = ["[bli] header"] + [f"[bli] [2026-11-30] memory {i} " + "é" * 300 for i in range(40)]
    block = "\n".join(["<bli-memory-recall>", *lines, "</bli-memory-recall>"])
    cut = bound_block(block)
    assert cut is not None and len(cut.encode("utf-8")) <= CONTEXT_MAX_BYTES
    assert cut.endswith("</bli-memory-recall>") and "memory 0 " in cut and "memory 39 " not in cut
    pm = get_plugin_manager(host="codex")
    out = pm.hook.host_render(host="codex", result=HookResult(event="prompt", outcome="ok", block=block))
    ctx = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert ctx == cut
    assert bound_block("<x>\n" + "y" * 9000 + "\n</x>") is None


# --- trust -------------------------------------------------------------------------------


def test_trusted_hashes_equal_the_fixture_config() -> None:
    from bli_memory.adapters.codex import trust_key, trusted_hash

    hooks = json.loads((CODEX / "hooks.json").read_text())["hooks"]
    state = tomlkit.parse((CODEX / "config.toml").read_text())["hooks"]["state"]
    seen = 0
    for event, groups in hooks.items():
        for gi, group in enumerate(groups):
            for hi, handler in enumerate(group["hooks"]):
                key = trust_key("/home/user/.codex/hooks.json", event, gi, hi)
                assert state[key]["trusted_hash"] == trusted_hash(event, group.get("matcher"), handler)
                seen += 1
    assert seen == 3


# --- install / uninstall / status -------------------------------------------------------


def fixture_home(home: Path) -> tuple[str, str]:
    """The fixture config.toml (plus a comment and a profile) and hooks.json in ``home``."""
    codex = home / ".codex"
    codex.mkdir(parents=True)
    config = (CODEX / "config.toml").read_text() + (
        '\n# my favourite profile\n[profiles.fast]\nmodel = "gpt-fast"  # inline comment\n')
    hooks = (CODEX / "hooks.json").read_text()
    (codex / "config.toml").write_text(config)
    (codex / "hooks.json").write_text(hooks)
    return config, hooks


def test_install_over_fixture_config_keeps_everything_and_trusts_our_hooks(temp_home: Path) -> None:
    from bli_memory.adapters.codex import trust_key, trusted_hash

    config_text, hooks_text = fixture_home(temp_home)
    r = cli("install", "--host", "codex", home=temp_home)
    assert r.returncode == 0, r.stderr
    config_path, hooks_path = temp_home / ".codex" / "config.toml", temp_home / ".codex" / "hooks.json"
    text = config_path.read_text()
    assert text.startswith(config_text.split("\n[hooks.state")[0])  # person's servers untouched, in order
    assert "# my favourite profile" in text and "# inline comment" in text
    doc = tomlkit.parse(text).unwrap()
    assert doc["mcp_servers"]["bli-memory"] == {"command": bin_path(), "args": []}
    assert doc["mcp_servers"]["memory"]["env"] == {"MEMORY_DB": "/home/user/.local/share/memory/db.sqlite"}
    assert doc["profiles"] == {"fast": {"model": "gpt-fast"}}
    hooks = json.loads(hooks_path.read_text())["hooks"]
    before = json.loads(hooks_text)["hooks"]
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        assert hooks[event][0] == before[event][0]
        ours = hooks[event][1]
        assert "matcher" not in ours
        sub = {"SessionStart": "session-start", "UserPromptSubmit": "prompt", "Stop": "stop"}[event]
        assert ours["hooks"] == [{"type": "command", "command": f"{bin_path()} hook {sub} --host codex",
                                  "timeout": 5 if sub == "prompt" else 30}]
        key = trust_key(str(hooks_path), event, 1, 0)
        assert doc["hooks"]["state"][key] == {"enabled": True,
                                              "trusted_hash": trusted_hash(event, None, ours["hooks"][0])}
    # the person's own trust entries stay exactly as they were
    assert len(doc["hooks"]["state"]) == 6
    assert cli("status", "--host", "codex", home=temp_home).stdout.startswith("codex: installed")

    again = cli("install", "--host", "codex", home=temp_home)
    assert "already installed; nothing changed" in again.stdout
    assert config_path.read_text() == text

    assert cli("uninstall", "--host", "codex", home=temp_home).returncode == 0
    assert config_path.read_text() == config_text
    assert json.loads(hooks_path.read_text()) == json.loads(hooks_text)
    assert "nothing of ours" in cli("uninstall", "--host", "codex", home=temp_home).stdout


def test_status_reports_untrusted_and_modified_hooks(temp_home: Path) -> None:
    assert cli("install", "--host", "codex", home=temp_home).returncode == 0
    config_path = temp_home / ".codex" / "config.toml"
    doc = tomlkit.parse(config_path.read_text())
    state = doc["hooks"]["state"]
    keys = list(state)
    del state[next(k for k in keys if ":stop:" in k)]
    state[next(k for k in keys if ":user_prompt_submit:" in k)]["trusted_hash"] = "sha256:" + "0" * 64
    config_path.write_text(tomlkit.dumps(doc))
    out = cli("status", "--host", "codex", home=temp_home).stdout
    assert out.startswith("codex: outdated")
    assert "hook stop is untrusted" in out and "hook user_prompt_submit was modified" in out
    assert cli("install", "--host", "codex", home=temp_home).returncode == 0
    assert cli("status", "--host", "codex", home=temp_home).stdout.startswith("codex: installed")


def test_uninstall_moves_the_trust_of_hooks_added_after_ours(temp_home: Path) -> None:
    from bli_memory.adapters.codex import trust_key, trusted_hash

    assert cli("install", "--host", "codex", home=temp_home).returncode == 0
    hooks_path, config_path = temp_home / ".codex" / "hooks.json", temp_home / ".codex" / "config.toml"
    data = json.loads(hooks_path.read_text())
    mine = {"type": "command", "command": "/usr/local/bin/notify stop", "timeout": 10}
    data["hooks"]["Stop"].append({"hooks": [mine]})
    hooks_path.write_text(json.dumps(data, indent=2))
    doc = tomlkit.parse(config_path.read_text())
    digest = trusted_hash("Stop", None, mine)
    record = {"enabled": True, "trusted_hash": digest}
    doc["hooks"]["state"][trust_key(str(hooks_path), "Stop", 1, 0)] = record
    config_path.write_text(tomlkit.dumps(doc))

    assert cli("uninstall", "--host", "codex", home=temp_home).returncode == 0
    assert json.loads(hooks_path.read_text())["hooks"] == {"Stop": [{"hooks": [mine]}]}
    state = tomlkit.parse(config_path.read_text()).unwrap()["hooks"]["state"]
    assert state == {trust_key(str(hooks_path), "Stop", 0, 0): {"enabled": True, "trusted_hash": digest}}
    assert "bli-memory" not in config_path.read_text()


@pytest.mark.parametrize("broken", ["[mcp_servers\nx = ", 'mcp_servers = "nope"\n'])
def test_malformed_config_toml_is_refused_untouched(temp_home: Path, broken: str) -> None:
    (temp_home / ".codex").mkdir()
    config = temp_home / ".codex" / "config.toml"
    config.write_text(broken)
    r = cli("install", "--host", "codex", home=temp_home)
    assert r.returncode != 0 and str(config) in r.stderr and "nothing was written" in r.stderr
    assert config.read_text() == broken
    assert not (temp_home / ".codex" / "hooks.json").exists()


def test_print_config_is_toml_whose_hooks_validate_as_hooks_json() -> None:
    import tomllib

    r = subprocess.run([bin_path(), "--print-config=codex"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    doc = tomllib.loads(r.stdout)
    assert doc["mcp_servers"] == {"bli-memory": {"command": bin_path(), "args": []}}
    validate(SCHEMA, {"hooks": doc["hooks"]})
    command = doc["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command == f"{bin_path()} hook prompt --host codex"
    assert set(doc["hooks"]) == {"SessionStart", "UserPromptSubmit", "Stop"}
