"""A skipped prompt imports only what decides the skip (issue 19, item 15).

Each test runs the real hook entry in a fresh interpreter (a subprocess, payload on
stdin) and reads ``sys.modules`` at its end: an import is a cost paid on every
trivial prompt, so the set is asserted exactly, not timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

#: Our modules a skipped prompt needs: the entry, receipts (and where they go) and stats,
#: the daemon client (tried first) with its start rule, the plugin seam, the host's
#: adapter, payload text clean-up, private file modes, the skip rule and the answer it
#: makes. All standard library only.
SKIP_PATH_MODULES = {
    "bli_memory", "bli_memory.adapters", "bli_memory.adapters.claude_code", "bli_memory.core",
    "bli_memory.core._version", "bli_memory.core.hooks.blocks", "bli_memory.core.cli.main",
    "bli_memory.core.plugins", "bli_memory.core.hookspecs", "bli_memory.core.hooks.daemon_client",
    "bli_memory.core.errors", "bli_memory.core.defaults",
    "bli_memory.core.hooks.events", "bli_memory.core.hooks.answers", "bli_memory.core.hooks.stats",
    "bli_memory.core.hooks.cuts",
    "bli_memory.core.hooks.stdin",
    "bli_memory.core.hooks.main", "bli_memory.core.hooks.deadlines", "bli_memory.core.models",
    "bli_memory.core.paths",
    "bli_memory.core.hooks.payloads", "bli_memory.core.hooks.receipts", "bli_memory.core.hooks.transcripts",
    "bli_memory.core.hooks.trivial", "bli_memory.installers", "bli_memory.installers.files",
    "bli_memory.core.hooks.daemon_start", "bli_memory.core.private_files",
    "bli_memory.core.hooks.receipt_log",
    "bli_memory.core.memory.unicode_text", "bli_memory.core.memory.injected_tags",
    # the wings' packages themselves: import-free ``__init__`` modules
    "bli_memory.core.cli", "bli_memory.core.hooks", "bli_memory.core.memory",
}
#: Standard-library and third-party modules only the backend needs.
BACKEND_ONLY = {"sqlite3", "logging", "uuid", "datetime", "numpy", "httpx", "onnxruntime",
                "tokenizers", "structlog", "hashlib", "bli_memory.core.embedded.engine",
                "bli_memory.core.team.client.remote", "bli_memory.core.extraction.extractors",
                "bli_memory.core.embedded.store", "kingfisher_sdk"}

_RUN = (
    "import sys\n"
    "from bli_memory.core.cli.main import main\n"
    "main(['hook', sys.argv[1]])\n"
    "print(repr(sorted(sys.modules)))\n"
)


def _modules_after(event: str, payload: dict, *, daemon: str, cwd: Path) -> tuple[set[str], str]:
    env = {**os.environ, "BLI_MEMORY_DAEMON": daemon}
    done = subprocess.run([sys.executable, "-c", _RUN, event], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=60, env=env, cwd=cwd, check=True)
    return set(eval(done.stdout.strip().splitlines()[-1])), done.stderr  # noqa: S307 (our repr)


def test_a_trivial_prompt_imports_only_the_skip_path(project: Path) -> None:
    payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "ok",
               "cwd": str(project)}
    modules, stderr = _modules_after("prompt", payload, daemon="0", cwd=project)
    assert '"reason":"trivial_prompt"' in stderr
    ours = {m for m in modules if m.startswith("bli_memory")}
    assert ours == SKIP_PATH_MODULES, (sorted(ours - SKIP_PATH_MODULES), sorted(SKIP_PATH_MODULES - ours))
    assert not modules & BACKEND_ONLY, sorted(modules & BACKEND_ONLY)


def test_a_prompt_that_is_searched_still_loads_the_engine(project: Path) -> None:
    payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit",
               "prompt": "how do we deploy the billing service?", "cwd": str(project)}
    modules, stderr = _modules_after("prompt", payload, daemon="0", cwd=project)
    assert "prompt ok" in stderr, stderr
    assert {"bli_memory.core.embedded.engine", "bli_memory.core.team.client.remote", "sqlite3"} <= modules
    assert "kingfisher_sdk" not in modules  # the vendor secret rules load for writes only
