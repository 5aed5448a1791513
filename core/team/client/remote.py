"""The remote backend: the memory tool contract over the team memory service's HTTP doors.

This module is also the plugin that chooses it (:func:`memory_backend`, ``tryfirst``):
when ``BLI_MEMORY_DASHBOARD_URL`` is set or the machine is paired
(:mod:`bli_memory.core.team.client.pairing`), the MCP server, the hooks and the daemon talk to
the service instead of the embedded engine, through the same contract. The device
token comes from ``BLI_MEMORY_DEVICE_TOKEN``, else from the session file; a service
URL without a token raises :class:`ServiceError` with reason ``unpaired``.

Requests go through the one service client, :class:`~bli_memory.core.team.client.service_client.ServiceClient`
(httpx, loaded on first use; its failures map to the closed network reasons of the BLI
Memory spec, and a door's 400/404/403 keep their meaning as the embedded engine's
errors). One client per backend keeps its connection alive, so the daemon holds it warm.
Which service and token this machine uses is pairing's answer
(:func:`~bli_memory.core.team.client.pairing.remote_target`, re-exported here).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import InvalidInputError, NotFoundError, ServiceError
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.models import (
    ForgetResult,
    Memory,
    Profile,
    Recall,
    SaveResult,
    SearchResult,
    UpdateResult,
)
from bli_memory.core.team.client.documents import DocumentCalls
from bli_memory.core.team.client.pairing import UNPAIRED_MESSAGE, remote_target
from bli_memory.core.team.client.service_client import (
    BULK_TIMEOUT_S,
    CONNECT_TIMEOUT_S,
    READ_TIMEOUT_S,
    ServiceClient,
    memory_of,
    optional_memory_of,
    parsed,
    profile_of,
    search_of,
)

if TYPE_CHECKING:
    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.memory.browse import BrowseReads
    from bli_memory.core.memory.job_queue import ShipReport
    from bli_memory.core.memory.redaction import Redacted
    from bli_memory.core.settings import Settings

__all__ = [
    "BULK_TIMEOUT_S",
    "CONNECT_TIMEOUT_S",
    "READ_TIMEOUT_S",
    "UNPAIRED_MESSAGE",
    "RemoteBackend",
    "memory_backend",
    "remote_target",
]

def _masked(content: str) -> Redacted:
    """``content`` with its secrets masked, refused first when it is too long to keep
    (:func:`~bli_memory.core.memory.retrieval_writes.check_content_size`); anything but
    text is sent as given, for the service to refuse."""
    from bli_memory.core.memory.redaction import Redacted, redact
    from bli_memory.core.memory.retrieval_writes import check_content_size

    check_content_size(content)
    return redact(content) if isinstance(content, str) else Redacted(content, 0)


class RemoteBackend(DocumentCalls):
    """Memory operations against the memory service over HTTP.

    Args:
        base_url: The service's base URL (``https://memory.example.com``).
        token: The device token, sent as ``Authorization: Bearer``; never logged.
        timeout: Read timeout in seconds (connect: :data:`CONNECT_TIMEOUT_S`).
        transport: An httpx transport instead of the network (tests).

    Thread-safe: one client, one pool of kept-alive connections.
    """

    #: The stop hook spools its exchange before sending it here (core/team/client/spool.py).
    spool_captures = True

    def capture(self, text: str, *, space: str, source: str, session_id: str | None = None,
                record: bool = False) -> dict[str, Any]:
        """Spool the exchange, then ship it within the stop hook's budget
        (:func:`bli_memory.core.team.client.spool.capture`): a service away never costs the turn.

        Raises:
            ServiceError: as :func:`~bli_memory.core.team.client.spool.capture` (no room to spool and
                the service did not take it, or a refusal that does not pass by itself).
        """
        from bli_memory.core.team.client.spool import capture

        kept = capture(self, self.base_url, text, space=space, source=source, session_id=session_id,
                       record=record)
        if record:
            kept["recorded"] = kept.pop("queued")
        return kept

    def ship_spool(self) -> ShipReport | None:
        """Send what the stop hook spooled for this service
        (:func:`bli_memory.core.team.client.spool.ship_backlog`)."""
        from bli_memory.core.team.client.spool import ship_backlog

        return ship_backlog(self)

    @property
    def browse(self) -> BrowseReads:
        """Refused: the team service serves its own memory browser.

        Raises:
            ConfigError: always, naming where the browser is.
        """
        from bli_memory.core.errors import ConfigError

        raise ConfigError(f"the memory browser of the team service is at {self.base_url}/ui")

    @property
    def job_queue(self) -> None:
        """No queue here: the service drains its own."""
        return None

    def tombstones(self, space: str, *, limit: int | None = 500) -> list[str]:
        """``[]``: capture for this client runs on the service, against its own tombstones."""
        return []

    def purge_marks(self, space: str, *, limit: int | None = 500) -> list[dict[str, Any]]:
        """``[]``: as :meth:`tombstones`."""
        return []

    def __init__(self, base_url: str, *, token: str, timeout: float = READ_TIMEOUT_S,
                 transport: Any | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._service = ServiceClient(self.base_url, token=token, timeout=timeout, transport=transport)
        #: False once the service answered 404 for the recall door (a service from before it).
        self._recall_door = True

    def __repr__(self) -> str:
        return f"RemoteBackend({self.base_url!r})"

    # --- transport -------------------------------------------------------------------

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None, *,
              timeout: float | None = None) -> dict[str, Any]:
        return self._service.call(method, path, body, timeout=timeout)

    def close(self) -> None:
        """Close the kept-alive connections."""
        self._service.close()

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
        return parsed(search_of, data)

    def recall(self, query: str, *, space: str, limit: int = 10) -> Recall:
        """A prompt's search and the gate's inputs in one request (``POST /api/memory/recall``).

        A service from before that door answers 404: then the search, the term counts and
        the background are asked for apart, as that service's clients did (three requests),
        and this client asks so from then on.
        """
        from bli_memory.core.memory.recall import gather
        from bli_memory.core.memory.wire import RecallRecord

        if self._recall_door:
            try:
                data = self._call("POST", "/api/memory/recall",
                                  {"q": query, "containerTag": space, "limit": limit})
            except NotFoundError:
                self._recall_door = False
            else:
                return parsed(lambda d: RecallRecord.model_validate(d).recall(), data)
        return gather(self, query, space=space, limit=limit)

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
        """Remember ``content`` on the service (``POST /api/memory/save``).

        Secrets are masked here, before the text leaves the machine (the size checked
        first: masking reads the whole text); the service's store masks again, as it does
        for any client. ``masked`` counts both.
        """
        clean = _masked(content)
        body: dict[str, Any] = {"content": clean.text, "containerTag": space, "source": source}
        for key, value in (("customId", custom_id), ("metadata", metadata), ("sessionId", session_id),
                           ("expiresAt", expires_at)):
            if value is not None:
                body[key] = value
        data = self._call("POST", "/api/memory/save", body)
        return parsed(lambda d: SaveResult(
            memory=optional_memory_of(d.get("memory")), space=str(d["containerTag"]), status=d["status"],
            previous=optional_memory_of(d.get("previous")), job_id=d.get("jobId"),
            masked=clean.masked + int(d.get("masked") or 0)), data)

    def update(
        self, content: str, *, space: str, id: str | None = None, custom_id: str | None = None,
        source: str | None = None,
    ) -> UpdateResult:
        """Replace a live memory on the service (``POST /api/memory/update``); secrets are
        masked before the text leaves the machine, as for :meth:`save`."""
        if (id is None) == (custom_id is None):
            raise InvalidInputError("give exactly one of id or customId")
        clean = _masked(content)
        body: dict[str, Any] = {"content": clean.text, "containerTag": space, "source": source}
        body.update({"id": id} if id is not None else {"customId": custom_id})
        data = self._call("POST", "/api/memory/update", body)
        return parsed(lambda d: UpdateResult(
            memory=memory_of(d["memory"]), previous=memory_of(d["previous"]),
            masked=clean.masked + int(d.get("masked", 0)),
            status=d.get("status", "updated"), named=optional_memory_of(d.get("named"))), data)

    def forget(self, *, space: str, id: str | None = None, content: str | None = None,
               query: str | None = None) -> ForgetResult:
        """Tombstone a memory on the service (``POST /api/memory/forget``); exact text is
        sent masked, as it was saved."""
        body: dict[str, Any] = {"containerTag": space}
        text = _masked(content).text if isinstance(content, str) and content.strip() else content
        for key, value in (("id", id), ("content", text), ("query", query)):
            if value is not None:
                body[key] = value
        data = self._call("POST", "/api/memory/forget", body)
        return parsed(lambda d: ForgetResult(
            memory=memory_of(d["memory"]), matched_by=d["matchedBy"],
            similarity=float(d["similarity"]) if d.get("similarity") is not None else None,
            named=optional_memory_of(d.get("named"))), data)

    def profile(self, *, space: str, limit: int = 10) -> Profile:
        """Profile and recent context (``POST /api/memory/v4/profile``)."""
        data = self._call("POST", "/api/memory/v4/profile", {"containerTag": space, "limit": limit})
        return parsed(profile_of, data)

    def history(self, id: str) -> list[Memory]:
        """Every version of a memory, newest first (``POST /api/memory/history``)."""
        data = self._call("POST", "/api/memory/history", {"id": id})
        return parsed(lambda d: [memory_of(m) for m in d["versions"]], data)

    def purge(self, id: str) -> int:
        """Erase a memory and its versions (``POST /api/memory/purge``); returns rows erased."""
        data = self._call("POST", "/api/memory/purge", {"id": id})
        return parsed(lambda d: int(d["erased"]), data)

    # --- memory controls (inspection, audit, export, import) -----------------------------

    def info(self, *, space: str) -> dict[str, Any]:
        """The space, its aliases, counts by state, the store and the model (``POST /api/memory/info``).

        The shape of :meth:`EmbeddedBackend.info`; ``store`` is ``{"kind": "service",
        "url": base_url, "person", "device"}``.
        """
        data = self._call("POST", "/api/memory/info", {"containerTag": space})

        def parse(d: dict[str, Any]) -> dict[str, Any]:
            store = {**dict(d.get("store") or {}), "kind": "service", "url": self.base_url}
            return {"space": str(d["space"]), "aliases": [str(a) for a in d.get("aliases", [])],
                    "counts": {str(k): int(v) for k, v in dict(d["counts"]).items()},
                    "recordings": int(d.get("recordings", 0)), "store": store,
                    "embeddingModel": str(d["embeddingModel"]),
                    "extractJobs": {str(k): int(v) for k, v in dict(d.get("extractJobs") or {}).items()}}

        return parsed(parse, data)

    def term_frequencies(self, query: str, *, space: str) -> tuple[list[tuple[str, int]], int]:
        """Document frequency of each content term of ``query`` in the space (``POST /api/memory/terms``).

        The shape of :meth:`EmbeddedBackend.term_frequencies`: ``([(term, count), ...], live)``.
        """
        data = self._call("POST", "/api/memory/terms", {"q": query, "containerTag": space})

        def parse(d: dict[str, Any]) -> tuple[list[tuple[str, int]], int]:
            return [(str(t["term"]), int(t["count"])) for t in d["terms"]], int(d["live"])

        return parsed(parse, data)

    def space_background(self, *, space: str) -> float | None:
        """Mean cosine between two live memories of the space (``POST /api/memory/background``).

        As :meth:`EmbeddedBackend.space_background`; the service keeps it 300 s per view,
        and the prompt hook reads it with :meth:`recall`, in the same request as the search.
        """
        data = self._call("POST", "/api/memory/background", {"containerTag": space})
        return parsed(lambda d: None if d["background"] is None else float(d["background"]), data)

    def list_memories(self, *, space: str, limit: int = 20) -> list[Memory]:
        """Newest live memories of a space (``POST /api/memory/list``); ``limit`` is clamped to 1..100."""
        limit = max(1, min(int(limit), 100))
        data = self._call("POST", "/api/memory/list", {"containerTag": space, "limit": limit})
        return parsed(lambda d: [memory_of(m) for m in d["memories"]], data)

    def get_memory(self, id: str, *, include_inactive: bool = False) -> tuple[Memory, list[Memory]]:
        """One memory and its version history, newest first (``POST /api/memory/get``).

        Raises:
            NotFoundError: unknown id, one this person cannot read, or an inactive one
                without ``include_inactive``.
        """
        data = self._call("POST", "/api/memory/get", {"id": id, "includeInactive": include_inactive})
        return parsed(
            lambda d: (memory_of(d["memory"]), [memory_of(m) for m in d["history"]]), data)

    def audit(self, *, repair: bool = False) -> dict[str, Any]:
        """Audit (and with ``repair`` rebuild) this person's rows on the service (``POST /api/memory/audit``).

        Returns:
            The report of :meth:`EmbeddedBackend.audit`: ``ok``, ``counts``,
            ``missing_keyword``, ``stale_keyword``, ``missing_vector``, ``wrong_model``,
            ``repaired`` and, after a repair, ``after``.
        """
        data = self._call("POST", "/api/memory/audit", {"repair": repair}, timeout=BULK_TIMEOUT_S)

        def parse(d: dict[str, Any]) -> dict[str, Any]:
            for key in ("ok", "counts", "missing_keyword", "stale_keyword", "missing_vector", "wrong_model"):
                d[key]  # noqa: B018 -- a missing key is a bad answer
            return d

        return parsed(parse, data)

    def export(self, *, space: str | None = None) -> Iterator[dict[str, Any]]:
        """This person's rows, all versions, oldest first (``POST /api/memory/export``, page by page).

        The rows of :meth:`EmbeddedBackend.export`, so the embedded import reads them.
        Lazy: each page is asked for when the previous one is used up.

        Args:
            space: Only this space (and its aliases); None: every space of this person.
        """
        from bli_memory.core.team.client.transfer import export_pages

        return export_pages(self._call, space)

    def import_records(self, records: list[dict[str, Any]]) -> dict[str, int]:
        """Import exported rows into this person's spaces on the service (``POST /api/memory/import``).

        Every record is checked here first, as the embedded import does. A large import
        goes in parts (:func:`~bli_memory.core.team.client.transfer.import_bodies`);
        the service checks every part (``dryRun``) before the first is written, so a
        bad record anywhere means nothing is imported. A part names the ids of other
        parts its records supersede (``chainIds``), so a long version history may span
        parts. Each part is one transaction;
        if the connection fails half-way, running the import again finishes it
        (records already present are skipped).

        Returns:
            ``{"imported": n, "skipped": n, "forgotten": n, "masked": n}``: the service
            leaves out what its space forgot, and masks secrets in the records as a save
            does, and counts both.

        Raises:
            InvalidInputError: naming the first bad record (1-based) and what is wrong.
        """
        from bli_memory.core.team.client.transfer import import_bodies

        bodies = import_bodies(records)
        if len(bodies) > 1:  # every part checked before the first is written
            for body in bodies:
                self._call("POST", "/api/memory/import", {**body, "dryRun": True}, timeout=BULK_TIMEOUT_S)
        total = {"imported": 0, "skipped": 0, "forgotten": 0, "masked": 0}
        for body in bodies:
            data = self._call("POST", "/api/memory/import", body, timeout=BULK_TIMEOUT_S)
            got = parsed(lambda d: {"imported": int(d["imported"]), "skipped": int(d["skipped"]),
                                    "forgotten": int(d.get("forgotten") or 0),
                                    "masked": int(d.get("masked") or 0)}, data)
            for key in total:
                total[key] += got[key]
        return total

    def enqueue_extract(self, text: str, *, space: str, source: str, session_id: str | None = None,
                        job_id: str | None = None, timeout: float | None = None) -> str:
        """Queue text for extraction: the save door in extract mode answers 202 with the job id.

        Args:
            job_id: The caller's job id (a UUID): the service queues it once, so a retry
                after a timeout never queues the exchange twice.
            timeout: Seconds for this call instead of :data:`READ_TIMEOUT_S` (the stop
                hook's spool keeps it short).
        """
        if not text or not text.strip():
            raise InvalidInputError("nothing to extract: the text is empty")
        body: dict[str, Any] = {"content": text, "containerTag": space, "source": source, "extract": True}
        if session_id is not None:
            body["sessionId"] = session_id
        if job_id is not None:
            body["jobId"] = job_id
        data = self._call("POST", "/api/memory/save", body, timeout=timeout)
        job_id = data.get("jobId")
        if data.get("status") != "queued" or not isinstance(job_id, str):
            raise ServiceError("the memory service did not queue the extract job", reason="bad_response")
        return job_id

    def record_turn(self, text: str, *, space: str, source: str, session_id: str | None = None,
                    record_id: str | None = None, timeout: float | None = None) -> str:
        """Keep one recorded (already redacted) exchange on the service, capture-only; returns its id.

        ``POST /api/memory/record``, as :meth:`EmbeddedBackend.record_turn` writes the
        embedded store's recording table: the stop hook of a space whose sessions are
        being recorded calls this instead of :meth:`enqueue_extract`, so the turn is
        kept under this person's space and never distilled or injected. Bounded by the
        normal :data:`READ_TIMEOUT_S` (the hook's own deadline still applies).

        Args:
            record_id: The caller's id (a UUID) for the recording: the service keeps an
                id once, so the spool's retry never records a turn twice.
            timeout: Seconds for this call instead of :data:`READ_TIMEOUT_S`.

        Raises:
            InvalidInputError: the service refused the request (400).
            ServiceError: ``timeout``, ``dashboard_unreachable``, ``http_<status>``, or
                ``bad_response`` when the answer carries no recording id.
        """
        body: dict[str, Any] = {"text": text, "containerTag": space, "source": source}
        if session_id is not None:
            body["sessionId"] = session_id
        if record_id is not None:
            body["id"] = record_id
        data = self._call("POST", "/api/memory/record", body, timeout=timeout)
        rec_id = data.get("id")
        if not isinstance(rec_id, str) or not rec_id:
            raise ServiceError("the memory service did not keep the recording", reason="bad_response")
        return rec_id

    def recordings(self, *, space: str, limit: int = 20) -> list[dict[str, Any]]:
        """This person's recorded turns of a space, newest first (``POST /api/memory/recordings``)."""
        data = self._call("POST", "/api/memory/recordings",
                          {"containerTag": space, "limit": max(1, min(int(limit), 100))})
        return parsed(lambda d: [dict(r) for r in d["recordings"]], data)

    def clear_recordings(self, *, space: str) -> int:
        """Erase this person's recorded turns of a space (``POST /api/memory/recordings/clear``)."""
        data = self._call("POST", "/api/memory/recordings/clear", {"containerTag": space})
        return parsed(lambda d: int(d["cleared"]), data)

    def record_experience(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Ship one experience opinion (``POST /api/memory/experience``).

        Returns:
            The stored opinion with ``status`` ``created`` or ``identical``.

        Raises:
            ServiceError: ``http_409`` when the id exists with other content.
        """
        return self._call("POST", "/api/memory/experience", entry)

    @property
    def store_path(self) -> None:
        """No local file: the service keeps the memories (the daemon watches nothing)."""
        return None

    def forgotten_by(self, *, space: str, since: float, content: str | None = None,
                     query: str | None = None) -> ForgetResult | None:
        """``None``: the service has no door for it, so the caller runs the forget (no relay
        serves this backend; :meth:`~bli_memory.core.memory.backend.MemoryBackend.forgotten_by`)."""
        return None


# --- choosing the backend ------------------------------------------------------------


@hookimpl(tryfirst=True)
def memory_backend(settings: Settings) -> MemoryBackend | None:
    """Offer the remote backend when a memory service is configured; else let the engine answer
    (typed as the contract, so the type checker proves the client implements it whole).

    Raises:
        ServiceError: reason ``unpaired`` (hooks report it; the server exits 1).
    """
    target = remote_target(settings)
    if target is None:
        return None
    return RemoteBackend(target[0], token=target[1])
