"""The memory pages: spaces, one memory with its history, edit / forget / purge, search.

Every change goes through the same engine calls as the MCP tools: edit is
``update_memory`` (the old version becomes superseded history), forget is
``forget_memory`` by id (a tombstone), purge is ``memory purge`` (every version erased).
Each has a confirmation page that names what will happen; the POST that does it is
checked by :func:`~bli_memory.core.ui.guard.checked_form`.

Pages read one page of rows at a time (keyset on ``seq``), never a whole space.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse

from bli_memory.core.errors import BliMemoryError, InvalidInputError, NotFoundError
from bli_memory.core.memory.retrieval_writes import check_content_size
from bli_memory.core.memory.version_ids import shown_id
from bli_memory.core.ui.charts import bar_chart
from bli_memory.core.ui.guard import checked_form
from bli_memory.core.ui.render import browser_state, home_space, render

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.models import Memory

__all__ = [
    "PAGE_SIZE",
    "SEARCH_LIMIT",
    "edit",
    "forget",
    "index",
    "memory",
    "purge",
    "search",
]

#: Memories per page of a space.
PAGE_SIZE = 25
#: Hits a search page shows (search_memory's default is 10; a person scans further).
SEARCH_LIMIT = 20
#: Spaces listed on the first page (most live memories first) and bars in its chart.
SPACES_SHOWN, CHART_BARS = 200, 12

#: What a finished action says on the page it lands on (fixed texts: nothing from the URL
#: is ever shown as a message).
DONE = {
    "updated": "Saved: this is the new version; the one before is kept as superseded history.",
    "unchanged": "Nothing changed: the text was the same as the current version's.",
    "forgotten": "Forgotten: the memory left search and recall. Its history stays until purged.",
    "purged": "Purged: every version of that memory was erased from the store.",
}


def _state(request: Request) -> Any:
    return browser_state(request)


def _space_arg(request: Request) -> str:
    """The space a page reads: the ``space`` query parameter, else the home space.

    The tag is checked as the MCP tools check ``containerTag``: valid
    (:func:`~bli_memory.core.models.validate_tag`) and no secret
    (:func:`~bli_memory.core.memory.stored_secrets.check_container_tag`), since every page
    would show it in its title, heading, fields and links.

    Raises:
        InvalidInputError: the parameter is invalid or looks like a secret, or the home
            space was refused (:func:`~bli_memory.core.ui.render.home_space`); the message
            names the input and never repeats its value.
    """
    from bli_memory.core.memory.spaces import validate_tag
    from bli_memory.core.memory.stored_secrets import check_container_tag

    raw = request.query_params.get("space")
    if raw is None or not raw.strip():
        return home_space(_state(request))
    try:
        tag = validate_tag(raw)
    except ValueError as exc:
        raise InvalidInputError(f"space: {exc}") from None
    check_container_tag(tag, name="space")
    return tag


def _expired(m: Memory) -> bool:
    from bli_memory.core.memory.expiry import is_expired

    return is_expired(m.expires_at)


# --- the first page: a space and the others ------------------------------------------


def _space_page(backend: MemoryBackend, space: str, before: int | None) -> dict[str, Any]:
    store = backend.browse
    canonical, spaces = store.resolve_space(space)
    page = store.page_live(spaces, before_seq=before, limit=PAGE_SIZE + 1)
    more = len(page) > PAGE_SIZE
    page = page[:PAGE_SIZE]
    all_spaces = store.space_counts(limit=SPACES_SHOWN)
    aliases = store.aliases()
    bars = [(tag, counts["active"]) for tag, counts in all_spaces[:CHART_BARS] if counts["active"]]
    chart = bar_chart("Live memories per space", bars, unit=" live")
    return {
        "space": canonical, "aliases": [t for t in spaces if t != canonical],
        "counts": store.count_by_state(spaces), "memories": [m for _, m in page],
        "next_before": page[-1][0] if more else None, "first_page": before is None,
        "spaces": [(tag, counts, aliases.get(tag, [])) for tag, counts in all_spaces],
        "chart": chart, "spaces_shown": SPACES_SHOWN,
        # On the service: who shared each space with the person (none on the local page).
        "owners": {tag: store.owners(tag) for tag, _ in all_spaces},
    }


async def index(request: Request) -> Response:
    """``GET /``: a space (default: the project's, as the agent derives it from the folder
    ``ui`` started in) with its newest live memories, ``?before=SEQ`` for older ones, and
    every space with its counts and aliases."""
    space = _space_arg(request)
    before_raw = request.query_params.get("before")
    if before_raw is not None and not before_raw.isdigit():
        raise InvalidInputError("before must be a row number from an 'Older' link")
    data = await run_in_threadpool(_space_page, _state(request).backend, space,
                                   int(before_raw) if before_raw else None)
    done = DONE.get(request.query_params.get("done", ""))
    return render(request, "index.html", nav="spaces", done=done,
                  derived_from=_state(request).derived_from, **data)


# --- one memory ------------------------------------------------------------------------


def _memory_and_history(backend: MemoryBackend, id: str) -> tuple[Memory, list[Memory]]:
    store = backend.browse
    found = store.get(id.strip())
    if found is None:
        raise NotFoundError(f"no memory with id {shown_id(id)} (never saved here, or purged)")
    return found, store.history(found.id)


def _writable(backend: MemoryBackend, m: Memory) -> bool:
    # On the service, a space shared read-only offers no changes (the local store: all).
    return backend.browse.writable(m)


async def memory(request: Request) -> Response:
    """``GET /memory/{id}``: text, metadata, expiry, source, session and every version."""
    backend = _state(request).backend
    found, history = await run_in_threadpool(_memory_and_history, backend, request.path_params["id"])
    writable = await run_in_threadpool(_writable, backend, found)
    done = DONE.get(request.query_params.get("done", ""))
    masked = request.query_params.get("masked", "")
    # The edit's secrets, masked before the store kept it: ASCII digits only (str.isdigit
    # also takes "²", which int() refuses), and a count no text could hold is not shown.
    if done and masked.isascii() and masked.isdigit() and len(masked) <= 5 and int(masked):
        n = int(masked)
        done += f" {n} secret{'s' if n != 1 else ''} in the text {'were' if n != 1 else 'was'} masked."
    return render(request, "memory.html", nav="spaces", m=found, history=history, done=done,
                  expired=_expired(found), writable=writable)


def _redirect(request: Request, path: str, **query: str) -> Response:
    root = request.scope.get("root_path", "")
    return RedirectResponse(root + path + (f"?{urlencode(query)}" if query else ""), status_code=303)


async def edit(request: Request) -> Response:
    """``GET|POST /memory/{id}/edit``: replace a live memory's text (``update_memory``)."""
    backend = _state(request).backend
    found, history = await run_in_threadpool(_memory_and_history, backend, request.path_params["id"])
    if found.state != "active":
        raise InvalidInputError(f"version {found.version} of this memory is {found.state}; "
                                "only the live version can be edited")
    if request.method == "GET":
        return render(request, "edit.html", nav="spaces", m=found, text=found.content, error=None)
    form = await checked_form(request)
    text = str(form.get("content", ""))
    try:
        # The page's own advice first: it has no extract, which the store's refusal names.
        check_content_size(text, advice="Save its durable facts, one memory each")
        result = await run_in_threadpool(partial(backend.update, text, space=found.space, id=found.id,
                                                 source="ui"))
    except InvalidInputError as exc:
        return render(request, "edit.html", nav="spaces", m=found, text=text, error=exc.message, status=400)
    return _redirect(request, f"/memory/{result.memory.id}", done=result.status, masked=str(result.masked))


async def forget(request: Request) -> Response:
    """``GET|POST /memory/{id}/forget``: tombstone a live memory (``forget_memory`` by id)."""
    backend = _state(request).backend
    found, _ = await run_in_threadpool(_memory_and_history, backend, request.path_params["id"])
    if found.state != "active":
        raise InvalidInputError(f"version {found.version} of this memory is already {found.state}")
    if request.method == "GET":
        return render(request, "confirm.html", nav="spaces", m=found, action="forget", versions=None)
    await checked_form(request)
    result = await run_in_threadpool(lambda: backend.forget(space=found.space, id=found.id))
    return _redirect(request, f"/memory/{result.memory.id}", done="forgotten")


async def purge(request: Request) -> Response:
    """``GET|POST /memory/{id}/purge``: erase every version from the file (a secret saved
    by mistake)."""
    backend = _state(request).backend
    found, history = await run_in_threadpool(_memory_and_history, backend, request.path_params["id"])
    if request.method == "GET":
        return render(request, "confirm.html", nav="spaces", m=found, action="purge", versions=len(history))
    await checked_form(request)
    await run_in_threadpool(backend.purge, found.id)
    return _redirect(request, "/", space=found.space, done="purged")


# --- search ----------------------------------------------------------------------------


async def search(request: Request) -> Response:
    """``GET /search?q=...&space=...``: the hybrid search of ``search_memory``.

    Shows each hit's channels and its cosine similarity where one was computed; the
    fused score only orders the hits and is never shown. Zero hits says the record is
    silent; a failure says what failed (status 400 for bad input, 500 otherwise). A
    refused space (:func:`_space_arg`) is a 400 before any search, its value not put back
    into the form.
    """
    q = request.query_params.get("q", "")
    ctx: dict[str, Any] = {"q": q, "space": "", "hits": None, "error": None, "resolved": ""}
    try:
        space = _space_arg(request)
    except InvalidInputError as exc:  # the refused value stays out of the form and the page
        ctx["error"] = f"{exc.message} ({exc.reason})"
        return render(request, "search.html", nav="search", status=400, **ctx)
    ctx.update(space=space, resolved=space)
    if q.strip():
        backend = _state(request).backend
        try:
            result = await run_in_threadpool(lambda: backend.search(q, space=space, limit=SEARCH_LIMIT))
        except BliMemoryError as exc:
            ctx["error"] = f"{exc.message} ({exc.reason})"
            return render(request, "search.html", nav="search",
                          status=400 if isinstance(exc, InvalidInputError) else 500, **ctx)
        ctx.update(hits=list(result.hits), resolved=result.space)
    return render(request, "search.html", nav="search", **ctx)
