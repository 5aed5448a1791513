"""Reading hook payload fields and writing the shared context output, for host adapters.

Standard library only (adapters load on every hook run). Claude Code, Codex CLI and
Gemini CLI all take injected context as ``{"hookSpecificOutput": {"hookEventName": ...,
"additionalContext": ...}}`` (docs/hosts.md), so that shape is built in one place; Claude
Code and Codex CLI show a hook's ``systemMessage`` to the person, which is how a stop
hook that could not keep a turn says so (:func:`failed_stop_message`).
"""

from __future__ import annotations

import json
from typing import Any

from bli_memory.core.errors import HookPayloadError

__all__ = ["additional_context", "failed_stop_message", "payload_str"]


def payload_str(payload: dict[str, Any], key: str) -> str | None:
    """``payload[key]`` as a string, or None when absent or null.

    Raises:
        HookPayloadError: the field holds something other than a string (reason
            ``stdin_malformed``).
    """
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise HookPayloadError(f"payload field {key} is not a string", reason="stdin_malformed")
    return value


def additional_context(event_name: str, block: str) -> str:
    """One line of JSON carrying ``block`` as the host event's ``additionalContext``."""
    out = {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": block}}
    return json.dumps(out, ensure_ascii=False)


def failed_stop_message(reason: str | None) -> str:
    """One line of JSON telling the person a turn was not kept: ``{"systemMessage": ...}``.

    Args:
        reason: The receipt reason (closed set, core/hooks/receipts.py), e.g. ``store_busy``.
    """
    message = f"BLI Memory could not keep this turn ({reason}); it was not saved."
    return json.dumps({"systemMessage": message})
