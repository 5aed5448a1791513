"""The operations pages: recent captures, hook health, and the experience log with the ops view.

- Captures: the newest extract jobs (what the stop hook queued) with their state and,
  once done, how many memories they added, updated, left unchanged or found in conflict.
  The job's text is never shown (a queued job holds a raw exchange).
- Hook health: per event, runs, ok / skipped / failed by reason and the route that
  answered (the counts of ``cockpit ops --memory``, :func:`bli_memory.core.hooks.stats_windows.read_hooks`),
  with latency p50/p95 per route and a chart of p95 per hour (:mod:`~bli_memory.core.ui.health`).
- Experience and ops: the ``cockpit ops --memory`` view
  (:func:`bli_memory.core.experience.ops_view.build_view`) and the experience log, newest first, one page at
  a time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from bli_memory.core.errors import InvalidInputError, NotFoundError
from bli_memory.core.ui.charts import line_chart
from bli_memory.core.ui.render import render

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from bli_memory.core.embedded.engine import EmbeddedBackend

__all__ = ["CAPTURES_SHOWN", "EXPERIENCE_PAGE", "LATENCY_HOURS", "MIN_CHART_HOURS", "SKIP_REASONS_SHOWN",
           "captures", "documents", "health", "ops"]

#: Extract jobs listed, newest first.
CAPTURES_SHOWN = 50
#: Experience entries per page.
EXPERIENCE_PAGE = 50
#: Hours drawn in the latency chart.
LATENCY_HOURS = 48
#: Fewest hours with timed runs, of the last :data:`LATENCY_HOURS`, that get a chart.
MIN_CHART_HOURS = 6


def _machine(request: Request) -> EmbeddedBackend:
    """The embedded engine of this machine (the local page's :class:`BrowserState`).

    Raises:
        NotFoundError: on a page without one (the team service does not serve these pages).
    """
    machine: EmbeddedBackend | None = request.app.state.browser.machine
    if machine is None:
        raise NotFoundError("this page reads the store of the machine the browser runs on")
    return machine


async def captures(request: Request) -> Response:
    """``GET /captures``: the newest extract jobs, queued or done, with their outcomes."""
    store = _machine(request).store

    def read() -> dict[str, Any]:
        from bli_memory.core.extraction.host_spend import spend_today

        return {"jobs": store.jobs.recent_jobs(limit=CAPTURES_SHOWN), "job_counts": store.jobs.job_counts(),
                "host_spend": spend_today()}

    return render(request, "captures.html", nav="captures", **await run_in_threadpool(read))


def _health() -> dict[str, Any]:
    from bli_memory.core import paths
    from bli_memory.core.hooks.stats_windows import read_hooks
    from bli_memory.core.ui.health import ROUTES, hourly_percentiles, latency_summary, read_latency

    now = datetime.now(UTC)
    path = paths.hook_stats_path()
    hooks = read_hooks(path, now)
    latency = read_latency(path)
    summary = latency_summary(latency, now=now)
    events = sorted(set(hooks["windows"]["30d"]) | set(hooks["windows"]["7d"]) | set(summary))
    charts, sparse = {}, {}
    for event in events:
        series = hourly_percentiles(latency, event, now=now, hours=LATENCY_HOURS)
        timed = sum(any(series[r][i] is not None for r in ROUTES) for i in range(len(series["hours"])))
        if timed < MIN_CHART_HOURS:  # a 48-hour frame around one dot says nothing: the table does
            sparse[event] = timed
            continue
        hours = [h[5:].replace("T", " ") + ":00" for h in series["hours"]]
        charts[event] = line_chart(f"{event} hook p95 latency per hour, last {LATENCY_HOURS} h (UTC)", hours,
                                   {f"p95 via {r}": series[r] for r in ROUTES})
    return {"hooks": hooks, "events": events, "latency": summary, "charts": charts, "sparse": sparse,
            "routes": ROUTES, "min_chart_hours": MIN_CHART_HOURS}


async def health(request: Request) -> Response:
    """``GET /health``: hook outcomes and latency from the stats file."""
    return render(request, "health.html", nav="health", **await run_in_threadpool(_health))


async def ops(request: Request) -> Response:
    """``GET /ops``: the ops view's experience totals and outbox, and the experience log
    (``?before=CREATED_AT|ID`` pages back)."""
    from bli_memory.core.experience.ops_view import build_view

    store = _machine(request).store
    before_raw = request.query_params.get("before")
    before = None
    if before_raw:
        created, sep, entry_id = before_raw.partition("|")
        if not sep or not created or not entry_id:
            raise InvalidInputError("before must come from an 'Older' link")
        before = (created, entry_id)

    def read() -> dict[str, Any]:
        page = store.experience.experience_page(since="", before=before, limit=EXPERIENCE_PAGE + 1)
        more = len(page) > EXPERIENCE_PAGE
        page = page[:EXPERIENCE_PAGE]
        return {"view": build_view(), "entries": page,
                "next_before": f"{page[-1]['created_at']}|{page[-1]['id']}" if more else None}

    return render(request, "ops.html", nav="ops", **await run_in_threadpool(read))


#: What each skip reason means, as the Documents page says it.
SKIP_REASONS_SHOWN = {
    "secret_file": "holds secrets by nature (never read)",
    "excluded": "excluded by a glob",
    "vendored": "other people's code (a vendored folder)",
    "too_large": "larger than 1 MB",
    "binary": "not text",
    "generated": "marked as generated",
    "forgotten": "kept out (documents forget)",
    "symlink": "a link (symbolic or hard), or not a regular file (never followed)",
    "secret_path": "its path holds a secret (never read; shown masked)",
    "bad_name": "its name is not text",
}


async def documents(request: Request) -> Response:
    """``GET /documents?space=&q=``: what the space's documents index holds, what was left out
    and why, and a search of it (documents and commit messages, never memories). Served by
    both stores: the local page reads this machine's index, the team service's the index the
    signed-in person reads (the one the team shares)."""
    from bli_memory.core.ui.pages import _space_arg
    from bli_memory.core.ui.render import browser_state

    store = browser_state(request).backend
    space = _space_arg(request)
    q = (request.query_params.get("q") or "").strip()[:2000]

    def read() -> dict[str, Any]:
        from bli_memory.core.mcp.document_results import DOCUMENT_FLOOR

        state = store.document_status(space)
        found = store.search_documents(q, space=space, limit=10) if q and state is not None else []
        hits = [h for h in found if h.similarity >= DOCUMENT_FLOOR]  # as search_memory shows them
        return {"state": state, "hits": hits, "weaker": len(found) - len(hits), "floor": DOCUMENT_FLOOR}

    return render(request, "documents.html", nav="documents", space=space, q=q, reasons=SKIP_REASONS_SHOWN,
                  **await run_in_threadpool(read))

