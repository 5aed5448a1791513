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

import shutil
from typing import Any

from bli_memory.adapters.codex_config import (
    HOST,
    codex_home,
    config_paths,
    hook_commands,
    hook_identity,
    load_toml,
    our_trust,
    plain,
    plan_config_toml,
    rekeyed_state,
    server_entry,
    trust_key,
    trusted_hash,
    wanted_hooks,
)
from bli_memory.core.errors import HostError
from bli_memory.core.hooks.payloads import additional_context, failed_stop_message
from bli_memory.core.hooks.payloads import payload_str as _str
from bli_memory.core.hooks.transcripts import tail_json_lines
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.models import Exchange, HookInput, HookResult, HostConventions, RenderedOutput
from bli_memory.installers.files import conflict as _conflict

__all__ = ["CONTEXT_MAX_BYTES", "bound_block", "hook_commands", "hook_identity", "trust_key", "trusted_hash"]

EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "stop": "Stop"}
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


@hookimpl
def host_plan_config(host: str, contract: dict[str, Any], home: Any, uninstall: bool) -> Any:
    if host != HOST:
        return None
    from bli_memory.core.models import HostConfigPlan
    from bli_memory.installers.files import dump_json_like, read_json_object, read_text
    from bli_memory.installers.jsonhooks import merge_hooks, remove_ours

    config_path, hooks_path = config_paths(home)
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
        hooks = merge_hooks(hooks_before, wanted_hooks(contract), where)
    moves, ours_before = rekeyed_state(hooks_before, hooks, where)
    trust = {} if uninstall else our_trust(hooks, where)
    if hooks != hooks_before:
        new_data = dict(data)
        if hooks or not hooks_before:
            new_data["hooks"] = hooks
        else:
            new_data.pop("hooks", None)
        files[str(hooks_path)] = (old_h, dump_json_like(new_data, old_h))

    old_c = read_text(config_path)
    new_c = plan_config_toml(old_c, config_path, contract, uninstall, moves, ours_before, trust)
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

    config_path, hooks_path = config_paths(home)
    where = str(hooks_path)
    doc = load_toml(config_path, read_text(config_path))
    data = read_json_object(hooks_path, read_text(hooks_path))
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    servers = doc.get("mcp_servers") if isinstance(doc.get("mcp_servers"), dict) else {}
    entry = plain(servers.get(contract["server_id"]))
    ours = find_ours(hooks, where)
    if entry is None and not ours:
        present = host_info()["present"]
        return HostStatus(host=HOST, state="absent" if present else "not_found",
                          details=() if present else ("Codex CLI not found on PATH",))
    details: list[str] = []
    if entry != server_entry(contract):
        details.append("MCP server entry is missing or differs from this installation"
                       if entry is not None else "MCP server entry is missing")
    want = {e: [(m, h)] for e, m, h in wanted_hooks(contract)}
    for event, expected in want.items():
        if ours.get(event) != expected:
            details.append(f"hook {event} is missing or differs (path or timeout)")
    state = doc.get("hooks", {}).get("state", {}) if isinstance(doc.get("hooks"), dict) else {}
    for key, digest in our_trust(hooks, where).items():
        record = plain(state.get(key)) if isinstance(state, dict) else None
        event = key.rsplit(":", 3)[1]
        if not isinstance(record, dict) or "trusted_hash" not in record:
            details.append(f"hook {event} is untrusted: Codex skips it silently until install trusts it")
        elif record.get("trusted_hash") != digest:
            details.append(f"hook {event} was modified since it was trusted: Codex skips it until "
                           "install trusts it again")
        elif record.get("enabled") is False:
            details.append(f"hook {event} is disabled in {config_path}")
    return HostStatus(host=HOST, state="outdated" if details else "installed", details=tuple(details),
                      server=entry if isinstance(entry, dict) else None)


@hookimpl
def host_print_config(host: str, contract: dict[str, Any]) -> str | None:
    if host != HOST:
        return None
    import tomlkit

    base = codex_home("~")
    doc = tomlkit.document()
    for line in (f"{base}/config.toml: the MCP server, and the hooks in Codex's inline form",
                 f"(the shape of {base}/hooks.json). `bli-memory-mcp install --host codex` writes",
                 "the hooks to hooks.json and trusts them ([hooks.state] trusted_hash); Codex",
                 "skips hooks pasted by hand until they are reviewed and trusted."):
        doc.add(tomlkit.comment(line))
    servers = tomlkit.table(is_super_table=True)
    entry = tomlkit.table()
    for key, value in server_entry(contract).items():
        entry[key] = value
    servers[contract["server_id"]] = entry
    doc["mcp_servers"] = servers
    hooks = tomlkit.table(is_super_table=True)
    for event, matcher, handler in wanted_hooks(contract):
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
