"""The secret corpus through every path that writes: 0 secrets on disk, benign lines kept.

Each format of ``tests/secret_corpus.py`` goes through the stop hook (queued as an
extract job), the worker (distilled into memories), a recorded session (the
recording table) and ``save_memory`` over the official MCP client. Then every file
under the test's HOME (the SQLite file and its -wal, logs, stats, state) is read
byte by byte: no secret may be in any of them. Benign lines come out verbatim.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from bli_memory.core.memory.redaction import redact
from bli_memory.core.paths import store_path
from tests.conftest import FIXTURES, bin_path
from tests.hooks_util import run_hook
from tests.mcp_client import run_session, text_of
from tests.secret_corpus import BENIGN, SECRETS

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

#: The prompt keeps its first 4 KB and the reply its last 8 KB: keep each part under.
_PART_BYTES = 3000


def _chunks(lines: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    size = 0
    for line in lines:
        n = len(line.encode()) + 1
        if out[-1] and size + n > _PART_BYTES:
            out.append([])
            size = 0
        out[-1].append(line)
        size += n
    return out


def _transcript(path: Path, user: str, assistant: str) -> Path:
    lines = [
        {"type": "user", "message": {"role": "user", "content": user}},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": assistant}]},
        },
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def _stop(project: Path, transcript: Path) -> dict:
    payload = json.loads((FIXTURES / "claude" / "stop.json").read_text())
    payload.update(cwd=str(project), transcript_path=str(transcript))
    r = run_hook("stop", payload)
    assert r.returncode == 0
    outcome, fields = r.receipt
    assert outcome == "ok", r.stderr
    return fields


def _files_holding_secrets(root: Path) -> list[tuple[str, str]]:
    found = []
    needles = [(fmt, secret.encode()) for fmt, _, secret in SECRETS]
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            found += [(fmt, str(path.relative_to(root))) for fmt, needle in needles if needle in data]
    return found


def test_no_secret_of_the_corpus_reaches_the_disk(tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    captured, recorded = tmp_path / "captured", tmp_path / "recorded"
    captured.mkdir()
    recorded.mkdir()

    async def start_recording(client):
        r = await client.call_tool("record_session", {"action": "start"})
        assert not r.is_error, text_of(r)

    run_session(recorded, start_recording)

    # The stop hook: secrets in the prompt and in the reply, benign lines around them.
    lines = [line for _, line, _ in SECRETS]
    parts = _chunks(lines)
    exchanges = [(parts[i], parts[i + 1] if i + 1 < len(parts) else []) for i in range(0, len(parts), 2)]
    for n, (asked, said) in enumerate(exchanges):
        user = "\n".join([BENIGN[n % len(BENIGN)], *asked])
        assistant = "\n".join([*said, BENIGN[(n + 1) % len(BENIGN)]])
        for project in (captured, recorded):
            fields = _stop(project, _transcript(tmp_path / f"{project.name}-{n}.jsonl", user, assistant))
            assert fields["masked"] >= len(asked) + len(said)
    with closing(sqlite3.connect(store_path())) as conn, conn:
        queued = [t for (t,) in conn.execute("SELECT text FROM memory_extract_jobs")]
        kept = [t for (t,) in conn.execute("SELECT text FROM session_recordings")]
    assert len(queued) == len(exchanges) and len(kept) == len(exchanges)
    for n, text in enumerate(queued):
        assert BENIGN[n % len(BENIGN)] in text and BENIGN[(n + 1) % len(BENIGN)] in text

    # The worker distils the queued exchanges into memories.
    proc = subprocess.run(
        [bin_path(), "worker", "--once"], capture_output=True, text=True, timeout=300, env=dict(os.environ)
    )
    assert proc.returncode == 0, proc.stderr

    # save_memory: the agent saves every secret line on purpose, and every benign line.
    async def save_all(client):
        for _, line, secret in SECRETS:
            r = await client.call_tool("save_memory", {"content": line})
            assert not r.is_error, text_of(r)
            assert r.structured_content["masked"] >= 1, line
            assert secret not in r.structured_content["memory"]["content"]
        for line in BENIGN:
            r = await client.call_tool("save_memory", {"content": line})
            assert not r.is_error, text_of(r)
            assert r.structured_content["masked"] == 0, line
            assert r.structured_content["memory"]["content"] == line

    run_session(captured, save_all)

    # Every file, the -wal included, before and after a checkpoint folds the WAL in.
    leaks = _files_holding_secrets(home)
    assert leaks == [], "\n".join(map(str, leaks))
    with closing(sqlite3.connect(store_path())) as conn, conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (memories,) = conn.execute("SELECT count(*) FROM memories").fetchone()
    # Lines that differ only in their secret are one memory once masked (saved as a duplicate).
    assert memories >= len({redact(line).text for _, line, _ in SECRETS}) + len(BENIGN)
    assert _files_holding_secrets(home) == []


def test_update_memory_and_metadata_keep_no_secret_on_disk(tmp_path: Path) -> None:
    """update_memory with every format, and metadata values under secret keys of every
    type, over the official MCP client: each answer counts what it masked, and no file
    under HOME holds a secret afterwards."""
    home = Path(os.environ["HOME"])
    project = tmp_path / "project"
    project.mkdir()
    # Numbers of 8+ digits: a 4-digit pin turns up by chance in the microseconds of a stored
    # timestamp, so the byte scan below would report a leak that is not one.
    metadata = {"PASSWORD": 918273645, "pin": 73519246, "token": ["mdtokAlpha9", "mdtokBeta9"], "secret": "x",
                "credentials": {"user": "bob", "key": "mdcredGamma9"}, "owner": "platform team"}
    clear = ["918273645", "73519246", "mdtokAlpha9", "mdtokBeta9", "mdcredGamma9"]

    async def save_and_update(client):
        r = await client.call_tool("save_memory", {"content": "The billing job keeps its credentials.",
                                                   "metadata": metadata})
        assert not r.is_error, text_of(r)
        assert r.structured_content["masked"] == 5
        assert r.structured_content["memory"]["metadata"]["owner"] == "platform team"
        memory_id = r.structured_content["memory"]["id"]
        for _, line, secret in SECRETS:
            r = await client.call_tool("update_memory", {"id": memory_id, "content": line})
            assert not r.is_error, text_of(r)
            out = r.structured_content
            if out["status"] == "updated":
                memory_id = out["memory"]["id"]
            assert out["masked"] >= 1 and "masked" in text_of(r), line
            assert secret not in out["memory"]["content"]

    run_session(project, save_and_update)
    leaks = _files_holding_secrets(home)
    needles = [c.encode() for c in clear]
    for dirpath, _, names in os.walk(home):
        for name in names:
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                leaks += [(c.decode(), str(path)) for c in needles if c in data]
    assert leaks == [], "\n".join(map(str, leaks))
    with closing(sqlite3.connect(store_path())) as conn, conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (versions,) = conn.execute("SELECT count(*) FROM memories").fetchone()
    assert versions > 1
    assert _files_holding_secrets(home) == []
