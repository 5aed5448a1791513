"""What every documents index does on the repository's side before anything is stored.

The embedded index (:func:`~bli_memory.core.documents.indexer.index_space`) and the team
service's client (:mod:`bli_memory.core.team.client.documents`, which uploads to a service
that cannot read the repository) take the same steps, here, so both leave out the same
files and mask the same secrets:

1. :func:`list_sources`: the tracked documents and the candidates left out with their reason
   (:func:`~bli_memory.core.documents.sources.tracked_documents`: a secret file's bytes are
   never read, a link or anything but a regular file is skipped, a path holding a secret is
   skipped and every listed path is masked; a forgotten path is reported as ``forgotten``).
2. :func:`read_source`: a document's bytes and their SHA-256
   (:func:`~bli_memory.core.documents.sources.read_document`: no link followed, no FIFO
   opened; None when it vanished).
3. :func:`document_pieces`: the bytes masked whole (:func:`masked_document`, line numbers
   kept) and then cut into chunks (:func:`~bli_memory.core.documents.chunks.chunk_document`),
   so neither a chunk nor a heading holds a secret.
4. :func:`read_history` and :func:`commit_rows`: the commits to add since the last one read
   (the whole history again after a rewrite), each message masked whole, then capped
   (:func:`commit_text`), oldest first.

A chunk is embedded as :func:`embedding_text` gives it, by whichever store keeps it.

Standard library only (the masking rules load on first use).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

from bli_memory.core.documents.chunks import MAX_CHUNK_CHARS, chunk_document
from bli_memory.core.documents.commits import Commit, is_ancestor, read_commits
from bli_memory.core.documents.sources import (
    Skipped,
    SourceFile,
    glob_matches,
    read_document,
    tracked_documents,
)

__all__ = [
    "Piece",
    "commit_rows",
    "commit_text",
    "document_pieces",
    "embedding_text",
    "list_sources",
    "masked",
    "masked_document",
    "read_history",
    "read_source",
    "skip_counts",
]

#: One chunk as stored: ``(heading trail, first line, last line, masked text)``.
Piece = tuple[tuple[str, ...], int, int, str]


def masked(text: str) -> str:
    """``text`` with its secrets masked, by the memories' rules."""
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
    out_text = masked(text)
    before, after = text.splitlines(), out_text.splitlines()
    if len(after) == len(before):
        return out_text
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
    text = masked(f"{commit.subject}\n\n{commit.body}".strip())
    return text if len(text) <= MAX_CHUNK_CHARS else text[:MAX_CHUNK_CHARS].rstrip() + " [...]"


def list_sources(root: Path, *, include: Sequence[str], exclude: Sequence[str], forgotten: Sequence[str],
                 clean: Collection[str] = ()) -> tuple[list[SourceFile], list[Skipped]]:
    """The documents of the repository at ``root`` and the candidates left out, each in path
    order; a path matching ``forgotten`` is left out with reason ``forgotten``. ``clean``:
    paths known to hold no secret (indexed before), not masked again.

    Raises:
        ValueError: ``root`` is not in a git work tree.
    """
    docs, skipped = tracked_documents(root, include=include, exclude=[*exclude, *forgotten], clean=clean)
    return docs, [Skipped(s.path, "forgotten") if glob_matches(s.path, forgotten) else s for s in skipped]


def read_source(root: Path, doc: SourceFile) -> tuple[bytes, str] | None:
    """``(bytes, sha256 hex)`` of a document, or None when it cannot be read now (deleted
    since it was listed, or turned into a link or something other than a regular file)."""
    try:
        raw = read_document(root, doc.path)
    except OSError:
        return None
    return raw, hashlib.sha256(raw).hexdigest()


def document_pieces(path: str, raw: bytes) -> list[Piece]:
    """The chunks of the document ``path`` whose bytes are ``raw``, in file order, masked
    (the whole text before it is cut: :func:`masked_document`)."""
    text = masked_document(raw.decode("utf-8", "replace"))
    return [(c.heading, c.start, c.end, c.text) for c in chunk_document(path, text)]


def embedding_text(heading: Sequence[str], text: str) -> str:
    """What the model reads of a document chunk: its heading trail, then its text
    (``Deploy / Rollback / text``); a commit message is embedded as it is."""
    return " / ".join((*heading, text))


def read_history(root: Path, last: str | None) -> tuple[list[Commit], bool]:
    """``(commits, again)``: the commits of ``HEAD`` after ``last`` (the last one an index read),
    newest first; ``again`` is True when ``last`` is None or no longer in the history (a
    rewrite, a branch switch), and then the commits are the whole history (at most
    :data:`~bli_memory.core.documents.commits.MAX_COMMITS`): the index keeps those it holds
    and drops the ones it holds that are not among them.

    Raises:
        ValueError: ``root`` is not in a git work tree, or git is missing.
    """
    again = last is None or not is_ancestor(root, last)
    return read_commits(root, since=None if again else last), again


def commit_rows(commits: Sequence[Commit]) -> list[tuple[str, str, str]]:
    """``(sha, date, stored text)`` of ``commits`` (given newest first, as
    :func:`~bli_memory.core.documents.commits.read_commits` reads them), oldest first; the
    text is :func:`commit_text`'s."""
    return [(c.sha, c.date, commit_text(c)) for c in reversed(commits)]


def skip_counts(skipped: Iterable[Skipped]) -> dict[str, int]:
    """How many candidates were left out, by reason."""
    counts: dict[str, int] = {}
    for s in skipped:
        counts[s.reason] = counts.get(s.reason, 0) + 1
    return counts
