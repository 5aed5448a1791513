"""An id names a memory across its versions.

``save`` answers an id; after ``update`` that id is the first version's, and the
memory lives on under a new one. So ``update``, ``forget`` and ``get`` given any
version's id act on the memory's live version (its head), and say which version the
id named. Shared by the embedded engine, the Postgres store and the texts of the MCP
tools and the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence

from bli_memory.core.errors import NotFoundError
from bli_memory.core.models import Memory

__all__ = ["live_head", "version_note"]


def live_head(
    id: str, start: Memory | None, head: Memory | None, *, live: bool
) -> tuple[Memory, Memory | None]:
    """The memory to act on for ``id``, and the older version ``id`` named (or None).

    Args:
        id: The id given (shown in errors, cut to 100 characters).
        start: The row with that id, or None.
        head: The newest version of ``start``'s chain (``start`` itself when newest).
        live: Whether ``head`` is active and unexpired.

    Raises:
        NotFoundError: no row has the id, or its memory has no live version (forgotten
            or expired), saying which version the id named.
    """
    shown = id if len(id) <= 100 else id[:100] + "…"
    if start is None or head is None:
        raise NotFoundError(f"no live memory with id {shown}")
    named = start if start.id != head.id else None
    if head.state != "active" or not live:
        if named is not None:
            raise NotFoundError(
                f"id {shown} is version {start.version} of a memory that is no longer live "
                f"(its newest version {head.id} is {head.state if head.state != 'active' else 'expired'})"
            )
        raise NotFoundError(f"no live memory with id {shown}")
    return head, named


def version_note(id: str | None, acted: Memory, named: Memory | None = None,
                 history: Sequence[Memory] = ()) -> str:
    """A sentence for the tool and CLI texts when ``id`` named an older version; else ``""``.

    Args:
        id: The id the caller gave (None when chosen by customId, text or query).
        acted: The version acted on or shown (the live head).
        named: The older version ``id`` named, when known (update and forget).
        history: Other versions, searched for ``id`` when ``named`` is not given (get).

    Returns:
        e.g. ``" Id 1b2c... is version 1 of this memory; its live version is 3 (id 9f8e...)."``
    """
    if id is None or named is None and acted.id == id.strip():
        return ""
    if named is None:
        named = next((m for m in history if m.id == id.strip()), None)
    if named is None or named.id == acted.id:
        return ""
    return (f" Id {named.id} is version {named.version} of this memory; its live version is "
            f"{acted.version} (id {acted.id}).")
