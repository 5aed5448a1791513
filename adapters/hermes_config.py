"""Hermes Agent's config files: the ``config.yaml`` plan, the shell-hooks allowlist and the
memory-provider plugin files.

``config.yaml`` is edited with ruamel.yaml in round-trip mode, keeping the person's comments
and indentation. The hook plugin itself is :mod:`bli_memory.adapters.hermes`.
"""

from __future__ import annotations

import json
import os
from typing import Any

from bli_memory.installers.files import conflict as _conflict

__all__ = [
    "HOST",
    "PROVIDER",
    "SHELL_HOOKS",
    "allowlist_plan",
    "dump",
    "hermes_home",
    "hook_commands",
    "plain",
    "plan_yaml",
    "plugin_files",
    "provider_note",
    "server_entry",
    "yaml_for",
]

HOST = "hermes"
#: Contract events that get a Hermes shell hook (session start goes through the provider).
SHELL_HOOKS = {"UserPromptSubmit": "pre_llm_call", "Stop": "post_llm_call"}
PROVIDER = "bli-memory"


def hermes_home(home: Any) -> Any:
    from pathlib import Path

    override = os.environ.get("HERMES_HOME")
    return Path(override) if override else Path(home) / ".hermes"


def hook_commands(contract: dict[str, Any]) -> list[tuple[str, str, int]]:
    """``(Hermes event, command, timeout s)`` for our shell hooks, with ``--host hermes``."""
    from bli_memory.installers.contract import HOOK_SUBCOMMANDS, hook_command

    binary = contract["mcp_server"]["command"]
    return [(SHELL_HOOKS[h["event"]], hook_command(binary, HOOK_SUBCOMMANDS[h["event"]][0], "--host", HOST),
             h["timeout_seconds"]) for h in contract["hooks"] if h["event"] in SHELL_HOOKS]


def server_entry(contract: dict[str, Any]) -> dict[str, Any]:
    server = contract["mcp_server"]
    entry: dict[str, Any] = {"command": server["command"], "args": list(server["args"])}
    if server["env"]:
        entry["env"] = dict(server["env"])
    entry["enabled"] = True
    return entry


_INDENTS = ((2, 2, 0), (2, 4, 2), (4, 4, 0), (4, 4, 2), (4, 6, 4), (3, 3, 0))


def yaml_for(text: str | None, path: Any) -> tuple[Any, Any]:
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


def dump(yaml: Any, doc: Any) -> str:
    import io

    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


def plain(value: Any) -> Any:
    """ruamel's commented containers as plain dicts and lists, for comparisons."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _mapping_at(doc: Any, key: str, path: Any) -> Any:
    value = doc.get(key)
    if value is not None and not isinstance(value, dict):
        raise _conflict(f"{path}: {key} is not a mapping; nothing was written")
    return value


def plan_yaml(doc: Any, path: Any, contract: dict[str, Any], uninstall: bool) -> list[str]:
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
    elif servers is None or plain(servers.get(sid)) != server_entry(contract):
        if servers is None:
            servers = doc["mcp_servers"] = CommentedMap()
        servers[sid] = CommentedMap(server_entry(contract))

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
        if want and [plain(e) for e in current] == [{"command": want[0], "timeout": want[1]}]:
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
        notes.append(provider_note(selected))
    return notes


def provider_note(selected: Any) -> str:
    return (f"Hermes already uses the memory provider {selected!r}, so BLI Memory's session-start "
            "context is off there (recall and capture still run as shell hooks).")


def allowlist_plan(path: Any, contract: dict[str, Any], uninstall: bool) -> tuple[str | None, str | None]:
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


def plugin_files(contract: dict[str, Any]) -> dict[str, str]:
    from importlib import resources

    source = resources.files("bli_memory.adapters").joinpath("hermes_provider.py").read_text("utf-8")
    manifest = (f"name: {PROVIDER}\nversion: \"1\"\n"
                "description: \"BLI Memory: shared, durable memory across coding agents\"\n")
    settings = {"command": contract["mcp_server"]["command"], "shell_hooks": sorted(SHELL_HOOKS.values())}
    return {"__init__.py": source, "plugin.yaml": manifest,
            "bli-memory.json": json.dumps(settings, indent=2) + "\n"}
