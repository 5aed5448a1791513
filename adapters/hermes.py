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

from bli_memory.core.errors import HookPayloadError, HostError
from bli_memory.core.hooks.blocks import strip_injected
from bli_memory.core.hooks.payloads import payload_str as _str
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.models import Exchange, HookInput, HookResult, HostConventions, RenderedOutput
from bli_memory.installers.files import conflict as _conflict

__all__ = ["MCP_EXTRA_NOTE", "hermes_bin", "hermes_has_mcp", "hook_commands"]

HOST = "hermes"
EVENTS = {"session-start": "on_session_start", "prompt": "pre_llm_call", "stop": "post_llm_call"}
#: Contract events that get a Hermes shell hook (session start goes through the provider).
SHELL_HOOKS = {"UserPromptSubmit": "pre_llm_call", "Stop": "post_llm_call"}
PROVIDER = "bli-memory"
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


def _hermes_home(home: Any) -> Any:
    from pathlib import Path

    override = os.environ.get("HERMES_HOME")
    return Path(override) if override else Path(home) / ".hermes"


def hook_commands(contract: dict[str, Any]) -> list[tuple[str, str, int]]:
    """``(Hermes event, command, timeout s)`` for our shell hooks, with ``--host hermes``."""
    from bli_memory.installers.contract import HOOK_SUBCOMMANDS, hook_command

    binary = contract["mcp_server"]["command"]
    return [(SHELL_HOOKS[h["event"]], hook_command(binary, HOOK_SUBCOMMANDS[h["event"]][0], "--host", HOST),
             h["timeout_seconds"]) for h in contract["hooks"] if h["event"] in SHELL_HOOKS]


def _server_entry(contract: dict[str, Any]) -> dict[str, Any]:
    server = contract["mcp_server"]
    entry: dict[str, Any] = {"command": server["command"], "args": list(server["args"])}
    if server["env"]:
        entry["env"] = dict(server["env"])
    entry["enabled"] = True
    return entry


_INDENTS = ((2, 2, 0), (2, 4, 2), (4, 4, 0), (4, 4, 2), (4, 6, 4), (3, 3, 0))


def _yaml_for(text: str | None, path: Any) -> tuple[Any, Any]:
    """A round-trip YAML handler matching ``text``'s indentation, and the loaded document.

    Raises:
        InstallConflict: not YAML, or not a mapping at the top.
    """
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    def handler(indent: tuple[int, int, int]) -> Any:
        yaml = YAML()
        yaml.preserve_quotes = True
        yaml.width = 4096
        yaml.indent(mapping=indent[0], sequence=indent[1], offset=indent[2])
        return yaml

    if not text or not text.strip():
        from ruamel.yaml.comments import CommentedMap

        return handler(_INDENTS[0]), CommentedMap()
    for indent in _INDENTS:
        yaml = handler(indent)
        try:
            doc = yaml.load(text)
        except YAMLError as exc:
            raise _conflict(f"{path} is not valid YAML ({exc}); fix or move it, nothing was written"
                            ) from exc
        if doc is None:
            from ruamel.yaml.comments import CommentedMap

            doc = CommentedMap()
        if not isinstance(doc, dict):
            raise _conflict(f"{path} must hold a mapping, found {type(doc).__name__}; "
                            "nothing was written")
        out = io.StringIO()
        yaml.dump(doc, out)
        if out.getvalue() == text:
            return yaml, doc
    yaml = handler(_INDENTS[0])
    return yaml, yaml.load(text)


def _dump(yaml: Any, doc: Any) -> str:
    import io

    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


def _plain(value: Any) -> Any:
    """ruamel's commented containers as plain dicts and lists, for comparisons."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _mapping_at(doc: Any, key: str, path: Any) -> Any:
    value = doc.get(key)
    if value is not None and not isinstance(value, dict):
        raise _conflict(f"{path}: {key} is not a mapping; nothing was written")
    return value


def _plan_yaml(doc: Any, path: Any, contract: dict[str, Any], uninstall: bool) -> list[str]:
    """Edit the loaded config in place; returns notes for the person."""
    from ruamel.yaml.comments import CommentedMap

    from bli_memory.installers.jsonhooks import is_ours

    notes: list[str] = []
    sid = contract["server_id"]
    servers = _mapping_at(doc, "mcp_servers", path)
    if uninstall:
        if servers is not None and sid in servers:
            del servers[sid]
            if not servers:
                del doc["mcp_servers"]
    elif servers is None or _plain(servers.get(sid)) != _server_entry(contract):
        if servers is None:
            servers = doc["mcp_servers"] = CommentedMap()
        servers[sid] = CommentedMap(_server_entry(contract))

    hooks = _mapping_at(doc, "hooks", path)
    wanted = {} if uninstall else {e: (c, t) for e, c, t in hook_commands(contract)}
    for event in list(hooks or {}):
        entries = hooks[event]
        if entries is None and event in wanted:  # ``pre_llm_call:`` left empty
            entries = hooks[event] = []
        if not isinstance(entries, list):
            if event in wanted:
                raise _conflict(f"{path}: hooks.{event} is not a list; nothing was written")
            continue
        current = [e for e in entries if isinstance(e, dict) and is_ours(e.get("command"))]
        want = wanted.get(event)
        if want and [_plain(e) for e in current] == [{"command": want[0], "timeout": want[1]}]:
            continue
        for entry in current:
            entries.remove(entry)
        if not entries and current:
            del hooks[event]
    for event, (command, timeout) in wanted.items():
        if hooks is None:
            hooks = doc["hooks"] = CommentedMap()
        entries = hooks.setdefault(event, [])
        if not any(isinstance(e, dict) and is_ours(e.get("command")) for e in entries):
            entries.append(CommentedMap({"command": command, "timeout": timeout}))
    if hooks is not None and not hooks and "hooks" in doc:
        del doc["hooks"]

    memory = _mapping_at(doc, "memory", path)
    selected = memory.get("provider") if memory is not None else None
    if uninstall:
        if selected == PROVIDER:
            del memory["provider"]
            if not memory:
                del doc["memory"]
    elif not selected:
        if memory is None:
            memory = doc["memory"] = CommentedMap()
        memory["provider"] = PROVIDER
    elif selected != PROVIDER:
        notes.append(_provider_note(selected))
    return notes


def _provider_note(selected: Any) -> str:
    return (f"Hermes already uses the memory provider {selected!r}, so BLI Memory's session-start "
            "context is off there (recall and capture still run as shell hooks).")


def _allowlist_plan(path: Any, contract: dict[str, Any], uninstall: bool) -> tuple[str | None, str | None]:
    from datetime import UTC, datetime

    from bli_memory.installers.files import dump_json_like, read_json_object, read_text
    from bli_memory.installers.jsonhooks import is_ours

    old = read_text(path)
    data = read_json_object(path, old)
    approvals = data.get("approvals", [])
    if not isinstance(approvals, list):
        raise _conflict(f"{path}: approvals is not a list; nothing was written")
    wanted = [] if uninstall else [(e, c) for e, c, _t in hook_commands(contract)]
    kept = [a for a in approvals
            if not (isinstance(a, dict) and is_ours(a.get("command"))
                    and (a.get("event"), a.get("command")) not in wanted)]
    have = {(a.get("event"), a.get("command")) for a in kept if isinstance(a, dict)}

    def iso(ts: float) -> str:
        return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")

    binary = contract["mcp_server"]["command"]
    try:
        mtime: str | None = iso(os.path.getmtime(binary))
    except OSError:
        mtime = None
    for event, command in wanted:
        if (event, command) not in have:
            kept.append({"event": event, "command": command,
                         "approved_at": iso(datetime.now(tz=UTC).timestamp()),
                         "script_mtime_at_approval": mtime})
    if kept == approvals:
        return old, old
    new = dict(data)
    new["approvals"] = kept
    return old, dump_json_like(new, old)


def _plugin_files(contract: dict[str, Any]) -> dict[str, str]:
    from importlib import resources

    source = resources.files("bli_memory.adapters").joinpath("hermes_provider.py").read_text("utf-8")
    manifest = (f"name: {PROVIDER}\nversion: \"1\"\n"
                "description: \"BLI Memory: shared, durable memory across coding agents\"\n")
    settings = {"command": contract["mcp_server"]["command"], "shell_hooks": sorted(SHELL_HOOKS.values())}
    return {"__init__.py": source, "plugin.yaml": manifest,
            "bli-memory.json": json.dumps(settings, indent=2) + "\n"}


@hookimpl
def host_plan_config(host: str, contract: dict[str, Any], home: Any, uninstall: bool) -> Any:
    if host != HOST:
        return None
    from bli_memory.core.models import HostConfigPlan
    from bli_memory.installers.files import read_text

    base = _hermes_home(home)
    files: dict[str, tuple[str | None, str | None]] = {}

    config_path = base / "config.yaml"
    old = read_text(config_path)
    yaml, doc = _yaml_for(old, config_path)
    before = _plain(doc)
    notes = _plan_yaml(doc, config_path, contract, uninstall)
    if _plain(doc) != before:
        files[str(config_path)] = (old, _dump(yaml, doc))

    allow_path = base / ALLOWLIST
    old_a, new_a = _allowlist_plan(allow_path, contract, uninstall)
    if new_a != old_a:
        files[str(allow_path)] = (old_a, new_a)

    plugin_dir = base / "plugins" / PROVIDER
    wanted = {} if uninstall else _plugin_files(contract)
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

    base = _hermes_home(home)
    config_path = base / "config.yaml"
    _yaml, doc = _yaml_for(read_text(config_path), config_path)
    config = _plain(doc)
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
    if entry != _server_entry(contract):
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
    for name, text in _plugin_files(contract).items():
        if read_text(plugin_dir / name) != text:
            details.append(f"memory provider file {plugin_dir / name} is missing or differs")
    state = "outdated" if details else "installed"
    memory = config.get("memory") if isinstance(config.get("memory"), dict) else {}
    selected = memory.get("provider")
    if selected and selected != PROVIDER:
        details.append(_provider_note(selected))
    elif not selected:
        details.append("memory.provider is not set, so BLI Memory's session-start context is off; "
                       "install sets it")
    if hermes_bin() is not None and hermes_has_mcp() is False:
        details.append(MCP_EXTRA_NOTE)
    return HostStatus(host=HOST, state=state, details=tuple(details))


@hookimpl
def host_print_config(host: str, contract: dict[str, Any]) -> str | None:
    if host != HOST:
        return None
    lines = [f"# {_hermes_home('~')}/config.yaml", "mcp_servers:", f"  {contract['server_id']}:"]
    server = _server_entry(contract)
    lines.append(f"    command: {json.dumps(server['command'])}")
    lines.append(f"    args: {json.dumps(server['args'])}")
    if server.get("env"):
        lines.append(f"    env: {json.dumps(server['env'])}")
    lines += ["    enabled: true", "hooks:"]
    for event, command, timeout in hook_commands(contract):
        lines += [f"  {event}:", f"    - command: {json.dumps(command)}", f"      timeout: {timeout}"]
    lines += ["memory:", f"  provider: {PROVIDER}",
              f"# plus approvals for these hooks in {_hermes_home('~')}/{ALLOWLIST} and the memory "
              f"provider in {_hermes_home('~')}/plugins/{PROVIDER}/ (both written by install)"]
    return "\n".join(lines) + "\n"
