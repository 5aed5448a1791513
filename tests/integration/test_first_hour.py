"""A new user's first hour with the four hosts: status, uninstall, the daemon, dry runs.

Each test works in a fresh temporary HOME with the real host CLIs (skipped without them,
failed under ``BLI_MEMORY_REQUIRE_INTEGRATION=1``, as in ``test_host_clis.py``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bli_memory.core.hooks import daemon_client
from tests.conftest import REPO_ROOT, bin_path
from tests.integration.test_host_clis import HERMES_BIN, REQUIRE, host_env

pytestmark = [pytest.mark.e2e, pytest.mark.e2e, pytest.mark.integration]

HOSTS = ("claude", "codex", "copilot", "gemini", "hermes")
#: The store's folder, which uninstall leaves on purpose (its parents too).
KEPT = (".local/share/bli-memory",)
KEPT_PARENTS = {".local", ".local/share"}


def every_cli() -> dict[str, str]:
    found = {name: shutil.which(name) for name in ("claude", "codex", "copilot", "gemini")}
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
    """Every file, link and folder under ``home`` but the store and its parent folders."""
    out = []
    for path in home.rglob("*"):
        rel = str(path.relative_to(home))
        if not rel.startswith(KEPT) and rel not in KEPT_PARENTS:
            out.append(rel + ("/" if path.is_dir() and not path.is_symlink() else ""))
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


def test_install_then_uninstall_all_leaves_home_as_it_was(temp_home: Path, project: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31, item 10: hook state, logs and the rule cache go too; the memories stay."""
    every_cli()
    monkeypatch.delenv("XDG_CACHE_HOME")  # the secret rules' cache in this HOME's ~/.cache
    before = files_under(temp_home)
    ours(temp_home, "install", "--host", "all")
    assert len(files_under(temp_home)) > len(before)
    # A first hour's worth of state: a saved memory, a prompt and a stop hook, a receipt.
    ours(temp_home, "memory", "save", "We deploy the billing service on Fridays.", cwd=project)
    from tests.hooks_util import run_hook

    run_hook("prompt", {"session_id": "s1", "hook_event_name": "UserPromptSubmit",
                        "prompt": "when do we deploy the billing service?", "cwd": str(project)}, cwd=project)
    assert (temp_home / ".local/state/bli-cockpit").is_dir()
    out = ours(temp_home, "uninstall", "--host", "all").stdout
    assert files_under(temp_home) == before
    assert "memories stay in" in out and (temp_home / ".local/share/bli-memory").is_dir()
    for folder in (".claude", ".codex", ".copilot", ".gemini", ".hermes"):
        assert not (temp_home / folder).exists(), folder


def test_uninstall_gives_back_the_persons_files_and_keeps_no_backup_of_ours(temp_home: Path,
                                                                            project: Path) -> None:
    """Given back as they were, the files need no backup: the one uninstall used to keep held
    our entries (restoring it would install us again), and the person's went."""
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
        assert not sorted(path.parent.glob(f"{path.name}.bli-memory-*.bak")), path
    assert "backup of the previous version" not in out, out
    assert sorted(p.name for p in (temp_home / ".gemini").iterdir() if "bli-memory" not in p.name) == [
        "settings.json"]
    assert "bli-memory" not in host_cli(temp_home, project, clis["codex"], "mcp", "list")
    assert "bli-memory" not in host_cli(temp_home, project, clis["claude"], "mcp", "list")


def test_uninstall_never_removes_the_memories_when_xdg_folders_coincide(
        temp_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A break-it pass: XDG_CACHE_HOME and XDG_DATA_HOME set to one folder made the cache's
    removal delete the store."""
    every_cli()
    shared = temp_home / "shared"
    monkeypatch.setenv("XDG_DATA_HOME", str(shared))
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    ours(temp_home, "memory", "save", "The deploy uses blue-green with a 5 minute bake.", cwd=project)
    ours(temp_home, "install", "--host", "claude", cwd=project)
    out = ours(temp_home, "uninstall", "--host", "all", cwd=project).stdout
    assert (shared / "bli-memory" / "memory.sqlite3").is_file() and "memories stay in" in out
    assert "blue-green" in ours(temp_home, "memory", "list", cwd=project).stdout


def test_uninstall_gives_back_the_persons_file_byte_for_byte(temp_home: Path, project: Path) -> None:
    """A new user's hand-made settings, with a one-line "hooks" value, came back reformatted."""
    every_cli()
    (temp_home / ".claude").mkdir()
    settings = temp_home / ".claude" / "settings.json"
    mine = ('{\n    "theme": "dark",\n'
            '    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}\n}\n')
    settings.write_text(mine)
    ours(temp_home, "install", "--host", "claude", cwd=project)
    assert settings.read_text() != mine
    ours(temp_home, "uninstall", "--host", "claude", cwd=project)
    assert settings.read_text() == mine


def test_uninstall_of_the_last_host_stops_the_daemon(temp_home: Path, monkeypatch) -> None:
    every_cli()
    from tests.core.daemon.test_daemon import Daemons, _gone, wait_until

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


def test_a_stop_on_request_holds_the_daemon_off_only_until_the_next_install(
        temp_home: Path, project: Path, monkeypatch) -> None:
    """Issue 31, item 2: status and doctor say the daemon is held off and until when; an
    uninstall and a new install let the next prompt hook start one at once."""
    import json

    every_cli()
    from tests.core.daemon.test_daemon import Daemons, wait_until
    from tests.hooks_util import run_hook

    monkeypatch.setenv("BLI_MEMORY_DAEMON", "1")
    daemons = Daemons(temp_home, temp_home.parent)
    payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy?",
               "cwd": str(project)}
    try:
        ours(temp_home, "install", "--host", "gemini")
        run_hook("prompt", payload, cwd=project)  # no daemon yet: the hook starts one
        wait_until(lambda: daemon_client.status()["running"] is True, what="a hook to start the daemon")
        ours(temp_home, "install", "--host", "gemini")  # a daemon that runs is not released
        ours(temp_home, "daemon", "--stop")
        wait_until(lambda: daemon_client.status()["running"] is False, what="the daemon to stop")
        held = ours(temp_home, "status", "--host", "gemini").stdout
        assert "daemon: not running; prompt hooks will not start it before " in held, held
        assert "(it was stopped on request); `bli-memory-mcp daemon --restart` starts it now" in held
        doctor = subprocess.run([bin_path("cockpit"), "doctor", "--json"], capture_output=True, text=True,
                                env=host_env(temp_home), timeout=120)
        row = {r["check"]: r for r in json.loads(doctor.stdout)}["memory-daemon"]
        assert row["detail"].startswith("absent: prompt hooks will not start it before"), row
        ours(temp_home, "uninstall", "--host", "gemini")  # the last host: no hook state is left
        ours(temp_home, "install", "--host", "gemini")
        fresh = ours(temp_home, "status", "--host", "gemini").stdout
        assert "an installed host starts it on demand" in fresh, fresh
        run_hook("prompt", payload, cwd=project)
        wait_until(lambda: daemon_client.status()["running"] is True, what="a hook to start the daemon")
    finally:
        daemons.kill_all()


def test_status_check_starts_each_hosts_server_as_configured(temp_home: Path, project: Path) -> None:
    """Issue 31, item 7: connected for every installed host with the real CLIs' configs, and
    the reason for a config whose command is broken."""
    every_cli()
    ours(temp_home, "install", "--host", "all", cwd=project)
    checked = ours(temp_home, "status", "--check", cwd=project).stdout
    for host in HOSTS:
        assert re.search(rf"^{host}: connected \(13 tools, search ok\) in [0-9.]+ s", checked, re.M), checked
    # Gemini does not trust the folder: the check line says it is switched off here anyway.
    assert re.search(r"^gemini: connected .*; but Gemini CLI disables bli-memory in ", checked, re.M), checked
    config = temp_home / ".codex" / "config.toml"
    config.write_text(config.read_text().replace(bin_path(), "/nonexistent/bli-memory-mcp"))
    broken = subprocess.run([bin_path(), "status", "--check"], capture_output=True, text=True,
                            env=host_env(temp_home), cwd=project, timeout=300)
    assert broken.returncode == 1
    assert "codex: failed: cannot start /nonexistent/bli-memory-mcp" in broken.stdout, broken.stdout
    assert "claude: connected" in broken.stdout


def test_status_with_no_host_cli_says_so(temp_home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**host_env(temp_home), "PATH": str(empty)}
    env.pop("BLI_MEMORY_HERMES_BIN", None)
    r = subprocess.run([bin_path(), "status"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("no host found"), r.stdout
    assert os.environ.get("HOME") == str(temp_home)


# --- Gemini: receipts are not shown to the person --------------------------------------


class StubGemini:
    """A loopback Gemini API endpoint (docs/hosts.md section 3): one canned streamed answer."""

    ANSWER = "Hello from the fake model."

    def __init__(self) -> None:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        reply = {"candidates": [{"content": {"parts": [{"text": self.ANSWER}], "role": "model"},
                                 "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 5, "totalTokenCount": 10}}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
                self.rfile.read(int(self.headers.get("content-length") or 0))
                if "streamGenerateContent" in self.path:
                    body, kind = f"data: {json.dumps(reply)}\r\n\r\n".encode(), "text/event-stream"
                else:
                    body, kind = json.dumps(reply).encode(), "application/json"
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def gemini_prompt(gemini: str, home: Path, project: Path, stub: StubGemini, **env: str) -> str:
    import json

    settings = home / ".gemini" / "settings.json"
    data = json.loads(settings.read_text())
    data["security"] = {"auth": {"selectedType": "gemini-api-key"}}  # else exit 41
    settings.write_text(json.dumps(data, indent=2))
    full = {**host_env(home, GEMINI_API_KEY="dummy", GOOGLE_GEMINI_BASE_URL=stub.url), **env}
    # A fixed model: "auto" would first ask the router model, which the stub does not play.
    r = subprocess.run([gemini, "-m", "gemini-2.5-flash", "-p", "What did we decide about the cache layer?"],
                       capture_output=True, text=True, env=full, cwd=project, timeout=240,
                       stdin=subprocess.DEVNULL)
    assert StubGemini.ANSWER in r.stdout, r.stdout + r.stderr
    return r.stdout + r.stderr


def test_gemini_prompt_shows_no_receipt_and_the_log_has_one_per_hook(temp_home: Path, project: Path) -> None:
    from bli_memory.core.hooks.receipt_log import log_path
    from bli_memory.core.paths import state_dir

    gemini = require_cli("gemini")
    ours(temp_home, "install", "--host", "gemini", "--trust-folder", str(project), cwd=project)
    stub = StubGemini()
    try:
        shown = gemini_prompt(gemini, temp_home, project, stub)
    finally:
        stub.close()
    assert "[bli-memory]" not in shown and "Hook system message" not in shown, shown
    receipts = log_path(state_dir()).read_text().splitlines()
    assert [line.split()[1] for line in receipts] == ["session-start", "prompt", "stop"], receipts
    assert all(line.split()[2] == "ok" for line in receipts), receipts


def test_gemini_failed_stop_still_tells_the_person(temp_home: Path, project: Path, tmp_path: Path) -> None:
    gemini = require_cli("gemini")
    ours(temp_home, "install", "--host", "gemini", "--trust-folder", str(project), cwd=project)
    not_a_folder = tmp_path / "store-is-a-file"
    not_a_folder.write_text("")
    stub = StubGemini()
    try:
        shown = gemini_prompt(gemini, temp_home, project, stub, BLI_MEMORY_DATA_DIR=str(not_a_folder))
    finally:
        stub.close()
    assert "BLI Memory could not keep this turn" in shown, shown


def require_cli(name: str) -> str:
    from tests.integration.test_host_clis import require

    return require(name, {"gemini": "npm @google/gemini-cli"}.get(name, name))


def test_trust_folder_makes_gemini_enable_our_server(temp_home: Path, project: Path) -> None:
    import json

    gemini = require_cli("gemini")
    ours(temp_home, "install", "--host", "gemini", cwd=project)
    untrusted = host_cli(temp_home, project, gemini, "mcp", "list")
    assert "disabled because this folder is untrusted" in untrusted, untrusted
    ours(temp_home, "install", "--host", "gemini", "--trust-folder", str(project), cwd=project)
    trusted = host_cli(temp_home, project, gemini, "mcp", "list")
    line = next((ln for ln in trusted.splitlines() if "bli-memory:" in ln), "")
    assert line.startswith("✓ bli-memory:") and line.endswith("Connected"), trusted
    ours(temp_home, "uninstall", "--host", "gemini", cwd=project)
    rules = temp_home / ".gemini" / "trustedFolders.json"
    assert not rules.exists() or str(project) not in json.loads(rules.read_text())


def test_dry_run_all_is_labelled_per_host_and_file_and_writes_nothing(temp_home: Path) -> None:
    every_cli()
    before = files_under(temp_home)
    out = ours(temp_home, "install", "--dry-run", "--host", "all").stdout
    assert files_under(temp_home) == before
    lines = out.splitlines()
    for host, name in (("claude", "Claude Code"), ("codex", "Codex CLI"), ("copilot", "GitHub Copilot CLI"),
                       ("gemini", "Gemini CLI"), ("hermes", "Hermes Agent")):
        assert f"== {host} ({name}) ==" in lines, out
    plugin = temp_home / ".hermes" / "plugins" / "bli-memory" / "__init__.py"
    source_lines = len((REPO_ROOT / "adapters" / "hermes_provider.py").read_text().splitlines())
    assert f"-- {plugin}: new file, adds {source_lines} lines (--verbose shows them)" in lines, out
    assert f"-- {temp_home / '.codex' / 'hooks.json'}: new file" in lines
    assert lines[-1] == "Dry run: nothing was written (12 files would change)."
    assert "def register(" not in out  # the plugin's source is summarised
    verbose = ours(temp_home, "install", "--dry-run", "--verbose", "--host", "all").stdout
    assert "def register(" in verbose and len(verbose.splitlines()) > len(lines) + source_lines
    assert files_under(temp_home) == before
