"""A memory counts as given to a session only once its block reached the hook's stdout.

A session is given a memory once (docs/hooks.md). The record used to be written before
the block was printed, so a hook whose stdout was closed (the host gave up on it, or
closed the pipe) recorded a memory the session never got, and the session was never
given it. The record is now written after the write succeeded; a failed write lets
the memory go, on both routes (the daemon holds the ids, the hook process confirms or
releases them).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, bin_path
from tests.core.daemon.test_daemon import Daemons, daemons  # noqa: F401  (the fixture)
from tests.hooks_util import HookRun, run_hook, save

pytestmark = pytest.mark.e2e  # starts processes or servers (tests/tiers.py)

MEMORY = "The user's favourite colour is teal."
SESSION = "undelivered-session"


def _payload(project: Path) -> dict:
    data = json.loads((FIXTURES / "claude" / "prompt.json").read_text())
    data.update(cwd=str(project), prompt="What is my favourite colour?", session_id=SESSION)
    return data


def _prompt_with_stdout_closed(project: Path, how: str) -> HookRun:
    """One prompt hook whose stdout is gone: the fd closed, or a pipe nobody reads."""
    stdin = json.dumps(_payload(project)).encode()
    if how == "closed_fd":
        proc = subprocess.run([bin_path(), "hook", "prompt"], input=stdin, stderr=subprocess.PIPE,
                              env=dict(os.environ), timeout=120, preexec_fn=lambda: os.close(1))
    else:
        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader is gone before the hook writes
        try:
            proc = subprocess.run([bin_path(), "hook", "prompt"], input=stdin, stdout=write_end,
                                  stderr=subprocess.PIPE, env=dict(os.environ), timeout=120)
        finally:
            os.close(write_end)
    return HookRun(proc.returncode, "", proc.stderr.decode("utf-8", "replace"))


def _check(project: Path, how: str, via: str) -> None:
    lost = _prompt_with_stdout_closed(project, how)
    assert lost.returncode == 0
    outcome, fields = lost.receipt
    assert outcome == "ok" and fields["hits"] == 1 and fields["via"] == via, lost.stderr

    again = run_hook("prompt", _payload(project))
    outcome, fields = again.receipt
    assert outcome == "ok" and fields["via"] == via, again.stderr
    assert "teal" in (again.context or ""), again.stderr  # never delivered: given now
    assert "given" not in fields, fields

    third = run_hook("prompt", _payload(project))  # delivered once: not again
    assert third.context is None and third.receipt[1].get("given") == 1, third.stderr


@pytest.mark.parametrize("how", ["closed_fd", "unread_pipe"])
def test_a_block_the_host_never_got_is_given_on_the_next_prompt(project: Path, how: str) -> None:
    save(project, MEMORY)
    _check(project, how, "direct")


@pytest.mark.parametrize("how", ["closed_fd", "unread_pipe"])
def test_a_block_the_host_never_got_through_the_daemon_is_given_on_the_next_prompt(
        daemons: Daemons, project: Path, how: str) -> None:  # noqa: F811
    save(project, MEMORY)
    daemons.start()
    _check(project, how, "daemon")
