"""The one HTTP client of the team memory service: httpx, bearer token, closed failure reasons.

:class:`ServiceClient` is what every caller of the service's doors uses (the remote
backend :mod:`bli_memory.core.team.client.remote`, pairing's token check
:func:`bli_memory.core.team.client.pairing.login`, and any other shipper of data to the
service). Failures map to the closed network reasons of the BLI Memory spec, in this
one module that calls httpx:

================================  ==============================================
``timeout``                       connect, read, write or pool timeout
``dashboard_unreachable``         refused, reset, DNS, TLS: no answer at all
``http_<status>``                 an answer other than success (401, 500, 503, ...)
``bad_response``                  a success whose body is not the JSON we expect
================================  ==============================================

except that a door's own verdicts keep their meaning: 400 becomes
:class:`InvalidInputError`, 404 :class:`NotFoundError` and 403 ``read_only``
:class:`NotFoundError` with reason ``read_only``, exactly as the embedded engine raises
them. Module-level imports are the standard library only (the hook entry path loads
this module); httpx loads when the first request is made. One ``httpx.Client`` per
:class:`ServiceClient` keeps its connection alive.

The wire readers (:func:`memory_of`, :func:`profile_of`, :func:`search_of`) turn the doors' JSON back
into :class:`~bli_memory.core.models.Memory` and :class:`~bli_memory.core.models.Profile`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from bli_memory.core.errors import InvalidInputError, NotFoundError, ServiceError
from bli_memory.core.models import Memory, Profile, SearchResult

__all__ = [
    "BULK_TIMEOUT_S",
    "CONNECT_TIMEOUT_S",
    "READ_TIMEOUT_S",
    "ServiceClient",
    "memory_of",
    "optional_memory_of",
    "parsed",
    "profile_of",
    "search_of",
]

#: Seconds to open a connection; a hook's own deadline (2-15 s) still bounds every call.
CONNECT_TIMEOUT_S = 3.0
#: Seconds to wait for an answer (a save embeds on the server).
READ_TIMEOUT_S = 10.0
#: Seconds to wait for a bulk answer: an import part embeds its rows on the server, an
#: audit with repair re-embeds every broken row.
BULK_TIMEOUT_S = 300.0

_T = TypeVar("_T")


class ServiceClient:
    """Requests to the memory service's doors with one device token.

    Args:
        base_url: The service's base URL (``https://memory.example.com``).
        token: The device token, sent as ``Authorization: Bearer``; never logged.
        timeout: Read timeout in seconds (connect: :data:`CONNECT_TIMEOUT_S`, or less).
        transport: An httpx transport instead of the network (tests).

    Thread-safe: one client, one pool of kept-alive connections, opened on first use.
    """

    def __init__(self, base_url: str, *, token: str, timeout: float = READ_TIMEOUT_S,
                 transport: Any | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._transport = transport
        self._client: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ServiceClient({self.base_url!r})"

    def _http(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import httpx

                    from bli_memory.core._version import VERSION

                    transport = self._transport or httpx.HTTPTransport(retries=1)
                    self._client = httpx.Client(
                        base_url=self.base_url, transport=transport,
                        headers={"Authorization": f"Bearer {self._token}",
                                 "User-Agent": f"bli-memory-mcp/{VERSION}"},
                        timeout=httpx.Timeout(self._timeout, connect=min(CONNECT_TIMEOUT_S, self._timeout)),
                    )
        return self._client

    def call(self, method: str, path: str, body: dict[str, Any] | None = None, *,
             timeout: float | None = None) -> dict[str, Any]:
        """Send one request and return the JSON object the door answered.

        Args:
            method: ``GET`` or ``POST``.
            path: The door (``/api/memory/search``).
            body: The JSON body of a ``POST``.
            timeout: Read timeout of this request instead of the client's, in seconds.

        Raises:
            InvalidInputError: the body cannot be sent as JSON, or the door answered 400.
            NotFoundError: the door answered 404, or 403 ``read_only`` (reason ``read_only``).
            ServiceError: ``timeout``, ``dashboard_unreachable``, ``bad_response`` or
                ``http_<status>`` (see the module's table).
        """
        import httpx

        client = self._http()
        extra: dict[str, Any] = {}
        if timeout is not None:
            extra["timeout"] = httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout))
        try:
            resp = client.request(method, path, json=body, **extra)
        except (UnicodeEncodeError, ValueError) as exc:  # not JSON: NaN, a lone surrogate
            raise InvalidInputError(f"the request cannot be sent as JSON: {type(exc).__name__}") from exc
        except httpx.TimeoutException as exc:
            raise ServiceError(f"the memory service at {self.base_url} did not answer in time",
                               reason="timeout") from exc
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise ServiceError(f"the memory service at {self.base_url} is unreachable",
                               reason="dashboard_unreachable") from exc
        status = resp.status_code
        if 200 <= status < 300:
            try:
                data = resp.json()
            except ValueError as exc:
                raise ServiceError("the memory service answered with unreadable JSON",
                                   reason="bad_response") from exc
            if not isinstance(data, dict):
                raise ServiceError("the memory service answered with an unexpected body",
                                   reason="bad_response")
            return data
        message, reason = _error(resp)
        if status == 400:
            raise InvalidInputError(message or "the memory service refused the request as invalid")
        if status == 404:
            raise NotFoundError(message or "not found")
        if status == 403 and reason == "read_only":
            raise NotFoundError(message or "read-only", reason="read_only")
        if status == 401:
            raise ServiceError(
                "the memory service refused this machine's token (revoked, or for another "
                "service); pair again with `cockpit login URL TOKEN`", reason="http_401",
            )
        raise ServiceError(f"the memory service answered HTTP {status}", reason=f"http_{status}")

    def close(self) -> None:
        """Close the kept-alive connections (the next call opens new ones)."""
        if self._client is not None:
            self._client.close()
            self._client = None


def _error(resp: Any) -> tuple[str | None, str | None]:
    """``(message, reason)`` of a door's ``{"error": {...}}`` answer, each None when absent."""
    try:
        err = resp.json().get("error", {})
        return str(err.get("message"))[:500] if err.get("message") else None, err.get("reason")
    except (ValueError, AttributeError):
        return None, None


def parsed(fn: Callable[[dict[str, Any]], _T], data: dict[str, Any]) -> _T:
    """``fn(data)``, with a body of the wrong shape reported as the service's fault.

    Raises:
        ServiceError: reason ``bad_response`` when ``fn`` finds a key missing or a
            value of the wrong type.
    """
    try:
        return fn(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ServiceError("the memory service answered with an unexpected body",
                           reason="bad_response") from exc


def memory_of(d: Any) -> Memory:
    """The :class:`Memory` of a door's memory object (:class:`~bli_memory.core.memory.wire.MemoryRecord`).

    Raises:
        ValueError: not that shape (a pydantic ``ValidationError``; see :func:`parsed`).
    """
    from bli_memory.core.memory.wire import MemoryRecord

    return MemoryRecord.model_validate(d).memory()


def optional_memory_of(d: Any) -> Memory | None:
    """:func:`memory_of`, with JSON ``null`` read as None."""
    return memory_of(d) if d is not None else None


def profile_of(d: Any) -> Profile:
    """The :class:`Profile` of a door's profile object
    (:class:`~bli_memory.core.memory.wire.ProfileRecord`)."""
    from bli_memory.core.memory.wire import ProfileRecord

    return ProfileRecord.model_validate(d).profile()


def search_of(d: Any) -> SearchResult:
    """The :class:`SearchResult` of a search answer (:func:`bli_memory.core.memory.wire.search_of`)."""
    from bli_memory.core.memory.wire import search_of as read

    return read(d)
