"""Drive the installed ``bli-memory-mcp`` server through the official MCP client over stdio."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import bin_path


def server_params(cwd: Path, **env: str) -> StdioServerParameters:
    """Parameters that start the real console script in ``cwd`` with the test's HOME."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    full_env.update(env)
    return StdioServerParameters(command=bin_path(), args=[], env=full_env, cwd=str(cwd))


def run_session(cwd: Path, body: Callable[[Client], Awaitable[Any]], **env: str) -> Any:
    """Start one server session in ``cwd``, run ``body(client)``, return its result."""

    async def main() -> Any:
        async with Client(server_params(cwd, **env), read_timeout_seconds=60) as client:
            return await body(client)

    return anyio.run(main)


def text_of(result: Any) -> str:
    """The text content of a tool result."""
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
