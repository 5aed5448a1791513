"""The wire shapes of document matches and of a documents index's state, declared once.

The team service answers its documents doors in these shapes
(:mod:`bli_memory.core.team.service.document_models` builds on them, and its OpenAPI document
is generated from them), and its client reads them back (:meth:`DocumentHitRecord.hit`,
:meth:`DocumentsStateRecord.state`) into the shapes every store answers
(:mod:`bli_memory.core.memory.documents`). Field names are the wire names (``startLine``,
``lastCommit``), as :mod:`bli_memory.core.memory.wire` does for memories.

Pydantic models: loaded only when a documents door is asked or answered.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bli_memory.core.memory.documents import DocumentChunk, DocumentHit, DocumentsState

__all__ = ["DocumentHitRecord", "DocumentsStateRecord", "SkippedRecord"]


class _Wire(BaseModel):
    # Unknown fields are ignored, so a newer service's answers still read here.
    model_config = ConfigDict(extra="ignore")


class DocumentHitRecord(_Wire):
    """One match: a section of a document (``path``, lines, ``heading``) or a commit message
    (``sha``, ``date``), its masked text, its cosine similarity to the query, the fused
    score that ordered it, and where it opens (or null)."""

    kind: Literal["document", "commit"]
    path: str | None = Field(None, description="The file, relative to the repository root (a document).")
    startLine: int | None = None
    endLine: int | None = None
    sha: str | None = Field(None, description="The commit's full id (a commit).")
    date: str | None = Field(None, description="The commit's date, ISO 8601 (a commit).")
    heading: list[str] = Field(default_factory=list, description="The heading trail, outermost first.")
    text: str
    similarity: float = Field(description="Cosine similarity to the query.")
    score: float = Field(0.0, description="The fused rank score that ordered the hits (not a similarity).")
    link: str | None = Field(None, description="The file and lines, or the commit, on the repository's "
                                               "web host.")

    @classmethod
    def of(cls, hit: DocumentHit) -> DocumentHitRecord:
        """The record of ``hit``."""
        c = hit.chunk
        return cls.model_construct(kind=c.kind, path=c.path or None, startLine=c.start, endLine=c.end,
                                   sha=c.sha, date=c.date, heading=list(c.heading), text=c.text,
                                   similarity=hit.similarity, score=hit.score, link=hit.link)

    def hit(self, space: str) -> DocumentHit:
        """The :class:`~bli_memory.core.memory.documents.DocumentHit` this record holds, in
        ``space`` (its ``seq`` is 0: the service's row numbers stay there)."""
        chunk = DocumentChunk(seq=0, space=space, kind=self.kind, path=self.path or "", sha=self.sha,
                              date=self.date, heading=tuple(self.heading), start=self.startLine,
                              end=self.endLine, text=self.text)
        return DocumentHit(chunk=chunk, score=self.score, similarity=self.similarity, link=self.link)


class SkippedRecord(_Wire):
    """A file left out of the index, and why (``secret_file``, ``forgotten``, ...)."""

    path: str
    reason: str


class DocumentsStateRecord(_Wire):
    """What a space's documents index holds (:class:`~bli_memory.core.memory.documents.DocumentsState`)."""

    documents: int
    chunks: int
    commits: int
    lastCommit: str | None = None
    refreshedAt: str | None = Field(None, description="When the index was last refreshed, UTC ISO 8601.")
    root: str | None = Field(None, description="The repository's folder on the machine that refreshed it.")
    skipped: list[SkippedRecord] = Field(default_factory=list)
    web: str | None = None
    revision: str | None = Field(None, description="The commit the documents were read at.")
    indexing: str | None = None
    include: list[str] = Field(default_factory=list, description="The last run's include globs (empty: "
                                                                 "the defaults).")
    exclude: list[str] = Field(default_factory=list, description="The last run's exclude globs.")

    @classmethod
    def of(cls, st: DocumentsState) -> DocumentsStateRecord:
        """The record of ``st``."""
        return cls.model_construct(
            documents=st.documents, chunks=st.chunks, commits=st.commits, lastCommit=st.last_commit,
            refreshedAt=st.refreshed_at, root=st.root,
            skipped=[SkippedRecord.model_construct(path=p, reason=r) for p, r in st.skipped], web=st.web,
            revision=st.revision, indexing=st.indexing, include=list(st.include), exclude=list(st.exclude))

    def state(self) -> DocumentsState:
        """The :class:`~bli_memory.core.memory.documents.DocumentsState` this record holds."""
        return DocumentsState(documents=self.documents, chunks=self.chunks, commits=self.commits,
                              last_commit=self.lastCommit, refreshed_at=self.refreshedAt, root=self.root,
                              skipped=tuple((s.path, s.reason) for s in self.skipped), web=self.web,
                              revision=self.revision, indexing=self.indexing, include=tuple(self.include),
                              exclude=tuple(self.exclude))
