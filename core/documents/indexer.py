"""Index a repository's documents and commit messages into a space, incrementally.

One run (:func:`index_space`):

1. lists the tracked documents (:func:`~bli_memory.core.documents.sources.tracked_documents`),
   leaving out the forgotten paths;
2. for each one, compares size and mtime with the index: unchanged costs a stat; a changed
   one is read, hashed (same content: only the stat is recorded), chunked
   (:func:`~bli_memory.core.documents.chunks.chunk_document`), masked
   (:func:`~bli_memory.core.memory.redaction.redact`: no secret reaches the index) and
   embedded, then put in place of its old chunks in one transaction;
3. drops the files no longer tracked;
4. appends the commit messages newer than the last one read
   (:func:`~bli_memory.core.documents.commits.read_commits`).

A run can be long on a large repository (minutes for thousands of files): it reports its
progress through ``progress`` and is run in the background, never inside a hook.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bli_memory.core.documents.chunks import MAX_CHUNK_CHARS, chunk_document
from bli_memory.core.documents.commits import Commit, head_commit, is_ancestor, read_commits, web_address
from bli_memory.core.documents.index_store import DocumentIndex
from bli_memory.core.documents.sources import (
    DEFAULT_INCLUDE,
    Skipped,
    glob_matches,
    read_document,
    tracked_documents,
)

__all__ = ["EMBED_BATCH", "IndexReport", "commit_text", "index_space", "masked_document"]

#: Chunks embedded per model call.
EMBED_BATCH = 64


@dataclass
class IndexReport:
    """What one run did: files seen, (re)indexed, unchanged, removed; chunks and commits
    written; files skipped, by reason."""

    documents: int = 0
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0
    commits: int = 0
    skipped: dict[str, int] = field(default_factory=dict)


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


def _masked(text: str) -> str:
    from bli_memory.core.memory.redaction import redact

    return redact(text).text


def masked_document(text: str) -> str:
    """``text`` with every secret masked, whole, before it is cut into chunks, with its line
    count kept: a secret over several lines (a PEM key) becomes its placeholder followed by
    as many empty lines as it took, so every chunk's line range still points at the file.

    Masking the whole text first matters: cut first, a 4 KB key would be masked only in the
    chunks holding its BEGIN or END line, and a token cut at a chunk's edge not at all. The
    headings are read from the masked text, so a heading never holds a secret either.
    """
    masked = _masked(text)
    before, after = text.splitlines(), masked.splitlines()
    if len(after) == len(before):
        return masked
    import difflib

    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        out += after[j1:j2]
        if op != "equal" and (i2 - i1) > (j2 - j1):
            out += [""] * ((i2 - i1) - (j2 - j1))  # the lines the placeholder took the place of
    return "\n".join(out)


def commit_text(commit: Commit) -> str:
    """What is stored of a commit: its message, masked whole, then cut to
    :data:`~bli_memory.core.documents.chunks.MAX_CHUNK_CHARS` (a message of a megabyte is a
    pasted log, and a match shows its text whole)."""
    text = _masked(f"{commit.subject}\n\n{commit.body}".strip())
    return text if len(text) <= MAX_CHUNK_CHARS else text[:MAX_CHUNK_CHARS].rstrip() + " [...]"


def _index_commits(index: DocumentIndex, root: Path, space: str, embed_many: Callable[[Sequence[str]], Any],
                   report: IndexReport, progress: Callable[[str, int, int], None] | None) -> None:
    """Append the commits since the last one read; after a rewrite or a branch switch (the last
    one read is no longer in the history) read the history again, keep what is stored of it,
    and drop the commits it no longer holds."""
    last = index.state(space).last_commit
    again = last is None or not is_ancestor(root, last)
    commits = read_commits(root, since=None if again else last)
    stored = index.commit_shas(space)
    if again and stored:
        index.drop_commits(space, sorted(stored - {c.sha for c in commits}))
    new = [c for c in reversed(commits) if c.sha not in stored]  # oldest first
    texts = [commit_text(c) for c in new]
    if progress is not None and new:
        progress("commits", 0, len(new))
    vectors = _embed(embed_many, texts, done=None if progress is None else
                     (lambda n: progress("commits", n, len(new))))
    rows = [(c.sha, c.date, t) for c, t in zip(new, texts, strict=True)]
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
    docs, skipped = tracked_documents(root, include=include, exclude=[*exclude, *forgotten],
                                      clean=known.keys())
    skipped = [Skipped(s.path, "forgotten") if glob_matches(s.path, forgotten) else s for s in skipped]
    report.documents = len(docs)
    for n, doc in enumerate(docs, 1):
        if progress is not None:
            progress("documents", n, len(docs))
        old = known.pop(doc.path, None)
        if old is not None and old[:2] == (doc.size, doc.mtime_ns):
            report.unchanged += 1
            continue
        try:
            raw = read_document(root, doc.path)
        except OSError:
            continue
        sha = hashlib.sha256(raw).hexdigest()
        if old is not None and old[2] == sha:
            index.touch_file(space, doc.path, doc.size, doc.mtime_ns)
            report.unchanged += 1
            continue
        text = raw.decode("utf-8", "replace")
        chunks = chunk_document(doc.path, masked_document(text))
        pieces = [(c.heading, c.start, c.end, c.text) for c in chunks]
        kept = index.file_vectors(space, doc.path) if old is not None else {}
        fresh = [p for p in pieces if (p[0], p[3]) not in kept]
        made = dict(zip([(h, body) for h, _, _, body in fresh],
                        _embed(embed_many, [" / ".join((*h, body)) for h, _, _, body in fresh]), strict=True))
        vectors = [kept.get((h, body), made.get((h, body))) for h, _, _, body in pieces]
        index.replace_file(space, doc.path, size=doc.size, mtime_ns=doc.mtime_ns, sha256=sha, chunks=pieces,
                           vectors=vectors)
        report.indexed += 1
        report.chunks += len(pieces)
    for gone in known:  # no longer tracked, or now skipped
        index.remove_file(space, gone)
        report.removed += 1
    _index_commits(index, root, space, embed_many, report, progress)
    for s in skipped:
        report.skipped[s.reason] = report.skipped.get(s.reason, 0) + 1
    index.set_state(space, root=str(root), skipped=[(s.path, s.reason) for s in skipped],
                    web=web_address(root), revision=head_commit(root),
                    include=() if tuple(include) == DEFAULT_INCLUDE else include, exclude=exclude)
    return report
