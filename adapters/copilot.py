"""GitHub Copilot CLI 1.0.102 host adapter (docs/hosts-copilot.md).

Events: ``sessionStart`` (session-start), ``userPromptSubmitted`` (prompt), ``agentStop``
(stop), installed as camelCase command hooks. Copilot CLI sends one of two payload
formats, chosen by how the event is spelled in the hook file (hooks reference,
"Hook event input payloads"), and :func:`host_parse_payload` reads both:

- camelCase (``sessionStart``): ``sessionId``, ``timestamp`` (epoch ms), ``cwd``;
  ``source``/``initialPrompt`` (sessionStart), ``prompt`` (userPromptSubmitted),
  ``transcriptPath``, ``stopReason`` and ``stop_hook_active`` (agentStop).
- VS Code compatible (PascalCase ``SessionStart``, ``UserPromptSubmit``, ``Stop``):
  ``hook_event_name``, ``session_id``, ``timestamp`` (ISO 8601), ``cwd``,
  ``initial_prompt``, ``prompt``, ``transcript_path``, ``stop_reason``, ``stop_hook_active``.

Output: one JSON object on stdout; ``{"additionalContext": ...}`` from ``sessionStart``
and ``userPromptSubmitted`` reaches the model (``sessionStart`` since 1.0.11, the
prompt hook since 1.0.65, the CLI's own changelog; Copilot wraps the prompt hook's text
in ``<system_reminder>`` inside the user message). ``agentStop`` prints nothing: its
only output is ``decision: "block"``, which would force another turn. Exit code always
0. Copilot keeps hook stderr out of the conversation, so receipts go to stderr.

Transcript: ``~/.copilot/session-state/<session id>/events.jsonl``, one event a line:
``{"type": "user.message", "data": {"content": <prompt>, "transformedContent": ...}}``
and ``{"type": "assistant.message", "data": {"content": <text>, "toolRequests": [...]}}``.

Install (``$COPILOT_HOME`` replaces ``~/.copilot`` when set): the MCP server in
``mcp-config.json`` (``mcpServers``), the hooks in our own user-level hook file
``hooks/bli-memory.json`` (loaded since 0.0.422), and, only when the person asks
(``install --copilot-instructions``), a custom-instructions file
``instructions/bli-memory.instructions.md`` that asks the agent to search memory
before it starts work. Uninstall removes all three.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Literal

from bli_memory.core.errors import HostError
from bli_memory.core.hooks.blocks import strip_injected
from bli_memory.core.hooks.payloads import payload_str as _str
from bli_memory.core.hooks.transcripts import tail_json_lines
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.models import (
    AdjustedPlan,
    Exchange,
    HookInput,
    HookResult,
    HostConfigPlan,
    HostConventions,
    HostStatus,
    InstallOption,
    RenderedOutput,
)

__all__ = [
    "HOOKS_FILE",
    "INSTRUCTIONS_FILE",
    "INSTRUCTIONS_OPTION",
    "copilot_dir",
    "hook_file",
    "instructions_text",
    "with_instructions",
]

HOST = "copilot"
#: Our event names -> the camelCase events we install.
EVENTS = {"session-start": "sessionStart", "prompt": "userPromptSubmitted", "stop": "agentStop"}
#: The contract's event names -> Copilot's camelCase events.
CONTRACT_EVENTS = {"SessionStart": "sessionStart", "UserPromptSubmit": "userPromptSubmitted",
                   "Stop": "agentStop"}
#: Our user-level hook file, inside ``<copilot dir>/hooks/``.
HOOKS_FILE = "bli-memory.json"
#: Our custom-instructions file, inside ``<copilot dir>/instructions/``.
INSTRUCTIONS_FILE = "bli-memory.instructions.md"
_OURS = re.compile(r" hook (session-start|prompt|stop) --host copilot$")


def _first_str(payload: dict[str, Any], *keys: str) -> str | None:
    """The first of ``keys`` present in ``payload`` as a string (camelCase or snake_case)."""
    for key in keys:
        if payload.get(key) is not None:
            return _str(payload, key)
    return None


def _clean(text: str | None) -> str | None:
    return None if text is None else strip_injected(text).strip()


@hookimpl
def host_conventions() -> HostConventions:
    # Copilot CLI sets ``COPILOT_CLI=1`` for the hooks and MCP servers it runs, and sends
    # ``copilot-cli`` as the MCP clientInfo name (both seen in real runs of 1.0.102).
    return HostConventions(host=HOST, agent="copilot-cli", env_markers=("COPILOT_CLI",),
                           client_names=("copilot",))


@hookimpl
def host_info() -> dict[str, Any]:
    return {"name": HOST, "display_name": "GitHub Copilot CLI", "events": dict(EVENTS),
            "present": shutil.which("copilot") is not None}


@hookimpl
def host_parse_payload(host: str, event: str, payload: dict[str, Any]) -> HookInput | None:
    if host != HOST:
        return None
    return HookInput(
        host=HOST,
        event=event,  # type: ignore[arg-type]
        session_id=_first_str(payload, "sessionId", "session_id"),
        cwd=_str(payload, "cwd"),
        prompt=_clean(_str(payload, "prompt")),
        transcript_path=_first_str(payload, "transcriptPath", "transcript_path"),
        reentrant=payload.get("stop_hook_active", False) is True,
        source=_str(payload, "source"),
        raw=payload,
    )


@hookimpl
def host_render(host: str, result: HookResult) -> RenderedOutput | None:
    if host != HOST:
        return None
    if result.event == "stop" or result.outcome != "ok" or not result.block:
        return RenderedOutput()
    return RenderedOutput(stdout=json.dumps({"additionalContext": result.block}, ensure_ascii=False))


@hookimpl
def host_read_exchange(host: str, hook_input: HookInput, max_bytes: int) -> Exchange | None:
    if host != HOST:
        return None
    if not hook_input.transcript_path:
        raise HostError("no transcriptPath in the payload", reason="no_transcript")
    answers: list[str] = []
    user = ""
    for event in reversed(tail_json_lines(hook_input.transcript_path, max_bytes)):
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        content = data.get("content")
        if event.get("type") == "assistant.message" and isinstance(content, str) and content.strip():
            answers.append(content)
        elif event.get("type") == "user.message":
            user = (_clean(content) or "") if isinstance(content, str) else ""
            break
    reply = _clean("\n".join(reversed(answers))) or ""
    if not user and not reply:
        raise HostError("the transcript tail holds no exchange", reason="no_transcript")
    return Exchange(user=user or "", assistant=reply)


# --- install / uninstall / status ------------------------------------------------------


def copilot_dir(home: Path | str) -> Path:
    """Copilot CLI's config folder: ``$COPILOT_HOME``, else ``<home>/.copilot``.

    The rule is ``copilot help environment`` of 1.0.102 (``COPILOT_HOME``).
    """
    override = os.environ.get("COPILOT_HOME")
    return Path(override) if override else Path(home) / ".copilot"


def _server_entry(contract: dict[str, Any]) -> dict[str, Any]:
    """Our ``mcpServers`` entry, in the shape ``copilot mcp add`` writes (all tools allowed)."""
    server = contract["mcp_server"]
    entry: dict[str, Any] = {"type": "local", "command": server["command"], "args": list(server["args"])}
    if server["env"]:
        entry["env"] = dict(server["env"])
    entry["tools"] = ["*"]
    return entry


def _wanted_hooks(contract: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    from bli_memory.installers.contract import HOOK_SUBCOMMANDS, hook_command

    binary = contract["mcp_server"]["command"]
    return {CONTRACT_EVENTS[h["event"]]: [{
        "type": "command",
        "bash": hook_command(binary, HOOK_SUBCOMMANDS[h["event"]][0], "--host", HOST),
        "timeoutSec": h["timeout_seconds"],
    }] for h in contract["hooks"]}


def hook_file(contract: dict[str, Any]) -> dict[str, Any]:
    """The hook file install writes: ``{"version": 1, "hooks": {event: [command hook]}}``.

    Each hook is ``{"type": "command", "bash": "<abs bin> hook <sub> --host copilot",
    "timeoutSec": <contract timeout, seconds>}`` (hooks reference, "Command hooks").
    """
    return {"version": 1, "hooks": _wanted_hooks(contract)}


def _is_ours(entry: Any) -> bool:
    command = entry.get("bash") if isinstance(entry, dict) else None
    return isinstance(command, str) and bool(_OURS.search(command))


def _without_ours(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """``data`` (a hook file) without our entries, and without events left empty by that."""
    from bli_memory.installers.files import conflict, dict_at

    hooks = dict_at(data, "hooks", path)
    kept: dict[str, Any] = {}
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            raise conflict(f"{path}: hooks.{event} is not a list; nothing was written")
        rest = [e for e in entries if not _is_ours(e)]
        if rest or not entries:
            kept[event] = rest
    out = dict(data)
    out["hooks"] = kept
    return out


def _plan_hooks(path: Path, contract: dict[str, Any], uninstall: bool) -> tuple[str | None, str | None]:
    from bli_memory.installers.files import dump_json_like, read_json_object, read_text

    old = read_text(path)
    data = _without_ours(read_json_object(path, old), path)
    if uninstall:
        leftover = {k: v for k, v in data.items() if k not in ("version", "hooks")}
        new = None if not data["hooks"] and not leftover else dump_json_like(data, old)
    else:
        data = {"version": data.get("version", 1), **data}
        data["hooks"] = {**data["hooks"], **{
            event: [*data["hooks"].get(event, []), *entries]
            for event, entries in _wanted_hooks(contract).items()}}
        new = dump_json_like(data, old)
    return old, None if old is None and new is None else new


def instructions_text() -> str:
    """The custom-instructions entry, asking the agent to search memory before it starts work."""
    return ("<!-- bli-memory: written by `bli-memory-mcp install --host copilot --copilot-instructions`;\n"
            "     `bli-memory-mcp uninstall --host copilot` removes this file. -->\n"
            "Before you start a task, call the `search_memory` tool of the `bli-memory` MCP server with a\n"
            "short query about the task, and follow what it returns about this project and this person.\n"
            "When the person states a lasting preference, decision or fact about the project, keep it\n"
            "with the `save_memory` tool of the same server.\n")


def _instructions_path(home: Path | str) -> Path:
    return copilot_dir(home) / "instructions" / INSTRUCTIONS_FILE


def with_instructions(plan: HostConfigPlan, home: Path | str) -> HostConfigPlan:
    """``plan`` plus writing the custom-instructions file (the person asked for it).

    The entry is written only on this explicit request (``install --copilot-instructions``):
    custom instructions go into every session's system prompt.
    """
    from bli_memory.installers.files import read_text

    path = _instructions_path(home)
    old = read_text(path)
    if old == instructions_text():
        return plan
    return HostConfigPlan(host=plan.host, files={**plan.files, str(path): (old, instructions_text())},
                          notes=plan.notes, owned=plan.owned)


@hookimpl
def host_plan_config(host: str, contract: dict[str, Any], home: Path, uninstall: bool) -> Any:
    if host != HOST:
        return None
    from bli_memory.installers.files import dict_at, dump_json_like, put_or_drop, read_json_object, read_text

    base = copilot_dir(home)
    files: dict[str, tuple[str | None, str | None]] = {}
    mcp_path = base / "mcp-config.json"
    old = read_text(mcp_path)
    config = read_json_object(mcp_path, old)
    before = dict_at(config, "mcpServers", mcp_path)
    servers = dict(before)
    if uninstall:
        servers.pop(contract["server_id"], None)
    else:
        servers[contract["server_id"]] = _server_entry(contract)
    new_config = dict(config)
    put_or_drop(new_config, "mcpServers", servers, before)
    if new_config != config:
        files[str(mcp_path)] = (old, dump_json_like(new_config, old))
    hooks_path = base / "hooks" / HOOKS_FILE
    old_hooks, new_hooks = _plan_hooks(hooks_path, contract, uninstall)
    if old_hooks != new_hooks:
        files[str(hooks_path)] = (old_hooks, new_hooks)
    instructions = _instructions_path(home)
    old_text = read_text(instructions)
    if uninstall and old_text is not None and old_text.startswith("<!-- bli-memory:"):
        files[str(instructions)] = (old_text, None)
    return HostConfigPlan(host=HOST, files=files)


def _hooks_disabled(home: Path) -> str | None:
    from bli_memory.installers.files import read_json_object, read_text

    path = copilot_dir(home) / "settings.json"
    try:
        settings = read_json_object(path, read_text(path))
    except Exception:
        return None
    if settings.get("disableAllHooks") is True:
        return f"hooks are turned off in {path} (disableAllHooks is true)"
    return None


@hookimpl
def host_status(host: str, contract: dict[str, Any], home: Path) -> Any:
    if host != HOST:
        return None
    from bli_memory.installers.files import read_json_object, read_text

    base = copilot_dir(home)
    mcp_path = base / "mcp-config.json"
    servers = read_json_object(mcp_path, read_text(mcp_path)).get("mcpServers")
    entry = servers.get(contract["server_id"]) if isinstance(servers, dict) else None
    hooks_path = base / "hooks" / HOOKS_FILE
    hooks = read_json_object(hooks_path, read_text(hooks_path)).get("hooks")
    ours = {event: [e for e in entries if _is_ours(e)] for event, entries in hooks.items()
            if isinstance(entries, list)} if isinstance(hooks, dict) else {}
    ours = {event: entries for event, entries in ours.items() if entries}
    if entry is None and not ours:
        present = host_info()["present"]
        return HostStatus(host=HOST, state="absent" if present else "not_found",
                          details=() if present else ("GitHub Copilot CLI (copilot) not found on PATH",))
    details: list[str] = []
    if entry != _server_entry(contract):
        details.append("MCP server entry is missing or differs from this installation"
                       if entry is not None else "MCP server entry is missing")
    for event, entries in _wanted_hooks(contract).items():
        if ours.get(event) != entries:
            details.append(f"hook {event} is missing or differs (path or timeout)")
    disabled = _hooks_disabled(home)
    if disabled:
        details.append(disabled)
    state: Literal["installed", "outdated"] = "outdated" if details else "installed"
    return HostStatus(host=HOST, state=state, details=tuple(details),
                      server=entry if isinstance(entry, dict) else None)


@hookimpl
def host_print_config(host: str, contract: dict[str, Any]) -> str | None:
    if host != HOST:
        return None
    base = "$COPILOT_HOME" if os.environ.get("COPILOT_HOME") else "~/.copilot"
    servers = {"mcpServers": {contract["server_id"]: _server_entry(contract)}}
    return (f"// {base}/mcp-config.json\n{json.dumps(servers, indent=2)}\n"
            f"// {base}/hooks/{HOOKS_FILE}\n{json.dumps(hook_file(contract), indent=2)}\n")


#: ``install --copilot-instructions`` (docs/hosts.md, GitHub Copilot CLI).
INSTRUCTIONS_OPTION = InstallOption(
    host=HOST, flag="--copilot-instructions",
    help="GitHub Copilot CLI only: also write a custom-instructions entry asking the "
         "agent to search memory before work; uninstall removes it",
    misuse="--copilot-instructions is for GitHub Copilot CLI: use it with --host copilot "
           "(or --host all with copilot on PATH)",
)


@hookimpl
def host_install_options() -> list[InstallOption]:
    return [INSTRUCTIONS_OPTION]


@hookimpl
def host_adjust_plan(host: str, plan: HostConfigPlan, options: dict[str, Any], home: Path,
                     uninstall: bool) -> AdjustedPlan | None:
    if host != HOST or uninstall or not options.get(INSTRUCTIONS_OPTION.flag):
        return None  # uninstall's own plan already removes the instructions file
    return AdjustedPlan(with_instructions(plan, home))
