"""A project whose ``.git/config`` is a FIFO: the CLI, the hooks and the daemon go on.

Opening a FIFO for reading waits for a writer that never comes. The space of a folder is
derived from its git config, so such a file used to hang ``memory list`` and ``memory
save``, make every hook spend its whole deadline, and hold one of the daemon's 32
connection slots per prompt for good, until every other project's hooks were answered
``busy`` and went direct. Only regular files are read now (the folder's own space,
``dir_...``, as for any unreadable config).
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bli_memory.core.daemon.server import MAX_CONNECTIONS
from tests.conftest import FIXTURES, bin_path, make_fifo_config_repo
from tests.core.daemon.test_daemon import Daemons, daemons  # noqa: F401  (the fixture)
from tests.hooks_util import HookRun, run_hook, save

pytestmark = pytest.mark.e2e  # starts processes or servers (tests/tiers.py)

MEMORY = "The fifo project deploys on Tuesdays with the blue-green script."
PROMPT = "When does the fifo project deploy?"


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([bin_path(), "memory", *args], cwd=project, capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)


def prompt_hook(project: Path, prompt: str = PROMPT) -> HookRun:
    payload = json.loads((FIXTURES / "claude" / "prompt.json").read_text())
    payload.update(cwd=str(project), prompt=prompt, session_id=str(uuid.uuid4()))
    return run_hook("prompt", payload, cwd=project)


def test_cli_and_prompt_hook_work_in_a_project_whose_git_config_is_a_fifo(tmp_path: Path) -> None:
    project = make_fifo_config_repo(tmp_path / "fifo-project")
    saved = cli(project, "save", MEMORY)
    assert saved.returncode == 0, saved.stderr
    assert "in space dir_fifo-project__" in saved.stdout
    listed = cli(project, "list")
    assert listed.returncode == 0 and MEMORY in listed.stdout, listed.stderr

    hook = prompt_hook(project)
    assert hook.returncode == 0
    assert hook.receipt[0] == "ok", hook.stderr  # not a timeout
    assert "Tuesdays" in (hook.context or ""), hook.stderr


def test_prompts_in_a_fifo_project_leave_the_daemon_to_other_projects(daemons: Daemons,  # noqa: F811
                                                                      tmp_path: Path) -> None:
    fifo = make_fifo_config_repo(tmp_path / "fifo-project")
    other = tmp_path / "other"
    other.mkdir()
    save(other, "The other project's CI runs on GitHub Actions.")
    daemons.start()

    # More prompts than the daemon has connection slots, a few at a time.
    with ThreadPoolExecutor(max_workers=8) as pool:
        runs = list(pool.map(lambda _: prompt_hook(fifo), range(MAX_CONNECTIONS + 8)))
    after = prompt_hook(other, "Where does the other project's CI run?")

    outcome, fields = after.receipt
    assert outcome == "ok" and fields.get("via") == "daemon", after.stderr  # not "daemon":"busy"
    assert "GitHub Actions" in (after.context or ""), after.stderr
    for run in runs:  # each answered by the daemon, none waiting out its deadline
        assert run.returncode == 0
        outcome, fields = run.receipt
        assert outcome == "ok" and fields.get("via") == "daemon", run.stderr
