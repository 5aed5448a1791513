"""The embedded memory engine: the memory tool contract over a local SQLite store.

This module is also the plugin that offers it as the default backend
(:func:`memory_backend`). Its module-level imports are cheap; numpy, the store and
the embedding model load only when a backend is built.

Retrieval ("by meaning, by keyword and by recency at once"): the store answers the
``vector``, ``keyword_all`` and ``keyword_any`` channels
(:mod:`bli_memory.core.embedded.search_source`: exact cosine over the cached vectors,
FTS5 bm25, or the side indexes of a long-lived process); fusion, the ``context``
channel, recency, the tail drop and conflict flags are the shared retrieval of every
store (:mod:`bli_memory.core.memory.retrieval`). Every rule of the contract is the memory
engine's (:mod:`bli_memory.core.memory.engine`), over this file's read and write sessions
(:mod:`bli_memory.core.embedded.reads`, :mod:`bli_memory.core.embedded.store_writes`).

Every hit carries its true cosine similarity (every row has a vector); the fused
score orders results and is never shown as a similarity.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from bli_memory.core.embedded.engine_base import EngineBase
from bli_memory.core.errors import InvalidInputError, ModelMismatchError
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.memory.documents import DOCUMENT_KINDS
from bli_memory.core.memory.engine_backend import EngineBackend
from bli_memory.core.memory.records import record_problem, records_problem, usable_vector
from bli_memory.core.models import (
    Memory,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bli_memory.core.documents.index_store import DocumentIndex
    from bli_memory.core.embedded.store_browse import SQLiteBrowse
    from bli_memory.core.embedded.store_jobs import SQLiteJobs
    from bli_memory.core.memory.documents import DocumentHit, DocumentsState
    from bli_memory.core.settings import Settings

__all__ = ["DOCUMENTS_WAIT_S", "EmbeddedBackend", "memory_backend", "register_embedders"]

#: Seconds a search or a session start waits for the documents index's lock before it goes
#: on without documents (an index run writes in short transactions; a hook's deadline is
#: a few seconds).
DOCUMENTS_WAIT_S = 1.0


class EmbeddedBackend(EngineBase, EngineBackend):
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

    Search, recall, the profile, list, get, save, update and forget are the memory engine's
    (:class:`~bli_memory.core.memory.engine_backend.EngineBackend`); the controls below are
    the file's. Thread-safe: the MCP server calls it from worker threads.
    """

    # --- the contract --------------------------------------------------------------

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

    def enqueue_extract(self, text: str, *, space: str, source: str, session_id: str | None = None,
                        job_id: str | None = None) -> str:
        """Queue text for extraction as one durable ``memory_extract_jobs`` row of the
        canonical space, checked as every store checks it (:meth:`MemoryEngine.checked_extract`);
        a ``job_id`` of the caller's (a UUID) is queued once, however often the call is retried.

        Returns:
            The job id.
        """
        job = self.engine.checked_extract(text, space=space, source=source, session_id=session_id,
                                          job_id=job_id)
        canonical, _ = self.store.resolve_space(space)
        return self.store.jobs.enqueue_job(job.text, space=canonical, source=job.source,
                                           session_id=job.session_id, job_id=job.job_id)

    # --- controls: inspection, audit, export, import, recordings ---------------------

    def info(self, *, space: str) -> dict[str, Any]:
        """The space in use, its aliases, counts by state, the store and the model."""
        canonical, spaces = self.store.resolve_space(space)
        info = {
            "space": canonical,
            "aliases": [t for t in spaces if t != canonical],
            "counts": self.store.count_by_state(spaces),
            "recordings": self.store.recordings.recording_count(spaces),
            "store": {"kind": "embedded", "path": str(self.store_path)},
            "embeddingModel": self._model_name,
            "extractJobs": self.store.jobs.job_counts(),
        }
        recorded = self.store.meta().get("embedding_model")
        try:
            self.store.require_model()
        except ModelMismatchError:  # searches and saves refuse it until it is re-embedded
            info["storeEmbeddingModel"] = recorded
            info["reembed"] = "bli-memory-mcp memory reembed"
        moving = self.store.vectors_by_model(spaces)
        moving.pop(recorded or self._model_name, None)
        if moving:
            # A reembed stopped part way: vector search serves only the rows still of the
            # store's model (the others by keyword) until a rerun finishes the move.
            info["reembedUnfinished"] = moving
        return info

    def audit(self, *, repair: bool = False) -> dict[str, Any]:
        """Integrity of the store's derived indexes; with ``repair`` rebuild them from the rows."""
        report = self.store.integrity.audit(repair=repair)
        if repair and report["needs_embedding"]:
            for seq in report["needs_embedding"]:
                self.store.integrity.set_vector(seq, self._embed_one(self.store.integrity.content_of(seq)))
            report["repaired"] = True
        if repair:
            after = self.store.integrity.audit(repair=False)
            report["after"] = {k: after[k] for k in ("ok", "missing_keyword", "stale_keyword",
                                                     "missing_vector", "wrong_model")}
        report.pop("needs_embedding", None)
        return report

    def export(self, *, space: str | None = None) -> Any:
        """Iterator of JSON-ready rows (all versions); every space when ``space`` is None."""
        spaces = self.store.resolve_space(space)[1] if space else None
        return self.store.transfer.export_rows(spaces)

    def import_records(self, records: list[dict[str, Any]]) -> dict[str, int]:
        """Import exported rows exactly; rows without a usable vector are re-embedded.

        Every record is checked first; one bad record means nothing is imported. Secrets
        in every version's content and metadata are masked as a save masks them
        (:func:`~bli_memory.core.memory.stored_secrets.masked_records`). A live record
        that restates a memory forgotten or purged in its space is not brought back, nor
        are the older versions it replaced
        (:func:`~bli_memory.core.extraction.forgotten_imports.forgotten_records`).

        Returns:
            ``{"imported": n, "skipped": n, "forgotten": n, "masked": n}``: ``skipped``
            counts the records already present, ``forgotten`` those left out as
            forgotten, ``masked`` the secrets masked in the records imported.

        Raises:
            InvalidInputError: naming the first bad record (1-based) and what is wrong.
        """
        from bli_memory.core.extraction.forgotten_imports import forgotten_records
        from bli_memory.core.memory.stored_secrets import masked_records

        for n, record in enumerate(records, 1):
            problem = record_problem(record)
            if problem:
                raise InvalidInputError(f"record {n}: {problem}; nothing was imported")
        records, masked = masked_records(records)
        from bli_memory.core.memory.import_links import supersede_cycle

        found = records_problem(records)
        present = {r["id"] for r in records if self.store.get(r["id"]) is not None}
        left_out = set() if found else forgotten_records(
            self, records, (i for i, r in enumerate(records) if r["id"] not in present))
        found = found or self._store_problem(records, left_out) or supersede_cycle(
            records, lambda i: (m.supersedes if (m := self.store.get(i)) is not None else None))
        if found:
            raise InvalidInputError(f"record {found[0]}: {found[1]}; nothing was imported")
        writing = [r for i, r in enumerate(records) if i not in left_out]
        vectors: dict[str, Any] = {}
        for r in writing:
            if r["id"] in present:
                continue
            vector = usable_vector(r, model=self._model_name, dimensions=self._dimensions)
            if vector is None and (r.get("state") or "active") == "active":
                vector = self._embed_one(r["content"])
            if vector is not None:
                vectors[r["id"]] = vector
        res = self.store.transfer.import_rows(writing, vectors)
        kept = sum(m for i, (r, m) in enumerate(zip(records, masked, strict=True))
                   if r["id"] not in present and i not in left_out)
        return {**res, "forgotten": len(left_out), "masked": kept}

    def _store_problem(self, records: list[dict[str, Any]], left_out: set[int]) -> tuple[int, str] | None:
        """What makes records clash with this store: a link to a row that is not there,
        or a customId already live in the space. Records already present are skipped,
        and so are those ``left_out`` as forgotten."""
        in_file = {uuid.UUID(r["id"]) for r in records}
        for n, rec in enumerate(records, 1):
            if n - 1 in left_out or self.store.get(rec["id"]) is not None:
                continue  # not written: left out as forgotten, or already present
            target = rec.get("supersedes")
            if target is not None and uuid.UUID(target) not in in_file:
                prev = self.store.get(target)
                if prev is None or prev.space != rec["space"]:
                    return n, f"supersedes {target} is neither a row of space {rec['space']} nor in this file"
            if (rec.get("state") or "active") == "active" and rec.get("customId") is not None:
                live = self.store.find_live((rec["space"],), custom_id=rec["customId"])
                if live is not None:
                    return n, f"customId {rec['customId']!r} is already live in space {rec['space']}"
        return None

    def record_turn(self, text: str, *, space: str, source: str, session_id: str | None = None) -> str:
        """Keep one recorded exchange, capture-only, its secrets and labels masked
        (:func:`~bli_memory.core.memory.stored_secrets.checked_turn`); returns its id."""
        from bli_memory.core.memory.stored_secrets import checked_turn

        text, source, session_id, _ = checked_turn(text, space=space, source=source, session_id=session_id)
        canonical, _ = self.store.resolve_space(space)
        return self.store.recordings.add_recording(text, space=canonical, source=source,
                                                   session_id=session_id)

    def recordings(self, *, space: str, limit: int = 20) -> list[dict[str, Any]]:
        """Recorded turns of a space and its aliases, newest first (``limit`` 1..100).

        Returns:
            ``[{"id", "space", "sessionId", "source", "createdAt", "text"}, ...]``.
        """
        _, spaces = self.store.resolve_space(space)
        return self.store.recordings.list_recordings(spaces, limit=max(1, min(int(limit), 100)))

    def clear_recordings(self, *, space: str) -> int:
        """Erase every recorded turn of a space and its aliases; returns how many."""
        _, spaces = self.store.resolve_space(space)
        return self.store.recordings.delete_recordings(spaces)

    # --- the project's documents (core/documents), beside the memories ------------------

    def documents_index(self, *, create: bool = False) -> DocumentIndex | None:
        """The documents index beside the store (``documents.sqlite3``), opened once and
        again after ``documents delete`` removed or replaced the file; None when there is
        none and ``create`` is false (a search never creates one)."""
        path = self.store_path.with_name("documents.sqlite3")
        with self._store_lock:
            if self._documents is not None and not self._documents.is_current():
                self._documents.close()
                self._documents = None
            if self._documents is None and (create or path.exists()):
                from bli_memory.core.documents.index_store import DocumentIndex

                self._documents = DocumentIndex(path, timeout=DOCUMENTS_WAIT_S)
            return self._documents

    def search_documents(self, query: str, *, space: str, limit: int = 5,
                         kinds: Sequence[str] = DOCUMENT_KINDS) -> list[DocumentHit]:
        """The space's documents and commit messages matching ``query``
        (:func:`~bli_memory.core.documents.search.search_documents`), each linked to its file
        and lines on the repository's web host, else on this machine; ``[]`` with no index."""
        from bli_memory.core.documents.search import link_for, search_documents

        index = self.documents_index()
        if index is None:
            return []
        root, web, revision = index.links(space)
        return search_documents(index, query, space=space, embed=self._embed_one, limit=limit, kinds=kinds,
                                links=lambda c: link_for(c, root=root, web=web, revision=revision))

    def document_status(self, space: str) -> DocumentsState | None:
        """What the space's documents index holds, with the run going on it if it is this
        space's (:func:`~bli_memory.core.documents.runs.current_run`), or None with no index."""
        import dataclasses

        from bli_memory.core.documents.runs import current_run

        index = self.documents_index()
        if index is None:
            return None
        running = current_run(index.path)
        state = index.state(space)
        return state if running is None or running.space != space else dataclasses.replace(
            state, indexing=running.describe())

    def refresh_documents(self, space: str, folder: str | None = None) -> bool:
        """Start a refresh of the space's documents index when one is due
        (:func:`~bli_memory.core.documents.refresh.refresh_in_background`); False with no index."""
        from bli_memory.core.documents.refresh import refresh_in_background

        index = self.documents_index()
        return index is not None and refresh_in_background(index, space, folder=folder) is not None

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
