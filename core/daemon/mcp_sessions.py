"""The daemon's MCP sessions: the official SDK server, once per relay connection.

The ``bli-memory-mcp`` a host starts is a relay (:mod:`bli_memory.core.mcp.relay`):
it sends one hello line and then pipes the session's JSON-RPC both ways. The daemon
answers the hello (:func:`open_session`) and serves the connection with the very server
an in-process session runs (:func:`bli_memory.core.mcp.server.serve_connection`: the
same tools, the same robust line handling), fed by the socket instead of stdio, on a
:class:`~bli_memory.core.mcp.state.ServerState` of its own: the relay's session id, the
space its folder and variables derive, and the daemon's warm backend (the model and the
side indexes loaded once for every session). The SDK is imported at the first relay
connection, never by a daemon that serves only hooks.

Hello (``-> {"mcp": "relay", "version", "config", "cwd", "env", "session"}``) answers,
after the version and configuration checks every request gets:

- ``{"relay": true, "session": id}``, then the connection is the session's;
- ``{"error": "internal"}`` when the backend cannot be built (the relay's in-process
  server then ends with the reason, as it does today; a store that cannot be opened is
  served, each call reporting it as in process), ``not_local`` when the backend keeps
  no local store (a machine paired with the team service), ``malformed`` for a hello of
  the wrong shape or space variables the settings refuse.

A daemon still warming up (started for this very session) accepts at once, so the
session's ``initialize`` waits for the SDK's import only, not for the model: tool calls
wait for the warm backend. Should the warm-up then fail, or build a backend without a
local store, the connection is ended and the relay serves the session in process, where
the same failure is reported as it is today.

The relay sends nothing after its hello until it has the answer, so the hello line is
the only thing read before the session's lines.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any

from bli_memory.core._version import VERSION
from bli_memory.core.daemon.oplog import log
from bli_memory.core.daemon.protocol import rss_bytes

__all__ = ["RelaySession", "end_sessions", "hello_of", "open_session", "serve_session"]

_SPACE_VARS = ("BLI_MEMORY_CONTAINER_TAG", "BLI_MEMORY_ISOLATE_WORKTREES")
#: The backend's attributes that are values, not methods (MemoryBackend).
_DATA_ATTRIBUTES = frozenset({"store_path", "spool_captures", "job_queue"})
_sdk_lock = threading.Lock()


class RelaySession:
    """One accepted relay: what its :class:`ServerState` is built from.

    Attributes:
        session_id: The relay's session id (``mcp-<uuid4>``).
        cwd: The relay's working folder.
        env: Its space variables.
        settings: The daemon's settings with the relay's space variables.
    """

    def __init__(self, session_id: str, cwd: str, env: dict[str, str], settings: Any) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.env = env
        self.settings = settings


def hello_of(line: bytes) -> dict[str, Any] | None:
    """The hello message of a relay, or None when ``line`` is another request."""
    if b'"mcp"' not in line:
        return None
    try:
        message = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) and message.get("mcp") == "relay" else None


def _checked(message: dict[str, Any]) -> tuple[str, str, dict[str, str]] | None:
    session, cwd, env = message.get("session"), message.get("cwd"), message.get("env")
    if (
        not isinstance(session, str) or not session.startswith("mcp-") or len(session) > 80
        or not isinstance(cwd, str) or not os.path.isabs(cwd)
        or not isinstance(env, dict)
        or not all(k in _SPACE_VARS and isinstance(v, str) for k, v in env.items())
        or not isinstance(message.get("version"), str) or not isinstance(message.get("config"), dict)
    ):
        return None
    return session, cwd, env


def open_session(message: dict[str, Any], *, ready: threading.Event,
                 backend: Callable[[], Any]) -> tuple[dict[str, Any], RelaySession | None]:
    """Answer a relay's hello (after the daemon's version and configuration checks).

    Args:
        message: The hello.
        ready: Set once the daemon's warm-up finished.
        backend: Returns the warm backend (may raise).

    Returns:
        ``(reply, session)``: the reply line's object, and the session to serve, or
        None when the reply is a refusal (module docstring).
    """
    checked = _checked(message)
    if checked is None:
        return {"error": "malformed"}, None
    session_id, cwd, env = checked
    if ready.is_set():  # else checked once warm (serve_session)
        refused = _not_servable(backend)
        if refused is not None:
            return {"error": refused}, None
    from bli_memory.core.errors import BliMemoryError
    from bli_memory.core.settings import load_settings

    try:
        settings = load_settings(container_tag=env.get("BLI_MEMORY_CONTAINER_TAG"),
                                 isolate_worktrees=env.get("BLI_MEMORY_ISOLATE_WORKTREES", False))
    except BliMemoryError:
        return {"error": "malformed"}, None
    return {"relay": True, "session": session_id}, RelaySession(session_id, cwd, env, settings)


def _not_servable(backend: Callable[[], Any]) -> str | None:
    """``not_local`` or ``internal`` when the warm backend cannot serve a relay, else None.

    A store that cannot be opened now is servable: each call reports it (``isError``),
    as an in-process server's calls do, and the next call tries the store again. Any
    other failure (a setting or plugin that cannot build a backend) ends an in-process
    server at its start with one sentence on stderr, so the relay goes in process for it.
    """
    from bli_memory.core.errors import StoreError

    try:
        if backend().store_path is None:
            return "not_local"
    except StoreError:
        return None
    except Exception as exc:
        log("relay_refused", error=type(exc).__name__)
        return "internal"
    return None


def _end_unless_servable(conn: socket.socket, ready: threading.Event, backend: Callable[[], Any]) -> None:
    """Once warm, end a session accepted during the warm-up when its backend cannot serve it."""
    ready.wait()
    if _not_servable(backend) is not None:
        end_sessions([conn])


def _import_sdk() -> None:
    """Import the MCP server (the SDK, pydantic, anyio) once, in one thread at a time:
    two threads importing it at once could see half-initialised modules."""
    with _sdk_lock:
        import bli_memory.core.mcp.server  # noqa: F401


class _WarmBackend:
    """The daemon's warm backend as one session sees it: looked up at each use, so a
    store file replaced under the daemon is reopened (:class:`WarmContext`), never closed
    by a session."""

    def __init__(self, backend: Callable[[], Any]) -> None:
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        if name in _DATA_ATTRIBUTES:
            return getattr(self._backend(), name)

        def call(*args: Any, **kwargs: Any) -> Any:
            # Looked up when called, in the tool's worker thread: during the warm-up this
            # waits there for the backend, not on the session's event loop.
            return getattr(self._backend(), name)(*args, **kwargs)

        return call

    def warm_up(self) -> None:
        """The daemon warms its backend itself."""

    def close(self) -> None:
        """The daemon closes its backend itself, when it stops."""


class _SocketWriter:
    """The session's answers onto the relay's socket (``async write`` / ``flush``)."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._gone = False

    async def write(self, text: str) -> None:
        import anyio

        if self._gone:
            return
        try:
            await anyio.to_thread.run_sync(self._conn.sendall, text.encode("utf-8"))
        except OSError:
            self._gone = True  # the relay went away; its input ends in a moment too

    async def flush(self) -> None:
        """Nothing to flush: each answer is sent whole."""


def serve_session(conn: socket.socket, session: RelaySession, *, backend: Callable[[], Any],
                  ready: threading.Event, wake: threading.Event) -> None:
    """Serve one relay's MCP session on ``conn`` until its input ends (blocking).

    Args:
        conn: The relay's connection, its hello answered.
        session: What :func:`open_session` accepted.
        backend: Returns the daemon's warm backend.
        ready: Set once the daemon's warm-up finished.
        wake: Set when a tool queues an extract job (the daemon's drain runs it).
    """
    if not ready.is_set():
        threading.Thread(target=_end_unless_servable, args=(conn, ready, backend), daemon=True,
                         name="relay-check").start()
    _import_sdk()
    import anyio

    from bli_memory.core.mcp.server import serve_connection
    from bli_memory.core.mcp.state import ServerState, default_space

    tag, origin = default_space(session.settings, cwd=session.cwd, environ=session.env)
    pid = os.getpid()
    state = ServerState(
        settings=session.settings, backend=_WarmBackend(backend),
        default_space=tag, space_origin=origin, session_id=session.session_id, wake=wake,
        via="daemon", shared_backend=True,
        daemon_status=lambda: {"pid": pid, "version": VERSION, "rssBytes": rss_bytes()},
    )
    conn.settimeout(None)  # a session is long-lived: reads wait for the next line
    reader = conn.makefile("rb")
    try:
        anyio.run(_serve, serve_connection, state, anyio.wrap_file(reader), _SocketWriter(conn))
    finally:
        reader.close()


def end_sessions(conns: Iterable[socket.socket]) -> None:
    """End the sessions on ``conns`` (the daemon stops): each relay reads the end of its
    connection and serves its session in its own process, running again what was unanswered."""
    for conn in conns:
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


async def _serve(serve_connection: Any, state: Any, source: Any, writer: Any) -> None:
    await serve_connection(state, source=source, stdout=writer)
