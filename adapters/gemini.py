"""Gemini CLI 0.61 host adapter (docs/hosts.md section 3).

Events: SessionStart (session-start), BeforeAgent (prompt), AfterAgent (stop).
Payloads carry ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``,
``timestamp``; ``source`` (SessionStart), ``prompt`` (BeforeAgent, AfterAgent),
``prompt_response`` and ``stop_hook_active`` (AfterAgent).

In headless runs Gemini prepends the SessionStart context to ``prompt`` as
``<hook_context>…</hook_context>\\n\\n``: :func:`host_parse_payload` strips every such
wrapper (and our own blocks) so nothing we injected is searched for or saved again.
An AfterAgent with ``stop_hook_active: true`` is a retry another hook forced; its
``prompt_response`` repeats the earlier answer, so it is re-entrant and saves nothing.

Output: stdout must be JSON only (plain text is shown to the person, never to the
model): context as ``hookSpecificOutput.additionalContext``. AfterAgent prints
nothing, or on failure only ``{"systemMessage": ...}``: Gemini displays a
``systemMessage`` and retries the turn only on a ``decision`` of ``block``/``deny``
(``isBlockingDecision`` in the shipped bundle), so the person learns the turn was
not kept and nothing is retried. Exit code always 0 (exit 2 blocks the turn on
BeforeAgent and forces a retry on AfterAgent). With stdout empty Gemini shows
stderr to the person: it takes stderr as the hook's output and prints it as ``Hook
system message: ...`` on every turn (``stdout.trim() || stderr.trim()``, then
``convertPlainTextToHookOutput`` in the shipped bundle), while Claude Code, Codex CLI
and Hermes Agent keep a successful hook's stderr out of view. So
:func:`host_conventions` sets ``receipts_in_log`` and receipts go to a log file
(:mod:`bli_memory.core.hooks.receipt_log`).

Transcript: JSONL under ``~/.gemini/tmp/<slug>/chats/``: a header line, ``$set``
patch lines and message records ``{"type": "user", "content": [{"text"}, …]}`` /
``{"type": "gemini", "content": "<text>"}``. The AfterAgent payload already holds the
exchange (``prompt`` + ``prompt_response``); the transcript is the fallback.

Install: ``mcpServers`` and ``hooks`` in ``~/.gemini/settings.json`` (``$GEMINI_CLI_HOME``
replaces the home folder when set); hook timeouts in milliseconds, every handler
named. Folder trust is on by default in 0.61 and then disables every MCP server in
folders Gemini does not trust: :func:`folder_trust_note` says so in one line with the
remedy; trust is edited only on request (``--trust-folder``, :mod:`bli_memory.adapters.gemini_trust`).
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

from bli_memory.adapters.gemini_trust import TRUST_NOTE_PREFIX, adjust_plan
from bli_memory.adapters.gemini_trust import gemini_dir as _gemini_dir
from bli_memory.adapters.gemini_trust import is_subpath as _is_subpath
from bli_memory.core.errors import HostError
from bli_memory.core.hooks.blocks import strip_injected
from bli_memory.core.hooks.payloads import additional_context, failed_stop_message
from bli_memory.core.hooks.payloads import payload_str as _str
from bli_memory.core.hooks.transcripts import tail_json_lines
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.models import (
    AdjustedPlan,
    Exchange,
    HookInput,
    HookResult,
    HostConventions,
    InstallOption,
    RenderedOutput,
)
from bli_memory.installers.files import dict_at as _dict_at
from bli_memory.installers.files import put_or_drop as _put

__all__ = ["folder_trust_note", "folder_trusted", "hook_commands"]

HOST = "gemini"
EVENTS = {"session-start": "SessionStart", "prompt": "BeforeAgent", "stop": "AfterAgent"}
#: Our contract's event names -> Gemini's.
CONTRACT_EVENTS = {"SessionStart": "SessionStart", "UserPromptSubmit": "BeforeAgent", "Stop": "AfterAgent"}
#: Handler names (Gemini shows them, and fingerprints project hooks by ``name:command``).
HANDLER_NAMES = {"SessionStart": "bli-memory-session-start", "BeforeAgent": "bli-memory-prompt",
                 "AfterAgent": "bli-memory-stop"}
#: The tag Gemini CLI wraps around the context a hook injects (module docstring).
CONTEXT_WRAPPERS = ("hook_context",)



def _clean(text: str | None) -> str | None:
    return None if text is None else strip_injected(text, wrappers=CONTEXT_WRAPPERS).strip()


@hookimpl
def host_conventions() -> HostConventions:
    # Gemini CLI sets ``GEMINI_CLI`` / ``GEMINI_SESSION_ID`` for shell commands (docs/hosts.md)
    # and wraps hook context in ``<hook_context>`` (module docstring).
    # It shows a successful hook's stderr to the person: receipts go to the log (module docstring).
    return HostConventions(host=HOST, agent="gemini-cli", env_markers=("GEMINI_CLI", "GEMINI_SESSION_ID"),
                           client_names=("gemini",), context_wrappers=CONTEXT_WRAPPERS, receipts_in_log=True)


@hookimpl
def host_info() -> dict[str, Any]:
    return {"name": HOST, "display_name": "Gemini CLI", "events": dict(EVENTS),
            "present": shutil.which("gemini") is not None}


@hookimpl
def host_parse_payload(host: str, event: str, payload: dict[str, Any]) -> HookInput | None:
    if host != HOST:
        return None
    return HookInput(
        host=HOST,
        event=event,  # type: ignore[arg-type]
        session_id=_str(payload, "session_id"),
        cwd=_str(payload, "cwd"),
        prompt=_clean(_str(payload, "prompt")),
        transcript_path=_str(payload, "transcript_path"),
        reentrant=payload.get("stop_hook_active", False) is True,
        last_assistant_message=_str(payload, "prompt_response"),
        source=_str(payload, "source"),
        raw=payload,
    )


@hookimpl
def host_render(host: str, result: HookResult) -> RenderedOutput | None:
    if host != HOST:
        return None
    if result.event == "stop" and result.outcome == "failed":
        return RenderedOutput(stdout=failed_stop_message(result.reason))
    if result.event == "session-start":
        return _session_start(result)
    if result.event == "stop" or result.outcome != "ok" or not result.block:
        return RenderedOutput()
    return RenderedOutput(stdout=additional_context(EVENTS[result.event], result.block))


def _session_start(result: HookResult) -> RenderedOutput:
    """The context block, and, in a folder Gemini does not trust (where it disables our MCP
    server), a one-line ``systemMessage`` with the command that trusts it
    (:func:`folder_trust_note`). Shown to the person, never to the model."""
    from pathlib import Path

    out: dict[str, Any] = {}
    if result.outcome == "ok" and result.block:
        out = json.loads(additional_context(EVENTS[result.event], result.block))
    try:
        home = Path.home()
        settings = json.loads((_gemini_dir(home) / "settings.json").read_text(encoding="utf-8"))
        note = folder_trust_note(os.getcwd(), home, settings if isinstance(settings, dict) else None)
    except (OSError, ValueError, RuntimeError):
        note = None
    if note:
        out["systemMessage"] = note
    return RenderedOutput(stdout=json.dumps(out, ensure_ascii=False) if out else "")


def _user_text(record: dict[str, Any]) -> str:
    parts = record.get("displayContent") or record.get("content")
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        return ""
    return "\n".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


@hookimpl
def host_read_exchange(host: str, hook_input: HookInput, max_bytes: int) -> Exchange | None:
    if host != HOST:
        return None
    user = hook_input.prompt or ""
    reply = hook_input.last_assistant_message or ""
    if user and reply:
        return Exchange(user=user, assistant=_clean(reply) or "")
    if not hook_input.transcript_path:
        if user or reply:
            return Exchange(user=user, assistant=_clean(reply) or "")
        raise HostError("no transcript_path in the payload", reason="no_transcript")
    lines = tail_json_lines(hook_input.transcript_path, max_bytes)
    answers: list[str] = []
    found_user = ""
    for line in reversed(lines):
        kind = line.get("type")
        if kind == "gemini" and isinstance(line.get("content"), str):
            answers.append(line["content"])
        elif kind == "user":
            found_user = _clean(_user_text(line)) or ""
            break
    user = user or found_user
    reply = reply or "\n".join(reversed(answers))
    if not user and not reply:
        raise HostError("the transcript tail holds no exchange", reason="no_transcript")
    return Exchange(user=user, assistant=_clean(reply) or "")


# --- folder trust ----------------------------------------------------------------------


def folder_trusted(folder: str, home: Any, settings: dict[str, Any] | None = None,
                   environ: dict[str, str] | None = None) -> bool | None:
    """Whether Gemini CLI 0.61 trusts ``folder``, as its ``checkPathTrust`` decides.

    Args:
        folder: The working folder.
        home: Home folder (its ``.gemini/trustedFolders.json`` holds the rules).
        settings: The user ``settings.json`` object (for ``security.folderTrust.enabled``).
        environ: Environment (``GEMINI_CLI_TRUST_WORKSPACE``,
            ``GEMINI_CLI_TRUSTED_FOLDERS_PATH``); default ``os.environ``.

    Returns:
        True when trusted (or folder trust is off), False when distrusted, None when no
        rule matches (untrusted until the person decides). The rule with the longest
        path among those containing the folder wins; ``TRUST_PARENT`` applies to the
        rule's parent (read in the shipped bundle, ``isPathTrusted``).
    """
    from pathlib import Path

    env = os.environ if environ is None else environ
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "false" or env.get("GEMINI_RESTRICTED_MODE") == "true":
        return False
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True
    security = (settings or {}).get("security")
    trust = security.get("folderTrust") if isinstance(security, dict) else None
    if isinstance(trust, dict) and trust.get("enabled") is False:
        return True
    rules_path = Path(env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or _gemini_dir(home) / "trustedFolders.json")
    try:
        rules = json.loads(rules_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        rules = {}
    if not isinstance(rules, dict):
        return None
    location = os.path.realpath(folder)
    best_len, best = -1, None
    for rule_path, level in rules.items():
        effective = os.path.dirname(rule_path) if level == "TRUST_PARENT" else rule_path
        if _is_subpath(os.path.realpath(effective), location) and len(rule_path) > best_len:
            best_len, best = len(rule_path), level
    if best == "DO_NOT_TRUST":
        return False
    if best in ("TRUST_FOLDER", "TRUST_PARENT"):
        return True
    return None


#: How :func:`folder_trust_note` starts (the installer drops it once it trusts the folder).


def folder_trust_note(folder: str, home: Any, settings: dict[str, Any] | None = None) -> str | None:
    """One line when Gemini would disable our MCP server in ``folder``, with the exact remedy."""
    if folder_trusted(folder, home, settings):
        return None
    import shlex
    from pathlib import Path

    note = (f"{TRUST_NOTE_PREFIX}{folder}, an untrusted folder; to trust it run "
            f"`bli-memory-mcp install --host gemini --trust-folder {shlex.quote(folder)}`, or /permissions "
            f"trust in Gemini, or add \"{folder}\": \"TRUST_FOLDER\" to "
            f"{_gemini_dir(home) / 'trustedFolders.json'}")
    parent = Path(folder).parent
    if _is_subpath(str(home), str(parent)) and parent != Path(home):  # never HOME, /home or /
        note += f"; trusting a parent folder once (--trust-folder {shlex.quote(str(parent))}) " \
                "trusts every project below it"
    return note


# --- install / uninstall / status ------------------------------------------------------


def _settings_path(home: Any) -> Any:
    return _gemini_dir(home) / "settings.json"


def hook_commands(contract: dict[str, Any]) -> list[tuple[str, str, int]]:
    """``(Gemini event, command, timeout ms)`` per contract hook, with ``--host gemini``."""
    from bli_memory.installers.contract import HOOK_SUBCOMMANDS, hook_command

    binary = contract["mcp_server"]["command"]
    return [(CONTRACT_EVENTS[h["event"]],
             hook_command(binary, HOOK_SUBCOMMANDS[h["event"]][0], "--host", HOST),
             h["timeout_seconds"] * 1000) for h in contract["hooks"]]


def _wanted_hooks(contract: dict[str, Any]) -> list[tuple[str, str | None, dict[str, Any]]]:
    # Lifecycle matchers are exact strings; "*" matches every SessionStart source.
    return [(event, "*" if event == "SessionStart" else None,
             {"name": HANDLER_NAMES[event], "type": "command", "command": command, "timeout": timeout})
            for event, command, timeout in hook_commands(contract)]


def _server_entry(contract: dict[str, Any]) -> dict[str, Any]:
    server = contract["mcp_server"]
    return {"command": server["command"], "args": list(server["args"]), "env": dict(server["env"])}


@hookimpl
def host_plan_config(host: str, contract: dict[str, Any], home: Any, uninstall: bool) -> Any:
    if host != HOST:
        return None
    from bli_memory.core.models import HostConfigPlan
    from bli_memory.installers.files import dump_json_like, read_json_object, read_text
    from bli_memory.installers.jsonhooks import merge_hooks, remove_ours

    path = _settings_path(home)
    old = read_text(path)
    settings = read_json_object(path, old)
    servers_before = _dict_at(settings, "mcpServers", path)
    hooks_before = _dict_at(settings, "hooks", path)
    servers = dict(servers_before)
    if uninstall:
        servers.pop(contract["server_id"], None)
        hooks = remove_ours(hooks_before, str(path))
    else:
        servers[contract["server_id"]] = _server_entry(contract)
        hooks = merge_hooks(hooks_before, _wanted_hooks(contract), str(path))
    new = dict(settings)
    _put(new, "mcpServers", servers, servers_before)
    _put(new, "hooks", hooks, hooks_before)
    files: dict[str, tuple[str | None, str | None]] = {}
    if new != settings:
        files[str(path)] = (old, dump_json_like(new, old))
    notes: tuple[str, ...] = ()
    if not uninstall:
        note = folder_trust_note(os.getcwd(), home, settings)
        notes = (note,) if note else ()
    return HostConfigPlan(host=HOST, files=files, notes=notes)


#: ``install --trust-folder PATH`` (docs/hosts.md, Gemini).
TRUST_FOLDER = InstallOption(
    host=HOST, flag="--trust-folder", metavar="PATH",
    help="Gemini only: also trust PATH in ~/.gemini/trustedFolders.json "
         "(Gemini disables MCP servers in untrusted folders); uninstall removes it",
    misuse="--trust-folder is for Gemini CLI: use it with --host gemini (or --host all "
           "with Gemini CLI on PATH)",
)


@hookimpl
def host_install_options() -> list[InstallOption]:
    return [TRUST_FOLDER]


@hookimpl
def host_adjust_plan(host: str, plan: Any, options: dict[str, Any], home: Any,
                     uninstall: bool) -> AdjustedPlan | None:
    if host != HOST:
        return None
    result: AdjustedPlan | None = adjust_plan(plan, options.get(TRUST_FOLDER.flag), home, uninstall)
    return result


@hookimpl
def host_status(host: str, contract: dict[str, Any], home: Any) -> Any:
    if host != HOST:
        return None
    from bli_memory.core.models import HostStatus
    from bli_memory.installers.files import read_json_object, read_text
    from bli_memory.installers.jsonhooks import find_ours

    path = _settings_path(home)
    settings = read_json_object(path, read_text(path))
    servers = settings.get("mcpServers") if isinstance(settings.get("mcpServers"), dict) else {}
    hooks = settings.get("hooks") if isinstance(settings.get("hooks"), dict) else {}
    entry = servers.get(contract["server_id"])
    ours = find_ours(hooks, str(path))
    if entry is None and not ours:
        present = host_info()["present"]
        return HostStatus(host=HOST, state="absent" if present else "not_found",
                          details=() if present else ("Gemini CLI not found on PATH",))
    details: list[str] = []
    if entry != _server_entry(contract):
        details.append("MCP server entry is missing or differs from this installation"
                       if entry is not None else "MCP server entry is missing")
    for event, matcher, handler in _wanted_hooks(contract):
        if ours.get(event) != [(matcher, handler)]:
            details.append(f"hook {event} is missing or differs (path or timeout)")
    hooks_config = settings.get("hooksConfig")
    if isinstance(hooks_config, dict) and hooks_config.get("enabled") is False:
        details.append(f"hooks are turned off in {path} (hooksConfig.enabled is false)")
    state = "outdated" if details else "installed"
    note = folder_trust_note(os.getcwd(), home, settings)
    if note:
        details.append(note)
    return HostStatus(host=HOST, state=state, details=tuple(details),
                      server=entry if isinstance(entry, dict) else None)


@hookimpl
def host_print_config(host: str, contract: dict[str, Any]) -> str | None:
    if host != HOST:
        return None
    hooks: dict[str, Any] = {}
    for event, matcher, handler in _wanted_hooks(contract):
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [handler]
        hooks.setdefault(event, []).append(group)
    block = {"mcpServers": {contract["server_id"]: _server_entry(contract)}, "hooks": hooks}
    return json.dumps(block, indent=2)
