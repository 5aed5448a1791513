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


def _model_missing() -> str | None:
    """The install command when ``BLI_MEMORY_EMBEDDER`` names an installable model that is
    not installed (checked up front, so the running daemon is not stopped for nothing)."""
    from bli_memory.core.errors import BliMemoryError
    from bli_memory.core.memory.embedder_models import INSTALLABLE
    from bli_memory.core.memory.model_mismatch import install_advice
    from bli_memory.core.settings import load_settings

    try:
        model = INSTALLABLE.get(load_settings().embedder.strip())
    except BliMemoryError:
        return None  # refuse_unusable_settings has said what is wrong
    return install_advice(model.model_id) if model is not None else None


def restart(wait_s: float = 30.0) -> int:
    """``daemon --restart``: stop the running daemon, start one now, wait until it answers.

    Returns 0 once the new daemon answers and warmed up; 1, with the running daemon left
    alone, when the configured installable model is not installed; 1 when none answered
    within ``wait_s`` or it cannot embed (:func:`~bli_memory.core.daemon.warm.report_warm_up_problem`).
    """
    missing = _model_missing()
    if missing is not None:
        sys.stderr.write(f"[bli-memory] the daemon cannot start: the configured embedding model is not "
                         f"installed; run `{missing}` first (the running daemon was left as it is)\n")
        return 1
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
