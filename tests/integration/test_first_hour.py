"""A new user's first hour with the four hosts: status, uninstall, the daemon, dry runs.

Each test works in a fresh temporary HOME with the real host CLIs (skipped without them,
failed under ``BLI_MEMORY_REQUIRE_INTEGRATION=1``, as in ``test_host_clis.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bli_memory.core import daemon_client
from tests.conftest import bin_path
from tests.integration.test_host_clis import HERMES_BIN, REQUIRE, host_env

pytestmark = pytest.mark.integration

HOSTS = ("claude", "codex", "gemini", "hermes")
#: Folders of the store and of logs/state, which uninstall leaves on purpose.
KEPT = (".local/share/bli-memory", ".local/state/bli-cockpit")


def every_cli() -> dict[str, str]:
    found = {name: shutil.which(name) for name in ("claude", "codex", "gemini")}
    found["hermes"] = HERMES_BIN or shutil.which("hermes")
    missing = [name for name, path in found.items() if not path]
    if missing:
        message = f"host CLIs not installed: {', '.join(missing)}"
        if REQUIRE:
            pytest.fail(message + " (BLI_MEMORY_REQUIRE_INTEGRATION=1)")
        pytest.skip(message)
    return {k: v for k, v in found.items() if v}


def ours(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([bin_path(), *args], capture_output=True, text=True, env=host_env(home),
                       cwd=cwd or home, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def files_under(home: Path) -> list[str]:
    out = []
    for path in home.rglob("*"):
        rel = str(path.relative_to(home))
        if (path.is_file() or path.is_symlink()) and not rel.startswith(KEPT):
            out.append(rel)
    return sorted(out)


def host_cli(home: Path, cwd: Path, *argv: str) -> str:
    r = subprocess.run(list(argv), capture_output=True, text=True, env=host_env(home), cwd=cwd,
                       timeout=180, stdin=subprocess.DEVNULL)
    return r.stdout + r.stderr


def test_status_without_host_shows_every_host_installed(temp_home: Path) -> None:
    every_cli()
    ours(temp_home, "install", "--host", "all")
    status = ours(temp_home, "status").stdout
    for host in HOSTS:
        assert any(line.startswith(f"{host}: installed") for line in status.splitlines()), status
    assert status.rstrip().splitlines()[-1].startswith("daemon: ")


def test_install_then_uninstall_all_leaves_home_as_it_was(temp_home: Path) -> None:
    every_cli()
    before = files_under(temp_home)
    ours(temp_home, "install", "--host", "all")
    assert len(files_under(temp_home)) > len(before)
    ours(temp_home, "uninstall", "--host", "all")
    assert files_under(temp_home) == before
    for folder in (".claude", ".codex", ".gemini", ".hermes"):
        assert not (temp_home / folder).exists(), folder


def test_uninstall_gives_back_the_persons_files_with_one_backup_each(temp_home: Path,
                                                                     project: Path) -> None:
    clis = every_cli()
    (temp_home / ".gemini").mkdir()
    settings = temp_home / ".gemini" / "settings.json"
    settings.write_text('{\n  "theme": "Dracula"\n}\n')
    (temp_home / ".codex").mkdir()
    (temp_home / ".codex" / "config.toml").write_text('model = "o4"\n')
    ours(temp_home, "install", "--host", "all")
    ours(temp_home, "install", "--host", "gemini")  # nothing changes: no new backup either
    out = ours(temp_home, "uninstall", "--host", "all").stdout
    assert settings.read_text() == '{\n  "theme": "Dracula"\n}\n'
    assert (temp_home / ".codex" / "config.toml").read_text() == 'model = "o4"\n'
    for path in (settings, temp_home / ".codex" / "config.toml"):
        [backup] = sorted(path.parent.glob(f"{path.name}.bli-memory-*.bak"))
        assert f"  - backup of the previous version: {backup}\n" in out, out
    assert sorted(p.name for p in (temp_home / ".gemini").iterdir() if "bli-memory" not in p.name) == [
        "settings.json"]
    assert "bli-memory" not in host_cli(temp_home, project, clis["codex"], "mcp", "list")
    assert "bli-memory" not in host_cli(temp_home, project, clis["claude"], "mcp", "list")


def test_uninstall_of_the_last_host_stops_the_daemon(temp_home: Path, monkeypatch) -> None:
    every_cli()
    from tests.core.test_daemon import Daemons, _gone, wait_until

    monkeypatch.setenv("BLI_MEMORY_DAEMON", "1")
    daemons = Daemons(temp_home, temp_home.parent)
    try:
        proc = daemons.start()
        ours(temp_home, "install", "--host", "codex")
        ours(temp_home, "install", "--host", "gemini")
        first = ours(temp_home, "uninstall", "--host", "codex").stdout
        assert "daemon: stopped" not in first and proc.poll() is None  # gemini still uses it
        last = ours(temp_home, "uninstall", "--host", "gemini").stdout
        assert f"daemon: stopped (pid {proc.pid})" in last, last
        wait_until(lambda: _gone(proc.pid), what="the daemon to stop")
        assert daemon_client.status()["running"] is False
    finally:
        daemons.kill_all()


def test_status_with_no_host_cli_says_so(temp_home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**host_env(temp_home), "PATH": str(empty)}
    env.pop("BLI_MEMORY_HERMES_BIN", None)
    r = subprocess.run([bin_path(), "status"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("no host found"), r.stdout
    assert os.environ.get("HOME") == str(temp_home)
