"""A model folder given as a relative path is refused alike by the hook, the MCP server
and the daemon, each a real process; the absolute path it names serves through the daemon.

A hook runs in the project's folder and the daemon in ``/``: before, ``./models/x`` loaded
in a hook or MCP server started in the right folder and failed in the daemon.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import bin_path
from tests.core.daemon import test_daemon
from tests.core.daemon.test_daemon import Daemons, _daemon_pids, prompt_hook
from tests.core.memory.tiny_model import write_tiny_model

pytestmark = pytest.mark.e2e  # starts bli-memory-mcp processes

daemons = test_daemon.daemons  # the daemon tests' fixture


def test_a_relative_model_path_is_refused_by_every_process_and_the_absolute_one_serves(
        daemons: Daemons, project: Path) -> None:
    folder = write_tiny_model(project / "models" / "x")
    env = {"BLI_MEMORY_EMBEDDER": "./models/x"}
    full = {**os.environ, **env}
    why = "BLI_MEMORY_EMBEDDER is invalid: './models/x' is a relative path"

    hook = prompt_hook(project, env=env, cwd=project)
    assert hook.returncode == 0 and hook.stdout == "", hook.stderr
    assert hook.receipt[1]["via"] == "direct" and hook.reason == "config_invalid"
    server = subprocess.run([bin_path()], input="", capture_output=True, text=True, env=full, cwd=project,
                            timeout=60)
    assert server.returncode == 1 and why in server.stderr and "Traceback" not in server.stderr
    assert f"from here {folder}" in server.stderr  # the folder it would have meant here
    started = subprocess.run([bin_path(), "daemon"], env=full, cwd=project, capture_output=True,
                             text=True, timeout=60)
    assert started.returncode == 1 and "the daemon cannot start: config_invalid" in started.stderr
    assert why in started.stderr
    time.sleep(2.0)  # a daemon the hook started would bind within this time
    assert _daemon_pids(Path(os.environ["HOME"])) == []

    absolute = {"BLI_MEMORY_EMBEDDER": str(folder)}
    daemons.start(env=absolute)  # its working folder is / whatever it was started from
    served = prompt_hook(project, env=absolute, cwd=project)
    assert served.returncode == 0 and served.receipt[1]["via"] == "daemon", served.stderr
    assert served.receipt[0] in {"ok", "skipped"}, served.stderr


def test_a_missing_model_folder_is_a_closed_set_reason(project: Path, tmp_path: Path) -> None:
    """A model folder that does not exist (a typo) fails the hook open with
    ``store_unavailable``, as a store of another model does, not ``unknown_internal``."""
    env = {"BLI_MEMORY_EMBEDDER": str(tmp_path / "no-such-model"), "BLI_MEMORY_DAEMON": "0"}
    hook = prompt_hook(project, env=env, cwd=project)
    assert hook.returncode == 0 and hook.stdout == "", hook.stderr
    assert hook.reason == "store_unavailable", hook.stderr
