"""Text every store can keep: the one check that save, update, metadata and import share.

Standard library only and importing nothing of the project at import time (the redaction
rules load inside :func:`shown_value`), so the export format
(:mod:`bli_memory.core.memory.records`, which re-exports it) and the save path
(:mod:`bli_memory.core.memory.retrieval_writes`) both use it without an import cycle.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MAX_METADATA_DEPTH", "SHOWN_MAX_CHARS", "shown_value", "text_problem"]

#: Deepest nesting of a record's metadata that import accepts.
MAX_METADATA_DEPTH = 32
#: Longest value a refusal repeats (:func:`shown_value`); the longest ISO 8601 time with
#: microseconds and a zone is 32 characters, a UUID 36.
SHOWN_MAX_CHARS = 64


def text_problem(value: Any, *, max_depth: int | None = None) -> str | None:
    """Why a JSON value cannot be stored as text (NUL, lone surrogate, too deep), or None.

    SQLite would keep such text but Postgres refuses NUL and both refuse to encode a
    lone surrogate as UTF-8, so a value that would break the move to the service is
    refused at the door of either store. Walks nested lists and dicts without
    recursion, to ``max_depth`` levels (default :data:`MAX_METADATA_DEPTH`).

    Returns:
        The problem as a predicate (``"contains a NUL character"``), or None.
    """
    limit = MAX_METADATA_DEPTH if max_depth is None else max_depth
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return f"is nested more than {limit} levels deep"
        if isinstance(item, float) and not math.isfinite(item):
            return "holds NaN or Infinity, which JSON cannot carry"
        if isinstance(item, str):
            if "\x00" in item:
                return "contains a NUL character"
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "contains a lone surrogate (not valid UTF-8)"
        elif isinstance(item, dict):
            stack.extend((k, depth + 1) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return None


def shown_value(value: object) -> str:
    """How a refusal names a value a caller gave (an expiry, a ``customId``, an import
    record's time or id): quoted, unless it is long or looks like a secret (a token pasted
    into the wrong field), which is never repeated."""
    if not isinstance(value, str):
        return f"of type {type(value).__name__}"
    if len(value) > SHOWN_MAX_CHARS:
        return f"of {len(value)} characters"
    from bli_memory.core.memory.redaction import redact

    return "(not repeated: it looks like a secret)" if redact(value).masked else repr(value)
