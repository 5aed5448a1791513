"""The MCP tools beside the four memory tools: describe, list, read, switch, audit, experience.

``memory_info``, ``list_memories``, ``get_memory`` and ``memory_status`` only read;
``enable_memory``, ``disable_memory``, ``record_session`` and ``memory_audit`` change
switches or repair derived indexes (idempotent); ``memory_experience`` appends one
line to the team's experience log (BLI Memory spec "Live A/B";
:mod:`bli_memory.core.experience.log`). Like the memory tools
(:mod:`bli_memory.core.mcp.tools`) each is a module-level function taking its state
from the lifespan context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from bli_memory.core.mcp.document_results import read_document_status
from bli_memory.core.mcp.outputs import (
    AuditOutput,
    DaemonOut,
    ExperienceOutput,
    GetOutput,
    InfoOutput,
    ListOutput,
    StatusOutput,
    day,
    memory_out,
    one_line,
    status_text,
    store_text,
    tool_result,
)
from bli_memory.core.mcp.state import ToolContext, resolve_tag, run_blocking, state_of
from bli_memory.core.mcp.tool_text import add_tool
from bli_memory.core.memory.version_ids import version_note

__all__ = [
    "disable_memory",
    "enable_memory",
    "get_memory",
    "list_memories",
    "memory_audit",
    "memory_experience",
    "memory_info",
    "memory_status",
    "record_session",
    "register_control_tools",
]


async def memory_info(
    ctx: ToolContext,
    containerTag: Annotated[str | None, Field(description="Space to describe; default: current.")] = None,
) -> Annotated[CallToolResult, InfoOutput]:
    """Describe the memory in use: the space and how it was derived, its aliases,
    counts by state, the store, the embedding model, and the route that served this
    (through the resident daemon, with the memory it holds, or in process)."""
    from bli_memory.core.memory.switches import status as switch_status

    state = state_of(ctx)
    tag = resolve_tag(state, containerTag)
    info = await run_blocking(state.backend.info, space=tag)
    docs, unreadable = await run_blocking(read_document_status, state.backend, tag)
    daemon = state.daemon_status() if state.daemon_status is not None else None
    via: Literal["daemon", "in-process"] = "daemon" if daemon is not None else "in-process"
    out = InfoOutput(
        containerTag=info["space"],
        derivedFrom=state.space_origin if tag == state.default_space else "containerTag argument",
        aliases=info["aliases"], counts=info["counts"], recordings=info.get("recordings", 0),
        store=info["store"], embeddingModel=info["embeddingModel"],
        storeEmbeddingModel=info.get("storeEmbeddingModel"),
        route="mcp stdio -> " + ("daemon -> " if daemon else "") + str(info["store"].get("kind", "?")),
        via=via, daemon=DaemonOut.model_validate(daemon) if daemon else None,
        switches=switch_status(info["space"]), reembedUnfinished=info.get("reembedUnfinished"),
        documents=None if docs is None else {"documents": docs.documents, "chunks": docs.chunks,
                                             "commits": docs.commits, "refreshedAt": docs.refreshed_at,
                                             "indexing": docs.indexing},
    )
    if daemon is None:
        held = "in process"
    else:
        held = f"daemon pid {daemon['pid']}"
        if daemon.get("rssBytes"):
            held += f", holding {daemon['rssBytes'] / 2**20:.0f} MB"
    c = info["counts"]
    text = (
        f"Space {out.containerTag} ({out.derivedFrom}); aliases: {', '.join(out.aliases) or 'none'}.\n"
        f"Memories: {c.get('active', 0)} live, {c.get('superseded', 0)} superseded, "
        f"{c.get('forgotten', 0)} forgotten. Store: {store_text(info['store'])}. "
        f"Model: {out.embeddingModel}. "
        f"Memory is {'on' if out.switches['enabled'] else 'OFF'}; recording is "
        f"{'on' if out.switches['recording'] else 'off'}. Route: {out.route} ({held})."
    )
    if docs is not None and docs.refreshed_at:
        text += (f"\nDocuments: {docs.documents} files ({docs.chunks} chunks) and {docs.commits} commit "
                 f"message{'' if docs.commits == 1 else 's'}, refreshed {docs.refreshed_at}.")
    if docs is not None and docs.indexing:
        text += f"\nDocuments: {docs.indexing}."
    if unreadable:
        text += f"\n{unreadable}"
    from bli_memory.core.memory.model_mismatch import install_advice, mismatch_advice

    if out.storeEmbeddingModel:
        advice = mismatch_advice(out.storeEmbeddingModel, out.embeddingModel)
        text += (f"\nThe store holds vectors of {out.storeEmbeddingModel}: searches and saves are "
                 f"refused. To go on, {advice}.")
    elif (install := install_advice(out.embeddingModel)) is not None:
        text += (f"\nThe configured model {out.embeddingModel} is not installed: searches and saves "
                 f"fail until `{install}` has run.")
    if out.reembedUnfinished:
        moved = ", ".join(f"{n} of {model}" for model, n in sorted(out.reembedUnfinished.items()))
        text += (f"\nA `memory reembed` stopped part way ({moved}): vector search serves the rows "
                 "still of the store's model, the others by keyword; run it again to finish.")
    return tool_result(text, out)


async def list_memories(
    ctx: ToolContext,
    limit: Annotated[int, Field(ge=1, le=100, description="How many, newest first.")] = 20,
    containerTag: Annotated[str | None, Field(description="Space to list; default: current.")] = None,
) -> Annotated[CallToolResult, ListOutput]:
    """List the newest memories of a space as short previews (use get_memory for one in full)."""
    state = state_of(ctx)
    tag = resolve_tag(state, containerTag)
    rows = await run_blocking(state.backend.list_memories, space=tag, limit=limit)
    items = [memory_out(m).model_copy(update={"content": one_line(m.content, 200)}) for m in rows]
    out = ListOutput(containerTag=tag, count=len(items), memories=items)
    if not items:
        return tool_result(f"The record is silent: space {tag} holds no live memories.", out)
    lines = [f"{len(items)} newest {'memory' if len(items) == 1 else 'memories'} in {tag}:"]
    lines += [f"- [{day(m.created_at)}] {one_line(m.content, 200)} (id {m.id})" for m in rows]
    return tool_result("\n".join(lines), out)


async def get_memory(
    ctx: ToolContext,
    id: Annotated[str, Field(description="Id of the memory (any version).")],
    include_inactive: Annotated[
        bool, Field(description="Also show superseded versions and the tombstone.")
    ] = False,
) -> Annotated[CallToolResult, GetOutput]:
    """Read one memory in full, with its version history."""
    state = state_of(ctx)
    id = id.strip()  # as forget_memory takes a pasted id
    memory, history = await run_blocking(state.backend.get_memory, id, include_inactive=include_inactive)
    out = GetOutput(memory=memory_out(memory), history=[memory_out(m) for m in history])
    note = version_note(id, memory, history=history)
    lines = [f"[{day(memory.created_at)}] {memory.content}",
             f"(id {memory.id}, version {memory.version}, {memory.state}, space {memory.space})"
             + (f"\n{note.strip()}" if note else "")]
    for m in history:
        lines.append(
            f"history: version {m.version} ({m.state}, {day(m.created_at)}): {one_line(m.content)}"
        )
    return tool_result("\n".join(lines), out)


def _switch_result(tag: str) -> CallToolResult:
    from bli_memory.core.memory.switches import status as switch_status

    st = switch_status(tag)
    return tool_result(status_text(st), StatusOutput(**st))


async def memory_status(
    ctx: ToolContext,
    containerTag: Annotated[str | None, Field(description="Space; default: current.")] = None,
) -> Annotated[CallToolResult, StatusOutput]:
    """Say whether memory (recall and capture) is on, and whether sessions are recorded."""
    return _switch_result(resolve_tag(state_of(ctx), containerTag))


async def enable_memory(
    ctx: ToolContext,
    containerTag: Annotated[str | None, Field(description="Space; default: current.")] = None,
    scope: Annotated[
        Literal["space", "global"], Field(description="This space, or everywhere.")
    ] = "space",
) -> Annotated[CallToolResult, StatusOutput]:
    """Switch memory recall and capture back on (for this space, or globally)."""
    from bli_memory.core.memory.switches import set_enabled

    tag = resolve_tag(state_of(ctx), containerTag)
    set_enabled(True, None if scope == "global" else tag)
    return _switch_result(tag)


async def disable_memory(
    ctx: ToolContext,
    containerTag: Annotated[str | None, Field(description="Space; default: current.")] = None,
    scope: Annotated[
        Literal["space", "global"], Field(description="This space, or everywhere.")
    ] = "space",
) -> Annotated[CallToolResult, StatusOutput]:
    """Switch memory off for a sensitive task: hooks stop injecting and capturing, and
    search/save refuse, until enable_memory. Nothing stored is deleted."""
    from bli_memory.core.memory.switches import set_enabled

    tag = resolve_tag(state_of(ctx), containerTag)
    set_enabled(False, None if scope == "global" else tag)
    return _switch_result(tag)


async def record_session(
    ctx: ToolContext,
    action: Annotated[Literal["start", "stop", "status"], Field(description="start, stop or status.")],
    containerTag: Annotated[str | None, Field(description="Space; default: current.")] = None,
) -> Annotated[CallToolResult, StatusOutput]:
    """Record this project's session turns capture-only (bounded, redacted), never
    injecting them. Off by default. A person reads the recorded turns back with
    `bli-memory-mcp memory recordings` and erases them with `memory clear-recordings`."""
    from bli_memory.core.memory.switches import set_recording

    tag = resolve_tag(state_of(ctx), containerTag)
    if action != "status":
        set_recording(action == "start", tag)
    return _switch_result(tag)


async def memory_audit(
    ctx: ToolContext,
    repair: Annotated[bool, Field(description="Rebuild the derived indexes from the rows.")] = False,
) -> Annotated[CallToolResult, AuditOutput]:
    """Check the store's integrity: every live memory is in the keyword index and has a
    vector of the recorded model, and no index entry points at a retired memory."""
    report = await run_blocking(state_of(ctx).backend.audit, repair=repair)
    out = AuditOutput(**report)
    verdict = "intact" if report["ok"] else "NOT intact"
    text = (f"Store is {verdict}: {report['missing_keyword']} live rows missing from the keyword index, "
            f"{report['stale_keyword']} stale index entries, {report['missing_vector']} missing vectors, "
            f"{report['wrong_model']} vectors of another model or unusable. Counts: "
            + ", ".join(f"{n} {state}" for state, n in report["counts"].items()) + ".")
    if report.get("repaired"):
        text += f" Repaired; now: {report.get('after')}."
    return tool_result(text, out)


async def memory_experience(
    ctx: ToolContext,
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
) -> Annotated[CallToolResult, ExperienceOutput]:
    """Record whether memory helped on this turn, in one line (the team's experience log).

    Call it after recalled memory ([bli] or ◪ lines) clearly helped (win), misled or
    missed something it should have known (loss), or only added clutter (noise). The
    entry is appended to ~/.codex/AGENT-EXPERIENCE.md and shipped to the store; an
    entry that cannot be shipped yet stays queued and is retried later.
    """
    from bli_memory.core.experience.log import detect_agent, log_experience, project_from_space

    state = state_of(ctx)
    client = None
    try:
        client = ctx.session.client_params.client_info.name
    except AttributeError:
        pass
    receipt = await run_blocking(
        log_experience, verdict, store, reason, settings=state.settings,
        agent=detect_agent(client_name=client), project=project_from_space(state.default_space),
    )
    e = receipt.entry
    out = ExperienceOutput.model_validate({
        "id": e.id, "store": e.store, "marker": e.marker, "verdict": e.verdict, "reason": e.reason,
        "line": e.line, "masked": e.masked, "shipped": receipt.shipped, "shippedTo": receipt.shipped_to,
        "queuedReason": None if receipt.shipped else (receipt.sync.reason or "queued"),
    })
    where = {"service": "the memory service", "local": "the local store"}.get(receipt.shipped_to or "")
    status = f"Shipped to {where}." if receipt.shipped else (
        f"Queued ({out.queuedReason}); the next sync retries it under the same id.")
    return tool_result(f"Recorded {e.verdict} for {e.store} {e.marker}: {e.line}\n{status}", out)


def register_control_tools(server: MCPServer[Any]) -> None:
    """Add the control tools to ``server``, with their annotations (MCP ``ToolAnnotations``)."""
    read_only_tools: tuple[tuple[Callable[..., Any], str], ...] = (
        (memory_info, "Memory info"), (list_memories, "List memories"),
        (get_memory, "Get memory"), (memory_status, "Memory status"))
    switch_tools: tuple[tuple[Callable[..., Any], str], ...] = (
        (enable_memory, "Enable memory"), (disable_memory, "Disable memory"),
        (record_session, "Record session"), (memory_audit, "Audit memory store"))
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)
    for fn, title in read_only_tools:
        add_tool(server, fn, annotations=read_only.model_copy(update={"title": title}))
    switch = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                             open_world_hint=False)
    for fn, title in switch_tools:
        add_tool(server, fn, annotations=switch.model_copy(update={"title": title}))
    add_tool(server, memory_experience, annotations=ToolAnnotations(
        title="Record memory experience", read_only_hint=False, destructive_hint=False,
        idempotent_hint=False, open_world_hint=False,
    ))
