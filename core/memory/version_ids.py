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

__all__ = ["live_head", "shown_id", "version_note"]


_NOT_AN_ID = "<not a memory id: ids are whole UUIDs, as search and list show them; not repeated>"


def shown_id(id: object) -> str:
    """``id`` as an error may show it: as given when it is a UUID in the stores' form
    (lowercase, dashed: every memory id is one), else a stand-in that says what an id is
    (``<not a memory id: ids are whole UUIDs, ...; not repeated>``): a token pasted where
    an id goes (an MCP argument, a URL of the memory browser) must not come back in the
    answer or a log, and 32 bare hex digits (a Twilio or Datadog key) also parse as a
    UUID."""
    import uuid

    try:
        canonical = str(uuid.UUID(str(id)))
    except ValueError:
        canonical = ""
    return canonical if canonical and canonical == id else _NOT_AN_ID


def live_head(
    id: str, start: Memory | None, head: Memory | None, *, live: bool
) -> tuple[Memory, Memory | None]:
    """The memory to act on for ``id``, and the older version ``id`` named (or None).

    Args:
        id: The id given (shown in errors as :func:`shown_id` gives it).
        start: The row with that id, or None.
        head: The newest version of ``start``'s chain (``start`` itself when newest).
        live: Whether ``head`` is active and unexpired.

    Raises:
        NotFoundError: no row has the id, or its memory has no live version (forgotten
            or expired), saying which version the id named.
    """
    shown = shown_id(id)
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
