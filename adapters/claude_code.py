"""Claude Code host adapter (placeholder until the hook runtime lands)."""

from __future__ import annotations

from typing import Any

from bli_memory.core.contracts import hookimpl

__all__: list[str] = []


@hookimpl
def host_info() -> dict[str, Any]:
    return {"name": "claude", "display_name": "Claude Code", "events": {}, "present": False}
