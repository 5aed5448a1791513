"""Hermes Agent 0.19 host adapter (docs/hosts.md section 4; design in docs/hosts-hermes.md).

Payload (one envelope for every event): ``{"hook_event_name", "tool_name",
"tool_input", "session_id", "cwd", "extra": {...}}``; ``extra.user_message`` is the
prompt (``pre_llm_call``, ``post_llm_call``), ``extra.assistant_response`` the reply
and ``extra.conversation_history`` the OpenAI-style history (``post_llm_call``).
There is no transcript path: the exchange is read from the payload.

Output: ``{"context": "…"}`` (Hermes appends it to that turn's user message for the
API call only). Hermes logs non-zero exits and ignores everything but ``context``, so
a stop prints nothing, also on failure.

Install, all under ``$HERMES_HOME`` (default ``~/.hermes``):

- ``config.yaml``: ``mcp_servers.bli-memory``, our ``pre_llm_call`` and
  ``post_llm_call`` shell hooks, and ``memory.provider: bli-memory`` when no other
  provider is selected. Edited with ruamel.yaml in round-trip mode, so the person's
  comments, key order, quoting and indentation survive.
- ``shell-hooks-allowlist.json``: an approval for each of our exact (event, command)
  pairs; Hermes skips unapproved shell hooks when it has no TTY.
- ``plugins/bli-memory/``: the memory provider (:mod:`bli_memory.adapters.hermes_provider`),
  which brings session-start context (Hermes discards ``on_session_start`` hook
  output, so that event gets no shell hook).

Hermes needs its ``[mcp]`` extra for MCP at all; status says so when the ``mcp``
package is missing from Hermes' environment.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

from bli_memory.adapters.hermes_config import (
    HOST,
    PROVIDER,
    allowlist_plan,
    dump,
    hermes_home,
    hook_commands,
    plain,
    plan_yaml,
    plugin_files,
    provider_note,
    server_entry,
    yaml_for,
)
from bli_memory.core.errors import HookPayloadError, HostError
from bli_memory.core.hooks.blocks import strip_injected
from bli_memory.core.hooks.payloads import payload_str as _str
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.models import Exchange, HookInput, HookResult, HostConventions, RenderedOutput

__all__ = ["MCP_EXTRA_NOTE", "hermes_bin", "hermes_has_mcp", "hook_commands"]

EVENTS = {"session-start": "on_session_start", "prompt": "pre_llm_call", "stop": "post_llm_call"}
PLUGIN_FILES = ("__init__.py", "plugin.yaml", "bli-memory.json")
ALLOWLIST = "shell-hooks-allowlist.json"



def _extra(payload: dict[str, Any]) -> dict[str, Any]:
    extra = payload.get("extra")
    if extra is None:
        return {}
    if not isinstance(extra, dict):
        raise HookPayloadError("payload field extra is not an object", reason="stdin_malformed")
    return extra


def hermes_bin() -> str | None:
    """The ``hermes`` executable: ``$BLI_MEMORY_HERMES_BIN``, else ``hermes`` on PATH."""
    override = os.environ.get("BLI_MEMORY_HERMES_BIN")
    if override:
        return override if os.access(override, os.X_OK) else None
    return shutil.which("hermes")


def _not_found() -> str:
    """Why Hermes was not found, and how to point at it."""
    override = os.environ.get("BLI_MEMORY_HERMES_BIN")
    if override:
        return f"BLI_MEMORY_HERMES_BIN={override} is not an executable file"
    return ("Hermes Agent not found on PATH (installed in its own virtualenv? set "
            "BLI_MEMORY_HERMES_BIN to its hermes)")


@hookimpl
def host_conventions() -> HostConventions:
    # Hermes Agent sets ``HERMES_SESSION_ID`` for the commands it runs (docs/hosts.md).
    return HostConventions(host=HOST, agent="hermes", env_markers=("HERMES_SESSION_ID",),
                           client_names=("hermes",))


@hookimpl
def host_info() -> dict[str, Any]:
    return {"name": HOST, "display_name": "Hermes Agent", "events": dict(EVENTS),
            "present": hermes_bin() is not None}


@hookimpl
def host_parse_payload(host: str, event: str, payload: dict[str, Any]) -> HookInput | None:
    if host != HOST:
        return None
    extra = _extra(payload)
    prompt = _str(extra, "user_message")
    return HookInput(
        host=HOST,
        event=event,  # type: ignore[arg-type]
        session_id=_str(payload, "session_id") or None,
        cwd=_str(payload, "cwd") or None,
        prompt=None if prompt is None else strip_injected(prompt).strip(),
        last_assistant_message=_str(extra, "assistant_response"),
        raw=payload,
    )


@hookimpl
def host_render(host: str, result: HookResult) -> RenderedOutput | None:
    if host != HOST:
        return None
    if result.event == "stop" or result.outcome != "ok" or not result.block:
        return RenderedOutput()
    return RenderedOutput(stdout=json.dumps({"context": result.block}, ensure_ascii=False))


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")  # the person's text; ``api_content`` holds our context
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


@hookimpl
def host_read_exchange(host: str, hook_input: HookInput, max_bytes: int) -> Exchange | None:
    if host != HOST:
        return None
    extra = hook_input.raw.get("extra") if isinstance(hook_input.raw.get("extra"), dict) else {}
    user = hook_input.prompt or ""
    reply = hook_input.last_assistant_message or ""
    history = extra.get("conversation_history")
    if (not user or not reply) and isinstance(history, list):
        answers: list[str] = []
        for message in reversed(history):
            if not isinstance(message, dict):
                continue
            if message.get("role") == "assistant":
                answers.append(_content(message))
            elif message.get("role") == "user":
                user = user or strip_injected(_content(message)).strip()
                break
        reply = reply or "\n".join(a for a in reversed(answers) if a)
    if not user and not reply:
        raise HostError("the payload holds no exchange", reason="no_transcript")
    return Exchange(user=user, assistant=reply)


# --- Hermes' environment --------------------------------------------------------------


def _interpreter(binary: str) -> str | None:
    try:
        with open(binary, "rb") as fh:
            first = fh.readline(512).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    parts = first[2:].split()
    if not parts:
        return None
    if os.path.basename(parts[0]) == "env" and len(parts) > 1:
        return shutil.which(parts[1])
    return parts[0]


def hermes_has_mcp(binary: str | None = None) -> bool | None:
    """Whether the ``mcp`` package is importable in Hermes' own Python environment.

    Reads the interpreter from the ``hermes`` script's ``#!`` line and asks it.

    Returns:
        True or False, or None when Hermes or its interpreter cannot be found.
    """
    import subprocess

    binary = binary or hermes_bin()
    python = _interpreter(binary) if binary else None
    if not python:
        return None
    probe = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('mcp') else 3)"
    try:
        proc = subprocess.run([python, "-c", probe], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 3: False}.get(proc.returncode)


MCP_EXTRA_NOTE = ("Hermes is installed without its [mcp] extra, so it cannot start any MCP server: "
                  "reinstall it with `pip install \"hermes-agent[mcp]\"` in Hermes' environment.")


# --- install / uninstall / status ------------------------------------------------------


@hookimpl
def host_plan_config(host: str, contract: dict[str, Any], home: Any, uninstall: bool) -> Any:
    if host != HOST:
        return None
    from bli_memory.core.models import HostConfigPlan
    from bli_memory.installers.files import read_text

    base = hermes_home(home)
    files: dict[str, tuple[str | None, str | None]] = {}

    config_path = base / "config.yaml"
    old = read_text(config_path)
    yaml, doc = yaml_for(old, config_path)
    before = plain(doc)
    notes = plan_yaml(doc, config_path, contract, uninstall)
    if plain(doc) != before:
        files[str(config_path)] = (old, dump(yaml, doc))

    allow_path = base / ALLOWLIST
    old_a, new_a = allowlist_plan(allow_path, contract, uninstall)
    if new_a != old_a:
        files[str(allow_path)] = (old_a, new_a)

    plugin_dir = base / "plugins" / PROVIDER
    wanted = {} if uninstall else plugin_files(contract)
    for name in PLUGIN_FILES:
        path = plugin_dir / name
        current = read_text(path)
        target = wanted.get(name)
        if current != target:
            files[str(path)] = (current, target)

    if not uninstall and hermes_bin() is not None and hermes_has_mcp() is False:
        notes.append(MCP_EXTRA_NOTE)
    owned = tuple(str(plugin_dir / name) for name in PLUGIN_FILES if str(plugin_dir / name) in files)
    return HostConfigPlan(host=HOST, files=files, notes=tuple(notes), owned=owned)


@hookimpl
def host_status(host: str, contract: dict[str, Any], home: Any) -> Any:
    if host != HOST:
        return None
    from bli_memory.core.models import HostStatus
    from bli_memory.installers.files import read_json_object, read_text
    from bli_memory.installers.jsonhooks import is_ours

    base = hermes_home(home)
    config_path = base / "config.yaml"
    _yaml, doc = yaml_for(read_text(config_path), config_path)
    config = plain(doc)
    servers = config.get("mcp_servers") if isinstance(config.get("mcp_servers"), dict) else {}
    hooks = config.get("hooks") if isinstance(config.get("hooks"), dict) else {}
    entry = servers.get(contract["server_id"])
    ours = {event: [e for e in entries if isinstance(e, dict) and is_ours(e.get("command"))]
            for event, entries in hooks.items() if isinstance(entries, list)}
    ours = {k: v for k, v in ours.items() if v}
    if entry is None and not ours:
        present = host_info()["present"]
        return HostStatus(host=HOST, state="absent" if present else "not_found",
                          details=() if present else (_not_found(),))
    details: list[str] = []
    if entry != server_entry(contract):
        details.append("MCP server entry is missing or differs from this installation"
                       if entry is not None else "MCP server entry is missing")
    allow_path = base / ALLOWLIST
    approvals = read_json_object(allow_path, read_text(allow_path)).get("approvals") or []
    approved = {(a.get("event"), a.get("command")) for a in approvals if isinstance(a, dict)}
    for event, command, timeout in hook_commands(contract):
        if ours.get(event) != [{"command": command, "timeout": timeout}]:
            details.append(f"hook {event} is missing or differs (path or timeout)")
        elif (event, command) not in approved:
            details.append(f"hook {event} is not in {allow_path}: Hermes skips it without a TTY")
    plugin_dir = base / "plugins" / PROVIDER
    for name, text in plugin_files(contract).items():
        if read_text(plugin_dir / name) != text:
            details.append(f"memory provider file {plugin_dir / name} is missing or differs")
    state = "outdated" if details else "installed"
    memory = config.get("memory") if isinstance(config.get("memory"), dict) else {}
    selected = memory.get("provider")
    if selected and selected != PROVIDER:
        details.append(provider_note(selected))
    elif not selected:
        details.append("memory.provider is not set, so BLI Memory's session-start context is off; "
                       "install sets it")
    if hermes_bin() is not None and hermes_has_mcp() is False:
        details.append(MCP_EXTRA_NOTE)
    return HostStatus(host=HOST, state=state, details=tuple(details),
                      server=entry if isinstance(entry, dict) else None)


@hookimpl
def host_print_config(host: str, contract: dict[str, Any]) -> str | None:
    if host != HOST:
        return None
    lines = [f"# {hermes_home('~')}/config.yaml", "mcp_servers:", f"  {contract['server_id']}:"]
    server = server_entry(contract)
    lines.append(f"    command: {json.dumps(server['command'])}")
    lines.append(f"    args: {json.dumps(server['args'])}")
    if server.get("env"):
        lines.append(f"    env: {json.dumps(server['env'])}")
    lines += ["    enabled: true", "hooks:"]
    for event, command, timeout in hook_commands(contract):
        lines += [f"  {event}:", f"    - command: {json.dumps(command)}", f"      timeout: {timeout}"]
    lines += ["memory:", f"  provider: {PROVIDER}",
              f"# plus approvals for these hooks in {hermes_home('~')}/{ALLOWLIST} and the memory "
              f"provider in {hermes_home('~')}/plugins/{PROVIDER}/ (both written by install)"]
    return "\n".join(lines) + "\n"
