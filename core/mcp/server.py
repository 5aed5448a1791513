"""The MCP server ``bli-memory``: four memory tools over stdio.

Tool names and argument names are those of the hosted Supermemory MCP
(``search_memory(query, containerTag?, includeProfile?, limit?)``,
``save_memory(content, containerTag?, customId?, extract?, metadata?)``) so agents,
skills and habits keep working; ``update_memory`` and ``forget_memory`` complete the
set (BLI Memory spec, tool table).

Every tool returns text for the model plus ``structuredContent`` (the rows and the
space). Zero hits is a normal result whose text says the record is silent; a
failure is ``isError`` with a reason. stdout carries JSON-RPC only: every log line
goes to stderr. The embedding model loads in the background after start, so
``initialize`` answers at once.
"""

from __future__ import annotations

import os
import threading
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from bli_memory.core._version import VERSION
from bli_memory.core.errors import BliMemoryError
from bli_memory.core.mcp.tool_text import add_tool
from bli_memory.core.memory.version_ids import version_note

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.models import Memory, SearchHit
    from bli_memory.core.settings import Settings

__all__ = [
    "AuditOutput",
    "ConflictOut",
    "ForgetOutput",
    "GetOutput",
    "HitOut",
    "InfoOutput",
    "ListOutput",
    "MemoryOut",
    "ProfileOut",
    "SaveOutput",
    "SearchOutput",
    "ServerState",
    "StatusOutput",
    "UpdateOutput",
    "build_server",
    "default_state",
    "run_stdio",
]

SERVER_NAME = "bli-memory"

INSTRUCTIONS = (
    "Durable memory shared by every coding agent this person uses. Search it before "
    "answering questions about this project's decisions, conventions, commands and history; "
    "save durable facts (decisions and their reasons, preferences, conventions, fixes) when "
    "you learn them; update a memory when a fact changes instead of saving a contradiction. "
    "Zero results is a normal answer: the record is silent on that."
)


# --- structured output -----------------------------------------------------------


class MemoryOut(BaseModel):
    """One memory as the tools return it."""

    id: str
    content: str
    containerTag: str
    customId: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    source: str
    sessionId: str | None = None
    createdAt: str
    updatedAt: str
    version: int
    supersedes: str | None = None
    state: str


class HitOut(MemoryOut):
    """A search hit: the memory, its cosine similarity, and which retrievers found it."""

    similarity: float | None = Field(
        default=None, description="Cosine similarity of query and memory; never a fused score."
    )
    matchedBy: list[str] = Field(default_factory=list)


class ProfileOut(BaseModel):
    """User Profile (durable facts) and Recent Context of a space."""

    facts: list[MemoryOut]
    recent: list[MemoryOut]


class ConflictOut(BaseModel):
    """Two results that say different things on one subject (near-duplicates)."""

    newer: str = Field(description="Id of the later memory.")
    older: str = Field(description="Id of the earlier memory: update or forget it if it no longer holds.")
    similarity: float = Field(description="Cosine similarity of the two memories.")


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


class SaveOutput(BaseModel):
    """Result of save_memory."""

    status: Literal["created", "duplicate", "updated", "queued"]
    containerTag: str = Field(description="Where the memory actually went.")
    memory: MemoryOut | None = None
    previousId: str | None = None
    jobId: str | None = None
    masked: int = Field(0, description="Secrets replaced by [REDACTED:<kind>] before saving.")


class UpdateOutput(BaseModel):
    """Result of update_memory."""

    status: Literal["updated", "unchanged"]
    containerTag: str
    memory: MemoryOut
    previous: MemoryOut
    named: MemoryOut | None = Field(
        default=None, description="The older version the given id named; the live version was acted on.")
    masked: int = Field(0, description="Secrets replaced by [REDACTED:<kind>] before saving.")


class ForgetOutput(BaseModel):
    """Result of forget_memory."""

    containerTag: str
    matchedBy: Literal["id", "content", "query"]
    similarity: float | None = None
    forgotten: MemoryOut
    named: MemoryOut | None = Field(
        default=None, description="The older version the given id named; the live version was acted on.")


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
        "saves refuse it until `bli-memory-mcp memory reembed` runs.")
    route: str
    switches: dict[str, Any]


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


def _status_text(st: dict[str, Any]) -> str:
    memory = "on" if st["enabled"] else "OFF (hooks neither inject nor capture; search/save refuse)"
    recording = f"on since {st['recordingSince']}" if st["recording"] else "off"
    return f"Memory for {st['space']} is {memory}; session recording is {recording}."


def _memory_out(m: Memory) -> dict[str, Any]:
    return {
        "id": m.id, "content": m.content, "containerTag": m.space, "customId": m.custom_id,
        "metadata": dict(m.metadata), "source": m.source, "sessionId": m.session_id,
        "createdAt": m.created_at, "updatedAt": m.updated_at, "version": m.version,
        "supersedes": m.supersedes, "state": m.state,
    }


def _hit_out(h: SearchHit) -> dict[str, Any]:
    return {**_memory_out(h.memory), "similarity": h.similarity, "matchedBy": list(h.channels)}


def _date(ts: str) -> str:
    return ts[:10] if ts else "????-??-??"


def _masked_text(masked: int) -> str:
    """The sentence a save or update adds when it masked secrets ("" when none)."""
    if not masked:
        return ""
    return f" {masked} secret{'s' if masked != 1 else ''} masked as [REDACTED:<kind>]."


def _one_line(text: str, limit: int = 400) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- server state ----------------------------------------------------------------


@dataclass
class ServerState:
    """What the tools share for the life of the server (built by the lifespan).

    ``session_id`` names this connection's session (``mcp-<uuid4>``): a host starts one
    server per agent session over stdio, so the memories one session saves are session
    neighbours, and the ``context`` channel of search applies to them as to
    hook-captured ones (:func:`bli_memory.core.memory.ranking.context_bonus`).
    """

    settings: Settings
    backend: MemoryBackend
    default_space: str
    space_origin: str
    session_id: str = field(default_factory=lambda: f"mcp-{uuid.uuid4()}")


def _default_space(settings: Settings) -> tuple[str, str]:
    from bli_memory.core.memory.spaces import derive_space

    env = dict(os.environ)
    if settings.container_tag:
        env["BLI_MEMORY_CONTAINER_TAG"] = settings.container_tag
    space = derive_space(os.getcwd(), environ=env)
    return space.tag, space.derived_from


def _resolve_tag(state: ServerState, container_tag: str | None) -> str:
    from bli_memory.core.memory.spaces import validate_tag

    if container_tag is None or not container_tag.strip():
        return state.default_space
    try:
        return validate_tag(container_tag)
    except ValueError as exc:
        raise ToolError(f"invalid_input: {exc}") from exc


def _require_enabled(space: str) -> None:
    from bli_memory.core.memory.switches import is_enabled

    if not is_enabled(space):
        raise ToolError(
            f"disabled: memory is switched off for {space} (or globally); nothing was searched or "
            "saved. Call enable_memory to switch it back on."
        )


def _parse_expiry(value: str | None) -> str | None:
    """An ISO 8601 date or time -> the store's UTC form.

        See :func:`bli_memory.core.memory.expiry.parse_expiry`.
        """
    from bli_memory.core.memory.expiry import parse_expiry

    try:
        return parse_expiry(value)
    except BliMemoryError as exc:
        raise ToolError(f"{exc.reason}: {exc.message}") from exc


def build_server(state_factory: Any) -> MCPServer:
    """Build the MCP server with its four tools.

    Args:
        state_factory: Zero-argument callable returning the :class:`ServerState`; called
            once when the server starts (so tests can inject a backend).

    Returns:
        An ``mcp.server.mcpserver.MCPServer`` named ``bli-memory``.
    """
    holder: dict[str, ServerState] = {}
    wake = threading.Event()

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[ServerState]:
        state = state_factory()
        holder["state"] = state
        # numpy first, in this thread, before any worker thread starts: two threads
        # importing it at once can be handed a half-initialised module by importlib.
        import numpy  # noqa: F401

        warmed = threading.Event()
        warm = getattr(state.backend, "warm_up", None)
        if warm is not None:
            # Load the model off the request path so `initialize` answers at once.
            threading.Thread(target=_safe_warm, args=(warm, warmed), daemon=True, name="warm-up").start()
        else:
            warmed.set()
        stop = threading.Event()
        drainer = _start_extract_drain(state.backend, stop, wake, ready=warmed)
        try:
            yield state
        finally:
            stop.set()
            wake.set()
            if drainer is not None:
                drainer.join(timeout=10)
            warmed.wait(timeout=30)  # never close the store under the warm-up thread
            state.backend.close()

    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=VERSION, lifespan=lifespan)

    async def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
        except BliMemoryError as exc:
            raise ToolError(f"{exc.reason}: {exc.message}") from exc

    def result(text: str, payload: BaseModel) -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=payload.model_dump(mode="json"),
        )

    async def search_memory(
        query: Annotated[
            str, Field(description="What to look for: a question, words or an identifier.")
        ] = "",
        containerTag: Annotated[
            str | None, Field(description="Space to search; default: the current project's.")
        ] = None,
        includeProfile: Annotated[
            bool, Field(description="Also return the User Profile and Recent Context.")
        ] = False,
        limit: Annotated[int, Field(ge=1, le=100, description="Most results to return.")] = 10,
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Search this project's memory by meaning, by keyword and by recency at once.

        Use it before answering questions about decisions, conventions, commands, people
        or history of this project. Exact identifiers (ticket ids, file names, error
        codes) match lexically. Zero results is a normal answer meaning the record is
        silent; an error means the search could not run.
        """
        state = holder["state"]
        tag = _resolve_tag(state, containerTag) if containerTag else state.default_space
        _require_enabled(tag)
        res = await call(
            state.backend.search, query, space=tag, limit=limit, include_profile=includeProfile
        )
        profile = None
        if res.profile is not None:
            profile = {
                "facts": [_memory_out(m) for m in res.profile.facts],
                "recent": [_memory_out(m) for m in res.profile.recent],
            }
        out = SearchOutput(
            query=query, containerTag=res.space, searchedTags=list(res.spaces), count=len(res.hits),
            results=[_hit_out(h) for h in res.hits], profile=profile,
            conflicts=[ConflictOut(**c.to_dict()) for c in res.conflicts],
        )
        if res.hits:
            noun = "memory" if len(res.hits) == 1 else "memories"
            lines = [f"{len(res.hits)} {noun} in space {res.space}, best first:"]
            for i, h in enumerate(res.hits, 1):
                sim = f"similarity {h.similarity:.2f}" if h.similarity is not None else "keyword match"
                lines.append(f"{i}. [{_date(h.memory.created_at)}] {_one_line(h.memory.content)}")
                lines.append(f"   ({sim}; id {h.memory.id})")
            for c in res.conflicts:
                lines.append(f"Possible conflict: {c.newer} (newer) and {c.older} (older) are on one "
                             "subject; update or forget the one that no longer holds.")
        elif not query.strip():
            lines = ["The query is empty, so nothing was searched; the record is silent."]
        else:
            lines = [f"The record is silent: no memory in space {res.space} matches this query."]
        if profile is not None:
            lines.append("User Profile:")
            lines += [f"- [{_date(m.created_at)}] {_one_line(m.content)}" for m in res.profile.facts] or [
                "- (none recorded)"
            ]
            lines.append("Recent Context:")
            lines += [f"- [{_date(m.created_at)}] {_one_line(m.content)}" for m in res.profile.recent] or [
                "- (none recorded)"
            ]
        return result("\n".join(lines), out)

    async def save_memory(
        content: Annotated[str, Field(description="The fact to remember, self-contained.")],
        containerTag: Annotated[
            str | None, Field(description="Space to save in; default: the current project's.")
        ] = None,
        customId: Annotated[
            str | None, Field(description="Your key for this memory; saving again with it replaces it.")
        ] = None,
        extract: Annotated[
            bool, Field(description="Distil atomic facts from raw text (a conversation) first.")
        ] = False,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="JSON object stored with the memory.")
        ] = None,
        expiresAt: Annotated[
            str | None,
            Field(description="ISO 8601 time after which the memory leaves search (e.g. 2026-12-31)."),
        ] = None,
    ) -> Annotated[CallToolResult, SaveOutput]:
        """Remember something durable: a decision and its reason, a preference, a convention.

        Write one self-contained fact per call. Saving identical text again changes
        nothing; a customId replaces the memory saved under it, keeping the old version
        as history. The result names the space the memory actually went to.
        """
        from bli_memory.core.memory.redaction import redact

        state = holder["state"]
        tag = _resolve_tag(state, containerTag)
        # Secrets never reach the store, on either backend: a team space shares what it keeps.
        clean = await call(redact, content)
        if extract:
            _require_enabled(tag)
            # Not even the queue row holds them (the worker redacts again).
            job_id = await call(
                state.backend.enqueue_extract, clean.text, space=tag, source="mcp",
                session_id=state.session_id,
            )
            wake.set()
            out = SaveOutput(status="queued", containerTag=tag, jobId=job_id, masked=clean.masked)
            return result(
                f"Queued for extraction in space {tag}; job {job_id}. Durable facts are distilled "
                "and reconciled with the space in the background (duplicates are not saved twice)."
                + _masked_text(clean.masked),
                out,
            )
        _require_enabled(tag)
        expires = _parse_expiry(expiresAt)
        res = await call(state.backend.save, clean.text, space=tag, custom_id=customId, metadata=metadata,
                         expires_at=expires, session_id=state.session_id)
        out = SaveOutput(
            status=res.status, containerTag=res.space,
            memory=_memory_out(res.memory) if res.memory else None,
            previousId=res.previous.id if res.previous else None, jobId=res.job_id,
            masked=clean.masked,
        )
        verb = {
            "created": "Saved",
            "duplicate": "Already remembered (identical text); nothing new written",
            "updated": "Saved, replacing the previous version under this customId",
            "queued": "Queued for extraction",
        }[res.status]
        where = f" in space {res.space}"
        if res.space != tag:
            where += f" (the canonical space for {tag})"
        ident = f"; id {res.memory.id}" if res.memory else ""
        return result(f"{verb}{where}{ident}." + _masked_text(clean.masked), out)

    async def update_memory(
        content: Annotated[str, Field(description="The corrected text, in full.")],
        id: Annotated[str | None, Field(description="Id of the memory to replace.")] = None,
        customId: Annotated[
            str | None, Field(description="customId of the memory to replace (instead of id).")
        ] = None,
        containerTag: Annotated[
            str | None, Field(description="Space of the memory; default: the current project's.")
        ] = None,
    ) -> Annotated[CallToolResult, UpdateOutput]:
        """Replace what a memory says, keeping the old version as history.

        Use it when a remembered fact changed (a new decision, a corrected value).
        Give the memory's id (from search_memory) or its customId.
        """
        from bli_memory.core.memory.redaction import redact

        state = holder["state"]
        tag = _resolve_tag(state, containerTag)
        clean = await call(redact, content)
        res = await call(state.backend.update, clean.text, space=tag, id=id, custom_id=customId)
        out = UpdateOutput(
            status=res.status, containerTag=res.memory.space, memory=_memory_out(res.memory),
            previous=_memory_out(res.previous), named=_memory_out(res.named) if res.named else None,
            masked=clean.masked,
        )
        note = version_note(id, res.previous, res.named)
        if res.status == "unchanged":
            text = f"Unchanged: memory {res.memory.id} already says exactly that.{note}"
        else:
            text = (
                f"Updated: memory {res.memory.id} (version {res.memory.version}) replaces "
                f"{res.previous.id}, which is kept as history.{note}"
            )
        return result(text + _masked_text(clean.masked), out)

    async def forget_memory(
        id: Annotated[str | None, Field(description="Id of the memory to forget.")] = None,
        content: Annotated[str | None, Field(description="Exact text of the memory to forget.")] = None,
        query: Annotated[
            str | None,
            Field(description="Forget the closest match, only if its similarity is at least 0.85."),
        ] = None,
        containerTag: Annotated[
            str | None, Field(description="Space of the memory; default: the current project's.")
        ] = None,
    ) -> Annotated[CallToolResult, ForgetOutput]:
        """Forget one memory (a tombstone: it leaves search and every index).

        Choose it by id, by its exact text, or by a query whose closest match has
        similarity 0.85 or more; a weaker match is refused rather than guessed.
        """
        state = holder["state"]
        tag = _resolve_tag(state, containerTag)
        res = await call(state.backend.forget, space=tag, id=id, content=content, query=query)
        out = ForgetOutput(
            containerTag=res.memory.space, matchedBy=res.matched_by, similarity=res.similarity,
            forgotten=_memory_out(res.memory), named=_memory_out(res.named) if res.named else None,
        )
        how = {"id": "by id", "content": "by exact text", "query": f"by closest match ({res.similarity})"}
        note = version_note(id, res.memory, res.named)
        return result(f"Forgotten {how[res.matched_by]}: memory {res.memory.id}.{note}", out)

    add_tool(
        server,
        search_memory,
        annotations=ToolAnnotations(
            title="Search memory", read_only_hint=True, destructive_hint=False, idempotent_hint=True,
            open_world_hint=False,
        ),
    )
    add_tool(
        server,
        save_memory,
        annotations=ToolAnnotations(
            title="Save memory", read_only_hint=False, destructive_hint=False, idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    add_tool(
        server,
        update_memory,
        annotations=ToolAnnotations(
            title="Update memory", read_only_hint=False, destructive_hint=False, idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    add_tool(
        server,
        forget_memory,
        annotations=ToolAnnotations(
            title="Forget memory", read_only_hint=False, destructive_hint=True, idempotent_hint=False,
            open_world_hint=False,
        ),
    )

    # --- memory controls -------------------------------------------------------------

    def backend_method(name: str) -> Any:
        fn = getattr(holder["state"].backend, name, None)
        if fn is None:
            raise ToolError(f"not_available: {name} is not available with this store")
        return fn

    async def memory_info(
        containerTag: Annotated[str | None, Field(description="Space to describe; default: current.")] = None,
    ) -> Annotated[CallToolResult, InfoOutput]:
        """Describe the memory in use: the space and how it was derived, its aliases,
        counts by state, the store, the embedding model, and the route that served this."""
        state = holder["state"]
        tag = _resolve_tag(state, containerTag)
        info = await call(backend_method("info"), space=tag)
        from bli_memory.core.memory.switches import status as switch_status

        out = InfoOutput(
            containerTag=info["space"],
            derivedFrom=state.space_origin if tag == state.default_space else "containerTag argument",
            aliases=info["aliases"], counts=info["counts"], recordings=info.get("recordings", 0),
            store=info["store"], embeddingModel=info["embeddingModel"],
            storeEmbeddingModel=info.get("storeEmbeddingModel"),
            route="mcp stdio -> " + str(info["store"].get("kind", "?")),
            switches=switch_status(info["space"]),
        )
        c = info["counts"]
        text = (
            f"Space {out.containerTag} ({out.derivedFrom}); aliases: {', '.join(out.aliases) or 'none'}.\n"
            f"Memories: {c.get('active', 0)} live, {c.get('superseded', 0)} superseded, "
            f"{c.get('forgotten', 0)} forgotten. Store: {_store_text(info['store'])}. "
            f"Model: {out.embeddingModel}. "
            f"Memory is {'on' if out.switches['enabled'] else 'OFF'}; recording is "
            f"{'on' if out.switches['recording'] else 'off'}. Route: {out.route}."
        )
        if out.storeEmbeddingModel:
            text += (f"\nThe store holds vectors of {out.storeEmbeddingModel}: searches and saves are "
                     "refused until `bli-memory-mcp memory reembed` re-embeds it.")
        return result(text, out)

    async def list_memories(
        limit: Annotated[int, Field(ge=1, le=100, description="How many, newest first.")] = 20,
        containerTag: Annotated[str | None, Field(description="Space to list; default: current.")] = None,
    ) -> Annotated[CallToolResult, ListOutput]:
        """List the newest memories of a space as short previews (use get_memory for one in full)."""
        state = holder["state"]
        tag = _resolve_tag(state, containerTag)
        rows = await call(backend_method("list_memories"), space=tag, limit=limit)
        items = [{**_memory_out(m), "content": _one_line(m.content, 200)} for m in rows]
        out = ListOutput(containerTag=tag, count=len(items), memories=items)
        if not items:
            return result(f"The record is silent: space {tag} holds no live memories.", out)
        lines = [f"{len(items)} newest {'memory' if len(items) == 1 else 'memories'} in {tag}:"]
        lines += [f"- [{_date(m.created_at)}] {_one_line(m.content, 200)} (id {m.id})" for m in rows]
        return result("\n".join(lines), out)

    async def get_memory(
        id: Annotated[str, Field(description="Id of the memory (any version).")],
        include_inactive: Annotated[
            bool, Field(description="Also show superseded versions and the tombstone.")
        ] = False,
    ) -> Annotated[CallToolResult, GetOutput]:
        """Read one memory in full, with its version history."""
        memory, history = await call(backend_method("get_memory"), id, include_inactive=include_inactive)
        out = GetOutput(memory=_memory_out(memory), history=[_memory_out(m) for m in history])
        note = version_note(id, memory, history=history)
        lines = [f"[{_date(memory.created_at)}] {memory.content}",
                 f"(id {memory.id}, version {memory.version}, {memory.state}, space {memory.space})"
                 + (f"\n{note.strip()}" if note else "")]
        for m in history:
            lines.append(
                f"history: version {m.version} ({m.state}, {_date(m.created_at)}): {_one_line(m.content)}"
            )
        return result("\n".join(lines), out)

    async def memory_status(
        containerTag: Annotated[str | None, Field(description="Space; default: current.")] = None,
    ) -> Annotated[CallToolResult, StatusOutput]:
        """Say whether memory (recall and capture) is on, and whether sessions are recorded."""
        from bli_memory.core.memory.switches import status as switch_status

        tag = _resolve_tag(holder["state"], containerTag)
        st = switch_status(tag)
        return result(_status_text(st), StatusOutput(**st))

    async def enable_memory(
        containerTag: Annotated[str | None, Field(description="Space; default: current.")] = None,
        scope: Annotated[
            Literal["space", "global"], Field(description="This space, or everywhere.")
        ] = "space",
    ) -> Annotated[CallToolResult, StatusOutput]:
        """Switch memory recall and capture back on (for this space, or globally)."""
        from bli_memory.core.memory.switches import set_enabled
        from bli_memory.core.memory.switches import status as switch_status

        tag = _resolve_tag(holder["state"], containerTag)
        set_enabled(True, None if scope == "global" else tag)
        st = switch_status(tag)
        return result(_status_text(st), StatusOutput(**st))

    async def disable_memory(
        containerTag: Annotated[str | None, Field(description="Space; default: current.")] = None,
        scope: Annotated[
            Literal["space", "global"], Field(description="This space, or everywhere.")
        ] = "space",
    ) -> Annotated[CallToolResult, StatusOutput]:
        """Switch memory off for a sensitive task: hooks stop injecting and capturing, and
        search/save refuse, until enable_memory. Nothing stored is deleted."""
        from bli_memory.core.memory.switches import set_enabled
        from bli_memory.core.memory.switches import status as switch_status

        tag = _resolve_tag(holder["state"], containerTag)
        set_enabled(False, None if scope == "global" else tag)
        st = switch_status(tag)
        return result(_status_text(st), StatusOutput(**st))

    async def record_session(
        action: Annotated[Literal["start", "stop", "status"], Field(description="start, stop or status.")],
        containerTag: Annotated[str | None, Field(description="Space; default: current.")] = None,
    ) -> Annotated[CallToolResult, StatusOutput]:
        """Record this project's session turns capture-only (bounded, redacted), never
        injecting them. Off by default. A person reads the recorded turns back with
        `bli-memory-mcp memory recordings` and erases them with `memory clear-recordings`."""
        from bli_memory.core.memory.switches import set_recording
        from bli_memory.core.memory.switches import status as switch_status

        tag = _resolve_tag(holder["state"], containerTag)
        if action != "status":
            set_recording(action == "start", tag)
        st = switch_status(tag)
        return result(_status_text(st), StatusOutput(**st))

    async def memory_audit(
        repair: Annotated[bool, Field(description="Rebuild the derived indexes from the rows.")] = False,
    ) -> Annotated[CallToolResult, AuditOutput]:
        """Check the store's integrity: every live memory is in the keyword index and has a
        vector of the recorded model, and no index entry points at a retired memory."""
        report = await call(backend_method("audit"), repair=repair)
        out = AuditOutput(**report)
        verdict = "intact" if report["ok"] else "NOT intact"
        text = (f"Store is {verdict}: {report['missing_keyword']} live rows missing from the keyword index, "
                f"{report['stale_keyword']} stale index entries, {report['missing_vector']} missing vectors, "
                f"{report['wrong_model']} vectors of another model or unusable. Counts: "
                + ", ".join(f"{n} {state}" for state, n in report["counts"].items()) + ".")
        if report.get("repaired"):
            text += f" Repaired; now: {report.get('after')}."
        return result(text, out)

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)
    for fn, title in ((memory_info, "Memory info"), (list_memories, "List memories"),
                      (get_memory, "Get memory"), (memory_status, "Memory status")):
        add_tool(server, fn, annotations=read_only.model_copy(update={"title": title}))
    switch = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                             open_world_hint=False)
    for fn, title in ((enable_memory, "Enable memory"), (disable_memory, "Disable memory"),
                      (record_session, "Record session"), (memory_audit, "Audit memory store")):
        add_tool(server, fn, annotations=switch.model_copy(update={"title": title}))
    # --- experience log (BLI Memory spec "Live A/B"; bli_memory.core.experience.log) ---------

    from mcp.server.mcpserver import Context

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

    async def memory_experience(
        store: Annotated[
            Literal["bli", "supermemory", "both"],
            Field(description="Which store's recall this is about, by the marker you saw: "
                  "[bli] -> bli, ◪ -> supermemory, both -> a joint opinion."),
        ],
        verdict: Annotated[
            Literal["win", "loss", "noise"],
            Field(description="win: the recall helped; loss: it misled or was missing; noise: irrelevant."),
        ],
        reason: Annotated[
            str,
            Field(description="One line, at most 500 characters: an opinion about the tool, never "
                  "a prompt, a memory's text or a secret."),
        ],
        ctx: Any = None,
    ) -> Any:
        """Record whether memory helped on this turn, in one line (the team's experience log).

        Call it after recalled memory ([bli] or ◪ lines) clearly helped (win), misled or
        missed something it should have known (loss), or only added clutter (noise). The
        entry is appended to ~/.codex/AGENT-EXPERIENCE.md and shipped to the store; an
        entry that cannot be shipped yet stays queued and is retried later.
        """
        from bli_memory.core.experience.log import detect_agent, log_experience, project_from_space

        state = holder["state"]
        client = None
        try:
            client = ctx.session.client_params.client_info.name
        except AttributeError:
            pass
        receipt = await call(
            log_experience, verdict, store, reason, settings=state.settings,
            agent=detect_agent(client_name=client), project=project_from_space(state.default_space),
        )
        e = receipt.entry
        out = ExperienceOutput(
            id=e.id, store=e.store, marker=e.marker, verdict=e.verdict, reason=e.reason, line=e.line,
            masked=e.masked, shipped=receipt.shipped, shippedTo=receipt.shipped_to,
            queuedReason=None if receipt.shipped else (receipt.sync.reason or "queued"),
        )
        where = {"service": "the memory service", "local": "the local store"}.get(receipt.shipped_to or "")
        status = f"Shipped to {where}." if receipt.shipped else (
            f"Queued ({out.queuedReason}); the next sync retries it under the same id.")
        return result(f"Recorded {e.verdict} for {e.store} {e.marker}: {e.line}\n{status}", out)

    # Resolved here: the output model is local, so string annotations could not name it.
    memory_experience.__annotations__.update(
        ctx=Context, **{"return": Annotated[CallToolResult, ExperienceOutput]}
    )
    add_tool(
        server,
        memory_experience,
        annotations=ToolAnnotations(
            title="Record memory experience", read_only_hint=False, destructive_hint=False,
            idempotent_hint=False, open_world_hint=False,
        ),
    )
    return server


#: Seconds between checks of the extract queue by the server's background drain
#: (the stop hook queues from other processes; the server's own saves wake it at once).
EXTRACT_POLL_SECONDS = 10.0


def _start_extract_drain(
    backend: Any, stop: threading.Event, wake: threading.Event, *, ready: threading.Event | None = None
) -> threading.Thread | None:
    """Run queued extract jobs in a background thread, off the request path.

    Only for a backend with a local job queue (the embedded store); the memory
    service drains its own. Returns the thread, or None when there is nothing to drain.
    """
    from bli_memory.core.extraction.worker import default_worker_id, job_queue

    try:
        queue = job_queue(backend)  # opens the store: it may be unreadable right now
    except BliMemoryError as exc:
        import sys

        sys.stderr.write(f"[bli-memory] extract jobs will not run: {exc.reason}\n")
        return None
    if queue is None:
        return None
    worker_id = "mcp:" + default_worker_id()

    def loop() -> None:
        import sys

        from bli_memory.core.extraction.worker import drain

        # Let the warm-up finish loading the model first: one thread imports it.
        while ready is not None and not ready.wait(0.2):
            if stop.is_set():
                return
        while not stop.is_set():
            wake.clear()  # a save queued while this drain runs sets it again
            try:
                ran = drain(backend, max_jobs=10, worker_id=worker_id, stop=stop)
            except Exception as exc:  # keep serving tools; the next poll tries again
                sys.stderr.write(f"[bli-memory] extract drain failed: {type(exc).__name__}\n")
                ran = 0
            if ran == 0:
                wake.wait(EXTRACT_POLL_SECONDS)

    thread = threading.Thread(target=loop, daemon=True, name="extract-drain")
    thread.start()
    return thread


def _store_text(store: dict[str, Any]) -> str:
    """``embedded file /path`` or ``team service https://... as alice (laptop)``."""
    if store.get("kind") == "embedded":
        return f"embedded file {store.get('path')}"
    if store.get("kind") == "service":
        who = f" as {store['person']} ({store.get('device')})" if store.get("person") else ""
        return f"team service {store.get('url')}{who}"
    return ", ".join(f"{k} {v}" for k, v in store.items())


def _safe_warm(warm: Any, done: threading.Event) -> None:
    try:
        warm()
    except Exception as exc:  # the first tool call will report it with a reason
        import sys

        sys.stderr.write(f"[bli-memory] warm-up failed: {type(exc).__name__}\n")
    finally:
        done.set()


def default_state(settings: Settings) -> ServerState:
    """Build the server state from settings: backend from the plugins, default space."""
    from bli_memory.core.plugins import get_plugin_manager

    pm = get_plugin_manager()
    backend = pm.hook.memory_backend(settings=settings)
    tag, origin = _default_space(settings)
    return ServerState(settings=settings, backend=backend, default_space=tag, space_origin=origin)


def run_stdio(settings: Settings) -> None:
    """Run the MCP server on stdio until the client closes it.

    Every line read is answered: not JSON gets -32700, not JSON-RPC gets -32600 with
    the request's id, and lone surrogates become U+FFFD (:mod:`bli_memory.core.mcp.stdio`).
    """
    from bli_memory.core.mcp.stdio import robust_stdio_server

    server = build_server(lambda: default_state(settings))
    # MCPServer.run_stdio_async with our transport, which answers every line
    # (mcp 2.3.0 drops unparsable ones without a response).
    lowlevel = server._lowlevel_server

    async def serve() -> None:
        async with robust_stdio_server() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    anyio.run(serve)
