"""The MCP server ``bli-memory``: build it, run its lifespan, serve it on stdio.

The tools live in :mod:`bli_memory.core.mcp.tools` (the four memory tools) and
:mod:`bli_memory.core.mcp.controls` (the others), their results in
:mod:`bli_memory.core.mcp.outputs`; this module adds them to an ``MCPServer`` whose
lifespan builds the :class:`~bli_memory.core.mcp.state.ServerState` they read.

Every tool returns text for the model plus ``structuredContent`` (the rows and the
space). stdout carries JSON-RPC only: every log line goes to stderr. With the
embedded store the command hosts start is a relay (:mod:`bli_memory.core.mcp.relay`)
and this server runs inside the resident daemon, once per relay connection
(:func:`serve_connection`, on the daemon's warm backend); the relay's process then
imports neither the MCP SDK nor numpy. In process (no daemon, or the relay's
fallback), the embedding model loads in the background after start, so
``initialize`` answers at once, and queued extract jobs run in a background drain.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import MCPServer

from bli_memory.core._version import VERSION
from bli_memory.core.errors import BliMemoryError
from bli_memory.core.mcp.controls import register_control_tools
from bli_memory.core.mcp.state import ServerState, default_space
from bli_memory.core.mcp.tools import register_memory_tools

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import pluggy

    from bli_memory.core.mcp.relay import Handover
    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.settings import Settings

__all__ = [
    "EXTRACT_POLL_SECONDS",
    "INSTRUCTIONS",
    "SERVER_NAME",
    "build_server",
    "default_state",
    "run_stdio",
    "serve_connection",
]

SERVER_NAME = "bli-memory"

INSTRUCTIONS = (
    "Durable memory shared by every coding agent this person uses. Search it before "
    "answering questions about this project's decisions, conventions, commands and history. "
    "Call save_memory yourself, once, when one of these is settled: a decision with its reason, "
    "a convention, a setup fact (paths, versions, commands that configure something), or a "
    "correction; update_memory when a fact changed, instead of saving a contradiction. Not for "
    "progress, plans or what is true only now. "
    "Zero results is a normal answer: the record is silent on that."
)

#: Seconds between checks of the extract queue by the server's background drain
#: (the stop hook queues from other processes; the server's own saves wake it at once).
EXTRACT_POLL_SECONDS = 10.0


def build_server(state_factory: Callable[[], ServerState]) -> MCPServer[ServerState]:
    """Build the MCP server with its tools.

    Args:
        state_factory: Zero-argument callable returning the :class:`ServerState`; called
            once when the server starts (its lifespan), so tests can inject a backend.

    Returns:
        An ``mcp.server.mcpserver.MCPServer`` named ``bli-memory``; tools reach the
        state as ``ctx.request_context.lifespan_context``.
    """

    @asynccontextmanager
    async def lifespan(_: MCPServer[ServerState]) -> AsyncIterator[ServerState]:
        state = state_factory()
        if state.shared_backend:
            # The daemon's warm backend: the daemon warms, drains and closes it.
            yield state
            return
        warmed = threading.Event()
        stop = threading.Event()
        from bli_memory.core.memory.embeddings import import_numpy_here

        import_numpy_here()  # before the warm-up thread starts

        # Load the model off the request path so `initialize` answers at once.
        threading.Thread(target=_safe_warm, args=(state.backend, warmed), daemon=True,
                         name="warm-up").start()
        drainer = _start_extract_drain(state.backend, stop, state.wake, ready=warmed)
        try:
            yield state
        finally:
            stop.set()
            state.wake.set()
            if drainer is not None:
                drainer.join(timeout=10)
            warmed.wait(timeout=30)  # never close the store under the warm-up thread
            state.backend.close()

    server: MCPServer[ServerState] = _StrictArgumentsServer(
        SERVER_NAME, instructions=INSTRUCTIONS, version=VERSION, lifespan=lifespan
    )
    register_memory_tools(server)
    register_control_tools(server)
    return server


class _StrictArgumentsServer(MCPServer[ServerState]):
    """An ``MCPServer`` whose tools refuse an argument they do not take.

    The SDK drops unknown arguments without a word (its argument models ignore extra
    fields), so ``update_memory(..., metadata={...})`` answered "Updated" and kept no
    metadata. Here a call naming an argument outside the tool's ``inputSchema`` is an
    ``invalid_input`` error that lists the arguments the tool takes, and nothing is done;
    an argument of the wrong type or a missing one says which, in one line, instead of
    pydantic's report.
    """

    _known: dict[str, tuple[str, ...]] | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """:meth:`MCPServer.call_tool`, after refusing an argument ``name`` does not take.

        Raises:
            ToolError: ``invalid_input: ...`` naming the unknown arguments and the known ones.
        """
        if self._known is None:
            self._known = {tool.name: tuple((tool.input_schema or {}).get("properties", {}))
                           for tool in await self.list_tools()}
        known = self._known.get(name)
        unknown = [a for a in arguments if a not in known] if known is not None else []
        from mcp.server.mcpserver.exceptions import ToolError
        from pydantic import ValidationError

        if unknown:
            takes = ", ".join(known or ()) or "no arguments"
            raise ToolError(f"Error executing tool {name}: invalid_input: {name} takes no argument "
                            f"{_shown_names(unknown)}; it takes {takes} (nothing was done)")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            # The SDK's text is pydantic's whole report, with a link per error; the
            # cause stays, so the SDK still logs the field names only.
            raise ToolError(f"Error executing tool {name}: invalid_input: "
                            f"{_argument_problems(exc.__cause__)} (nothing was done)") from exc.__cause__


#: How many unknown argument names a refusal names, and how long each may be: the names
#: are the caller's text, and 300,000 of them made a 3 MB answer.
_NAMES_SHOWN = 3
_NAME_CHARS = 40


def _shown_names(names: list[str]) -> str:
    """``'tags', 'labels' (and 4 more)``: the first :data:`_NAMES_SHOWN` names that are
    short and not secret-looking (:func:`~bli_memory.core.memory.redaction.redact`), the
    rest counted, never repeated."""
    from bli_memory.core.memory.redaction import redact

    shown: list[str] = []
    for n in names[:20]:  # a caller may send any number: only the first few are looked at
        if len(n) <= _NAME_CHARS and not redact(n).masked:
            shown.append(repr(n))
            if len(shown) == _NAMES_SHOWN:
                break
    rest = len(names) - len(shown)
    if not shown:
        return f"of {len(names)} given (their names are not repeated)"
    return ", ".join(shown) + (f" (and {rest} more, not repeated)" if rest else "")


def _argument_problems(error: Any) -> str:
    """One clause per argument a pydantic ``ValidationError`` rejected, e.g. ``content is
    required; id: Input should be a valid string`` (pydantic's messages never repeat the
    value, which may be the caller's data)."""
    from bli_memory.core.memory.redaction import redact

    problems = error.errors()
    parts = []
    for problem in problems[:_NAMES_SHOWN]:
        where = ".".join(str(part) for part in problem.get("loc", ()))[:_NAME_CHARS] or "the arguments"
        if redact(where).masked:  # a key inside an object argument is the caller's text
            where = "an argument"
        parts.append(f"{where} is required" if problem.get("type") == "missing"
                     else f"{where}: {problem.get('msg', 'invalid')}")
    more = len(problems) - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more else "")


def _start_extract_drain(
    backend: MemoryBackend, stop: threading.Event, wake: threading.Event, *,
    ready: threading.Event | None = None,
) -> threading.Thread | None:
    """Run queued extract jobs in a background thread, off the request path.

    Only for a backend with a local job queue (the embedded store); the memory
    service drains its own. Never inside a host's headless request
    (``BLI_MEMORY_HOOKS_OFF=1``): a server a host started there must not claim the queue's
    jobs and then die with that host. Returns the thread, or None when there is nothing to
    drain.
    """
    import os

    from bli_memory.core.extraction.worker import default_worker_id, job_queue

    if os.environ.get("BLI_MEMORY_HOOKS_OFF") == "1":
        return None

    try:
        queue = job_queue(backend)  # opens the store: it may be unreadable right now
    except BliMemoryError as exc:
        sys.stderr.write(f"[bli-memory] extract jobs will not run: {exc.reason}\n")
        return None
    if queue is None:
        return None
    worker_id = "mcp:" + default_worker_id()

    def loop() -> None:
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


def _safe_warm(backend: MemoryBackend, done: threading.Event) -> None:
    try:
        backend.warm_up()
    except Exception as exc:  # the first tool call will report it with a reason
        sys.stderr.write(f"[bli-memory] warm-up failed: {type(exc).__name__}\n")
    finally:
        done.set()


def default_state(settings: Settings, pm: pluggy.PluginManager | None = None) -> ServerState:
    """Build the server state: the backend the plugins choose, and the default space.

    Args:
        settings: The process's settings.
        pm: The caller's plugin manager (default: a new one with the installed
            plugins); the backend is built through it, so its plugins are honoured.
    """
    from bli_memory.core.plugins import build_backend, get_plugin_manager

    backend = build_backend(pm if pm is not None else get_plugin_manager(), settings)
    tag, origin = default_space(settings)
    return ServerState(settings=settings, backend=backend, default_space=tag, space_origin=origin)


async def serve_connection(state: ServerState, *, source: Any = None, stdout: Any = None,
                           drop_reply_to: str | int | None = None) -> None:
    """Serve one MCP session with ``state`` until its input ends.

    Every line read is answered: not JSON gets -32700, not JSON-RPC gets -32600 with
    the request's id, and lone surrogates become U+FFFD (:mod:`bli_memory.core.mcp.stdio`).

    Args:
        state: The session's state (its backend, space and session id).
        source: Async iterable of ``bytes`` lines (default: stdin).
        stdout: Async writer of the answers (default: stdout).
        drop_reply_to: Request id whose first answer is not written (a replayed
            ``initialize`` whose client already had its answer).
    """
    from bli_memory.core.mcp.stdio import robust_stdio_server

    server = build_server(lambda: state)
    # MCPServer.run_stdio_async with our transport, which answers every line
    # (mcp 2.3.0 drops unparsable ones without a response).
    lowlevel = server._lowlevel_server
    async with robust_stdio_server(source=source, stdout=stdout, drop_reply_to=drop_reply_to) as (
            read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def run_stdio(settings: Settings, handover: Handover | None = None) -> None:
    """Run the MCP server on stdio until the client closes it.

    Args:
        settings: The process's settings.
        handover: What a relay whose daemon went away hands over
            (:class:`bli_memory.core.mcp.relay.Handover`): the session id, the lines to
            run again and the reader of the rest of stdin; None serves stdin afresh.

    Raises:
        SystemExit: 1, after one line on stderr, when the settings cannot build a backend
            (:class:`~bli_memory.core.errors.BliMemoryError` from the plugins).
    """
    # Built before serving, so a setting that cannot work (an unknown BLI_MEMORY_EMBEDDER, a
    # model folder without its manifest) ends the process with its one sentence on stderr,
    # which the host shows or logs, instead of a traceback from inside the task group.
    try:
        state = default_state(settings)
    except BliMemoryError as exc:
        sys.stderr.write(f"[bli-memory] the MCP server cannot start: {exc.reason}: {exc}\n")
        raise SystemExit(1) from None
    if handover is None or handover.lines is None:
        if handover is not None and handover.session_id:
            state.session_id = handover.session_id
        anyio.run(serve_connection, state)
        return
    from bli_memory.core.mcp.stdio import handover_source

    state.session_id = handover.session_id or state.session_id
    state.replayed = dict(handover.replayed_at)
    source = handover_source(handover.replay, handover.lines)

    async def resume() -> None:
        await serve_connection(state, source=source, drop_reply_to=handover.drop_reply_to)

    anyio.run(resume)
