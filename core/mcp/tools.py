"""The four memory MCP tools: ``search_memory``, ``save_memory``, ``update_memory``, ``forget_memory``.

Tool names and argument names are those of the hosted Supermemory MCP
(``search_memory(query, containerTag?, includeProfile?, limit?)``,
``save_memory(content, containerTag?, customId?, extract?, metadata?)``) so agents,
skills and habits keep working; ``update_memory`` and ``forget_memory`` complete the
set (BLI Memory spec, tool table).

Each tool is a module-level function taking its state from the lifespan context
(:mod:`bli_memory.core.mcp.state`); its docstring is the description clients show.
Zero hits is a normal result whose text says the record is silent; a failure raises
:class:`~mcp.server.mcpserver.exceptions.ToolError`, which the SDK answers as ``isError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from bli_memory.core.mcp.document_results import document_lines, document_out, read_documents
from bli_memory.core.mcp.outputs import (
    ConflictOut,
    ForgetOutput,
    ProfileOut,
    SaveOutput,
    SearchOutput,
    UpdateOutput,
    day,
    hit_out,
    masked_text,
    memory_out,
    one_line,
    tool_result,
)
from bli_memory.core.mcp.state import ToolContext, require_enabled, resolve_tag, run_blocking, state_of
from bli_memory.core.mcp.tool_text import add_tool
from bli_memory.core.memory.version_ids import version_note

if TYPE_CHECKING:
    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.models import ForgetResult

__all__ = ["forget_memory", "register_memory_tools", "save_memory", "search_memory", "update_memory"]


async def search_memory(
    ctx: ToolContext,
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
    scope: Annotated[
        Literal["memories", "documents", "both"],
        Field(description="Search the memories, the project's indexed documents and commit "
              "messages, or both (each in its own list)."),
    ] = "both",
) -> Annotated[CallToolResult, SearchOutput]:
    """Search this project's memory by meaning, by keyword and by recency at once.

    Use it before answering questions about decisions, conventions, commands, people
    or history of this project. Exact identifiers (ticket ids, file names, error
    codes) match lexically. Zero results is a normal answer meaning the record is
    silent; an error means the search could not run.
    """
    state = state_of(ctx)
    tag = resolve_tag(state, containerTag)
    require_enabled(tag)
    res = await run_blocking(
        state.backend.search, "" if scope == "documents" else query, space=tag, limit=limit,
        include_profile=includeProfile,
    )
    docs, unreadable = ([], None) if scope == "memories" else await run_blocking(
        read_documents, state.backend, query, space=tag)
    profile = ProfileOut.of(res.profile) if res.profile is not None else None
    out = SearchOutput(
        query=query, containerTag=res.space, searchedTags=list(res.spaces), count=len(res.hits),
        results=[hit_out(h) for h in res.hits], profile=profile,
        conflicts=[ConflictOut(newer=c.newer, older=c.older, similarity=c.similarity) for c in res.conflicts],
        documents=[document_out(d) for d in docs],
    )
    if scope == "documents":
        lines = []
    elif res.hits:
        noun = "memory" if len(res.hits) == 1 else "memories"
        lines = [f"{len(res.hits)} {noun} in space {res.space}, best first:"]
        for i, h in enumerate(res.hits, 1):
            sim = f"similarity {h.similarity:.2f}" if h.similarity is not None else "keyword match"
            lines.append(f"{i}. [{day(h.memory.created_at)}] {one_line(h.memory.content)}")
            lines.append(f"   ({sim}; id {h.memory.id})")
        for c in res.conflicts:
            lines.append(f"Possible conflict: {c.newer} (newer) and {c.older} (older) are on one "
                         "subject; update or forget the one that no longer holds.")
    elif not query.strip():
        lines = ["The query is empty, so nothing was searched; the record is silent."]
    else:
        lines = [f"The record is silent: no memory in space {res.space} matches this query."]
    lines += [unreadable] if unreadable else document_lines(docs, scope=scope)
    if res.profile is not None:
        lines.append("User Profile:")
        lines += [f"- [{day(m.created_at)}] {one_line(m.content)}" for m in res.profile.facts] or [
            "- (none recorded)"
        ]
        lines.append("Recent Context:")
        lines += [f"- [{day(m.created_at)}] {one_line(m.content)}" for m in res.profile.recent] or [
            "- (none recorded)"
        ]
    return tool_result("\n".join(lines), out)


async def save_memory(
    ctx: ToolContext,
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
        Field(description="ISO 8601 time, in the future, after which the memory leaves search "
                          "(e.g. 2030-12-31); a time already past is refused."),
    ] = None,
) -> Annotated[CallToolResult, SaveOutput]:
    """Remember something durable: a decision and its reason, a preference, a convention.

    Write one self-contained fact per call. Saving identical text again changes
    nothing; a customId replaces the memory saved under it, keeping the old version
    as history. The result names the space the memory actually went to.
    """
    from bli_memory.core.memory.records import check_key_lengths
    from bli_memory.core.memory.redaction import redact
    from bli_memory.core.memory.retrieval_writes import check_extract_size

    state = state_of(ctx)
    tag = resolve_tag(state, containerTag)
    await run_blocking(check_key_lengths, {"customId": customId})
    require_enabled(tag)
    if extract:
        # Not even the queue row holds secrets (the worker redacts again). A save's
        # content is size-checked and masked by the backend's write path, the one place
        # every save takes.
        await run_blocking(check_extract_size, content)  # before the masking: it reads the whole text
        clean = await run_blocking(redact, content)
        # The id follows from the session and the request, so a request run again after
        # its answer was lost (a relay's daemon died: core/mcp/relay.py) queues one job.
        job_id = await run_blocking(
            state.backend.enqueue_extract, clean.text, space=tag, source="mcp",
            session_id=state.session_id, job_id=_request_job_id(state.session_id, ctx),
        )
        state.wake.set()
        out = SaveOutput(status="queued", containerTag=tag, jobId=job_id, masked=clean.masked)
        return tool_result(
            f"Queued for extraction in space {tag}; job {job_id}. Durable facts are distilled "
            "and reconciled with the space in the background (duplicates are not saved twice)."
            + masked_text(clean.masked),
            out,
        )
    # The backend validates expiresAt (bli_memory.core.memory.expiry), so every store
    # refuses a bad one the same way and the refusal comes back as isError.
    res = await run_blocking(state.backend.save, content, space=tag, custom_id=customId,
                             metadata=metadata, expires_at=expiresAt, session_id=state.session_id)
    out = SaveOutput(
        status=res.status, containerTag=res.space,
        memory=memory_out(res.memory) if res.memory else None,
        previousId=res.previous.id if res.previous else None, jobId=res.job_id,
        masked=res.masked,  # content, metadata and the session id: the backend masks them
    )
    verb = {
        "created": "Saved",
        "duplicate": "Already remembered (identical text); nothing new written",
        "updated": ("Saved, replacing the previous version under this customId" if customId
                    else "Already remembered (identical text); kept with this save's later expiry"),
        "queued": "Queued for extraction",
    }[res.status]
    where = f" in space {res.space}"
    if res.space != tag:
        where += f" (the canonical space for {tag})"
    ident = f"; id {res.memory.id}" if res.memory else ""
    return tool_result(f"{verb}{where}{ident}." + masked_text(out.masked), out)


async def update_memory(
    ctx: ToolContext,
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
    from bli_memory.core.memory.records import check_key_lengths

    state = state_of(ctx)
    tag = resolve_tag(state, containerTag)
    await run_blocking(check_key_lengths, {"customId": customId})  # not echoed back as "no memory with ..."
    id = id.strip() if id is not None else None  # as forget_memory takes a pasted id
    # The backend checks the size first, then masks secrets: its write path is the one place.
    res = await run_blocking(state.backend.update, content, space=tag, id=id, custom_id=customId,
                             source="mcp")
    out = UpdateOutput(
        status=res.status, containerTag=res.memory.space, memory=memory_out(res.memory),
        previous=memory_out(res.previous), named=memory_out(res.named) if res.named else None,
        masked=res.masked,
    )
    note = version_note(id, res.memory, res.named)  # the live version after this update
    if res.status == "unchanged" and res.masked:
        # The text differed only in a secret's value, which is never stored.
        text = (f"Unchanged: with its secrets masked, this text is what memory {res.memory.id} "
                f"already says; a secret's value is never stored, so a new value changes nothing "
                f"kept.{note}")
        return tool_result(text, out)
    if res.status == "unchanged":
        text = f"Unchanged: memory {res.memory.id} already says exactly that.{note}"
    else:
        text = (
            f"Updated: memory {res.memory.id} (version {res.memory.version}) replaces "
            f"{res.previous.id}, which is kept as history.{note}"
        )
    return tool_result(text + masked_text(out.masked), out)


async def forget_memory(
    ctx: ToolContext,
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
    state = state_of(ctx)
    tag = resolve_tag(state, containerTag)
    request = ctx.request_context.request_id
    first_sent = state.replayed.get(request) if request is not None else None
    # Run again after the daemon died before answering: a forget by content or query it
    # already did answers as it did, before a second run could pick the next match.
    done = None if first_sent is None or id else await run_blocking(
        _forgotten_by, state.backend, tag, first_sent, content, query)
    try:
        res = done if done is not None else await run_blocking(
            state.backend.forget, space=tag, id=id, content=content, query=query)
    except ToolError as exc:
        if id is None or first_sent is None or not str(exc).startswith("not_found"):
            raise
        # By id, the forget the daemon did makes this one not_found: answer as it did.
        by_id = await run_blocking(_forgotten_since, state.backend, id, first_sent)
        if by_id is None:
            raise
        res = by_id
    out = ForgetOutput(
        containerTag=res.memory.space, matchedBy=res.matched_by, similarity=res.similarity,
        forgotten=memory_out(res.memory), named=memory_out(res.named) if res.named else None,
    )
    how = {"id": "by id", "content": "by exact text", "query": f"by closest match ({res.similarity})"}
    note = version_note(id, res.memory, res.named)
    return tool_result(f"Forgotten {how[res.matched_by]}: memory {res.memory.id}.{note}", out)


def _request_job_id(session_id: str, ctx: ToolContext) -> str:
    """The extract job id of one request of one session (a UUID 5, canonical text)."""
    import uuid

    request = ctx.request_context.request_id
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"bli-memory:{session_id}:{type(request).__name__}:{request}"))


def _forgotten_by(backend: MemoryBackend, space: str, since: float, content: str | None,
                  query: str | None) -> ForgetResult | None:
    """The forget by exactly one of ``content`` or ``query`` done since epoch ``since``, as
    the backend's ``forgotten_by`` finds it (only the embedded store, the one a relay
    serves, can tell), or None (any other selector, or a backend that cannot tell)."""
    from bli_memory.core.errors import InvalidInputError
    from bli_memory.core.memory.retrieval_writes import forget_selector

    try:
        selector = forget_selector(None, content, query)
    except InvalidInputError:
        return None  # the forget itself says what is wrong
    return backend.forgotten_by(space=space, since=since,
                                content=content if selector == "content" else None,
                                query=query if selector == "query" else None)


def _forgotten_since(backend: MemoryBackend, id: str, since: float) -> ForgetResult | None:
    """The forget of ``id`` that happened after epoch ``since``, as it was answered, or None."""
    from datetime import datetime

    from bli_memory.core.errors import NotFoundError
    from bli_memory.core.models import ForgetResult

    try:
        named, chain = backend.get_memory(id, include_inactive=True)
    except NotFoundError:
        return None
    head = next((m for m in [named, *chain] if m.state == "forgotten"), None)
    if head is None or head.forgotten_at is None:
        return None
    try:
        at = datetime.fromisoformat(head.forgotten_at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
    if at < since:  # forgotten before this request was first sent: not its doing (engine.forgotten_by)
        return None
    return ForgetResult(memory=head, matched_by="id", named=None if head.id == named.id else named)


def register_memory_tools(server: MCPServer[Any]) -> None:
    """Add the four memory tools to ``server``, with their annotations (MCP ``ToolAnnotations``)."""
    tools: tuple[tuple[Callable[..., Any], str, bool, bool, bool], ...] = (
        (search_memory, "Search memory", True, False, True),
        (save_memory, "Save memory", False, False, False),
        (update_memory, "Update memory", False, False, False),
        (forget_memory, "Forget memory", False, True, False),
    )
    for fn, title, read_only, destructive, idempotent in tools:
        add_tool(server, fn, annotations=ToolAnnotations(
            title=title, read_only_hint=read_only, destructive_hint=destructive,
            idempotent_hint=idempotent, open_world_hint=False,
        ))
