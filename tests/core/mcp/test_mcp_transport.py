"""Every request to the MCP server gets an answer, and saves never keep a secret.

The server runs as the installed console script; requests go over raw stdio (for
lines no client would send) or through the official MCP client.
"""

from __future__ import annotations

import json
import os
import select
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from bli_memory.core.paths import store_path
from tests.conftest import bin_path
from tests.mcp_client import run_session, text_of
from tests.secret_corpus import chars

pytestmark = pytest.mark.e2e  # starts processes or servers (tests/tiers.py)

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


class RawServer:
    """The server over raw stdio: write one line, read one line with a timeout."""

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [bin_path()],
            cwd=cwd,
            env=dict(os.environ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def send(self, line: bytes) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float = 60) -> dict:
        assert self.proc.stdout
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "no answer: the request went unanswered"
        return json.loads(self.proc.stdout.readline())

    def close(self) -> int:
        assert self.proc.stdin
        self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        if self.proc.stdout:
            self.proc.stdout.close()
        return code


def test_every_line_gets_an_answer(tmp_path: Path) -> None:
    server = RawServer(tmp_path)
    try:
        server.send(json.dumps(INIT).encode())
        assert server.answer()["id"] == 1
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

        server.send(b"this is not json")
        assert server.answer() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error"},
        }
        server.send(b'{"jsonrpc":"2.0","id":3,"method":')
        assert server.answer()["error"]["code"] == -32700

        server.send(b'{"jsonrpc":"2.0","id":4}')  # JSON, but no method: invalid, with its id
        assert server.answer() == {
            "jsonrpc": "2.0",
            "id": 4,
            "error": {"code": -32600, "message": "Invalid Request"},
        }
        server.send(b"[1, 2]")
        assert server.answer()["error"]["code"] == -32600

        # A lone surrogate is processed as U+FFFD, not dropped.
        server.send(
            b'{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"search_memory",'
            b'"arguments":{"query":"why \\ud800 broke"}}}'
        )
        reply = server.answer()
        assert reply["id"] == "s" and reply["result"]["isError"] is False
        assert reply["result"]["structuredContent"]["query"] == "why \ufffd broke"
        server.send(
            b'{"jsonrpc":"2.0","id":"k","method":"tools/call","params":{"name":"save_memory",'
            b'"arguments":{"content":"The \\udc00 parser drops half emojis."}}}'
        )
        saved = server.answer()
        assert saved["id"] == "k" and saved["result"]["isError"] is False
        assert (
            saved["result"]["structuredContent"]["memory"]["content"]
            == "The \ufffd parser drops half emojis."
        )

        # Bytes that are not UTF-8 are replaced, and the request answered.
        server.send(b'{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":"\xff\xfe"}}')
        assert server.answer() == {"jsonrpc": "2.0", "id": 8, "result": {}}

        # An id that is neither a string nor an integer is refused, and the server lives on:
        # an object id used to pass as a notification and then crash the stdin reader.
        for bad in (b'{"a":1}', b"1.5", b"true", b"null", b"[7]"):
            server.send(b'{"jsonrpc":"2.0","id":' + bad + b',"method":"ping"}')
            reply = server.answer()
            assert reply["id"] is None and reply["error"]["code"] == -32600, bad
        server.send(b'{"jsonrpc":"2.0","id":9,"method":"ping"}')
        assert server.answer() == {"jsonrpc": "2.0", "id": 9, "result": {}}
    finally:
        assert server.close() == 0


GITHUB = "ghp_" + chars(36, start=5)
WIFI = "kkcglHpqS&3"


def test_save_and_update_mask_secrets_and_say_so(tmp_path: Path) -> None:
    async def body(client):
        saved = await client.call_tool(
            "save_memory", {"content": f"CI pushes with {GITHUB}; the staging wifi password is {WIFI}"}
        )
        assert not saved.is_error, text_of(saved)
        assert saved.structured_content["masked"] == 2
        assert "2 secrets masked" in text_of(saved) and "<kind>" not in text_of(saved)
        content = saved.structured_content["memory"]["content"]
        assert GITHUB not in content and WIFI not in content
        assert "[REDACTED:github_token]" in content and "[REDACTED:prose_password]" in content

        plain = await client.call_tool("save_memory", {"content": "We pin numpy below 3."})
        assert plain.structured_content["masked"] == 0 and "masked" not in text_of(plain)

        updated = await client.call_tool(
            "update_memory",
            {
                "id": plain.structured_content["memory"]["id"],
                "content": f"We pin numpy below 3; export DB_PASSWORD={WIFI}",
            },
        )
        assert not updated.is_error, text_of(updated)
        assert updated.structured_content["masked"] == 1 and "1 secret masked" in text_of(updated)
        assert "<kind>" not in text_of(updated)
        assert WIFI not in updated.structured_content["memory"]["content"]

        queued = await client.call_tool("save_memory", {"content": f"token {GITHUB}", "extract": True})
        assert queued.structured_content["masked"] == 1

    run_session(tmp_path, body)


def test_save_counts_what_the_store_masked_and_refuses_a_nul_in_the_custom_id(tmp_path: Path) -> None:
    async def body(client):
        saved = await client.call_tool(
            "save_memory", {"content": "CI pushes with the deploy token.", "metadata": {"token": GITHUB}}
        )
        assert not saved.is_error, text_of(saved)
        assert saved.structured_content["masked"] == 1 and "1 secret masked" in text_of(saved)
        assert GITHUB not in json.dumps(saved.structured_content)

        nul = await client.call_tool("save_memory", {"content": "The deploy runs on Fridays.",
                                                     "customId": "deploy\x00day"})
        assert nul.is_error and "customId contains a NUL character" in text_of(nul), text_of(nul)
        listed = await client.call_tool("list_memories", {})
        assert "Fridays" not in text_of(listed)

    run_session(tmp_path, body)
    with closing(sqlite3.connect(store_path())) as conn, conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for f in store_path().parent.iterdir():
        if f.is_file():
            data = f.read_bytes()
            assert GITHUB.encode() not in data and WIFI.encode() not in data, f.name


def test_a_server_started_without_stdin_ends_cleanly(tmp_path: Path) -> None:
    r = subprocess.run([bin_path()], cwd=tmp_path, env=dict(os.environ), preexec_fn=lambda: os.close(0),
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout == b""


def test_requests_in_flight_are_answered_when_the_client_closes_stdin(tmp_path: Path) -> None:
    calls = [
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "save_memory", "arguments": {"content": "The staging port is 8443."}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "search_memory", "arguments": {"query": "staging port"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
    ]
    done = subprocess.run([bin_path()], cwd=tmp_path, env=dict(os.environ), capture_output=True,
                          input="".join(json.dumps(c) + "\n" for c in calls).encode(), timeout=120)
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert sorted(a["id"] for a in answers) == [1, 2, 3, 4], answers
    assert done.returncode == 0
