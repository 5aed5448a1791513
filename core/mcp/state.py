"""What every MCP tool shares: the server state and the checks a tool runs first.

The state is built once by the server's lifespan (:mod:`bli_memory.core.mcp.server`)
and reaches a tool through its :data:`ToolContext` parameter, as the MCP SDK's
lifespan examples do (``ctx.request_context.lifespan_context``); a tool holds no state
of its own, so each is a plain module-level function.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from bli_memory.core.errors import BliMemoryError

if TYPE_CHECKING:
    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.settings import Settings

__all__ = [
    "ServerState",
    "ToolContext",
    "default_space",
    "require_enabled",
    "resolve_tag",
    "run_blocking",
    "state_of",
]

T = TypeVar("T")


@dataclass
class ServerState:
    """What the tools share for the life of the server (built by the lifespan).

    ``session_id`` names this connection's session (``mcp-<uuid4>``): a host starts one
    server per agent session over stdio, so the memories one session saves are session
    neighbours, and the ``context`` channel of search applies to them as to
    hook-captured ones (:func:`bli_memory.core.memory.ranking.context_bonus`).
    ``wake`` is set when a tool queues an extract job, so the server's background
    drain runs it at once instead of at its next poll.

    ``via`` says who serves the session: ``daemon`` when this server runs inside the
    resident daemon for a relay (:mod:`bli_memory.core.daemon.mcp_sessions`), whose
    ``daemon_status`` then returns ``{"pid", "version", "rssBytes"}`` for ``memory_info``;
    ``in-process`` otherwise. ``shared_backend``: the backend belongs to the process
    around the server (the daemon's warm one), so the server's lifespan neither warms,
    drains nor closes it. ``replayed`` maps the ids of requests a resumed session runs
    again (their first answer was lost with the daemon) to the epoch second they were
    first sent (:mod:`bli_memory.core.mcp.relay`).
    """

    settings: Settings
    backend: MemoryBackend
    default_space: str
    space_origin: str
    session_id: str = field(default_factory=lambda: f"mcp-{uuid.uuid4()}")
    wake: threading.Event = field(default_factory=threading.Event)
    via: Literal["daemon", "in-process"] = "in-process"
    daemon_status: Callable[[], dict[str, Any]] | None = None
    shared_backend: bool = False
    replayed: Mapping[str | int, float] = field(default_factory=dict)


if TYPE_CHECKING:
    #: The context a tool receives (the SDK injects it by this annotation; it is not an argument).
    ToolContext = Context[ServerState, Any]
else:
    # At run time the plain class: the SDK only asks issubclass(annotation, Context),
    # and a pydantic generic parametrized at module level would add a global to this module.
    ToolContext = Context


def state_of(ctx: ToolContext) -> ServerState:
    """The :class:`ServerState` of the request ``ctx`` belongs to."""
    return ctx.request_context.lifespan_context


def default_space(settings: Settings, *, cwd: str | None = None,
                  environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """``(container tag, how it was derived)`` for the session's working folder.

    ``BLI_MEMORY_CONTAINER_TAG`` (or ``settings.container_tag``) wins; otherwise the
    git remote or folder decides (:func:`bli_memory.core.memory.spaces.derive_space`).
    A forced tag that looks like a secret gives ``("", why)``: the server still starts,
    and :func:`resolve_tag` refuses each call that would act on the default space with
    that reason, so the token is never echoed into an answer the model reads
    (:func:`~bli_memory.core.hooks.container_tag.checked_space`, as the hooks refuse it).

    Args:
        settings: The session's settings.
        cwd: The session's folder (default: this process's).
        environ: The session's variables (default: this process's); a relay served in
            the daemon passes its own (:mod:`bli_memory.core.daemon.mcp_sessions`).
    """
    from bli_memory.core.errors import ConfigError
    from bli_memory.core.hooks.container_tag import checked_space

    env = dict(os.environ if environ is None else environ)
    if settings.container_tag:
        env["BLI_MEMORY_CONTAINER_TAG"] = settings.container_tag
    try:
        space = checked_space(os.getcwd() if cwd is None else cwd, environ=env)
    except ConfigError as exc:
        return "", str(exc)  # resolve_tag refuses every call that would use it
    return space.tag, space.derived_from


def resolve_tag(state: ServerState, container_tag: str | None) -> str:
    """The space a tool acts on: ``container_tag`` validated, or the default when blank.

    Raises:
        ToolError: ``invalid_input: ...`` for a tag :func:`validate_tag` refuses or one
            that looks like a secret (the answer would repeat it), or when the default
            space was refused (:func:`default_space`).
    """
    from bli_memory.core.errors import InvalidInputError
    from bli_memory.core.memory.spaces import validate_tag
    from bli_memory.core.memory.stored_secrets import check_container_tag

    if container_tag is None or not container_tag.strip():
        if not state.default_space:
            raise ToolError(f"invalid_input: {state.space_origin}")
        return state.default_space
    try:
        tag = validate_tag(container_tag)
    except ValueError as exc:
        raise ToolError(f"invalid_input: {exc}") from exc
    try:
        check_container_tag(tag)
    except InvalidInputError as exc:
        raise ToolError(f"invalid_input: {exc.message}") from None
    return tag


def require_enabled(space: str) -> None:
    """Refuse when memory is switched off for ``space`` or globally.

    Raises:
        ToolError: ``disabled: ...`` naming the space and how to switch it back on.
    """
    from bli_memory.core.memory.switches import is_enabled

    if not is_enabled(space):
        raise ToolError(
            f"disabled: memory is switched off for {space} (or globally); nothing was searched or "
            "saved. Call enable_memory to switch it back on."
        )


async def run_blocking(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in a worker thread, off the event loop.

    Raises:
        ToolError: ``<reason>: <message>`` of a :class:`BliMemoryError` ``fn`` raised,
            which the SDK answers as an ``isError`` result with that text.
    """
    try:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
    except BliMemoryError as exc:
        raise ToolError(f"{exc.reason}: {exc.message}") from exc
