"""The service's routes without a token: liveness, readiness, metrics and its OpenAPI document."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bli_memory.core.errors import StoreError
from bli_memory.core.team.service.door import service_state

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["healthz", "metrics", "openapi", "readyz"]


async def healthz(_: Request) -> Response:
    """``GET /healthz``: ``{"status": "ok"}`` while the process answers."""
    from starlette.responses import JSONResponse

    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    """``GET /readyz``: 200 when the database answers with a current schema and the model is
    loaded, else 503; both with ``{"status", "database", "model"}``."""
    import anyio
    from starlette.responses import JSONResponse

    st = service_state(request)
    db = await anyio.to_thread.run_sync(st.backend.ready)
    ok = db and st.model_ready
    body = {"status": "ready" if ok else "not_ready", "database": db, "model": st.model_ready}
    return JSONResponse(body, status_code=200 if ok else 503)


async def metrics(request: Request) -> Response:
    """``GET /metrics``: the Prometheus text format; the job-queue gauge is read at scrape time
    (left as it was when the database cannot answer)."""
    import anyio
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    from starlette.responses import PlainTextResponse

    st = service_state(request)
    try:
        counts = await anyio.to_thread.run_sync(st.backend.jobs.job_counts)
        for job_state in ("queued", "running", "done", "failed"):
            st.queue.labels(state=job_state).set(counts.get(job_state, 0))
    except StoreError:
        pass
    return PlainTextResponse(generate_latest(st.registry).decode("utf-8"),
                             headers={"Content-Type": CONTENT_TYPE_LATEST})


async def openapi(request: Request) -> Response:
    """``GET /openapi.json``: the document the app was built with (``app.state.openapi``)."""
    from starlette.responses import JSONResponse

    return JSONResponse(request.app.state.openapi)
