"""Codex CLI 0.171 host adapter.

MCP server under ``[mcp_servers.bli-memory]`` in ``~/.codex/config.toml``
(docs/hosts.md section 2).
"""

from __future__ import annotations

import shutil
from typing import Any

from bli_memory.core.contracts import hookimpl

__all__: list[str] = []

HOST = "codex"
EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "stop": "Stop"}


@hookimpl
def host_info() -> dict[str, Any]:
    return {"name": HOST, "display_name": "Codex CLI", "events": dict(EVENTS),
            "present": shutil.which("codex") is not None}


@hookimpl
def host_print_config(host: str, contract: dict[str, Any]) -> str | None:
    if host != HOST:
        return None
    import tomlkit

    doc = tomlkit.document()
    servers = tomlkit.table(is_super_table=True)
    entry = tomlkit.table()
    entry["command"] = contract["mcp_server"]["command"]
    entry["args"] = list(contract["mcp_server"]["args"])
    if contract["mcp_server"]["env"]:
        entry["env"] = dict(contract["mcp_server"]["env"])
    servers[contract["server_id"]] = entry
    doc["mcp_servers"] = servers
    return tomlkit.dumps(doc)
