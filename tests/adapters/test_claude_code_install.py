"""Installing into Claude Code: merge, never clobber; idempotent; uninstall restores."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO_ROOT, bin_path

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

CLAUDE = FIXTURES / "claude"
SCHEMA = REPO_ROOT / "tests" / "data" / "schemas" / "claude-code-settings.schema.json"
# Read at import: the autouse fixture clears BLI_MEMORY_* variables for each test.
REQUIRE_INTEGRATION = os.environ.get("BLI_MEMORY_REQUIRE_INTEGRATION") == "1"


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run([bin_path(), *args], capture_output=True, text=True, env=env, timeout=120)


def rich_home(home: Path) -> tuple[str, str]:
    """A HOME with the person's own servers, hooks, permissions and state."""
    state = json.loads((CLAUDE / "claude.json.fragment.json").read_text())
    state.update({"numStartups": 42, "theme": "dark", "tipsHistory": {"new-user-warmup": 7},
                  "userID": "abc123"})
    settings = json.loads((CLAUDE / "settings.hooks.json").read_text())
    settings.update({"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
                     "env": {"FOO": "bar"}, "model": "opus"})
    state_text = json.dumps(state, indent=2) + "\n"
    settings_text = json.dumps(settings, indent=2) + "\n"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / ".claude.json").write_text(state_text)
    os.chmod(home / ".claude.json", 0o600)
    (home / ".claude" / "settings.json").write_text(settings_text)
    return state_text, settings_text


def read(home: Path) -> tuple[dict, dict]:
    return (json.loads((home / ".claude.json").read_text()),
            json.loads((home / ".claude" / "settings.json").read_text()))


def test_fresh_install_writes_server_hooks_and_permission(temp_home: Path) -> None:
    r = cli("install", home=temp_home)
    assert r.returncode == 0, r.stderr
    state, settings = read(temp_home)
    entry = {"type": "stdio", "command": bin_path(), "args": [], "env": {}}
    assert state["mcpServers"]["bli-memory"] == entry
    hooks = settings["hooks"]
    assert hooks["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    assert hooks["SessionStart"][0]["hooks"] == [
        {"type": "command", "command": f"{bin_path()} hook session-start", "timeout": 30}]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["timeout"] == 5
    assert hooks["Stop"][0]["hooks"][0]["command"] == f"{bin_path()} hook stop"
    assert settings["permissions"]["allow"] == ["mcp__bli-memory__search_memory"]
    assert stat.S_IMODE((temp_home / ".claude.json").stat().st_mode) == 0o600
    assert cli("status", home=temp_home).stdout.startswith("claude: installed")


def test_written_settings_validate_against_the_published_schema(temp_home: Path) -> None:
    from jsonschema import Draft7Validator

    rich_home(temp_home)
    assert cli("install", home=temp_home).returncode == 0
    _, settings = read(temp_home)
    Draft7Validator(json.loads(SCHEMA.read_text())).validate(settings)


def test_install_over_rich_config_keeps_everything_and_uninstall_restores(temp_home: Path) -> None:
    state_text, settings_text = rich_home(temp_home)
    before_state, before_settings = read(temp_home)
    assert cli("install", home=temp_home).returncode == 0
    state, settings = read(temp_home)
    for key, value in before_state.items():
        if key != "mcpServers":
            assert state[key] == value
    assert state["mcpServers"]["memory"] == before_state["mcpServers"]["memory"]
    for event, groups in before_settings["hooks"].items():
        assert settings["hooks"][event][: len(groups)] == groups  # the person's hooks stay first
    assert settings["permissions"]["allow"] == ["Bash(npm test:*)", "mcp__bli-memory__search_memory"]
    assert settings["permissions"]["deny"] == ["Read(./.env)"] and settings["env"] == {"FOO": "bar"}
    (backup,) = temp_home.glob(".claude.json.bli-memory-*.bak")
    assert backup.read_text() == state_text
    assert stat.S_IMODE((temp_home / ".claude.json").stat().st_mode) == 0o600

    second = cli("install", home=temp_home)
    assert "already installed; nothing changed" in second.stdout
    assert read(temp_home) == (state, settings)

    assert cli("uninstall", home=temp_home).returncode == 0
    assert (temp_home / ".claude.json").read_text() == state_text
    assert (temp_home / ".claude" / "settings.json").read_text() == settings_text
    assert "nothing of ours" in cli("uninstall", home=temp_home).stdout


def test_dry_run_prints_a_diff_and_writes_nothing(temp_home: Path) -> None:
    state_text, settings_text = rich_home(temp_home)
    r = cli("install", "--dry-run", home=temp_home)
    assert r.returncode == 0
    assert f"+++ {temp_home / '.claude.json'}" in r.stdout and '+    "bli-memory": {' in r.stdout
    assert "hook prompt" in r.stdout
    assert (temp_home / ".claude.json").read_text() == state_text
    assert (temp_home / ".claude" / "settings.json").read_text() == settings_text


def test_home_with_a_space(tmp_path: Path) -> None:
    home = tmp_path / "my home"
    home.mkdir()
    assert cli("install", home=home).returncode == 0
    assert cli("status", home=home).stdout.startswith("claude: installed")
    assert (home / ".claude.json").exists()


@pytest.mark.parametrize("broken", ["{not json", "[1, 2, 3]", '{"hooks": "nope"}',
                                    '{"permissions": {"allow": "x"}}'])
def test_malformed_settings_is_refused_untouched(temp_home: Path, broken: str) -> None:
    (temp_home / ".claude").mkdir()
    settings = temp_home / ".claude" / "settings.json"
    settings.write_text(broken)
    r = cli("install", home=temp_home)
    assert r.returncode != 0
    assert str(settings) in r.stderr and "nothing was written" in r.stderr
    assert settings.read_text() == broken
    assert not (temp_home / ".claude.json").exists()  # no partial install of the other file


def test_outdated_when_paths_or_timeouts_differ(temp_home: Path) -> None:
    assert cli("install", home=temp_home).returncode == 0
    settings_path = temp_home / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["timeout"] = 60
    settings_path.write_text(json.dumps(settings, indent=2))
    r = cli("status", home=temp_home)
    assert r.stdout.startswith("claude: outdated") and "UserPromptSubmit" in r.stdout
    assert cli("install", home=temp_home).returncode == 0
    assert cli("status", home=temp_home).stdout.startswith("claude: installed")
    groups = json.loads(settings_path.read_text())["hooks"]["UserPromptSubmit"]
    assert len(groups) == 1  # replaced, not duplicated


def test_install_from_another_location_replaces_our_old_entries(temp_home: Path) -> None:
    old = "/opt/old venv/bin/bli-memory-mcp"
    (temp_home / ".claude").mkdir()
    (temp_home / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": f"'{old}' hook stop", "timeout": 30}]}]}}))
    assert cli("install", home=temp_home).returncode == 0
    _, settings = read(temp_home)
    assert [g["hooks"][0]["command"] for g in settings["hooks"]["Stop"]] == [f"{bin_path()} hook stop"]


def test_cockpit_front_and_doctor(temp_home: Path) -> None:
    env = {**os.environ, "HOME": str(temp_home)}
    cockpit = str(Path(bin_path()).parent / "cockpit")
    r = subprocess.run([cockpit, "memory", "install"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and "claude: installed" in r.stdout
    doctor = subprocess.run([cockpit, "doctor"], capture_output=True, text=True, env=env, timeout=120)
    assert "memory (claude): installed" in doctor.stdout and "memory-daemon:" in doctor.stdout
    assert "side indexes: available" in doctor.stdout  # the test extra installs the scale extra


def test_claude_mcp_list_reports_the_server_connected(temp_home: Path, tmp_path: Path) -> None:
    """The real Claude Code CLI health-checks the installed server (docs/hosts.md)."""
    claude = shutil.which("claude")
    if claude is None:
        if REQUIRE_INTEGRATION:
            pytest.fail("the claude CLI is required here (npm @anthropic-ai/claude-code) but is not on PATH")
        pytest.skip("the claude CLI (npm @anthropic-ai/claude-code) is not installed")
    assert cli("install", home=temp_home).returncode == 0
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "HOME": str(temp_home)}
    r = subprocess.run([claude, "mcp", "list"], capture_output=True, text=True, env=env, cwd=project,
                       timeout=120, stdin=subprocess.DEVNULL)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("bli-memory:")), "")
    assert "✔ Connected" in line, r.stdout + r.stderr
    assert bin_path() in line


def test_an_unrelated_server_named_bli_memory_is_never_clobbered(temp_home: Path) -> None:
    theirs = {"mcpServers": {"bli-memory": {"command": "/opt/other/server", "args": ["--mine"]}}}
    (temp_home / ".claude.json").write_text(json.dumps(theirs, indent=2) + "\n")
    r = cli("install", home=temp_home)
    assert r.returncode == 1 and "already exists" in r.stderr
    assert json.loads((temp_home / ".claude.json").read_text()) == theirs
    assert cli("uninstall", home=temp_home).returncode == 0
    assert json.loads((temp_home / ".claude.json").read_text()) == theirs


def test_symlinked_config_is_edited_through_the_link_and_given_back(temp_home: Path) -> None:
    dotfiles = temp_home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "settings.json").write_text('{"model": "opus"}\n')
    (temp_home / ".claude").mkdir()
    (temp_home / ".claude" / "settings.json").symlink_to(dotfiles / "settings.json")
    assert cli("install", home=temp_home).returncode == 0
    [first] = sorted(dotfiles.glob("settings.json.bli-memory-*.bak"))
    assert first.read_text() == '{"model": "opus"}\n'
    installed = (dotfiles / "settings.json").read_text()
    r = cli("uninstall", home=temp_home)
    assert r.returncode == 0
    assert (temp_home / ".claude" / "settings.json").is_symlink()
    # Given back byte for byte through the link: no backup is left, of ours or of theirs.
    assert (dotfiles / "settings.json").read_text() == '{"model": "opus"}\n' != installed
    assert not sorted(dotfiles.glob("settings.json.bli-memory-*.bak")) and "backup" not in r.stdout
