"""The wire shape of a memory, declared once: every surface that sends one sends this.

A memory leaves the process in one shape, :class:`MemoryRecord`: in the team service's
answers (:mod:`bli_memory.core.team.service.models` builds its answers on it, and its
OpenAPI document is generated from them), in what the service's client reads back
(:func:`search_of`, :meth:`MemoryRecord.memory`), in the MCP tools' structured output
(:mod:`bli_memory.core.mcp.outputs`), in ``memory`` commands' ``--json`` and in export
files (``bli-memory-export.v1``, which adds the vector).

``space`` or ``containerTag``: a memory names the space it lives in ``space``, the
canonical tag after aliases are resolved; a request names the space it acts on
``containerTag``, and an answer echoes that as ``containerTag``. They differ when the
request named an alias, which is why they are two words and never renamed into each
other (docs/architecture.md, "The wire").

Pydantic models: the hook imports this only when the service's client reads an answer.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bli_memory.core.models import Conflict, Memory, Profile, Recall, SearchHit, SearchResult

__all__ = [
    "ConflictRecord",
    "HitRecord",
    "MemoryRecord",
    "ProfileRecord",
    "RecallRecord",
    "SearchRecord",
    "TermCount",
    "record_of",
    "search_of",
]


class _Wire(BaseModel):
    # Unknown fields are ignored, so a newer service's answers still read here.
    model_config = ConfigDict(extra="ignore")


class MemoryRecord(_Wire):
    """One version of a memory (:class:`~bli_memory.core.models.Memory`)."""

    id: str
    space: str = Field(description="The canonical container tag the memory lives in.")
    content: str
    customId: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    source: str = "mcp"
    sessionId: str | None = None
    createdAt: str = Field("", description="UTC ISO 8601.")
    updatedAt: str = Field("", description="UTC ISO 8601.")
    version: int = 1
    supersedes: str | None = None
    state: Literal["active", "superseded", "forgotten"] = "active"
    forgottenAt: str | None = None
    expiresAt: str | None = None

    @field_validator("metadata", mode="before")
    @classmethod
    def _no_metadata(cls, value: Any) -> Any:
        return {} if value is None else value  # a memory without metadata has {}

    @classmethod
    def of(cls, m: Memory) -> MemoryRecord:
        """The record of ``m``."""
        return cls.model_construct(
            id=m.id, space=m.space, content=m.content, customId=m.custom_id, metadata=dict(m.metadata),
            source=m.source, sessionId=m.session_id, createdAt=m.created_at, updatedAt=m.updated_at,
            version=m.version, supersedes=m.supersedes, state=m.state, forgottenAt=m.forgotten_at,
            expiresAt=m.expires_at)

    def memory(self) -> Memory:
        """The :class:`~bli_memory.core.models.Memory` this record holds."""
        return Memory(id=self.id, space=self.space, content=self.content, custom_id=self.customId,
                      metadata=dict(self.metadata), source=self.source, session_id=self.sessionId,
                      created_at=self.createdAt, updated_at=self.updatedAt, version=self.version,
                      supersedes=self.supersedes, state=self.state, forgotten_at=self.forgottenAt,
                      expires_at=self.expiresAt)


def record_of(m: Memory) -> dict[str, Any]:
    """The JSON object of ``m`` (:class:`MemoryRecord`)."""
    return MemoryRecord.of(m).model_dump()


class ProfileRecord(_Wire):
    """User Profile (durable facts) and Recent Context of a space."""

    containerTag: str
    facts: list[MemoryRecord]
    recent: list[MemoryRecord]

    @classmethod
    def of(cls, p: Profile) -> ProfileRecord:
        """The record of ``p``."""
        return cls.model_construct(containerTag=p.space, facts=[MemoryRecord.of(m) for m in p.facts],
                                   recent=[MemoryRecord.of(m) for m in p.recent])

    def profile(self) -> Profile:
        """The :class:`~bli_memory.core.models.Profile` this record holds."""
        return Profile(space=self.containerTag, facts=tuple(m.memory() for m in self.facts),
                       recent=tuple(m.memory() for m in self.recent))


class ConflictRecord(_Wire):
    """Two hits that say different things on one subject (near-duplicates)."""

    newer: str = Field(description="Id of the later memory.")
    older: str = Field(description="Id of the earlier memory: update or forget it if it no longer holds.")
    similarity: float = Field(allow_inf_nan=False, description="Cosine similarity of the two memories.")


class HitRecord(_Wire):
    """One hit: the memory, its cosine similarity, the fused score and the channels that found it."""

    memory: MemoryRecord
    similarity: float | None = Field(None, ge=-1.0001, le=1.0001, allow_inf_nan=False,
                                     description="Cosine similarity of query and memory; "
                                                 "never a fused score.")
    score: float = Field(0.0, allow_inf_nan=False)
    channels: list[str] = Field(default_factory=list)


class SearchRecord(_Wire):
    """A search's hits, best first (zero hits is a normal answer)."""

    query: str
    containerTag: str
    searchedTags: list[str]
    count: int
    results: list[HitRecord]
    profile: ProfileRecord | None = None
    conflicts: list[ConflictRecord] = Field(default_factory=list)

    @classmethod
    def of(cls, res: SearchResult) -> SearchRecord:
        """The record of ``res``."""
        return cls.model_construct(
            query=res.query, containerTag=res.space, searchedTags=list(res.spaces), count=len(res.hits),
            results=[HitRecord.model_construct(memory=MemoryRecord.of(h.memory), similarity=h.similarity,
                                               score=h.score, channels=list(h.channels)) for h in res.hits],
            profile=ProfileRecord.of(res.profile) if res.profile is not None else None,
            conflicts=[ConflictRecord.model_construct(newer=c.newer, older=c.older, similarity=c.similarity)
                       for c in res.conflicts])

    def result(self) -> SearchResult:
        """The :class:`~bli_memory.core.models.SearchResult` this record holds."""
        return SearchResult(
            query=self.query, space=self.containerTag,
            spaces=tuple(self.searchedTags or (self.containerTag,)),
            hits=tuple(SearchHit(memory=h.memory.memory(), similarity=h.similarity, score=h.score,
                                 channels=tuple(h.channels)) for h in self.results),
            profile=self.profile.profile() if self.profile is not None else None,
            conflicts=tuple(Conflict(c.newer, c.older, c.similarity) for c in self.conflicts))


class TermCount(_Wire):
    """In how many live memories of the space one term occurs."""

    term: str
    count: int = Field(ge=0)


class RecallRecord(SearchRecord):
    """A prompt's search and what the prompt hook's gate weighs it with (empty terms,
    ``live`` 0 and a null background when nothing was found)."""

    terms: list[TermCount] = Field(default_factory=list)
    live: int = Field(0, ge=0)
    background: float | None = Field(None, ge=-1.0001, le=1.0001, allow_inf_nan=False)

    @classmethod
    def of_recall(cls, got: Recall) -> RecallRecord:
        """The record of ``got``."""
        terms = [TermCount.model_construct(term=t, count=c) for t, c in got.term_counts]
        return cls.model_construct(**dict(SearchRecord.of(got.result)), live=got.live,
                                   background=got.background, terms=terms)

    def recall(self) -> Recall:
        """The :class:`~bli_memory.core.models.Recall` this record holds."""
        return Recall(result=self.result(), term_counts=tuple((t.term, t.count) for t in self.terms),
                      live=self.live, background=self.background)


def search_of(d: Any) -> SearchResult:
    """The :class:`SearchResult` of a search answer's JSON object.

    Raises:
        pydantic.ValidationError: the object is not a search answer.
    """
    return SearchRecord.model_validate(d).result()
