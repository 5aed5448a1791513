"""The memory tool contract: the one protocol every store backend implements.

The embedded SQLite engine (:mod:`bli_memory.core.embedded.engine`), the Postgres store
(:mod:`bli_memory.core.team.pg_store`) and the client of the team service
(:mod:`bli_memory.core.team.remote`) each implement :class:`MemoryBackend`; the MCP tools,
the hooks and the daemon call nothing else. The ``memory_backend`` hook
(:mod:`bli_memory.core.hookspecs`) chooses which one a process uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bli_memory.core.models import (
        ForgetResult,
        Memory,
        Profile,
        SaveResult,
        SearchResult,
        UpdateResult,
    )

__all__ = ["MemoryBackend"]


class MemoryBackend(Protocol):
    """The memory tool contract: what every store backend implements.

    ``space`` arguments are container tags; ``None`` is not accepted here (callers
    derive the space first). Every method raises
    :class:`~bli_memory.core.errors.BliMemoryError` subclasses, never a foreign
    exception.
    """

    def search(
        self, query: str, *, space: str, limit: int = 10, include_profile: bool = False
    ) -> SearchResult:
        """Search one space (and its aliases) by meaning, keyword and recency."""
        ...

    def save(
        self,
        content: str,
        *,
        space: str,
        custom_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        source: str = "mcp",
        session_id: str | None = None,
        expires_at: str | None = None,
    ) -> SaveResult:
        """Remember ``content``; a ``custom_id`` upserts; identical live content is deduplicated."""
        ...

    def update(
        self, content: str, *, space: str, id: str | None = None, custom_id: str | None = None
    ) -> UpdateResult:
        """Replace a live memory's content, keeping the old version as history."""
        ...

    def forget(
        self,
        *,
        space: str,
        id: str | None = None,
        content: str | None = None,
        query: str | None = None,
    ) -> ForgetResult:
        """Tombstone a memory by id, by exact text, or by closest match (cosine >= 0.85)."""
        ...

    def profile(self, *, space: str, limit: int = 10) -> Profile:
        """Durable facts and recent context of a space, for session-start."""
        ...

    def term_frequencies(self, query: str, *, space: str) -> tuple[list[tuple[str, int]], int]:
        """``([(term, live memories holding it), ...], live memories)`` for the query's
        content terms, for the injection gate (:mod:`bli_memory.core.memory.term_evidence`)."""
        ...

    def history(self, id: str) -> list[Memory]:
        """Every version of the memory ``id`` belongs to, newest first, tombstones included."""
        ...

    def enqueue_extract(
        self, text: str, *, space: str, source: str, session_id: str | None = None,
        job_id: str | None = None,
    ) -> str:
        """Queue raw text for extraction; returns the job id.

        ``job_id`` (a UUID the caller chose, :mod:`bli_memory.core.extraction.job_ids`) makes the
        call idempotent: a job of that id is queued once, and a retry answers the id.
        """
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...
