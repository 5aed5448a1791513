"""``bli-memory-mcp daemon --restart``: stop the running daemon and start one now.

After a change of settings (a new ``BLI_MEMORY_EMBEDDER``), a running daemon keeps what
it started with (docs/configuration.md, "Embedding models"); this replaces it from the
current shell's settings and waits until the new one answers and warmed up.
"""

from __future__ import annotations

import json
import sys
import time

from bli_memory.core.daemon.warm import report_warm_up_problem
from bli_memory.core.hooks import daemon_client, daemon_start

__all__ = ["restart"]


def restart(wait_s: float = 30.0) -> int:
    """``daemon --restart``: stop the running daemon, start one now, wait until it answers.

    Returns 0 once the new daemon answers and warmed up; 1 when none answered within ``wait_s``
    or it cannot embed (:func:`~bli_memory.core.daemon.warm.report_warm_up_problem`).
    """
    old = daemon_client.stop()
    give_up = time.monotonic() + wait_s
    while old is not None and time.monotonic() < give_up:
        try:
            if daemon_client.ping(timeout=0.2).get("pid") != old:
                break
        except daemon_client.DaemonUnavailable:
            break
        time.sleep(0.05)
    started_at = time.time()
    daemon_start.start_now()
    while time.monotonic() < give_up:
        try:
            pong = daemon_client.ping(timeout=0.5)
        except daemon_client.DaemonUnavailable:
            time.sleep(0.1)
            continue
        if pong.get("pid") != old:
            if report_warm_up_problem(pong.get("pid"), since=started_at, until=give_up):
                return 1
            started = json.dumps({"stopped": old, "pid": pong.get("pid")})
            sys.stderr.write(f"[bli-memory] daemon restarted {started}\n")
            return 0
        time.sleep(0.1)
    sys.stderr.write(f"[bli-memory] daemon did not answer within {wait_s:.0f} s after its start; "
                     "hooks and MCP servers answer in their own process meanwhile\n")
    return 1
