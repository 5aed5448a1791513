"""Third-party plugins installed through entry points, as a user's package would be.

Each test writes a real distribution (a module and its ``.dist-info`` with
``entry_points.txt``) into a folder on ``PYTHONPATH``, so ``importlib.metadata`` finds it
in the real processes: the MCP server, the hook, the command line.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bli_memory.core.paths import store_path
from tests.conftest import FIXTURES, bin_path
from tests.hooks_util import run_hook
from tests.mcp_client import run_session, text_of

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

KEY = "ACMEKEY-123456789012"

RULE_PLUGIN = '''
import re
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.memory.redaction import RedactionRule

@hookimpl
def register_redaction_rules(register):
    register(RedactionRule(kind="acme_key", pattern=re.compile(r"ACMEKEY-[0-9]{12}")))

@hookimpl
def register_commands(register):
    def run(argv, *, prog, pm):
        print("hello from a plugin", *argv)
        return 3
    register("hello", run)
'''


def _distribution(folder: Path, name: str, source: str, group: str = "bli_memory.plugins") -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(source)
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {name}\n")
    return {"PYTHONPATH": str(folder) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _raw_bytes_in_store() -> bytes:
    found = b""
    for suffix in ("", "-wal"):
        path = Path(str(store_path()) + suffix)
        if path.exists():
            found += path.read_bytes()
    return found


def test_a_rule_plugin_masks_what_the_mcp_server_saves(tmp_path: Path, project: Path) -> None:
    env = _distribution(tmp_path / "site", "acmeplug", RULE_PLUGIN)

    async def body(client):
        return await client.call_tool("save_memory", {"content": f"The staging key is {KEY} for deploys."})

    saved = run_session(project, body, **env)
    assert not saved.is_error, text_of(saved)
    assert KEY not in text_of(saved)
    assert "[REDACTED:acme_key]" in saved.structured_content["memory"]["content"]
    assert KEY.encode() not in _raw_bytes_in_store()


def test_a_rule_plugin_masks_what_the_stop_hook_queues(tmp_path: Path, project: Path) -> None:
    env = _distribution(tmp_path / "site", "acmeplug", RULE_PLUGIN)
    lines = (FIXTURES / "claude" / "transcript.jsonl").read_text().replace(
        "Hello from the fake model.", f"Hello from the fake model. The deploy key is {KEY}.")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(lines)
    payload = json.loads((FIXTURES / "claude" / "stop.json").read_text())
    payload.update(cwd=str(project), transcript_path=str(transcript))
    r = run_hook("stop", payload, cwd=project, env=env)
    assert r.returncode == 0 and r.receipt[0] == "ok", r.stderr
    assert r.receipt[1]["masked"] >= 1 and r.receipt[1]["queued"] is True
    assert KEY.encode() not in _raw_bytes_in_store()


def test_a_plugin_command_runs_from_the_command_line(tmp_path: Path) -> None:
    env = {**os.environ, **_distribution(tmp_path / "site", "acmeplug", RULE_PLUGIN)}
    done = subprocess.run([bin_path(), "hello", "a", "b"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 3 and done.stdout == "hello from a plugin a b\n", done.stderr
    unknown = subprocess.run([bin_path(), "no-such-command"], capture_output=True, text=True, env=env,
                             timeout=60)
    assert unknown.returncode == 2 and "unknown command 'no-such-command'" in unknown.stderr


def test_a_broken_plugin_is_skipped_and_everything_else_works(tmp_path: Path, project: Path) -> None:
    env = _distribution(tmp_path / "site", "brokenplug", "raise ImportError('this plugin is broken')\n")

    async def body(client):
        return await client.call_tool("save_memory", {"content": "The release train leaves on Thursdays."})

    saved = run_session(project, body, **env)
    assert not saved.is_error, text_of(saved)
    full = {**os.environ, **env}
    status = subprocess.run([bin_path(), "status"], capture_output=True, text=True, env=full, timeout=120)
    assert status.returncode == 0, status.stderr
    assert "plugin 'brokenplug' (brokenplug) not loaded: ImportError: this plugin is broken" in status.stderr
