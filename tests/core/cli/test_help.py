"""Help that says what each command does, and never runs it (issue 31, item 1)."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from tests.conftest import bin_path

pytestmark = [pytest.mark.e2e]  # starts processes (tests/tiers.py)


def _run(*args: str, tool: str = "bli-memory-mcp") -> subprocess.CompletedProcess[str]:
    return subprocess.run([bin_path(tool), *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_demo_help_prints_help_and_runs_nothing() -> None:
    done = _run("demo", "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: bli-memory-mcp demo")
    assert "scratch store" in done.stdout
    assert "saved" not in done.stdout and "Server" not in done.stderr


def test_top_level_help_names_the_memory_commands_and_cockpit() -> None:
    text = _run("--help").stdout
    for word in ("memory search|save|update|recall", "`cockpit doctor`"):
        assert word in text, word


@pytest.mark.parametrize("command", ["install", "uninstall", "status"])
def test_installer_commands_describe_themselves(command: str) -> None:
    text = _run(command, "--help").stdout
    usage, _, rest = text.partition("\n\n")
    assert usage.startswith(f"usage: bli-memory-mcp {command}")
    assert rest.split("\n", 1)[0].strip()[:8] in ("Register", "Remove e", "Report, ")


def test_cockpit_explains_its_store_names() -> None:
    assert "supermemory (the hosted service" in _run("--help", tool="cockpit").stdout
    log_help = _run("memory", "log", "--help", tool="cockpit").stdout
    assert "win: memory helped" in log_help and "supermemory (the" in log_help


def test_the_server_started_in_a_terminal_says_what_it_is() -> None:
    leader, follower = os.openpty()
    try:
        proc = subprocess.Popen([bin_path()], stdin=follower, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**os.environ, "BLI_MEMORY_DAEMON": "0"})
        os.close(follower)
        time.sleep(0.5)
        os.write(leader, b"\x04")  # Ctrl-D: end of input
        _, err = proc.communicate(timeout=60)
    finally:
        os.close(leader)
    assert b"this is the MCP server" in err and b"bli-memory-mcp demo" in err


def test_the_server_started_by_a_host_says_nothing_of_the_kind() -> None:
    done = subprocess.run([bin_path()], input="", capture_output=True, text=True, timeout=60)
    assert "this is the MCP server" not in done.stderr


def test_memory_update_corrects_a_memory_and_keeps_the_old_version(project) -> None:  # noqa: ANN001
    def memory(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([bin_path(), "memory", *args], capture_output=True, text=True, timeout=120,
                              cwd=project, input=stdin)

    saved = memory("save", "-", "--json", stdin="The staging API listens on port 8443.\n")
    assert saved.returncode == 0, saved.stderr
    ident = __import__("json").loads(saved.stdout)["memory"]["id"]
    done = memory("update", ident, "The staging API listens on port 9443; DB_PASSWORD=hunter2-Xk9q")
    assert done.returncode == 0, done.stderr
    assert "version 2" in done.stdout and "version 1 kept as history" in done.stdout
    assert "1 secret masked" in done.stdout
    shown = memory("get", ident).stdout
    assert "port 9443" in shown and "DB_PASSWORD=[REDACTED:" in shown and "hunter2" not in shown
    assert "v1 superseded" in shown or "superseded" in shown


def test_empty_text_and_query_are_refused_clearly(project) -> None:  # noqa: ANN001
    for args in (("search", "  "), ("save", ""), ("save", "-")):
        done = subprocess.run([bin_path(), "memory", *args], capture_output=True, text=True, timeout=120,
                              cwd=project, input="")
        assert done.returncode != 0
        assert "empty" in done.stderr, done.stderr


def test_a_short_id_gets_a_clear_answer_without_being_repeated(project) -> None:  # noqa: ANN001
    for args in (("get", "7e3f0a91"), ("forget", "ghp_notanid"), ("update", "1234", "new text")):
        done = subprocess.run([bin_path(), "memory", *args], capture_output=True, text=True, timeout=120,
                              cwd=project)
        assert done.returncode == 2
        assert "ids are UUIDs of 36 characters" in done.stderr and args[1] not in done.stderr


def test_a_too_long_save_gives_advice_the_terminal_can_follow(project) -> None:  # noqa: ANN001
    done = subprocess.run([bin_path(), "memory", "save", "-"], capture_output=True, text=True, timeout=120,
                          cwd=project, input="x" * 20_001)
    assert done.returncode == 1
    assert "the limit is 20000. Save its durable facts" in done.stderr and "extract" not in done.stderr


def test_save_from_stdin_with_no_stdin_at_all_is_refused_clearly(project) -> None:  # noqa: ANN001
    done = subprocess.run([bin_path(), "memory", "save", "-"], capture_output=True, text=True, timeout=120,
                          cwd=project,
                          preexec_fn=lambda: os.close(0))  # noqa: PLW1509 - a closed stdin on purpose
    assert done.returncode == 1 and "this process has none" in done.stderr
    assert "Traceback" not in done.stderr
