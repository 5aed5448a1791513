"""The memory tool contract: the one protocol every store backend implements.

The embedded SQLite engine (:mod:`bli_memory.core.embedded.engine`), the Postgres store
(:mod:`bli_memory.core.team.postgres.store`) and the client of the team service
(:mod:`bli_memory.core.team.client.remote`) each implement :class:`MemoryBackend`; the MCP tools,
the hooks, the daemon and the ``memory`` commands call nothing else, and never probe a
backend for a method: a backend that cannot do something still has the method, and it
answers honestly (does nothing, or refuses with a :class:`BliMemoryError`). The
``memory_backend`` hook (:mod:`bli_memory.core.hookspecs`) chooses which one a process uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from bli_memory.core.memory.documents import DOCUMENT_KINDS

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path

    from bli_memory.core.memory.browse import BrowseReads
    from bli_memory.core.memory.documents import DocumentHit, DocumentsState
    from bli_memory.core.memory.job_queue import JobQueue, ShipReport
    from bli_memory.core.models import (
        ForgetResult,
        Memory,
        Profile,
        Recall,
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
        self, content: str, *, space: str, id: str | None = None, custom_id: str | None = None,
        source: str | None = None,
    ) -> UpdateResult:
        """Replace a live memory's content, keeping the old version as history; ``source``
        names where this version was written (``ui``, ``cli``, ``mcp``), default the old
        version's."""
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

    def forgotten_by(
        self, *, space: str, since: float, content: str | None = None, query: str | None = None
    ) -> ForgetResult | None:
        """The forget by ``content`` or ``query`` in ``space`` done at or after the epoch
        seconds ``since``, as it was answered; ``None`` when there is none, or when this
        backend cannot tell (then the caller runs the forget).

        For a forget request run again because its answer was lost (the relay hands a
        session to the in-process server, :mod:`bli_memory.core.mcp.relay`), so it answers
        as it did instead of taking the next match. The embedded engine can tell; the
        Postgres store and the service's client answer ``None`` (a relay serves only the
        embedded store).
        """
        ...

    def profile(self, *, space: str, limit: int = 10) -> Profile:
        """Durable facts and recent context of a space, for session-start."""
        ...

    def term_frequencies(self, query: str, *, space: str) -> tuple[list[tuple[str, int]], int]:
        """``([(term, live memories holding it), ...], live memories)`` for the query's
        content terms, for the injection gate (:mod:`bli_memory.core.memory.term_evidence`)."""
        ...

    def space_background(self, *, space: str) -> float | None:
        """Mean cosine similarity between two live memories of the space (-1.0..1.0), for
        the injection gate's second bar (:data:`~bli_memory.core.memory.relevance.DIVERSE_BACKGROUND`);
        None when the space is too small to tell or the store cannot measure it (the gate
        then uses the one bar of conversation spaces)."""
        ...

    def recall(self, query: str, *, space: str, limit: int = 10) -> Recall:
        """A prompt's search and the injection gate's inputs (term counts, background) in
        one call: one round trip on the team service (:mod:`bli_memory.core.memory.recall`)."""
        ...

    def history(self, id: str) -> list[Memory]:
        """Every version of the memory ``id`` belongs to, newest first, tombstones included."""
        ...

    def enqueue_extract(
        self, text: str, *, space: str, source: str, session_id: str | None = None,
        job_id: str | None = None,
    ) -> str:
        """Queue raw text for extraction; returns the job id.

        ``job_id`` (a UUID the caller chose, :mod:`bli_memory.core.memory.job_ids`) makes the
        call idempotent: a job of that id is queued once, and a retry answers the id.
        """
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...

    # --- the process around it (MCP server, daemon, hooks) ---------------------------

    @property
    def store_path(self) -> Path | None:
        """The local file the backend keeps (the embedded SQLite store); ``None`` for a service.

        The daemon watches it: a file replaced or removed under it is reopened.
        """
        ...

    @property
    def spool_captures(self) -> bool:
        """Whether the stop hook spools captures first (``True`` for the team service's
        client, so a service away never costs the turn; :mod:`bli_memory.core.team.client.spool`)."""
        ...

    def warm_up(self) -> None:
        """Open the store and load the model now (long-lived processes call it once, in
        the background); a backend with nothing to load does nothing."""
        ...

    def record_turn(self, text: str, *, space: str, source: str, session_id: str | None = None) -> str:
        """Keep one recorded (already redacted) exchange, capture-only; returns its id."""
        ...

    # --- capture (the stop hook, the worker, the daemon's drain) ---------------------

    def capture(self, text: str, *, space: str, source: str, session_id: str | None = None,
                record: bool = False) -> dict[str, Any]:
        """Keep one redacted exchange of the stop hook: an extract job, or with ``record``
        a recorded turn. A store in this process keeps it at once
        (:func:`~bli_memory.core.memory.job_queue.capture_here`); the service's client
        spools it first and ships it within the hook's budget
        (:mod:`bli_memory.core.team.client.spool`), so a service away never costs the turn.

        Returns:
            Receipt fields: ``queued`` or ``recorded``, and on the client ``spooled``,
            ``backlog``, ``job`` and ``service`` (see :func:`bli_memory.core.team.client.spool.capture`).
        """
        ...

    def ship_spool(self) -> ShipReport | None:
        """Send captures spooled while the service was away (the daemon's drain, ``worker``);
        None when this backend spools nothing or nothing is spooled."""
        ...

    @property
    def job_queue(self) -> JobQueue | None:
        """The durable extract-job queue this backend's drain works
        (:func:`bli_memory.core.extraction.worker.drain`): the SQLite file's, the Postgres
        database's; None for the service's client (the service drains its own)."""
        ...

    def tombstones(self, space: str, *, limit: int | None = 500) -> list[str]:
        """Forgotten contents of ``space`` and its aliases, newest first (``limit`` None:
        all), which automatic capture does not write again
        (:mod:`bli_memory.core.extraction.tombstones`); the service's client answers ``[]``:
        capture for it runs on the service, against the service's own."""
        ...

    def purge_marks(self, space: str, *, limit: int | None = 500) -> list[dict[str, Any]]:
        """Purge marks of ``space`` and its aliases, newest first (``limit`` None: all), as
        :meth:`tombstones` (``[]`` on the service's client)."""
        ...

    # --- controls (MCP control tools, ``bli-memory-mcp memory``) ------------------------

    def info(self, *, space: str) -> dict[str, Any]:
        """``{"space", "aliases", "counts", "recordings", "store", "embeddingModel", ...}``
        of a space; ``store["kind"]`` is ``embedded`` or ``service``."""
        ...

    def list_memories(self, *, space: str, limit: int = 20) -> list[Memory]:
        """Newest live memories of a space; ``limit`` is clamped to 1..100."""
        ...

    def get_memory(self, id: str, *, include_inactive: bool = False) -> tuple[Memory, list[Memory]]:
        """One memory and its version history (newest first).

        Raises:
            NotFoundError: no memory has that id.
        """
        ...

    def audit(self, *, repair: bool = False) -> dict[str, Any]:
        """Integrity of the derived indexes (``ok``, ``counts``, ``missing_keyword``,
        ``stale_keyword``, ``missing_vector``, ``wrong_model``, ``repaired``); with
        ``repair`` rebuild them and add ``after``."""
        ...

    def purge(self, id: str) -> int:
        """Erase a memory and all its versions (secrets saved by mistake); returns rows erased."""
        ...

    def export(self, *, space: str | None = None) -> Iterable[dict[str, Any]]:
        """JSON-ready rows of every version (``bli-memory-export.v1``); every space when None."""
        ...

    def import_records(self, records: list[dict[str, Any]]) -> dict[str, int]:
        """Import exported rows exactly; one bad record means nothing is imported.

        Secrets in content and metadata are masked as a save masks them. A live record
        that restates a memory forgotten or purged in its space is left out, as capture
        leaves it out. The answer is ``{"imported": n, "skipped": n, "forgotten": n,
        "masked": n}`` (``skipped``: already present; ``forgotten``: left out as forgotten).

        Raises:
            InvalidInputError: naming the first bad record (1-based) and what is wrong.
        """
        ...

    def search_documents(self, query: str, *, space: str, limit: int = 5,
                         kinds: Sequence[str] = DOCUMENT_KINDS) -> list[DocumentHit]:
        """The project's own documents and commit messages matching ``query``, best first,
        kept apart from memories (:mod:`bli_memory.core.memory.documents`); ``[]`` when the
        store keeps no documents index for the space."""
        ...

    def document_status(self, space: str) -> DocumentsState | None:
        """What the space's documents index holds, or None when there is none."""
        ...

    def refresh_documents(self, space: str, folder: str | None = None) -> bool:
        """Start bringing the space's documents index up to date in a process of its own when
        it is due (the session-start hook asks, from ``folder``: only a folder inside the
        repository the index was built from refreshes it); True when a run was started. Never
        indexes in the caller, and never raises for a run it could not start."""
        ...

    @property
    def browse(self) -> BrowseReads:
        """The memory browser's reads of this store, as the person sees it
        (:mod:`bli_memory.core.memory.browse`).

        Raises:
            ConfigError: on the service's client (the browser of the team service is served
                by the service itself, at ``/ui``).
        """
        ...

    def recordings(self, *, space: str, limit: int = 20) -> list[dict[str, Any]]:
        """Recorded turns of a space, newest first:
        ``[{"id", "space", "sessionId", "source", "createdAt", "text"}, ...]``."""
        ...

    def clear_recordings(self, *, space: str) -> int:
        """Erase every recorded turn of a space and its aliases; returns how many."""
        ...
