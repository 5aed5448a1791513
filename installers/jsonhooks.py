"""Merging our handlers into a host's ``hooks`` object, leaving the person's alone.

Claude Code, Codex CLI and Gemini CLI share one shape (docs/hosts.md)::

    {"SessionStart": [{"matcher": "...", "hooks": [{"type": "command", "command": "...", ...}]}],
     "UserPromptSubmit": [{"hooks": [...]}], ...}

A handler is *ours* when its command runs a ``bli-memory-mcp`` executable with the
``hook`` subcommand, whatever its path: so an install from another virtualenv
replaces the old entry instead of adding a second one, and uninstall removes exactly
what install added. Groups and events emptied by a removal are dropped.
"""

from __future__ import annotations

import copy
import os
import shlex
from typing import Any

from bli_memory.core.errors import InstallConflict

__all__ = [
    "HandlerPosition",
    "WantedHook",
    "find_ours",
    "handler_positions",
    "is_ours",
    "merge_hooks",
    "remove_ours",
]

BIN_NAME = "bli-memory-mcp"

WantedHook = tuple[str, "str | None", dict[str, Any]]  # (event, matcher, handler)
HandlerPosition = tuple[str, int, int, "str | None", dict[str, Any]]  # (event, group, handler, matcher, h)


def is_ours(command: Any) -> bool:
    """True when a handler command runs ``bli-memory-mcp ... hook ...``."""
    if not isinstance(command, str):
        return False
    try:
        tokens = shlex.split(command)
    except ValueError:
        return False
    return bool(tokens) and os.path.basename(tokens[0]) == BIN_NAME and "hook" in tokens[1:]


def _groups(hooks: dict[str, Any], event: str, where: str) -> list[Any]:
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise InstallConflict(f"{where}: hooks.{event} is not a list; nothing was written")
    return groups


def find_ours(
    hooks: dict[str, Any], where: str = "config"
) -> dict[str, list[tuple[str | None, dict[str, Any]]]]:
    """Our handlers per event, with their group's matcher."""
    found: dict[str, list[tuple[str | None, dict[str, Any]]]] = {}
    for event in list(hooks):
        for group in _groups(hooks, event, where):
            if not isinstance(group, dict):
                continue
            for handler in group.get("hooks") or []:
                if isinstance(handler, dict) and is_ours(handler.get("command")):
                    found.setdefault(event, []).append((group.get("matcher"), handler))
    return found


def handler_positions(hooks: dict[str, Any], where: str = "config") -> list[HandlerPosition]:
    """Every command handler with its place: ``(event, group index, handler index, matcher, handler)``.

    Indices count every entry of the lists, so they are the ones a host that keys state
    by position uses (Codex's ``<path>:<event>:<group>:<handler>`` trust keys,
    docs/hosts.md section 2). Entries that are not objects are skipped.
    """
    out: list[HandlerPosition] = []
    for event in list(hooks):
        for gi, group in enumerate(_groups(hooks, event, where)):
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                continue
            matcher = group.get("matcher")
            for hi, handler in enumerate(group["hooks"]):
                if isinstance(handler, dict):
                    out.append((event, gi, hi, matcher if isinstance(matcher, str) else None, handler))
    return out


def remove_ours(hooks: dict[str, Any], where: str = "config") -> dict[str, Any]:
    """A copy of ``hooks`` without our handlers (emptied groups and events dropped)."""
    out: dict[str, Any] = {}
    for event, value in hooks.items():
        if not isinstance(value, list):
            out[event] = copy.deepcopy(value)
            continue
        groups = []
        for group in value:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                kept = [h for h in group["hooks"] if not (isinstance(h, dict) and is_ours(h.get("command")))]
                if not kept and len(kept) != len(group["hooks"]):
                    continue
                group = {**group, "hooks": kept}
            groups.append(copy.deepcopy(group))
        if groups or not value:
            out[event] = groups
    return out


def merge_hooks(hooks: dict[str, Any], wanted: list[WantedHook], where: str = "config") -> dict[str, Any]:
    """``hooks`` with exactly our ``wanted`` handlers, each alone in its own group.

    When our handlers are already exactly as wanted, the object is returned unchanged
    (same order, same placement): a second install changes nothing.
    """
    current = find_ours(hooks, where)
    target: dict[str, list[tuple[str | None, dict[str, Any]]]] = {}
    for event, matcher, handler in wanted:
        target.setdefault(event, []).append((matcher, handler))
    if current == target:
        return copy.deepcopy(hooks)
    out = remove_ours(hooks, where)
    for event, matcher, handler in wanted:
        group: dict[str, Any] = {}
        if matcher is not None:
            group["matcher"] = matcher
        group["hooks"] = [dict(handler)]
        out.setdefault(event, []).append(group)
    return out
