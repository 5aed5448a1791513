"""The part of a store's backend that the memory engine answers, written once.

:class:`EngineBackend` gives a backend that holds a
:class:`~bli_memory.core.memory.engine.MemoryEngine` (its ``engine``) the contract's
methods the engine answers: search, recall, the profile, the gate's inputs, list, get, save,
update, forget and the retried forget. Each passes straight through, so the embedded and the
team store declare these signatures once, here. Standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bli_memory.core.memory.engine import MemoryEngine
    from bli_memory.core.memory.ranking import RankingConfig
    from bli_memory.core.models import (
        ForgetResult,
        Memory,
        Profile,
        Recall,
        SaveResult,
        SearchResult,
        UpdateResult,
    )

__all__ = ["EngineBackend"]


class EngineBackend:
    """The memory contract's methods a backend answers through its ``engine``
    (:class:`~bli_memory.core.memory.engine.MemoryEngine`): see the engine's method of the
    same name for each one's arguments, answer and errors."""

    if TYPE_CHECKING:
        @property
        def engine(self) -> MemoryEngine: ...

    def search(self, query: str, *, space: str, limit: int = 10, include_profile: bool = False,
               ranking: RankingConfig | None = None) -> SearchResult:
        """Hybrid search of one space and its aliases (:meth:`MemoryEngine.search`)."""
        return self.engine.search(query, space=space, limit=limit, include_profile=include_profile,
                                  ranking=ranking)

    def recall(self, query: str, *, space: str, limit: int = 10) -> Recall:
        """The search of ``query`` and the gate's inputs in one call (:meth:`MemoryEngine.recall`)."""
        return self.engine.recall(query, space=space, limit=limit)

    def profile(self, *, space: str, limit: int = 10) -> Profile:
        """User Profile and Recent Context (:meth:`MemoryEngine.profile`)."""
        return self.engine.profile(space=space, limit=limit)

    def term_frequencies(self, query: str, *, space: str) -> tuple[list[tuple[str, int]], int]:
        """Live memories holding each content term of ``query`` (:meth:`MemoryEngine.term_frequencies`)."""
        return self.engine.term_frequencies(query, space=space)

    def space_background(self, *, space: str) -> float | None:
        """Mean cosine between two live memories of the space (:meth:`MemoryEngine.space_background`)."""
        return self.engine.space_background(space=space)

    def list_memories(self, *, space: str, limit: int = 20) -> list[Memory]:
        """Newest live memories of a space (:meth:`MemoryEngine.list_memories`)."""
        return self.engine.list_memories(space=space, limit=limit)

    def get_memory(self, id: str, *, include_inactive: bool = False) -> tuple[Memory, list[Memory]]:
        """One memory and its version history (:meth:`MemoryEngine.get_memory`)."""
        return self.engine.get_memory(id, include_inactive=include_inactive)

    def save(self, content: str, *, space: str, custom_id: str | None = None,
             metadata: dict[str, Any] | None = None, source: str = "mcp", session_id: str | None = None,
             expires_at: str | None = None) -> SaveResult:
        """Remember ``content`` in ``space`` (:meth:`MemoryEngine.save`)."""
        return self.engine.save(content, space=space, custom_id=custom_id, metadata=metadata, source=source,
                                session_id=session_id, expires_at=expires_at)

    def update(self, content: str, *, space: str, id: str | None = None, custom_id: str | None = None,
               source: str | None = None) -> UpdateResult:
        """Replace a live memory, keeping the old one as history (:meth:`MemoryEngine.update`)."""
        return self.engine.update(content, space=space, id=id, custom_id=custom_id, source=source)

    def forget(self, *, space: str, id: str | None = None, content: str | None = None,
               query: str | None = None) -> ForgetResult:
        """Tombstone one memory by id, exact text or closest match (:meth:`MemoryEngine.forget`)."""
        return self.engine.forget(space=space, id=id, content=content, query=query)

    def forgotten_by(self, *, space: str, since: float, content: str | None = None,
                     query: str | None = None) -> ForgetResult | None:
        """The forget a lost answer was, or None (:meth:`MemoryEngine.forgotten_by`)."""
        return self.engine.forgotten_by(space=space, since=since, content=content, query=query)
