"""Where experience entries are shipped: the memory service's door, or the embedded store.

:func:`choose_sink` picks the service when one is configured (``BLI_MEMORY_DASHBOARD_URL``
or the paired session) and the ``memory_experience`` table of the embedded store
otherwise. The service is reached over httpx, with the timeout and the closed set of
failure reasons the rest of the client uses (``timeout``, ``dashboard_unreachable``,
``http_<status>``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from bli_memory.core.errors import ServiceError

if TYPE_CHECKING:
    from bli_memory.core.embedded.store import SQLiteStore
    from bli_memory.core.settings import Settings

__all__ = ["DOOR_PATH", "HTTP_TIMEOUT_S", "HttpSink", "LocalSink", "Sink", "choose_sink"]

#: The memory service's experience door.
DOOR_PATH = "/api/memory/experience"
#: Seconds for one delivery to the door, connection included.
HTTP_TIMEOUT_S = 5.0


class Sink(Protocol):
    """Something that takes one entry: the service door or the embedded store."""

    #: ``service`` or ``local``, recorded on a shipped sidecar as ``shipped_to``.
    target: str

    def put(self, payload: dict[str, str], extra: Mapping[str, Any]) -> int:
        """Deliver one entry; return 201, 200, 409 or 400, or raise a BliMemoryError."""
        ...


class HttpSink:
    """The service door ``POST /api/memory/experience``, over httpx.

    Args:
        base_url: The service's base URL.
        token: The device token, sent as ``Authorization: Bearer``.
        timeout: Seconds for the whole request (:data:`HTTP_TIMEOUT_S`).
        transport: An httpx transport (tests, custom networking); default httpx's.
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = HTTP_TIMEOUT_S,
                 transport: Any | None = None) -> None:
        self.url = base_url.rstrip("/") + DOOR_PATH
        self.target = "service"
        self._token = token
        self._timeout = timeout
        self._transport = transport

    def put(self, payload: dict[str, str], extra: Mapping[str, Any]) -> int:
        """POST one entry; the door's status when it is 200, 201, 400 or 409.

        Raises:
            ServiceError: reason ``timeout``, ``dashboard_unreachable`` (no connection,
                or it broke before the answer) or ``http_<status>`` for any other status.
        """
        import httpx

        from bli_memory.core._version import VERSION

        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "Authorization": f"Bearer {self._token}", "User-Agent": f"bli-memory-mcp/{VERSION}"}
        try:
            with httpx.Client(timeout=self._timeout, transport=self._transport) as client:
                status = client.post(self.url, content=body, headers=headers).status_code
        except httpx.TimeoutException as exc:
            raise ServiceError("the memory service did not answer in time", reason="timeout") from exc
        except httpx.ConnectError as exc:
            raise ServiceError("the memory service is unreachable", reason="dashboard_unreachable") from exc
        except (httpx.HTTPError, OSError) as exc:
            raise ServiceError(
                "the connection to the memory service broke before it answered",
                reason="dashboard_unreachable",
            ) from exc
        if status in (200, 201, 400, 409):
            return status
        raise ServiceError(f"the memory service answered HTTP {status}", reason=f"http_{status}")


class LocalSink:
    """The ``memory_experience`` table of the embedded store (no service configured)."""

    def __init__(self, store_path: Path) -> None:
        self.path = store_path
        self.target = "local"
        self._store: SQLiteStore | None = None

    def put(self, payload: dict[str, str], extra: Mapping[str, Any]) -> int:
        """Add one entry to the table: 201 created, 200 identical retry, 409 other content."""
        if self._store is None:
            from bli_memory.core.embedded.store import SQLiteStore
            from bli_memory.core.memory import embeddings

            self._store = SQLiteStore(self.path, model_name=embeddings.MODEL_NAME,
                                      dimensions=embeddings.DIMENSIONS)
        labels = {k: extra.get(k) for k in ("person", "device", "agent", "project")}
        status = self._store.experience.add_experience({**payload, **labels})
        return {"created": 201, "identical": 200, "conflict": 409}[status]

    def close(self) -> None:
        """Close the store, if it was opened."""
        if self._store is not None:
            self._store.close()


def choose_sink(settings: Settings) -> Sink:
    """The service when one is configured, else the embedded store.

    The service's URL and device token come from ``BLI_MEMORY_DASHBOARD_URL`` /
    ``BLI_MEMORY_DEVICE_TOKEN``, else from the paired session
    (:func:`bli_memory.core.team.client.pairing.read_session`).

    Raises:
        ServiceError: a service is configured but no device token is known (``unpaired``).
        ConfigError: the session file exists but cannot be read.
    """
    if not settings.remote:
        return LocalSink(settings.store_path)
    from bli_memory.core.team.client.pairing import read_session

    session = read_session()
    url = settings.dashboard_url or (session.dashboard_url if session else None)
    token = (settings.device_token.get_secret_value() if settings.device_token else None) or (
        session.device_token if session else None
    )
    if not url or not token:
        raise ServiceError(
            "this machine is not paired with the memory service (run `cockpit login`)",
            reason="unpaired",
        )
    return HttpSink(url, token)

