"""``status --check``: start each installed host's MCP server as its config writes it.

A host's own ``mcp list`` says little for some hosts (Codex and Copilot print only
"enabled"), and none runs a tool. This starts the command of our entry in each host's
config, exactly as written there (``command``, ``args``, ``env``, ``cwd``, over the
caller's environment, as the hosts do), with the official MCP client over stdio; runs
``initialize``, ``tools/list`` and one ``search_memory``; and reports per host
``connected (N tools, search ok) in 0.8 s`` or ``failed: <reason>``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["CHECK_TIMEOUT_S", "Checked", "check_hosts", "check_server"]

CHECK_TIMEOUT_S = 60.0
"""Longest wait for one host's server: a first start loads the embedding model (a few
seconds cold on a loaded machine); a server that answers nothing in a minute is broken."""


@dataclass(frozen=True)
class Checked:
    """One host's server, started and asked: ``ok``, the tool count, the seconds, or why not."""

    host: str
    ok: bool
    tools: int = 0
    seconds: float = 0.0
    reason: str = ""

    def line(self) -> str:
        """``claude: connected (13 tools, search ok) in 0.8 s`` or ``codex: failed: ...``."""
        if self.ok:
            return f"{self.host}: connected ({self.tools} tools, search ok) in {self.seconds:.1f} s"
        return f"{self.host}: failed: {self.reason}"


def _parameters(entry: dict[str, Any]) -> Any:
    """The entry as the MCP client's stdio parameters; ValueError when it has no command."""
    from mcp.client.stdio import StdioServerParameters

    command = entry.get("command")
    if not isinstance(command, str) or not command:
        raise ValueError("the entry has no command")
    args = entry.get("args") or []
    env = entry.get("env") or {}
    if not isinstance(args, list) or not isinstance(env, dict):
        raise ValueError("the entry's args or env is not of the shape the hosts read")
    cwd = entry.get("cwd")
    return StdioServerParameters(command=command, args=[str(a) for a in args],
                                 env={**os.environ, **{str(k): str(v) for k, v in env.items()}},
                                 cwd=cwd if isinstance(cwd, str) and cwd else None)


def check_server(host: str, entry: dict[str, Any] | None, *, timeout: float = CHECK_TIMEOUT_S) -> Checked:
    """Start ``entry``'s server and run ``initialize``, ``tools/list`` and one search.

    Never raises: every failure becomes ``Checked(ok=False, reason=...)`` (a missing
    entry, a command that cannot start, a server that exits or answers an error, a
    timeout after ``timeout`` seconds).
    """
    if not entry:
        return Checked(host, ok=False, reason="no MCP server entry of ours in its config")
    try:
        params = _parameters(entry)
    except ValueError as exc:
        return Checked(host, ok=False, reason=str(exc))
    started = time.monotonic()
    try:
        tools = _run(params, timeout)
    except TimeoutError:
        return Checked(host, ok=False, reason=f"no answer within {timeout:.0f} s")
    except Exception as exc:  # noqa: BLE001 - any failure is the answer, in one line
        return Checked(host, ok=False, reason=_reason(exc, params.command))
    return Checked(host, ok=True, tools=tools, seconds=time.monotonic() - started)


def _run(params: Any, timeout: float) -> int:
    import anyio

    async def bounded() -> int:
        with anyio.fail_after(timeout):
            return await _ask(params)

    return anyio.run(bounded)


async def _ask(params: Any) -> int:
    from mcp.client import Client
    from mcp.client.stdio import stdio_client

    with open(os.devnull, "w") as quiet:  # the server's stderr lines are not the answer
        async with Client(stdio_client(params, errlog=quiet), read_timeout_seconds=CHECK_TIMEOUT_S) as client:
            listed = await client.list_tools()
            names = [tool.name for tool in listed.tools]
            if "search_memory" not in names:
                raise RuntimeError(f"it lists {len(names)} tools but not search_memory")
            found = await client.call_tool("search_memory", {"query": "status check"})
            if found.is_error:
                text = " ".join(getattr(c, "text", "") for c in found.content)[:200]
                raise RuntimeError(f"search_memory answered an error: {text}")
            return len(names)


def _reason(exc: BaseException, command: str) -> str:
    """One line for a failure, unwrapping the task groups the client raises through."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError | PermissionError):
        return f"cannot start {command}: {exc.strerror or exc}"
    text = str(exc).strip() or type(exc).__name__
    if "Connection closed" in text:
        return f"{command} exited before it answered (run it by hand to see why)"
    return text[:300]


def check_hosts(statuses: list[Any], out: Callable[[str], Any]) -> int:
    """Check every host whose status is ``installed`` or ``outdated``; print one line each.

    Returns:
        0 when every checked server connected (or none is installed), 1 otherwise.
    """
    installed = [st for st in statuses if st.state in ("installed", "outdated")]
    if not installed:
        out("check: no host has BLI Memory installed; nothing to start\n")
        return 0
    out("check: each installed host's MCP server, started as its config writes it\n")
    failed = 0
    for st in installed:
        result = check_server(st.host, st.server)
        failed += not result.ok
        # The server answers, but the host may still switch it off here (Gemini in a folder
        # it does not trust): say so on the same line.
        off = next((d for d in st.details if " disables " in d), None)
        out(result.line() + (f"; but {off.split(';')[0]}" if off and result.ok else "") + "\n")
    return 1 if failed else 0
