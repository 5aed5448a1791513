"""Claude Code 2.1.x host adapter.

Payloads (stdin JSON, see ``docs/hosts.md`` section 1): ``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name``, ``source`` (SessionStart),
``prompt`` (UserPromptSubmit), ``stop_hook_active`` and ``last_assistant_message``
(Stop). Output: context goes out as JSON ``hookSpecificOutput.additionalContext``
(the documented context channel; the same shape Codex reads), a failed stop as a
one-line ``systemMessage`` (Claude Code shows no hook stderr to the person).
Transcript: JSONL under ``~/.claude/projects/``; the last exchange is the last
``user`` line whose content is text (not a tool result) plus the ``text`` blocks of
the ``assistant`` lines after it. The file may not exist yet at the first prompt.
"""

from __future__ import annotations

import json
from typing import Any

from bli_memory.core.contracts import hookimpl
from bli_memory.core.errors import HookPayloadError, HostError
from bli_memory.core.models import Exchange, HookInput, HookResult, RenderedOutput
from bli_memory.core.transcripts import tail_json_lines

__all__: list[str] = []

HOST = "claude"
EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "stop": "Stop"}


def _str(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise HookPayloadError(f"payload field {key} is not a string", reason="stdin_malformed")
    return value


@hookimpl
def host_info() -> dict[str, Any]:
    import shutil

    return {"name": HOST, "display_name": "Claude Code", "events": dict(EVENTS),
            "present": shutil.which("claude") is not None}


@hookimpl
def host_parse_payload(host: str, event: str, payload: dict[str, Any]) -> HookInput | None:
    if host != HOST:
        return None
    active = payload.get("stop_hook_active", False)
    return HookInput(
        host=HOST,
        event=event,  # type: ignore[arg-type]
        session_id=_str(payload, "session_id"),
        cwd=_str(payload, "cwd"),
        prompt=_str(payload, "prompt"),
        transcript_path=_str(payload, "transcript_path"),
        reentrant=active is True,
        last_assistant_message=_str(payload, "last_assistant_message"),
        source=_str(payload, "source"),
        raw=payload,
    )


@hookimpl
def host_render(host: str, result: HookResult) -> RenderedOutput | None:
    if host != HOST:
        return None
    if result.outcome == "failed" and result.event == "stop":
        message = f"BLI Memory could not keep this turn ({result.reason}); it was not saved."
        return RenderedOutput(stdout=json.dumps({"systemMessage": message}))
    if result.outcome != "ok" or not result.block or result.event == "stop":
        return RenderedOutput()
    out = {"hookSpecificOutput": {"hookEventName": EVENTS[result.event], "additionalContext": result.block}}
    return RenderedOutput(stdout=json.dumps(out, ensure_ascii=False))


def _user_text(line: dict[str, Any]) -> str | None:
    """The typed prompt of a ``user`` line, or None for tool results and meta lines."""
    if line.get("isMeta") or line.get("isSidechain"):
        return None
    content = (line.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if texts and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return "\n".join(texts)
    return None


def _assistant_text(line: dict[str, Any]) -> str:
    if line.get("isSidechain"):
        return ""
    content = (line.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


@hookimpl
def host_read_exchange(host: str, hook_input: HookInput, max_bytes: int) -> Exchange | None:
    if host != HOST:
        return None
    if not hook_input.transcript_path:
        raise HostError("no transcript_path in the payload", reason="no_transcript")
    lines = tail_json_lines(hook_input.transcript_path, max_bytes)
    assistant: list[str] = []
    user = ""
    for line in reversed(lines):
        kind = line.get("type")
        if kind == "assistant":
            text = _assistant_text(line)
            if text:
                assistant.append(text)
        elif kind == "user":
            text = _user_text(line)
            if text is not None:
                user = text
                break
    reply = "\n".join(reversed(assistant)) or (hook_input.last_assistant_message or "")
    if not user and not reply:
        raise HostError("the transcript tail holds no exchange", reason="no_transcript")
    return Exchange(user=user, assistant=reply)
