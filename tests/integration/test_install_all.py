"""``bli-memory-mcp install --host all``: every host found on the machine, the others skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import bin_path

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

REQUIRE = os.environ.get("BLI_MEMORY_REQUIRE_INTEGRATION") == "1"
HERMES_BIN = os.environ.get("BLI_MEMORY_HERMES_BIN")


def run(*args: str, home: Path, path: str, hermes: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "PATH": path}
    for key in ("CODEX_HOME", "COPILOT_HOME", "GEMINI_CLI_HOME", "HERMES_HOME", "BLI_MEMORY_HERMES_BIN"):
        env.pop(key, None)
    if hermes:
        env["BLI_MEMORY_HERMES_BIN"] = hermes
    return subprocess.run([bin_path(), *args], capture_output=True, text=True, env=env, timeout=300,
                          cwd=home)


def test_all_installs_only_the_hosts_found_and_skips_the_rest(temp_home: Path, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    codex = bindir / "codex"
    codex.write_text("#!/bin/sh\nexit 0\n")
    codex.chmod(0o755)
    r = run("install", "--host", "all", home=temp_home, path=str(bindir))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(ln.startswith("codex: installed (") for ln in lines), r.stdout
    for host in ("claude", "copilot", "gemini", "hermes"):
        assert f"{host}: not found on this machine; skipped" in lines, r.stdout
    assert (temp_home / ".codex" / "config.toml").exists()
    assert not (temp_home / ".gemini").exists() and not (temp_home / ".hermes").exists()
    assert not (temp_home / ".claude.json").exists()

    status = run("status", "--host", "all", home=temp_home, path=str(bindir)).stdout
    assert "codex: installed" in status and "gemini: not_found (skipped)" in status

    again = run("install", "--host", "all", home=temp_home, path=str(bindir)).stdout
    assert "codex: already installed; nothing changed" in again


@pytest.mark.integration
def test_all_with_every_real_cli_installs_each_one(temp_home: Path) -> None:
    found = {name: shutil.which(name) for name in ("claude", "codex", "copilot", "gemini")}
    found["hermes"] = HERMES_BIN or shutil.which("hermes")
    missing = [name for name, path in found.items() if not path]
    if missing:
        message = f"host CLIs not installed: {', '.join(missing)}"
        if REQUIRE:
            pytest.fail(message + " (BLI_MEMORY_REQUIRE_INTEGRATION=1)")
        pytest.skip(message)
    r = run("install", "--host", "all", home=temp_home, path=os.environ["PATH"], hermes=found["hermes"])
    assert r.returncode == 0, r.stderr
    for host in found:
        assert any(ln.startswith(f"{host}: installed (") for ln in r.stdout.splitlines()), r.stdout
    assert "skipped" not in r.stdout
    status = run("status", "--host", "all", home=temp_home, path=os.environ["PATH"], hermes=found["hermes"])
    for host in found:
        assert f"{host}: installed" in status.stdout, status.stdout


def test_status_without_host_shows_the_hosts_found_and_how_to_add_one(temp_home: Path,
                                                                       tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("codex", "gemini"):
        (bindir / name).write_text("#!/bin/sh\nexit 0\n")
        (bindir / name).chmod(0o755)
    assert run("install", "--host", "codex", home=temp_home, path=str(bindir)).returncode == 0
    lines = run("status", home=temp_home, path=str(bindir)).stdout.splitlines()
    assert lines[0] == "codex: installed"
    assert lines[1:3] == ["gemini: absent",
                          "  - its CLI is here, but BLI Memory is not set up for it; "
                          "`bli-memory-mcp install --host gemini` adds it"]
    # Neither CLI nor entries: listed after the hosts found, never dropped.
    missing = [line for line in lines if line.endswith(": not found")]
    assert missing == ["claude: not found", "copilot: not found", "hermes: not found"]
    assert lines.index("claude: not found") > 2


def test_status_lists_every_known_host_when_none_is_found(temp_home: Path, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    lines = run("status", home=temp_home, path=str(bindir)).stdout.splitlines()
    assert lines[0].startswith("no host found")
    assert [line for line in lines if line.endswith(": not found")] == [
        f"{host}: not found" for host in ("claude", "codex", "copilot", "gemini", "hermes")]
    hermes = lines.index("hermes: not found")
    assert lines[hermes + 1].startswith("  - Hermes Agent not found on PATH")  # and how to point at it


def test_dry_run_all_names_the_skipped_hosts_and_ends_saying_nothing_was_written(temp_home: Path,
                                                                                 tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "codex").write_text("#!/bin/sh\nexit 0\n")
    (bindir / "codex").chmod(0o755)
    lines = run("install", "--dry-run", "--host", "all", home=temp_home, path=str(bindir)).stdout.splitlines()
    assert lines[0] == "== codex (Codex CLI) =="
    assert "== gemini: not found on this machine; skipped ==" in lines
    assert lines[-1] == "Dry run: nothing was written (2 files would change)."
    assert not (temp_home / ".codex").exists()


def test_uninstall_all_takes_away_a_host_whose_cli_is_not_on_path(temp_home: Path, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()  # no host CLI at all: Hermes is installed by name, then its CLI is "gone"
    assert run("install", "--host", "hermes", home=temp_home, path=str(bindir)).returncode == 0
    assert (temp_home / ".hermes").exists()
    done = run("uninstall", "--host", "all", home=temp_home, path=str(bindir))
    assert done.returncode == 0, done.stderr
    assert "hermes: uninstalled" in done.stdout, done.stdout
    assert not (temp_home / ".hermes").exists()
    assert "hermes: installed" not in run("status", home=temp_home, path=str(bindir)).stdout


def test_install_all_says_how_to_point_at_a_host_it_cannot_find(temp_home: Path, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    done = run("install", "--host", "all", home=temp_home, path=str(bindir))
    assert "hermes: not found on this machine; skipped" in done.stdout
    assert "BLI_MEMORY_HERMES_BIN" in done.stdout, done.stdout


def test_uninstall_removes_what_install_created_without_backing_it_up(temp_home: Path,
                                                                      tmp_path: Path) -> None:
    import json

    bindir = tmp_path / "bin"
    bindir.mkdir()
    assert not (temp_home / ".claude.json").exists()
    assert run("install", "--host", "claude", home=temp_home, path=str(bindir)).returncode == 0
    claude_json = temp_home / ".claude.json"
    data = json.loads(claude_json.read_text())
    data["numStartups"] = 3  # Claude Code writes its own keys into the file install created
    claude_json.write_text(json.dumps(data))
    done = run("uninstall", "--host", "claude", home=temp_home, path=str(bindir))
    assert done.returncode == 0, done.stderr
    assert "backup" not in done.stdout  # the file did not exist before install: nothing to restore
    assert json.loads(claude_json.read_text()) == {"numStartups": 3}  # its keys stay, ours are gone
    assert sorted(p.name for p in temp_home.iterdir() if p.name.startswith(".claude")) == [".claude.json"]
    state = temp_home / ".local" / "state" / "bli-cockpit"
    assert not state.exists()  # install's record goes with what it made, and so does its folder
    assert "stay in" not in done.stdout  # no memories, no hook state: nothing to tell


def test_uninstall_says_where_the_memories_stay_and_keeps_them(temp_home: Path, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    assert run("install", "--host", "claude", home=temp_home, path=str(bindir)).returncode == 0
    store = temp_home / ".local" / "share" / "bli-memory" / "memory.sqlite3"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"SQLite format 3\x00")  # stands for the memories
    done = run("uninstall", "--host", "claude", home=temp_home, path=str(bindir))
    assert done.returncode == 0, done.stderr
    assert store.exists()  # memories are never deleted by uninstall
    assert f"memories stay in {store.parent}" in done.stdout, done.stdout
    assert "rm -r" in done.stdout  # and how to erase them, by hand
