"""The memory browser's ASGI application: routes, error pages and the guard in front.

:func:`build_app` is what ``bli-memory-mcp ui`` serves and what the tests and the bench
drive. Routes::

    GET       /                        a space (default: this project's) and every space
    GET       /memory/{id}             one memory and its version history
    GET|POST  /memory/{id}/edit        replace the text (update_memory)
    GET|POST  /memory/{id}/forget      tombstone it (forget_memory by id)
    GET|POST  /memory/{id}/purge       erase every version
    GET       /search?q=&space=        hybrid search, as search_memory
    GET       /captures                recent extract jobs
    GET       /health                  hook outcomes and latency
    GET       /ops                     experience log and the ops view
    GET       /static/...              the stylesheet
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from bli_memory.core.ui.guard import Guard

__all__ = ["STATIC_DIR", "BrowserState", "build_app"]

STATIC_DIR = Path(__file__).parent / "static"


@dataclass(frozen=True)
class BrowserState:
    """What every page reads.

    Attributes:
        backend: The embedded engine (:class:`~bli_memory.core.engine.EmbeddedBackend`).
        home_space: The space the agent would use from the folder ``ui`` started in.
        derived_from: How that space was derived (e.g. ``git remote github.com/org/repo``).
    """

    backend: Any
    home_space: str
    derived_from: str = ""


def _error_status(exc: Exception) -> tuple[int, str]:
    from bli_memory.core.errors import BliMemoryError, InvalidInputError, NotFoundError
    from bli_memory.core.ui.guard import Refused

    if isinstance(exc, Refused):
        return exc.status, exc.message
    if isinstance(exc, NotFoundError):
        return 404, exc.message
    if isinstance(exc, InvalidInputError):
        return 400, exc.message
    if isinstance(exc, BliMemoryError):
        return 500, f"{exc.message} ({exc.reason})"
    return 500, "the page failed unexpectedly; the server's log has the details"


def build_app(state: BrowserState, *, port: int, token: str | None = None) -> Guard:
    """The browser app behind its :class:`~bli_memory.core.ui.guard.Guard`.

    Args:
        state: The backend and the home space.
        port: The loopback port it is served on (the guard checks Host and Origin against it).
        token: The per-start token (default: a fresh random one; read it from ``guard.url``).

    Returns:
        The guard, an ASGI app; ``guard.url`` is the URL that opens a session.
    """
    import logging

    from starlette.applications import Starlette
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from bli_memory.core.errors import BliMemoryError
    from bli_memory.core.ui import ops_pages, pages
    from bli_memory.core.ui.guard import Guard, Refused
    from bli_memory.core.ui.render import render

    async def on_error(request: Request, exc: Exception) -> Response:
        status, message = _error_status(exc)
        if status == 500 and not isinstance(exc, BliMemoryError):
            logging.getLogger("bli_memory.ui").exception("page failed: %s", request.url.path)
        return render(request, "error.html", status=status, code=status, message=message)

    async def not_found(request: Request, exc: Exception) -> Response:
        return render(request, "error.html", status=404, code=404, message="There is no such page.")

    both = ["GET", "POST"]
    app = Starlette(
        routes=[
            Route("/", pages.index),
            Route("/memory/{id}", pages.memory),
            Route("/memory/{id}/edit", pages.edit, methods=both),
            Route("/memory/{id}/forget", pages.forget, methods=both),
            Route("/memory/{id}/purge", pages.purge, methods=both),
            Route("/search", pages.search),
            Route("/captures", ops_pages.captures),
            Route("/health", ops_pages.health),
            Route("/ops", ops_pages.ops),
            Mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static"),
        ],
        exception_handlers={Refused: on_error, BliMemoryError: on_error, Exception: on_error,
                            404: not_found},
    )
    app.state.browser = state
    return Guard(app, port=port, token=token)
