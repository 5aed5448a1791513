"""Prompt hooks of one session at the same moment inject a memory once, not once each.

Hook requests released together by a :class:`threading.Barrier` go to a real daemon
over its socket (the route hooks take in normal use: one warm process answering each
connection on its own thread), all with the same prompt of the same session. The
per-session record of what was injected (:mod:`bli_memory.core.hooks.injection_log`, a
file lock across threads and processes alike) must give the memory to one of them only.
The same claim is also raced by threads in this process, against the store file alone.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from bli_memory.core.hooks import daemon_client, injection_log
from tests.conftest import FIXTURES
from tests.core.daemon.test_daemon import Daemons, daemons  # noqa: F401  (the fixture)
from tests.hooks_util import save

pytestmark = pytest.mark.e2e  # starts processes or servers (tests/tiers.py)

MEMORY = "The user's favourite colour is teal."


def _payload(project: Path, prompt: str, session: str) -> dict:
    data = json.loads((FIXTURES / "claude" / "prompt.json").read_text())
    data.update(cwd=str(project), prompt=prompt, session_id=session)
    return data


def _together(project: Path, session: str, requests: int) -> list[dict]:
    """``requests`` prompt-hook requests to the daemon, released at one moment."""
    barrier = threading.Barrier(requests, timeout=60)
    replies: list[dict] = []
    errors: list[BaseException] = []
    payload = _payload(project, "What is my favourite colour?", session)

    def one() -> None:
        try:
            barrier.wait()
            replies.append(daemon_client.request("prompt", "claude", payload, cwd=str(project),
                                                 deadline=time.monotonic() + 60, connect_budget=10))
        except BaseException as exc:  # reported below, with the others
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not errors and len(replies) == requests, errors
    return replies


@pytest.mark.e2e
def test_concurrent_prompt_hooks_through_the_daemon_inject_a_memory_once(daemons: Daemons,  # noqa: F811
                                                                         project: Path) -> None:
    save(project, MEMORY)
    daemons.start()
    for n in range(6):
        replies = _together(project, f"race-{n}", 4)
        assert all(r["backend"] and r["outcome"] == "ok" for r in replies), replies
        given = [r for r in replies if "teal" in r["stdout"]]
        assert len(given) == 1, f"round {n}: {len(given)} of 4 hooks were given the memory"


def test_threads_claiming_one_id_at_once_give_it_to_one(tmp_path: Path) -> None:
    barrier = threading.Barrier(8, timeout=60)
    won: list[list[str]] = []

    def claim() -> None:
        barrier.wait()
        won.append(injection_log.claim_injected("claude", "one-session", ["m1", "m2"]))

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(won, key=len, reverse=True) == [["m1", "m2"]] + [[]] * 7
    assert injection_log.already_injected("claude", "one-session") == {"m1", "m2"}
