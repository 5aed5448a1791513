"""The remote backend: the memory tool contract over the team memory service's HTTP doors.

This module is also the plugin that chooses it (:func:`memory_backend`, ``tryfirst``):
when ``BLI_MEMORY_DASHBOARD_URL`` is set or the machine is paired
(:mod:`bli_memory.core.pairing`), the MCP server, the hooks and the daemon talk to
the service instead of the embedded engine, through the same contract. The device
token comes from ``BLI_MEMORY_DEVICE_TOKEN``, else from the session file; a service
URL without a token raises :class:`ServiceError` with reason ``unpaired``.

Failures map to the closed network reasons of the BLI Memory spec, in this one
module that calls httpx:

================================  ==============================================
``timeout``                       connect, read, write or pool timeout
``dashboard_unreachable``         refused, reset, DNS, TLS: no answer at all
``http_<status>``                 an answer other than success (401, 500, 503, ...)
``bad_response``                  a success whose body is not the JSON we expect
================================  ==============================================

except that a door's own verdicts keep their meaning: 400 becomes
:class:`InvalidInputError` and 404 :class:`NotFoundError`, exactly as the embedded
engine raises them. Module-level imports are the standard library only (the hook
entry path registers this plugin); httpx loads when the first request is made. One
``httpx.Client`` per backend keeps its connection alive, so the daemon holds it warm.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from bli_memory.core.contracts import hookimpl
from bli_memory.core.errors import InvalidInputError, NotFoundError, ServiceError
from bli_memory.core.models import (
    ForgetResult,
    Memory,
    Profile,
    SaveResult,
    SearchHit,
    SearchResult,
    UpdateResult,
)

if TYPE_CHECKING:
    from bli_memory.core.settings import Settings

__all__ = [
    "CONNECT_TIMEOUT_S",
    "READ_TIMEOUT_S",
    "UNPAIRED_MESSAGE",
    "RemoteBackend",
    "check_paired",
    "memory_backend",
    "remote_target",
]

#: Seconds to open a connection; a hook's own deadline (2-15 s) still bounds every call.
CONNECT_TIMEOUT_S = 3.0
#: Seconds to wait for an answer (a save embeds on the server).
READ_TIMEOUT_S = 10.0
#: The one sentence a process prints when a service is configured but no token is.
UNPAIRED_MESSAGE = (
    "This machine is not paired with the BLI memory service: run `cockpit login` "
    "or set BLI_MEMORY_DEVICE_TOKEN."
)


def _memory(d: Any) -> Memory:
    if not isinstance(d, dict):
        raise TypeError("memory is not an object")
    return Memory(
        id=str(d["id"]), space=str(d["space"]), content=str(d["content"]), custom_id=d.get("customId"),
        metadata=dict(d.get("metadata") or {}), source=str(d.get("source", "mcp")),
        session_id=d.get("sessionId"), created_at=str(d.get("createdAt", "")),
        updated_at=str(d.get("updatedAt", "")), version=int(d.get("version", 1)),
        supersedes=d.get("supersedes"), state=d.get("state", "active"),
        forgotten_at=d.get("forgottenAt"), expires_at=d.get("expiresAt"),
    )


def _profile(d: Any) -> Profile:
    return Profile(space=str(d["containerTag"]), facts=tuple(_memory(m) for m in d.get("facts", ())),
                   recent=tuple(_memory(m) for m in d.get("recent", ())))


def _optional(d: Any) -> Memory | None:
    return _memory(d) if d is not None else None


class RemoteBackend:
    """Memory operations against the memory service over HTTP.

    Args:
        base_url: The service's base URL (``https://memory.example.com``).
        token: The device token, sent as ``Authorization: Bearer``; never logged.
        timeout: Read timeout in seconds (connect: :data:`CONNECT_TIMEOUT_S`).
        transport: An httpx transport instead of the network (tests).

    Thread-safe: one client, one pool of kept-alive connections.
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
        return f"RemoteBackend({self.base_url!r})"

    # --- transport -------------------------------------------------------------------

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

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        import httpx

        client = self._http()
        try:
            resp = client.request(method, path, json=body)
        except httpx.TimeoutException as exc:
            raise ServiceError("the memory service did not answer in time", reason="timeout") from exc
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise ServiceError("the memory service is unreachable", reason="dashboard_unreachable") from exc
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
        message, reason = self._error(resp)
        if status == 400:
            raise InvalidInputError(message or "the memory service refused the request as invalid")
        if status == 404:
            raise NotFoundError(message or "not found")
        if status == 403 and reason == "read_only":
            raise NotFoundError(message or "read-only", reason="read_only")
        raise ServiceError(f"the memory service answered HTTP {status}", reason=f"http_{status}")

    @staticmethod
    def _error(resp: Any) -> tuple[str | None, str | None]:
        try:
            err = resp.json().get("error", {})
            return str(err.get("message"))[:500] if err.get("message") else None, err.get("reason")
        except (ValueError, AttributeError):
            return None, None

    def _parsed(self, fn: Any, data: dict[str, Any]) -> Any:
        try:
            return fn(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ServiceError("the memory service answered with an unexpected body",
                               reason="bad_response") from exc

    def close(self) -> None:
        """Close the kept-alive connections."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def warm_up(self) -> None:
        """Open the connection and prove the token now (the daemon and MCP server call this)."""
        self.whoami()

    def whoami(self) -> dict[str, Any]:
        """``{"person", "device", "deviceId"}`` of this backend's token."""
        return self._call("GET", "/api/memory/whoami")

    # --- the contract --------------------------------------------------------------

    def search(
        self, query: str, *, space: str, limit: int = 10, include_profile: bool = False
    ) -> SearchResult:
        """Hybrid search of a space and its aliases, on the service (``POST /api/memory/search``)."""
        data = self._call("POST", "/api/memory/search", {
            "q": query, "containerTag": space, "limit": limit, "includeProfile": include_profile})

        def parse(d: dict[str, Any]) -> SearchResult:
            hits = tuple(
                SearchHit(memory=_memory(h["memory"]),
                          similarity=float(h["similarity"]) if h.get("similarity") is not None else None,
                          score=float(h.get("score", 0.0)), channels=tuple(h.get("channels", ())))
                for h in d["results"]
            )
            profile = _profile(d["profile"]) if d.get("profile") else None
            return SearchResult(query=str(d.get("query", query)), space=str(d["containerTag"]),
                                spaces=tuple(d.get("searchedTags") or (d["containerTag"],)), hits=hits,
                                profile=profile)

        return self._parsed(parse, data)  # type: ignore[no-any-return]

    def save(
        self,
        content: str,
        *,
        space: str,
        custom_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        source: str = "mcp",
        session_id: str | None = None,
        expires_at: str | None = None,
    ) -> SaveResult:
        """Remember ``content`` on the service (``POST /api/memory/save``)."""
        body: dict[str, Any] = {"content": content, "containerTag": space, "source": source}
        for key, value in (("customId", custom_id), ("metadata", metadata), ("sessionId", session_id),
                           ("expiresAt", expires_at)):
            if value is not None:
                body[key] = value
        data = self._call("POST", "/api/memory/save", body)
        return self._parsed(lambda d: SaveResult(  # type: ignore[no-any-return]
            memory=_optional(d.get("memory")), space=str(d["containerTag"]), status=d["status"],
            previous=_optional(d.get("previous")), job_id=d.get("jobId")), data)

    def update(
        self, content: str, *, space: str, id: str | None = None, custom_id: str | None = None
    ) -> UpdateResult:
        """Replace a live memory on the service (``POST /api/memory/update``)."""
        if (id is None) == (custom_id is None):
            raise InvalidInputError("give exactly one of id or customId")
        body: dict[str, Any] = {"content": content, "containerTag": space}
        body.update({"id": id} if id is not None else {"customId": custom_id})
        data = self._call("POST", "/api/memory/update", body)
        return self._parsed(lambda d: UpdateResult(  # type: ignore[no-any-return]
            memory=_memory(d["memory"]), previous=_memory(d["previous"]),
            status=d.get("status", "updated")), data)

    def forget(self, *, space: str, id: str | None = None, content: str | None = None,
               query: str | None = None) -> ForgetResult:
        """Tombstone a memory on the service (``POST /api/memory/forget``)."""
        body: dict[str, Any] = {"containerTag": space}
        for key, value in (("id", id), ("content", content), ("query", query)):
            if value is not None:
                body[key] = value
        data = self._call("POST", "/api/memory/forget", body)
        return self._parsed(lambda d: ForgetResult(  # type: ignore[no-any-return]
            memory=_memory(d["memory"]), matched_by=d["matchedBy"],
            similarity=float(d["similarity"]) if d.get("similarity") is not None else None), data)

    def profile(self, *, space: str, limit: int = 10) -> Profile:
        """Profile and recent context (``POST /api/memory/v4/profile``)."""
        data = self._call("POST", "/api/memory/v4/profile", {"containerTag": space, "limit": limit})
        return self._parsed(_profile, data)  # type: ignore[no-any-return]

    def history(self, id: str) -> list[Memory]:
        """Every version of a memory, newest first (``POST /api/memory/history``)."""
        data = self._call("POST", "/api/memory/history", {"id": id})
        return self._parsed(lambda d: [_memory(m) for m in d["versions"]], data)  # type: ignore[no-any-return]

    def purge(self, id: str) -> int:
        """Erase a memory and its versions (``POST /api/memory/purge``); returns rows erased."""
        data = self._call("POST", "/api/memory/purge", {"id": id})
        return self._parsed(lambda d: int(d["erased"]), data)  # type: ignore[no-any-return]

    def enqueue_extract(self, text: str, *, space: str, source: str, session_id: str | None = None) -> str:
        """Queue text for extraction: the save door in extract mode answers 202 with the job id."""
        if not text or not text.strip():
            raise InvalidInputError("nothing to extract: the text is empty")
        body: dict[str, Any] = {"content": text, "containerTag": space, "source": source, "extract": True}
        if session_id is not None:
            body["sessionId"] = session_id
        data = self._call("POST", "/api/memory/save", body)
        job_id = data.get("jobId")
        if data.get("status") != "queued" or not isinstance(job_id, str):
            raise ServiceError("the memory service did not queue the extract job", reason="bad_response")
        return job_id

    def record_experience(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Ship one experience opinion (``POST /api/memory/experience``).

        Returns:
            The stored opinion with ``status`` ``created`` or ``identical``.

        Raises:
            ServiceError: ``http_409`` when the id exists with other content.
        """
        return self._call("POST", "/api/memory/experience", entry)


# --- choosing the backend ------------------------------------------------------------


def remote_target(settings: Any) -> tuple[str, str] | None:
    """``(url, token)`` of the memory service this process should use, or None for embedded.

    The URL is ``BLI_MEMORY_DASHBOARD_URL``, else the paired session's; the token is
    ``BLI_MEMORY_DEVICE_TOKEN``, else the session's (BLI Memory spec, "Auth").

    Raises:
        ServiceError: reason ``unpaired``: a service is configured but no token is.
        ConfigError: the session file exists but cannot be read.
    """
    from bli_memory.core.pairing import read_session

    url = getattr(settings, "dashboard_url", None)
    secret = getattr(settings, "device_token", None)
    token = secret.get_secret_value() if hasattr(secret, "get_secret_value") else secret
    session = read_session()
    if url is None and session is None:
        return None
    url = url or (session.dashboard_url if session else None)
    token = (token or "").strip() or (session.device_token if session else None)
    if not url or not token:
        raise ServiceError(UNPAIRED_MESSAGE, reason="unpaired")
    return url.rstrip("/"), token


def check_paired(settings: Any) -> None:
    """Raise ``ServiceError(reason="unpaired")`` when a service is configured without a token.

    The MCP server calls this before opening its transport, so an unpaired machine
    gets :data:`UNPAIRED_MESSAGE` on stderr and exit status 1.
    """
    remote_target(settings)


@hookimpl(tryfirst=True)
def memory_backend(settings: Settings) -> RemoteBackend | None:
    """Offer the remote backend when a memory service is configured; else let the engine answer.

    Raises:
        ServiceError: reason ``unpaired`` (hooks report it; the server exits 1).
    """
    target = remote_target(settings)
    if target is None:
        return None
    return RemoteBackend(target[0], token=target[1])
