"""Hermes Agent adapter: real hook runs on the captured payloads, the memory provider, install/uninstall."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, bin_path
from tests.hooks_util import extract_jobs as jobs
from tests.hooks_util import run_hook, save

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

HERMES = FIXTURES / "hermes"
HOST = ("--host", "hermes")


def fixture(name: str, **overrides) -> dict:
    data = json.loads((HERMES / name).read_text())
    data.update(overrides)
    return data


def cli(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "HOME": str(home), **(env or {})}
    full.pop("HERMES_HOME", None)
    return subprocess.run([bin_path(), *args], capture_output=True, text=True, env=full, timeout=120)





# --- the hook process on Hermes' payloads -------------------------------------------------


def test_pre_llm_call_prints_the_context_object(project: Path) -> None:
    save(project, "The user's favourite colour is teal.", "The CI runs on GitHub Actions.")
    payload = fixture("pre_llm_call.json", cwd=str(project))
    payload["extra"]["user_message"] = "What is my favourite colour?"
    r = run_hook("prompt", payload, args=HOST)
    assert r.returncode == 0 and r.receipt[0] == "ok" and r.receipt[1]["hits"] == 1
    out = json.loads(r.stdout)
    assert set(out) == {"context"}  # the shape Hermes reads (hook_output_context.json)
    assert "teal" in out["context"] and "GitHub" not in out["context"]


def test_on_session_start_payload_renders_context(project: Path) -> None:
    save(project, "Always run ruff before committing.")
    r = run_hook("session-start", fixture("on_session_start.json", cwd=str(project)), args=HOST)
    assert r.returncode == 0 and r.receipt[0] == "ok"
    assert "Always run ruff" in json.loads(r.stdout)["context"]


def test_post_llm_call_queues_the_exchange_from_the_payload(project: Path) -> None:
    r = run_hook("stop", fixture("post_llm_call.json", cwd=str(project)), args=HOST)
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt[0] == "ok" and r.receipt[1]["queued"] is True
    [job] = jobs()
    assert job["text"] == ("User: Remember that my favourite colour is teal.\n\n"
                           "Assistant: Hello from the fake model.")
    assert "MEMCTX" not in job["text"]  # api_content (what Hermes sent with our context) is not read
    assert job["session_id"] == "20261130_023951_485c22" and job["source"] == "hook:hermes"


def test_post_llm_call_without_reply_reads_the_history(project: Path) -> None:
    payload = fixture("post_llm_call.json", cwd=str(project))
    del payload["extra"]["assistant_response"], payload["extra"]["user_message"]
    r = run_hook("stop", payload, args=HOST)
    assert r.returncode == 0 and r.receipt[0] == "ok"
    assert jobs()[0]["text"].endswith("Assistant: Hello from the fake model.")


def test_on_session_end_payload_has_no_exchange(project: Path) -> None:
    r = run_hook("stop", fixture("on_session_end.json", cwd=str(project)), args=HOST)
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt == ("skipped", {**r.receipt[1], "reason": "no_transcript"})


def test_malformed_extra_fails_open(project: Path) -> None:
    r = run_hook("prompt", fixture("pre_llm_call.json", cwd=str(project), extra="nope"), args=HOST)
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt[0] == "failed" and r.receipt[1]["reason"] == "stdin_malformed"


# --- the memory provider ------------------------------------------------------------------


def test_memory_provider_runs_the_same_hooks(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bli_memory.adapters.hermes_provider import BliMemoryProvider

    save(project, "The user's favourite colour is teal.")
    monkeypatch.chdir(project)
    provider = BliMemoryProvider(command=bin_path(), shell_hooks=set())
    assert provider.name == "bli-memory" and provider.is_available() and provider.get_tool_schemas() == []
    provider.initialize("s-1", platform="cli", hermes_home=str(project))
    assert "favourite colour is teal" in provider.system_prompt_block()
    assert provider.prefetch("What is my favourite colour?") == ""  # this session has it already
    save(project, "The CI runs on GitHub Actions.")
    assert "GitHub Actions" in provider.prefetch("Which CI do we run on GitHub?")
    provider.sync_turn("Remember that the build uses uv.", "Noted.", session_id="s-1")
    [job] = jobs()
    assert job["text"] == "User: Remember that the build uses uv.\n\nAssistant: Noted."
    assert job["source"] == "hook:hermes" and job["session_id"] == "s-1"
    provider.on_session_end([])  # nothing more to save
    assert len(jobs()) == 1


def test_memory_provider_leaves_covered_events_to_the_shell_hooks(project: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from bli_memory.adapters.hermes_provider import BliMemoryProvider

    save(project, "The user's favourite colour is teal.")
    monkeypatch.chdir(project)
    provider = BliMemoryProvider(command=bin_path(), shell_hooks={"pre_llm_call", "post_llm_call"})
    provider.initialize("s-2", platform="cli")
    assert provider.prefetch("What is my favourite colour?") == ""
    provider.sync_turn("Remember that the build uses uv.", "Noted.")
    assert jobs() == []
    assert "teal" in provider.system_prompt_block()  # only the provider can deliver session start
    missing = BliMemoryProvider(command=str(project / "nope"), shell_hooks=set())
    assert not missing.is_available() and missing.system_prompt_block() == ""


# --- install / uninstall / status ---------------------------------------------------------


def fixture_home(home: Path) -> tuple[str, str]:
    base = home / ".hermes"
    base.mkdir(parents=True)
    config = (HERMES / "config.yaml").read_text() + "# model settings below\nmodel:\n  default: m  # mine\n"
    allow = (HERMES / "shell-hooks-allowlist.json").read_text()
    (base / "config.yaml").write_text(config)
    (base / "shell-hooks-allowlist.json").write_text(allow)
    return config, allow


def load_yaml(path: Path) -> dict:
    return load_yaml_text(path.read_text())


def test_install_over_fixture_config_keeps_comments_and_content(temp_home: Path) -> None:
    config_text, allow_text = fixture_home(temp_home)
    r = cli("install", "--host", "hermes", home=temp_home)
    assert r.returncode == 0, r.stderr
    base = temp_home / ".hermes"
    text = (base / "config.yaml").read_text()
    assert text.startswith(config_text.split("hooks:")[0].rstrip("\n"))  # comment and servers kept
    assert "# model settings below" in text and "default: m  # mine" in text
    config = load_yaml(base / "config.yaml")
    before = load_yaml_text(config_text)
    assert config["mcp_servers"]["memory"] == before["mcp_servers"]["memory"]
    assert config["mcp_servers"]["bli-memory"] == {"command": bin_path(), "args": [], "enabled": True}
    assert config["hooks"]["on_session_start"] == before["hooks"]["on_session_start"]  # ours adds none
    assert config["hooks"]["pre_llm_call"][1] == {"command": f"{bin_path()} hook prompt --host hermes",
                                                 "timeout": 5}
    assert config["hooks"]["post_llm_call"][1]["command"] == f"{bin_path()} hook stop --host hermes"
    assert config["memory"] == {"provider": "bli-memory"} and config["hooks_auto_accept"] is True
    approvals = json.loads((base / "shell-hooks-allowlist.json").read_text())["approvals"]
    assert approvals[:3] == json.loads(allow_text)["approvals"]
    assert {(a["event"], a["command"]) for a in approvals[3:]} == {
        ("pre_llm_call", f"{bin_path()} hook prompt --host hermes"),
        ("post_llm_call", f"{bin_path()} hook stop --host hermes")}
    assert all(a["approved_at"].endswith("Z") and a["script_mtime_at_approval"] for a in approvals[3:])
    plugin = base / "plugins" / "bli-memory"
    assert json.loads((plugin / "bli-memory.json").read_text())["command"] == bin_path()
    assert "class BliMemoryProvider" in (plugin / "__init__.py").read_text()
    assert load_yaml(plugin / "plugin.yaml")["name"] == "bli-memory"
    status = cli("status", "--host", "hermes", home=temp_home).stdout
    assert status.startswith("hermes: installed"), status

    again = cli("install", "--host", "hermes", home=temp_home)
    assert "already installed; nothing changed" in again.stdout

    assert cli("uninstall", "--host", "hermes", home=temp_home).returncode == 0
    assert (base / "config.yaml").read_text() == config_text
    assert json.loads((base / "shell-hooks-allowlist.json").read_text()) == json.loads(allow_text)
    assert not (plugin / "__init__.py").exists()
    assert "nothing of ours" in cli("uninstall", "--host", "hermes", home=temp_home).stdout


def load_yaml_text(text: str) -> dict:
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True).load(text)


def test_another_memory_provider_is_left_alone(temp_home: Path) -> None:
    base = temp_home / ".hermes"
    base.mkdir()
    (base / "config.yaml").write_text("memory:\n  provider: honcho\n")
    r = cli("install", "--host", "hermes", home=temp_home)
    assert r.returncode == 0 and "already uses the memory provider 'honcho'" in r.stdout
    assert load_yaml(base / "config.yaml")["memory"] == {"provider": "honcho"}
    assert cli("uninstall", "--host", "hermes", home=temp_home).returncode == 0
    assert load_yaml(base / "config.yaml") == {"memory": {"provider": "honcho"}}


def test_status_names_missing_approvals(temp_home: Path) -> None:
    assert cli("install", "--host", "hermes", home=temp_home).returncode == 0
    (temp_home / ".hermes" / "shell-hooks-allowlist.json").write_text('{"approvals": []}')
    out = cli("status", "--host", "hermes", home=temp_home).stdout
    assert out.startswith("hermes: outdated") and "hook pre_llm_call is not in" in out


def test_status_says_when_hermes_lacks_its_mcp_extra(temp_home: Path, tmp_path: Path) -> None:
    """A Hermes whose Python has no ``mcp`` package gets one sentence about the [mcp] extra."""
    bare = tmp_path / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    hermes = tmp_path / "bin" / "hermes"
    hermes.parent.mkdir()
    hermes.write_text(f"#!{bare / 'bin' / 'python'}\nprint('hermes')\n")
    hermes.chmod(0o755)
    env = {"BLI_MEMORY_HERMES_BIN": str(hermes)}
    r = cli("install", "--host", "hermes", home=temp_home, env=env)
    assert r.returncode == 0 and "[mcp] extra" in r.stdout
    out = cli("status", "--host", "hermes", home=temp_home, env=env).stdout
    [line] = [ln for ln in out.splitlines() if "[mcp] extra" in ln]
    assert line.count(". ") == 0 and line.endswith(".")


def test_malformed_config_yaml_is_refused_untouched(temp_home: Path) -> None:
    base = temp_home / ".hermes"
    base.mkdir()
    (base / "config.yaml").write_text("mcp_servers: [1, 2\n")
    r = cli("install", "--host", "hermes", home=temp_home)
    assert r.returncode != 0 and "nothing was written" in r.stderr
    assert (base / "config.yaml").read_text() == "mcp_servers: [1, 2\n"
    assert not (base / "shell-hooks-allowlist.json").exists()


def test_print_config_is_yaml_with_our_server_and_hooks() -> None:
    r = subprocess.run([bin_path(), "--print-config=hermes"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    block = load_yaml_text(r.stdout)
    assert block["mcp_servers"]["bli-memory"]["command"] == bin_path()
    assert block["hooks"]["pre_llm_call"] == [{"command": f"{bin_path()} hook prompt --host hermes",
                                              "timeout": 5}]
    assert block["memory"] == {"provider": "bli-memory"}
