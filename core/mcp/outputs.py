"""What the MCP tools return: the structured-output models and the text helpers.

Every tool answers with text for the model plus ``structuredContent``, a JSON object
validated against the tool's ``outputSchema``; the schema is the pydantic model named
in the tool's return annotation (``Annotated[CallToolResult, SearchOutput]``, the
MCP SDK's way of declaring an output schema for a ``CallToolResult``). Field names are
camelCase, as in the hosted Supermemory MCP whose tool names these are. A memory is the one
wire shape of :mod:`bli_memory.core.memory.wire`: it names the space it lives in ``space``,
where an answer names the space the call acted on ``containerTag``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from bli_memory.core.memory.wire import ConflictRecord, MemoryRecord, ProfileRecord

if TYPE_CHECKING:
    from bli_memory.core.models import Memory, SearchHit

__all__ = [
    "AuditOutput",
    "ConflictOut",
    "DaemonOut",
    "DocumentOut",
    "ExperienceOutput",
    "ForgetOutput",
    "GetOutput",
    "HitOut",
    "InfoOutput",
    "ListOutput",
    "MemoryOut",
    "ProfileOut",
    "SaveOutput",
    "SearchOutput",
    "StatusOutput",
    "UpdateOutput",
    "day",
    "hit_out",
    "masked_text",
    "memory_out",
    "one_line",
    "status_text",
    "store_text",
    "tool_result",
]


#: One memory as the tools return it: the one wire shape (:mod:`bli_memory.core.memory.wire`).
MemoryOut = MemoryRecord


class HitOut(MemoryOut):
    """A search hit: the memory, its cosine similarity, and which retrievers found it."""

    similarity: float | None = Field(
        default=None, description="Cosine similarity of query and memory; never a fused score."
    )
    matchedBy: list[str] = Field(default_factory=list)


#: User Profile and Recent Context of a space, and two hits that disagree: the wire shapes.
ProfileOut = ProfileRecord
ConflictOut = ConflictRecord


class DocumentOut(BaseModel):
    """A match in the project's own documents or commit history (never a memory)."""

    kind: Literal["document", "commit"]
    path: str | None = Field(default=None, description="The file, relative to the repository root.")
    startLine: int | None = None
    endLine: int | None = None
    sha: str | None = Field(default=None, description="The commit's id (a commit match).")
    date: str | None = Field(default=None, description="The commit's date (a commit match).")
    heading: list[str] = Field(default_factory=list, description="The headings above the match.")
    text: str = Field(description="The supporting text, in full, its secrets masked.")
    similarity: float = Field(description="Cosine similarity of the text and the query.")
    link: str | None = Field(default=None, description="Where to open it.")


class SearchOutput(BaseModel):
    """Result of search_memory."""

    query: str
    containerTag: str = Field(description="Canonical tag of the space searched.")
    searchedTags: list[str] = Field(description="Every tag naming the space (aliases included).")
    count: int
    results: list[HitOut]
    profile: ProfileOut | None = None
    conflicts: list[ConflictOut] = Field(
        default_factory=list,
        description="Near-duplicate results on one subject, newer first; resolve with "
        "update_memory or forget_memory.")
    documents: list[DocumentOut] = Field(
        default_factory=list,
        description="Matches in the project's own documents and commit messages, kept apart "
        "from the memories (`bli-memory-mcp documents index` builds the index).")


class SaveOutput(BaseModel):
    """Result of save_memory."""

    status: Literal["created", "duplicate", "updated", "queued"]
    containerTag: str = Field(description="Where the memory actually went.")
    memory: MemoryOut | None = None
    previousId: str | None = None
    jobId: str | None = None
    masked: int = Field(0, description="Secrets replaced by a placeholder naming their kind before saving.")


class UpdateOutput(BaseModel):
    """Result of update_memory."""

    status: Literal["updated", "unchanged"]
    containerTag: str
    memory: MemoryOut
    previous: MemoryOut
    named: MemoryOut | None = Field(
        default=None, description="The older version the given id named; the live version was acted on.")
    masked: int = Field(0, description="Secrets replaced by a placeholder naming their kind before saving.")


class ForgetOutput(BaseModel):
    """Result of forget_memory."""

    containerTag: str
    matchedBy: Literal["id", "content", "query"]
    similarity: float | None = None
    forgotten: MemoryOut
    named: MemoryOut | None = Field(
        default=None, description="The older version the given id named; the live version was acted on.")


class DaemonOut(BaseModel):
    """The resident daemon that answered, as memory_info shows it."""

    pid: int | None = None
    version: str | None = None
    rssBytes: int | None = Field(default=None, description="Memory the daemon holds (resident set size).")


class InfoOutput(BaseModel):
    """Result of memory_info."""

    containerTag: str
    derivedFrom: str
    aliases: list[str]
    counts: dict[str, int]
    recordings: int = 0
    store: dict[str, Any]
    embeddingModel: str
    storeEmbeddingModel: str | None = Field(
        default=None, description="Set when the store holds another model's vectors: searches and "
        "saves refuse it until BLI_MEMORY_EMBEDDER names that model (the store as it is) or "
        "`bli-memory-mcp memory reembed` moves the store to embeddingModel.")
    route: str
    via: Literal["daemon", "in-process"] = Field(
        default="in-process", description="Who answered: the resident daemon, or this server process.")
    daemon: DaemonOut | None = None
    switches: dict[str, Any]
    reembedUnfinished: dict[str, int] | None = Field(
        default=None, description="Rows already moved by a `memory reembed` that stopped part way, by "
        "model; run it again to finish.")
    documents: dict[str, Any] | None = Field(
        default=None, description="The space's documents index: files, chunks, commits and when it "
        "was last refreshed, and the index run going on now (None: not indexed; `bli-memory-mcp documents "
        "index`).")


class ListOutput(BaseModel):
    """Result of list_memories: bounded previews, newest first."""

    containerTag: str
    count: int
    memories: list[MemoryOut]


class GetOutput(BaseModel):
    """Result of get_memory."""

    memory: MemoryOut
    history: list[MemoryOut]


class StatusOutput(BaseModel):
    """Memory and recording state of a space."""

    space: str
    enabled: bool
    globalEnabled: bool
    spaceEnabled: bool
    recording: bool
    recordingSince: str | None = None


class AuditOutput(BaseModel):
    """Result of memory_audit."""

    ok: bool
    counts: dict[str, int]
    missing_keyword: int
    stale_keyword: int
    missing_vector: int
    wrong_model: int
    repaired: bool
    after: dict[str, Any] | None = None


class ExperienceOutput(BaseModel):
    """Result of memory_experience."""

    id: str = Field(description="UUID of the entry (its sidecar in the outbox).")
    store: Literal["bli", "supermemory", "both"]
    marker: str = Field(description="[bli], ◪ or [bli]+◪.")
    verdict: Literal["win", "loss", "noise"]
    reason: str = Field(description="The reason as recorded, secrets masked.")
    line: str = Field(description="The line appended to ~/.codex/AGENT-EXPERIENCE.md.")
    masked: int = Field(description="Secrets masked in the reason.")
    shipped: bool = Field(description="Acknowledged by the store it is kept in.")
    shippedTo: Literal["service", "local"] | None = None
    queuedReason: str | None = Field(default=None, description="Why it is still queued, if it is.")


# --- shaping ---------------------------------------------------------------------


def tool_result(text: str, payload: BaseModel) -> CallToolResult:
    """A tool's answer: ``text`` as its one text block, ``payload`` as ``structuredContent``."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=payload.model_dump(mode="json"),
    )


def memory_out(m: Memory) -> MemoryOut:
    """One stored :class:`~bli_memory.core.models.Memory` as the tools return it (its record)."""
    return MemoryRecord.of(m)


def hit_out(h: SearchHit) -> HitOut:
    """A search hit: the memory, its cosine similarity and the retrievers that found it."""
    return HitOut.model_construct(**dict(MemoryRecord.of(h.memory)), similarity=h.similarity,
                                  matchedBy=list(h.channels))


def status_text(st: dict[str, Any]) -> str:
    """One sentence for a :func:`bli_memory.core.memory.switches.status` dict."""
    memory = "on" if st["enabled"] else "OFF (hooks neither inject nor capture; search/save refuse)"
    recording = f"on since {st['recordingSince']}" if st["recording"] else "off"
    return f"Memory for {st['space']} is {memory}; session recording is {recording}."


def day(ts: str) -> str:
    """The ``YYYY-MM-DD`` of a stored UTC time (``????-??-??`` when there is none)."""
    return ts[:10] if ts else "????-??-??"


def masked_text(masked: int) -> str:
    """The sentence a save or update adds when it masked secrets ("" when none)."""
    if not masked:
        return ""
    if masked == 1:
        return " 1 secret masked: it is stored as a placeholder that names its kind, not as its value."
    return f" {masked} secrets masked: each is stored as a placeholder that names its kind, not as its value."


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line (whitespace runs become one space), cut to ``limit`` characters with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def store_text(store: dict[str, Any]) -> str:
    """``embedded file /path`` or ``team service https://... as alice (laptop)``."""
    if store.get("kind") == "embedded":
        return f"embedded file {store.get('path')}"
    if store.get("kind") == "service":
        who = f" as {store['person']} ({store.get('device')})" if store.get("person") else ""
        return f"team service {store.get('url')}{who}"
    return ", ".join(f"{k} {v}" for k, v in store.items())
