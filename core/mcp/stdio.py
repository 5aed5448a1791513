"""The MCP server's stdio transport: every line read gets an answer or is processed.

The MCP SDK's ``stdio_server`` (mcp 2.3.0, ``mcp/server/stdio.py``) parses each line
with pydantic and, when that fails, hands the exception to the session, which drops
it: a line that is not JSON, a message that is not JSON-RPC, or a request whose JSON
holds a lone surrogate (``"\\ud800"``, which pydantic's parser refuses) gets no
response at all, and the client waits for its timeout. This module reads stdin
itself and passes the SDK only lines it accepts:

- a line that is not JSON (or not UTF-8 enough to be) is answered with JSON-RPC
  ``-32700 Parse error`` and ``id: null`` (JSON-RPC 2.0, section 5.1);
- JSON that is not a JSON-RPC message (an array, a request without ``method``) is
  answered with ``-32600 Invalid Request``, carrying the request's id when it has one;
- a message nested deeper than the SDK's parser reads (200 levels) is answered with
  ``-32600`` and its id, instead of being dropped;
- lone surrogates in any string become U+FFFD and the request is processed as usual.

stdout stays the SDK's: it keeps fd 1 for the wire and points the descriptor at
stderr, so stray prints never corrupt the stream. fd 0 is likewise moved to a private
descriptor and pointed at the null device, so a child process reads EOF instead of
the wire.

The same wrapping serves other streams than the process's own: the daemon serves
each relay's connection with it (``source`` and ``stdout``, :mod:`bli_memory.core.daemon.mcp_sessions`),
and a relay whose daemon went away resumes its session in process from the lines it
saved (:func:`handover_source`, :mod:`bli_memory.core.mcp.relay`).
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from bli_memory.core.mcp.stdin_claim import claim_stdin
from bli_memory.core.memory.unicode_text import clean_strings

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["EOF_GRACE_S", "handover_source", "robust_stdio_server"]

#: When the client closes stdin, requests still running get this long to answer before
#: the server ends (a tool call that embeds or waits on a store answers well within it).
EOF_GRACE_S = 60.0

def _error(request_id: Any, code: int, message: str) -> SessionMessage:
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        request_id = None
    return SessionMessage(
        types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
    )


class _CheckedLines:
    """Async iterator over stdin lines that the SDK can parse; answers the others itself."""

    def __init__(self, source: Any) -> None:
        self._source = source
        self._lines = source.__aiter__()
        self._ready = anyio.Event()
        self._write: Any = None
        self.pending: set[str | int] = set()  # ids of requests read and not yet answered
        self.answered = anyio.Event()

    def attach(self, write_stream: Any) -> None:
        """Give the stream errors are answered on (the server's write stream)."""
        self._write = write_stream
        self._ready.set()

    def __aiter__(self) -> _CheckedLines:
        return self

    def done(self, message: Any) -> None:
        """Note that the response to a request id went out."""
        root = getattr(message, "message", None)
        root = getattr(root, "root", root)  # a RootModel wrapper in some SDK versions
        if isinstance(root, types.JSONRPCResponse | types.JSONRPCError) and root.id in self.pending:
            self.pending.discard(root.id)
            self.answered.set()

    async def _drain(self) -> None:
        """At end of input, wait (at most :data:`EOF_GRACE_S`) for the requests in flight."""
        with anyio.move_on_after(EOF_GRACE_S):
            while self.pending:
                self.answered = anyio.Event()
                await self.answered.wait()

    async def __anext__(self) -> str:
        while True:
            try:
                raw: bytes = await self._lines.__anext__()
            except StopAsyncIteration:
                await self._drain()  # the SDK cancels what is in flight once input ends
                raise
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            answer, accepted = _check(line)
            if accepted is not None:
                message = json.loads(accepted)
                if isinstance(message, dict) and "method" in message and "id" in message:
                    self.pending.add(message["id"])
                return accepted
            await self._ready.wait()
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._write.send(answer)


class _NotingSender:
    """The server's write stream, telling :class:`_CheckedLines` which requests were answered.

    ``drop_reply_to``: a request id whose first response is noted but not written (the
    ``initialize`` a resumed session replays, which its client already had answered).
    """

    def __init__(self, stream: Any, lines: _CheckedLines, drop_reply_to: Any = None) -> None:
        self._stream = stream
        self._lines = lines
        self._drop = drop_reply_to

    async def send(self, message: Any) -> None:
        if self._drop is not None:
            root = getattr(message, "message", None)
            root = getattr(root, "root", root)
            if isinstance(root, types.JSONRPCResponse | types.JSONRPCError) and root.id == self._drop:
                self._drop = None
                self._lines.done(message)
                return
        await self._stream.send(message)
        self._lines.done(message)

    async def __aenter__(self) -> _NotingSender:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


#: The answer to a message nested deeper than the SDK's JSON parser reads (pydantic-core
#: stops at 200 levels); Python's own parser stops near 1,000 and gets -32700.
_TOO_DEEP = "Invalid Request: nested too deeply (200 levels at most)"


def _valid_id(request_id: Any) -> bool:
    """A request id the MCP SDK can answer: a string or an integer (a bool is neither)."""
    return isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool))


def _check(line: str) -> tuple[SessionMessage | None, str | None]:
    """Return ``(error to answer, None)`` or ``(None, the line to hand to the SDK)``."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return _error(None, types.PARSE_ERROR, "Parse error"), None
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(message, dict) and "id" in message and not _valid_id(request_id):
        # JSON-RPC 2.0 section 4: an id is a string, a number or null. Left to the SDK, an
        # object id validates as a notification (never answered) and then breaks the
        # bookkeeping of pending requests; a bool would be read as 0 or 1.
        return _error(None, types.INVALID_REQUEST, "Invalid Request: id must be a string or an integer"), None
    try:
        accepted = json.dumps(clean_strings(message), ensure_ascii=False)
        # The very parse the SDK's reader makes: what it would drop is answered here.
        types.jsonrpc_message_adapter.validate_json(accepted, by_name=False)
    except RecursionError:
        return _error(request_id, types.INVALID_REQUEST, _TOO_DEEP), None
    except Exception as exc:  # any message pydantic refuses is an invalid request
        if "recursion limit" in str(exc):
            return _error(request_id, types.INVALID_REQUEST, _TOO_DEEP), None
        return _error(request_id, types.INVALID_REQUEST, "Invalid Request"), None
    return None, accepted


@asynccontextmanager
async def robust_stdio_server(
    *, source: Any = None, stdout: Any = None, drop_reply_to: str | int | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Like ``mcp.server.stdio.stdio_server()``, but no line read goes unanswered.

    Args:
        source: Async iterable of ``bytes`` lines to serve instead of stdin (a daemon's
            relay connection, or :func:`handover_source`); None claims fd 0.
        stdout: Object with ``async write(str)`` and ``async flush()`` to answer on
            instead of stdout; None lets the SDK claim fd 1.
        drop_reply_to: Request id whose first answer is not written (see
            :class:`_NotingSender`).

    Yields:
        ``(read_stream, write_stream)`` for ``Server.run``.
    """
    private = None
    if source is None:
        private = claim_stdin()
        if private is not None:
            source = anyio.wrap_file(os.fdopen(private, "rb", closefd=False))
        elif sys.stdin is not None and hasattr(sys.stdin, "buffer"):
            source = anyio.wrap_file(sys.stdin.buffer)
        else:  # no stdin at all: nothing to read, the server ends at once
            source = anyio.wrap_file(open(os.devnull, "rb"))  # noqa: SIM115 - lives as long as the server
    lines = _CheckedLines(source)
    try:
        async with stdio_server(stdin=lines, stdout=stdout) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.attach(write_stream)
            yield read_stream, _NotingSender(write_stream, lines, drop_reply_to)
    finally:
        if private is not None:
            _release_stdin(private)


class _HandoverLines:
    """``bytes`` lines: the saved ones first, then those a relay's reader queues (None ends)."""

    def __init__(self, replay: list[bytes], queue: Any) -> None:
        self._replay = list(replay)
        self._queue = queue

    def __aiter__(self) -> _HandoverLines:
        return self

    async def __anext__(self) -> bytes:
        if self._replay:
            return self._replay.pop(0)
        line = await anyio.to_thread.run_sync(self._queue.get, abandon_on_cancel=True)
        if line is None:
            raise StopAsyncIteration
        return bytes(line)


def handover_source(replay: list[bytes], queue: Any) -> _HandoverLines:
    """The input of a session resumed in process: ``replay`` lines, then ``queue.get()``.

    Args:
        replay: Lines to serve first (the saved ``initialize``, ``notifications/initialized``
            and the requests still unanswered, in the order they were read).
        queue: A ``queue.Queue`` of further ``bytes`` lines; ``None`` marks end of input.
    """
    return _HandoverLines(replay, queue)


def _release_stdin(private: int) -> None:
    with suppress(OSError):
        os.dup2(private, 0)
