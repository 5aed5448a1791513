"""The MCP server ``bli-memory``: build it, run its lifespan, serve it on stdio.

The tools live in :mod:`bli_memory.core.mcp.tools` (the four memory tools) and
:mod:`bli_memory.core.mcp.controls` (the others), their results in
:mod:`bli_memory.core.mcp.outputs`; this module adds them to an ``MCPServer`` whose
lifespan builds the :class:`~bli_memory.core.mcp.state.ServerState` they read.

Every tool returns text for the model plus ``structuredContent`` (the rows and the
space). stdout carries JSON-RPC only: every log line goes to stderr. With the
embedded store the tools answer through the resident daemon when it is up
(:mod:`bli_memory.core.mcp.daemon_route`): this process then loads neither numpy nor
the model, and the daemon drains the extract queue. In process, the embedding model
loads in the background after start, so ``initialize`` answers at once, and queued
extract jobs run in a background drain.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

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

    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.settings import Settings

__all__ = [
    "EXTRACT_POLL_SECONDS",
    "INSTRUCTIONS",
    "SERVER_NAME",
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
        route = state.daemon_route
        warmed = threading.Event()
        stop = threading.Event()
        drainers: list[threading.Thread | None] = []
        if route is None:
            # numpy first, in this thread, before any worker thread starts: two threads
            # importing it at once can be handed a half-initialised module by importlib.
            import numpy  # noqa: F401
        else:
            # The daemon answers and drains; a call that falls back to this process
            # starts the drain here, as an in-process server does at start.
            local = route.local
            route.on_local = lambda: drainers.append(
                _start_extract_drain(local, stop, state.wake, ready=warmed))
        # Load the model (or reach the daemon) off the request path so `initialize` answers at once.
        threading.Thread(target=_safe_warm, args=(state.backend, warmed), daemon=True,
                         name="warm-up").start()
        if route is None:
            drainers.append(_start_extract_drain(state.backend, stop, state.wake, ready=warmed))
        try:
            yield state
        finally:
            stop.set()
            state.wake.set()
            for drainer in drainers:
                if drainer is not None:
                    drainer.join(timeout=10)
            warmed.wait(timeout=30)  # never close the store under the warm-up thread
            state.backend.close()

    server: MCPServer[ServerState] = MCPServer(
        SERVER_NAME, instructions=INSTRUCTIONS, version=VERSION, lifespan=lifespan
    )
    register_memory_tools(server)
    register_control_tools(server)
    return server


def _start_extract_drain(
    backend: MemoryBackend, stop: threading.Event, wake: threading.Event, *,
    ready: threading.Event | None = None,
) -> threading.Thread | None:
    """Run queued extract jobs in a background thread, off the request path.

    Only for a backend with a local job queue (the embedded store); the memory
    service drains its own. Returns the thread, or None when there is nothing to drain.
    """
    from bli_memory.core.extraction.worker import default_worker_id, job_queue

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

    With the installed plugins (``pm`` None) and the embedded store, the tools answer
    through the resident daemon when it is up, and fall back to that backend in process
    (:mod:`bli_memory.core.mcp.daemon_route`); a caller's own plugin manager keeps every
    call in process, so plugins registered only there are honoured.

    Args:
        settings: The process's settings.
        pm: The caller's plugin manager (default: a new one with the installed
            plugins); the backend is built through it, so its plugins are honoured.
    """
    from bli_memory.core.mcp.daemon_route import DaemonRoute, eligible
    from bli_memory.core.plugins import build_backend, get_plugin_manager

    backend = build_backend(pm if pm is not None else get_plugin_manager(), settings)
    tag, origin = default_space(settings)
    if pm is None and eligible(backend):
        route = DaemonRoute(backend)
        return ServerState(settings=settings, backend=route, default_space=tag, space_origin=origin,
                           daemon_route=route)
    return ServerState(settings=settings, backend=backend, default_space=tag, space_origin=origin)


def run_stdio(settings: Settings) -> None:
    """Run the MCP server on stdio until the client closes it.

    Raises:
        SystemExit: 1, after one line on stderr, when the settings cannot build a backend
            (:class:`~bli_memory.core.errors.BliMemoryError` from the plugins).

    Every line read is answered: not JSON gets -32700, not JSON-RPC gets -32600 with
    the request's id, and lone surrogates become U+FFFD (:mod:`bli_memory.core.mcp.stdio`).
    """
    from bli_memory.core.mcp.stdio import robust_stdio_server

    # Built before serving, so a setting that cannot work (an unknown BLI_MEMORY_EMBEDDER, a
    # model folder without its manifest) ends the process with its one sentence on stderr,
    # which the host shows or logs, instead of a traceback from inside the task group.
    try:
        state = default_state(settings)
    except BliMemoryError as exc:
        sys.stderr.write(f"[bli-memory] the MCP server cannot start: {exc.reason}: {exc}\n")
        raise SystemExit(1) from None
    server = build_server(lambda: state)
    # MCPServer.run_stdio_async with our transport, which answers every line
    # (mcp 2.3.0 drops unparsable ones without a response).
    lowlevel = server._lowlevel_server

    async def serve() -> None:
        async with robust_stdio_server() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    anyio.run(serve)
