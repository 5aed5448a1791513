"""How the team service reads a request and shapes a refusal, before any door runs.

The service answers every request, and answers a hostile one cheaply:

- the headers are checked before a byte of the body is read: a missing token (401),
  a body that is not JSON by its ``Content-Type`` (415) and a ``Content-Length`` over
  the door's limit (413) are answered at once, without reading the rest;
- the body is then read as a stream, counted as it arrives, and refused (413) the
  moment it passes the limit, so a body without ``Content-Length`` (chunked) is held
  at most one limit's worth, never in full;
- a body that trickles in is refused (408) once :data:`BODY_TIMEOUT_SECONDS` have
  passed, so a slow sender cannot hold a worker forever;
- error messages are cut to :data:`MAX_ERROR_MESSAGE_CHARS`, so an answer never
  echoes a 100,000-character id back;
- an answer sent before the whole body was read (any refusal above, a 404 or 405)
  carries ``Connection: close`` and the connection is closed after it
  (:class:`CloseUnreadBodies`): the rest of a refused body is never read, where
  keeping the connection open would have meant reading (and dropping) all of it, up
  to the gigabytes its ``Content-Length`` announced, before the next request.

Every refusal is a :class:`DoorError` and is answered as the documented
``{"error": {"reason", "message"}}`` object by :func:`error_payload`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "BODY_TIMEOUT_SECONDS",
    "BULK_BODY_TIMEOUT_SECONDS",
    "MAX_ERROR_MESSAGE_CHARS",
    "CloseUnreadBodies",
    "DoorError",
    "bounded",
    "check_headers",
    "error_payload",
    "read_body",
]

#: Seconds a door waits for the whole body to arrive. A client of the service gives up
#: on an answer after :data:`bli_memory.core.team.client.remote.READ_TIMEOUT_S` (10 s), so a body
#: still arriving after that is from no client that is still waiting.
BODY_TIMEOUT_SECONDS = 10.0
#: The same for ``import`` (up to 16 MB): the client waits
#: :data:`bli_memory.core.team.client.remote.BULK_TIMEOUT_S` (300 s) for a bulk answer.
BULK_BODY_TIMEOUT_SECONDS = 300.0
#: Longest error message answered, in characters. The longest message a door writes
#: itself is about 250 characters; the rest is echoed input (an id, a tag).
MAX_ERROR_MESSAGE_CHARS = 400


class DoorError(Exception):
    """An answer other than success, with its HTTP status and closed-set reason.

    Args:
        status: The HTTP status (4xx or 5xx).
        reason: One of the closed set documented in ``docs/service.md``.
        message: One sentence for a person; cut by :func:`bounded` when answered.
        headers: Extra response headers (``Allow`` for a 405).
    """

    def __init__(self, status: int, reason: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.headers = headers or {}


def bounded(message: str, limit: int = MAX_ERROR_MESSAGE_CHARS) -> str:
    """``message`` as valid UTF-8 text of at most ``limit`` characters (cut ends with ``…``)."""
    text = message.encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_payload(reason: str, message: str) -> dict[str, Any]:
    """The documented error body: ``{"error": {"reason": ..., "message": ...}}`` (message bounded)."""
    return {"error": {"reason": reason, "message": bounded(message)}}


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def check_headers(request: Request, *, max_body: int) -> None:
    """Refuse a body by its headers alone, before any of it is read.

    A request without a body (no ``Content-Length``, or ``0``, and not chunked) passes:
    the doors read it as ``{}``.

    Raises:
        DoorError: 415 ``unsupported_media_type`` for a body whose ``Content-Type`` is
            not JSON; 400 ``invalid_input`` for an unreadable ``Content-Length``; 413
            ``too_large`` for a ``Content-Length`` over ``max_body`` bytes.
    """
    length = request.headers.get("content-length")
    chunked = "chunked" in request.headers.get("transfer-encoding", "").lower()
    if length is not None:
        if not length.strip().isdigit() or len(length.strip()) > 18:
            raise DoorError(400, "invalid_input", "Content-Length is not a number of bytes")
        if int(length) > max_body:
            raise DoorError(413, "too_large", f"the body is over {max_body} bytes")
    has_body = chunked or (length is not None and int(length) > 0)
    if has_body and not _is_json(request.headers.get("content-type", "")):
        raise DoorError(415, "unsupported_media_type", "send the body as Content-Type: application/json")


async def read_body(request: Request, *, max_body: int, timeout: float) -> bytes:
    """The request body, read as a stream and refused as soon as it is too large or too slow.

    Args:
        request: The Starlette request (its headers already passed :func:`check_headers`).
        max_body: Most bytes accepted.
        timeout: Seconds the whole body may take to arrive.

    Returns:
        The body bytes (at most ``max_body``).

    Raises:
        DoorError: 413 ``too_large`` past ``max_body`` bytes (the rest is never read);
            408 ``timeout`` when the body has not arrived within ``timeout`` seconds;
            400 ``invalid_input`` when the client hung up before sending all of it.
    """
    import anyio
    from starlette.requests import ClientDisconnect

    data = bytearray()
    try:
        with anyio.fail_after(timeout):
            async for chunk in request.stream():
                data += chunk
                if len(data) > max_body:
                    raise DoorError(413, "too_large", f"the body is over {max_body} bytes")
    except TimeoutError:
        raise DoorError(408, "timeout", f"the body did not arrive within {timeout:g} seconds") from None
    except ClientDisconnect:  # nobody is left to answer; not a failure of the service
        raise DoorError(400, "invalid_input", "the connection closed before the body arrived") from None
    return bytes(data)


def _announces_body(headers: list[tuple[bytes, bytes]]) -> bool:
    """True when request ``headers`` announce a body: chunked, or a ``Content-Length``
    other than 0 (an unreadable one included)."""
    for name, value in headers:
        name = name.lower()
        if name == b"transfer-encoding" and b"chunked" in value.lower():
            return True
        if name == b"content-length" and value.strip() != b"0":
            return True
    return False


class CloseUnreadBodies:
    """ASGI middleware: an answer sent before the request's body was read closes the connection.

    HTTP/1.1 keeps a connection open for the next request, so a server that answers
    early must still read the rest of the body to find where the next request starts.
    A refused body (401, 413, 415, 408, 404, 405) may announce gigabytes; rather than
    read it all, the answer carries ``Connection: close`` (uvicorn then closes the
    connection once the answer is sent). An answer to a request whose body was read to
    its end keeps the connection open.

    Args:
        app: The ASGI app to wrap.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection scope (HTTP requests only; others pass through)."""
        if scope["type"] != "http" or not _announces_body(scope.get("headers") or []):
            await self.app(scope, receive, send)
            return
        read = False

        async def receiving() -> Message:
            nonlocal read
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                read = True
            return message

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and not read:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receiving, sending)
