"""The shapes of document matches every store answers, beside memories and never mixed with them.

A store that indexes the project's own documents and commit messages
(:mod:`bli_memory.core.documents` for the embedded store) answers
:meth:`~bli_memory.core.memory.backend.MemoryBackend.search_documents` with
:class:`DocumentHit` and :meth:`~bli_memory.core.memory.backend.MemoryBackend.document_status`
with :class:`DocumentsState`. Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DOCUMENT_KINDS", "DocumentChunk", "DocumentHit", "DocumentsState", "NoDocuments"]

#: What a document match can be: a section of a file, or a commit message.
DOCUMENT_KINDS = ("document", "commit")


@dataclass(frozen=True)
class DocumentChunk:
    """A piece of a document, or a commit message, as indexed.

    Attributes:
        seq: The index's row number.
        space: The container tag it belongs to.
        kind: ``document`` or ``commit``.
        path: The file, relative to the repository root (empty for a commit).
        sha: The commit's full id (a commit only).
        date: The commit's date, ISO 8601 (a commit only).
        heading: The heading trail above the chunk, outermost first.
        start: First line, 1-based (a document only).
        end: Last line, inclusive (a document only).
        text: The chunk's text, its secrets masked.
    """

    seq: int
    space: str
    kind: str
    path: str
    sha: str | None
    date: str | None
    heading: tuple[str, ...]
    start: int | None
    end: int | None
    text: str


@dataclass(frozen=True)
class DocumentHit:
    """One match: the chunk, the fused score (orders hits; never shown as a similarity),
    its true cosine similarity to the query, and where to open it (or None)."""

    chunk: DocumentChunk
    score: float
    similarity: float
    link: str | None


@dataclass(frozen=True)
class DocumentsState:
    """What a space's documents index holds: files, their chunks and commits, the last commit
    read, when it was refreshed (ISO 8601 UTC, or None: never), the repository's folder, the
    files left out as ``(path, reason)``, the repository's web address and the commit the
    documents were read at (for links; None when the remote is not a known web host), and
    the index run going on now, in one line (None: none), and the include and exclude globs
    the last run used (empty: the defaults)."""

    documents: int
    chunks: int
    commits: int
    last_commit: str | None
    refreshed_at: str | None
    root: str | None
    skipped: tuple[tuple[str, str], ...]
    web: str | None = None
    revision: str | None = None
    indexing: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


class NoDocuments:
    """The document half of the contract for a backend that keeps no documents index (a
    plugin's store; both shipped stores keep one): no matches, no state."""

    def search_documents(self, query: str, *, space: str, limit: int = 5,
                         kinds: Sequence[str] = DOCUMENT_KINDS) -> list[DocumentHit]:
        """No documents are indexed here: ``[]``."""
        return []

    def document_status(self, space: str) -> DocumentsState | None:
        """No documents are indexed here: None."""
        return None

    def refresh_documents(self, space: str, folder: str | None = None) -> bool:
        """No documents are indexed here: nothing to refresh."""
        return False

