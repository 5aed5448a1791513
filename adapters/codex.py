"""Codex CLI 0.171 host adapter (docs/hosts.md section 2).

Payloads (stdin JSON): Claude's fields (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``source``, ``prompt``, ``stop_hook_active``,
``last_assistant_message``) plus ``turn_id``, ``model`` and ``permission_mode``, kept
in :attr:`HookInput.raw`. ``transcript_path`` may be ``null``.

Output: context as JSON ``hookSpecificOutput.additionalContext`` (Codex turns it into
a ``developer`` message). Codex spills context over ``additionalContextLimit``
(default 2,500 tokens, counted by Codex) to a file instead of inlining it, so the
block is cut to :data:`CONTEXT_MAX_BYTES` of UTF-8 on whole lines first. A failed
stop is a one-line ``systemMessage``.

Transcript ("rollout"): JSONL lines ``{"timestamp","ordinal","type","payload"}``; the
last exchange is the last ``response_item`` user message whose
``content_item_kinds`` is ``["user.text"]`` (not ``<environment_context>``, not a
Stop hook's ``<hook_prompt>``), plus the ``output_text`` of the assistant messages
after it. At Stop the assistant item is already written.

Install: ``[mcp_servers.bli-memory]`` in ``config.toml`` (edited with tomlkit, so the
person's comments, ordering and other tables survive), hooks in ``hooks.json`` (the
Claude shape, timeouts in seconds) and, because Codex silently skips a hook it was
not told to trust, one ``[hooks.state."<hooks.json>:<event>:<group>:<handler>"]``
table per handler with its ``trusted_hash`` (:func:`trusted_hash`). Both files live
in ``$CODEX_HOME`` when set, else ``~/.codex``.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

from bli_memory.core.errors import HostError
from bli_memory.core.hooks.payloads import additional_context, failed_stop_message
from bli_memory.core.hooks.payloads import payload_str as _str
from bli_memory.core.hooks.transcripts import tail_json_lines
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.models import Exchange, HookInput, HookResult, HostConventions, RenderedOutput
from bli_memory.installers.files import conflict as _conflict

__all__ = ["CONTEXT_MAX_BYTES", "bound_block", "hook_commands", "hook_identity", "trust_key", "trusted_hash"]

HOST = "codex"
EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "stop": "Stop"}
#: Codex's snake-case event names, used in trust keys and hashes.
SNAKE_EVENTS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit", "Stop": "stop"}
#: Events whose matcher Codex ignores, and leaves out of the trust hash.
_NO_MATCHER = {"UserPromptSubmit", "Stop"}
#: Codex's default handler timeout in seconds (app-server reports ``timeoutSec: 600``).
DEFAULT_TIMEOUT_SEC = 600
#: Most UTF-8 bytes of injected context. Codex spills additionalContext over 2,500
#: tokens to a file (docs/hosts.md section 2); at Codex's approximation of 4 bytes a
#: token, 8,000 bytes stay near 2,000 tokens, under the cap with room to spare.
CONTEXT_MAX_BYTES = 8000



@hookimpl
def host_conventions() -> HostConventions:
    # Codex CLI sets ``CODEX_*`` for shell commands; the shared experience log has lived in
    # ``~/.codex/AGENT-EXPERIENCE.md`` since the BLI Memory spec fixed that path (docs/hosts.md).
    return HostConventions(host=HOST, agent="codex",
                           env_markers=("CODEX_THREAD_ID", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED",
                                        "CODEX_MANAGED_BY_NPM"),
                           client_names=("codex",), experience_dir=".codex")


@hookimpl
def host_info() -> dict[str, Any]:
    return {"name": HOST, "display_name": "Codex CLI", "events": dict(EVENTS),
            "present": shutil.which("codex") is not None}


@hookimpl
def host_parse_payload(host: str, event: str, payload: dict[str, Any]) -> HookInput | None:
    if host != HOST:
        return None
    for key in ("turn_id", "model", "permission_mode"):
        _str(payload, key)  # validated; kept in raw
    return HookInput(
        host=HOST,
        event=event,  # type: ignore[arg-type]
        session_id=_str(payload, "session_id"),
        cwd=_str(payload, "cwd"),
        prompt=_str(payload, "prompt"),
        transcript_path=_str(payload, "transcript_path"),
        reentrant=payload.get("stop_hook_active", False) is True,
        last_assistant_message=_str(payload, "last_assistant_message"),
        source=_str(payload, "source"),
        raw=payload,
    )


def bound_block(block: str, max_bytes: int = CONTEXT_MAX_BYTES) -> str | None:
    """A context block cut to ``max_bytes`` of UTF-8 by dropping whole inner lines.

    The first line (opening tag) and the last (closing tag) are kept; inner lines are
    kept from the top while they fit. Returns None when not even one inner line fits.
    """
    if len(block.encode("utf-8")) <= max_bytes:
        return block
    lines = block.split("\n")
    if len(lines) < 3:
        return None
    head, inner, tail = lines[0], lines[1:-1], lines[-1]
    used = len(head.encode("utf-8")) + len(tail.encode("utf-8")) + 2
    kept: list[str] = []
    for line in inner:
        size = len(line.encode("utf-8")) + 1
        if used + size > max_bytes:
            break
        kept.append(line)
        used += size
    # A block of one header line alone says nothing: keep it only with a memory line.
    if len(kept) < 2 and len(inner) >= 2:
        return None
    return "\n".join([head, *kept, tail]) if kept else None


@hookimpl
def host_render(host: str, result: HookResult) -> RenderedOutput | None:
    if host != HOST:
        return None
    if result.outcome == "failed" and result.event == "stop":
        return RenderedOutput(stdout=failed_stop_message(result.reason))
    if result.outcome != "ok" or not result.block or result.event == "stop":
        return RenderedOutput()
    block = bound_block(result.block)
    if block is None:
        return RenderedOutput()
    return RenderedOutput(stdout=additional_context(EVENTS[result.event], block))


def _texts(payload: dict[str, Any], kind: str) -> str:
    content = payload.get("content")
    if not isinstance(content, list):
        return ""
    return "\n".join(
        c["text"] for c in content
        if isinstance(c, dict) and c.get("type") == kind and isinstance(c.get("text"), str)
    )


def _is_typed_prompt(payload: dict[str, Any]) -> bool:
    meta = payload.get("internal_chat_message_metadata_passthrough")
    if isinstance(meta, dict) and isinstance(meta.get("content_item_kinds"), list):
        return meta["content_item_kinds"] == ["user.text"]
    text = _texts(payload, "input_text").lstrip()  # no metadata: drop the harness's own items
    harness = ("<environment_context>", "<hook_prompt", "<user_instructions>")
    return bool(text) and not text.startswith(harness)


@hookimpl
def host_read_exchange(host: str, hook_input: HookInput, max_bytes: int) -> Exchange | None:
    if host != HOST:
        return None
    reply_in_payload = hook_input.last_assistant_message or ""
    if not hook_input.transcript_path:
        if reply_in_payload:
            return Exchange(user="", assistant=reply_in_payload)
        raise HostError("no transcript_path in the payload", reason="no_transcript")
    try:
        lines = tail_json_lines(hook_input.transcript_path, max_bytes)
    except HostError:
        if reply_in_payload:
            return Exchange(user="", assistant=reply_in_payload)
        raise
    assistant: list[str] = []
    user = ""
    for line in reversed(lines):
        payload = line.get("payload")
        if line.get("type") != "response_item" or not isinstance(payload, dict):
            continue
        if payload.get("type") != "message":
            continue
        if payload.get("role") == "assistant":
            text = _texts(payload, "output_text")
            if text:
                assistant.append(text)
        elif payload.get("role") == "user" and _is_typed_prompt(payload):
            user = _texts(payload, "input_text")
            break
    reply = "\n".join(reversed(assistant)) or reply_in_payload
    if not user and not reply:
        raise HostError("the transcript tail holds no exchange", reason="no_transcript")
    return Exchange(user=user, assistant=reply)


# --- trust -----------------------------------------------------------------------------


def hook_identity(event: str, matcher: str | None, handler: dict[str, Any]) -> dict[str, Any]:
    """What Codex hashes to decide a handler is the one the person trusted.

    Args:
        event: Codex's event name (``SessionStart``, ``UserPromptSubmit``, ``Stop``, ...).
        matcher: The group's matcher, or None.
        handler: The handler object as written in hooks.json.

    Returns:
        ``{"event_name": <snake event>, "matcher"?: str, "hooks": [{"type", "command",
        "timeout", "async", "statusMessage"?}]}``: the matcher is left out when absent
        and for UserPromptSubmit/Stop, ``timeout`` defaults to 600 and ``async`` to
        false (docs/hosts.md section 2, checked against ``codex app-server``).
    """
    snake = SNAKE_EVENTS.get(event) or "".join(
        "_" + c.lower() if c.isupper() else c for c in event).lstrip("_")
    entry: dict[str, Any] = {
        "type": handler.get("type", "command"),
        "command": handler.get("command"),
        "timeout": handler.get("timeout", DEFAULT_TIMEOUT_SEC),
        "async": handler.get("async", False),
    }
    if handler.get("statusMessage") is not None:
        entry["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": snake, "hooks": [entry]}
    if matcher is not None and event not in _NO_MATCHER:
        identity["matcher"] = matcher
    return identity


def trusted_hash(event: str, matcher: str | None, handler: dict[str, Any]) -> str:
    """``"sha256:" + hex(sha256(canonical JSON of the identity))`` (docs/hosts.md section 2).

    Canonical JSON: sorted keys, no spaces, non-ASCII characters written as themselves
    (UTF-8), as Codex's own serialiser writes them.
    """
    import hashlib

    text = json.dumps(hook_identity(event, matcher, handler), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def trust_key(hooks_path: str, event: str, group: int, handler: int) -> str:
    """``<absolute hooks.json path>:<snake event>:<group index>:<handler index>``."""
    snake = SNAKE_EVENTS.get(event, event)
    return f"{hooks_path}:{snake}:{group}:{handler}"


# --- install / uninstall / status ------------------------------------------------------


def _codex_home(home: Any) -> Any:
    from pathlib import Path

    override = os.environ.get("CODEX_HOME")
    return Path(override) if override else Path(home) / ".codex"


def _paths(home: Any) -> tuple[Any, Any]:
    base = _codex_home(home)
    return base / "config.toml", base / "hooks.json"


def hook_commands(contract: dict[str, Any]) -> list[tuple[str, str, int]]:
    """``(Codex event, command, timeout s)`` for each contract hook, with ``--host codex``."""
    from bli_memory.installers.contract import HOOK_SUBCOMMANDS, hook_command

    binary = contract["mcp_server"]["command"]
    return [(h["event"], hook_command(binary, HOOK_SUBCOMMANDS[h["event"]][0], "--host", HOST),
             h["timeout_seconds"]) for h in contract["hooks"]]


def _wanted_hooks(contract: dict[str, Any]) -> list[tuple[str, str | None, dict[str, Any]]]:
    # SessionStart without a matcher runs for every source (startup, resume, clear, ...).
    return [(event, None, {"type": "command", "command": command, "timeout": timeout})
            for event, command, timeout in hook_commands(contract)]


def _server_entry(contract: dict[str, Any]) -> dict[str, Any]:
    server = contract["mcp_server"]
    entry: dict[str, Any] = {"command": server["command"], "args": list(server["args"])}
    if server["env"]:
        entry["env"] = dict(server["env"])
    return entry


def _load_toml(path: Any, text: str | None) -> Any:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        return tomlkit.parse(text or "")
    except TOMLKitError as exc:
        raise _conflict(f"{path} is not valid TOML ({exc}); fix or move it, nothing was written") from exc


def _table_at(doc: Any, key: str, where: Any) -> Any:
    value = doc.get(key)
    if value is not None and not isinstance(value, dict):
        raise _conflict(f"{where}: {key} is not a table; nothing was written")
    return value


def _plain(value: Any) -> Any:
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


def _state_table(doc: Any, path: Any) -> Any:
    hooks = _table_at(doc, "hooks", path)
    if hooks is None:
        return None
    return _table_at(hooks, "state", path)


def _rekeyed_state(before: dict[str, Any], after: dict[str, Any], hooks_path: str
                   ) -> tuple[dict[str, str], set[str]]:
    """How the person's trust keys move, and our keys that go away, when hooks.json changes.

    Returns:
        ``(moves, ours_before)``: ``moves`` maps an old key of one of the person's
        handlers to its new key (their handlers keep their order; only indices shift);
        ``ours_before`` holds the keys of our handlers before the change.
    """
    from bli_memory.installers.jsonhooks import handler_positions, is_ours

    def split(hooks: dict[str, Any]) -> tuple[dict[str, list[str]], set[str]]:
        theirs: dict[str, list[str]] = {}
        ours: set[str] = set()
        for event, gi, hi, _matcher, handler in handler_positions(hooks, hooks_path):
            key = trust_key(hooks_path, event, gi, hi)
            if is_ours(handler.get("command")):
                ours.add(key)
            else:
                theirs.setdefault(event, []).append(key)
        return theirs, ours

    theirs_before, ours_before = split(before)
    theirs_after, _ = split(after)
    moves = {}
    for event, keys in theirs_before.items():
        for old, new in zip(keys, theirs_after.get(event, []), strict=False):
            if old != new:
                moves[old] = new
    return moves, ours_before


def _our_trust(hooks: dict[str, Any], hooks_path: str) -> dict[str, str]:
    """Trust key -> expected hash, for each of our handlers in ``hooks``."""
    from bli_memory.installers.jsonhooks import handler_positions, is_ours

    return {trust_key(hooks_path, event, gi, hi): trusted_hash(event, matcher, handler)
            for event, gi, hi, matcher, handler in handler_positions(hooks, hooks_path)
            if is_ours(handler.get("command"))}


def _set_in_place(table: Any, values: dict[str, Any]) -> None:
    """Replace a table's keys where it stands (its header and position are kept)."""
    for key in list(table):
        if key not in values:
            del table[key]
    for key, value in values.items():
        if _plain(table.get(key)) != value:
            table[key] = value


def _render_tables(tables: list[tuple[list[str], dict[str, Any]]]) -> str:
    """``[a.b."c"]`` tables for ``(path, values)`` pairs, as TOML text."""
    import tomlkit

    doc = tomlkit.document()
    for path, values in tables:
        container: Any = doc
        for part in path[:-1]:
            if part not in container:
                container[part] = tomlkit.table(is_super_table=True)
            container = container[part]
        table = tomlkit.table()
        for key, value in values.items():
            table[key] = value
        table.add(tomlkit.nl())
        container[path[-1]] = table
    return tomlkit.dumps(doc)


def _plan_config_toml(old: str | None, config_path: Any, contract: dict[str, Any], uninstall: bool,
                      moves: dict[str, str], drop: set[str], trust: dict[str, str]) -> str:
    """The new text of ``config.toml``.

    Our tables that exist are edited or deleted where they stand; new ones are appended
    at the end of the file, so the person's tables, comments and ordering are left as
    they were and uninstall gives back the original text. When appending is not valid
    TOML (``mcp_servers`` or ``hooks`` written as inline tables), they are inserted
    into those tables instead.
    """
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    doc = _load_toml(config_path, old)
    appends: list[tuple[list[str], dict[str, Any]]] = []
    servers = _table_at(doc, "mcp_servers", config_path)
    sid = contract["server_id"]
    if uninstall:
        if servers is not None and sid in servers:
            del servers[sid]
            if not servers:
                del doc["mcp_servers"]
    else:
        want = _server_entry(contract)
        if servers is not None and isinstance(servers.get(sid), dict):
            _set_in_place(servers[sid], want)
        else:
            appends.append((["mcp_servers", sid], want))

    hooks_table = _table_at(doc, "hooks", config_path)
    state = _state_table(doc, config_path)
    values: dict[str, dict[str, Any]] = {}
    if state is not None:
        values = {new: _plain(state[old]) for old, new in moves.items() if old in state}
        for key in [*moves, *(k for k in drop if k not in trust)]:
            if key in state:
                del state[key]
    values.update({key: {"enabled": True, "trusted_hash": digest} for key, digest in trust.items()})
    for key, record in values.items():
        if state is not None and isinstance(state.get(key), dict):
            _set_in_place(state[key], record)
        else:
            appends.append((["hooks", "state", key], record))
    if state is not None and not state and hooks_table is not None:
        del hooks_table["state"]
        if not hooks_table:
            del doc["hooks"]

    text = doc.as_string()
    if old is not None and old.endswith("\n") and text.strip():
        text = text.rstrip("\n") + "\n"  # no blank lines left where our tables were
    if not appends:
        return text
    extra = _render_tables(appends).rstrip("\n") + "\n"
    joined = (text.rstrip("\n") + "\n\n" if text.strip() else text) + extra
    try:
        tomlkit.parse(joined)
        return joined
    except TOMLKitError:
        pass
    for path, record in appends:  # inline tables: insert into them
        container: Any = doc
        for part in path[:-1]:
            if part not in container:
                container[part] = tomlkit.table(is_super_table=True)
            container = container[part]
        container[path[-1]] = record
    return doc.as_string()


@hookimpl
def host_plan_config(host: str, contract: dict[str, Any], home: Any, uninstall: bool) -> Any:
    if host != HOST:
        return None
    from bli_memory.core.models import HostConfigPlan
    from bli_memory.installers.files import dump_json_like, read_json_object, read_text
    from bli_memory.installers.jsonhooks import merge_hooks, remove_ours

    config_path, hooks_path = _paths(home)
    files: dict[str, tuple[str | None, str | None]] = {}
    where = str(hooks_path)

    old_h = read_text(hooks_path)
    data = read_json_object(hooks_path, old_h)
    hooks_before = data.get("hooks", {})
    if not isinstance(hooks_before, dict):
        raise _conflict(f"{hooks_path}: hooks is not an object; nothing was written")
    if uninstall:
        hooks = remove_ours(hooks_before, where)
    else:
        hooks = merge_hooks(hooks_before, _wanted_hooks(contract), where)
    moves, ours_before = _rekeyed_state(hooks_before, hooks, where)
    trust = {} if uninstall else _our_trust(hooks, where)
    if hooks != hooks_before:
        new_data = dict(data)
        if hooks or not hooks_before:
            new_data["hooks"] = hooks
        else:
            new_data.pop("hooks", None)
        files[str(hooks_path)] = (old_h, dump_json_like(new_data, old_h))

    old_c = read_text(config_path)
    new_c = _plan_config_toml(old_c, config_path, contract, uninstall, moves, ours_before, trust)
    if new_c != (old_c or ""):
        files[str(config_path)] = (old_c, new_c)
    return HostConfigPlan(host=HOST, files=files)


@hookimpl
def host_status(host: str, contract: dict[str, Any], home: Any) -> Any:
    if host != HOST:
        return None
    from bli_memory.core.models import HostStatus
    from bli_memory.installers.files import read_json_object, read_text
    from bli_memory.installers.jsonhooks import find_ours

    config_path, hooks_path = _paths(home)
    where = str(hooks_path)
    doc = _load_toml(config_path, read_text(config_path))
    data = read_json_object(hooks_path, read_text(hooks_path))
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    servers = doc.get("mcp_servers") if isinstance(doc.get("mcp_servers"), dict) else {}
    entry = _plain(servers.get(contract["server_id"]))
    ours = find_ours(hooks, where)
    if entry is None and not ours:
        present = host_info()["present"]
        return HostStatus(host=HOST, state="absent" if present else "not_found",
                          details=() if present else ("Codex CLI not found on PATH",))
    details: list[str] = []
    if entry != _server_entry(contract):
        details.append("MCP server entry is missing or differs from this installation"
                       if entry is not None else "MCP server entry is missing")
    want = {e: [(m, h)] for e, m, h in _wanted_hooks(contract)}
    for event, expected in want.items():
        if ours.get(event) != expected:
            details.append(f"hook {event} is missing or differs (path or timeout)")
    state = doc.get("hooks", {}).get("state", {}) if isinstance(doc.get("hooks"), dict) else {}
    for key, digest in _our_trust(hooks, where).items():
        record = _plain(state.get(key)) if isinstance(state, dict) else None
        event = key.rsplit(":", 3)[1]
        if not isinstance(record, dict) or "trusted_hash" not in record:
            details.append(f"hook {event} is untrusted: Codex skips it silently until install trusts it")
        elif record.get("trusted_hash") != digest:
            details.append(f"hook {event} was modified since it was trusted: Codex skips it until "
                           "install trusts it again")
        elif record.get("enabled") is False:
            details.append(f"hook {event} is disabled in {config_path}")
    return HostStatus(host=HOST, state="outdated" if details else "installed", details=tuple(details))


@hookimpl
def host_print_config(host: str, contract: dict[str, Any]) -> str | None:
    if host != HOST:
        return None
    import tomlkit

    base = _codex_home("~")
    doc = tomlkit.document()
    for line in (f"{base}/config.toml: the MCP server, and the hooks in Codex's inline form",
                 f"(the shape of {base}/hooks.json). `bli-memory-mcp install --host codex` writes",
                 "the hooks to hooks.json and trusts them ([hooks.state] trusted_hash); Codex",
                 "skips hooks pasted by hand until they are reviewed and trusted."):
        doc.add(tomlkit.comment(line))
    servers = tomlkit.table(is_super_table=True)
    entry = tomlkit.table()
    for key, value in _server_entry(contract).items():
        entry[key] = value
    servers[contract["server_id"]] = entry
    doc["mcp_servers"] = servers
    hooks = tomlkit.table(is_super_table=True)
    for event, matcher, handler in _wanted_hooks(contract):
        group = tomlkit.table()
        if matcher is not None:
            group["matcher"] = matcher
        handlers = tomlkit.aot()
        item = tomlkit.table()
        for key, value in handler.items():
            item[key] = value
        handlers.append(item)
        group["hooks"] = handlers
        groups = tomlkit.aot()
        groups.append(group)
        hooks[event] = groups
    doc["hooks"] = hooks
    return tomlkit.dumps(doc)
