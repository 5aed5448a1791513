"""Prompt hooks of one session at the same moment inject a memory once, not once each.

Real hook processes, started together and released at once: each waits on its stdin
until every process is up, then all send the same prompt of the same session through
the daemon (one warm process answering each connection on its own thread, the route
hooks take in normal use; a cold direct hook on a loaded machine takes most of its 2 s
deadline, which would make the race a matter of luck). The per-session record of what
was injected (:mod:`bli_memory.core.hooks.injection_log`, a file lock across threads and
processes alike) must give the memory to one of them only.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from tests.conftest import FIXTURES, bin_path
from tests.core.daemon.test_daemon import Daemons, daemons  # noqa: F401  (the fixture)
from tests.hooks_util import save

MEMORY = "The user's favourite colour is teal."


def _payload(project: Path, prompt: str, session: str) -> bytes:
    data = json.loads((FIXTURES / "claude" / "prompt.json").read_text())
    data.update(cwd=str(project), prompt=prompt, session_id=session)
    return json.dumps(data).encode()


def _together(project: Path, session: str, processes: int) -> list[tuple[bytes, str]]:
    """Run ``processes`` prompt hooks released at one moment; ``(stdout, stderr)`` each."""
    procs = [subprocess.Popen([bin_path(), "hook", "prompt"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=project, env=os.environ.copy())
             for _ in range(processes)]
    time.sleep(0.3)  # every process is up and waiting on its stdin (a prompt hook waits 0.5 s)
    payload = _payload(project, "What is my favourite colour?", session)
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(payload)
    for p in procs:
        assert p.stdin is not None
        p.stdin.close()
    outs = []
    for p in procs:
        assert p.stdout is not None and p.stderr is not None
        with p.stdout, p.stderr:
            outs.append((p.stdout.read(), p.stderr.read().decode("utf-8", "replace")))
        assert p.wait(timeout=120) == 0
    return outs


def test_concurrent_prompt_hooks_through_the_daemon_inject_a_memory_once(daemons: Daemons,  # noqa: F811
                                                                         project: Path) -> None:
    save(project, MEMORY)
    daemons.start()
    for n in range(8):
        outs = _together(project, f"race-{n}", 4)
        assert all('"via":"daemon"' in err for _, err in outs), [err for _, err in outs]
        given = [out for out, _ in outs if b"teal" in out]
        assert len(given) == 1, f"round {n}: {len(given)} of 4 hooks were given the memory"

