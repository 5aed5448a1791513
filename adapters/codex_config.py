"""Codex CLI's config files: the hook trust hashes and the ``config.toml`` plan.

Codex silently skips a hook it was not told to trust, so every handler we install gets
a ``[hooks.state."<hooks.json>:<event>:<group>:<handler>"]`` table with its
``trusted_hash`` (:func:`trusted_hash`). ``config.toml`` is edited with tomlkit, so the
person's comments, ordering and other tables survive. The hook plugin itself is
:mod:`bli_memory.adapters.codex`.
"""

from __future__ import annotations

import json
import os
from typing import Any

from bli_memory.installers.files import conflict as _conflict

__all__ = [
    "DEFAULT_TIMEOUT_SEC",
    "HOST",
    "SNAKE_EVENTS",
    "codex_home",
    "config_paths",
    "hook_commands",
    "hook_identity",
    "load_toml",
    "our_trust",
    "plain",
    "plan_config_toml",
    "rekeyed_state",
    "server_entry",
    "trust_key",
    "trusted_hash",
    "wanted_hooks",
]


HOST = "codex"
#: Codex's snake-case event names, used in trust keys and hashes.
SNAKE_EVENTS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit", "Stop": "stop"}
#: Events whose matcher Codex ignores, and leaves out of the trust hash.
_NO_MATCHER = {"UserPromptSubmit", "Stop"}
#: Codex's default handler timeout in seconds (app-server reports ``timeoutSec: 600``).
DEFAULT_TIMEOUT_SEC = 600


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


def codex_home(home: Any) -> Any:
    from pathlib import Path

    override = os.environ.get("CODEX_HOME")
    return Path(override) if override else Path(home) / ".codex"


def config_paths(home: Any) -> tuple[Any, Any]:
    base = codex_home(home)
    return base / "config.toml", base / "hooks.json"


def hook_commands(contract: dict[str, Any]) -> list[tuple[str, str, int]]:
    """``(Codex event, command, timeout s)`` for each contract hook, with ``--host codex``."""
    from bli_memory.installers.contract import HOOK_SUBCOMMANDS, hook_command

    binary = contract["mcp_server"]["command"]
    return [(h["event"], hook_command(binary, HOOK_SUBCOMMANDS[h["event"]][0], "--host", HOST),
             h["timeout_seconds"]) for h in contract["hooks"]]


def wanted_hooks(contract: dict[str, Any]) -> list[tuple[str, str | None, dict[str, Any]]]:
    # SessionStart without a matcher runs for every source (startup, resume, clear, ...).
    return [(event, None, {"type": "command", "command": command, "timeout": timeout})
            for event, command, timeout in hook_commands(contract)]


def server_entry(contract: dict[str, Any]) -> dict[str, Any]:
    server = contract["mcp_server"]
    entry: dict[str, Any] = {"command": server["command"], "args": list(server["args"])}
    if server["env"]:
        entry["env"] = dict(server["env"])
    return entry


def load_toml(path: Any, text: str | None) -> Any:
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


def plain(value: Any) -> Any:
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


def _state_table(doc: Any, path: Any) -> Any:
    hooks = _table_at(doc, "hooks", path)
    if hooks is None:
        return None
    return _table_at(hooks, "state", path)


def rekeyed_state(before: dict[str, Any], after: dict[str, Any], hooks_path: str
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


def our_trust(hooks: dict[str, Any], hooks_path: str) -> dict[str, str]:
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
        if plain(table.get(key)) != value:
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


def plan_config_toml(old: str | None, config_path: Any, contract: dict[str, Any], uninstall: bool,
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

    doc = load_toml(config_path, old)
    appends: list[tuple[list[str], dict[str, Any]]] = []
    servers = _table_at(doc, "mcp_servers", config_path)
    sid = contract["server_id"]
    if uninstall:
        if servers is not None and sid in servers:
            del servers[sid]
            if not servers:
                del doc["mcp_servers"]
    else:
        want = server_entry(contract)
        if servers is not None and isinstance(servers.get(sid), dict):
            _set_in_place(servers[sid], want)
        else:
            appends.append((["mcp_servers", sid], want))

    hooks_table = _table_at(doc, "hooks", config_path)
    state = _state_table(doc, config_path)
    values: dict[str, dict[str, Any]] = {}
    if state is not None:
        values = {new: plain(state[old]) for old, new in moves.items() if old in state}
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
