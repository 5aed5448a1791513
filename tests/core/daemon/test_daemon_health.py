"""A daemon that cannot work says so and gets out of the way.

- Settings that would fail every request (an unknown ``BLI_MEMORY_EMBEDDER``) start no
  daemon: ``daemon --restart`` refuses in one line with exit 1 and stops nothing, and a
  hook's own start leaves no daemon behind while the hook fails open.
- A daemon whose model fails to load (``mpnet`` configured, not installed) answers the
  MCP calls that need no model (``memory_info``), then leaves; ``daemon --status``,
  ``status`` and ``cockpit doctor`` show ``daemon cannot embed: <reason>`` and what to do,
  and hooks go direct at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from bli_memory.core.hooks import daemon_client, daemon_start
from tests.conftest import bin_path
from tests.core.daemon import test_daemon
from tests.core.daemon.test_daemon import (
    Daemons,
    _daemon_pids,
    _gone,
    ping_ready,
    prompt_hook,
    save,
    wait_until,
)
from tests.mcp_client import run_session, text_of

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

daemons = test_daemon.daemons  # the daemon tests' fixture


def test_restart_with_an_unknown_embedder_refuses_and_stops_nothing(daemons: Daemons, project: Path) -> None:
    running = daemons.start()
    env = {**os.environ, "BLI_MEMORY_EMBEDDER": "mpnt"}
    r = subprocess.run([bin_path(), "daemon", "--restart"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("[bli-memory] the daemon cannot start: config_invalid: ")
    assert "'mpnt' is not a registered embedder" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert running.poll() is None and daemon_client.ping()["pid"] == running.pid


def test_a_hook_with_an_unknown_embedder_starts_no_daemon_and_fails_open(daemons: Daemons,
                                                                         project: Path) -> None:
    env = {"BLI_MEMORY_EMBEDDER": "mpnt"}
    hook = prompt_hook(project, env=env)
    assert hook.returncode == 0 and hook.stdout == ""
    assert hook.receipt[1]["via"] == "direct" and hook.reason == "config_invalid"
    time.sleep(3.0)  # a started daemon would bind within this time
    assert _daemon_pids(Path(os.environ["HOME"])) == []
    started = subprocess.run([bin_path(), "daemon"], env={**os.environ, **env}, capture_output=True,
                             text=True, timeout=60)
    assert started.returncode == 1 and "the daemon cannot start: config_invalid" in started.stderr


def test_a_daemon_that_cannot_embed_answers_info_then_leaves_and_says_why(daemons: Daemons,
                                                                          project: Path) -> None:
    save(project, "Staging listens on port 8443.")
    env = {"BLI_MEMORY_EMBEDDER": "mpnet"}
    proc = daemons.start(env=env, ready=False)
    # Let it hold the socket first: a session that found none would start a daemon of
    # its own, and this one would then leave with daemon_already_running (exit 0).
    wait_until(lambda: "daemon started" in daemons.stderr(proc) or proc.poll() is not None,
               what="the daemon to bind its socket")

    async def body(client):
        return await client.call_tool("memory_info", {})

    info = run_session(project, body, **env)
    assert not info.is_error, text_of(info)
    assert "1 live" in text_of(info) and "all-mpnet-base-v2-int8" in text_of(info)
    assert "bli-memory-mcp model install mpnet" in text_of(info)  # how to install it
    wait_until(lambda: proc.poll() is not None, what="the daemon that cannot embed to leave")
    assert proc.returncode == 1 and "cannot_embed" in daemons.stderr(proc)
    assert '"ready"' not in daemons.stderr(proc) and "daemon ready" not in daemons.stderr(proc)

    full = {**os.environ, **env}
    st = subprocess.run([bin_path(), "daemon", "--status"], env=full, capture_output=True, text=True,
                        timeout=30)
    status = json.loads(st.stdout)
    assert status["running"] is False
    assert status["problem"].startswith("cannot embed: the mpnet embedding model is not installed")
    assert "daemon --restart" in status["fix"]
    shown = subprocess.run([bin_path(), "status"], env=full, capture_output=True, text=True, timeout=120)
    assert "daemon: not running; daemon cannot embed: the mpnet" in shown.stdout, shown.stdout
    assert "bli-memory-mcp model install mpnet" in shown.stdout
    doctor = subprocess.run([bin_path("cockpit"), "doctor", "--json"], env=full, capture_output=True,
                            text=True, timeout=120)
    rows = {row[1] if isinstance(row, list) else row["check"]: row for row in json.loads(doctor.stdout)}
    assert "daemon cannot embed: the mpnet" in json.dumps(rows["memory-daemon"])

    hook = prompt_hook(project, env=env)  # no daemon to wait for: direct at once, fails open
    assert hook.returncode == 0 and hook.receipt[1]["via"] == "direct"
    assert hook.receipt[1]["elapsed_ms"] < hook.receipt[1]["deadline_ms"]
    time.sleep(2.0)
    assert _daemon_pids(Path(os.environ["HOME"])) == []  # that start failed: backed off, not retried


def test_a_daemon_that_embeds_clears_the_problem(daemons: Daemons, project: Path) -> None:
    failing = {**os.environ, "BLI_MEMORY_EMBEDDER": "mpnet"}
    daemons.start(env=failing, ready=False)
    wait_until(lambda: "problem" in daemon_client.status(failing), what="the problem to be recorded")
    healthy = daemons.start()
    assert ping_ready() is not None and "problem" not in daemon_client.status(failing)
    daemon_client.stop()
    wait_until(lambda: _gone(healthy.pid), what="the daemon to stop")
    assert "problem" not in daemon_client.status(failing)
    assert not daemon_start.problem_record_path(failing).exists()


def _status_of(env: dict[str, str]) -> tuple[dict, str, str]:
    """``daemon --status`` (JSON), ``status`` and the doctor's daemon row, run with ``env``."""
    full = {**os.environ, **env}
    st = subprocess.run([bin_path(), "daemon", "--status"], env=full, capture_output=True, text=True,
                        timeout=30)
    shown = subprocess.run([bin_path(), "status"], env=full, capture_output=True, text=True, timeout=120)
    doctor = subprocess.run([bin_path("cockpit"), "doctor", "--json"], env=full, capture_output=True,
                            text=True, timeout=120)
    row = next(r for r in json.loads(doctor.stdout) if r["check"] == "memory-daemon")
    return json.loads(st.stdout), shown.stdout, row["detail"]


def test_the_cannot_embed_record_is_of_its_settings_and_its_data_dir(daemons: Daemons,
                                                                     tmp_path: Path) -> None:
    first, other = tmp_path / "data-a", tmp_path / "data-b"
    failing = {"BLI_MEMORY_EMBEDDER": "mpnet", "BLI_MEMORY_DATA_DIR": str(first)}
    proc = daemons.start(env=failing, ready=False)
    wait_until(lambda: proc.poll() is not None, what="the daemon that cannot embed to leave")
    record = daemon_start.problem_record_path({**os.environ, **failing})
    assert record.parent == first and record.stat().st_mode & 0o777 == 0o600
    status, shown, row = _status_of(failing)
    assert status["problem"].startswith("cannot embed: the mpnet embedding model is not installed")
    assert status["problem"].endswith(f"(data dir {first})") and f"{first}/models" in status["problem"]
    assert "daemon cannot embed" in shown and "daemon cannot embed" in row
    # The setting fixed, or another data dir: that daemon's problem is not this one's.
    for env in ({"BLI_MEMORY_DATA_DIR": str(first)}, {**failing, "BLI_MEMORY_DATA_DIR": str(other)}):
        status, shown, row = _status_of(env)
        assert "problem" not in status and "cannot embed" not in shown, (env, shown)
        assert row == "absent (started on demand)", env


def test_restart_into_a_model_that_is_not_installed_says_so_and_keeps_the_daemon(daemons: Daemons,
                                                                                  project: Path) -> None:
    running = daemons.start()
    env = {**os.environ, "BLI_MEMORY_EMBEDDER": "mpnet"}
    r = subprocess.run([bin_path(), "daemon", "--restart"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("[bli-memory] the daemon cannot start: the configured embedding model is not "
                           "installed")
    assert "`bli-memory-mcp model install mpnet`" in line
    assert daemon_client.ping()["pid"] == running.pid  # the working daemon was left as it is
    back = subprocess.run([bin_path(), "daemon", "--restart"], capture_output=True, text=True, timeout=120)
    assert back.returncode == 0 and "daemon restarted" in back.stderr, back.stderr
    assert "problem" not in daemon_client.status()


def test_a_fixed_setting_starts_a_daemon_at_once_not_after_the_back_off(daemons: Daemons,
                                                                         project: Path) -> None:
    failing = {"BLI_MEMORY_EMBEDDER": "mpnet"}
    prompt_hook(project, env=failing)  # starts a daemon, which cannot embed and leaves
    wait_until(lambda: "problem" in daemon_client.status({**os.environ, **failing})
               and not _daemon_pids(Path(os.environ["HOME"])), what="the failed start to be recorded")
    prompt_hook(project, env=failing)  # the same settings: backed off
    time.sleep(2.0)
    assert _daemon_pids(Path(os.environ["HOME"])) == []
    fixed = prompt_hook(project)  # the setting fixed: that failure is not this start's
    assert fixed.returncode == 0 and fixed.receipt[1]["via"] == "direct"
    pong = wait_until(ping_ready, timeout=30, what="the daemon a hook of the fixed setting starts")
    assert pong["pid"] in _daemon_pids(Path(os.environ["HOME"]))
