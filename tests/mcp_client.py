"""Drive the installed ``bli-memory-mcp`` server through the official MCP client over stdio."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import bin_path

#: When set (the daemon-route fixture of tests/core/mcp), the servers' stderr is appended here.
ERRLOG: Path | None = None


def server_params(cwd: Path, **env: str) -> StdioServerParameters:
    """Parameters that start the real console script in ``cwd`` with the test's HOME."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    full_env.update(env)
    return StdioServerParameters(command=bin_path(), args=[], env=full_env, cwd=str(cwd))


def run_session(cwd: Path, body: Callable[[Client], Awaitable[Any]], **env: str) -> Any:
    """Start one server session in ``cwd``, run ``body(client)``, return its result."""

    async def main() -> Any:
        params = server_params(cwd, **env)
        if ERRLOG is None:
            async with Client(params, read_timeout_seconds=60) as client:
                return await body(client)
        with ERRLOG.open("a") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as client:
                return await body(client)

    return anyio.run(main)


def text_of(result: Any) -> str:
    """The text content of a tool result."""
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
