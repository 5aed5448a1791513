"""The memory engine: the memory contract's rules, written once for every store.

Search, recall, the profile, the term counts, the space background, save, update and forget
are the same rules on every store; only where the rows come from differs. A store answers
one narrow protocol, :class:`MemoryStore`: read sessions (:class:`ReadSession`: the
retrieval channels, the newest rows, term counts, the sum of the vectors) and write sessions
(:class:`~bli_memory.core.memory.engine_writes.WriteSession`: find, insert and retire rows
in one transaction). :class:`MemoryEngine` does the rest, once:

- the query's text and the limit (:func:`~bli_memory.core.memory.retrieval.query_text`,
  :func:`~bli_memory.core.memory.retrieval.clamped_limit`), the ranking
  (:func:`~bli_memory.core.memory.retrieval.rank`) and the answer;
- the profile rule (:data:`~bli_memory.core.memory.retrieval_writes.PROFILE_KINDS`);
- the injection gate's inputs (:func:`~bli_memory.core.memory.recall.gather`) and the one
  cache of a space's background;
- validation, redaction, dedup, the upsert, versions and the forget policy
  (:mod:`bli_memory.core.memory.engine_writes`).

The embedded store (:class:`bli_memory.core.embedded.engine.EmbeddedBackend`) and the team
store (:class:`bli_memory.core.team.postgres.store.PostgresBackend`) each hold an engine over
their sessions. Standard library only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from bli_memory.core.memory.engine_writes import EngineWrites, MemoryWrites
from bli_memory.core.memory.retrieval import MAX_QUERY_TERMS, ChannelSource, clamped_limit, query_text, rank
from bli_memory.core.memory.retrieval_writes import PROFILE_KINDS, profile_limit
from bli_memory.core.models import Memory, Profile, Recall, SearchResult

if TYPE_CHECKING:
    from bli_memory.core.memory.ranking import RankingConfig

__all__ = ["BACKGROUND_TTL_S", "MemoryEngine", "MemoryReads", "MemoryStore", "ReadSession"]

#: Seconds a space's background is kept when the store cannot say whether the space
#: changed (:meth:`ReadSession.generation` is None: the team store). A space's kind
#: changes slowly, and the measure reads every vector of the space.
BACKGROUND_TTL_S = 300.0


class ReadSession(Protocol):
    """One read of one space, as the person sees it (one connection on Postgres)."""

    canonical: str
    spaces: tuple[str, ...]

    def channels(self, query: str, embed: Callable[[str], Any]) -> ChannelSource:
        """The retrieval channels of ``query`` over the space; ``embed`` gives the query's
        unit vector (called at most once)."""
        ...

    def newest(self, *, kinds: Sequence[str] | None, limit: int) -> list[Memory]:
        """The newest live, unexpired memories, of these metadata kinds (any letter case)
        when ``kinds`` is given."""
        ...

    def term_counts(self, terms: Sequence[str]) -> tuple[list[int], int]:
        """``([live memories holding each term (exact form or stem)], live memories)``."""
        ...

    def vector_sum(self) -> tuple[int, float]:
        """``(n, |sum of the unit vectors|^2)`` over the live memories with a vector."""
        ...

    def generation(self) -> Hashable | None:
        """A key that changes whenever the space's rows change, or None when the store
        cannot tell cheaply."""
        ...

    def scope(self) -> Hashable:
        """What this session sees, as a cache key (the spaces, and on the team store the
        owners read)."""
        ...


class MemoryReads(Protocol):
    """A store's reads: one :class:`ReadSession` per space read."""

    def reading(self, tag: str) -> AbstractContextManager[ReadSession]:
        """A session on the space ``tag`` names (an alias resolves to its canonical space).

        Raises:
            BliMemoryError: the store cannot answer (a closed reason).
        """
        ...


class MemoryStore(MemoryReads, MemoryWrites, Protocol):
    """The narrow protocol a store implements for the engine: read sessions, write
    sessions (:class:`~bli_memory.core.memory.engine_writes.WriteSession`) and the version
    chain of an id. A new store plugs in here (``docs/architecture.md``)."""

    def history(self, id: str) -> list[Memory]:
        """Every version of the memory ``id`` belongs to, newest first, tombstones included.

        Raises:
            NotFoundError: no row has this id, or the person may not read it (the same
                answer, so nothing leaks).
        """
        ...


class MemoryEngine(EngineWrites):
    """The memory contract's rules over one store's :class:`MemoryStore`: the reading half
    here, the writing half in :class:`~bli_memory.core.memory.engine_writes.EngineWrites`.

    Args:
        store: The store's read and write sessions.
        embed: ``(text) -> unit vector`` of the store's embedding model.
        embed_many: ``(texts) -> unit vectors`` of the same model.
        ranking: Fusion weights (:class:`~bli_memory.core.memory.ranking.RankingConfig`).
        backgrounds: The background cache, when it outlives this engine (the team store
            makes an engine per request's person handle, and shares one cache); default
            the engine's own.

    Thread-safe when ``store`` is.
    """

    def __init__(self, store: MemoryStore, embed: Callable[[str], Any], ranking: RankingConfig, *,
                 embed_many: Callable[[Sequence[str]], Any],
                 backgrounds: dict[Hashable, Any] | None = None) -> None:
        super().__init__(store, embed, embed_many)
        self._reads = store
        self._store = store
        self.ranking = ranking
        self._backgrounds: dict[Hashable, Any] = {} if backgrounds is None else backgrounds
        self._lock = threading.Lock()

    def search(self, query: str, *, space: str, limit: int = 10, include_profile: bool = False,
               ranking: RankingConfig | None = None) -> SearchResult:
        """Hybrid search of one space and its aliases (the contract's ``search``).

        Args:
            query: Free text; empty or whitespace gives zero hits, not everything.
            space: Container tag.
            limit: Hits to return, clamped to 1..100.
            include_profile: Also return the space's :class:`Profile` (10 of each).
            ranking: Override the fusion weights (benchmarks, ablations).
        """
        limit = clamped_limit(limit)
        q = query_text(query)
        with self._reads.reading(space) as r:
            profile = self._profile(r, 10) if include_profile else None
            if not q:
                return SearchResult(query=query or "", space=r.canonical, spaces=r.spaces, profile=profile)
            ranked = rank(r.channels(q, self._embed), q, limit=limit, config=ranking or self.ranking)
        return SearchResult(query=query, space=r.canonical, spaces=r.spaces, hits=ranked.hits,
                            profile=profile, conflicts=ranked.conflicts)

    @staticmethod
    def _profile(r: ReadSession, limit: int) -> Profile:
        facts = r.newest(kinds=sorted(PROFILE_KINDS), limit=limit)
        return Profile(space=r.canonical, facts=tuple(facts), recent=tuple(r.newest(kinds=None, limit=limit)))

    def profile(self, *, space: str, limit: int = 10) -> Profile:
        """User Profile and Recent Context: live memories of the profile kinds however old,
        and the newest of any kind, newest first (:data:`PROFILE_KINDS`)."""
        with self._reads.reading(space) as r:
            return self._profile(r, profile_limit(limit))

    def term_frequencies(self, query: str, *, space: str) -> tuple[list[tuple[str, int]], int]:
        """``([(term, live memories holding it), ...], live memories)`` for the content terms
        of ``query`` (:func:`~bli_memory.core.memory.terms.query_terms`, at most
        :data:`~bli_memory.core.memory.retrieval.MAX_QUERY_TERMS`), for the injection gate."""
        from bli_memory.core.memory.terms import query_terms

        words = query_terms(query_text(query))[:MAX_QUERY_TERMS]
        with self._reads.reading(space) as r:
            counts, live = r.term_counts(words)
        return list(zip(words, counts, strict=True)), live

    def space_background(self, *, space: str) -> float | None:
        """Mean cosine similarity between two live memories of the space,
        ``(|sum|^2 - n) / (n (n - 1))``, or None below
        :data:`~bli_memory.core.memory.relevance.SMALL_SPACE` memories.

        One cache for every store: kept until the space's rows change
        (:meth:`ReadSession.generation`), or :data:`BACKGROUND_TTL_S` when the store cannot
        tell. A small space is measured again each time (it may grow past the limit).
        """
        from bli_memory.core.memory.relevance import SMALL_SPACE

        with self._reads.reading(space) as r:
            key, generation = r.scope(), r.generation()
            with self._lock:
                hit = self._backgrounds.get(key)
            if hit is not None and hit[1] == generation and (
                    generation is not None or time.monotonic() - hit[0] < BACKGROUND_TTL_S):
                kept: float | None = hit[2]
                return kept
            n, squared = r.vector_sum()
        value = None if n < SMALL_SPACE else (squared - n) / (n * (n - 1))
        if value is not None:
            with self._lock:
                if len(self._backgrounds) >= 256:
                    self._backgrounds.clear()
                self._backgrounds[key] = (time.monotonic(), generation, value)
        return value

    def list_memories(self, *, space: str, limit: int = 20) -> list[Memory]:
        """The newest live, unexpired memories of a space; ``limit`` is clamped to 1..100."""
        limit = clamped_limit(limit)
        with self._reads.reading(space) as r:
            return r.newest(kinds=None, limit=limit)

    def get_memory(self, id: str, *, include_inactive: bool = False) -> tuple[Memory, list[Memory]]:
        """One memory and its other versions, newest first.

        Args:
            id: Any version's id: without ``include_inactive`` the memory's live version is
                answered (its ``id`` differs from the one given when that named an older
                version, which is then in the history).
            include_inactive: Answer exactly the version ``id`` names, even superseded or
                forgotten, and include the superseded versions and the tombstone in the
                history.

        Raises:
            NotFoundError: unknown id, one the person may not read (the same answer), or a
                memory with no live version (forgotten, or expired) without
                ``include_inactive``.
        """
        import uuid

        from bli_memory.core.errors import NotFoundError
        from bli_memory.core.memory.expiry import is_expired
        from bli_memory.core.memory.version_ids import shown_id

        hint = " (include_inactive / --include-inactive reads old versions)"
        try:
            chain = self._store.history(id)
        except NotFoundError:
            if include_inactive:
                raise NotFoundError(f"no memory with id {shown_id(id)} (never saved here, purged, or not "
                                    "yours to read)") from None
            raise NotFoundError(f"no live memory with id {shown_id(id)}{hint}") from None
        try:
            key = str(uuid.UUID(str(id)))
        except ValueError:
            key = id
        memory = next((m for m in chain if m.id == key), None)
        if memory is not None and memory.state == "superseded" and not include_inactive \
                and chain[0].state == "active":
            memory = chain[0]  # an id names the memory: read its live head
        if memory is not None and not include_inactive and is_expired(memory.expires_at):
            memory = None  # expired: out of the live set, as update and forget see it
        if memory is None or (memory.state != "active" and not include_inactive):
            raise NotFoundError(f"no live memory with id {shown_id(id)}{hint}")
        history = [m for m in chain if m.id != memory.id]
        if not include_inactive:
            history = [m for m in history if m.state == "superseded"]
        return memory, history

    def recall(self, query: str, *, space: str, limit: int = 10) -> Recall:
        """The search of ``query`` and the gate's inputs (:func:`bli_memory.core.memory.recall.gather`)."""
        from bli_memory.core.memory.recall import gather

        return gather(self, query, space=space, limit=limit)
