"""Whatever the umask, every folder we create is 0700 and every file 0600.

The hooks, the worker and the MCP server run with ``umask 000`` in a fresh HOME; then
every folder and file under HOME is checked. Before, ``~/.local``, ``~/.local/share``
and ``~/.local/state`` came out 0777 and the stats lock 0666.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from bli_memory.core.private_files import make_private_dir, make_private_file
from tests.conftest import FIXTURES, bin_path
from tests.hooks_util import run_hook
from tests.mcp_client import run_session, text_of

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)


@pytest.fixture
def umask_000():
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def _modes(root: Path) -> dict[str, int]:
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(dirpath) / name
            out[str(path.relative_to(root))] = stat.S_IMODE(os.lstat(path).st_mode)
    return out


def test_everything_we_create_is_private_under_umask_000(tmp_path: Path, umask_000: None) -> None:
    home = Path(os.environ["HOME"])
    project = tmp_path / "project"
    project.mkdir()
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((FIXTURES / "claude" / "transcript.jsonl").read_bytes())

    async def body(client):
        r = await client.call_tool("save_memory", {"content": "The CI runs on GitHub Actions."})
        assert not r.is_error, text_of(r)
        await client.call_tool("record_session", {"action": "start"})
        await client.call_tool("record_session", {"action": "stop"})

    run_session(project, body)
    stop = json.loads((FIXTURES / "claude" / "stop.json").read_text())
    stop.update(cwd=str(project), transcript_path=str(transcript))
    assert run_hook("stop", stop).returncode == 0
    prompt = json.loads((FIXTURES / "claude" / "prompt.json").read_text())
    prompt.update(cwd=str(project), prompt="Where does CI run?")
    assert run_hook("prompt", prompt).returncode == 0
    worker = subprocess.run([bin_path(), "worker", "--once"], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ))
    assert worker.returncode == 0, worker.stderr

    modes = _modes(home)
    assert any(name.endswith("memory.sqlite3") for name in modes)
    assert any(name.endswith(".lock") for name in modes)
    for name, mode in modes.items():
        path = home / name
        if path.is_dir():
            assert mode == 0o700, (name, oct(mode))
        elif stat.S_ISSOCK(os.lstat(path).st_mode) or path.is_file():
            assert mode & 0o077 == 0, (name, oct(mode))


def test_helpers_create_parents_private_and_leave_existing_folders_alone(
    tmp_path: Path, umask_000: None
) -> None:
    existing = tmp_path / "existing"
    existing.mkdir(mode=0o755)
    make_private_file(existing / "a" / "b" / "file")
    assert stat.S_IMODE(existing.stat().st_mode) == 0o755
    for folder in (existing / "a", existing / "a" / "b"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((existing / "a" / "b" / "file").stat().st_mode) == 0o600
    loose = existing / "loose"
    loose.write_text("kept")
    loose.chmod(0o644)
    make_private_file(loose)
    assert loose.read_text() == "kept" and stat.S_IMODE(loose.stat().st_mode) == 0o600
    make_private_dir(existing / "a")  # already there: no error
    (existing / "plain").write_text("")
    with pytest.raises(OSError):
        make_private_dir(existing / "plain")


def test_install_and_the_receipt_log_make_private_folders_under_umask_000(
    tmp_path: Path, umask_000: None
) -> None:
    home = Path(os.environ["HOME"])
    project = tmp_path / "project"
    project.mkdir()
    for host in ("claude", "gemini"):
        r = subprocess.run([bin_path(), "install", "--host", host], capture_output=True, text=True,
                           timeout=300, env=dict(os.environ), cwd=project)
        assert r.returncode == 0, r.stderr
    prompt = json.loads((FIXTURES / "gemini" / "before_agent.json").read_text())
    prompt.update(cwd=str(project), prompt="Where does CI run?")
    assert run_hook("prompt", prompt, args=("--host", "gemini")).returncode == 0
    modes = _modes(home)
    assert any(name.endswith("memory-hook-receipts.log") for name in modes), sorted(modes)
    assert any(name.startswith(".gemini") for name in modes)
    for name, mode in modes.items():
        if (home / name).is_dir():
            assert mode == 0o700, (name, oct(mode))


@pytest.mark.e2e
def test_making_an_open_database_private_keeps_its_write_ahead_log(tmp_path: Path) -> None:
    """Opening and closing an open database's file in this process would drop this process's
    locks on it; another process's closing connection then deletes the ``-wal`` under ours."""
    import sqlite3
    import subprocess
    import sys

    path = tmp_path / "memory.sqlite3"
    ours = sqlite3.connect(path, isolation_level=None)
    ours.execute("PRAGMA journal_mode = WAL")
    ours.execute("CREATE TABLE t (x)")
    ours.execute("INSERT INTO t VALUES (1)")
    try:
        make_private_file(path)  # what every store does when it is built, here a second time
        other = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
                 "c.execute('INSERT INTO t VALUES (2)'); c.close()")
        subprocess.run([sys.executable, "-c", other, str(path)], check=True, timeout=60)
        assert (tmp_path / "memory.sqlite3-wal").exists()
        assert ours.execute("SELECT count(*) FROM t").fetchone()[0] == 2
    finally:
        ours.close()
