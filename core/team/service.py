"""The team memory service: the memory doors over HTTP, on Postgres + pgvector.

An ASGI app (Starlette; ``bli-memory-mcp service`` runs it under uvicorn). Stateless:
every request is answered from Postgres, so any number of processes can run behind
a load balancer. The doors (BLI Memory spec, hook table and "Auth"):

=============================  =====================================================
``POST /api/memory/search``    hybrid search of a space and its aliases
``POST /api/memory/save``      save; ``extract: true`` writes one durable
                               ``memory_extract_jobs`` row, answers **202 queued**
                               and distils after the response (BLI-3730)
``POST /api/memory/update``    replace a memory, keeping history
``POST /api/memory/forget``    tombstone by id, exact text or closest match
``POST /api/memory/v4/profile`` User Profile + Recent Context (session-start)
``POST /api/memory/history``   every version of a memory
``POST /api/memory/purge``     erase a memory and its versions
``POST /api/memory/info``      the space, its aliases, counts by state, the model
``POST /api/memory/terms``     document frequency of each content term of a prompt
                               in a space (the injection gate's term weights)
``POST /api/memory/list``      newest live memories of a space
``POST /api/memory/get``       one memory and its version history
``POST /api/memory/audit``     check (``repair``: rebuild) the caller's own rows'
                               tsvectors and vectors
``POST /api/memory/export``    the caller's own rows, history included, in pages
                               of at most 1,000 (``after`` cursor, ``next`` answer)
``POST /api/memory/import``    exported rows, all or nothing per request (at most
                               2,000 records, 16 MB); ids present are skipped
``POST /api/memory/record``    keep one turn of a recorded session (capture-only:
                               never searched, exported or injected);
                               201 with its id
``POST /api/memory/recordings`` the caller's recorded turns of a space, newest first
``POST /api/memory/recordings/clear`` erase the caller's recorded turns of a space
``POST /api/memory/experience`` the experience log: 201 insert, 200 identical
                               retry, 400 invalid, 409 same id other content,
                               502 failed insert
``GET /api/memory/whoami``     the person and device a token proves
``GET /healthz``, ``/readyz``  liveness; readiness (database + schema + model)
``GET /metrics``               Prometheus text format
``GET /openapi.json``          OpenAPI 3.1 description of the doors
``/ui/``                       the memory browser's pages, behind a device-token
                               sign-in (:mod:`bli_memory.core.ui.service_app`)
=============================  =====================================================

Every ``/api`` door needs ``Authorization: Bearer <device token>``; the person and
device come from the token, never from the body. Errors answer
``{"error": {"reason", "message"}}`` with a reason from a closed set and never echo
a memory, a prompt or a token. Tokens never reach a log line.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import (
    BliMemoryError,
    ConfigError,
    EmbedderError,
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from bli_memory.core.memory.redaction import redact
from bli_memory.core.models import Memory, Profile, SearchResult
from bli_memory.core.team.http import DoorError as _DoorError

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from bli_memory.core.team.pg_store import ExtractJob, PostgresBackend, Principal

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_BODY_DEPTH",
    "MAX_IMPORT_BODY_BYTES",
    "MAX_IMPORT_RECORDS",
    "ServiceState",
    "create_app",
    "openapi_document",
    "run_extract_jobs",
]

#: Largest request body accepted (a memory is at most 20,000 characters; an extract
#: text at most the stop hook's 12 KB).
MAX_BODY_BYTES = 256 * 1024
#: Largest body of ``POST /api/memory/import`` and most records in it: an exported
#: row is about 3 KB with its vector, at most ~25 KB (20,000 characters of content).
MAX_IMPORT_BODY_BYTES = 16 * 1024 * 1024
MAX_IMPORT_RECORDS = 2000
#: Deepest nesting of a request body (objects and arrays): a memory's metadata may be
#: :data:`~bli_memory.core.memory.records.MAX_METADATA_DEPTH` levels deep inside an import.
MAX_BODY_DEPTH = 128
#: How often a service process looks for extract jobs nobody is working on (left by a
#: process that stopped, or waiting for a retry).
JOB_SWEEP_SECONDS = 5.0
#: Extract jobs one process distils at the same time.
JOB_CONCURRENCY = 2

_log = logging.getLogger("bli_memory.service")

_EXPERIENCE_STORES = ("bli", "supermemory", "both")
_EXPERIENCE_VERDICTS = ("win", "loss", "noise")


# --- JSON shapes -------------------------------------------------------------------


def _memory_json(memory: Memory | None) -> dict[str, Any] | None:
    return memory.to_dict() if memory is not None else None


def _profile_json(profile: Profile) -> dict[str, Any]:
    return {
        "containerTag": profile.space,
        "facts": [m.to_dict() for m in profile.facts],
        "recent": [m.to_dict() for m in profile.recent],
    }


def _search_json(res: SearchResult) -> dict[str, Any]:
    return {
        "query": res.query,
        "containerTag": res.space,
        "searchedTags": list(res.spaces),
        "count": len(res.hits),
        "results": [
            {"memory": h.memory.to_dict(), "similarity": h.similarity, "score": h.score,
             "channels": list(h.channels)}
            for h in res.hits
        ],
        "profile": _profile_json(res.profile) if res.profile is not None else None,
        "conflicts": [c.to_dict() for c in res.conflicts],
    }


# --- request helpers -----------------------------------------------------------------


def _str(body: dict[str, Any], key: str, *, required: bool = False, alt: str | None = None) -> str | None:
    value = body.get(key)
    if value is None and alt is not None:
        value = body.get(alt)
    if value is None:
        if required:
            raise InvalidInputError(f"{key} is required")
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{key} must be a string")
    return value


def _tag(body: dict[str, Any]) -> str:
    from bli_memory.core.memory.spaces import validate_tag

    tag = _str(body, "containerTag", required=True)
    try:
        return validate_tag(tag or "")
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from exc


def _int(body: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    value = body.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InvalidInputError(f"{key} must be an integer from {lo} to {hi}")
    return value


def _bool(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise InvalidInputError(f"{key} must be true or false")
    return value


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _check_body(body: dict[str, Any]) -> None:
    """Refuse a body no door can keep: nested over :data:`MAX_BODY_DEPTH`, or text that is not Unicode.

    JSON lets a lone UTF-16 surrogate through (``"\\ud800"``); it is not text, so no
    store, log line or answer could hold it. Walked without recursion.

    Raises:
        InvalidInputError: naming the problem (never echoing the value).
    """
    stack: list[tuple[Any, int]] = [(body, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_BODY_DEPTH:
                raise InvalidInputError(f"the body is nested more than {MAX_BODY_DEPTH} levels deep")
            stack.extend((k, depth) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            if depth > MAX_BODY_DEPTH:
                raise InvalidInputError(f"the body is nested more than {MAX_BODY_DEPTH} levels deep")
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidInputError("the body holds a lone surrogate (\\uD800-\\uDFFF), "
                                        "which is not Unicode text") from None


def _error_of(exc: BaseException, door: str) -> _DoorError:
    if isinstance(exc, _DoorError):
        return exc
    if isinstance(exc, InvalidInputError | ConfigError):
        return _DoorError(400, "invalid_input", exc.message)
    if isinstance(exc, RecursionError):  # JSON nested deeper than a check below the door expected
        return _DoorError(400, "invalid_input", "the body is nested too deeply")
    if isinstance(exc, NotFoundError):
        if exc.reason == "read_only":
            return _DoorError(403, "read_only", exc.message)
        return _DoorError(404, "not_found", exc.message)
    if isinstance(exc, StoreError | EmbedderError):
        status = 502 if door == "experience" else 503
        return _DoorError(status, "store_unavailable", "the memory store could not answer; try again")
    return _DoorError(500, "internal", "the service failed to answer")


# --- state ---------------------------------------------------------------------------


class ServiceState:
    """What one service process holds: the root backend, metrics, the job worker.

    Args:
        backend: The administrative :class:`PostgresBackend` (no person); requests act
            through :meth:`PostgresBackend.for_person`.
        run_jobs: Distil extract jobs in this process (after each 202, and every
            :data:`JOB_SWEEP_SECONDS`).
    """

    def __init__(self, backend: PostgresBackend, *, run_jobs: bool = True) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.backend = backend
        self.run_jobs = run_jobs
        self.model_ready = False
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"
        self._job_slots = threading.BoundedSemaphore(JOB_CONCURRENCY)
        self._extract_missing_logged = False
        self.registry = CollectorRegistry()
        self.requests = Counter("bli_memory_requests", "Requests answered, by door and status.",
                                ["door", "status"], registry=self.registry)
        self.latency = Histogram(
            "bli_memory_request_seconds", "Time to answer a door, in seconds.", ["door"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0), registry=self.registry,
        )
        self.auth_failures = Counter("bli_memory_auth_failures",
                                     "Requests refused for a missing or bad token.", registry=self.registry)
        self.jobs = Counter("bli_memory_extract_jobs", "Extract job attempts finished, by outcome.",
                            ["outcome"], registry=self.registry)
        self.queue = Gauge("bli_memory_extract_queue", "Extract jobs by state (read at scrape time).",
                           ["state"], registry=self.registry)

    # --- extract jobs --------------------------------------------------------------

    def run_pending_jobs(self, max_jobs: int = 20) -> int:
        """Claim and distil ready jobs until none is left or ``max_jobs`` ran.

        At most :data:`JOB_CONCURRENCY` threads of a process do this at once; a caller
        that finds no free slot returns 0 at once (the sweep comes back).

        Returns:
            Jobs finished (done or failed) by this call.
        """
        if not self.run_jobs or not self._job_slots.acquire(blocking=False):
            return 0
        try:
            return run_extract_jobs(self.backend, worker=self.worker_id, max_jobs=max_jobs, state=self)
        finally:
            self._job_slots.release()


def _load_distil() -> Callable[..., dict[str, Any]] | None:
    try:
        from bli_memory.core.extraction.reconcile import distil
    except ImportError:
        return None
    return distil  # type: ignore[no-any-return]


def run_extract_jobs(
    backend: PostgresBackend, *, worker: str, max_jobs: int = 20, state: ServiceState | None = None
) -> int:
    """Claim ready extract jobs (``FOR UPDATE SKIP LOCKED``) and distil each one.

    Each job runs :func:`bli_memory.core.extraction.reconcile.distil` with the backend acting
    as the job's owner, in the job's canonical space. The outcome lands on the job
    row and in one stderr line, ``[bli-memory] extract job done {...}`` (BLI Memory
    spec). When ``distil`` is not installed the job is put back untouched.

    Args:
        backend: The administrative backend.
        worker: This worker's name (recorded as ``claimed_by``).
        max_jobs: Stop after this many jobs.
        state: For metrics, when run inside the service.

    Returns:
        Jobs finished (done or failed).
    """
    distil = _load_distil()
    finished = 0
    while finished < max_jobs:
        job: ExtractJob | None = backend.claim_job(worker)
        if job is None:
            break
        if distil is None:
            backend.release_job(job)
            if state is not None and not state._extract_missing_logged:
                state._extract_missing_logged = True
                _log.warning("extract jobs wait: bli_memory.core.extraction.reconcile is not available")
            break
        started = time.monotonic()
        try:
            outcome = distil(
                job.text, backend=backend.for_person(job.owner_id, device_id=job.device_id),
                space=job.space, source=job.source, session_id=job.session_id,
            )
        except BliMemoryError as exc:
            new_state = backend.fail_job(job, f"{type(exc).__name__}: {exc.reason}",
                                         retry=isinstance(exc, StoreError | EmbedderError))
            if state is not None:
                state.jobs.labels(outcome=new_state).inc()
            _log.warning("extract job %s: %s (%s)", job.id, new_state, exc.reason)
            finished += new_state == "failed"
            continue
        except Exception as exc:  # an extractor bug must not kill the worker
            new_state = backend.fail_job(job, type(exc).__name__)
            if state is not None:
                state.jobs.labels(outcome=new_state).inc()
            _log.warning("extract job %s: %s (%s)", job.id, new_state, type(exc).__name__)
            finished += new_state == "failed"
            continue
        record = {k: v for k, v in dict(outcome or {}).items() if isinstance(v, int | float | str | bool)}
        record.setdefault("elapsed_ms", int((time.monotonic() - started) * 1000))
        backend.finish_job(job.id, record)
        if state is not None:
            state.jobs.labels(outcome="done").inc()
        summary = {k: record[k] for k in ("added", "updated", "unchanged", "conflicted", "extract_ms",
                                          "reconcile_ms", "elapsed_ms") if k in record}
        sys.stderr.write(f"[bli-memory] extract job done {json.dumps(summary, separators=(',', ':'))}\n")
        finished += 1
    return finished


# --- the app -------------------------------------------------------------------------


def create_app(
    *,
    database_url: str | None = None,
    backend: PostgresBackend | None = None,
    run_jobs: bool = True,
    warm_model: bool = True,
    body_timeout: float | None = None,
) -> Starlette:
    """Build the ASGI app.

    Args:
        database_url: Postgres URL; the lifespan opens (and migrates) the database.
        backend: An open administrative backend instead (tests); not closed on exit.
        run_jobs: Distil extract jobs in this process.
        warm_model: Load the embedding model at startup (readiness waits for it).
        body_timeout: Seconds a request body may take to arrive, for every door
            (default :data:`~bli_memory.core.team.http.BODY_TIMEOUT_SECONDS`, and
            :data:`~bli_memory.core.team.http.BULK_BODY_TIMEOUT_SECONDS` for import).

    Returns:
        A Starlette app; its ``state.service`` is the :class:`ServiceState` once started.

    Raises:
        ConfigError: neither ``database_url`` nor ``backend`` was given.
    """
    import anyio
    from starlette.applications import Starlette
    from starlette.background import BackgroundTask
    from starlette.exceptions import HTTPException
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Mount, Route

    from bli_memory.core.team.http import (
        BODY_TIMEOUT_SECONDS,
        BULK_BODY_TIMEOUT_SECONDS,
        check_headers,
        error_payload,
        read_body,
    )
    from bli_memory.core.ui.service_app import MOUNT as UI_MOUNT
    from bli_memory.core.ui.service_app import build_service_app

    if database_url is None and backend is None:
        raise ConfigError("the service needs --database-url", reason="config_invalid")

    holder: dict[str, ServiceState] = {}

    def state() -> ServiceState:
        return holder["state"]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        from bli_memory.core.team.pg_store import PostgresBackend

        own = backend is None
        root = backend or await anyio.to_thread.run_sync(lambda: PostgresBackend(database_url or ""))
        st = ServiceState(root, run_jobs=run_jobs)
        holder["state"] = st
        app.state.service = st

        def warm() -> None:
            try:
                if warm_model:
                    root.warm_up()
                st.model_ready = True
            except Exception as exc:
                _log.error("embedding model failed to load: %s", type(exc).__name__)

        threading.Thread(target=warm, name="warm-up", daemon=True).start()
        stop = anyio.Event()

        async def sweep() -> None:
            while not stop.is_set():
                with anyio.move_on_after(JOB_SWEEP_SECONDS):
                    await stop.wait()
                if stop.is_set():
                    break
                try:
                    await anyio.to_thread.run_sync(st.run_pending_jobs)
                except Exception as exc:
                    _log.warning("extract job sweep failed: %s", type(exc).__name__)

        async with anyio.create_task_group() as tg:
            if run_jobs:
                tg.start_soon(sweep)
            try:
                yield
            finally:
                stop.set()
                tg.cancel_scope.cancel()
        if own:
            root.close()

    Handler = Callable[["Request", "Principal", dict[str, Any]], Any]

    def body_timeout_of(max_body: int) -> float:
        if body_timeout is not None:
            return body_timeout
        return BULK_BODY_TIMEOUT_SECONDS if max_body > MAX_BODY_BYTES else BODY_TIMEOUT_SECONDS

    def door(
        name: str, handler: Handler, *, method: str = "POST", max_body: int = MAX_BODY_BYTES
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            st = state()
            started = time.monotonic()
            status = 500
            who = {"person": "-"}
            try:
                token = _bearer(request)
                if token is None:
                    st.auth_failures.inc()
                    raise _DoorError(401, "unauthorized",
                                     "send a device token: Authorization: Bearer <token>")
                if method == "POST":  # headers first: nothing of a refused body is read
                    check_headers(request, max_body=max_body)

                def who_is(tok: str) -> Principal:
                    principal = st.backend.authenticate(tok)
                    if principal is None:
                        st.auth_failures.inc()
                        raise _DoorError(401, "unauthorized", "this device token is unknown or revoked")
                    who["person"] = principal.person
                    return principal

                principal = await anyio.to_thread.run_sync(who_is, token)
                raw = b""
                if method == "POST":
                    raw = await read_body(request, max_body=max_body, timeout=body_timeout_of(max_body))

                def work() -> Any:
                    body: dict[str, Any] = {}
                    if method == "POST":
                        try:
                            body = json.loads(raw or b"{}")
                        except ValueError as exc:
                            raise InvalidInputError("the body is not JSON") from exc
                        except RecursionError as exc:
                            raise InvalidInputError(
                                f"the body is nested more than {MAX_BODY_DEPTH} levels deep") from exc
                        if not isinstance(body, dict):
                            raise InvalidInputError("the body must be a JSON object")
                        _check_body(body)
                    return handler(request, principal, body)

                result = await anyio.to_thread.run_sync(work)
                status, payload = result[0], result[1]
                background = None
                if len(result) > 2 and result[2] is not None:
                    background = BackgroundTask(result[2])
                return JSONResponse(payload, status_code=status, background=background)
            except Exception as exc:
                err = _error_of(exc, name)
                status = err.status
                if status >= 500:
                    _log.error("door %s failed: %s", name, type(exc).__name__)
                return JSONResponse(error_payload(err.reason, err.message), status_code=status,
                                    headers=err.headers or None)
            finally:
                elapsed = time.monotonic() - started
                st.requests.labels(door=name, status=str(status)).inc()
                st.latency.labels(door=name).observe(elapsed)
                _log.info("door %s -> %s in %d ms (person %s)", name, status, int(elapsed * 1000),
                          who["person"])

        return endpoint

    def acting(principal: Principal) -> PostgresBackend:
        return state().backend.for_person(principal.person_id, device_id=principal.device_id)

    def search(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        query = _str(body, "q", alt="query") or ""
        res = acting(p).search(query, space=_tag(body), limit=_int(body, "limit", 10, 1, 100),
                               include_profile=_bool(body, "includeProfile"))
        return 200, _search_json(res)

    def save(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any, Any]:
        be = acting(p)
        # Everyone who can see the space reads what is saved: secrets are masked first.
        clean = redact(_str(body, "content", required=True) or "")
        content = clean.text
        tag = _tag(body)
        source = _str(body, "source") or "api"
        session_id = _str(body, "sessionId")
        if _bool(body, "extract"):
            job_id = be.enqueue_extract(content, space=tag, source=source, session_id=session_id,
                                        job_id=body.get("jobId"))
            canonical, _ = be.resolve_space(tag)
            return 202, {"status": "queued", "jobId": job_id, "containerTag": canonical,
                         "memory": None, "previous": None, "masked": clean.masked}, state().run_pending_jobs
        metadata = body.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidInputError("metadata must be a JSON object")
        res = be.save(content, space=tag, custom_id=_str(body, "customId"), metadata=metadata, source=source,
                      session_id=session_id, expires_at=_str(body, "expiresAt"))
        payload = {"status": res.status, "containerTag": res.space, "memory": _memory_json(res.memory),
                   "previous": _memory_json(res.previous), "jobId": None, "masked": clean.masked}
        return (200 if res.status == "duplicate" else 201), payload, None

    def update(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        clean = redact(_str(body, "content", required=True) or "")
        res = acting(p).update(clean.text, space=_tag(body),
                               id=_str(body, "id"), custom_id=_str(body, "customId"))
        return 200, {"status": res.status, "memory": res.memory.to_dict(), "previous": res.previous.to_dict(),
                     "named": _memory_json(res.named), "masked": clean.masked}

    def forget(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        res = acting(p).forget(space=_tag(body), id=_str(body, "id"), content=_str(body, "content"),
                               query=_str(body, "query"))
        return 200, {"matchedBy": res.matched_by, "similarity": res.similarity,
                     "memory": res.memory.to_dict(), "named": _memory_json(res.named)}

    def profile(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        res = acting(p).profile(space=_tag(body), limit=_int(body, "limit", 10, 1, 100))
        return 200, _profile_json(res)

    def history(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        versions = acting(p).history(_str(body, "id", required=True) or "")
        return 200, {"versions": [m.to_dict() for m in versions]}

    def purge(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"erased": acting(p).purge(_str(body, "id", required=True) or "")}

    def info(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        answer = acting(p).info(space=_tag(body))
        answer["store"] = {"kind": "service", "person": p.person, "device": p.device}
        return 200, answer

    def terms(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        counts, size = acting(p).term_frequencies(_str(body, "q", alt="query") or "", space=_tag(body))
        return 200, {"terms": [{"term": t, "count": c} for t, c in counts], "live": size}

    def list_(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        tag = _tag(body)
        rows = acting(p).list_memories(space=tag, limit=_int(body, "limit", 20, 1, 100))
        return 200, {"containerTag": tag, "memories": [m.to_dict() for m in rows]}

    def get(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        memory, versions = acting(p).get_memory(_str(body, "id", required=True) or "",
                                                include_inactive=_bool(body, "includeInactive"))
        return 200, {"memory": memory.to_dict(), "history": [m.to_dict() for m in versions]}

    def audit(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        return 200, acting(p).audit(repair=_bool(body, "repair"))

    def export(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        from bli_memory.core.team.pg_store import EXPORT_PAGE, EXPORT_PAGE_MAX

        tag = _tag(body) if body.get("containerTag") is not None else None
        after = _str(body, "after") or "0"
        if not after.isdigit() or len(after) > 19:
            raise InvalidInputError("after must be the next cursor of the previous page")
        records, following = acting(p).export_page(
            space=tag, after=int(after), limit=_int(body, "limit", EXPORT_PAGE, 1, EXPORT_PAGE_MAX))
        return 200, {"records": records, "next": str(following) if following is not None else None}

    def import_(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        records = body.get("records")
        if not isinstance(records, list) or len(records) > MAX_IMPORT_RECORDS:
            raise InvalidInputError(f"records must be a list of at most {MAX_IMPORT_RECORDS} exported rows")
        chain_ids = body.get("chainIds") or []
        if not isinstance(chain_ids, list) or len(chain_ids) > MAX_IMPORT_RECORDS or not all(
            isinstance(c, str) for c in chain_ids
        ):
            raise InvalidInputError(f"chainIds must be a list of at most {MAX_IMPORT_RECORDS} ids")
        res = acting(p).import_records(records, dry_run=_bool(body, "dryRun"),
                                       offset=_int(body, "offset", 0, 0, 10**9), chain_ids=chain_ids)
        return 200, {**res, "dryRun": _bool(body, "dryRun")}

    def record(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        be = acting(p)
        tag = _tag(body)
        rec_id = be.record_turn(_str(body, "text", required=True) or "", space=tag,
                                source=_str(body, "source") or "api", session_id=_str(body, "sessionId"))
        canonical, _ = be.resolve_space(tag)
        return 201, {"id": rec_id, "containerTag": canonical}

    def recordings(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        rows = acting(p).recordings(space=_tag(body), limit=_int(body, "limit", 20, 1, 100))
        return 200, {"recordings": rows, "count": len(rows)}

    def clear_recordings(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"cleared": acting(p).clear_recordings(space=_tag(body))}

    def whoami(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"person": p.person, "device": p.device, "deviceId": p.device_id}

    def experience(_: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
        entry = _experience_entry(body)
        status, stored = acting(p).record_experience(entry)
        if status == "conflict":
            raise _DoorError(409, "conflict", "an opinion with this id exists with other content")
        return (201 if status == "created" else 200), {**stored, "status": status}

    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> Response:
        st = state()
        db = await anyio.to_thread.run_sync(st.backend.ready)
        ok = db and st.model_ready
        body = {"status": "ready" if ok else "not_ready", "database": db, "model": st.model_ready}
        return JSONResponse(body, status_code=200 if ok else 503)

    async def metrics(_: Request) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        st = state()
        try:
            counts = await anyio.to_thread.run_sync(st.backend.job_counts)
            for job_state in ("queued", "running", "done", "failed"):
                st.queue.labels(state=job_state).set(counts.get(job_state, 0))
        except StoreError:
            pass
        return PlainTextResponse(generate_latest(st.registry).decode("utf-8"),
                                 headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def openapi(_: Request) -> Response:
        return JSONResponse(openapi_document())

    routes = [
        Route("/api/memory/search", door("search", search), methods=["POST"]),
        Route("/api/memory/save", door("save", save), methods=["POST"]),
        Route("/api/memory/update", door("update", update), methods=["POST"]),
        Route("/api/memory/forget", door("forget", forget), methods=["POST"]),
        Route("/api/memory/v4/profile", door("profile", profile), methods=["POST"]),
        Route("/api/memory/history", door("history", history), methods=["POST"]),
        Route("/api/memory/purge", door("purge", purge), methods=["POST"]),
        Route("/api/memory/info", door("info", info), methods=["POST"]),
        Route("/api/memory/terms", door("terms", terms), methods=["POST"]),
        Route("/api/memory/list", door("list", list_), methods=["POST"]),
        Route("/api/memory/get", door("get", get), methods=["POST"]),
        Route("/api/memory/audit", door("audit", audit), methods=["POST"]),
        Route("/api/memory/export", door("export", export), methods=["POST"]),
        Route("/api/memory/import", door("import", import_, max_body=MAX_IMPORT_BODY_BYTES),
              methods=["POST"]),
        Route("/api/memory/record", door("record", record), methods=["POST"]),
        Route("/api/memory/recordings", door("recordings", recordings), methods=["POST"]),
        Route("/api/memory/recordings/clear", door("clear_recordings", clear_recordings), methods=["POST"]),
        Route("/api/memory/experience", door("experience", experience), methods=["POST"]),
        Route("/api/memory/whoami", door("whoami", whoami, method="GET"), methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        # The memory browser's pages, behind their own sign-in (docs/ui.md, core/ui/service_app.py).
        Mount(UI_MOUNT, app=build_service_app(lambda: state().backend)),
    ]
    async def no_door(request: Request, exc: Exception) -> Response:
        # Starlette's own 404 and 405 answer plain text; every answer here is the
        # documented error object, and never echoes the path it was asked for.
        code = exc.status_code if isinstance(exc, HTTPException) else 500
        if code == 405:
            reason, message = "method_not_allowed", "this door does not take that method; see /openapi.json"
        elif code == 404:
            reason, message = "not_found", "there is no such door; see /openapi.json"
        else:
            reason, message = "invalid_input", "the request could not be read"
        headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else None
        return JSONResponse(error_payload(reason, message), status_code=code, headers=headers)

    return Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: no_door})


def _experience_entry(body: dict[str, Any]) -> dict[str, Any]:
    """Validate an experience opinion (BLI Memory spec, "Live A/B: agent experience").

    Raises:
        InvalidInputError: unknown store or verdict, a reason that is empty, longer than
            500 characters or more than one line, a bad id or time.
    """
    raw_id = body.get("id")
    if raw_id is None:
        entry_id = str(uuid.uuid4())
    else:
        try:
            entry_id = str(uuid.UUID(str(raw_id)))
        except ValueError as exc:
            raise InvalidInputError("id must be a UUID") from exc
    store, verdict, reason = body.get("store"), body.get("verdict"), body.get("reason")
    if store not in _EXPERIENCE_STORES:
        raise InvalidInputError(f"store must be one of {', '.join(_EXPERIENCE_STORES)}")
    if verdict not in _EXPERIENCE_VERDICTS:
        raise InvalidInputError(f"verdict must be one of {', '.join(_EXPERIENCE_VERDICTS)}")
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInputError("reason is required")
    reason = reason.strip()
    if len(reason) > 500 or "\n" in reason or "\r" in reason:
        raise InvalidInputError("reason must be one line of at most 500 characters")
    created = body.get("created_at", body.get("createdAt"))
    if created is None:
        created_at = datetime.now(UTC)
    else:
        try:
            created_at = datetime.fromisoformat(str(created))
        except ValueError as exc:
            raise InvalidInputError("created_at must be an ISO 8601 time") from exc
        if created_at.tzinfo is None:
            created_at = created_at.replace(tzinfo=UTC)
    return {"id": entry_id, "store": store, "verdict": verdict, "reason": reason, "created_at": created_at}


# --- OpenAPI -------------------------------------------------------------------------


def _obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    return out


_S = {"type": "string"}
_TAG = {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,128}$", "description": "Container tag of the space."}


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the doors (served at ``/openapi.json``)."""
    from bli_memory.core._version import VERSION

    memory = _obj({
        "id": _S, "space": _S, "content": _S, "customId": {"type": ["string", "null"]},
        "metadata": {"type": "object"}, "source": _S, "sessionId": {"type": ["string", "null"]},
        "createdAt": _S, "updatedAt": _S, "version": {"type": "integer"},
        "supersedes": {"type": ["string", "null"]},
        "state": {"enum": ["active", "superseded", "forgotten"]},
        "forgottenAt": {"type": ["string", "null"]}, "expiresAt": {"type": ["string", "null"]},
    })
    ref = {"$ref": "#/components/schemas/Memory"}
    nullable_ref = {"oneOf": [ref, {"type": "null"}]}
    profile = _obj({"containerTag": _S, "facts": {"type": "array", "items": ref},
                    "recent": {"type": "array", "items": ref}})
    error = _obj({"error": _obj({"reason": _S, "message": _S}, ("reason", "message"))}, ("error",))

    def answer(schema: dict[str, Any], text: str) -> dict[str, Any]:
        return {"description": text, "content": {"application/json": {"schema": schema}}}

    err = answer({"$ref": "#/components/schemas/Error"}, "Error with a closed-set reason.")
    common = {"400": err, "401": err, "408": err, "413": err, "415": err, "503": err}

    def post(summary: str, request: dict[str, Any], responses: dict[str, Any]) -> dict[str, Any]:
        return {"post": {
            "summary": summary, "security": [{"deviceToken": []}],
            "requestBody": {"required": True, "content": {"application/json": {"schema": request}}},
            "responses": {**responses, **common},
        }}

    save_answer = _obj({"status": {"enum": ["created", "duplicate", "updated", "queued"]},
                        "containerTag": _S, "memory": nullable_ref, "previous": nullable_ref,
                        "jobId": {"type": ["string", "null"]}, "masked": {"type": "integer"}})
    experience = _obj({"id": _S, "store": {"enum": list(_EXPERIENCE_STORES)},
                       "verdict": {"enum": list(_EXPERIENCE_VERDICTS)}, "reason": _S, "createdAt": _S,
                       "status": {"enum": ["created", "identical"]}})
    plain = {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}
    counts = {"type": "object", "additionalProperties": {"type": "integer"}}
    checks = {k: {"type": "integer"} for k in ("missing_keyword", "stale_keyword", "missing_vector",
                                                "wrong_model")}
    audit = _obj({"ok": {"type": "boolean"}, "counts": counts, **checks, "repaired": {"type": "boolean"},
                  "after": _obj({"ok": {"type": "boolean"}, **checks})},
                 ("ok", "counts", *checks, "repaired"))
    record = {"allOf": [ref, _obj({
        "embedding": {"type": ["string", "null"], "description": "base64 of little-endian float32"},
        "embeddingModel": {"type": ["string", "null"]}})]}
    return {
        "openapi": "3.1.0",
        "info": {"title": "BLI Memory service", "version": VERSION,
                 "description": "The memory doors: search, save, update, forget, profile, the "
                                "memory controls (info, list, get, audit, export, import), session "
                                "recording and the experience log, for the agents of a team."},
        "components": {
            "securitySchemes": {"deviceToken": {"type": "http", "scheme": "bearer",
                                                "description": "A token from `service token create`."}},
            "schemas": {"Memory": memory, "Profile": profile, "Error": error},
        },
        "paths": {
            "/api/memory/search": post(
                "Search a space (and its aliases) by meaning, keyword and recency.",
                _obj({"q": _S, "containerTag": _TAG,
                      "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                      "includeProfile": {"type": "boolean"}}, ("containerTag",)),
                {"200": answer(_obj({
                    "query": _S, "containerTag": _S, "searchedTags": {"type": "array", "items": _S},
                    "count": {"type": "integer"},
                    "results": {"type": "array", "items": _obj({
                        "memory": ref, "similarity": {"type": ["number", "null"]},
                        "score": {"type": "number"},
                        "channels": {"type": "array", "items": _S}})},
                    "profile": {"oneOf": [{"$ref": "#/components/schemas/Profile"}, {"type": "null"}]},
                }), "Hits, best first; zero hits is a normal answer.")},
            ),
            "/api/memory/save": post(
                "Remember content; customId upserts; extract queues a distillation job.",
                _obj({"content": _S, "containerTag": _TAG, "customId": _S, "metadata": {"type": "object"},
                      "source": _S, "sessionId": _S, "expiresAt": _S, "extract": {"type": "boolean"},
                      "jobId": {"type": "string", "format": "uuid",
                                "description": "Extract mode: the client's job id; a retry is queued once."}},
                     ("content", "containerTag")),
                {"201": answer(save_answer, "Saved (created or updated)."),
                 "200": answer(save_answer, "Identical content was already remembered."),
                 "202": answer(save_answer,
                               "Extract mode: one durable job queued; distilled after the response.")},
            ),
            "/api/memory/update": post(
                "Replace a memory's content, keeping the old version as history.",
                _obj({"content": _S, "containerTag": _TAG, "id": _S, "customId": _S},
                     ("content", "containerTag")),
                {"200": answer(_obj({"status": {"enum": ["updated", "unchanged"]}, "memory": ref,
                                     "previous": ref, "named": nullable_ref,
                                     "masked": {"type": "integer"}}),
                               "The new version and the one it replaced; `named` is the older "
                               "version `id` named, when it named one."),
                 "403": err, "404": err},
            ),
            "/api/memory/forget": post(
                "Tombstone a memory by id, exact text or closest match (cosine >= 0.85).",
                _obj({"containerTag": _TAG, "id": _S, "content": _S, "query": _S}, ("containerTag",)),
                {"200": answer(_obj({"matchedBy": {"enum": ["id", "content", "query"]},
                                     "similarity": {"type": ["number", "null"]}, "memory": ref,
                                     "named": nullable_ref}),
                               "The tombstoned (live) version; `named` is the older version `id` "
                               "named, when it named one."),
                 "403": err, "404": err},
            ),
            "/api/memory/v4/profile": post(
                "User Profile and Recent Context of a space (session-start).",
                _obj({"containerTag": _TAG, "limit": {"type": "integer", "minimum": 1, "maximum": 100}},
                     ("containerTag",)),
                {"200": answer({"$ref": "#/components/schemas/Profile"}, "The profile.")},
            ),
            "/api/memory/history": post(
                "Every version of a memory, newest first.",
                _obj({"id": _S}, ("id",)),
                {"200": answer(_obj({"versions": {"type": "array", "items": ref}}), "The versions."),
                 "404": err},
            ),
            "/api/memory/purge": post(
                "Erase a memory and all its versions (secrets saved by mistake).",
                _obj({"id": _S}, ("id",)),
                {"200": answer(_obj({"erased": {"type": "integer"}}), "Rows erased."),
                 "403": err, "404": err},
            ),
            "/api/memory/info": post(
                "The space, its aliases, counts by state, the store and the embedding model.",
                _obj({"containerTag": _TAG}, ("containerTag",)),
                {"200": answer(_obj({
                    "space": _S, "aliases": {"type": "array", "items": _S}, "counts": counts,
                    "recordings": {"type": "integer"}, "store": {"type": "object"}, "embeddingModel": _S,
                    "extractJobs": counts}), "What the caller sees of the space.")},
            ),
            "/api/memory/terms": post(
                "In how many live memories of the space each content term of q occurs.",
                _obj({"q": _S, "containerTag": _TAG}, ("containerTag",)),
                {"200": answer(_obj({"terms": {"type": "array", "items": _obj(
                    {"term": _S, "count": {"type": "integer"}})}, "live": {"type": "integer"}}),
                    "Document frequency per term, and the live memories of the space.")},
            ),
            "/api/memory/list": post(
                "The newest live memories of a space.",
                _obj({"containerTag": _TAG, "limit": {"type": "integer", "minimum": 1, "maximum": 100}},
                     ("containerTag",)),
                {"200": answer(_obj({"containerTag": _S, "memories": {"type": "array", "items": ref}}),
                               "Newest first.")},
            ),
            "/api/memory/get": post(
                "One memory with its version history (newest first).",
                _obj({"id": _S, "includeInactive": {"type": "boolean"}}, ("id",)),
                {"200": answer(_obj({"memory": ref, "history": {"type": "array", "items": ref}}),
                               "The memory and its other versions."),
                 "404": err},
            ),
            "/api/memory/audit": post(
                "Check the caller's own rows (tsvector, vector of the model); repair rebuilds them.",
                _obj({"repair": {"type": "boolean"}}),
                {"200": answer(audit, "The audit report (and the report after a repair).")},
            ),
            "/api/memory/export": post(
                "The caller's own rows, every state, oldest first, one page at a time.",
                _obj({"containerTag": _TAG, "after": {"type": "string", "description": "`next` of the "
                                                                                      "previous page."},
                      "limit": {"type": "integer", "minimum": 1, "maximum": 1000}}),
                {"200": answer(_obj({"records": {"type": "array", "items": record},
                                     "next": {"type": ["string", "null"]}}),
                               "One page; `next` is null on the last.")},
            ),
            "/api/memory/import": post(
                "Import exported rows as the caller's; all or nothing; ids present are skipped.",
                _obj({"records": {"type": "array", "maxItems": MAX_IMPORT_RECORDS, "items": record},
                      "dryRun": {"type": "boolean"}, "offset": {"type": "integer", "minimum": 0},
                      "chainIds": {"type": "array", "maxItems": MAX_IMPORT_RECORDS, "items": _S,
                                   "description": "Ids of records of the same import sent in other "
                                                  "parts, which records here may supersede."}},
                     ("records",)),
                {"200": answer(_obj({"imported": {"type": "integer"}, "skipped": {"type": "integer"},
                                     "dryRun": {"type": "boolean"}}), "What was (or would be) imported."),
                 "413": err},
            ),
            "/api/memory/record": post(
                "Keep one turn of a recorded session, capture-only (never searched or injected).",
                _obj({"text": _S, "containerTag": _TAG, "source": _S, "sessionId": _S},
                     ("text", "containerTag")),
                {"201": answer(_obj({"id": _S, "containerTag": _S}, ("id", "containerTag")),
                               "Recorded; `info` counts it under `recordings`.")},
            ),
            "/api/memory/recordings": post(
                "The caller's recorded turns of a space, newest first.",
                _obj({"containerTag": _TAG, "limit": {"type": "integer", "minimum": 1, "maximum": 100}},
                     ("containerTag",)),
                {"200": answer(_obj({"recordings": {"type": "array", "items": _obj({
                    "id": _S, "space": _S, "sessionId": {"type": ["string", "null"]}, "source": _S,
                    "createdAt": _S, "text": _S})}, "count": {"type": "integer"}}), "The recordings.")},
            ),
            "/api/memory/recordings/clear": post(
                "Erase the caller's recorded turns of a space.",
                _obj({"containerTag": _TAG}, ("containerTag",)),
                {"200": answer(_obj({"cleared": {"type": "integer"}}), "How many were erased.")},
            ),
            "/api/memory/experience": post(
                "Record one agent-experience opinion; a retry under the same id is idempotent.",
                _obj({"id": {"type": "string", "format": "uuid"}, "store": {"enum": list(_EXPERIENCE_STORES)},
                      "verdict": {"enum": list(_EXPERIENCE_VERDICTS)},
                      "reason": {"type": "string", "maxLength": 500}, "created_at": _S},
                     ("store", "verdict", "reason")),
                {"201": answer(experience, "Inserted."), "200": answer(experience, "Identical retry."),
                 "409": err, "502": err},
            ),
            "/api/memory/whoami": {"get": {
                "summary": "The person and device a token proves (used by `cockpit login`).",
                "security": [{"deviceToken": []}],
                "responses": {"200": answer(_obj({"person": _S, "device": _S, "deviceId": _S}), "Who."),
                              "401": err},
            }},
            "/healthz": {"get": {"summary": "Liveness.", "responses": {"200": plain}}},
            "/readyz": {"get": {"summary": "Readiness: database, schema and model.",
                                "responses": {"200": plain, "503": plain}}},
            "/metrics": {"get": {"summary": "Prometheus metrics.", "responses": {
                "200": {"description": "Prometheus text format",
                        "content": {"text/plain": {"schema": _S}}}}}},
            "/openapi.json": {"get": {"summary": "This document.", "responses": {"200": plain}}},
        },
    }
