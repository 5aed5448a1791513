"""One prompt's recall: the search and the injection gate's inputs, gathered in one call.

The prompt hook needs three answers for a prompt: the search, the document frequency of
the prompt's terms (:mod:`bli_memory.core.memory.term_evidence`) and the space's background
(:mod:`bli_memory.core.memory.relevance`). The stores that run in this process (embedded
SQLite, the Postgres store inside the service) gather them here; the service's client asks
for all three in one request (``POST /api/memory/recall``), so a prompt on the team store
costs one round trip inside the hook's 2 s budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from bli_memory.core.models import Recall

if TYPE_CHECKING:
    from bli_memory.core.models import SearchResult

__all__ = ["GateSource", "gather"]


class GateSource(Protocol):
    """What :func:`gather` reads: the three reads of
    :class:`~bli_memory.core.memory.backend.MemoryBackend` the gate weighs."""

    def search(self, query: str, *, space: str, limit: int = 10,
               include_profile: bool = False) -> SearchResult:
        """Hybrid search (see the memory contract)."""
        ...

    def term_frequencies(self, query: str, *, space: str) -> tuple[list[tuple[str, int]], int]:
        """``([(term, live memories holding it), ...], live memories)``."""
        ...

    def space_background(self, *, space: str) -> float | None:
        """Mean cosine between two live memories of the space, or None."""
        ...


def gather(source: GateSource, query: str, *, space: str, limit: int) -> Recall:
    """Search ``space`` for ``query`` and, when anything is found, read the gate's inputs.

    Args:
        source: The store's reads.
        query: The prompt (already cut to what is searched).
        space: Container tag.
        limit: Hits to return, 1..100.

    Returns:
        The :class:`~bli_memory.core.models.Recall`; term counts and background stay empty
        when the search finds nothing (the gate then decides on no hits, and the two reads
        are skipped).
    """
    result = source.search(query, space=space, limit=limit)
    if not result.hits:
        return Recall(result=result)
    counts, live = source.term_frequencies(query, space=space)
    return Recall(result=result, term_counts=tuple(counts), live=live,
                  background=source.space_background(space=space))
