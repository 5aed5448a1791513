"""How search_memory shows the project's documents and commit messages: their own list in
``structuredContent`` and their own section in the text, after the memories.

The floor (:data:`DOCUMENT_FLOOR`) keeps a search's off-topic document matches out: on the
labelled public-docs set of ``bench/documents.py``, 26 of the 28 right sections found score
a cosine similarity of 0.36 or more, and 36 of 40 best matches of off-topic questions score
below 0.35.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from bli_memory.core.mcp.outputs import DocumentOut
from bli_memory.core.memory.documents import DocumentHit, DocumentsState

__all__ = ["DOCUMENT_FLOOR", "DOCUMENT_HITS", "document_lines", "document_out", "read_document_status",
           "read_documents"]

_log = logging.getLogger(__name__)

#: Most document matches a search shows (the memories come first; these support them).
DOCUMENT_HITS = 3

#: Lowest cosine similarity a document match needs to be shown (see the module docstring).
DOCUMENT_FLOOR = 0.35


def document_out(hit: DocumentHit) -> DocumentOut:
    """The structured form of one match."""
    c = hit.chunk
    return DocumentOut(kind=c.kind, path=c.path or None, startLine=c.start, endLine=c.end, sha=c.sha,  # type: ignore[arg-type]
                       date=c.date, heading=list(c.heading), text=c.text, similarity=hit.similarity,
                       link=hit.link)


def document_lines(hits: Sequence[DocumentHit], *, scope: str) -> list[str]:
    """The text section of the matches (nothing when there are none and memories were searched too)."""
    if not hits:
        return ["No document or commit message of this project matches."] if scope == "documents" else []
    lines = ["From the project's documents and history:"]
    for i, h in enumerate(hits, 1):
        c = h.chunk
        if c.kind == "commit":
            where = f"commit {(c.sha or '')[:12]} ({(c.date or '')[:10]})"
        else:
            trail = f" ({' > '.join(c.heading)})" if c.heading else ""
            where = f"{c.path}, lines {c.start}-{c.end}{trail}"
        lines.append(f"{i}. {where}; similarity {h.similarity:.2f}" + (f"; {h.link}" if h.link else ""))
        lines += ["   " + line for line in c.text.strip().splitlines()]
    return lines


def _unreadable(exc: Exception) -> str:
    reason = getattr(exc, "reason", None) or type(exc).__name__
    _log.warning("documents index unreadable: %s: %s", reason, exc)
    return (f"The project's documents index could not be read ({reason}); the memories are answered "
            "in full. `bli-memory-mcp documents status` says more, and `documents delete --yes` then "
            "`documents index` rebuilds it.")


def read_documents(backend: Any, query: str, *, space: str) -> tuple[list[DocumentHit], str | None]:
    """The matches ``search_memory`` shows: at most :data:`DOCUMENT_HITS`, each at
    :data:`DOCUMENT_FLOOR` or more. Never raises: a documents index that cannot be read (corrupt,
    locked, half written) gives no matches and a sentence saying why, so the memories are
    always answered."""
    try:
        hits = backend.search_documents(query, space=space, limit=DOCUMENT_HITS)
        return [h for h in hits if h.similarity >= DOCUMENT_FLOOR], None
    except Exception as exc:  # noqa: BLE001 - the documents are an extra; the memories must answer
        return [], _unreadable(exc)


def read_document_status(backend: Any, space: str) -> tuple[DocumentsState | None, str | None]:
    """``memory_info``'s documents part: the state, or None and a sentence when the index
    cannot be read (as :func:`read_documents`)."""
    try:
        return backend.document_status(space), None
    except Exception as exc:  # noqa: BLE001 - as read_documents
        return None, _unreadable(exc)
