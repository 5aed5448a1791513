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
    GET       /documents               the project's documents index: what it holds, skips, search
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

    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.memory.browse import BrowseReads
    from bli_memory.core.ui.guard import Guard

__all__ = ["STATIC_DIR", "BrowserState", "SignedIn", "browser_app", "build_app"]

STATIC_DIR = Path(__file__).parent / "static"


@dataclass(frozen=True)
class SignedIn:
    """Who is signed in to the team service's browser.

    Attributes:
        person: Their name.
        device: The device token's label.
        browse: Their browsing reads (:attr:`MemoryBackend.browse`).
    """

    person: str
    device: str
    browse: BrowseReads

    def home_space(self) -> str:
        """The space a page opens on: the person's space with the most live memories
        (``default`` when they read none)."""
        counts = self.browse.space_counts(limit=1)
        return counts[0][0] if counts else "default"


@dataclass(frozen=True)
class BrowserState:
    """What every page reads.

    Attributes:
        backend: The store the pages read and change, through the memory contract: the
            embedded engine on the local page, the signed-in person's Postgres store on
            the team service.
        home_space: The space the agent would use from the folder ``ui`` started in.
        derived_from: How that space was derived (e.g. ``git remote github.com/org/repo``).
        service: On the team service, who is signed in (then ``home_space`` may be ""
            for "their largest space"); None on the local page.
        machine: The embedded engine of this machine, whose file the local pages of
            captures and the experience log read; None on the team service.
        home_refused: Why the home space was refused ("" when it was not): a tag forced
            by ``BLI_MEMORY_CONTAINER_TAG`` that is invalid or looks like a secret. Then
            ``home_space`` is "" and every page that would open on it answers 400 with
            this message (which never holds the tag).
    """

    backend: MemoryBackend
    home_space: str
    derived_from: str = ""
    service: SignedIn | None = None
    home_refused: str = ""
    machine: EmbeddedBackend | None = None


def _error_status(exc: Exception) -> tuple[int, str]:
    from bli_memory.core.errors import BliMemoryError, InvalidInputError, NotFoundError
    from bli_memory.core.ui.guard import Refused

    if isinstance(exc, Refused):
        return exc.status, exc.message
    if isinstance(exc, NotFoundError):
        # The service's "read-only share" is a NotFoundError with its own reason (403 at
        # the doors too, core/team/service/app.py).
        return (403 if exc.reason == "read_only" else 404), exc.message
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
    from bli_memory.core.ui.guard import Guard

    app = browser_app(local=True)
    app.state.browser = state
    return Guard(app, port=port, token=token)


def browser_app(*, local: bool, extra_routes: list[Any] | None = None) -> Any:
    """The Starlette app of the pages, without a guard.

    Args:
        local: Include the pages that read this machine (captures, hook health,
            experience and ops); the team service leaves them out.
        extra_routes: Routes added first (the service's sign-in pages).
    """
    import logging

    from starlette.applications import Starlette
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from bli_memory.core.errors import BliMemoryError
    from bli_memory.core.ui import ops_pages, pages
    from bli_memory.core.ui.guard import Refused
    from bli_memory.core.ui.render import render

    async def on_error(request: Request, exc: Exception) -> Response:
        status, message = _error_status(exc)
        if status == 500 and not isinstance(exc, BliMemoryError):
            logging.getLogger("bli_memory.ui").exception("page failed: %s", request.url.path)
        return render(request, "error.html", status=status, code=status, message=message)

    async def not_found(request: Request, exc: Exception) -> Response:
        return render(request, "error.html", status=404, code=404, message="There is no such page.")

    both = ["GET", "POST"]
    routes = [
        *(extra_routes or []),
        Route("/", pages.index),
        Route("/memory/{id}", pages.memory),
        Route("/memory/{id}/edit", pages.edit, methods=both),
        Route("/memory/{id}/forget", pages.forget, methods=both),
        Route("/memory/{id}/purge", pages.purge, methods=both),
        Route("/search", pages.search),
        Route("/documents", ops_pages.documents),
        Mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static"),
    ]
    if local:
        routes[-1:-1] = [
            Route("/captures", ops_pages.captures),
            Route("/health", ops_pages.health),
            Route("/ops", ops_pages.ops),
        ]
    return Starlette(
        routes=routes,
        exception_handlers={Refused: on_error, BliMemoryError: on_error, Exception: on_error,
                            404: not_found},
    )
