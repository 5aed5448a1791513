"""The memory browser on the team service: the pages under ``/ui/`` of ``bli-memory-mcp service``.

The same pages as ``bli-memory-mcp ui`` (spaces, a memory and its history, edit, forget,
purge, search), over the signed-in person's Postgres store (its browsing reads are
:class:`~bli_memory.core.team.postgres.browse.PostgresBrowse`), behind
:class:`~bli_memory.core.ui.service_guard.ServiceGuard`. The pages that read one machine
(captures, hook health, experience and ops) stay with the local page. Routes, under the
mount::

    GET|POST  /login     sign in with a device token
    POST      /logout    end the session (clears the cookie)
    ...                  the pages of :func:`~bli_memory.core.ui.app.browser_app`
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["MOUNT", "build_service_app", "create_service_app", "login", "logout"]

#: Where the service serves the pages.
MOUNT = "/ui"


def _cookie(request: Request, value: str, *, clear: bool = False) -> str:
    from bli_memory.core.ui.service_guard import COOKIE

    path = request.scope.get("root_path", "") or "/"
    secure = request.url.scheme == "https" or request.headers.get("origin", "").startswith("https://")
    parts = [f"{COOKIE}={value}", "HttpOnly", "SameSite=Strict", f"Path={path}"]
    if secure:
        parts.append("Secure")
    if clear:
        parts.append("Max-Age=0")
    return "; ".join(parts)


async def login(request: Request) -> Response:
    """``GET|POST /login``: the sign-in form; a POSTed live device token sets the session
    cookie and goes to the first page (303), any other token answers the form again (401)."""
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import RedirectResponse

    from bli_memory.core.team.postgres.store import hash_token
    from bli_memory.core.ui.render import render
    from bli_memory.core.ui.service_guard import session_cookie

    if request.method == "GET":
        return render(request, "login.html", error=None)
    form = await request.form()
    token = str(form.get("token", "")).strip()
    principal = await run_in_threadpool(request.app.state.admin, token) if token else None
    if principal is None:
        return render(request, "login.html", status=401,
                      error="That device token is unknown or revoked; nothing was opened.")
    value = session_cookie(principal.device_id, hash_token(token))
    response = RedirectResponse(request.scope.get("root_path", "") + "/", status_code=303)
    response.headers.append("set-cookie", _cookie(request, value))
    return response


async def logout(request: Request) -> Response:
    """``POST /logout``: clear the session cookie (CSRF-checked) and go to the sign-in form.
    The cookie is the session: revoking the device token ends every copy of it."""
    from starlette.responses import RedirectResponse

    from bli_memory.core.ui.guard import checked_form

    await checked_form(request)
    response = RedirectResponse(request.scope.get("root_path", "") + "/login", status_code=303)
    response.headers.append("set-cookie", _cookie(request, "", clear=True))
    return response


def build_service_app(backend: Callable[[], Any]) -> Any:
    """The service's browser app behind its guard, to mount at :data:`MOUNT`.

    Args:
        backend: Answers the service's administrative
            :class:`~bli_memory.core.team.postgres.store.PostgresBackend` (called per request, so
            the app can be built before the service's lifespan opens the database).

    Returns:
        An ASGI app (:class:`~bli_memory.core.ui.service_guard.ServiceGuard`).
    """
    from starlette.routing import Route

    from bli_memory.core.ui.app import browser_app
    from bli_memory.core.ui.service_guard import ServiceGuard

    app = browser_app(local=False, extra_routes=[
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
    ])
    app.state.service_ui = True
    app.state.admin = lambda token: backend().authenticate(token)
    return ServiceGuard(app, backend=backend)


def create_service_app(**options: Any) -> Starlette:
    """The team service as deployed: its doors with the memory browser mounted at :data:`MOUNT`.

    ``bli-memory-mcp service`` runs this. The UI wing composes the two, since it sits above
    the team wing (pyproject.toml, the layer contract): the service app itself
    (:func:`bli_memory.core.team.service.app.create_app`) never imports the UI.

    Args:
        options: Keyword arguments of :func:`~bli_memory.core.team.service.app.create_app`
            (``database_url``, ``backend``, ``run_jobs``, ``warm_model``, ``body_timeout``).

    Returns:
        The Starlette app, ``/ui`` served after the doors and health routes.

    Raises:
        ConfigError: neither ``database_url`` nor ``backend`` was given.
    """
    from starlette.routing import Mount

    from bli_memory.core.team.service.app import create_app

    app: Starlette

    def backend() -> Any:  # read per request: the lifespan opens the database later
        return app.state.service.backend

    # The memory browser's pages, behind their own sign-in (docs/ui.md).
    app = create_app(**options, extra_routes=[Mount(MOUNT, app=build_service_app(backend))])
    return app
