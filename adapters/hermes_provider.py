"""BLI Memory as a Hermes Agent ``MemoryProvider`` (the plugin ``bli-memory``).

``bli-memory-mcp install --host hermes`` copies this file, unchanged, to
``$HERMES_HOME/plugins/bli-memory/__init__.py`` next to ``plugin.yaml`` and
``bli-memory.json`` (``{"command": "/abs/bin/bli-memory-mcp", ...}``). Hermes runs in
its own Python environment, where BLI Memory may not be importable, so the provider
imports the standard library only and runs our absolute ``bli-memory-mcp hook <event>
--host hermes`` with the same JSON payloads Hermes' shell hooks send
(``{hook_event_name, session_id, cwd, extra: {...}}``): the hook process is the one
implementation of recall and capture, whichever route calls it.

- :meth:`BliMemoryProvider.system_prompt_block`: session-start context (profile and
  recent context of the folder's space). Hermes discards the output of its
  ``on_session_start`` hook, so this is the only way that context reaches the model.
- :meth:`BliMemoryProvider.prefetch` (before each turn) and
  :meth:`BliMemoryProvider.sync_turn` (after it): recall and capture, but only when
  our ``pre_llm_call`` / ``post_llm_call`` shell hooks are not configured, so a turn is
  never searched or saved twice.
- :meth:`BliMemoryProvider.on_session_end`: nothing to do; every turn was already
  captured by ``sync_turn`` or the shell hook.

Every call fails open: a missing executable, a timeout or bad output means no
context, never an exception into Hermes.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

try:  # inside Hermes
    from agent.memory_provider import MemoryProvider as _Base  # type: ignore[import-not-found]
except ImportError:  # anywhere else (tests, linters): same methods, no base behaviour
    _Base = object  # type: ignore[assignment,misc]

__all__ = ["BliMemoryProvider", "register"]

NAME = "bli-memory"
SETTINGS_FILE = "bli-memory.json"
#: Seconds each hook run may take, over the hook's own deadlines (8 / 2 / 15 s).
TIMEOUTS = {"session-start": 30.0, "prompt": 5.0, "stop": 30.0}
#: Our events -> the Hermes shell-hook event whose payload shape they reuse.
HERMES_EVENTS = {"session-start": "on_session_start", "prompt": "pre_llm_call", "stop": "post_llm_call"}


def _is_ours(command: Any) -> bool:
    if not isinstance(command, str):
        return False
    try:
        tokens = shlex.split(command)
    except ValueError:
        return False
    return bool(tokens) and os.path.basename(tokens[0]) == "bli-memory-mcp" and "hook" in tokens[1:]


def _shell_hook_events(config: Any) -> set[str] | None:
    """Hermes events that already run our hook as a shell hook, from Hermes' config."""
    hooks = config.get("hooks") if isinstance(config, dict) else None
    if not isinstance(hooks, dict):
        return set()
    found = set()
    for event, entries in hooks.items():
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and _is_ours(entry.get("command")):
                found.add(event)
    return found


class BliMemoryProvider(_Base):  # type: ignore[misc,valid-type]
    """Hermes memory provider that runs ``bli-memory-mcp hook … --host hermes``.

    Args:
        command: Absolute path of ``bli-memory-mcp`` (default: ``command`` in
            ``bli-memory.json`` beside this file).
        shell_hooks: Hermes events our shell hooks already handle (default: read from
            Hermes' config at :meth:`initialize`, else ``shell_hooks`` in the JSON file).
    """

    def __init__(self, command: str | None = None, shell_hooks: set[str] | None = None) -> None:
        settings: dict[str, Any] = {}
        try:
            settings = json.loads((Path(__file__).parent / SETTINGS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            settings = {}
        self.command: str = command or str(settings.get("command") or "")
        self._shell_hooks_default = set(settings.get("shell_hooks") or [])
        self.shell_hooks: set[str] | None = shell_hooks
        self.session_id = ""
        self.platform = ""
        self.primary = True

    # --- identity and lifecycle ----------------------------------------------------

    @property
    def name(self) -> str:
        return NAME

    def is_available(self) -> bool:
        """True when the configured executable exists and may be run (no I/O beyond a stat)."""
        return bool(self.command) and os.access(self.command, os.X_OK)

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Remember the session, and find which events our shell hooks already cover."""
        self.session_id = session_id or ""
        self.platform = str(kwargs.get("platform") or "")
        self.primary = kwargs.get("agent_context", "primary") == "primary"
        if self.shell_hooks is None:
            self.shell_hooks = self._read_shell_hooks()

    def _read_shell_hooks(self) -> set[str]:
        try:
            from hermes_cli.config import load_config  # type: ignore[import-not-found]

            found = _shell_hook_events(load_config())
        except Exception:
            found = None
        return self._shell_hooks_default if found is None else found

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """No provider tools: the memory tools come from the ``bli-memory`` MCP server."""
        return []

    def shutdown(self) -> None:
        """Nothing is held open between calls."""

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """Nothing left to save: each turn was captured when it ended."""

    # --- the three events ------------------------------------------------------------

    def _run(self, event: str, extra: dict[str, Any], session_id: str = "") -> str:
        """Run one hook; returns the ``context`` it printed, or ``""``."""
        if not self.is_available():
            return ""
        payload = {
            "hook_event_name": HERMES_EVENTS[event], "tool_name": None, "tool_input": None,
            "session_id": session_id or self.session_id, "cwd": os.getcwd(),
            "extra": {**extra, "platform": self.platform, "via": "memory_provider"},
        }
        try:
            proc = subprocess.run(
                [self.command, "hook", event, "--host", "hermes"],
                input=json.dumps(payload, ensure_ascii=False, default=str), capture_output=True,
                text=True, timeout=TIMEOUTS[event], check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return ""
        try:
            data = json.loads(proc.stdout) if proc.stdout.strip() else {}
        except ValueError:
            return ""
        context = data.get("context") if isinstance(data, dict) else None
        return context if isinstance(context, str) else ""

    def _covered(self, hermes_event: str) -> bool:
        covered = self.shell_hooks if self.shell_hooks is not None else self._read_shell_hooks()
        return hermes_event in covered

    def system_prompt_block(self) -> str:
        """Session-start context of the working folder's space ('' when the space is empty)."""
        return self._run("session-start", {})

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """Memories for this turn's message, unless our ``pre_llm_call`` shell hook recalls them."""
        if not query.strip() or self._covered("pre_llm_call"):
            return ""
        return self._run("prompt", {"user_message": query}, session_id)

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        """Recall happens in :meth:`prefetch` itself (a bounded hook run)."""

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  messages: list[dict[str, Any]] | None = None) -> None:
        """Queue the finished turn for extraction, unless our ``post_llm_call`` shell hook does."""
        if not self.primary or self._covered("post_llm_call"):
            return
        self._run("stop", {"user_message": user_content, "assistant_response": assistant_content},
                  session_id)


def register(ctx: Any) -> None:
    """Hermes plugin entry point: register the provider."""
    ctx.register_memory_provider(BliMemoryProvider())
