"""The embedded memory engine: the memory tool contract over a local SQLite store.

This module is also the plugin that offers it as the default backend
(:func:`memory_backend`). Its module-level imports are cheap; numpy, the store and
the embedding model load only when a backend is built.

Retrieval ("by meaning, by keyword and by recency at once"): the store answers the
``vector``, ``keyword_all`` and ``keyword_any`` channels
(:mod:`bli_memory.core.embedded.search_source`: exact cosine over the cached vectors,
FTS5 bm25, or the side indexes of a long-lived process); fusion, the ``context``
channel, recency, the tail drop and conflict flags are the shared retrieval of every
store (:mod:`bli_memory.core.memory.retrieval`). The rules of save, update, forget and
profile are shared likewise (:mod:`bli_memory.core.memory.retrieval_writes`).

Every hit carries its true cosine similarity (every row has a vector); the fused
score orders results and is never shown as a similarity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bli_memory.core.embedded.engine_controls import EngineControls
from bli_memory.core.errors import InvalidInputError, NotFoundError
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.memory.ranking import RankingConfig
from bli_memory.core.memory.retrieval import (
    CHANNELS,
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    query_text,
)
from bli_memory.core.memory.retrieval_writes import (
    FORGET_MIN_SIMILARITY,
    check_extract_size,
    checked_content,
    content_hash,
    forget_selector,
    is_unchanged,
    require_forget_similarity,
    require_one_of_id_or_custom_id,
    stored_hash,
)
from bli_memory.core.memory.storable_text import shown_value
from bli_memory.core.memory.terms import fts_any_query, query_terms
from bli_memory.core.models import (
    ForgetResult,
    Memory,
    Profile,
    Recall,
    SaveResult,
    SearchResult,
    UpdateResult,
)

if TYPE_CHECKING:
    from bli_memory.core.embedded.store_browse import SQLiteBrowse
    from bli_memory.core.embedded.store_jobs import SQLiteJobs
    from bli_memory.core.settings import Settings

__all__ = [
    "CHANNELS",
    "FORGET_MIN_SIMILARITY",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "EmbeddedBackend",
    "memory_backend",
    "register_embedders",
]


class EmbeddedBackend(EngineControls):
    """Memory operations over one SQLite file and one embedding model.

    Args:
        store_path: The SQLite file.
        embedder: Object with ``name``, ``dimensions`` and ``embed(texts)``; default:
            the shipped all-MiniLM-L6-v2 int8 model, loaded on first use (or in the
            background with :meth:`warm_up`).
        ranking: Fusion weights (default :class:`RankingConfig`).
        keyword_index_min_rows: Live rows of a space from which the keyword side index
            answers once side indexes are on (:meth:`enable_side_indexes`).
        vector_index_min_rows: Likewise for the HNSW vector side index.

    Thread-safe: the MCP server calls it from worker threads.
    """

    # --- the contract --------------------------------------------------------------

    def search(self, query: str, *, space: str, limit: int = 10, include_profile: bool = False,
               ranking: RankingConfig | None = None) -> SearchResult:
        """Hybrid search of one space and its aliases (:meth:`MemoryEngine.search`)."""
        return self.engine.search(query, space=space, limit=limit, include_profile=include_profile,
                                  ranking=ranking)

    def recall(self, query: str, *, space: str, limit: int = 10) -> Recall:
        """The search of ``query`` and the gate's inputs (:meth:`MemoryEngine.recall`)."""
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

    def term_presence(self, query: str, *, space: str) -> tuple[list[bool], int]:
        """Which content terms of ``query`` occur in the space, and its live size.

        Returns:
            ``([present, ...], live_memories)``: one flag per term of
            :func:`~bli_memory.core.memory.terms.query_terms` (exact form or stem), for the
            injection gate (:mod:`bli_memory.core.memory.relevance`).
        """
        _, spaces = self.store.resolve_space(space)
        q = query_text(query)
        present = []
        for term in query_terms(q)[:MAX_QUERY_TERMS]:
            expr = fts_any_query([term])
            present.append(expr is not None and bool(expr) and self.store.has_match(spaces, expr))
        return present, self.store.vectors(spaces).size

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
        """Remember ``content`` in ``space``.

        Identical live content in the space is not written twice (status
        ``duplicate``); a ``custom_id`` that names a live row replaces it, keeping the
        old row as history (status ``updated``). The row lands in the canonical space
        when ``space`` is an alias, and :attr:`SaveResult.space` says so.

        Raises:
            InvalidInputError: empty or oversized content, metadata that is not a JSON
                object, or a ``customId``, ``sessionId`` or ``source`` over
                :data:`~bli_memory.core.memory.records.MAX_KEY_CHARS` characters.
        """
        from bli_memory.core.memory.stored_secrets import checked_save

        got = checked_save(content, space=space, metadata=metadata, custom_id=custom_id, source=source,
                           session_id=session_id, expires_at=expires_at)
        canonical, spaces = self.store.resolve_space(space)
        status, memory, previous = self.store.save(
            got.text, self._embed_one(got.text), space=canonical, spaces=spaces, custom_id=got.custom_id,
            metadata=got.metadata, source=got.source, session_id=got.session_id, expires_at=got.expires_at,
        )
        return SaveResult(memory=memory, space=memory.space, status=status, previous=previous,  # type: ignore[arg-type]
                          masked=got.masked)

    def update(
        self, content: str, *, space: str, id: str | None = None, custom_id: str | None = None,
        source: str | None = None,
    ) -> UpdateResult:
        """Replace a live memory (by ``id`` or ``custom_id``) with new content.

        The old row becomes ``superseded`` history and the new version points at it. The
        new version's ``source`` is ``source`` when given (where the edit came from), else
        the old version's.

        Raises:
            InvalidInputError: neither or both of id/custom_id, or empty content.
            NotFoundError: no live memory matches in this space.
        """
        require_one_of_id_or_custom_id(id, custom_id)
        text, in_content = checked_content(content)
        _, spaces = self.store.resolve_space(space)
        named = None
        if id is not None:
            previous, named = self._live_in_space(id, spaces)
        else:
            found = self.store.find_live(spaces, custom_id=custom_id)
            if found is None:
                raise NotFoundError(f"no live memory with customId {shown_value(custom_id)} "
                                    f"in space {spaces[0]}")
            previous = found
        if is_unchanged(previous.content, text):
            return UpdateResult(memory=previous, previous=previous, status="unchanged", named=named,
                                masked=in_content)
        from dataclasses import replace

        from bli_memory.core.memory.stored_secrets import checked_source, with_masked_labels

        labels, in_labels = with_masked_labels(previous)
        if source:
            labels = replace(labels, source=checked_source(source))
        memory = self.store.supersede(labels, text, self._embed_one(text))
        return UpdateResult(memory=memory, previous=previous, named=named, masked=in_content + in_labels)

    def forget(
        self,
        *,
        space: str,
        id: str | None = None,
        content: str | None = None,
        query: str | None = None,
    ) -> ForgetResult:
        """Tombstone one memory, chosen by id, by exact text or by closest match.

        A match by ``query`` must reach cosine similarity 0.85
        (:data:`FORGET_MIN_SIMILARITY`); a weaker best match is refused with its score.

        Raises:
            InvalidInputError: not exactly one selector.
            NotFoundError: nothing matches (or nothing close enough).
        """
        selector = forget_selector(id, content, query)
        _, spaces = self.store.resolve_space(space)
        if selector == "id" and id is not None:
            memory, named = self._live_in_space(id.strip(), spaces)
            return ForgetResult(memory=self.store.forget(memory), matched_by="id", named=named)
        if selector == "content" and content is not None:
            found = self.store.find_live(spaces, sha256=stored_hash(content))
            if found is None:
                raise NotFoundError(f"no live memory with exactly that text in space {spaces[0]}")
            return ForgetResult(memory=self.store.forget(found), matched_by="content")
        assert query is not None
        vs = self.store.vectors(spaces)
        if not vs.size:
            raise NotFoundError(f"space {spaces[0]} holds no memories")
        import numpy as np

        sims = vs.similarities(self._embed_one(query.strip()))
        order = np.argsort(-sims)[:20]
        rows = self.store.rows_by_seq(int(vs.seqs[i]) for i in order)  # live, unexpired only
        best = next((int(i) for i in order if int(vs.seqs[i]) in rows), None)
        similarity = float(sims[best]) if best is not None else -1.0
        require_forget_similarity(similarity)
        assert best is not None
        memory = rows[int(vs.seqs[best])]
        return ForgetResult(
            memory=self.store.forget(memory), matched_by="query", similarity=round(similarity, 4)
        )

    def forgotten_by(self, *, space: str, since: float, content: str | None = None,
                     query: str | None = None) -> ForgetResult | None:
        """The forget by ``content`` or ``query`` in ``space`` done at or after the epoch
        seconds ``since``, as it was answered, or None.

        For a forget run again because its answer was lost (the daemon died between its
        commit and its answer, core/mcp/relay.py). Among the newest 20 memories of the
        space forgotten at or after ``since``: the one with exactly ``content``, or the
        one closest to ``query`` at :data:`FORGET_MIN_SIMILARITY` or more, re-embedded (a
        forget drops a row's vector). No slack before ``since``: the relay takes it on
        this machine's clock before the daemon could read the request, and the stored
        time (``forgotten_at``, microseconds) is read from the same clock after, so a
        forget done earlier (an earlier request's, answered before this one was sent,
        however close to this one's query) is not this request's; one that another
        request commits after this one was sent (sent without waiting for answers, or
        from another session) can still be. None when there is none: the caller runs
        the forget.
        """
        from datetime import UTC, datetime

        from bli_memory.core.embedded.store_base import iso

        _, spaces = self.store.resolve_space(space)
        gone = self.store.forgotten_since(spaces, iso(datetime.fromtimestamp(since, UTC)))
        if content is not None:
            digest = stored_hash(content)
            found = next((m for m in gone if content_hash(m.content) == digest), None)
            return None if found is None else ForgetResult(memory=found, matched_by="content")
        if query is None or not gone:
            return None
        wanted = self._embed_one(query.strip())
        sims = [float(v @ wanted) for v in self.embedder.embed([m.content for m in gone])]
        best = max(range(len(gone)), key=sims.__getitem__)
        if sims[best] < FORGET_MIN_SIMILARITY:
            return None
        return ForgetResult(memory=gone[best], matched_by="query", similarity=round(sims[best], 4))

    def tombstones(self, space: str, *, limit: int | None = 500) -> list[str]:
        """Forgotten contents of ``space`` and its aliases, newest first (``limit`` None: all).

        Automatic capture does not write them again (:mod:`bli_memory.core.extraction.tombstones`).
        """
        _, spaces = self.store.resolve_space(space)
        return self.store.forgotten(spaces, limit=limit)

    def purge_marks(self, space: str, *, limit: int | None = 500) -> list[dict[str, Any]]:
        """Purge marks of ``space`` and its aliases, newest first (``limit`` None: all): what a
        purge leaves so capture does not write it again (:mod:`bli_memory.core.extraction.tombstones`)."""
        _, spaces = self.store.resolve_space(space)
        return self.store.purge_marks(spaces, limit=limit)

    def history(self, id: str) -> list[Memory]:
        """Every version of the memory ``id`` belongs to, newest first.

        Raises:
            NotFoundError: unknown id.
        """
        return self.store.history(id)

    def purge(self, id: str) -> int:
        """Erase a memory and all its versions from the file (secrets saved by mistake)."""
        return self.store.purge(id)

    def enqueue_extract(
        self, text: str, *, space: str, source: str, session_id: str | None = None,
        job_id: str | None = None,
    ) -> str:
        """Queue raw text for extraction as one durable ``memory_extract_jobs`` row.

        The text should already be redacted (the stop hook and ``save_memory`` do
        it; the worker redacts again). Blocks we injected earlier are removed here, so
        recalled memories are never extracted again.

        Args:
            job_id: The caller's id for the job (a UUID): queued once, however often
                the call is retried.

        Returns:
            The job id.

        Raises:
            InvalidInputError: nothing left to extract, more than
                :data:`~bli_memory.core.memory.retrieval_writes.MAX_EXTRACT_CHARS`
                characters, a ``sessionId`` or ``source`` over
                :data:`~bli_memory.core.memory.records.MAX_KEY_CHARS` characters, or a
                container tag that looks like a secret
                (:func:`~bli_memory.core.memory.stored_secrets.check_container_tag`).
        """
        from bli_memory.core.memory.injected_tags import strip_injected
        from bli_memory.core.memory.records import key_problem
        from bli_memory.core.memory.stored_secrets import checked_turn

        problem = key_problem({"sessionId": session_id, "source": source})
        if problem:  # the job's saves would carry them
            raise InvalidInputError(f"{problem}; nothing was queued")
        _, source, session_id, _ = checked_turn("", space=space, source=source, session_id=session_id,
                                                mask_text=False)  # labels masked, a secret tag refused

        body = strip_injected(text or "").strip()
        if not body:
            raise InvalidInputError("nothing to extract: the text is empty")
        check_extract_size(body)
        canonical, _ = self.store.resolve_space(space)
        from bli_memory.core.extraction.job_ids import checked_job_id

        return self.store.jobs.enqueue_job(body, space=canonical, source=source, session_id=session_id,
                                      job_id=checked_job_id(job_id))

    #: The stop hook queues extract jobs in the file itself; nothing is spooled.
    spool_captures = False

    def capture(self, text: str, *, space: str, source: str, session_id: str | None = None,
                record: bool = False) -> dict[str, Any]:
        """The stop hook's capture, kept in the file at once (:func:`capture_here`)."""
        from bli_memory.core.memory.job_queue import capture_here

        return capture_here(self, text, space=space, source=source, session_id=session_id, record=record)

    def ship_spool(self) -> None:
        """Nothing is spooled for the embedded store."""

    @property
    def browse(self) -> SQLiteBrowse:
        """The browser's reads (every space of the file is the person's)."""
        return self.store.browse

    @property
    def job_queue(self) -> SQLiteJobs:
        """The file's extract-job queue."""
        return self.store.jobs


@hookimpl(trylast=True)
def memory_backend(settings: Settings, plugin_manager: Any) -> EmbeddedBackend | None:
    """Offer the embedded engine; the remote client plugin answers first when configured.

    A ``BLI_MEMORY_EMBEDDER`` other than the shipped model is looked up among the
    ``register_embedders`` plugins of ``plugin_manager``, the caller's manager.
    """
    from bli_memory.core.memory import embeddings
    from bli_memory.core.memory.embedder import load_embedder

    embedder = (None if settings.embedder == embeddings.MODEL_NAME
                else load_embedder(settings.embedder, plugin_manager))
    return EmbeddedBackend(settings.store_path, embedder=embedder,
                           keyword_index_min_rows=settings.keyword_index_min_rows,
                           vector_index_min_rows=settings.vector_index_min_rows)


@hookimpl
def register_embedders(register: Any) -> None:
    """Register the shipped model (all-MiniLM-L6-v2, int8 ONNX) and the installable ones
    (``mpnet``, from ``<data dir>/models``), each loaded on first use."""
    from bli_memory.core import paths
    from bli_memory.core.memory import embedder_models, embeddings

    register(embeddings.MODEL_NAME, embeddings.get_embedder)
    for short in embedder_models.INSTALLABLE:
        register(short, lambda s=short: embedder_models.lazy_installed(s, paths.data_dir()))
