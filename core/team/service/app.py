"""The team memory service: the memory doors over HTTP, on Postgres + pgvector.

An ASGI app (Starlette; ``bli-memory-mcp service`` runs it under uvicorn). Stateless:
every request is answered from Postgres, so any number of processes can run behind
a load balancer. The doors (BLI Memory spec, hook table and "Auth"):

=============================  =====================================================
``POST /api/memory/search``    hybrid search of a space and its aliases
``POST /api/memory/save``      save; ``extract: true`` writes one durable
                               ``memory_extract_jobs`` row, answers **202 queued**
                               and distils after the response (BLI-3730)
``POST /api/memory/recall``    a prompt's search and the injection gate's inputs
                               (term counts, background): the prompt hook's one
                               request
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
``POST /api/documents/search`` the space's documents and commit messages matching
                               a query (the index a team shares)
``POST /api/documents/status`` what the space's documents index holds, whose it
                               is, whether the caller may change it
``POST /api/documents/manifest`` which files of a client's manifest part the index
                               lacks or holds stale, and which it holds no longer
``POST /api/documents/upload`` one part of a client's index run: file chunks,
                               removed paths, commit messages, the run's state
``POST /api/documents/forget`` keep a path out of the space's documents index
``GET /healthz``, ``/readyz``  liveness; readiness (database + schema + model)
``GET /metrics``               Prometheus text format
``GET /openapi.json``          OpenAPI 3.1 description of the doors
``/ui/``                       the memory browser's pages, behind a device-token
                               sign-in (:mod:`bli_memory.core.ui.service_app`
                               mounts them: ``create_service_app``)
=============================  =====================================================

Every ``/api`` door needs ``Authorization: Bearer <device token>``; the person and
device come from the token, never from the body. Errors answer
``{"error": {"reason", "message"}}`` with a reason from a closed set and never echo
a memory, a prompt or a token. Tokens never reach a log line.

The app is assembled here from the door table (:data:`DOORS`): the handlers live by job
in :mod:`~bli_memory.core.team.service.memory`, :mod:`~bli_memory.core.team.service.transfer`,
:mod:`~bli_memory.core.team.service.capture` and :mod:`~bli_memory.core.team.service.documents`
(its shapes in :mod:`~bli_memory.core.team.service.document_models`), the door machinery (token,
body, errors, metrics) in :mod:`~bli_memory.core.team.service.door`, the process state and the
extract-job worker in :mod:`~bli_memory.core.team.service.state`, and the OpenAPI document
is generated from the same table (:mod:`~bli_memory.core.team.service.openapi`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import ConfigError
from bli_memory.core.team.service import capture, documents, memory, transfer
from bli_memory.core.team.service import document_models as dm
from bli_memory.core.team.service import models as m
from bli_memory.core.team.service.door import (
    MAX_BODY_BYTES,
    MAX_BODY_DEPTH,
    MAX_IMPORT_BODY_BYTES,
    MAX_IMPORT_RECORDS,
)
from bli_memory.core.team.service.openapi import Door, build_document
from bli_memory.core.team.service.state import JOB_SWEEP_SECONDS, ServiceState, run_extract_jobs

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from bli_memory.core.team.postgres.store import PostgresBackend

__all__ = [
    "DOORS",
    "MAX_BODY_BYTES",
    "MAX_BODY_DEPTH",
    "MAX_IMPORT_BODY_BYTES",
    "MAX_IMPORT_RECORDS",
    "ServiceState",
    "create_app",
    "openapi_document",
    "run_extract_jobs",
]

_log = logging.getLogger("bli_memory.service")

#: Every door of the service, in the order of the table above: the app's routes and the
#: OpenAPI document are both built from it.
DOORS: tuple[Door, ...] = (
    Door("/api/memory/search", "search", memory.search,
         "Search a space (and its aliases) by meaning, keyword and recency.", m.SearchRequest,
         {200: (m.SearchAnswer, "Hits, best first; zero hits is a normal answer.")}),
    Door("/api/memory/recall", "recall", memory.recall,
         "A prompt's search and the injection gate's inputs, in one request (the prompt hook).",
         m.RecallRequest, {200: (m.RecallAnswer, "Hits best first, term counts, live size, background.")}),
    Door("/api/memory/save", "save", memory.save,
         "Remember content; customId upserts; extract queues a distillation job.", m.SaveRequest,
         {201: (m.SaveAnswer, "Saved (created or updated)."),
          200: (m.SaveAnswer, "Identical content was already remembered."),
          202: (m.SaveAnswer, "Extract mode: one durable job queued; distilled after the response.")}),
    Door("/api/memory/update", "update", memory.update,
         "Replace a memory's content, keeping the old version as history.", m.UpdateRequest,
         {200: (m.UpdateAnswer, "The new version and the one it replaced.")}, (403, 404)),
    Door("/api/memory/forget", "forget", memory.forget,
         "Tombstone a memory by id, exact text or closest match (cosine >= 0.85).", m.ForgetRequest,
         {200: (m.ForgetAnswer, "The tombstoned (live) version.")}, (403, 404)),
    Door("/api/memory/v4/profile", "profile", memory.profile,
         "User Profile and Recent Context of a space (session-start).", m.SpaceLimitRequest,
         {200: (m.Profile, "The profile.")}),
    Door("/api/memory/history", "history", memory.history, "Every version of a memory, newest first.",
         m.IdRequest, {200: (m.HistoryAnswer, "The versions.")}, (404,)),
    Door("/api/memory/purge", "purge", memory.purge,
         "Erase a memory and all its versions (secrets saved by mistake).", m.IdRequest,
         {200: (m.Erased, "Rows erased.")}, (403, 404)),
    Door("/api/memory/info", "info", memory.info,
         "The space, its aliases, counts by state, the store and the embedding model.", m.SpaceRequest,
         {200: (m.InfoAnswer, "What the caller sees of the space.")}),
    Door("/api/memory/terms", "terms", memory.terms,
         "In how many live memories of the space each content term of q occurs.", m.TermsRequest,
         {200: (m.TermsAnswer, "Document frequency per term, and the live memories of the space.")}),
    Door("/api/memory/background", "background", memory.background,
         "Mean cosine similarity between two live memories of the space (the prompt hook's gate).",
         m.SpaceRequest, {200: (m.BackgroundAnswer, "The background, null below 100 memories.")}),
    Door("/api/memory/list", "list", memory.list_, "The newest live memories of a space.",
         m.SpaceLimitRequest, {200: (m.ListAnswer, "Newest first.")}),
    Door("/api/memory/get", "get", memory.get, "One memory with its version history (newest first).",
         m.GetRequest, {200: (m.GetAnswer, "The memory and its other versions.")}, (404,)),
    Door("/api/memory/audit", "audit", transfer.audit,
         "Check the caller's own rows (tsvector, vector of the model); repair rebuilds them.",
         m.AuditRequest, {200: (m.Audit, "The audit report (and the report after a repair).")}),
    Door("/api/memory/export", "export", transfer.export,
         "The caller's own rows, every state, oldest first, one page at a time.", m.ExportRequest,
         {200: (m.ExportAnswer, "One page; `next` is null on the last.")}),
    Door("/api/memory/import", "import", transfer.import_,
         "Import exported rows as the caller's; all or nothing; ids present are skipped.", m.ImportRequest,
         {200: (m.ImportAnswer, "What was (or would be) imported.")}, max_body=MAX_IMPORT_BODY_BYTES),
    Door("/api/memory/record", "record", capture.record,
         "Keep one turn of a recorded session, capture-only (never searched or injected).", m.RecordRequest,
         {201: (m.RecordAnswer, "Recorded; `info` counts it under `recordings`.")}),
    Door("/api/memory/recordings", "recordings", capture.recordings,
         "The caller's recorded turns of a space, newest first.", m.SpaceLimitRequest,
         {200: (m.RecordingsAnswer, "The recordings.")}),
    Door("/api/memory/recordings/clear", "clear_recordings", capture.clear_recordings,
         "Erase the caller's recorded turns of a space.", m.SpaceRequest,
         {200: (m.ClearRecordingsAnswer, "How many were erased.")}),
    Door("/api/memory/experience", "experience", capture.experience,
         "Record one agent-experience opinion; a retry under the same id is idempotent.",
         m.ExperienceRequest,
         {201: (m.ExperienceAnswer, "Inserted."), 200: (m.ExperienceAnswer, "Identical retry.")}, (409, 502)),
    Door("/api/memory/whoami", "whoami", capture.whoami,
         "The person and device a token proves (used by `cockpit login`).", None,
         {200: (m.WhoAmI, "Who.")}, method="GET"),
    Door("/api/documents/search", "documents_search", documents.search,
         "Search the space's documents and commit messages by meaning and keyword.", dm.DocumentSearchRequest,
         {200: (dm.DocumentSearchAnswer, "Matches, best first; none is a normal answer.")}),
    Door("/api/documents/status", "documents_status", documents.status,
         "What the space's documents index holds, whose it is, and whether the caller may change it.",
         m.SpaceRequest, {200: (dm.DocumentStatusAnswer, "The index the caller uses for the space.")}),
    Door("/api/documents/manifest", "documents_manifest", documents.manifest,
         "Compare one part of a client's manifest (path: SHA-256) with the space's documents index.",
         dm.ManifestRequest, {200: (dm.ManifestAnswer, "Paths to upload, and paths to remove.")}, (403,),
         max_body=dm.MAX_DOCUMENTS_BODY_BYTES),
    Door("/api/documents/upload", "documents_upload", documents.upload,
         "One part of a client's index run: file chunks, removed paths, commit messages, the run's state.",
         dm.UploadRequest, {200: (dm.UploadAnswer, "What the part wrote.")}, (403,),
         max_body=dm.MAX_DOCUMENTS_BODY_BYTES),
    Door("/api/documents/forget", "documents_forget", documents.forget,
         "Keep a path (a file, a folder ending in /, or a glob) out of the space's documents index.",
         dm.DocumentForgetRequest, {200: (dm.DocumentForgetAnswer, "The path, and the files it dropped.")},
         (403,)),
)


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the doors (served at ``/openapi.json``), generated from
    :data:`DOORS` and their models."""
    from bli_memory.core._version import VERSION

    return build_document(DOORS, version=VERSION)


def create_app(
    *,
    database_url: str | None = None,
    backend: PostgresBackend | None = None,
    run_jobs: bool = True,
    warm_model: bool = True,
    body_timeout: float | None = None,
    extra_routes: Sequence[Any] = (),
) -> Starlette:
    """Build the ASGI app.

    Args:
        database_url: Postgres URL; the lifespan opens (and migrates) the database.
        backend: An open administrative backend instead (tests); not closed on exit.
        run_jobs: Distil extract jobs in this process.
        warm_model: Load the embedding model and the secret rules at startup (readiness
            waits for them).
        body_timeout: Seconds a request body may take to arrive, for every door
            (default :data:`~bli_memory.core.team.service.http.BODY_TIMEOUT_SECONDS`, and
            :data:`~bli_memory.core.team.service.http.BULK_BODY_TIMEOUT_SECONDS` for import).
        extra_routes: Starlette routes served after the doors and health routes. The
            wing above composes the deployed service with it: the memory browser's
            ``/ui`` mount (:func:`bli_memory.core.ui.service_app.create_service_app`,
            which ``bli-memory-mcp service`` runs), so this wing never imports the UI.

    Returns:
        A Starlette app; its ``state.service`` is the :class:`ServiceState` once started.

    Raises:
        ConfigError: neither ``database_url`` nor ``backend`` was given.
    """
    import anyio
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from bli_memory.core.team.service import health
    from bli_memory.core.team.service.door import door
    from bli_memory.core.team.service.http import CloseUnreadBodies, error_payload

    if database_url is None and backend is None:
        raise ConfigError("the service needs --database-url", reason="config_invalid")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        from bli_memory.core.team.postgres.store import PostgresBackend

        own = backend is None
        root: PostgresBackend = (backend if backend is not None else
                                 await anyio.to_thread.run_sync(lambda: PostgresBackend(database_url or "")))
        st = ServiceState(root, run_jobs=run_jobs)
        app.state.service = st

        def warm() -> None:
            try:
                if warm_model:
                    root.warm_up()
                    # The secret rules every door that writes masks with: loaded before the
                    # service says it is ready, so no first save waits for them.
                    from bli_memory.core.memory.redaction.vendor import warm as warm_rules

                    warm_rules()
                st.model_ready = True
            except Exception as exc:
                _log.error("embedding model failed to load: %s", type(exc).__name__)

        from bli_memory.core.memory.embeddings import import_numpy_here

        import_numpy_here()  # before the warm-up thread starts

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

    routes: list[Any] = [
        Route(d.path, door(d.name, d.handler, method=d.method, max_body=d.max_body,
                           request_model=d.request), methods=[d.method])
        for d in DOORS
    ]
    routes += [
        Route("/healthz", health.healthz, methods=["GET"]),
        Route("/readyz", health.readyz, methods=["GET"]),
        Route("/metrics", health.metrics, methods=["GET"]),
        Route("/openapi.json", health.openapi, methods=["GET"]),
        *extra_routes,
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: no_door},
                    middleware=[Middleware(CloseUnreadBodies)])
    app.state.body_timeout = body_timeout
    app.state.openapi = openapi_document()
    return app
