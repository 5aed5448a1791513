"""A request nested deeper than the MCP SDK parses is answered with a JSON-RPC error.

The SDK's reader parses each line with pydantic's JSON parser, which stops at 200 levels
of nesting; the line was dropped and the client waited for its timeout. A request the
SDK would drop is now refused like any malformed one, with its id, and the session goes
on. Both routes (in process, and through the daemon) serve the same transport.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.core.mcp.test_mcp_transport import INIT, RawServer
from tests.mcp_client import run_session, text_of

pytestmark = pytest.mark.e2e  # starts bli-memory-mcp processes


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": "x"}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_deeply_nested_metadata_is_refused_and_the_session_goes_on(tmp_path: Path, mcp_route: Any) -> None:
    async def body(client: Any) -> tuple[str, Any, Any]:
        try:  # 200 levels: the deepest the official client itself still sends
            await client.call_tool("save_memory", {"content": "Nested metadata.", "metadata": _nested(200)})
        except MCPError as exc:
            refusal = str(exc)
        else:
            refusal = "<answered as a success>"
        kept = await client.call_tool("save_memory", {"content": "The build cache lives in /var/cache/ci."})
        found = await client.call_tool("search_memory", {"query": "Where does the build cache live?"})
        return refusal, kept, found

    refusal, kept, found = run_session(tmp_path, body)
    assert "Invalid Request" in refusal and "nested" in refusal, refusal
    assert not kept.is_error, text_of(kept)
    contents = [row["content"] for row in found.structured_content["results"]]
    assert contents == ["The build cache lives in /var/cache/ci."], contents  # nothing of the refused save


@pytest.mark.parametrize("depth", [600, 1100])
def test_a_raw_request_nested_600_or_1100_deep_gets_its_error(
        tmp_path: Path, mcp_route: Any, depth: int) -> None:
    server = RawServer(tmp_path)
    try:
        server.send(json.dumps(INIT).encode())
        assert server.answer()["id"] == 1
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "save_memory",
                           "arguments": {"content": "Nested metadata.", "metadata": "@"}}}
        line = json.dumps(call).replace('"@"', '{"a":' * depth + '"x"' + "}" * depth)
        server.send(line.encode())
        refused = server.answer()
        server.send(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}).encode())
        listed = server.answer()
    finally:
        server.close()
    if refused["error"]["code"] == -32700:  # past the interpreter's own parser: no id to give
        assert refused["id"] is None, refused
    else:  # JSON the SDK would drop: an invalid request, with its id
        assert refused["id"] == 7 and refused["error"]["code"] == -32600, refused
        assert "nested too deeply" in refused["error"]["message"], refused
    assert listed["id"] == 8 and "tools" in listed["result"], listed
