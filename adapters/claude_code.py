"""Claude Code 2.1.x host adapter.

Payloads (stdin JSON, see ``docs/hosts.md`` section 1): ``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name``, ``source`` (SessionStart),
``prompt`` (UserPromptSubmit), ``stop_hook_active`` and ``last_assistant_message``
(Stop). Output: context goes out as JSON ``hookSpecificOutput.additionalContext``
(the documented context channel; the same shape Codex reads), a failed stop as a
one-line ``systemMessage`` (Claude Code shows no hook stderr to the person).
Transcript: JSONL under ``~/.claude/projects/``; the last exchange is the last
``user`` line whose content is text (not a tool result) plus the ``text`` blocks of
the ``assistant`` lines after it. The file may not exist yet at the first prompt.
"""

from __future__ import annotations

import json
from typing import Any

from bli_memory.core.errors import HostError
from bli_memory.core.hooks.payloads import additional_context, failed_stop_message
from bli_memory.core.hooks.payloads import payload_str as _str
from bli_memory.core.hooks.transcripts import tail_json_lines
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.models import Exchange, HookInput, HookResult, HostConventions, RenderedOutput
from bli_memory.installers.files import conflict as _conflict
from bli_memory.installers.files import dict_at as _dict_at
from bli_memory.installers.files import put_or_drop as _put

__all__: list[str] = []

HOST = "claude"
EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "stop": "Stop"}



@hookimpl
def host_conventions() -> HostConventions:
    # Claude Code sets ``CLAUDECODE=1`` and ``CLAUDE_CODE_ENTRYPOINT`` for the commands it runs
    # (docs/hosts.md).
    return HostConventions(host=HOST, agent="claude-code",
                           env_markers=("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"), client_names=("claude",))


@hookimpl
def host_info() -> dict[str, Any]:
    import shutil

    return {"name": HOST, "display_name": "Claude Code", "events": dict(EVENTS),
            "present": shutil.which("claude") is not None}


@hookimpl
def host_parse_payload(host: str, event: str, payload: dict[str, Any]) -> HookInput | None:
    if host != HOST:
        return None
    active = payload.get("stop_hook_active", False)
    return HookInput(
        host=HOST,
        event=event,  # type: ignore[arg-type]
        session_id=_str(payload, "session_id"),
        cwd=_str(payload, "cwd"),
        prompt=_str(payload, "prompt"),
        transcript_path=_str(payload, "transcript_path"),
        reentrant=active is True,
        last_assistant_message=_str(payload, "last_assistant_message"),
        source=_str(payload, "source"),
        raw=payload,
    )


@hookimpl
def host_render(host: str, result: HookResult) -> RenderedOutput | None:
    if host != HOST:
        return None
    if result.outcome == "failed" and result.event == "stop":
        return RenderedOutput(stdout=failed_stop_message(result.reason))
    if result.outcome != "ok" or not result.block or result.event == "stop":
        return RenderedOutput()
    return RenderedOutput(stdout=additional_context(EVENTS[result.event], result.block))


def _content(line: dict[str, Any]) -> Any:
    message = line.get("message")
    return message.get("content") if isinstance(message, dict) else None


def _texts(blocks: list[Any]) -> list[str]:
    return [
        b["text"] for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def _user_text(line: dict[str, Any]) -> str | None:
    """The typed prompt of a ``user`` line, or None for tool results, meta and odd lines."""
    if line.get("isMeta") or line.get("isSidechain"):
        return None
    content = _content(line)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = _texts(content)
        if texts and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return "\n".join(texts)
    return None


def _assistant_text(line: dict[str, Any]) -> str:
    if line.get("isSidechain"):
        return ""
    content = _content(line)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_texts(content))
    return ""


@hookimpl
def host_read_exchange(host: str, hook_input: HookInput, max_bytes: int) -> Exchange | None:
    if host != HOST:
        return None
    if not hook_input.transcript_path:
        raise HostError("no transcript_path in the payload", reason="no_transcript")
    lines = tail_json_lines(hook_input.transcript_path, max_bytes)
    assistant: list[str] = []
    user = ""
    for line in reversed(lines):
        kind = line.get("type")
        if kind == "assistant":
            text = _assistant_text(line)
            if text:
                assistant.append(text)
        elif kind == "user":
            text = _user_text(line)
            if text is not None:
                user = text
                break
    reply = "\n".join(reversed(assistant)) or (hook_input.last_assistant_message or "")
    if not user and not reply:
        raise HostError("the transcript tail holds no exchange", reason="no_transcript")
    return Exchange(user=user, assistant=reply)


# --- install / uninstall / status ------------------------------------------------------
#
# Claude Code reads the MCP server from ``mcpServers`` in ``~/.claude.json`` (user scope;
# a 0600 state file the host rewrites constantly: we merge one key) and hooks plus
# permissions from ``~/.claude/settings.json`` (docs/hosts.md section 1). Timeouts are
# in seconds. SessionStart gets the matcher of every source.

SESSION_START_MATCHER = "startup|resume|clear|compact"


def _server_entry(contract: dict[str, Any]) -> dict[str, Any]:
    server = contract["mcp_server"]
    return {"type": "stdio", "command": server["command"], "args": list(server["args"]),
            "env": dict(server["env"])}


def _wanted_hooks(contract: dict[str, Any]) -> list[tuple[str, str | None, dict[str, Any]]]:
    return [
        (h["event"], SESSION_START_MATCHER if h["event"] == "SessionStart" else None,
         {"type": "command", "command": h["command"], "timeout": h["timeout_seconds"]})
        for h in contract["hooks"]
    ]


def _paths(home: Any) -> tuple[Any, Any]:
    from pathlib import Path

    return Path(home) / ".claude.json", Path(home) / ".claude" / "settings.json"


def _is_our_server(entry: Any) -> bool:
    import os

    return isinstance(entry, dict) and os.path.basename(str(entry.get("command", ""))) == "bli-memory-mcp"


@hookimpl
def host_plan_config(host: str, contract: dict[str, Any], home: Any, uninstall: bool) -> Any:
    if host != HOST:
        return None
    from bli_memory.core.models import HostConfigPlan
    from bli_memory.installers.files import dump_json_like, read_json_object, read_text
    from bli_memory.installers.jsonhooks import merge_hooks, remove_ours

    state_path, settings_path = _paths(home)
    files: dict[str, tuple[str | None, str | None]] = {}

    old = read_text(state_path)
    state = read_json_object(state_path, old)
    servers_before = _dict_at(state, "mcpServers", state_path)
    servers = dict(servers_before)
    existing = servers.get(contract["server_id"])
    theirs = existing is not None and not _is_our_server(existing)
    if theirs and not uninstall:
        raise _conflict(
            f"{state_path}: an MCP server named {contract['server_id']!r} already exists and does not run "
            "bli-memory-mcp; rename or remove it first. Nothing was written"
        )
    if uninstall and not theirs:
        servers.pop(contract["server_id"], None)
    elif not uninstall:
        servers[contract["server_id"]] = _server_entry(contract)
    new_state = dict(state)
    _put(new_state, "mcpServers", servers, servers_before)
    if new_state != state:
        files[str(state_path)] = (old, dump_json_like(new_state, old))

    old_s = read_text(settings_path)
    settings = read_json_object(settings_path, old_s)
    hooks_before = _dict_at(settings, "hooks", settings_path)
    permissions_before = _dict_at(settings, "permissions", settings_path)
    allow_before = permissions_before.get("allow", [])
    if not isinstance(allow_before, list):
        raise _conflict(f"{settings_path}: permissions.allow is not a list; nothing was written")
    if uninstall:
        hooks = remove_ours(hooks_before, str(settings_path))
        allow = [a for a in allow_before if a not in contract["permissions_allow"]]
    else:
        hooks = merge_hooks(hooks_before, _wanted_hooks(contract), str(settings_path))
        allow = [*allow_before, *(a for a in contract["permissions_allow"] if a not in allow_before)]
    permissions = dict(permissions_before)
    _put(permissions, "allow", allow, allow_before)
    new_settings = dict(settings)
    _put(new_settings, "hooks", hooks, hooks_before)
    _put(new_settings, "permissions", permissions, permissions_before)
    if new_settings != settings:
        files[str(settings_path)] = (old_s, dump_json_like(new_settings, old_s))
    return HostConfigPlan(host=HOST, files=files)


@hookimpl
def host_status(host: str, contract: dict[str, Any], home: Any) -> Any:
    if host != HOST:
        return None
    from bli_memory.core.models import HostStatus
    from bli_memory.installers.files import read_json_object, read_text
    from bli_memory.installers.jsonhooks import find_ours

    state_path, settings_path = _paths(home)
    state = read_json_object(state_path, read_text(state_path))
    settings = read_json_object(settings_path, read_text(settings_path))
    servers = state.get("mcpServers") if isinstance(state.get("mcpServers"), dict) else {}
    hooks = settings.get("hooks") if isinstance(settings.get("hooks"), dict) else {}
    ours = find_ours(hooks, str(settings_path))
    allow = (settings.get("permissions") or {}).get("allow") or []
    details = []
    entry = servers.get(contract["server_id"])
    want = {e: [(m, h)] for e, m, h in _wanted_hooks(contract)}
    if entry is None and not ours:
        present = host_info()["present"]
        return HostStatus(host=HOST, state="absent" if present else "not_found",
                          details=("Claude Code CLI not found on PATH",) if not present else ())
    if entry != _server_entry(contract):
        details.append("MCP server entry is missing or differs from this installation"
                       if entry is not None else "MCP server entry is missing")
    for event, expected in want.items():
        if ours.get(event) != expected:
            details.append(f"hook {event} is missing or differs (path or timeout)")
    for perm in contract["permissions_allow"]:
        if perm not in allow:
            details.append(f"permission {perm} is not allowed")
    return HostStatus(host=HOST, state="outdated" if details else "installed", details=tuple(details),
                      server=entry if isinstance(entry, dict) else None)


@hookimpl
def host_print_config(host: str, contract: dict[str, Any]) -> str | None:
    if host != HOST:
        return None
    return json.dumps(contract, indent=2)
