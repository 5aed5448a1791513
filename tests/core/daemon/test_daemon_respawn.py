"""When a hook starts the daemon again: at once after one that ran, backoff after failed starts.

Real daemon processes in the test's HOME (``tests/core/daemon/test_daemon.py`` helpers); every
daemon of that HOME is killed at teardown.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from bli_memory.core.hooks import daemon_client, daemon_start
from bli_memory.core.paths import daemon_socket_path
from tests.core.daemon.test_daemon import (
    Daemons,
    _daemon_pids,
    _gone,
    daemons,
    ping_ready,
    prompt_hook,
    wait_until,
)

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

__all__ = ["daemons"]  # the fixture, imported for pytest


def _started_by_a_hook(project: Path) -> int:
    first = prompt_hook(project)
    assert first.receipt[1]["daemon"] == "no_socket"
    return wait_until(ping_ready, what="the daemon the hook started")["pid"]


def test_a_daemon_killed_with_sigkill_is_restarted_by_the_next_prompt(daemons: Daemons,
                                                                      project: Path) -> None:
    pid = _started_by_a_hook(project)
    os.kill(pid, 9)
    wait_until(lambda: _gone(pid), what="the killed daemon to go")
    r = prompt_hook(project)
    assert r.returncode == 0 and r.receipt[1]["daemon"] == "stale_socket"
    again = wait_until(ping_ready, timeout=60, what="a daemon started again at once")
    assert again["pid"] != pid


def test_a_daemon_that_left_idle_is_restarted_by_the_next_prompt(daemons: Daemons, project: Path,
                                                                  monkeypatch) -> None:
    monkeypatch.setenv("BLI_MEMORY_DAEMON_IDLE_SECONDS", "2")
    pid = _started_by_a_hook(project)
    wait_until(lambda: _gone(pid), what="the daemon to leave idle")
    assert not daemon_socket_path().exists()
    r = prompt_hook(project)
    assert r.receipt[1]["daemon"] == "no_socket"
    again = wait_until(ping_ready, timeout=60, what="a daemon started again at once")
    assert again["pid"] != pid


def test_a_daemon_stopped_on_request_is_not_restarted_at_once(daemons: Daemons, project: Path) -> None:
    pid = _started_by_a_hook(project)
    assert daemon_client.stop() == pid
    wait_until(lambda: _gone(pid), what="the daemon to stop")
    prompt_hook(project)
    time.sleep(2.0)  # a started daemon would bind within this time
    assert _daemon_pids(Path(os.environ["HOME"])) == []


def test_failed_starts_back_off_to_once_an_hour(daemons: Daemons) -> None:
    stamp = daemon_start.spawn_stamp_path()
    stamp.parent.mkdir(parents=True, exist_ok=True)
    t0 = 1_000_000.0
    stamp.write_text(f"{t0} 0\n")  # a start that never reached ready (no ready marker)
    first, second, third = daemon_start.FAILED_START_BACKOFF_S
    assert daemon_start.spawn(now=t0 + first - 1) is False
    assert daemon_start.spawn(now=t0 + first + 1) is True  # the second try
    assert stamp.read_text().split()[1] == "1"
    t1 = t0 + first + 1
    daemons.kill_all()  # that daemon must not count as ready for this test
    daemon_start.ready_marker_path().unlink(missing_ok=True)
    assert daemon_start.spawn(now=t1 + second - 1) is False
    assert daemon_start.spawn(now=t1 + second + 1) is True
    daemons.kill_all()
    daemon_start.ready_marker_path().unlink(missing_ok=True)
    t2 = t1 + second + 1
    assert daemon_start.spawn(now=t2 + third - 1) is False  # from the third failure: hourly
    assert daemon_start.spawn(now=t2 + third + 1) is True
    assert stamp.read_text().split()[1] == "3"
    assert third == daemon_start.SPAWN_INTERVAL_S == 3600.0
