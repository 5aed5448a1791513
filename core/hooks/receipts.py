"""The one stderr receipt every hook run writes, and its closed set of reasons.

Shapes (BLI Memory spec, "The three hooks")::

    [bli-memory] prompt ok {"hits":2,"elapsed_ms":140,"deadline_ms":2000,"via":"direct"}
    [bli-memory] prompt skipped {"reason":"trivial_prompt"}
    [bli-memory] prompt failed {"reason":"timeout","elapsed_ms":2001,"deadline_ms":2000}

A receipt never holds a stack trace, a prompt, a memory, a path or a token: only
counts, timings and a reason from :data:`REASONS` (plus ``http_<status>``). Any other
reason becomes ``unknown_internal:<name>``. Standard library only.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["REASONS", "format_receipt", "to_log_reason"]

#: The closed set. The spec's network reasons (timeout, http_<status>,
#: dashboard_unreachable, bad_response), its six stdin reasons, unpaired, no_prompt,
#: trivial_prompt and the stop-only skips; plus four of ours: ``store_unavailable``
#: (the local SQLite file cannot be opened or written: the embedded twin of
#: dashboard_unreachable), ``disabled`` (memory switched off), ``config_invalid``
#: (a BLI_MEMORY_* variable has a value that cannot be used; ``cockpit doctor`` names it)
#: and ``invalid_container_tag`` (BLI_MEMORY_CONTAINER_TAG looks like a secret:
#: :mod:`bli_memory.core.hooks.container_tag`).
REASONS = frozenset(
    {
        "timeout",
        "dashboard_unreachable",
        "bad_response",
        "no_stdin",
        "stdin_empty",
        "stdin_timeout",
        "stdin_too_large",
        "stdin_unreadable",
        "stdin_malformed",
        "unpaired",
        "no_prompt",
        "trivial_prompt",
        "reentrant",
        "no_transcript",
        "redaction_failed",
        "store_unavailable",
        "disabled",
        "config_invalid",
        "invalid_container_tag",
    }
)

_UNKNOWN = "unknown_internal:"
_HTTP = re.compile(r"^http_[1-5]\d\d$")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def to_log_reason(reason: str | None) -> str:
    """Map any reason to the closed set; unknown ones become ``unknown_internal:<name>``.

    Args:
        reason: A reason literal, an exception reason or an exception class name.

    Returns:
        A member of :data:`REASONS`, ``http_<status>``, or ``unknown_internal:<name>``
        with ``name`` reduced to safe characters (at most 40).
    """
    if reason in REASONS or (reason is not None and _HTTP.match(reason)):
        return reason
    if reason is not None and reason.startswith(_UNKNOWN):  # already mapped: map once only
        reason = reason[len(_UNKNOWN):]
    name = _SAFE_NAME.sub("_", reason or "none")[:40] or "none"
    return f"unknown_internal:{name}"


def format_receipt(event: str, outcome: str, fields: dict[str, Any]) -> str:
    """One receipt line (with trailing newline), e.g. ``[bli-memory] prompt ok {...}``."""
    body = json.dumps(fields, separators=(",", ":"), ensure_ascii=True, sort_keys=False)
    return f"[bli-memory] {event} {outcome} {body}\n"
