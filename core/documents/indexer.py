"""Index a repository's documents and commit messages into a space, incrementally.

One run (:func:`index_space`):

1. lists the tracked documents (:func:`~bli_memory.core.documents.prepare.list_sources`),
   leaving out the forgotten paths;
2. for each one, compares size and mtime with the index: unchanged costs a stat; a changed
   one is read, hashed (same content: only the stat is recorded), chunked and masked
   (:func:`~bli_memory.core.documents.prepare.document_pieces`: no secret reaches the index)
   and embedded, then put in place of its old chunks in one transaction;
3. drops the files no longer tracked;
4. appends the commit messages newer than the last one read, masked whole and capped
   (:func:`~bli_memory.core.documents.prepare.read_history`,
   :func:`~bli_memory.core.documents.prepare.commit_rows`); after a history rewrite, the
   history is read again, the commits stored are kept and the ones it no longer holds dropped.

A run can be long on a large repository (minutes for thousands of files): it reports its
progress through ``progress`` and is run in the background, never inside a hook.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bli_memory.core.documents.commits import head_commit, web_address
from bli_memory.core.documents.index_store import DocumentIndex
from bli_memory.core.documents.prepare import (
    commit_rows,
    document_pieces,
    embedding_text,
    list_sources,
    read_history,
    read_source,
    skip_counts,
)
from bli_memory.core.documents.sources import DEFAULT_INCLUDE

__all__ = ["EMBED_BATCH", "IndexReport", "index_space"]

#: Chunks embedded per model call.
EMBED_BATCH = 64


@dataclass
class IndexReport:
    """What one run did: files seen, (re)indexed, unchanged, removed; chunks and commits
    written; commits dropped (no longer in the history, after a rewrite); files skipped, by
    reason."""

    documents: int = 0
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0
    commits: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    dropped_commits: int = 0


def _embed(embed_many: Callable[[Sequence[str]], Any], texts: Sequence[str],
           done: Callable[[int], None] | None = None) -> Any:
    """Unit vectors of ``texts``, :data:`EMBED_BATCH` at a time; ``done(n)`` after each batch."""
    import numpy as np

    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    parts = []
    for i in range(0, len(texts), EMBED_BATCH):
        parts.append(np.asarray(embed_many(texts[i:i + EMBED_BATCH]), dtype=np.float32))
        if done is not None:
            done(min(i + EMBED_BATCH, len(texts)))
    return np.vstack(parts)


def _index_commits(index: DocumentIndex, root: Path, space: str, embed_many: Callable[[Sequence[str]], Any],
                   report: IndexReport, progress: Callable[[str, int, int], None] | None) -> None:
    """Append the commits since the last one read; after a rewrite or a branch switch (the last
    one read is no longer in the history) read the history again, keep what is stored of it,
    and drop the commits it no longer holds (:func:`~bli_memory.core.documents.prepare.read_history`)."""
    last = index.state(space).last_commit
    commits, again = read_history(root, last)
    stored = index.commit_shas(space)
    if again and stored:
        gone = sorted(stored - {c.sha for c in commits})
        index.drop_commits(space, gone)
        report.dropped_commits = len(gone)
    rows = commit_rows([c for c in commits if c.sha not in stored])  # oldest first
    if progress is not None and rows:
        progress("commits", 0, len(rows))
    vectors = _embed(embed_many, [t for _, _, t in rows], done=None if progress is None else
                     (lambda n: progress("commits", n, len(rows))))
    newest = commits[0].sha if commits else (None if again else last)
    index.add_commits(space, rows, vectors if rows else [], last_commit=newest)
    report.commits = len(rows)


def index_space(index: DocumentIndex, root: Path, *, space: str, embed_many: Callable[[Sequence[str]], Any],
                include: Sequence[str] = DEFAULT_INCLUDE, exclude: Sequence[str] = (),
                progress: Callable[[str, int, int], None] | None = None) -> IndexReport:
    """Bring the space's index up to date with the repository at ``root``.

    Args:
        index: The documents index.
        root: A folder in a git work tree (its tracked documents are indexed).
        space: The container tag the documents belong to.
        embed_many: ``(texts) -> unit vectors`` of the embedding model.
        include: Globs of the files that are documents.
        exclude: Globs never indexed.
        progress: Called as ``(stage, done, total)`` with stage ``documents`` or ``commits``.

    Returns:
        :class:`IndexReport`.

    Raises:
        ValueError: ``root`` is not in a git work tree.
        StoreError: the index cannot be written.
    """
    report = IndexReport()
    forgotten = index.forgotten_paths(space)
    known = index.files(space)
    docs, skipped = list_sources(root, include=include, exclude=exclude, forgotten=forgotten,
                                 clean=known.keys())
    report.documents = len(docs)
    for n, doc in enumerate(docs, 1):
        if progress is not None:
            progress("documents", n, len(docs))
        old = known.pop(doc.path, None)
        if old is not None and old[:2] == (doc.size, doc.mtime_ns):
            report.unchanged += 1
            continue
        read = read_source(root, doc)
        if read is None:
            continue
        raw, sha = read
        if old is not None and old[2] == sha:
            index.touch_file(space, doc.path, doc.size, doc.mtime_ns)
            report.unchanged += 1
            continue
        pieces = document_pieces(doc.path, raw)
        kept = index.file_vectors(space, doc.path) if old is not None else {}
        fresh = [p for p in pieces if (p[0], p[3]) not in kept]
        fresh_vectors = _embed(embed_many, [embedding_text(h, body) for h, _, _, body in fresh])
        made = dict(zip([(h, body) for h, _, _, body in fresh], fresh_vectors, strict=True))
        vectors = [kept.get((h, body), made.get((h, body))) for h, _, _, body in pieces]
        index.replace_file(space, doc.path, size=doc.size, mtime_ns=doc.mtime_ns, sha256=sha, chunks=pieces,
                           vectors=vectors)
        report.indexed += 1
        report.chunks += len(pieces)
    for gone in known:  # no longer tracked, or now skipped
        index.remove_file(space, gone)
        report.removed += 1
    _index_commits(index, root, space, embed_many, report, progress)
    report.skipped = skip_counts(skipped)
    index.set_state(space, root=str(root), skipped=[(s.path, s.reason) for s in skipped],
                    web=web_address(root), revision=head_commit(root),
                    include=() if tuple(include) == DEFAULT_INCLUDE else include, exclude=exclude)
    return report
