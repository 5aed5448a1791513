"""The guard a headless host command runs under: nothing of it outlives the worker.

``python host_guard.py CLI ARGS...`` is started by the worker
(:func:`~bli_memory.core.extraction.host_run.run_headless`) as the leader of a new process
group; it starts the CLI in that same group and waits. Then:

- when the worker is gone (its parent changed: killed outright, or a daemon or MCP server
  that exited mid-request), it kills the whole group, itself included, within half a
  second. A signal set on the CLI alone would not do: a CLI may be a wrapper that starts
  the real program as a child (Codex CLI's ``codex`` is a node script that starts its
  native binary), and that child would live on;
- when the CLI exits, it kills whatever the CLI left running in the group (a helper still
  holding the output pipe would otherwise keep the worker waiting for the answer until the
  timeout), and exits with the CLI's status.

Runnable as a file with the standard library only (started with ``python -I``), so a
request does not pay for importing the package.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

__all__ = ["main"]

#: Seconds between looks at the worker.
POLL_S = 0.5


def _others_in_group() -> list[int]:
    """This process group's other live members (Linux ``/proc``; ``[]`` elsewhere)."""
    group, me = os.getpgrp(), os.getpid()
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(group) and fields[0] != "Z" and int(stat.parent.name) != me:
            found.append(int(stat.parent.name))
    return found


def main(argv: list[str]) -> int:
    """Run ``argv`` in this process group until it exits or the worker is gone."""
    worker = os.getppid()
    child = subprocess.Popen(argv)  # noqa: S603 - the host's CLI, as its adapter wrote it
    while True:
        try:
            code = child.wait(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            if os.getppid() != worker:  # the worker is gone: the whole request goes with it
                os.killpg(0, signal.SIGKILL)
    for pid in _others_in_group():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
