"""The ``BrowseReads`` protocol: what the memory browser reads of a store.

The browser (:mod:`bli_memory.core.ui`) lists a person's spaces with their counts, pages
through a space's live memories and opens one memory with its versions. Each store answers
these reads from its own tables, as the person sees them: the embedded store
(:class:`~bli_memory.core.embedded.store.SQLiteStore`: every space of the file is the
person's) and the team store (:class:`~bli_memory.core.team.postgres.browse.PostgresBrowse`: own
spaces and those shared with the person). A backend hands them out as
:attr:`~bli_memory.core.memory.backend.MemoryBackend.browse`; the browser never runs SQL.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from bli_memory.core.models import Memory

__all__ = ["BrowseReads"]


class BrowseReads(Protocol):
    """A person's browsing reads of one store."""

    def resolve_space(self, tag: str) -> tuple[str, tuple[str, ...]]:
        """``(canonical tag, every tag naming the space)``."""
        ...

    def space_counts(self, *, limit: int = 500) -> list[tuple[str, dict[str, int]]]:
        """``[(tag, {"active": n, "superseded": n, "forgotten": n}), ...]`` of every space the
        person reads, most live memories first, at most ``limit``."""
        ...

    def owners(self, tag: str) -> list[str]:
        """Other people whose memories of ``tag`` the person reads (after :meth:`space_counts`;
        ``[]`` on a store that holds one person's memories)."""
        ...

    def aliases(self) -> dict[str, list[str]]:
        """``{canonical tag: [alias, ...]}`` of the spaces the person reads."""
        ...

    def count_by_state(self, spaces: Sequence[str]) -> dict[str, int]:
        """Memories per state of one space (its canonical tag and aliases)."""
        ...

    def page_live(self, spaces: Sequence[str], *, before_seq: int | None = None,
                  limit: int = 25) -> list[tuple[int, Memory]]:
        """One page of live memories, newest first: ``[(seq, memory), ...]``; the last seq is
        the next page's ``before_seq`` (keyset paging: a page costs the same at any size)."""
        ...

    def get(self, id: str) -> Memory | None:
        """Exactly the version ``id`` names, or None (unknown, purged, or not the person's to read)."""
        ...

    def history(self, id: str) -> list[Memory]:
        """Every version of the memory ``id`` belongs to, newest first.

        Raises:
            NotFoundError: unknown id.
        """
        ...

    def writable(self, memory: Memory) -> bool:
        """Whether the person may change ``memory`` (False in a space shared read-only)."""
        ...
